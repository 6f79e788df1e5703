#!/usr/bin/env python3
"""A pass-through ACP proxy for the conductor's tests: raw JSON-RPC on stdio, stdlib only.

Run by a conductor as a component with a successor. It answers `proxy/initialize` with the
answer of the `initialize` it sends on through `proxy/successor`; passes every other request and
notification from its predecessor on to its successor (wrapped in `proxy/successor`), and every
message from its successor (unwrapped) on to its predecessor; answers go back under the id they
were asked with. A `$/cancel_request` for a request it passed on cancels its own request (its own
`$/cancel_request`, its own id). Probes, for the tests, each answered with the conductor's answer
as the result (`{"error": …}` or `{"result": …}`):
- `_test/malformed`: sends `proxy/successor` with no `method` in its params;
- `_test/nested`: sends `proxy/successor` wrapping another `proxy/successor`;
- `_test/initialize`: sends `proxy/successor` wrapping a `proxy/initialize`;
- `_test/cancel`: sends `proxy/successor` wrapping a `$/cancel_request` (cancellation is per hop);
- `_test/null-params`: sends `proxy/successor` wrapping `_test/unknown` with `"params": null`
  (no params, as the schema says: the agent gets it and answers that it does not know it).
`_test/exit` makes it exit at once, without answering. Ends at end of input.
"""

import json
import sys

PROBES = {
    "_test/malformed": {"params": {}},
    "_test/nested": {"method": "proxy/successor", "params": {"method": "session/new", "params": {}}},
    "_test/initialize": {"method": "proxy/initialize", "params": {"protocolVersion": 1}},
    "_test/cancel": {"method": "$/cancel_request", "params": {"requestId": 0}},
    "_test/null-params": {"method": "_test/unknown", "params": None},
}


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def request(our_id, method, params):
    message = {"id": our_id, "method": method}
    if params is not None:
        message["params"] = params
    send(message)


def notify(method, params):
    message = {"method": method}
    if params is not None:
        message["params"] = params
    send(message)


def main():
    next_id = 0
    pending = {}  # our request id -> (the id it answers, whether it is a probe)
    ours = {}  # the conductor's request id (as JSON) -> our request id passing it on
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        params = message.get("params")
        if method is None:
            # An answer to one of our requests.
            answered = pending.pop(message.get("id"), None)
            if answered is None:
                continue
            their_id, probe = answered
            ours.pop(json.dumps(their_id), None)
            if probe:
                outcome = {k: message[k] for k in ("result", "error") if k in message}
                send({"id": their_id, "result": outcome})
            elif "error" in message:
                send({"id": their_id, "error": message["error"]})
            else:
                send({"id": their_id, "result": message.get("result")})
            continue
        if "id" not in message:
            if method == "$/cancel_request":
                our_id = ours.get(json.dumps((params or {}).get("requestId")))
                if our_id is not None:
                    notify("$/cancel_request", {"requestId": our_id})
            elif method == "proxy/successor":
                notify(params["method"], params.get("params"))
            else:
                notify("proxy/successor", dict({"method": method}, **({"params": params} if params is not None else {})))
            continue
        if method == "_test/exit":
            sys.exit(0)
        their_id = message["id"]
        our_id = next_id
        next_id += 1
        probe = method in PROBES
        pending[our_id] = (their_id, probe)
        ours[json.dumps(their_id)] = our_id
        if probe:
            request(our_id, "proxy/successor", PROBES[method])
        elif method == "proxy/successor":
            request(our_id, params["method"], params.get("params"))
        elif method == "proxy/initialize":
            request(our_id, "proxy/successor", {"method": "initialize", "params": params})
        else:
            wrapped = {"method": method}
            if params is not None:
                wrapped["params"] = params
            request(our_id, "proxy/successor", wrapped)


if __name__ == "__main__":
    main()
