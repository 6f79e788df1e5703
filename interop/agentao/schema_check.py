"""Checks schema/ext/agentao.json against Agentao's own exported JSON Schema.

    PYTHON schema_check.py EXT.json

run with the interpreter of a venv holding `agentao` (`cargo xtask interop --only agentao`
does). Theirs is `agentao.host.schema.export_host_acp_json_schema()` (pydantic's export of the
models Agentao's ACP server validates with). Three sets of JSON are validated under both:

- `ours`: every `examples` entry of EXT.json's `$defs`;
- `seed`: the messages seed 001 (Agentao's field reference, Appendix C) documents;
- `code`: payloads built from Agentao's own pydantic models (what its code accepts or sends);
- `probe`: each type's first example with a field neither schema names (`x-unknown`): whether
  the type is closed.

Prints one JSON line per case: {"case", "source", "type", "json", "expect", "ours", "theirs"},
a verdict being "ok" or the first validation error ("error: PATH: MESSAGE"), `expect` "ok",
"error" or null (a probe: either). The caller compares the verdicts.
"""

import json
import sys
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

from agentao.acp import schema as models
from agentao.host.schema import export_host_acp_json_schema

# Our `$defs` name -> theirs, for the types both schemas describe.
THEIRS = {
    "AskUserRequest": "AcpAskUserParams",
    "AskUserResponse": "AcpAskUserResponse",
    "SetModelRequest": "AcpAgentaoSetModelRequest",
    "SetModelResponse": "AcpAgentaoSetModelResponse",
    "Extension": "AcpInitializeExtension",
    "InitializeResponseMeta": "AcpInitializeMeta",
    "InitializeResponse": "AcpInitializeResponse",
}

SESSION = "5b9e0c1e-8d3f-4a61-9d7c-2f0a4b6e1c11"
ADVERTISED = {"method": "_agentao.cn/ask_user", "description": "Request free-form text input from the user."}

# (case, our type, JSON): what seed 001's tables document.
SEED = [
    ("C.1 initialize answer", "InitializeResponse", {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
            "mcpCapabilities": {"sse": True, "http": False},
        },
        "authMethods": [],
        "agentInfo": {"name": "agentao", "title": "Agentao", "version": "0.5.17"},
        "_meta": {"_agentao.cn/extensions": [ADVERTISED]},
    }),
    ("C.1 initialize _meta", "InitializeResponseMeta", {"_agentao.cn/extensions": [ADVERTISED]}),
    ("C.9 set_model params", "SetModelRequest", {"sessionId": SESSION, "model": "gpt-4o"}),
    ("C.9 set_model params with apiKey (refused: \"apiKey, baseUrl, _meta are rejected\")", "SetModelRequest",
     {"sessionId": SESSION, "model": "gpt-4o", "apiKey": "sk-x"}),
    ("C.9 set_model result", "SetModelResponse", {"model": "gpt-4o"}),
    ("C.11 ask_user params", "AskUserRequest", {"sessionId": SESSION, "question": "Which branch?"}),
    ("C.11 ask_user answer", "AskUserResponse", {"answer": "main"}),
    ("C.11 ask_user sentinel", "AskUserResponse", {"answer": "(user unavailable)"}),
]


def code_cases():
    """Payloads made by Agentao's own models, dumped as its code puts them on the wire."""
    dump = lambda m: m.model_dump(mode="json", by_alias=True, exclude_none=True)
    return [
        ("AcpAskUserParams with its choice hints", "AskUserRequest", dump(models.AcpAskUserParams(
            sessionId=SESSION, question="Pick one", header="Deploy", options=["main", "dev"], multiple=True,
            allowCustom=False))),
        ("AcpAskUserAnswered", "AskUserResponse", dump(models.AcpAskUserAnswered(text="main"))),
        ("AcpAskUserCancelled", "AskUserResponse", dump(models.AcpAskUserCancelled())),
        ("AcpAgentaoSetModelResponse", "SetModelResponse", dump(models.AcpAgentaoSetModelResponse(model="m"))),
        ("AcpInitializeExtension", "Extension", dump(models.AcpInitializeExtension(**ADVERTISED))),
    ]


def main():
    ext_path = Path(sys.argv[1]).resolve()
    ours_doc = json.loads(ext_path.read_text())
    core_path = (ext_path.parent / ".." / "v1" / "schema.json").resolve()
    theirs_doc = export_host_acp_json_schema()
    ours_uri, core_uri, theirs_uri = ext_path.as_uri(), core_path.as_uri(), "urn:agentao:host-acp"
    # Our InitializeResponse: the core type, with our `_meta`.
    ours_doc["$defs"]["InitializeResponse"] = {"allOf": [
        {"$ref": "../v1/schema.json#/$defs/InitializeResponse"},
        {"properties": {"_meta": {"$ref": "#/$defs/InitializeResponseMeta"}}},
    ]}
    registry = Registry().with_resources([
        (ours_uri, Resource.from_contents(ours_doc)),
        (core_uri, Resource.from_contents(json.loads(core_path.read_text()))),
        (theirs_uri, Resource.from_contents(theirs_doc)),
    ])

    def verdict(uri, name, value):
        validator = jsonschema.Draft202012Validator({"$ref": f"{uri}#/$defs/{name}"}, registry=registry)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return "ok"
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(root)"
        return f"error: {path}: {error.message}"

    examples = [(name, i, value) for name, node in ours_doc["$defs"].items() if name in THEIRS
                for i, value in enumerate(node.get("examples", []))]
    cases = [(f"{name} example {i + 1}", "ours", name, value, "ok") for name, i, value in examples]
    cases += [(case, "seed", name, value, "error" if "refused" in case else "ok") for case, name, value in SEED]
    cases += [(case, "code", name, value, "ok") for case, name, value in code_cases()]
    cases += [(f"{name} with an unknown field", "probe", name, {**value, "x-unknown": 1}, None)
              for name, i, value in examples if i == 0 and isinstance(value, dict)]
    for case, source, name, value, expect in cases:
        print(json.dumps({
            "case": case, "source": source, "type": name, "json": value, "expect": expect,
            "ours": verdict(ours_uri, name, value), "theirs": verdict(theirs_uri, THEIRS[name], value),
        }))


if __name__ == "__main__":
    main()
