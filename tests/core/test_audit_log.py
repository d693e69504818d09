"""The audit log: one JSON line per decision, capped, appended whole, written before the call
goes on; a decision that cannot be written refuses its call (``on_error``), and a torn last
line is closed off before the next entry (issue 23, point 4)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_core import (
    AfterToolCallResult,
    AgentContext,
    AuditLog,
    BeforeToolCallContext,
    BeforeToolCallResult,
    TextContent,
    ToolCall,
    build_session,
    hookimpl,
    make_plugin_manager,
    run_tool_call,
    tool,
)
from pi_core._session.audit import MAX_LINE_BYTES, cap_arguments
from support import fill_up


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


def call_texts(
    tmp_path: Path,
    texts: list[str],
    audit: str | Path = "audit.jsonl",
    between: Any = None,
    **session_options: Any,
) -> list[tuple[str, bool]]:
    """``(text, is_error)`` of each call of ``shout`` on ``texts``, in a session whose audit
    log is ``audit``; ``between(n)`` runs before call ``n``."""
    pm = make_plugin_manager(autoload=False)
    pm.register(Policy(), name="policy")
    pm.register(Register(), name="register")
    session = build_session(pm, tmp_path, {}, audit=audit, **session_options)

    async def main() -> list[tuple[str, bool]]:
        results = []
        async with session:
            context = AgentContext(tools=session.tools)
            for n, text in enumerate(texts):
                if between is not None:
                    between(n, session)
                call = ToolCall(id=f"t{n}", name="shout", arguments={"text": text})
                outcome = await run_tool_call(call, context, session.loop_config())
                results.append((outcome.result.content[0].text, outcome.is_error))
        return results

    return trio.run(main)


def run_calls(tmp_path: Path, texts: list[str], **session_options: Any) -> list[dict[str, Any]]:
    call_texts(tmp_path, texts, **session_options)
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
    assert trio.run(log.record, {"after": "close"}) == "the audit log is closed"
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


# -- fails closed, never corrupts (issue 23, point 4) ----------------------------------------


def test_a_decision_the_full_disk_refuses_refuses_its_call(
    tmp_path: Path, small_filesystem: Any
) -> None:
    disk = small_filesystem(64 * 1024)
    log = disk / "audit.jsonl"
    fill_up(disk)  # the empty log needs a page the disk no longer has

    def free_the_disk(n: int, session: Any) -> None:
        if n == 2:
            (disk / "filler").unlink()

    results = call_texts(tmp_path, ["hello", "quiet", "hello"], audit=log, between=free_the_disk)
    assert results == [
        (
            f"Blocked: the audit log {log} could not record the decision to allow this call: "
            "No space left on device",
            True,
        ),
        ("no whispering", True),  # a denial stays a denial
        ("HELLO", False),
    ]
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (entry["tool_call_id"], entry["decision"]) == ("t2", "allow")


def test_on_error_allow_lets_the_call_through_and_says_so_once(
    tmp_path: Path, small_filesystem: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    disk = small_filesystem(64 * 1024)
    log = disk / "audit.jsonl"
    fill_up(disk)

    def allow_on_error(n: int, session: Any) -> None:
        session.session_context.audit.on_error = "allow"

    results = call_texts(tmp_path, ["hello", "other"], audit=log, between=allow_on_error)
    assert results == [("HELLO", False), ("OTHER", False)]
    assert log.read_text() == ""
    assert capfd.readouterr().err == f"pi: audit log {log}: No space left on device\n"


def test_a_short_write_is_an_error_and_the_torn_line_is_closed_off(
    tmp_path: Path, small_filesystem: Any
) -> None:
    """The disk has room for only part of a line: the kernel writes that part (a short
    write), the call is refused, and the next entry closes the torn line off."""
    disk = small_filesystem(64 * 1024)
    log = disk / "audit.jsonl"
    page = os.sysconf("SC_PAGE_SIZE")
    first = json.dumps({"pad": "p" * (page - 100 - 12)}) + "\n"  # leaves 100 bytes of its page
    assert len(first) == page - 100
    log.write_text(first)
    fill_up(disk)

    def free_the_disk(n: int, session: Any) -> None:
        if n == 1:
            (disk / "filler").unlink()

    results = call_texts(tmp_path, ["hello", "other"], audit=log, between=free_the_disk)
    (refused, _), second = results
    assert re.fullmatch(
        rf"Blocked: the audit log {re.escape(str(log))} could not record the decision to allow "
        r"this call: only 100 of \d+ bytes of the line were written",
        refused,
    )
    assert second == ("OTHER", False)
    lines = log.read_bytes().split(b"\n")
    assert lines[0] == first[:-1].encode() and lines[-1] == b""
    assert len(lines[1]) == 100 and lines[1].startswith(b'{"time":')  # the torn line
    entry = json.loads(lines[2])
    assert (entry["tool_call_id"], entry["torn_line_bytes"]) == ("t1", 100)
    assert list(entry)[-1] == "torn_line_bytes"
    assert len(lines) == 4


def test_a_torn_line_left_by_a_crash_is_closed_before_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"a":1}\n{"time":"2026-12-01T2')  # a process died mid-line
    log = AuditLog(path)
    assert trio.run(log.record, {"b": 2}) is None
    assert trio.run(log.record, {"c": 3}) is None
    log.close()
    assert path.read_bytes() == (
        b'{"a":1}\n{"time":"2026-12-01T2\n{"b":2,"torn_line_bytes":21}\n{"c":3}\n'
    )


def test_a_decision_after_the_call_that_cannot_be_written_withholds_the_result(
    tmp_path: Path,
) -> None:
    """An after-phase decision (a plugin rewrote the result, naming itself) that cannot be
    written: the model gets the refusal, not the result (``/dev/full`` fails the write)."""

    class Rewriter:
        @hookimpl
        def pi_after_tool_call(self, context: Any) -> AfterToolCallResult:
            log = context.session.audit
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, log._fd)  # from now on every write of the log fails
            os.close(full)
            return AfterToolCallResult(content=[TextContent(text="rewritten")], source="rw")

    pm = make_plugin_manager(autoload=False)
    pm.register(Register(), name="register")
    pm.register(Rewriter(), name="rewriter")
    session = build_session(pm, tmp_path, {}, audit="audit.jsonl")

    async def main() -> tuple[str, bool]:
        async with session:
            context = AgentContext(tools=session.tools)
            call = ToolCall(id="a1", name="shout", arguments={"text": "hi"})
            outcome = await run_tool_call(call, context, session.loop_config())
            return outcome.result.content[0].text, outcome.is_error

    assert trio.run(main) == (
        f"Blocked: the audit log {tmp_path / 'audit.jsonl'} could not record the decision "
        "about this call's result: No space left on device",
        True,
    )
    (before,) = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert (before["phase"], before["decision"]) == ("before", "allow")


def test_on_error_must_be_deny_or_allow(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        AuditLog(tmp_path / "a.jsonl", on_error="ignore")
    assert str(info.value) == "on_error must be 'deny' or 'allow', not 'ignore'"
