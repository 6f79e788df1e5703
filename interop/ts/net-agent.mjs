#!/usr/bin/env node
// The echo agent (echo-agent.mjs: v1 and the v2 draft; `perm`, `slow`,
// `flood N`) served over the network by the official TypeScript SDK's
// experimental `AcpServer`: Streamable HTTP and WebSocket on one listener,
// through Node's `http` and the `ws` package. Used by `cargo xtask interop`
// and `cargo xtask bench`.
//
//   node net-agent.mjs [--listen ADDR:PORT] [--tls-cert CHAIN.pem --tls-key KEY.pem]
//
// Once bound, prints `listening on http://ADDR:PORT` on stderr (the port the
// OS chose for port 0; default 127.0.0.1:0), as the project's `echo_agent
// --listen` does. With `--tls-cert` and `--tls-key` the same handlers sit
// behind Node's `https` server (`https://` and `wss://`) and the URL printed
// is `https://`. Every accepted connection gets its own agent. Runs until
// killed.

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { createEchoAgent } from "./echo-agent.mjs";
import { importSdk, requirePackage } from "./sdk.mjs";

const log = (...args) => console.error("[ts-net-agent]", ...args);

function usage(message) {
  if (message) console.error(`net-agent.mjs: ${message}`);
  console.error("usage: node net-agent.mjs [--listen ADDR:PORT] [--tls-cert CHAIN.pem --tls-key KEY.pem]");
  process.exit(2);
}

function parseArgs(argv) {
  let listen = "127.0.0.1:0";
  let cert;
  let key;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--listen") {
      listen = argv[++i];
      if (listen === undefined) usage("--listen needs ADDR:PORT");
    } else if (argv[i] === "--tls-cert") {
      cert = argv[++i];
      if (cert === undefined) usage("--tls-cert needs a PEM file");
    } else if (argv[i] === "--tls-key") {
      key = argv[++i];
      if (key === undefined) usage("--tls-key needs a PEM file");
    } else {
      usage(`unknown argument ${argv[i]}`);
    }
  }
  if ((cert === undefined) !== (key === undefined)) usage("--tls-cert and --tls-key go together");
  const colon = listen.lastIndexOf(":");
  const host = listen.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  const port = Number(listen.slice(colon + 1));
  if (colon < 0 || !host || !Number.isInteger(port) || port < 0 || port > 65535) {
    usage(`--listen ${listen}: expected ADDR:PORT`);
  }
  const tls = cert === undefined ? undefined : { cert: readFileSync(cert), key: readFileSync(key) };
  return { host, port, tls };
}

const { host, port, tls } = parseArgs(process.argv.slice(2));
const { AcpServer } = await importSdk("experimental/server");
const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await importSdk("experimental/node");
const { WebSocketServer } = requirePackage("ws");

const acpServer = new AcpServer({ createAgent: createEchoAgent });
const handler = createNodeHttpHandler(acpServer);
const httpServer = tls === undefined ? createServer(handler) : createTlsServer(tls, handler);
// The upgrade handler hands each socket to the AcpServer; `noServer` keeps
// `ws` from listening or answering upgrades on its own.
const webSocketServer = new WebSocketServer({ noServer: true });
httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(acpServer, webSocketServer));
httpServer.on("error", (error) => {
  log(`cannot listen on ${host}:${port}: ${error.message}`);
  process.exit(1);
});
httpServer.listen(port, host, () => {
  const address = httpServer.address();
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  console.error(`listening on ${tls === undefined ? "http" : "https"}://${shown}:${address.port}`);
});

async function shutDown(signal) {
  log(`${signal}: closing`);
  httpServer.close();
  await acpServer.close().catch(() => {});
  process.exit(0);
}
process.on("SIGTERM", () => shutDown("SIGTERM"));
process.on("SIGINT", () => shutDown("SIGINT"));
