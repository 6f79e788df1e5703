#!/usr/bin/env python3
"""A raw ACP proxy component for `acp tap`'s tests: JSON-RPC by hand, stdlib only.

Run by a conductor (here: the test, through `acp tap`): it answers `proxy/initialize` after
forwarding an `initialize` to its successor through `proxy/successor`, with the successor's
answer. `--change-version N` answers with protocolVersion N instead (breaking
`proxy.same-version`); `--no-forward` answers at once without forwarding (breaking
`proxy.forward-initialize`). A `session/update` delivered from the successor is passed on to
the predecessor unchanged. Ends at end of input.
"""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(args):
    change = int(args[args.index("--change-version") + 1]) if "--change-version" in args else None
    forward = "--no-forward" not in args
    waiting = {}  # id of our proxy/successor request -> id of the proxy/initialize it serves
    next_id = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if method == "proxy/initialize":
            if not forward:
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": change or 1, "agentCapabilities": {}}})
                continue
            waiting[next_id] = message["id"]
            send({"jsonrpc": "2.0", "id": next_id, "method": "proxy/successor",
                  "params": {"method": "initialize", "params": message.get("params")}})
            next_id += 1
        elif method == "proxy/successor" and "id" not in message:
            inner = message["params"]
            send({"jsonrpc": "2.0", "method": inner["method"], "params": inner.get("params")})
        elif method is None and message.get("id") in waiting:
            result = dict(message.get("result") or {})
            if change is not None:
                result["protocolVersion"] = change
            send({"jsonrpc": "2.0", "id": waiting.pop(message["id"]), "result": result})


if __name__ == "__main__":
    main(sys.argv[1:])
