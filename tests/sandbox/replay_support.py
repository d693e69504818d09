"""Test support: replay assistant messages with the real ``pi replay --json`` (a subprocess) and
the in-process single tool call, shared by the sandbox tests that check what a user sees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._plugins.session import Session, build_session
from pi_core._wire.messages import ToolCall

PI = str(Path(sys.executable).with_name("pi"))
"""The ``pi`` command of this virtual environment."""


def tool_call(i: str, name: str, **args: Any) -> dict[str, Any]:
    """A ``toolCall`` content block (wire JSON)."""
    return {"type": "toolCall", "id": i, "name": name, "arguments": args}


def replay(
    cwd: Path,
    messages: list[list[dict[str, Any]]],
    tmp: Path,
    *options: str,
    timeout: float = 120,
) -> list[dict[str, Any]]:
    """Write ``messages`` (each the content blocks of one assistant message) as JSONL under
    ``tmp``, run ``pi [OPTIONS] replay FILE --cwd CWD --json`` in ``cwd`` and return the printed
    ToolResultMessages; asserts exit code 0 and an empty stderr."""
    file = tmp / "replay.jsonl"
    file.write_text(
        "".join(
            json.dumps({"role": "assistant", "content": blocks, "stopReason": "toolUse"}) + "\n"
            for blocks in messages
        )
    )
    result = subprocess.run(
        [PI, *options, "replay", str(file), "--cwd", str(cwd), "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    assert (result.returncode, result.stderr) == (0, "")
    return [json.loads(line) for line in result.stdout.splitlines()]


def texts(results: list[dict[str, Any]]) -> dict[str, tuple[str, bool]]:
    """toolCallId → (the result's text, isError)."""
    return {
        r["toolCallId"]: ("".join(c.get("text", "") for c in r["content"]), r["isError"])
        for r in results
    }


def project_session(ws: Path) -> Session:
    """The session of the built-in tools and the sandbox plugin in ``ws``, with the config
    loaded from ``ws/pi.toml`` as ``pi`` loads it (so the session knows the file)."""
    import pi_builtin_tools.plugin as builtin_plugin
    import pi_sandbox_plugin.plugin as sandbox_plugin
    from pi_core import load_config
    from pi_core._plugins.manager import PiPluginManager

    pm = PiPluginManager()
    pm.register(builtin_plugin, name="builtin_tools")
    pm.register(sandbox_plugin, name="sandbox")
    return build_session(pm, ws, load_config(ws / "pi.toml").data)


async def call(session: Session, name: str, **args: Any) -> tuple[str, bool]:
    """Run one ``name`` tool call through the loop's pipeline: (result text, is_error)."""
    outcome = await run_tool_call(
        ToolCall(id="c1", name=name, arguments=args),
        AgentContext(tools=session.tools),
        session.loop_config(),
    )
    return outcome.result.text, outcome.is_error


__all__ = ["PI", "call", "project_session", "replay", "texts", "tool_call"]
