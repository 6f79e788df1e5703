// The echo agent's behaviour on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API), shared by the stdio driver
// (agent.mjs) and the network one (net-agent.mjs).
//
// `createEchoAgent()` returns a fresh `agentProtocolRouter` serving ACP v1
// (default entrypoint) and the v2 draft (experimental/v2 entrypoint); the
// router picks the highest version at or below the one the client's
// `initialize` asks for. One per connection: the cancellation state is its own.
//
// Behaviour, mirroring the project's echo_agent example:
// - each prompt's text is sent back as `agent_message_chunk` updates (one per
//   word, whitespace kept, so the chunks concatenate to the prompt text);
// - if the prompt contains the word `perm`, the agent first asks
//   `session/request_permission`; when an allow option is selected it echoes,
//   otherwise it answers "permission denied" (or stops with `cancelled` when
//   the request was cancelled);
// - the word `slow` makes it wait 10 s first, which `session/cancel` cuts
//   short: the turn then ends `cancelled`;
// - `flood N` makes it send N one-character `agent_message_chunk` updates
//   before the echo (the benchmarks' notification stream);
// - the turn ends with `end_turn` (v1: the `session/prompt` response; v2: an
//   idle `state_update` after the `session/prompt` response with the
//   inserted user message's id).
// Diagnostics go to stderr.

import { randomUUID } from "node:crypto";
import { importSdk, sdkVersion } from "./sdk.mjs";

const v1 = await importSdk();
const v2 = await importSdk("experimental/v2");

export const INFO = { name: "acp-interop-ts-agent", version: sdkVersion() };
const log = (...args) => console.error("[ts-agent]", ...args);

/** How long `slow` waits unless cancelled, in milliseconds. */
const SLOW_MS = 10_000;

/** Splits text into chunks that concatenate back to it. */
function chunks(text) {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

function promptText(blocks) {
  return blocks
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

const words = (text) => text.split(/\s+/).filter(Boolean);
const wantsPermission = (text) => words(text).includes("perm");
const wantsSlow = (text) => words(text).includes("slow");

/** N of `flood N`, else 0. */
function floodCount(text) {
  const all = words(text);
  const at = all.indexOf("flood");
  const n = at >= 0 ? Number(all[at + 1]) : 0;
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

function permissionOptions() {
  return [
    { optionId: "allow-once", name: "Allow", kind: "allow_once" },
    { optionId: "reject-once", name: "Reject", kind: "reject_once" },
  ];
}

/** "allowed" | "rejected" | "cancelled" */
function permissionVerdict(response, options) {
  const outcome = response?.outcome;
  if (outcome?.outcome === "cancelled") return "cancelled";
  if (outcome?.outcome !== "selected") return "rejected";
  const option = options.find((o) => o.optionId === outcome.optionId);
  return option && option.kind.startsWith("allow") ? "allowed" : "rejected";
}

/** The running turn of each session, for `session/cancel`. */
class Turns {
  #running = new Map();

  /** Starts a session's turn; its signal aborts on `session/cancel`. */
  begin(sessionId) {
    const controller = new AbortController();
    this.#running.set(sessionId, controller);
    return controller.signal;
  }

  cancel(sessionId) {
    this.#running.get(sessionId)?.abort();
  }

  end(sessionId, signal) {
    if (this.#running.get(sessionId)?.signal === signal) this.#running.delete(sessionId);
  }
}

/** Waits SLOW_MS unless `signal` aborts first; true when it did. */
function slow(signal) {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolveWait) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolveWait(false);
    }, SLOW_MS);
    const onAbort = () => {
      clearTimeout(timer);
      resolveWait(true);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The body of a turn after the permission step, the same in both versions:
 * `slow`, `flood N`, then the echo. Returns the stop reason.
 */
async function echo(text, signal, say) {
  if (wantsSlow(text) && (await slow(signal))) return "cancelled";
  for (let i = floodCount(text); i > 0; i--) {
    if (signal.aborted) return "cancelled";
    await say(".");
  }
  for (const chunk of chunks(text)) {
    if (signal.aborted) return "cancelled";
    await say(chunk);
  }
  return "end_turn";
}

// ---------------------------------------------------------------- ACP v1 ----

function appV1() {
  const turns = new Turns();
  return v1
    .agent({ name: INFO.name })
    .onRequest(v1.methods.agent.initialize, ({ params }) => {
      log(`v1 initialize (client asked for ${params.protocolVersion})`);
      return {
        protocolVersion: v1.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false, promptCapabilities: {} },
        agentInfo: INFO,
        authMethods: [],
      };
    })
    .onRequest(v1.methods.agent.session.new, () => ({ sessionId: randomUUID() }))
    .onNotification(v1.methods.agent.session.cancel, ({ params }) => {
      turns.cancel(params.sessionId);
    })
    .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
      const { sessionId } = params;
      const signal = turns.begin(sessionId);
      try {
        const text = promptText(params.prompt);
        const say = (chunk) =>
          client.notify(v1.methods.client.session.update, {
            sessionId,
            update: {
              sessionUpdate: "agent_message_chunk",
              content: { type: "text", text: chunk },
            },
          });

        if (wantsPermission(text)) {
          const options = permissionOptions();
          const response = await client.request(
            v1.methods.client.session.requestPermission,
            {
              sessionId,
              toolCall: {
                toolCallId: `perm-${randomUUID()}`,
                title: "Echo the prompt",
                kind: "other",
                status: "pending",
              },
              options,
            },
          );
          const verdict = permissionVerdict(response, options);
          log(`v1 permission: ${verdict}`);
          if (verdict === "cancelled") return { stopReason: "cancelled" };
          if (verdict === "rejected") {
            await say("permission denied");
            return { stopReason: "end_turn" };
          }
        }
        return { stopReason: await echo(text, signal, say) };
      } finally {
        turns.end(sessionId, signal);
      }
    });
}

// ---------------------------------------------------------- ACP v2 draft ----

async function runTurnV2(client, sessionId, userMessageId, blocks, signal) {
  const text = promptText(blocks);
  const agentMessageId = randomUUID();
  const update = (u) =>
    client.notify(v2.methods.client.session.update, { sessionId, update: u });
  const say = (chunk) =>
    update({
      sessionUpdate: "agent_message_chunk",
      messageId: agentMessageId,
      content: { type: "text", text: chunk },
    });
  const idle = (stopReason) =>
    update({ sessionUpdate: "state_update", state: "idle", stopReason });

  await update({ sessionUpdate: "state_update", state: "running" });
  await update({
    sessionUpdate: "user_message",
    messageId: userMessageId,
    content: blocks,
  });
  if (wantsPermission(text)) {
    const options = permissionOptions();
    await update({ sessionUpdate: "state_update", state: "requires_action" });
    const response = await client.request(
      v2.methods.client.session.requestPermission,
      {
        sessionId,
        title: "Echo the prompt",
        options,
      },
    );
    const verdict = permissionVerdict(response, options);
    log(`v2 permission: ${verdict}`);
    await update({ sessionUpdate: "state_update", state: "running" });
    if (verdict === "cancelled") return idle("cancelled");
    if (verdict === "rejected") {
      await say("permission denied");
      return idle("end_turn");
    }
  }
  return idle(await echo(text, signal, say));
}

function appV2() {
  const turns = new Turns();
  return v2
    .agent({ name: INFO.name })
    .onRequest(v2.methods.agent.initialize, ({ params }) => {
      log(`v2 initialize (client asked for ${params.protocolVersion})`);
      return {
        protocolVersion: v2.PROTOCOL_VERSION,
        info: INFO,
        capabilities: {},
      };
    })
    .onRequest(v2.methods.agent.session.new, () => ({ sessionId: randomUUID() }))
    .onNotification(v2.methods.agent.session.cancel, ({ params }) => {
      turns.cancel(params.sessionId);
    })
    .onRequest(v2.methods.agent.session.prompt, ({ params, client }) => {
      const { sessionId } = params;
      const signal = turns.begin(sessionId);
      const messageId = randomUUID();
      // The response acknowledges insertion of the user message; the turn
      // itself is reported through session updates.
      setImmediate(() => {
        runTurnV2(client, sessionId, messageId, params.prompt, signal)
          .catch((error) => log("v2 turn failed:", error))
          .finally(() => turns.end(sessionId, signal));
      });
      return { messageId };
    });
}

/** A fresh agent (v1 and v2 behind one router) for one connection. */
export function createEchoAgent() {
  return v2.agentProtocolRouter().withV1(appV1()).withV2(appV2());
}
