#!/usr/bin/env node
// An ACP client driver built on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API). Used by `cargo xtask interop`.
//
//   node client.mjs [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS...]
//
// Spawns the agent, runs initialize, session/new (cwd = process.cwd(),
// mcpServers []) and one session/prompt. Allows every permission request (the
// first allow option), answers fs/read_text_file for paths inside cwd (v1).
// Prints each `session/update` notification's `params.update` as one JSON line
// on stdout, then `{"stopReason": ...}` as the last line. Exits 0 when the turn
// ended, 1 otherwise, 2 on usage errors. The agent's stderr is passed through.
//
// N = 1 (default) uses the SDK's default (v1) entrypoint; N = 2 uses its
// experimental/v2 entrypoint (draft v2: the turn ends with an idle
// `state_update`, whose stopReason is printed).

import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { importSdk, sdkVersion, webStreams } from "./sdk.mjs";

const log = (...args) => console.error("[ts-client]", ...args);

function usage(message) {
  if (message) console.error(`client.mjs: ${message}`);
  console.error(
    "usage: node client.mjs [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS...]",
  );
  process.exit(2);
}

function parseArgs(argv) {
  let protocolVersion = 1;
  let prompt;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") break;
    if (arg === "--protocol-version") {
      protocolVersion = Number(argv[++i]);
      if (!Number.isInteger(protocolVersion)) usage("--protocol-version needs an integer");
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
  return { protocolVersion, prompt, command };
}

const { protocolVersion, prompt, command } = parseArgs(process.argv.slice(2));
if (protocolVersion !== 1 && protocolVersion !== 2) {
  usage(`protocol version ${protocolVersion} is not spoken by SDK ${sdkVersion()} (1 or 2)`);
}
const acp = await importSdk(protocolVersion === 2 ? "experimental/v2" : "");
const cwd = process.cwd();
const INFO = { name: "acp-interop-ts-client", version: sdkVersion() };

// Resolves once the line is handed to the OS (stdout is asynchronous for pipes
// on some platforms, and process.exit() would drop queued writes).
const print = (value) =>
  new Promise((resolveWrite) => process.stdout.write(JSON.stringify(value) + "\n", resolveWrite));

function allowFirst(options) {
  const allow = options.find((o) => String(o.kind).startsWith("allow"));
  return allow
    ? { outcome: { outcome: "selected", optionId: allow.optionId } }
    : { outcome: { outcome: "cancelled" } };
}

async function readInsideCwd({ path, line, limit }) {
  const full = resolve(cwd, path);
  const rel = relative(cwd, full);
  if (!isAbsolute(path) || rel.startsWith("..") || isAbsolute(rel)) {
    throw acp.RequestError.invalidParams({ path }, "path is outside the session cwd");
  }
  let content;
  try {
    content = await readFile(full, "utf8");
  } catch {
    throw acp.RequestError.resourceNotFound(full);
  }
  if (line != null || limit != null) {
    const lines = content.split("\n");
    const start = Math.max((line ?? 1) - 1, 0);
    const end = limit != null ? start + limit : lines.length;
    content = lines.slice(start, end).join("\n");
  }
  return { content };
}

// --------------------------------------------------------------- agent ----

const child = spawn(command[0], command.slice(1), {
  stdio: ["pipe", "pipe", "inherit"],
});
let childExit;
const childExited = new Promise((resolveExit) => {
  child.on("exit", (code, signal) => {
    childExit = signal ? `signal ${signal}` : `code ${code}`;
    resolveExit();
  });
});
child.on("error", (error) => {
  log(`cannot spawn ${command[0]}: ${error.message}`);
  process.exit(1);
});

let app = acp
  .client({ name: INFO.name })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const answer = allowFirst(params.options);
    log(`permission requested; answering ${JSON.stringify(answer.outcome)}`);
    return answer;
  });
if (protocolVersion === 1) {
  app = app.onRequest(acp.methods.client.fs.readTextFile, ({ params }) =>
    readInsideCwd(params),
  );
}

async function turnV1(ctx) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
    clientInfo: INFO,
  });
  log(`initialized: agent speaks protocol ${init.protocolVersion}`);
  return ctx.buildSession({ cwd, mcpServers: [] }).withSession(async (session) => {
    // The response is queued behind the updates received before it as a
    // `stop` message; a failed prompt rejects `nextUpdate()`.
    session.prompt(prompt).catch(() => {});
    for (;;) {
      const message = await session.nextUpdate();
      if (message.kind === "session_update") {
        print(message.update);
      } else {
        return message.stopReason;
      }
    }
  });
}

async function turnV2(ctx) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 2,
    info: INFO,
    capabilities: {},
  });
  log(`initialized: agent speaks protocol ${init.protocolVersion}`);
  return ctx.buildSession({ cwd, mcpServers: [] }).withSession(async (session) => {
    let accepted = false;
    let failure;
    session.prompt(prompt).then(
      (response) => {
        accepted = true;
        log(`prompt inserted as message ${JSON.stringify(response.messageId)}`);
      },
      (error) => {
        failure = error;
      },
    );
    for (;;) {
      if (failure) throw failure;
      const message = await session.nextUpdate();
      print(message.update);
      if (message.kind === "stop" && message.stopReason != null) {
        if (!accepted) log("idle state_update arrived before the prompt response");
        return message.stopReason;
      }
    }
  });
}

const { output, input } = await webStreams(child.stdin, child.stdout);
const stream = acp.ndJsonStream(output, input);

let exitCode = 1;
try {
  const stopReason = await app.connectWith(stream, protocolVersion === 2 ? turnV2 : turnV1);
  await print({ stopReason });
  exitCode = 0;
} catch (error) {
  log("turn failed:", error?.stack ?? error);
  if (childExit) log(`agent exited with ${childExit}`);
}

// Close the agent's stdin and give it a moment to exit on its own.
child.stdin.end();
const timer = setTimeout(() => {
  log("agent still running 2 s after its stdin was closed; killing it");
  child.kill("SIGKILL");
}, 2000);
await childExited;
clearTimeout(timer);
process.exit(exitCode);
