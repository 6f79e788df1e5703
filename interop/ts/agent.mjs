#!/usr/bin/env node
// An ACP echo agent on stdio, built on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API). Used by `cargo xtask interop`.
//
// Its behaviour (v1 and the v2 draft; `perm`, `slow`, `flood N`) is
// echo-agent.mjs's. Diagnostics go to stderr; stdout carries only the protocol.

import { createEchoAgent } from "./echo-agent.mjs";
import { importSdk, webStreams } from "./sdk.mjs";

const v2 = await importSdk("experimental/v2");
const { output, input } = await webStreams(process.stdout, process.stdin);
const connection = createEchoAgent().connect(v2.ndJsonStream(output, input));
await connection.closed;
console.error("[ts-agent] connection closed");
