#!/usr/bin/env node
// An ACP echo agent on stdio, built on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app API). Used by `cargo xtask interop`.
//
// Serves ACP v1 (default entrypoint) and the v2 draft (experimental/v2
// entrypoint) behind the SDK's `agentProtocolRouter`, which picks the highest
// version at or below the one the client's `initialize` asks for.
//
// Behaviour, mirroring the project's echo_agent example:
// - each prompt's text is sent back as `agent_message_chunk` updates (one per
//   word, whitespace kept, so the chunks concatenate to the prompt text);
// - if the prompt contains the word `perm`, the agent first asks
//   `session/request_permission`; when an allow option is selected it echoes,
//   otherwise it answers "permission denied" (or stops with `cancelled` when
//   the request was cancelled);
// - the turn ends with `end_turn` (v1: the `session/prompt` response; v2: an
//   idle `state_update` after the `session/prompt` response with the
//   inserted user message's id).
// Diagnostics go to stderr; stdout carries only the protocol.

import { randomUUID } from "node:crypto";
import { importSdk, sdkVersion, webStreams } from "./sdk.mjs";

const v1 = await importSdk();
const v2 = await importSdk("experimental/v2");

const INFO = { name: "acp-interop-ts-agent", version: sdkVersion() };
const log = (...args) => console.error("[ts-agent]", ...args);

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

const wantsPermission = (text) => /\bperm\b/.test(text);

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

// ---------------------------------------------------------------- ACP v1 ----

const cancelledV1 = new Set();

const appV1 = v1
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
    cancelledV1.add(params.sessionId);
  })
  .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    cancelledV1.delete(sessionId);
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
    for (const chunk of chunks(text)) {
      if (cancelledV1.has(sessionId)) return { stopReason: "cancelled" };
      await say(chunk);
    }
    return { stopReason: "end_turn" };
  });

// ---------------------------------------------------------- ACP v2 draft ----

const cancelledV2 = new Set();

async function runTurnV2(client, sessionId, userMessageId, blocks) {
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
  for (const chunk of chunks(text)) {
    if (cancelledV2.has(sessionId)) return idle("cancelled");
    await say(chunk);
  }
  return idle("end_turn");
}

const appV2 = v2
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
    cancelledV2.add(params.sessionId);
  })
  .onRequest(v2.methods.agent.session.prompt, ({ params, client }) => {
    const { sessionId } = params;
    cancelledV2.delete(sessionId);
    const messageId = randomUUID();
    // The response acknowledges insertion of the user message; the turn
    // itself is reported through session updates.
    setImmediate(() => {
      runTurnV2(client, sessionId, messageId, params.prompt).catch((error) => {
        log("v2 turn failed:", error);
      });
    });
    return { messageId };
  });

// ---------------------------------------------------------------- stdio ----

const { output, input } = await webStreams(process.stdout, process.stdin);
const stream = v2.ndJsonStream(output, input);
const connection = v2
  .agentProtocolRouter()
  .withV1(appV1)
  .withV2(appV2)
  .connect(stream);
await connection.closed;
log("connection closed");
