#!/usr/bin/env python3
"""A raw ACP agent (v1 and v2) for `acp conform`'s tests: JSON-RPC by hand, stdlib only.

Well-behaved by default. `--break RULE_ID` breaks that one rule of the tool's rule table
(tool/src/rules.rs), and nothing else, so that a test can see `acp conform` name it.

A prompt whose text contains "slow" keeps the agent busy until `session/cancel`.
"""

import json
import sys

SUPPORTED = (1, 2)


class Agent:
    def __init__(self, broken):
        self.broken = broken
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
        if not self.initialized and self.broken != "init.first":
            return self.error(id, -32600, "initialize first")
        handler = {
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/load": self.load,
        }.get(method)
        if handler is None:
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
        self.initialized = True
        info = {"name": "raw_agent", "version": "0.1.0"}
        if version == 1:
            self.client_caps = params.get("clientCapabilities") or {}
            self.result(id, {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}, "agentInfo": info})
        else:
            caps = {} if self.broken == "cap.session" else {"session": {}}
            self.result(id, {"protocolVersion": version, "info": info, "capabilities": caps})

    def new_session(self, id, params):
        session = "sess-0" if self.broken == "session.distinct-ids" else "sess-%d" % self.sessions
        self.sessions += 1
        self.cwd[session] = params.get("cwd") or "/"
        self.result(id, {"sessionId": session})
        if self.broken == "rpc.response-to-pending":
            self.result(999, {})

    def load(self, id, params):
        if self.broken == "cap.load-session":
            return self.result(id, {})
        self.error(id, -32601, "Method not found: session/load")

    # -- turns ------------------------------------------------------------------------------
    def prompt(self, id, params):
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
        if self.broken == "rpc.unique-ids":
            options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]
            params = {"sessionId": session, "toolCall": {"toolCallId": "call-1"}, "options": options}
            self.request("session/request_permission", params, id="perm")
            self.request("session/request_permission", params, id="perm")
            self.wait("perm")
        self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        self.result(id, {"stopReason": "end_turn"})
        if self.broken == "turn.v1-updates-before-response":
            self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}})

    def prompt_v2(self, id, session, text):
        self.messages += 1
        message = "msg-%d" % self.messages
        self.result(id, {"messageId": message})
        if self.broken != "turn.v2-running-idle":
            self.update(session, {"sessionUpdate": "state_update", "state": "running"})
        if self.broken != "turn.v2-user-message":
            self.update(session, {"sessionUpdate": "user_message", "messageId": message,
                                  "content": [{"type": "text", "text": text}]})
        if "slow" in text:
            self.busy[session] = True
            return
        self.update(session, {"sessionUpdate": "agent_message_chunk", "messageId": "reply-" + message,
                              "content": {"type": "text", "text": text}})
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
        else:
            self.idle(session, "end_turn" if self.broken == "turn.v2-cancelled" else "cancelled")


def main():
    broken = None
    if len(sys.argv) == 3 and sys.argv[1] == "--break":
        broken = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: raw_agent.py [--break RULE_ID]")
    if broken == "rpc.json-only":
        sys.stdout.write("raw_agent starting\n")
        sys.stdout.flush()
    agent = Agent(broken)
    for line in sys.stdin:
        agent.handle(line)


if __name__ == "__main__":
    main()
