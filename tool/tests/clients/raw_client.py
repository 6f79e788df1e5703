#!/usr/bin/env python3
"""A raw ACP client (v1 and v2) for `acp conform --client`'s tests: JSON-RPC by hand, stdlib only.

usage: raw_client.py [--protocol-version N] [--strict-version] [--cancel] [--serve] [--break RULE_ID] --prompt TEXT -- AGENT_CMD...

Well-behaved by default: `initialize` (asking for N, default 2), `session/new`, one
`session/prompt` with TEXT; permission requests answered with the first option offered; unknown
requests answered -32601; the turn read to its end (v1: the prompt's response; v2: the `idle`
state update), then the agent's stdin closed. `--break RULE_ID` breaks that one rule of the
tool's rule table (src/rules.rs), and nothing else, so that a test can see
`acp conform --client` name it. `--strict-version` speaks version N only: answered another,
it closes the agent's stdin and exits 1. `--cancel` cancels the turn (`session/cancel`) when
asked for permission and answers the request `cancelled`. `--serve` (v1) advertises and serves
`fs/read_text_file`, `fs/write_text_file` and `terminal/*` (`terminal/create` runs nothing: its
output is the command line).

Breaks of rules that the tool's table has for clients: `schema.valid` sends `session/cancel` as a
request; `cap.client-serves-fs` advertises `fs` and answers its methods -32601; `rpc.unique-ids`
(v2) sends a request with the id of its prompt while the prompt is pending; `rpc.reply` never
answers the agent's `_` requests.
"""

import json
import os
import subprocess
import sys


class Client:
    def __init__(self, agent, version, broken, strict=False, cancel=False, serve=False):
        self.serve = serve
        self.terminals = {}
        self.strict = strict
        self.cancel = cancel
        self.agent = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.version = version
        self.broken = broken
        self.next_id = 0
        self.answers = {}
        self.prompt_id = None
        self.done = False

    # -- wire -------------------------------------------------------------------------------
    def write(self, text):
        self.agent.stdin.write((text + "\n").encode())
        self.agent.stdin.flush()

    def send(self, message):
        message["jsonrpc"] = "2.0"
        self.write(json.dumps(message))

    def request(self, method, params, id=None):
        if id is None:
            id = self.next_id
            self.next_id += 1
        self.send({"id": id, "method": method, "params": params})
        return id

    def read(self):
        line = self.agent.stdout.readline()
        if not line:
            sys.exit("raw_client: the agent closed its stdout")
        return json.loads(line)

    def wait(self, id):
        """Serves the agent's messages until the response to our request `id` comes."""
        while id not in self.answers:
            self.handle(self.read())
        return self.answers.pop(id)

    # -- the agent's messages -----------------------------------------------------------------
    def handle(self, message):
        method = message.get("method")
        params = message.get("params") or {}
        if method is None:
            self.answers[message.get("id")] = message
            if message.get("id") == self.prompt_id and self.version == 1:
                self.done = True
            return
        if "id" not in message:
            if method.startswith("_") and self.broken == "rpc.no-response-to-notification":
                self.send({"id": None, "error": {"code": -32601, "message": "Method not found"}})
            update = params.get("update") or {}
            if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                self.done = True
            return
        id = message["id"]
        if method == "session/request_permission":
            return self.permission(id, params)
        if method.startswith("_") and self.broken == "rpc.reply":
            return
        if self.serve and self.serves(id, method, params):
            return
        if self.broken == "rpc.method-not-found":
            return self.send({"id": id, "result": {}})
        self.send({"id": id, "error": {"code": -32601, "message": "Method not found: " + method}})

    def serves(self, id, method, params):
        """`--serve`: the fs and terminal methods; whether `method` is one."""
        if method == "fs/read_text_file":
            with open(params["path"]) as f:
                self.send({"id": id, "result": {"content": f.read()}})
        elif method == "fs/write_text_file":
            with open(params["path"], "w") as f:
                f.write(params["content"])
            self.send({"id": id, "result": {}})
        elif method == "terminal/create":
            terminal = "term-%d" % len(self.terminals)
            self.terminals[terminal] = " ".join([params["command"]] + params.get("args", []))
            self.send({"id": id, "result": {"terminalId": terminal}})
        elif method == "terminal/output":
            output = self.terminals.get(params["terminalId"], "")
            self.send({"id": id, "result": {"output": output, "truncated": False}})
        elif method == "terminal/release":
            self.terminals.pop(params["terminalId"], None)
            self.send({"id": id, "result": {}})
        else:
            return False
        return True

    def permission(self, id, params):
        option = params["options"][0]["optionId"]
        if self.broken == "perm.offered-option":
            option = "never-offered"
        if self.cancel or self.broken == "turn.cancel-permission":
            self.send({"method": "session/cancel", "params": {"sessionId": params["sessionId"]}})
        if self.broken == "schema.valid":
            # A notification sent as a request (with an id).
            self.request("session/cancel", {"sessionId": params["sessionId"]})
        if self.broken == "rpc.v1-unique-ids":
            # A request with the id of the prompt, which is still pending.
            self.request("session/new", {"cwd": os.getcwd(), "mcpServers": []}, id=self.prompt_id)
        if self.broken == "rpc.response-to-pending":
            self.send({"id": "never-asked", "result": {}})
        outcome = {"outcome": "selected", "optionId": option}
        if self.cancel:
            outcome = {"outcome": "cancelled"}
        self.send({"id": id, "result": {"outcome": outcome}})

    # -- the run ----------------------------------------------------------------------------
    def run(self, text):
        if self.broken == "rpc.json-only":
            self.write("raw_client starting")
        if self.broken == "init.first":
            self.wait(self.request("session/new", self.new_params()))
        if self.version == 1:
            fs = self.serve or self.broken == "cap.client-serves-fs"
            params = {"protocolVersion": 1, "clientInfo": {"name": "raw_client", "version": "0.1.0"},
                      "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs},
                                             "terminal": self.serve}}
        else:
            params = {"protocolVersion": self.version, "info": {"name": "raw_client", "version": "0.1.0"},
                      "capabilities": {}}
        answer = self.wait(self.request("initialize", params))
        if "result" not in answer:
            sys.exit("raw_client: initialize refused: %s" % json.dumps(answer))
        if self.strict and answer["result"]["protocolVersion"] != self.version:
            self.agent.stdin.close()
            self.agent.wait()
            sys.exit("raw_client: the agent answered version %s" % answer["result"]["protocolVersion"])
        self.version = answer["result"]["protocolVersion"]
        if self.broken == "ext.underscore":
            # A custom method whose name lacks the leading `_`.
            self.wait(self.request("raw_client/custom", {}))
        if self.broken == "init.once":
            self.wait(self.request("initialize", params))
        if self.broken == "cap.load-session":
            self.wait(self.request("session/load", {"sessionId": "s-1", "cwd": os.getcwd(), "mcpServers": []}))
        session = self.wait(self.request("session/new", self.new_params()))["result"]["sessionId"]
        prompt = [{"type": "text", "text": text}]
        if self.broken == "cap.prompt-content":
            prompt.append({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
        self.prompt_id = self.request("session/prompt", {"sessionId": session, "prompt": prompt})
        if self.broken == "rpc.unique-ids":
            # The prompt is still pending (the stand-in holds it a moment).
            self.request("session/new", self.new_params(), id=self.prompt_id)
        while not self.done:
            self.handle(self.read())
        self.agent.stdin.close()
        self.agent.wait()

    def new_params(self):
        params = {"cwd": os.getcwd()}
        if self.version == 1:
            params["mcpServers"] = []
        return params


def main():
    args = sys.argv[1:]
    version, broken, prompt, strict, cancel, serve = 2, None, None, False, False, False
    while args and args[0] != "--":
        if args[0] == "--protocol-version" and len(args) > 1:
            version, args = int(args[1]), args[2:]
        elif args[0] == "--strict-version":
            strict, args = True, args[1:]
        elif args[0] == "--cancel":
            cancel, args = True, args[1:]
        elif args[0] == "--serve":
            serve, args = True, args[1:]
        elif args[0] == "--break" and len(args) > 1:
            broken, args = args[1], args[2:]
        elif args[0] == "--prompt" and len(args) > 1:
            prompt, args = args[1], args[2:]
        else:
            break
    if not args or args[0] != "--" or len(args) < 2 or prompt is None:
        sys.exit("usage: raw_client.py [--protocol-version N] [--strict-version] [--cancel] [--serve] [--break RULE_ID] "
                 "--prompt TEXT "
                 "-- AGENT_CMD...")
    Client(args[1:], version, broken, strict, cancel, serve).run(prompt)


if __name__ == "__main__":
    main()
