#!/usr/bin/env python3
"""A raw ACP agent (v1 and v2) for `acp conform`'s tests: JSON-RPC by hand, stdlib only.

Well-behaved by default. `--break RULE_ID` breaks that one rule of the tool's rule table
(tool/src/rules.rs), and nothing else, so that a test can see `acp conform` name it.

`--advertise` advertises (and serves) everything optional: v1 `loadSession` (the history kept
in a file of the session's cwd, so that a fresh process can load it), `sessionCapabilities`
list/resume/close/fork, image/audio/embedded prompts, modes and a config option.
`--no-reload` (with `--advertise`) refuses to load or resume a session it created in the same
process, as agents that hold a session open do; a fresh process loads it from the file.
`--require-auth` lists one auth method (`raw-key`) and refuses `session/new` (-32000) until
`authenticate` (v2: `auth/login`) with it. `--refuse-prompts` answers every `session/prompt`
with an error (a model that cannot be reached): a session with no conversation to replay.

Breaks of the rules every message is judged by: `schema.valid` sends a v1 `tool_call` update
without its required `toolCallId` (v2: an `agent_message_chunk` without `messageId`);
`schema.valid-response` answers a v1 prompt with a `stopReason` that is a number (v2: a
`messageId` that is one); `rpc.reply` never answers `_acp_conform/no_such_method`.
`--answer-version N` answers every `initialize` with version N, then serves the version asked.
`--whole-messages` (v2) sends its reply as one whole `agent_message` upsert, not as chunks.
`--extra-member` answers `session/new` with a member no schema has (`sandbox`): lossy, not invalid.

A prompt whose text contains "slow" keeps the agent busy until `session/cancel`; one with
"tools" (v1) asks for permission, then reads and writes a file and runs `echo` in a terminal,
each when the client advertised it.
"""

import json
import os
import sys

SUPPORTED = (1, 2)


HISTORY = ".raw_agent_sessions.json"


class Agent:
    def __init__(self, broken, advertise=False, require_auth=False, no_reload=False, refuse_prompts=False,
                 answer_version=None, whole_messages=False, extra_member=False):
        self.broken = broken
        self.extra_member = extra_member
        self.whole_messages = whole_messages
        self.answer_version = answer_version
        self.refuse_prompts = refuse_prompts
        self.advertise = advertise
        self.no_reload = no_reload
        self.created = set()  # sessions of session/new in this process
        self.require_auth = require_auth
        self.authenticated = False
        self.history = {}  # session -> the updates of its turns (v1), replayed by session/load
        self.version = None
        self.client_caps = {}
        self.sessions = 0
        self.messages = 0
        self.next_id = 0
        self.cwd = {}
        self.busy = {}  # session -> prompt id (v1) or True (v2): a turn waiting for its cancel
        self.answers = {}  # id -> response, for requests of ours answered while waiting
        self.initialized = False

    # -- wire -------------------------------------------------------------------------------
    def send(self, message):
        message["jsonrpc"] = "2.0"
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def result(self, id, result):
        self.send({"id": id, "result": result})

    def error(self, id, code, text):
        self.send({"id": id, "error": {"code": code, "message": text}})

    def update(self, session, update):
        self.send({"method": "session/update", "params": {"sessionId": session, "update": update}})

    def request(self, method, params, id=None):
        if id is None:
            id = "agent-%d" % self.next_id
            self.next_id += 1
        self.send({"id": id, "method": method, "params": params})
        return id

    def wait(self, id):
        """Serves incoming messages until the response to our request `id` comes."""
        while id not in self.answers:
            line = sys.stdin.readline()
            if not line:
                sys.exit(0)
            self.handle(line)
        return self.answers.pop(id)

    # -- dispatch ---------------------------------------------------------------------------
    def handle(self, line):
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            if self.broken != "rpc.parse-error":
                self.error(None, -32700, "Parse error")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.error(None, -32600, "Invalid Request")
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method is None:
            self.answers[message.get("id")] = message
            return
        if "id" not in message:
            if self.broken == "rpc.no-response-to-notification":
                self.error(None, -32601, "Method not found")
            if method == "session/cancel":
                self.cancel(params.get("sessionId"))
            return
        id = message["id"]
        if method == "initialize":
            return self.initialize(id, params)
        if not self.initialized and self.broken != "init.refuse-before-initialize":
            return self.error(id, -32600, "initialize first")
        handler = {
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/load": self.load,
        }.get(method)
        if self.require_auth and method in ("authenticate", "auth/login"):
            handler = self.authenticate
        if self.advertise or self.version == 2:
            # v2's `capabilities.session: {}` is the baseline: list, resume and close included.
            handler = {
                "session/list": self.list,
                "session/resume": self.resume,
                "session/close": self.close,
            }.get(method, handler)
        if self.advertise:
            handler = {
                "session/fork": self.fork,
                "session/set_mode": self.set_mode,
                "session/set_config_option": self.set_config_option,
            }.get(method, handler)
        if handler is None:
            if self.broken == "rpc.reply" and method == "_acp_conform/no_such_method":
                return
            if self.broken == "rpc.method-not-found":
                return self.error(id, -32603, "no idea")
            return self.error(id, -32601, "Method not found: " + method)
        handler(id, params)

    def initialize(self, id, params):
        requested = params.get("protocolVersion")
        if not isinstance(requested, int):
            return self.error(id, -32602, "protocolVersion must be an integer")
        if self.broken == "init.version":
            version = requested
        else:
            lower = [v for v in SUPPORTED if v <= requested]
            if not lower:
                return self.send({"id": id, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                      "data": {"supported": list(SUPPORTED)}}})
            version = max(lower)
        self.version = version
        answered = version if self.answer_version is None else self.answer_version
        self.initialized = True
        info = {"name": "raw_agent", "version": "0.1.0"}
        if version == 1:
            self.client_caps = params.get("clientCapabilities") or {}
            caps = {"loadSession": False}
            if self.advertise:
                caps = {"loadSession": True,
                        "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
                        "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}}}
            answer = {"protocolVersion": answered, "agentCapabilities": caps, "agentInfo": info}
            if self.require_auth:
                answer["authMethods"] = [{"id": "raw-key", "name": "Raw key", "description": "a test key"}]
        else:
            caps = {"session": {}}
            if self.advertise:
                caps["session"]["prompt"] = {"image": {}, "audio": {}, "embeddedContext": {}}
            answer = {"protocolVersion": answered, "info": info, "capabilities": caps}
            if self.require_auth:
                answer["authMethods"] = [{"type": "agent", "methodId": "raw-key", "name": "Raw key"}]
        self.result(id, answer)

    def authenticate(self, id, params):
        if params.get("methodId") != "raw-key":
            return self.error(id, -32602, "unknown auth method %r" % params.get("methodId"))
        self.authenticated = True
        self.result(id, {})

    # -- what --advertise serves --------------------------------------------------------------
    def stored(self, cwd):
        try:
            with open(os.path.join(cwd or "/nonexistent", HISTORY)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def store(self, session):
        cwd = self.cwd.get(session)
        if not self.advertise or not cwd:
            return
        sessions = self.stored(cwd)
        sessions[session] = self.history.get(session, [])
        with open(os.path.join(cwd, HISTORY), "w") as f:
            json.dump(sessions, f)

    def known(self, session, cwd):
        if session in self.cwd:
            return True
        stored = self.stored(cwd)
        if session in stored:
            self.cwd[session] = cwd
            self.history[session] = stored[session]
            return True
        return False

    def config(self, value="small"):
        key = "id" if self.version == 1 else "configId"
        return [{key: "model", "name": "Model", "type": "select", "currentValue": value,
                 "options": [{"value": "small", "name": "Small"}, {"value": "large", "name": "Large"}]}]

    def list(self, id, params):
        sessions = [{"sessionId": s, "cwd": c} for s, c in self.cwd.items()
                    if params.get("cwd") in (None, c)]
        self.result(id, {"sessions": sessions})

    def resume(self, id, params):
        session = params.get("sessionId")
        if self.no_reload and session in self.created:
            return self.error(id, -32600, "session %s is open in this process" % session)
        if not self.known(session, params.get("cwd")):
            return self.error(id, -32002, "no session %s" % session)
        if self.version == 2:
            self.update(session, {"sessionUpdate": "state_update", "state": "idle"})
        self.result(id, {})

    def close(self, id, params):
        session = params.get("sessionId")
        self.cwd.pop(session, None)
        self.result(id, {})

    def fork(self, id, params):
        session = params.get("sessionId")
        if not self.known(session, params.get("cwd")):
            return self.error(id, -32002, "no session %s" % session)
        fork = "fork-%d" % self.sessions
        self.sessions += 1
        self.cwd[fork] = params.get("cwd")
        self.history[fork] = list(self.history.get(session, []))
        self.result(id, {"sessionId": fork})

    def set_mode(self, id, params):
        if params.get("modeId") not in ("ask", "code"):
            return self.error(id, -32602, "no mode %r" % params.get("modeId"))
        self.result(id, {})

    def set_config_option(self, id, params):
        if self.broken == "cap.v2-serves-config-option" and self.version == 2:
            return self.error(id, -32603, "config options cannot be set")
        if params.get("configId") != "model" or params.get("value") not in ("small", "large"):
            return self.error(id, -32602, "no such option or value")
        self.result(id, {"configOptions": self.config(params["value"])})

    def new_session(self, id, params):
        if self.require_auth and not self.authenticated:
            return self.send({"id": id, "error": {"code": -32000, "message": "Authentication required"}})
        session = "sess-0" if self.broken == "session.distinct-ids" else "sess-%d" % self.sessions
        self.sessions += 1
        self.cwd[session] = params.get("cwd") or "/"
        self.created.add(session)
        answer = {"sessionId": session}
        if self.advertise:
            answer["configOptions"] = self.config()
            if self.version == 1:
                answer["modes"] = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"},
                                                                             {"id": "code", "name": "Code"}]}
        if self.extra_member:
            answer["sandbox"] = "strict"
        self.result(id, answer)
        if self.broken == "rpc.response-to-pending":
            self.result(999, {})

    def load(self, id, params):
        if not self.advertise:
            return self.error(id, -32601, "Method not found: session/load")
        session = params.get("sessionId")
        if self.no_reload and session in self.created:
            return self.error(id, -32600, "session %s is open in this process" % session)
        if self.broken == "cap.serves-load" or not self.known(session, params.get("cwd")):
            return self.error(id, -32002, "no session %s" % session)
        if self.broken == "session.load-replay":
            self.result(id, {})
        for update in self.history.get(session, []):
            self.update(session, update)
        if self.broken != "session.load-replay":
            self.result(id, {})

    # -- turns ------------------------------------------------------------------------------
    def prompt(self, id, params):
        if self.refuse_prompts:
            return self.error(id, -32603, "the model cannot be reached")
        session = params.get("sessionId")
        text = " ".join(b.get("text", "") for b in params.get("prompt") or [] if isinstance(b, dict))
        if self.version == 1:
            self.prompt_v1(id, session, text)
        else:
            self.prompt_v2(id, session, text)

    def prompt_v1(self, id, session, text):
        if "slow" in text:
            self.busy[session] = id
            self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "thinking"}})
            return
        fs = (self.client_caps.get("fs") or {}).get("readTextFile") is True
        if fs or self.broken == "cap.client-fs":
            ask = self.request("fs/read_text_file", {"sessionId": session, "path": self.cwd.get(session, "/") + "/notes.txt"})
            self.wait(ask)
        if "tools" in text:
            text += self.tools(session)
        if self.broken == "mcp.declared-server":
            # MCP over ACP to a server no `mcpServers` entry declared (the client answers -32601).
            self.wait(self.request("mcp/message", {"serverId": "undeclared", "requestId": "r-1", "method": "tools/list"}))
        self.history.setdefault(session, []).extend([
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        ])
        self.store(session)
        if self.broken == "rpc.v1-unique-ids":
            options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]
            params = {"sessionId": session, "toolCall": {"toolCallId": "call-1"}, "options": options}
            self.request("session/request_permission", params, id="perm")
            self.request("session/request_permission", params, id="perm")
            self.wait("perm")
        if self.broken == "schema.valid":
            self.update(session, {"sessionUpdate": "tool_call", "title": "no id"})
        self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        self.result(id, {"stopReason": 42 if self.broken == "schema.valid-response" else "end_turn"})

    def tools(self, session):
        """Permission, then fs and a terminal, each when the client advertised it; what was seen."""
        seen = []
        options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                   {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
        call = {"toolCallId": "tools-1", "title": "Use tools", "kind": "execute"}
        answer = self.wait(self.request("session/request_permission",
                                        {"sessionId": session, "toolCall": call, "options": options}))
        seen.append("permission %s" % json.dumps(answer.get("result", {}).get("outcome")))
        fs = self.client_caps.get("fs") or {}
        cwd = self.cwd.get(session, "/")
        if fs.get("writeTextFile") is True:
            answer = self.wait(self.request("fs/write_text_file", {"sessionId": session, "path": cwd + "/out.txt",
                                                                   "content": "written"}))
            seen.append("write %s" % ("ok" if "result" in answer else "refused"))
        if fs.get("readTextFile") is True:
            answer = self.wait(self.request("fs/read_text_file", {"sessionId": session, "path": cwd + "/out.txt"}))
            seen.append("read %r" % answer.get("result", {}).get("content"))
        if self.client_caps.get("terminal") is True or self.broken == "cap.client-terminal":
            answer = self.wait(self.request("terminal/create", {"sessionId": session, "command": "echo",
                                                                "args": ["hi"], "outputByteLimit": 64}))
            terminal = answer.get("result", {}).get("terminalId")
            if terminal:
                ids = {"sessionId": session, "terminalId": terminal}
                exit = self.wait(self.request("terminal/wait_for_exit", ids)).get("result")
                output = self.wait(self.request("terminal/output", ids)).get("result", {})
                self.wait(self.request("terminal/release", ids))
                seen.append("terminal %r exit %s" % (output.get("output"), json.dumps(exit)))
        return " [" + "; ".join(seen) + "]"

    def prompt_v2(self, id, session, text):
        self.messages += 1
        message = "msg-%d" % self.messages
        self.result(id, {"messageId": 42 if self.broken == "schema.valid-response" else message})
        if self.broken != "turn.v2-running-idle":
            self.update(session, {"sessionUpdate": "state_update", "state": "running"})
        if self.broken != "turn.v2-user-message":
            self.update(session, {"sessionUpdate": "user_message", "messageId": message,
                                  "content": [{"type": "text", "text": text}]})
        if "slow" in text:
            self.busy[session] = True
            return
        chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "reply-" + message,
                 "content": {"type": "text", "text": text}}
        if self.whole_messages:
            chunk = {"sessionUpdate": "agent_message", "messageId": "reply-" + message,
                     "content": [{"type": "text", "text": text}]}
        if self.broken == "schema.valid":
            del chunk["messageId"]
        self.update(session, chunk)
        self.idle(session, "end_turn")

    def idle(self, session, stop):
        update = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop}
        # Only the turn that ends normally is broken (a cancelled one has rules of its own).
        if stop == "end_turn" and self.broken == "ext.underscore":
            update["stopReason"] = "aborted"
        if stop == "end_turn" and self.broken == "turn.v2-stop-reason":
            del update["stopReason"]
        self.update(session, update)

    def cancel(self, session):
        if session not in self.busy:
            return
        pending = self.busy.pop(session)
        if self.version == 1:
            self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "stopping"}})
            stop = "end_turn" if self.broken == "turn.v1-cancelled" else "cancelled"
            self.result(pending, {"stopReason": stop})
            if self.broken == "turn.v1-updates-before-response":
                # The sentence speaks of the updates a cancel may bring, before the answer.
                self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}})
        else:
            self.idle(session, "end_turn" if self.broken == "turn.v2-cancelled" else "cancelled")


def main():
    broken = None
    advertise = require_auth = no_reload = refuse_prompts = False
    answer_version = None
    whole_messages = False
    extra_member = False
    args = sys.argv[1:]
    while args:
        if args[0] == "--break" and len(args) > 1:
            broken, args = args[1], args[2:]
        elif args[0] == "--advertise":
            advertise, args = True, args[1:]
        elif args[0] == "--require-auth":
            require_auth, args = True, args[1:]
        elif args[0] == "--no-reload":
            no_reload, args = True, args[1:]
        elif args[0] == "--refuse-prompts":
            refuse_prompts, args = True, args[1:]
        elif args[0] == "--extra-member":
            extra_member, args = True, args[1:]
        elif args[0] == "--whole-messages":
            whole_messages, args = True, args[1:]
        elif args[0] == "--answer-version" and len(args) > 1:
            answer_version, args = int(args[1]), args[2:]
        else:
            sys.exit("usage: raw_agent.py [--break RULE_ID] [--advertise] [--no-reload] [--require-auth] "
                     "[--refuse-prompts] [--answer-version N] [--whole-messages] [--extra-member]")
    if broken == "rpc.json-only":
        sys.stdout.write("raw_agent starting\n")
        sys.stdout.flush()
    agent = Agent(broken, advertise, require_auth, no_reload, refuse_prompts, answer_version, whole_messages,
                  extra_member)
    for line in sys.stdin:
        agent.handle(line)


if __name__ == "__main__":
    main()
