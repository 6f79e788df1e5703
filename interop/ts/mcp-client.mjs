#!/usr/bin/env node
// An ACP client driver on stdio that offers an MCP server over ACP, built on the
// official TypeScript SDK (@agentclientprotocol/sdk 2.4.0, unstable entrypoints):
// the MCP SDK server (@modelcontextprotocol/server) with one tool, `echo`
// (returns its `text` argument), served with `fromMcpServer`
// (experimental/mcp-server) through an `McpOverAcpProvider`, declared in
// `session/new` (`{"type": "acp"}`), and `mcp/message` answered. Used by
// `cargo xtask interop` (scenarios `mcp: …`).
//
//   node mcp-client.mjs [--protocol-version N] [--repeat N] --prompt TEXT -- AGENT_CMD [ARGS...]
//
// `--repeat N` prompts N times in the one session (`cargo xtask bench`'s MCP row), the
// stop reason printed being the last turn's.
//
// Same output contract as client.mjs: each `session/update`'s `params.update`
// as one JSON line on stdout, then `{"stopReason": ...}`; exit 0 when the turn
// ended, 1 otherwise, 2 on usage errors. The agent's stderr is passed through.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { print } from "./client-turn.mjs";
import { importSdk, nodeDir, sdkVersion, webStreams } from "./sdk.mjs";

const log = (...args) => console.error("[ts-mcp-client]", ...args);
const INFO = { name: "acp-interop-ts-mcp-client", version: sdkVersion() };

function usage(message) {
  if (message) console.error(`mcp-client.mjs: ${message}`);
  console.error("usage: node mcp-client.mjs [--protocol-version N] [--repeat N] --prompt TEXT -- AGENT_CMD [ARGS...]");
  process.exit(2);
}

function parseArgs(argv) {
  let protocolVersion = 1;
  let prompt;
  let repeat = 1;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") break;
    if (arg === "--protocol-version") {
      protocolVersion = Number(argv[++i]);
      if (![1, 2].includes(protocolVersion)) usage("--protocol-version is 1 or 2");
    } else if (arg === "--repeat") {
      repeat = Number(argv[++i]);
      if (!Number.isInteger(repeat) || repeat < 1) usage("--repeat needs a count of at least 1");
    } else if (arg === "--prompt") {
      prompt = argv[++i];
      if (prompt === undefined) usage("--prompt needs a value");
    } else {
      usage(`unknown argument ${arg}`);
    }
  }
  const command = argv.slice(i + 1);
  if (prompt === undefined) usage("--prompt is required");
  if (command.length === 0) usage("missing -- AGENT_CMD");
  return { protocolVersion, prompt, repeat, command };
}

/**
 * A package of the interop cache, by its ES module entry (`exports["."].import`):
 * `require.resolve` would pick the CommonJS build, a second copy of its classes
 * that the SDK's own (ESM) imports do not recognise (`instanceof McpServer`).
 */
async function importPackage(name) {
  const dir = join(nodeDir, "node_modules", name);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const entry = manifest.exports?.["."]?.import;
  const file = typeof entry === "string" ? entry : entry?.default;
  if (!file) throw new Error(`${name} in ${dir} has no ES module entry`);
  return import(pathToFileURL(join(dir, file)).href);
}

const { protocolVersion, prompt, repeat, command } = parseArgs(process.argv.slice(2));
const acp = await importSdk(protocolVersion === 2 ? "experimental/v2/unstable" : "unstable");
const { fromMcpServer } = await importSdk("experimental/mcp-server");
const { McpServer } = await importPackage("@modelcontextprotocol/server");
const { z } = await importPackage("zod");

// A fresh MCP server per request, as the MCP SDK requires for 2026-07-28.
const tools = fromMcpServer(() => {
  const server = new McpServer({ name: "interop-echo", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text argument", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
});
const mcp = new acp.McpOverAcpProvider();

const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let childExit;
child.on("exit", (code, signal) => {
  childExit = signal ? `signal ${signal}` : `code ${code}`;
});
child.on("error", (error) => {
  log(`cannot spawn ${command[0]}: ${error.message}`);
  process.exit(1);
});

const initialize =
  protocolVersion === 2
    ? { protocolVersion: 2, info: INFO, capabilities: {} }
    : { protocolVersion: 1, clientCapabilities: {}, clientInfo: INFO };

async function turnV1(session) {
  session.prompt(prompt).catch(() => {});
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind !== "session_update") return message.stopReason;
    await print(message.update);
  }
}

async function turnV2(session) {
  let failure;
  const response = session.prompt(prompt).catch((error) => {
    failure = error;
  });
  for (;;) {
    if (failure) throw failure;
    const message = await session.nextUpdate();
    await print(message.update);
    if (message.kind === "stop" && message.stopReason != null) {
      await response;
      if (failure) throw failure;
      return message.stopReason;
    }
  }
}

const app = acp
  .client({ name: INFO.name })
  .onRequest(acp.methods.client.mcp.message, mcp.handleRequest)
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((o) => String(o.kind).startsWith("allow"));
    return allow
      ? { outcome: { outcome: "selected", optionId: allow.optionId } }
      : { outcome: { outcome: "cancelled" } };
  });

const { output, input } = await webStreams(child.stdin, child.stdout);
let exitCode = 1;
try {
  const stopReason = await app.connectWith(acp.ndJsonStream(output, input), async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, initialize);
    log(`initialized: agent speaks protocol ${init.protocolVersion}`);
    const registration = mcp.registerServer(ctx, { name: "echo-tools", handler: tools.handler });
    log(`offering ${JSON.stringify(registration.declaration)}`);
    return ctx
      .buildSession(process.cwd())
      .withMcpServer(registration.declaration)
      .withSession(async (session) => {
        let stopReason;
        for (let turn = 0; turn < repeat; turn++) {
          stopReason = await (protocolVersion === 2 ? turnV2(session) : turnV1(session));
        }
        return stopReason;
      });
  });
  await print({ stopReason });
  exitCode = 0;
} catch (error) {
  log("turn failed:", error?.stack ?? error);
  if (childExit) log(`agent exited with ${childExit}`);
}
child.stdin.end();
await tools.close?.();
process.exit(exitCode);
