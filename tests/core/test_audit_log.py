"""The audit log: one JSON line per decision, capped, appended whole, written on close."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_core import (
    AgentContext,
    AuditLog,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ToolCall,
    build_session,
    hookimpl,
    make_plugin_manager,
    run_tool_call,
    tool,
)
from pi_core._session.audit import MAX_LINE_BYTES, cap_arguments


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


class Policy:
    """Blocks ``quiet``, allows ``hello`` naming itself, asks about ``maybe``."""

    @hookimpl
    def pi_before_tool_call(self, context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        text = context.args["text"]
        if text == "quiet":
            return BeforeToolCallResult(
                block=True, reason="no whispering", source="rules.txt:3", detail={"rule": 3}
            )
        if text == "hello":
            return BeforeToolCallResult(
                block=False, reason="greetings are fine", source="rules.txt:1"
            )
        return None

    @hookimpl
    def pi_approve_tool_call(self, context: BeforeToolCallContext) -> str | None:
        return "maybe needs a person" if context.args["text"] == "maybe" else None


class Register:
    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(shout)


def run_calls(tmp_path: Path, texts: list[str], **session_options: Any) -> list[dict[str, Any]]:
    pm = make_plugin_manager(autoload=False)
    pm.register(Policy(), name="policy")
    pm.register(Register(), name="register")
    session = build_session(pm, tmp_path, {}, audit="audit.jsonl", **session_options)

    async def main() -> None:
        async with session:
            context = AgentContext(tools=session.tools)
            for n, text in enumerate(texts):
                call = ToolCall(id=f"t{n}", name="shout", arguments={"text": text})
                await run_tool_call(call, context, session.loop_config())

    trio.run(main)
    return [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]


def test_every_decision_is_one_line_with_its_source(tmp_path: Path) -> None:
    entries = run_calls(tmp_path, ["quiet", "hello", "other", "maybe"], approval=lambda r: "deny")
    for entry in entries:
        assert entry.pop("time").endswith("Z")
        assert isinstance(entry.pop("session"), str)
        assert entry.pop("latency_ms") >= 0
    base = {"parent_tool_call_id": None, "tool": "shout", "phase": "before"}
    assert entries == [
        {
            "tool_call_id": "t0",
            **base,
            "arguments": {"text": "quiet"},
            "decision": "deny",
            "source": "rules.txt:3",
            "reason": "no whispering",
            "detail": {"rule": 3},
        },
        {
            "tool_call_id": "t1",
            **base,
            "arguments": {"text": "hello"},
            "decision": "allow",
            "source": "rules.txt:1",
            "reason": "greetings are fine",
        },
        {
            "tool_call_id": "t2",
            **base,
            "arguments": {"text": "other"},
            "decision": "allow",
            "source": None,
            "reason": "no policy blocked the call",
        },
        {
            "tool_call_id": "t3",
            **base,
            "arguments": {"text": "maybe"},
            "decision": "deny",
            "source": "policy",
            "reason": "Blocked: the user denied this call. policy: maybe needs a person",
            "approval": {
                "answer": "deny",
                "allowed": False,
                "source": "policy",
                "reason": "maybe needs a person",
            },
        },
    ]
    assert stat.S_IMODE(os.stat(tmp_path / "audit.jsonl").st_mode) == 0o600


def test_arguments_are_capped_and_no_line_is_over_the_limit(tmp_path: Path) -> None:
    (entry,) = run_calls(tmp_path, ["x" * 100_000])
    assert entry["arguments"] == {"text": "x" * 1024 + "…[+98976 chars]"}
    assert cap_arguments({"a": "y" * 10}) == {"a": "y" * 10}
    many = {str(n): "z" * 1000 for n in range(100)}
    assert list(cap_arguments(many)) == ["truncated"]
    line = AuditLog.line({"arguments": many, "reason": "r" * 50_000})
    assert len(line.encode()) <= MAX_LINE_BYTES and line.endswith("\n")


def _append(path: str, worker: int) -> None:
    async def main() -> None:
        log = AuditLog(path)
        for n in range(300):
            await log.record({"worker": worker, "n": n, "pad": "p" * (n * 7 % 3000)})
        await log.aclose()

    trio.run(main)


def test_lines_of_several_processes_never_interleave(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.jsonl")
    workers = [multiprocessing.Process(target=_append, args=(path, w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    entries = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert len(entries) == 900
    for w in range(3):
        assert [e["n"] for e in entries if e["worker"] == w] == list(range(300))


def test_a_log_that_cannot_be_opened_raises_and_close_is_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AuditLog(tmp_path / "missing" / "a.jsonl")
    log = AuditLog(tmp_path / "a.jsonl")
    trio.run(log.record, {"a": 1})
    log.close()
    log.close()
    trio.run(log.record, {"after": "close"})  # ignored
    assert (tmp_path / "a.jsonl").read_text() == '{"a":1}\n'


def test_agent_approval_callback_answers_and_needs_a_session(tmp_path: Path) -> None:
    from pi_core import Agent

    with pytest.raises(ValueError) as info:
        Agent(approval=lambda request: "allow")
    assert str(info.value) == (
        "Agent(approval=...) needs a session whose policies can ask "
        "(build_session(...).agent(...) or Agent(session=...))"
    )
    pm = make_plugin_manager(autoload=False)
    pm.register(Policy(), name="policy")
    pm.register(Register(), name="register")
    session = build_session(pm, tmp_path, {})
    asked: list[str] = []

    async def approve(request: Any) -> str:
        asked.append(f"{request.tool_call_id} {request.source}: {request.reason}")
        return "always"

    agent = Agent(
        session=session, approval=approve, tools=session.tools, config=session.loop_config()
    )

    async def main() -> list[str]:
        texts = []
        async with agent:
            context = AgentContext(tools=session.tools)
            for n in range(2):
                call = ToolCall(id=f"m{n}", name="shout", arguments={"text": "maybe"})
                outcome = await run_tool_call(call, context, session.loop_config())
                texts.append(outcome.result.content[0].text)
        return texts

    assert trio.run(main) == ["MAYBE", "MAYBE"]
    assert asked == ["m0 policy: maybe needs a person"]  # "always": not asked again
