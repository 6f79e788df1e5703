#!/usr/bin/env python3
"""A client test in Python against `acp mock-agent`, as a user of another language writes one:
raw JSON-RPC lines over the agent's stdin/stdout, nothing but the standard library.

    client.py ACP_BINARY SCRIPT VERSION...

For each protocol VERSION (1, 2) it starts `ACP_BINARY mock-agent --script SCRIPT`, initializes
(v1: advertising fs and terminal), opens a session and prompts "please edit the notes" (the
script's turn: a thought, a tool call, a permission request answered "yes", a file read and write
and a terminal in v1, a closing message), then "hello" (no scripted turn: echoed). It answers the
agent's requests from an in-memory file system and a fake terminal, checks what it saw, and prints
`PASS vN` per version; any failure is printed and the exit status is 1.
"""

import json
import queue
import subprocess
import sys
import threading

# A generous guard against a hung agent: this is not a timing check.
READ_TIMEOUT_S = 60


class Agent:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # The agent's lines, read by a thread (None once its stdout closed).
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        message["jsonrpc"] = "2.0"
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def receive(self):
        try:
            line = self.lines.get(timeout=READ_TIMEOUT_S)
        except queue.Empty:
            raise AssertionError(f"no message from the agent in {READ_TIMEOUT_S} s") from None
        if line is None:
            raise AssertionError("the agent closed its stdout")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait()


class Client:
    """Answers the agent's requests: permission, files in memory, a fake terminal."""

    def __init__(self):
        self.files = {"/project/notes.txt": "old notes"}
        self.terminal_calls = []
        self.permission_requests = []

    def answer(self, method, params):
        if method == "session/request_permission":
            self.permission_requests.append(params)
            option = next(o for o in params["options"] if o["kind"].startswith("allow"))
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        if method == "fs/read_text_file":
            return {"content": self.files[params["path"]]}
        if method == "fs/write_text_file":
            self.files[params["path"]] = params["content"]
            return {}
        if method.startswith("terminal/"):
            self.terminal_calls.append(method)
            if method == "terminal/create":
                return {"terminalId": "term-1"}
            if method == "terminal/wait_for_exit":
                return {"exitCode": 0}
            if method == "terminal/output":
                return {"output": "ok\n", "truncated": False}
            return {}
        return None


def turn(agent, client, version, session_id, text):
    """Prompts `text`; the agent's message texts and the stop reason."""
    prompt_id = agent.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
    said, stop = [], None
    while stop is None:
        message = agent.receive()
        if "method" in message and "id" in message:
            result = client.answer(message["method"], message.get("params", {}))
            if result is None:
                agent.send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
            else:
                agent.send({"id": message["id"], "result": result})
        elif message.get("method") == "session/update":
            update = message["params"]["update"]
            kind = update["sessionUpdate"]
            if kind in ("agent_message_chunk", "agent_thought_chunk"):
                said.append(update["content"]["text"])
            if version == 2 and kind == "state_update" and update.get("state") == "idle":
                stop = update["stopReason"]
        elif message.get("id") == prompt_id:
            assert "result" in message, f"session/prompt failed: {message}"
            if version == 1:
                stop = message["result"]["stopReason"]
    return said, stop


def check(acp, script, version):
    agent = Agent([acp, "mock-agent", "--script", script])
    client = Client()
    if version == 1:
        capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
        init = {"protocolVersion": 1, "clientCapabilities": capabilities}
    else:
        init = {"protocolVersion": 2, "info": {"name": "python-test", "version": "0"}}
    agent.request("initialize", init)
    answer = agent.receive()
    assert answer["result"]["protocolVersion"] == version, answer
    new = {"cwd": "/project", "mcpServers": []} if version == 1 else {"cwd": "/project"}
    agent.request("session/new", new)
    session_id = agent.receive()["result"]["sessionId"]

    said, stop = turn(agent, client, version, session_id, "please edit the notes")
    assert stop == "end_turn", stop
    assert len(client.permission_requests) == 1, client.permission_requests
    if version == 1:
        assert said == ["Looking at the notes", "old notes", "ok\n(exit 0)", "Edited."], said
        assert client.files["/project/notes.txt"] == "new notes", client.files
        expected = ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
        assert client.terminal_calls == expected, client.terminal_calls
    else:
        # The v2 schema has no fs/* or terminal/* client methods: the mock skips those steps.
        assert said == ["Looking at the notes", "Edited."], said
        assert client.files["/project/notes.txt"] == "old notes", client.files
        assert client.terminal_calls == [], client.terminal_calls

    said, stop = turn(agent, client, version, session_id, "hello")
    assert (said, stop) == (["hello"], "end_turn"), (said, stop)
    status = agent.close()
    assert status == 0, f"acp mock-agent exited {status}"
    print(f"PASS v{version}")


def main():
    acp, script, versions = sys.argv[1], sys.argv[2], sys.argv[3:]
    failed = False
    for version in versions:
        try:
            check(acp, script, int(version))
        except AssertionError as e:
            print(f"FAIL v{version}: {e}")
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
