#!/usr/bin/env node
// An ACP agent on stdio (v1) whose MCP client only takes URLs, built on the
// official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) and the MCP SDK's
// client (@modelcontextprotocol/client, StreamableHTTPClientTransport). Used by
// `cargo xtask interop` (scenario `mcp: … mcp_http_proxy …`), behind our HTTP
// bridge proxy.
//
// It advertises `mcpCapabilities.http` only, remembers each session's
// `{"type": "http"}` servers, and for a prompt containing the word `mcp` calls
// the tool `echo` of the first that lists one, with the prompt's text: a
// `tool_call` (in_progress), its update (completed or failed), and the
// message `mcp echo: TEXT` with the tool's text; then it echoes the prompt and
// ends the turn `end_turn`. Diagnostics go to stderr.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { importSdk, nodeDir, sdkVersion, webStreams } from "./sdk.mjs";

const log = (...args) => console.error("[ts-mcp-http-agent]", ...args);
const INFO = { name: "acp-interop-ts-mcp-http-agent", version: sdkVersion() };

/** A package of the interop cache by its ES module entry (see mcp-client.mjs). */
async function importPackage(name) {
  const dir = join(nodeDir, "node_modules", name);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const entry = manifest.exports?.["."]?.import;
  const file = typeof entry === "string" ? entry : entry?.default;
  if (!file) throw new Error(`${name} in ${dir} has no ES module entry`);
  return import(pathToFileURL(join(dir, file)).href);
}

const acp = await importSdk();
const { Client, StreamableHTTPClientTransport } = await importPackage("@modelcontextprotocol/client");

/** The http MCP servers each session was offered. */
const servers = new Map();

/** Calls `echo` on the first server that lists it: the tool's text, or throws why not. */
async function callEcho(offered, text) {
  const failures = [];
  for (const server of offered) {
    const headers = Object.fromEntries((server.headers ?? []).map((h) => [h.name, h.value]));
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } });
    const client = new Client({ name: INFO.name, version: INFO.version });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      if (!tools.some((tool) => tool.name === "echo")) {
        failures.push(`${server.name}: no echo`);
        continue;
      }
      const result = await client.callTool({ name: "echo", arguments: { text } });
      return result.content
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("");
    } catch (error) {
      failures.push(`${server.name}: ${error?.message ?? error}`);
    } finally {
      await client.close().catch(() => {});
    }
  }
  throw new Error(`no http MCP server lists echo (${failures.join("; ")})`);
}

const app = acp
  .agent({ name: INFO.name })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false, promptCapabilities: {}, mcpCapabilities: { http: true } },
    agentInfo: INFO,
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = randomUUID();
    const http = (params.mcpServers ?? []).filter((s) => s.type === "http");
    log(`session ${sessionId}: http MCP servers ${JSON.stringify(http.map((s) => s.url))}`);
    servers.set(sessionId, http);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const text = params.prompt
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join("");
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
    const say = (chunk) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk } });
    if (text.split(/\s+/).includes("mcp")) {
      const toolCallId = "mcp-echo";
      await update({ sessionUpdate: "tool_call", toolCallId, title: "mcp echo", status: "in_progress" });
      try {
        const said = await callEcho(servers.get(sessionId) ?? [], text);
        await update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
        await say(`mcp echo: ${said}`);
      } catch (error) {
        log("mcp echo failed:", error?.stack ?? error);
        await update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        await say(`mcp echo: ${error?.message ?? error}`);
      }
    }
    await say(text);
    return { stopReason: "end_turn" };
  });

const { output, input } = await webStreams(process.stdout, process.stdin);
const connection = app.connect(acp.ndJsonStream(output, input));
await connection.closed;
log("connection closed");
