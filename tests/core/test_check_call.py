"""``Session.check_call``: what a session's hooks decide about a call, without running it
(``pi policy check`` asks every policy source this way; issue 23 point 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from test_audit_log import Policy

from pi_core import (
    AgentContext,
    CallCheck,
    ToolCall,
    build_session,
    hookimpl,
    make_plugin_manager,
    run_tool_call,
    tool,
)

RAN: list[str] = []


@tool
def shout(text: str) -> str:
    """Shout the text."""
    RAN.append(text)
    return text.upper()


class Register:
    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(shout)


def check(tmp_path: Path, name: str, arguments: Any, *, policy: bool = True) -> CallCheck:
    pm = make_plugin_manager(autoload=False)
    if policy:
        pm.register(Policy(), name="policy")
    pm.register(Register(), name="register")
    asked: list[Any] = []
    session = build_session(
        pm, tmp_path, {}, audit="audit.jsonl", approval=lambda request: asked.append(request)
    )
    result = trio.run(session.check_call, name, arguments)
    assert asked == []  # the session's own approver (a person) is never asked by a check
    assert session.context is not None and session.context.approvals.approver is not None
    return result


def test_a_blocking_hook_denies_and_names_itself(tmp_path: Path) -> None:
    assert check(tmp_path, "shout", {"text": "quiet"}) == CallCheck(
        "deny", "rules.txt:3", "no whispering", {"rule": 3}
    )


def test_an_allowing_hook_that_names_itself_is_the_source(tmp_path: Path) -> None:
    assert check(tmp_path, "shout", {"text": "hello"}) == CallCheck(
        "allow", "rules.txt:1", "greetings are fine"
    )


def test_a_question_for_a_person_is_ask(tmp_path: Path) -> None:
    assert check(tmp_path, "shout", {"text": "maybe"}) == CallCheck(
        "ask", "policy", "maybe needs a person"
    )


def test_no_policy_allows(tmp_path: Path) -> None:
    assert check(tmp_path, "shout", {"text": "x"}, policy=False) == CallCheck(
        "allow", None, "no policy blocked the call"
    )


def test_what_fails_before_the_hooks_is_denied_with_the_text_a_real_call_gets(
    tmp_path: Path,
) -> None:
    assert check(tmp_path, "nope", {}) == CallCheck("deny", None, "Tool nope not found")
    pm = make_plugin_manager(autoload=False)
    pm.register(Register(), name="register")
    session = build_session(pm, tmp_path, {})
    outcome = trio.run(
        run_tool_call,
        ToolCall(id="1", name="shout", arguments={}),
        AgentContext(tools=session.tools),
        session.loop_config(),
    )
    text = outcome.result.content[0].text
    assert text.startswith('Validation failed for tool "shout":\n')
    assert check(tmp_path, "shout", {}) == CallCheck("deny", None, text)


def test_nothing_runs_and_nothing_is_audited(tmp_path: Path) -> None:
    RAN.clear()
    for text in ("quiet", "hello", "maybe", "x"):
        check(tmp_path, "shout", {"text": text})
    assert RAN == []
    audit = tmp_path / "audit.jsonl"
    assert not audit.exists() or audit.read_text() == ""


def test_json_form() -> None:
    assert json.dumps(CallCheck("deny", "s", "r", {"a": 1}).to_json_dict()) == (
        '{"decision": "deny", "source": "s", "reason": "r", "detail": {"a": 1}}'
    )
