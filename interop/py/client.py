"""An ACP client driver built on the official Python SDK (agent-client-protocol 0.12.1).

Used by `cargo xtask interop`, run with the interop venv's python:

    python client.py [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS...]

Spawns the agent, runs initialize, session/new (cwd = os.getcwd(), mcpServers []) and one
session/prompt. Allows every permission request (the first allow option) and answers
fs/read_text_file for paths inside cwd. Prints each `session/update` notification's
`params.update` as one JSON line on stdout, then `{"stopReason": ...}` as the last line.
Exits 0 when the turn ended, 1 otherwise, 2 on usage errors. The agent's stderr is passed
through.

The SDK speaks ACP v1 only: `--protocol-version N` just puts N into the (v1-shaped)
initialize request, and the agent's answer is logged, not checked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from acp import Client, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
)


def log(*args: object) -> None:
    print("[py-client]", *args, file=sys.stderr, flush=True)


def emit(value: Any) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def dump(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return model


class DriverClient(Client):
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        for option in options:
            kind = getattr(option.kind, "value", option.kind)
            if str(kind).startswith("allow"):
                log(f"permission requested; selecting {option.option_id!r}")
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        log("permission requested; no allow option, answering cancelled")
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        emit(dump(update))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        target = Path(path)
        full = target.resolve()
        if not target.is_absolute() or not full.is_relative_to(self.cwd):
            raise RequestError.invalid_params({"path": path, "reason": "outside the session cwd"})
        try:
            content = full.read_text(encoding="utf-8")
        except OSError:
            raise RequestError.resource_not_found(str(full)) from None
        if line is not None or limit is not None:
            lines = content.split("\n")
            start = max((line or 1) - 1, 0)
            end = start + limit if limit is not None else len(lines)
            content = "\n".join(lines[start:end])
        return ReadTextFileResponse(content=content)


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        print("client.py: missing -- AGENT_CMD", file=sys.stderr)
        raise SystemExit(2)
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="client.py")
    parser.add_argument("--protocol-version", type=int, default=1)
    parser.add_argument("--prompt", required=True)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("missing AGENT_CMD after --")
    return args, command


async def run(args: argparse.Namespace, command: list[str]) -> int:
    cwd = Path(os.getcwd()).resolve()
    info = Implementation(name="acp-interop-py-client", version=package_version("agent-client-protocol"))
    async with spawn_agent_process(
        DriverClient(cwd),
        command[0],
        *command[1:],
        env=dict(os.environ),
        # Pass the agent's stderr through instead of piping it (nobody would drain the pipe).
        transport_kwargs={"stderr": None},
    ) as (conn, process):
        try:
            init = await conn.initialize(
                protocol_version=args.protocol_version,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=False),
                    terminal=False,
                ),
                client_info=info,
            )
            log(f"initialized: agent answered protocolVersion {init.protocol_version}")
            session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block(args.prompt)])
        except Exception as error:  # noqa: BLE001 - report whatever failed
            log(f"turn failed: {type(error).__name__}: {error}")
            if process.returncode is not None:
                log(f"agent exited with code {process.returncode}")
            return 1
        stop_reason = getattr(response.stop_reason, "value", response.stop_reason)
        emit({"stopReason": stop_reason})
        return 0


def main() -> int:
    args, command = parse_args(sys.argv[1:])
    return asyncio.run(run(args, command))


if __name__ == "__main__":
    raise SystemExit(main())
