// The stand-in model server of the production-agent scenarios (`cargo xtask interop --only
// production`): it answers the two model APIs the agents stream from, offline, on loopback, with
// replies chosen from the prompt's marker words. Plain Node, no dependencies.
//
//   node interop/model/server.mjs [--listen 127.0.0.1:0] [--log FILE]
//
// prints `listening on http://127.0.0.1:PORT` on stderr once bound, and appends one JSON line per
// request to FILE (method, path, a summary of the body, what was answered) so that a failed
// scenario can be read afterwards; `--bodies DIR` also keeps each request body as DIR/NNN.json.
//
// APIs (only what the agents were seen to request; anything else gets a 404 and a log line):
// - Gemini API (gemini-cli with GOOGLE_GEMINI_BASE_URL): `POST …/models/M:streamGenerateContent`
//   answered as server-sent events of GenerateContentResponse objects
//   (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent),
//   `…:generateContent` with one such object, `…:countTokens` with `{"totalTokens": N}`.
// - OpenAI Responses API (codex with a custom `wire_api = "responses"` provider):
//   `POST /v1/responses` answered with the streaming events `response.created`,
//   `response.output_item.added`, `response.output_text.delta`, `response.output_item.done`,
//   `response.completed` (https://platform.openai.com/docs/api-reference/responses-streaming).
// - OpenAI Chat Completions API (Agentao with `OPENAI_BASE_URL`): `POST /v1/chat/completions`,
//   streamed as `chat.completion.chunk` server-sent events ending `data: [DONE]` (with a usage
//   chunk when `stream_options.include_usage`), or one `chat.completion` object without `stream`
//   (https://platform.openai.com/docs/api-reference/chat-streaming).
//
// Replies, from the newest user text of the request:
// - the last input is a tool result: text that quotes the result (`TOOL RESULT: …`), so that a
//   scenario can see the tool really ran;
// - `slow` in the text: the stream opens and then stalls for SLOW_MS, ending early when the agent
//   closes the connection (its `session/cancel`);
// - `tool:read PATH`, `tool:write PATH`, `tool:run COMMAND`, `tool:ask QUESTION` (to the end of
//   the line): a call of the agent's own tool for that (its name and argument names read from
//   the request's tool list; `ask` is Agentao's `ask_user`, which it puts to the client as
//   `_agentao.cn/ask_user`);
// - anything else: FIXED_TEXT.

import { createServer } from "node:http";
import { appendFileSync, writeFileSync } from "node:fs";

/** The reply to a plain prompt; scenarios look for it among the agent's message chunks. */
export const FIXED_TEXT = "Stand-in model reply: hello from the interop model server.";
/** How long a `slow` prompt stalls unless the agent hangs up. */
const SLOW_MS = 30_000;

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const listen = option("--listen", "127.0.0.1:0");
const logFile = option("--log", null);
const bodiesDir = option("--bodies", null);
let requestNo = 0;

function log(entry) {
  const line = JSON.stringify({ t: new Date().toISOString(), ...entry });
  if (logFile) appendFileSync(logFile, line + "\n");
  else console.error(line);
}

/** The request's body as JSON, or null (with the text kept for the log). */
async function readBody(req) {
  const parts = [];
  for await (const part of req) parts.push(part);
  const text = Buffer.concat(parts).toString("utf8");
  try {
    return { text, json: text ? JSON.parse(text) : null };
  } catch {
    return { text, json: null };
  }
}

/** What a request asks for: `{ kind: "tool-result", result }`, `{ kind: "slow" }`,
 * `{ kind: "tool", action, arg }` or `{ kind: "text" }`, from the newest user text. */
function decide(lastUserText, toolResult) {
  if (toolResult !== null) return { kind: "tool-result", result: toolResult };
  const text = lastUserText ?? "";
  const tool = text.match(/\btool:(read|write|run|ask)\s+([^\n]+)/);
  if (tool) return { kind: "tool", action: tool[1], arg: tool[2].trim() };
  if (/\bslow\b/.test(text)) return { kind: "slow" };
  return { kind: "text" };
}

function shorten(text, n = 200) {
  const s = typeof text === "string" ? text : JSON.stringify(text);
  return s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s;
}

// ------------------------------------------------------------------------------------------
// Gemini API

/** The user text of the last `user` content, and the last part's function response if any. */
function geminiTurn(body) {
  const contents = Array.isArray(body?.contents) ? body.contents : [];
  const last = contents[contents.length - 1];
  const parts = Array.isArray(last?.parts) ? last.parts : [];
  const response = parts.find((p) => p && p.functionResponse);
  if (response) return { text: null, toolResult: JSON.stringify(response.functionResponse.response ?? {}) };
  // gemini-cli sends its `<session_context>` block as a part before the prompt's; the prompt is
  // the newest text part that is not such a block.
  for (let i = contents.length - 1; i >= 0; i--) {
    if (contents[i]?.role !== "user") continue;
    const texts = (contents[i].parts ?? []).map((p) => p?.text ?? "").filter((t) => t && !t.startsWith("<"));
    if (texts.length > 0) return { text: texts.join(""), toolResult: null };
  }
  return { text: null, toolResult: null };
}

/** A value of a (Gemini-flavoured, upper-case types) JSON schema: gemini-cli asks side questions
 * with one, e.g. its model router's `{complexity_reasoning, complexity_score}`; the lowest
 * numbers and first enum values keep it on its default path. */
function schemaValue(schema) {
  if (Array.isArray(schema?.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (String(schema?.type ?? "").toLowerCase()) {
    case "object":
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, schemaValue(v)]));
    case "array":
      return [];
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return false;
    default:
      return "stand-in";
  }
}

function geminiTools(body) {
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  return tools.flatMap((t) => t?.functionDeclarations ?? []);
}

/** gemini-cli's tool for an action and its argument object. */
function geminiCall(tools, action, arg) {
  if (action === "ask") return null;
  const names = new Set(tools.map((t) => t.name));
  const pick = (...candidates) => candidates.find((n) => names.has(n));
  if (action === "read") {
    const name = pick("read_file");
    return name && { name, args: { file_path: arg } };
  }
  if (action === "write") {
    const name = pick("write_file");
    // The production scenarios check this text (WRITTEN_TEXT in xtask/src/interop/production.rs).
    return name && { name, args: { file_path: arg, content: "written by the stand-in model\n" } };
  }
  const name = pick("run_shell_command");
  return name && { name, args: { command: arg, description: "stand-in model command" } };
}

const usage = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };

function geminiChunk(parts, finish) {
  const candidate = { content: { role: "model", parts }, index: 0 };
  if (finish) candidate.finishReason = "STOP";
  return { candidates: [candidate], usageMetadata: usage, modelVersion: "stand-in" };
}

function geminiReply(decision, tools) {
  switch (decision.kind) {
    case "tool": {
      const call = geminiCall(tools, decision.action, decision.arg);
      if (!call) return [geminiChunk([{ text: `NO TOOL for ${decision.action}` }], true)];
      return [geminiChunk([{ functionCall: call }], true)];
    }
    case "tool-result":
      return [geminiChunk([{ text: `TOOL RESULT: ${shorten(decision.result, 400)}` }], true)];
    default: {
      const words = FIXED_TEXT.match(/\S+\s*/g);
      const half = Math.ceil(words.length / 2);
      return [
        geminiChunk([{ text: words.slice(0, half).join("") }], false),
        geminiChunk([{ text: words.slice(half).join("") }], true),
      ];
    }
  }
}

// ------------------------------------------------------------------------------------------
// OpenAI Responses API

/** The newest user text of `input`, and the output of a trailing function call if any. */
function responsesTurn(body) {
  const input = Array.isArray(body?.input) ? body.input : [];
  const last = input[input.length - 1];
  if (last && (last.type === "function_call_output" || last.type === "custom_tool_call_output")) {
    return { text: null, toolResult: typeof last.output === "string" ? last.output : JSON.stringify(last.output) };
  }
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i];
    if (item?.role !== "user") continue;
    const content = typeof item.content === "string" ? [{ text: item.content }] : (item.content ?? []);
    const text = content.map((c) => c?.text ?? "").join("");
    // codex sends its environment context and instructions as user messages too; the prompt is
    // the newest one that is not such a block.
    if (text && !text.trimStart().startsWith("<")) return { text, toolResult: null };
  }
  return { text: null, toolResult: null };
}

function responsesTools(body) {
  return Array.isArray(body?.tools) ? body.tools : [];
}

/** codex's tool for an action: its shell tool, with the command as it expects it. */
function responsesCall(tools, action, arg) {
  if (action === "ask") return null;
  const functions = tools.filter((t) => t?.type === "function");
  const byName = (n) => functions.find((t) => t.name === n);
  const command = action === "run" ? arg : action === "read" ? `cat ${arg}` : `echo written > ${arg}`;
  const shell = byName("shell_command") ?? byName("exec_command");
  if (shell) {
    const key = shell.parameters?.properties?.command ? "command" : "cmd";
    const props = shell.parameters?.properties ?? {};
    const args = { [props.cmd ? "cmd" : key]: command };
    // A command (not a read) asks to run outside the sandbox, which codex puts to the client as
    // a permission request under its default `on-request` approval policy.
    if (action !== "read" && props.sandbox_permissions) {
      args.sandbox_permissions = "require_escalated";
      args.justification = "The stand-in model asks to run this command.";
    }
    return { name: shell.name, arguments: JSON.stringify(args) };
  }
  const legacy = byName("shell");
  if (legacy) return { name: "shell", arguments: JSON.stringify({ command: ["bash", "-lc", command] }) };
  return null;
}

let sequence = 0;
const nextId = (prefix) => `${prefix}_${Date.now().toString(36)}${(sequence++).toString(36)}`;

function responsesEvents(decision, tools, model) {
  const id = nextId("resp");
  const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "in_progress" };
  const events = [{ type: "response.created", response: { ...base, output: [] } }];
  let item;
  if (decision.kind === "tool") {
    const call = responsesCall(tools, decision.action, decision.arg);
    if (call) {
      item = { type: "function_call", id: nextId("fc"), call_id: nextId("call"), status: "completed", ...call };
      events.push({ type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress" } });
    }
  }
  if (!item) {
    const text =
      decision.kind === "tool-result"
        ? `TOOL RESULT: ${shorten(decision.result, 400)}`
        : decision.kind === "tool"
          ? `NO TOOL for ${decision.action}`
          : FIXED_TEXT;
    const msgId = nextId("msg");
    events.push({
      type: "response.output_item.added",
      output_index: 0,
      item: { type: "message", id: msgId, role: "assistant", status: "in_progress", content: [] },
    });
    for (const delta of text.match(/\S+\s*/g) ?? [text]) {
      events.push({ type: "response.output_text.delta", item_id: msgId, output_index: 0, content_index: 0, delta });
    }
    item = {
      type: "message",
      id: msgId,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text, annotations: [] }],
    };
  }
  events.push({ type: "response.output_item.done", output_index: 0, item });
  events.push({
    type: "response.completed",
    response: {
      ...base,
      status: "completed",
      output: [item],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 15,
      },
    },
  });
  return events;
}


// ------------------------------------------------------------------------------------------
// OpenAI Chat Completions API

/** The text of a chat message's `content` (a string or an array of parts). */
function chatText(content) {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((c) => c?.text ?? "").join("") : "";
}

/** The newest user text of `messages`, and the content of a trailing tool message if any. */
function chatTurn(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const last = messages[messages.length - 1];
  if (last?.role === "tool") return { text: null, toolResult: chatText(last.content) };
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role !== "user") continue;
    // Agentao puts a `<system-reminder>` block (the date) before the prompt in the same message.
    const text = chatText(messages[i].content).replace(/<system-reminder>[\s\S]*?<\/system-reminder>\s*/g, "");
    if (text && !text.trimStart().startsWith("<")) return { text, toolResult: null };
  }
  return { text: null, toolResult: null };
}

function chatTools(body) {
  return (Array.isArray(body?.tools) ? body.tools : []).map((t) => t?.function).filter(Boolean);
}

/** The agent's tool for an action, with its argument object: the first listed name it has, and
 * the first argument name its parameters list. */
function chatCall(tools, action, arg) {
  const candidates = {
    run: [["run_shell_command", "shell", "bash"], ["command", "cmd"]],
    read: [["read_file"], ["file_path", "path"]],
    write: [["write_file"], ["file_path", "path"]],
    ask: [["ask_user"], ["question"]],
  }[action];
  const tool = candidates[0].map((n) => tools.find((t) => t.name === n)).find(Boolean);
  if (!tool) return null;
  const props = tool.parameters?.properties ?? {};
  const key = candidates[1].find((k) => k in props) ?? candidates[1][0];
  const args = { [key]: arg };
  if (action === "write") args.content = "written by the stand-in model\n";
  return { name: tool.name, arguments: JSON.stringify(args) };
}

/** The deltas of a reply: `{ content }` pieces or one `{ tool_calls }`, and its finish reason. */
function chatReply(decision, tools) {
  const call = decision.kind === "tool" ? chatCall(tools, decision.action, decision.arg) : null;
  if (call) {
    const toolCall = { index: 0, id: nextId("call"), type: "function", function: call };
    return { deltas: [{ tool_calls: [toolCall] }], finish: "tool_calls" };
  }
  const text =
    decision.kind === "tool-result"
      ? `TOOL RESULT: ${shorten(decision.result, 400)}`
      : decision.kind === "tool"
        ? `NO TOOL for ${decision.action}`
        : FIXED_TEXT;
  return { deltas: (text.match(/\S+\s*/g) ?? [text]).map((content) => ({ content })), finish: "stop" };
}

const chatUsage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

/** Serves one chat completion: streamed chunks, or one object. */
function chatRespond(req, res, json, entry, decision, tools) {
  const id = nextId("chatcmpl");
  const model = json?.model ?? "stand-in";
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta, finish, extra = {}) => ({
    id, object: "chat.completion.chunk", created, model,
    choices: [{ index: 0, delta, finish_reason: finish }], ...extra,
  });
  const write = (value) => res.write(`data: ${JSON.stringify(value)}\n\n`);
  if (json?.stream) {
    sse(res);
    write(chunk({ role: "assistant", content: "" }, null));
    if (decision.kind === "slow") return stall(req, res, entry);
  }
  const { deltas, finish } = chatReply(decision, tools);
  entry.answered = deltas.map((d) => shorten(d, 120));
  log(entry);
  if (!json?.stream) {
    const message = { role: "assistant", content: deltas.map((d) => d.content ?? "").join("") || null };
    if (deltas[0]?.tool_calls) message.tool_calls = deltas[0].tool_calls.map(({ index, ...call }) => call);
    const choice = { index: 0, message, finish_reason: finish };
    return sendJson(res, 200, { id, object: "chat.completion", created, model, choices: [choice], usage: chatUsage });
  }
  deltas.forEach((delta, i) => write(chunk(delta, i === deltas.length - 1 ? finish : null)));
  if (json?.stream_options?.include_usage) write({ ...chunk({}, null), choices: [], usage: chatUsage });
  res.write("data: [DONE]\n\n");
  return res.end();
}

// ------------------------------------------------------------------------------------------
// Serving

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}

/** Holds the stream open for SLOW_MS, or until the agent hangs up. */
function stall(req, res, entry) {
  const started = Date.now();
  // Logged now and again when it ends, so that a hung agent's request shows in the log.
  log({ ...entry, stalling: true });
  const timer = setTimeout(() => {
    log({ ...entry, stalled_ms: Date.now() - started, ended: "timeout" });
    res.end();
  }, SLOW_MS);
  res.on("close", () => {
    clearTimeout(timer);
    log({ ...entry, stalled_ms: Date.now() - started, ended: "client closed" });
  });
}

async function handle(req, res) {
  const url = new URL(req.url, "http://stand-in");
  const { text, json } = await readBody(req);
  const entry = { n: ++requestNo, method: req.method, path: url.pathname, query: url.search || undefined };
  if (bodiesDir && text) writeFileSync(`${bodiesDir}/${String(entry.n).padStart(3, "0")}.json`, text);
  const path = url.pathname;

  const gemini = path.match(/\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/);
  if (req.method === "POST" && gemini) {
    const [, model, verb] = gemini;
    const turn = geminiTurn(json);
    const tools = geminiTools(json);
    const decision = decide(turn.text, turn.toolResult);
    Object.assign(entry, {
      api: "gemini",
      model,
      verb,
      user: turn.text && shorten(turn.text),
      tools: tools.map((t) => t.name),
      decision: decision.kind,
      json_schema: json?.generationConfig?.responseJsonSchema ? true : undefined,
    });
    if (verb === "countTokens") {
      log(entry);
      return sendJson(res, 200, { totalTokens: Math.ceil(text.length / 4) });
    }
    if (verb === "generateContent") {
      const schema = json?.generationConfig?.responseJsonSchema ?? json?.generationConfig?.responseSchema;
      const reply = schema ? JSON.stringify(schemaValue(schema)) : FIXED_TEXT;
      log(entry);
      return sendJson(res, 200, geminiChunk([{ text: reply }], true));
    }
    sse(res);
    if (decision.kind === "slow") return stall(req, res, entry);
    const chunks = geminiReply(decision, tools);
    entry.answered = chunks.map((c) => shorten(c.candidates[0].content.parts, 120));
    log(entry);
    for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    return res.end();
  }

  if (req.method === "POST" && path.endsWith("/responses")) {
    const turn = responsesTurn(json);
    const tools = responsesTools(json);
    const decision = decide(turn.text, turn.toolResult);
    Object.assign(entry, {
      api: "responses",
      model: json?.model,
      stream: json?.stream,
      user: turn.text && shorten(turn.text),
      tool_result: turn.toolResult !== null ? shorten(turn.toolResult) : undefined,
      tools: tools.map((t) => t.name ?? t.type),
      decision: decision.kind,
    });
    sse(res);
    const events = responsesEvents(decision, tools, json?.model ?? "stand-in");
    if (decision.kind === "slow") {
      res.write(`event: response.created\ndata: ${JSON.stringify(events[0])}\n\n`);
      return stall(req, res, entry);
    }
    entry.answered = events.map((e) => e.type === "response.output_item.done" ? shorten(e.item, 200) : e.type);
    log(entry);
    for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    return res.end();
  }

  if (req.method === "POST" && path.endsWith("/chat/completions")) {
    const turn = chatTurn(json);
    const tools = chatTools(json);
    const decision = decide(turn.text, turn.toolResult);
    Object.assign(entry, {
      api: "chat",
      model: json?.model,
      stream: json?.stream,
      user: turn.text && shorten(turn.text),
      tool_result: turn.toolResult !== null ? shorten(turn.toolResult) : undefined,
      tools: tools.map((t) => t.name),
      decision: decision.kind,
    });
    return chatRespond(req, res, json, entry, decision, tools);
  }

  entry.body = text ? shorten(text, 300) : undefined;
  entry.status = 404;
  log(entry);
  sendJson(res, 404, { error: { code: 404, message: `the stand-in model server does not serve ${path}` } });
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req, res) => {
  handle(req, res).catch((error) => {
    log({ method: req.method, path: req.url, error: String(error?.stack ?? error) });
    if (!res.headersSent) sendJson(res, 500, { error: { code: 500, message: String(error) } });
    else res.end();
  });
});
const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];
server.listen(port, host, () => {
  const address = server.address();
  console.error(`listening on http://${address.address}:${address.port}`);
});
