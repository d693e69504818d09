"""``pi_core._wire.session_files``: Pi session files (v1 flat, v3 tree) and message JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_core._wire.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from pi_core._wire.session_files import SessionFileError, parse_session_text, read_session_file

SESSIONS = Path("/work/shared/sessions")
SESSION_FILES = sorted(SESSIONS.glob("*.jsonl"))

# From the sessions README: tool calls in each file.
TOOL_CALLS = {
    "pi-mono_before-compaction_2025-12-08.jsonl": 454,
    "pi-mono_compact_2025-12-24.jsonl": 432,
    "pi-mono_session_2025-12-17.jsonl": 189,
    "pi-mono_large-session_2025-11-20.jsonl": 391,
    "kimchi-dev_user-agent_2026-04-27.jsonl": 60,
}


def lines(*objects: Any) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def error_of(text: str) -> str:
    with pytest.raises(SessionFileError) as info:
        parse_session_text(text, "f.jsonl")
    return str(info.value)


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda p: p.name)
def test_every_message_line_round_trips(path: Path) -> None:
    """Every message entry parses and serialises back to the same JSON object."""
    session = read_session_file(path)
    originals = [entry.raw["message"] for entry in session.entries if entry.type == "message"]
    assert len(originals) > 100
    from pydantic import TypeAdapter

    from pi_core._wire.messages import AgentMessage

    adapter: TypeAdapter[Any] = TypeAdapter(AgentMessage)
    for original in originals:
        model = adapter.validate_python(original)
        assert model.to_json_dict(exclude_unset=True) == original


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda p: p.name)
def test_real_session_tool_call_counts(path: Path) -> None:
    session = read_session_file(path)
    assert session.format == "session"
    assert sum(len(m.tool_calls) for m in session.assistant_messages) == TOOL_CALLS[path.name]


def test_v1_file_is_flat_and_keeps_every_message() -> None:
    session = read_session_file(SESSIONS / "pi-mono_session_2025-12-17.jsonl")
    assert (session.version, len(session.entries), len(session.messages)) == (1, 463, 454)
    assert (
        session.header is not None
        and session.header["id"] == "5fd1e58c-9635-410e-a644-133a96057c90"
    )
    kinds = {e.type for e in session.entries}
    assert kinds == {"message", "thinking_level_change", "compaction"}
    assert isinstance(session.messages[0], UserMessage)
    assert isinstance(session.messages[1], AssistantMessage)
    assert session.messages[1].tool_calls[0] == ToolCall(
        id="toolu_01Eiija7gxqTyYUmbwqxVfUJ",
        name="read",
        arguments={
            "path": "/opt/homebrew/lib/node_modules/@mariozechner/pi-coding-agent/README.md"
        },
    )
    assert isinstance(session.messages[2], ToolResultMessage)


def test_v3_file_follows_its_tree() -> None:
    session = read_session_file(SESSIONS / "kimchi-dev_user-agent_2026-04-27.jsonl")
    assert (session.version, len(session.entries), len(session.messages)) == (3, 147, 122)
    roles = [m.role for m in session.messages]
    assert (roles.count("user"), roles.count("assistant"), roles.count("toolResult")) == (6, 56, 60)


HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/w"}


def entry(id_: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": id_, "parentId": parent, "timestamp": "t", "message": message}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def test_active_branch_ends_at_the_last_entry() -> None:
    text = lines(
        HEADER,
        entry("1", None, user("root")),
        entry("2", "1", user("abandoned")),
        entry("3", "2", user("abandoned child")),
        {"type": "branch_summary", "id": "4", "parentId": "1", "timestamp": "t", "summary": "s"},
        entry("5", "4", user("current")),
    )
    session = parse_session_text(text, "f.jsonl")
    assert [m.content for m in session.messages] == ["root", "current"]
    assert [e.id for e in session.entries] == ["1", "2", "3", "4", "5"]


def test_entries_with_ids_make_a_tree_even_without_version() -> None:
    header = {"type": "session", "id": "s", "timestamp": "t", "cwd": "/w"}
    text = lines(header, entry("1", None, user("a")), entry("2", None, user("b")))
    assert [m.content for m in parse_session_text(text).messages] == ["b"]


def test_message_jsonl() -> None:
    text = (
        lines(
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}],
            },
            {"role": "user", "content": "hi", "timestamp": 3},
        )
        + "\n   \n"
    )
    session = parse_session_text(text)
    assert (session.format, session.version, session.header, session.entries) == (
        "messages",
        None,
        None,
        [],
    )
    assert [m.role for m in session.messages] == ["assistant", "user"]
    assert session.assistant_messages[0].tool_calls[0].name == "ls"
    assert "stop_reason" not in session.assistant_messages[0].model_fields_set


def test_empty_text() -> None:
    session = parse_session_text("\n\n")
    assert (session.format, session.messages) == ("messages", [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"role":"user","content":"a"}\n{nope\n',
            "f.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        ),
        ("[1]\n", "f.jsonl:1: expected a JSON object"),
        (
            '{"x":1}\n',
            'f.jsonl:1: expected a message (an object with "role") or a Pi session '
            'entry (an object with "type")',
        ),
        (
            '{"role":"user","content":"a"}\n{"x":1}\n',
            'f.jsonl:2: expected a message (an object with "role")',
        ),
        (
            '{"role":"assistant","content":"not a list"}\n',
            "f.jsonl:1: invalid assistant message: content: Input should be a valid list",
        ),
        (
            '{"role":"toolResult","toolName":"x","content":[]}\n',
            "f.jsonl:1: invalid toolResult message: toolCallId: Field required",
        ),
        (
            lines(HEADER, {"role": "user", "content": "a"}),
            'f.jsonl:2: expected a session entry (an object with "type")',
        ),
        (lines(HEADER, HEADER), "f.jsonl:2: a second session header"),
        (
            lines({**HEADER, "version": 99}, entry("1", None, user("a"))),
            "f.jsonl:1: session version 99 is not supported (pi reads versions 1 to 3)",
        ),
        (
            "\n" + lines({**HEADER, "version": 0}),
            "f.jsonl:2: session version 0 is not supported (pi reads versions 1 to 3)",
        ),
        (
            lines({**HEADER, "version": "3"}),
            "f.jsonl:1: session version must be an integer",
        ),
        (
            lines(HEADER, entry("1", "0", user("a"))),
            "f.jsonl:2: parentId '0' names no entry of the file",
        ),
        (
            lines(HEADER, entry("1", None, user("a")), entry("1", None, user("b"))),
            "f.jsonl:3: duplicate id '1' (first on line 2)",
        ),
        (
            lines(HEADER, entry("1", "2", user("a")), entry("2", "1", user("b"))),
            "f.jsonl:3: parentId cycle at '2'",
        ),
        (
            lines(
                HEADER,
                {"type": "message", "id": "1", "parentId": None, "message": {"content": "x"}},
            ),
            'f.jsonl:2: expected a message (an object with "role")',
        ),
    ],
)
def test_errors_name_file_and_line(text: str, message: str) -> None:
    assert error_of(text) == message


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError) as info:
        read_session_file(tmp_path / "absent.jsonl")
    assert str(info.value) == f"cannot read {tmp_path}/absent.jsonl: No such file or directory"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role":"user","content":"a"}\n\xff\n')
    with pytest.raises(SessionFileError) as info:
        read_session_file(bad)
    assert str(info.value) == f"{bad}:2: not valid UTF-8"
