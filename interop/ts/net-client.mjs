#!/usr/bin/env node
// An ACP client driver over the network, built on the official TypeScript
// SDK's experimental transports: Streamable HTTP (`createHttpStream`) for
// http:// and https:// URLs, WebSocket (`createWebSocketStream` with the `ws`
// package's WebSocket) for ws:// and wss://. Used by `cargo xtask interop` and
// `cargo xtask bench`.
//
//   node net-client.mjs --url URL [--protocol-version N] --prompt TEXT
//                       [--cancel-after MS] [--repeat N]
//
// Runs one session (client-turn.mjs) as client.mjs does on stdio: each
// `session/update`'s `params.update` as one JSON line on stdout, then
// `{"stopReason": ...}` as the last line; exits 0 when the turn ended, 1
// otherwise, 2 on usage errors. `--cancel-after MS` sends `session/cancel`
// that long after the prompt; `--repeat N` sends the prompt N times in the
// same session, one turn after the other, and prints the last stop reason
// (the benchmarks' round trips).

import { importAcp, print, runSession, VERSIONS } from "./client-turn.mjs";
import { importSdk, requirePackage, sdkVersion } from "./sdk.mjs";

const log = (...args) => console.error("[ts-net-client]", ...args);

function usage(message) {
  if (message) console.error(`net-client.mjs: ${message}`);
  console.error(
    "usage: node net-client.mjs --url URL [--protocol-version N] --prompt TEXT [--cancel-after MS] [--repeat N]",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const options = { protocolVersion: 1, repeat: 1 };
  const integer = (flag, value, min) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min) usage(`${flag} needs an integer >= ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (value === undefined) usage(`${arg} needs a value`);
    i++;
    if (arg === "--url") options.url = value;
    else if (arg === "--prompt") options.prompt = value;
    else if (arg === "--protocol-version") options.protocolVersion = integer(arg, value, 0);
    else if (arg === "--cancel-after") options.cancelAfterMs = integer(arg, value, 0);
    else if (arg === "--repeat") options.repeat = integer(arg, value, 1);
    else usage(`unknown argument ${arg}`);
  }
  if (options.url === undefined) usage("--url is required");
  if (options.prompt === undefined) usage("--prompt is required");
  return options;
}

const options = parseArgs(process.argv.slice(2));
if (!VERSIONS.includes(options.protocolVersion)) {
  usage(`protocol version ${options.protocolVersion} is not spoken by SDK ${sdkVersion()} (1 or 2)`);
}

async function openStream(url) {
  const scheme = new URL(url).protocol;
  if (scheme === "http:" || scheme === "https:") {
    const { createHttpStream } = await importSdk("experimental/http-client");
    return createHttpStream(url);
  }
  if (scheme === "ws:" || scheme === "wss:") {
    const { createWebSocketStream } = await importSdk("experimental/ws-client");
    return createWebSocketStream(url, { WebSocket: requirePackage("ws").WebSocket });
  }
  usage(`--url ${url}: expected http://, https://, ws:// or wss://`);
}

let exitCode = 1;
try {
  const acp = await importAcp(options.protocolVersion);
  const stream = await openStream(options.url);
  const stopReason = await runSession(acp, options.protocolVersion, stream, options);
  await print({ stopReason });
  exitCode = 0;
} catch (error) {
  log("turn failed:", error?.stack ?? error);
}
// Open sockets (the SSE stream, the WebSocket) would keep Node alive.
process.exit(exitCode);
