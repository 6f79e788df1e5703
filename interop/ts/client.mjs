#!/usr/bin/env node
// An ACP client driver on stdio, built on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API). Used by `cargo xtask interop`.
//
//   node client.mjs [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS...]
//
// Spawns the agent and runs one session with one prompt turn
// (client-turn.mjs): each `session/update`'s `params.update` as one JSON line
// on stdout, then `{"stopReason": ...}` as the last line. Exits 0 when the turn
// ended, 1 otherwise, 2 on usage errors. The agent's stderr is passed through.

import { spawn } from "node:child_process";
import { importAcp, print, runSession, VERSIONS } from "./client-turn.mjs";
import { sdkVersion, webStreams } from "./sdk.mjs";

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
if (!VERSIONS.includes(protocolVersion)) {
  usage(`protocol version ${protocolVersion} is not spoken by SDK ${sdkVersion()} (1 or 2)`);
}
const acp = await importAcp(protocolVersion);

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

const { output, input } = await webStreams(child.stdin, child.stdout);
let exitCode = 1;
try {
  const stopReason = await runSession(acp, protocolVersion, acp.ndJsonStream(output, input), { prompt });
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
