"""``pi replay SESSION --verify`` (issue 5 item 4): every recorded call executed again and
compared with its recorded result, on a real workspace with the built-in tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Result, call, write_jsonl

from pi_core._cli.verify import normalise

REC = "/rec/ws"
BUILTINS = ("-p", "pi_builtin_tools.plugin")


def assistant(*calls: dict[str, Any], stop: str = "toolUse") -> dict[str, Any]:
    return {"role": "assistant", "content": list(calls), "stopReason": stop}


def result(call_id: str, name: str, text: str, *, error: bool = False, **extra: Any) -> dict:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": 0,
        **extra,
    }


MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "go"}], "timestamp": 0},
    assistant(call("c1", "read", path=f"{REC}/notes.txt"), call("c2", "ls", path=".")),
    result("c1", "read", "alpha\nbeta\n"),
    result("c2", "ls", "notes.txt"),
    assistant(call("c3", "grep", pattern="beta"), call("c4", "find", pattern="*.txt")),
    result("c3", "grep", "notes.txt:2: beta"),
    result("c4", "find", "notes.txt"),
    assistant(call("c5", "bash", command=f"echo hi; pwd; ls {REC}")),
    result("c5", "bash", f"hi\n{REC}\nnotes.txt\n"),
    assistant(
        call("c6", "edit", path="notes.txt", oldText="alpha", newText="gamma"),
    ),
    result("c6", "edit", f"Successfully replaced text in {REC}/notes.txt."),
    assistant(call("c7", "read", path="notes.txt")),
    result("c7", "read", "alpha\nbeta\n"),
    assistant(call("c8", "write", path="out.txt", content="x")),
    result("c8", "write", "Wrote 1 bytes"),
    assistant(call("c9", "read", path="missing.txt", offset=2)),
    result("c9", "read", "b"),
    assistant(call("c10", "set_phase", phase="plan")),
    result("c10", "set_phase", "ok"),
    assistant(call("c11", "edit", path="~/.pi/x.json", oldText="a", newText="b")),
    result("c11", "edit", "ok"),
    # a turn that ended in an error: Pi never ran its call, and neither does --verify
    {**assistant(call("c12", "write", path="never.txt", content="no")), "stopReason": "error"},
]


def v1_session(path: Path, messages: list[dict[str, Any]] = MESSAGES) -> Path:
    header = {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": REC}
    entries = [{"type": "message", "timestamp": "t", "message": m} for m in messages]
    return write_jsonl(path, [header, *entries])


@pytest.fixture
def workspace(plugin_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


EXPECTED_JSON = [
    {"toolCallId": "c1", "toolName": "read", "agree": True, "why": "same text"},
    {"toolCallId": "c2", "toolName": "ls", "agree": True, "why": "same text"},
    {"toolCallId": "c3", "toolName": "grep", "agree": True, "why": "same text"},
    {"toolCallId": "c4", "toolName": "find", "agree": True, "why": "same text"},
    {"toolCallId": "c6", "toolName": "edit", "agree": True, "why": "same outcome"},
    {"toolCallId": "c7", "toolName": "read", "agree": False, "why": "text differs"},
    {"toolCallId": "c8", "toolName": "write", "agree": True, "why": "same outcome"},
    {
        "toolCallId": "c9",
        "toolName": "read",
        "agree": False,
        "why": "isError differs (recorded false, replayed true)",
    },
    {
        "toolCallId": "c10",
        "toolName": "set_phase",
        "agree": False,
        "why": "isError differs (recorded false, replayed true)",
    },
    {
        "toolCallId": "c11",
        "toolName": "edit",
        "agree": False,
        "why": "not run: edit outside the workspace (~/.pi/x.json)",
    },
]


def test_json_lines_with_seeded_reads_and_recorded_bash(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl")
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace),
           "--seed-from-reads", "--bash", "recorded")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    lines = r.json_lines()
    assert lines[:-1] == EXPECTED_JSON
    assert lines[-1] == {
        "summary": {
            "read": {"agree": 1, "total": 3},
            "ls": {"agree": 1, "total": 1},
            "grep": {"agree": 1, "total": 1},
            "find": {"agree": 1, "total": 1},
            "edit": {"agree": 1, "total": 2},
            "write": {"agree": 1, "total": 1},
            "set_phase": {"agree": 0, "total": 1},
        }
    }
    # the seeded file, then the edit ran on it; the write ran; the errored turn did not
    assert (workspace / "notes.txt").read_text() == "gamma\nbeta\n"
    assert (workspace / "out.txt").read_text() == "x"
    assert not (workspace / "never.txt").exists()
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt", "out.txt"]


def test_bash_runs_by_default_and_the_recorded_cwd_is_normalised(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl", MESSAGES[:9])
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace))
    assert r.json_lines()[4] == {
        "toolCallId": "c5",
        "toolName": "bash",
        "agree": True,
        "why": "same text",
    }
    assert r.json_lines()[-1]["summary"]["bash"] == {"agree": 1, "total": 1}


def test_text_output_prints_each_disagreement_with_a_diff_then_the_table(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl")
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--cwd", str(workspace),
           "--seed-from-reads", "--bash", "recorded")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    assert r.out == (
        "c7 read: text differs\n"
        "  --- recorded\n"
        "  +++ replayed\n"
        "  @@ -1,2 +1,2 @@\n"
        "  -alpha\n"
        "  +gamma\n"
        "   beta\n"
        "\n"
        "c9 read: isError differs (recorded false, replayed true)\n"
        "  recorded: b\n"
        "  replayed: ENOENT: no such file or directory, access '<cwd>/missing.txt'\n"
        "\n"
        "c10 set_phase: isError differs (recorded false, replayed true)\n"
        "  recorded: ok\n"
        "  replayed: Tool set_phase not found\n"
        "\n"
        "c11 edit: not run: edit outside the workspace (~/.pi/x.json)\n"
        "\n"
        "tool       agree  total\n"
        "read           1      3\n"
        "ls             1      1\n"
        "grep           1      1\n"
        "find           1      1\n"
        "edit           1      2\n"
        "write          1      1\n"
        "set_phase      0      1\n"
        "all            6     10\n"
    )


def test_a_session_with_nothing_to_verify_says_so_on_stderr(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    """A recording without results (a hand-written replay file) verifies nothing: the table
    says 0 of 0, and one line on stderr says why; the exit status stays 0."""
    calls_only = [assistant(call("c1", "read", path="notes.txt"))]
    session = v1_session(tmp_path / "s.jsonl", calls_only)
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--cwd", str(workspace))
    assert (r.status, r.out) == (0, "tool  agree  total\nall       0      0\n")
    assert r.err == (
        "pi: note: nothing was verified: the session has no tool call with a recorded result\n"
    )
    bash_only = [
        assistant(call("c1", "bash", command="echo hi")),
        result("c1", "bash", "hi\n"),
    ]
    session = v1_session(tmp_path / "b.jsonl", bash_only)
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace),
           "--bash", "recorded")  # fmt: skip
    assert (r.status, r.out) == (0, '{"summary":{}}\n')
    assert r.err == (
        "pi: note: nothing was verified: its calls with a recorded result are all commands, "
        "answered from the recording (--bash recorded)\n"
    )


def test_v3_tree_follows_the_active_branch(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("A")
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": REC},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "t",
         "message": {"role": "user", "content": "go", "timestamp": 0}},
        # an abandoned branch: its call is not verified
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "t",
         "message": assistant(call("old", "read", path="a.txt"))},
        {"type": "message", "id": "r1", "parentId": "a1", "timestamp": "t",
         "message": result("old", "read", "stale")},
        {"type": "message", "id": "a2", "parentId": "u1", "timestamp": "t",
         "message": assistant(call("new", "read", path=f"{REC}/a.txt"))},
        {"type": "message", "id": "r2", "parentId": "a2", "timestamp": "t",
         "message": result("new", "read", "A")},
    ]  # fmt: skip
    session = write_jsonl(tmp_path / "tree.jsonl", entries)
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace))
    assert r.json_lines() == [
        {"toolCallId": "new", "toolName": "read", "agree": True, "why": "same text"},
        {"summary": {"read": {"agree": 1, "total": 1}}},
    ]


def test_map_cwd_and_what_seeding_leaves_alone(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    messages = [
        assistant(
            call("r1", "read", path="/elsewhere/proj/src/a.txt"),
            call("r2", "read", path="/elsewhere/proj/part.txt", limit=1),
            call("r3", "read", path="/elsewhere/proj/cut.txt"),
            call("r4", "read", path="/outside/x.txt"),
        ),
        result("r1", "read", "one\n"),
        result("r2", "read", "p\n\n[1 more lines in file. Use offset=2 to continue.]"),
        result("r3", "read", "c\n\n[9 more lines in file. Use offset=2 to continue.]"),
        result("r4", "read", "x"),
    ]
    session = v1_session(tmp_path / "s.jsonl", messages)
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace),
           "--seed-from-reads", "--map-cwd", f"/elsewhere/proj={workspace}")  # fmt: skip
    assert [line.get("agree") for line in r.json_lines()[:-1]] == [True, False, False, False]
    assert (workspace / "src" / "a.txt").read_text() == "one\n"
    assert sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*")) == [
        "src",
        "src/a.txt",
    ]
    assert not Path("/outside/x.txt").exists()


def test_bad_map_cwd_is_a_usage_error(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl", MESSAGES[:3])
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--map-cwd", "nothing")
    assert (r.status, r.out, r.err) == (
        2,
        "",
        "pi: error: --map-cwd must be OLD=NEW (got 'nothing')\n",
    )


def test_normalise_writes_the_workspace_and_temporary_paths_the_same_way() -> None:
    text = (
        "/work/ws/a.ts and /rec/ws/b.ts; full output: /tmp/pi-bash-1a2b.log]\n"
        "/var/folders/xy/abc123/T/pi-bash-9.log, /private/var/folders/xy/abc/T/f\n"
        "/tmpfile stays, x/tmp/y stays, find: ‘/tmp/skills’: No such file"
    )
    assert normalise(text, ["/work/ws", "/rec/ws"]) == (
        "<cwd>/a.ts and <cwd>/b.ts; full output: <tmp>]\n"
        "<tmp>, <tmp>\n"
        "/tmpfile stays, x/tmp/y stays, find: ‘<tmp>’: No such file"
    )


def test_json_summary_is_the_last_line_even_for_an_empty_session(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl", [])
    r = pi(*BUILTINS, "replay", str(session), "--verify", "--json", "--cwd", str(workspace))
    assert r.out == '{"summary":{}}\n'


def test_verify_options_without_verify_are_a_usage_error(
    pi: Callable[..., Result], workspace: Path, tmp_path: Path
) -> None:
    session = v1_session(tmp_path / "s.jsonl", MESSAGES[:3])
    r = pi(*BUILTINS, "replay", str(session), "--bash", "recorded")
    assert (r.status, r.out, r.err) == (
        2,
        "",
        "pi: error: --seed-from-reads, --bash and --map-cwd need --verify\n",
    )
