#!/usr/bin/env python3
"""Validate the ACP message corpus (v1.json, v2.json) against the protocol schemas.

Usage: python3 tests/corpus/validate.py      (no arguments; needs only `jsonschema`)

For every case in each corpus file this checks:
  * the case shape (name, method, message, type, unstable, value) and that names are unique;
  * `type` is a `$defs` entry whose `x-method` equals `method`, and whose kind
    (request params / response result / notification params) matches `message`;
  * `value` validates (Draft 2020-12, plus integer-format range checks) against
    schema.unstable.json, and also against schema.json when `"unstable": false`;
  * no unknown fields on ordinary structs: every object key must be declared by the
    schema branch(es) the value matches, except inside `_meta`, free-form values and
    catch-all union variants (`additionalProperties: true`);
  * coverage: every `x-method` of schema.unstable.json has a request or notification
    case, and every request method also has a response case.

Exits non-zero on any failure and prints a count per file.
"""

import json
import re
import sys
from datetime import datetime
from pathlib import Path

try:
    import jsonschema
    from jsonschema import Draft202012Validator, FormatChecker
except ImportError:  # pragma: no cover
    sys.stderr.write(
        "error: the `jsonschema` Python package is required (4.x).\n"
        "  python3 -m venv /tmp/corpus-venv && /tmp/corpus-venv/bin/pip install jsonschema\n"
        "  /tmp/corpus-venv/bin/python tests/corpus/validate.py\n"
    )
    sys.exit(2)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCHEMA_DIR = REPO / "schema"
VERSIONS = ("v1", "v2")
MESSAGES = ("request", "response", "notification")

# ---------------------------------------------------------------------------
# Format checks: integer widths declared by the schemas, plus light uri/date-time checks
# (jsonschema skips formats it has no checker for).
# ---------------------------------------------------------------------------
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}

FORMATS = FormatChecker()


def _int_checker(lo, hi):
    def check(instance):
        if isinstance(instance, bool) or not isinstance(instance, (int, float)):
            return True
        if isinstance(instance, float) and not instance.is_integer():
            return False
        return lo <= instance <= hi

    return check


for _name, (_lo, _hi) in INT_RANGES.items():
    FORMATS.checks(_name)(_int_checker(_lo, _hi))


@FORMATS.checks("uri")
def _is_uri(instance):
    if not isinstance(instance, str):
        return True
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$", instance) is not None


@FORMATS.checks("date-time")
def _is_date_time(instance):
    if not isinstance(instance, str):
        return True
    if not re.match(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", instance):
        return False
    try:
        datetime.fromisoformat(instance.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


@FORMATS.checks("regex")
def _is_regex(instance):
    if not isinstance(instance, str):
        return True
    try:
        re.compile(instance)
    except re.error:
        return False
    return True


# ---------------------------------------------------------------------------
# Schema helpers
# ---------------------------------------------------------------------------
class Schema:
    def __init__(self, path):
        self.path = path
        self.doc = json.loads(path.read_text())
        self.defs = self.doc["$defs"]
        self._cache = {}
        self.kinds = self._classify()

    def validator(self, sub):
        key = json.dumps(sub, sort_keys=True)
        v = self._cache.get(key)
        if v is None:
            v = Draft202012Validator({"$defs": self.defs, **sub}, format_checker=FORMATS)
            self._cache[key] = v
        return v

    def type_validator(self, name):
        return self.validator({"$ref": "#/$defs/" + name})

    def _refs(self, node, out):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                out.add(ref[len("#/$defs/"):])
            for v in node.values():
                self._refs(v, out)
        elif isinstance(node, list):
            for v in node:
                self._refs(v, out)
        return out

    def _classify(self):
        """Map each x-method type to request / response / notification."""
        kinds = {}
        for union, kind in (("AgentRequest", "request"), ("ClientRequest", "request"),
                            ("ProxyRequest", "request"), ("AgentResponse", "response"),
                            ("ClientResponse", "response"), ("ProxyResponse", "response"),
                            ("AgentNotification", "notification"),
                            ("ClientNotification", "notification"),
                            ("ProxyNotification", "notification")):
            if union in self.defs:
                for name in self._refs(self.defs[union], set()):
                    if "x-method" in self.defs.get(name, {}):
                        kinds.setdefault(name, kind)
        for name, d in self.defs.items():
            if "x-method" in d and name not in kinds:
                # Protocol-level messages ($/cancel_request) live only in the root anyOf.
                kinds[name] = "notification" if name.endswith("Notification") else (
                    "response" if name.endswith("Response") else "request")
        return kinds

    def methods(self):
        out = {}
        for name, kind in self.kinds.items():
            out.setdefault(self.defs[name]["x-method"], set()).add(kind)
        return out

    # -- strict (no unknown struct fields) walker --------------------------------------
    def _applicable(self, schema, value, out):
        if not isinstance(schema, dict):
            return out
        out.append(schema)
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            self._applicable(self.defs[ref[len("#/$defs/"):]], value, out)
        for s in schema.get("allOf", []):
            self._applicable(s, value, out)
        for key in ("anyOf", "oneOf"):
            for s in schema.get(key, []):
                if self.validator(s).is_valid(value):
                    self._applicable(s, value, out)
        return out

    def unknown_fields(self, schemas, value, path, problems):
        applicable = []
        for s in schemas:
            self._applicable(s, value, applicable)
        if isinstance(value, dict):
            declared = {}
            extra = []
            is_open = False
            structural = False
            for s in applicable:
                if "properties" in s:
                    structural = True
                    for k, v in s["properties"].items():
                        declared.setdefault(k, []).append(v)
                ap = s.get("additionalProperties")
                if ap is True or s.get("unevaluatedProperties") is True or ap == {}:
                    is_open = True
                elif isinstance(ap, dict):
                    structural = True
                    extra.append(ap)
                if s.get("type") == "object" or (isinstance(s.get("type"), list) and "object" in s["type"]):
                    structural = True
            if not structural:
                return  # free-form JSON value (rawInput, ExtResponse, ...): anything goes
            for k, v in value.items():
                if k in declared:
                    self.unknown_fields(declared[k], v, path + [k], problems)
                elif extra:
                    self.unknown_fields(extra, v, path + [k], problems)
                elif not is_open:
                    problems.append("/".join(path + [k]))
        elif isinstance(value, list):
            items = [s["items"] for s in applicable if isinstance(s.get("items"), dict)]
            if items:
                for i, v in enumerate(value):
                    self.unknown_fields(items, v, path + [str(i)], problems)


def error_text(validator, value):
    errs = sorted(validator.iter_errors(value), key=lambda e: len(list(e.absolute_path)))
    if not errs:
        return None
    e = jsonschema.exceptions.best_match(errs)
    loc = "/".join(str(p) for p in e.absolute_path) or "<root>"
    return f"at {loc}: {e.message[:300]}"


def check_file(version):
    stable = Schema(SCHEMA_DIR / version / "schema.json")
    unstable = Schema(SCHEMA_DIR / version / "schema.unstable.json")
    path = HERE / f"{version}.json"
    failures = []
    if not path.exists():
        return 0, [f"{path.name}: file not found"], []
    try:
        cases = json.loads(path.read_text())
    except ValueError as e:
        return 0, [f"{path.name}: not valid JSON: {e}"], []
    if not isinstance(cases, list):
        return 0, [f"{path.name}: top level must be an array"], []

    names = set()
    seen = {}  # method -> set of message kinds
    via_catch_all = []
    for i, case in enumerate(cases):
        label = f"{path.name}[{i}] {case.get('name', '?')!r}"
        keys = ("name", "method", "message", "type", "unstable", "value")
        missing = [k for k in keys if k not in case]
        if missing:
            failures.append(f"{label}: missing keys {missing}")
            continue
        if case["name"] in names:
            failures.append(f"{label}: duplicate name")
        names.add(case["name"])
        method, message, tname, is_unstable, value = (case[k] for k in keys[1:])
        if message not in MESSAGES:
            failures.append(f"{label}: message must be one of {MESSAGES}")
            continue
        if not isinstance(is_unstable, bool):
            failures.append(f"{label}: unstable must be a boolean")
            continue
        tdef = unstable.defs.get(tname)
        if tdef is None:
            failures.append(f"{label}: type {tname} not in schema.unstable.json")
            continue
        if tdef.get("x-method") != method:
            failures.append(f"{label}: type {tname} has x-method {tdef.get('x-method')!r}, not {method!r}")
        if unstable.kinds.get(tname) != message:
            failures.append(f"{label}: type {tname} is a {unstable.kinds.get(tname)}, not a {message}")
        seen.setdefault(method, set()).add(message)

        err = error_text(unstable.type_validator(tname), value)
        if err:
            failures.append(f"{label}: invalid against schema.unstable.json {err}")
        problems = []
        unstable.unknown_fields([{"$ref": "#/$defs/" + tname}], value, [], problems)
        if problems:
            failures.append(f"{label}: unknown fields for schema.unstable.json: {problems}")

        in_stable = tname in stable.defs
        if not is_unstable:
            if not in_stable:
                failures.append(f"{label}: marked stable but {tname} is not in schema.json")
                continue
            err = error_text(stable.type_validator(tname), value)
            if err:
                failures.append(f"{label}: marked stable but invalid against schema.json {err}")
            problems = []
            stable.unknown_fields([{"$ref": "#/$defs/" + tname}], value, [], problems)
            if problems:
                failures.append(f"{label}: marked stable but fields are unknown to schema.json: {problems}")
        elif in_stable:
            problems = []
            stable.unknown_fields([{"$ref": "#/$defs/" + tname}], value, [], problems)
            if not problems and stable.type_validator(tname).is_valid(value):
                # e.g. a v2 `acp` MCP server still validates against the stable catch-all variant
                via_catch_all.append(case["name"])

    for method, kinds in sorted(unstable.methods().items()):
        got = seen.get(method, set())
        if not ({"request", "notification"} & got):
            failures.append(f"{path.name}: no request/notification case for {method}")
        if "request" in kinds and "response" in kinds and "response" not in got:
            failures.append(f"{path.name}: no response case for {method}")
    return len(cases), failures, via_catch_all


def main():
    total_failures = 0
    for version in VERSIONS:
        count, failures, via_catch_all = check_file(version)
        for f in failures:
            print("FAIL", f)
        total_failures += len(failures)
        status = "ok" if not failures else f"{len(failures)} failure(s)"
        print(f"{version}.json: {count} cases, {status}")
        if via_catch_all:
            print(f"  note: {len(via_catch_all)} unstable case(s) also validate against schema.json "
                  f"(unstable-only variants accepted there by a catch-all branch)")
    sys.exit(1 if total_failures else 0)


if __name__ == "__main__":
    main()
