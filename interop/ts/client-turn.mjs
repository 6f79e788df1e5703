// The client side of one ACP session on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API), shared by the stdio driver
// (client.mjs) and the network one (net-client.mjs): whatever carries the
// stream, the client runs initialize, session/new (cwd = process.cwd(),
// mcpServers []) and its prompt turns, allows every permission request (the
// first allow option), answers fs/read_text_file for paths inside cwd (v1),
// and prints each `session/update`'s `params.update` as one JSON line on
// stdout.
//
// Version 1 uses the SDK's default (v1) entrypoint, version 2 its
// experimental/v2 entrypoint (draft v2: a turn ends with an idle
// `state_update`, whose stopReason is the turn's).

import { readFile } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { importSdk, sdkVersion } from "./sdk.mjs";

const log = (...args) => console.error("[ts-client]", ...args);
const INFO = { name: "acp-interop-ts-client", version: sdkVersion() };

/** The protocol versions the SDK speaks. */
export const VERSIONS = [1, 2];

/** The SDK entrypoint of a protocol version. */
export function importAcp(protocolVersion) {
  return importSdk(protocolVersion === 2 ? "experimental/v2" : "");
}

// Resolves once the line is handed to the OS (stdout is asynchronous for pipes
// on some platforms, and process.exit() would drop queued writes).
export const print = (value) =>
  new Promise((resolveWrite) => process.stdout.write(JSON.stringify(value) + "\n", resolveWrite));

function allowFirst(options) {
  const allow = options.find((o) => String(o.kind).startsWith("allow"));
  return allow
    ? { outcome: { outcome: "selected", optionId: allow.optionId } }
    : { outcome: { outcome: "cancelled" } };
}

async function readInsideCwd(acp, cwd, { path, line, limit }) {
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

/**
 * Runs one session over `stream` (an SDK Stream) and returns the stop reason
 * of its last turn. `prompt` is sent `repeat` times, one turn after the other;
 * with `cancelAfterMs`, `session/cancel` follows each prompt after that long.
 */
export async function runSession(acp, protocolVersion, stream, { prompt, repeat = 1, cancelAfterMs }) {
  const cwd = process.cwd();
  let app = acp
    .client({ name: INFO.name })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const answer = allowFirst(params.options);
      log(`permission requested; answering ${JSON.stringify(answer.outcome)}`);
      return answer;
    });
  if (protocolVersion === 1) {
    app = app.onRequest(acp.methods.client.fs.readTextFile, ({ params }) =>
      readInsideCwd(acp, cwd, params),
    );
  }

  const cancelLater = (ctx, sessionId) => {
    if (cancelAfterMs == null) return () => {};
    const timer = setTimeout(() => {
      log(`cancelling the turn after ${cancelAfterMs} ms`);
      ctx.notify(acp.methods.agent.session.cancel, { sessionId }).catch((error) => {
        log("session/cancel failed:", error?.message ?? error);
      });
    }, cancelAfterMs);
    return () => clearTimeout(timer);
  };

  async function turnV1(ctx, session) {
    // The response is queued behind the updates received before it as a
    // `stop` message; a failed prompt rejects `nextUpdate()`.
    const stopTimer = cancelLater(ctx, session.sessionId);
    session.prompt(prompt).catch(() => {});
    try {
      for (;;) {
        const message = await session.nextUpdate();
        if (message.kind === "session_update") {
          print(message.update);
        } else {
          return message.stopReason;
        }
      }
    } finally {
      stopTimer();
    }
  }

  async function turnV2(ctx, session) {
    let failure;
    const response = session.prompt(prompt).then(
      (answer) => log(`prompt inserted as message ${JSON.stringify(answer.messageId)}`),
      (error) => {
        failure = error;
      },
    );
    const stopTimer = cancelLater(ctx, session.sessionId);
    try {
      for (;;) {
        if (failure) throw failure;
        const message = await session.nextUpdate();
        print(message.update);
        if (message.kind === "stop" && message.stopReason != null) {
          // The next turn starts once this one's prompt was answered too.
          await response;
          if (failure) throw failure;
          return message.stopReason;
        }
      }
    } finally {
      stopTimer();
    }
  }

  const initialize =
    protocolVersion === 2
      ? { protocolVersion: 2, info: INFO, capabilities: {} }
      : {
          protocolVersion: 1,
          clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
          clientInfo: INFO,
        };
  const turn = protocolVersion === 2 ? turnV2 : turnV1;
  return app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, initialize);
    log(`initialized: agent speaks protocol ${init.protocolVersion}`);
    return ctx.buildSession({ cwd, mcpServers: [] }).withSession(async (session) => {
      let stopReason;
      for (let i = 0; i < repeat; i++) stopReason = await turn(ctx, session);
      return stopReason;
    });
  });
}
