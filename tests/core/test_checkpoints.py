"""Checkpoints and rewind (issue 26): every change a session makes to its workspace, through
write, edit, bash and codemode's nested calls, can be taken back exactly, to any call.

The sessions run through the real ``pi`` (in this process, or as a process that is killed), with
the built-in tools; ``checkpoint_probe`` records the tree before every call, and each rewind is
compared with it entry by entry: kind, permission bits, content hash or symlink target.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import checkpoint_probe
import pytest
import trio
from checkpoint_probe import call, message, pi, replay, tree_of

import pi_core
from pi_core import (
    RewindRefused,
    build_session,
    checkpoint_dir,
    hookimpl,
    make_plugin_manager,
)
from pi_core._checkpoints.store import store_path
from pi_core.providers import ScriptedProvider

PI = Path(sys.executable).parent / "pi"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    checkpoint_probe.SNAPSHOTS.clear()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    (root / "old.txt").write_text("old\n")
    os.chmod(root / "old.txt", 0o640)
    return root


SESSION = [
    message(call("c1", "write", path="a.txt", content="alpha\n")),
    message(call("c2", "edit", path="a.txt", edits=[{"oldText": "alpha", "newText": "beta"}])),
    message(
        call(
            "c3",
            "bash",
            command=(
                "mkdir -p d/e empty && printf x > d/e/x.txt && chmod 750 d && ln -s a.txt link"
                " && ln -s /etc/passwd outside && mv a.txt b.txt && chmod 600 b.txt"
                " && printf run > run.sh && chmod 755 run.sh && : > zero && rm old.txt"
            ),
        )
    ),
    message(call("c4", "write", path="link", content="through the link\n")),
    message(
        call(
            "c5",
            "bash",
            command="rm -r d/e && rmdir empty && rm outside && chmod 644 run.sh && ln -sfn b.txt link",
        )
    ),
    message(
        call(
            "c6",
            "codemode",
            code=(
                "await tools.write({path: 'c.txt', content: 'C'});\n"
                "await tools.bash({command: 'mv c.txt d/c.txt && mkdir new && chmod 700 new'});\n"
                "await tools.edit({path: 'd/c.txt', edits: [{oldText: 'C', newText: 'CC'}]});\n"
                "return 'ok'"
            ),
        )
    ),
    message(call("c7", "bash", command="rm -f b.txt && mkdir b.txt && printf in > b.txt/in")),
]


def checkpoints_json(ws: Path, *extra: str) -> dict[str, Any]:
    status, out, err = pi("checkpoints", "--cwd", str(ws), "--json", *extra)
    assert status == 0, err
    return json.loads(out)


def changes_of(listing: dict[str, Any]) -> dict[str, list[Any]]:
    return {
        cp["toolCallId"]: [(c["change"], c["path"], c.get("previousPath")) for c in cp["changes"]]
        for cp in listing["checkpoints"]
    }


def test_rewind_to_every_call_gives_back_the_tree_byte_for_byte_and_mode_for_mode(
    tmp_path: Path, ws: Path
) -> None:
    results = replay(tmp_path, ws, SESSION, "--codemode")
    assert [r["isError"] for r in results] == [False] * 7, results
    final = tree_of(str(ws))
    listing = checkpoints_json(ws)
    assert listing["session"]["host"] == "replay"
    assert changes_of(listing) == {
        "c1": [("created", "a.txt", None)],
        "c2": [("modified", "a.txt", None)],
        "c3": [
            ("renamed", "b.txt", "a.txt"),
            ("created", "d/", None),
            ("created", "d/e/", None),
            ("created", "d/e/x.txt", None),
            ("created", "empty/", None),
            ("created", "link", None),
            ("deleted", "old.txt", None),
            ("created", "outside", None),
            ("created", "run.sh", None),
            ("created", "zero", None),
        ],
        "c4": [("created", "a.txt", None)],
        "c5": [
            ("deleted", "d/e/", None),
            ("deleted", "d/e/x.txt", None),
            ("deleted", "empty/", None),
            ("modified", "link", None),
            ("deleted", "outside", None),
            ("modified", "run.sh", None),
        ],
        "c6": [],
        "c6/1": [("created", "c.txt", None)],
        "c6/2": [("renamed", "d/c.txt", "c.txt"), ("created", "new/", None)],
        "c6/3": [("modified", "d/c.txt", None)],
        "c7": [("modified", "b.txt/", None), ("created", "b.txt/in", None)],
    }
    assert [
        (c["toolCallId"], c["tool"], c["turn"], c.get("parentToolCallId"))
        for c in listing["checkpoints"]
    ] == [
        ("c1", "write", 1, None),
        ("c2", "edit", 2, None),
        ("c3", "bash", 3, None),
        ("c4", "write", 4, None),
        ("c5", "bash", 5, None),
        ("c6", "codemode", 6, None),
        ("c6/1", "write", 6, "c6"),
        ("c6/2", "bash", 6, "c6"),
        ("c6/3", "edit", 6, "c6"),
        ("c7", "bash", 7, None),
    ]

    order = ["c7", "c6/3", "c6/2", "c6/1", "c6", "c5", "c4", "c3", "c2", "c1", "c5", "c6/2", "c2"]
    for target in order:
        status, out, err = pi("rewind", "--to", target, "--cwd", str(ws))
        assert status == 0, (target, out, err)
        assert tree_of(str(ws)) == checkpoint_probe.SNAPSHOTS[target], target
    before_last = checkpoint_probe.SNAPSHOTS["c6/2"]
    status, out, err = pi("rewind", "--undo", "--cwd", str(ws))
    assert status == 0, err
    assert tree_of(str(ws)) == before_last
    # rewinding to the start of turn 1 is the tree before the session; there is no turn 9 (turn 8
    # is the model's final answer)
    assert pi("rewind", "--turn", "1", "--cwd", str(ws))[0] == 0
    assert tree_of(str(ws)) == checkpoint_probe.SNAPSHOTS["c1"]
    status, _, err = pi("rewind", "--turn", "9", "--cwd", str(ws))
    assert status == 2
    assert err.startswith("pi: error: session ") and err.endswith(" has no turn 9\n")
    # and forward again: to the end state, by undoing the rewind to turn 1
    assert pi("rewind", "--undo", "--cwd", str(ws))[0] == 0
    assert tree_of(str(ws)) == before_last
    assert final != before_last


def test_a_parallel_batch_of_edits_of_one_file_rewinds_to_each_edit(
    tmp_path: Path, ws: Path
) -> None:
    lines = [f"line {i:02d}: original\n" for i in range(20)]
    (ws / "edits.txt").write_text("".join(lines))
    batch = [
        call(
            f"e{i}",
            "edit",
            path="edits.txt",
            edits=[{"oldText": f"line {i:02d}: original", "newText": f"line {i:02d}: edited"}],
        )
        for i in range(20)
    ]
    results = replay(tmp_path, ws, [message(*batch)])
    assert [r["isError"] for r in results] == [False] * 20
    for k in (19, 7, 0, 12):
        assert pi("rewind", "--to", f"e{k}", "--cwd", str(ws))[0] == 0
        expected = [
            line.replace("original", "edited") if i < k else line for i, line in enumerate(lines)
        ]
        assert (ws / "edits.txt").read_text() == "".join(expected), k


def test_files_changed_outside_pi_are_conflicts_left_alone_unless_forced(
    tmp_path: Path, ws: Path
) -> None:
    replay(
        tmp_path,
        ws,
        [
            message(call("c1", "write", path="a.txt", content="one\n")),
            message(call("c2", "bash", command="printf two > b.txt; printf changed > keep.txt")),
        ],
    )
    (ws / "a.txt").write_text("edited by a person\n")
    status, out, err = pi("rewind", "--to", "c1", "--cwd", str(ws))
    assert status == 1, err
    session = checkpoints_json(ws)["session"]["id"]
    assert out == (
        f"rewound session {session[:12]} to before call c1: 2 paths\n"
        "  -b.txt\n"
        "  ~keep.txt\n"
        "conflicts (changed outside pi since the checkpoint; left alone, --force overwrites):\n"
        "  ! a.txt: changed outside pi since it was recorded\n"
        "recorded as rewind-1: pi rewind --undo takes it back\n"
    )
    assert (ws / "a.txt").read_text() == "edited by a person\n"
    assert (ws / "keep.txt").read_text() == "untouched\n"
    assert not (ws / "b.txt").exists()

    status, out, _ = pi("rewind", "--to", "c1", "--force", "--cwd", str(ws), "--json")
    assert status == 0
    assert json.loads(out)["changes"] == [{"path": "a.txt", "change": "deleted", "kind": "file"}]
    assert not (ws / "a.txt").exists()
    # the forced rewind kept what it overwrote: undoing it brings the person's edit back
    assert pi("rewind", "--undo", "--cwd", str(ws))[0] == 0
    assert (ws / "a.txt").read_text() == "edited by a person\n"


def test_dry_run_and_files_limit_what_a_rewind_touches(tmp_path: Path, ws: Path) -> None:
    replay(
        tmp_path,
        ws,
        [
            message(
                call(
                    "c1",
                    "bash",
                    command="printf 1 > one; printf 2 > two; mkdir sub; printf 3 > sub/three",
                )
            )
        ],
    )
    before = tree_of(str(ws))
    status, out, _ = pi("rewind", "--to", "c1", "--dry-run", "--cwd", str(ws), "--json")
    assert status == 0
    result = json.loads(out)
    assert result["dryRun"] is True and result["rewind"] is None
    assert [c["path"] for c in result["changes"]] == ["one", "sub/", "sub/three", "two"]
    assert tree_of(str(ws)) == before
    # from a folder below the workspace: --files is relative to it, as in a shell
    status, out, _ = pi("rewind", "--to", "c1", "--files", "three", cwd=ws / "sub")
    assert status == 0, out
    assert out.splitlines()[1:] == [
        "  -sub/three",
        "recorded as rewind-1: pi rewind --undo takes it back",
    ]
    assert (ws / "sub").is_dir() and (ws / "one").exists() and (ws / "two").exists()


def test_a_file_over_max_file_bytes_is_recorded_by_hash_and_cannot_be_restored(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "pi.toml").write_text("[checkpoints]\nmax_file_bytes = 10\n")
    (ws / "big.bin").write_bytes(b"0123456789abcdef")
    (ws / "small").write_bytes(b"tiny")
    script = tmp_path / "s.jsonl"
    script.write_text(
        json.dumps(
            message(call("c1", "bash", command="printf changed > big.bin; printf more > small"))
        )
        + "\n"
    )
    status, _, err = pi("replay", str(script), "--cwd", str(ws), "--json", cwd=ws)
    assert status == 0, err
    listing = json.loads(pi("checkpoints", "--json", cwd=ws)[1])
    assert listing["checkpoints"][0]["changes"] == [
        {"path": "big.bin", "change": "modified", "kind": "file", "restorable": False},
        {"path": "small", "change": "modified", "kind": "file"},
    ]
    status, out, _ = pi("rewind", "--to", "c1", cwd=ws)
    assert status == 1
    assert (
        "  ! big.bin: larger than max_file_bytes when it was recorded: content not stored\n" in out
    )
    assert (ws / "small").read_bytes() == b"tiny"
    assert (ws / "big.bin").read_bytes() == b"changed"


def test_checkpoints_listing_text(tmp_path: Path, ws: Path) -> None:
    replay(
        tmp_path,
        ws,
        [
            message(call("c1", "write", path="a.txt", content="alpha\n")),
            message(call("c2", "read", path="a.txt")),
            message(call("c3", "bash", command="rm a.txt; mkdir d")),
        ],
    )
    status, out, _ = pi("checkpoints", "--cwd", str(ws))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("session ") and "(pi replay, started " in lines[0]
    assert lines[1:] == [
        "turn  call  tool   bytes  changes",
        "1     c1    write  6 B    +a.txt",
        "3     c3    bash   14 B   -a.txt +d/",
    ]
    sessions = json.loads(pi("checkpoints", "--sessions", "--json", "--cwd", str(ws))[1])
    assert [(s["host"], s["calls"], s["running"]) for s in sessions] == [("replay", 2, False)]


def test_errors_are_one_line_and_exit_2(tmp_path: Path, ws: Path) -> None:
    assert pi("checkpoints", "--cwd", str(ws)) == (
        2,
        "",
        f"pi: error: no checkpoints recorded for {ws}\n",
    )
    replay(tmp_path, ws, [message(call("c1", "write", path="a.txt", content="a"))])
    status, _, err = pi("rewind", "--to", "nope", "--cwd", str(ws))
    assert status == 2
    assert "no checkpoint for call 'nope' in session " in err and err.count("\n") == 1
    assert pi("rewind", "--cwd", str(ws))[2] == (
        "pi: error: pi rewind needs exactly one of --to CALL_ID, --turn N and --undo\n"
    )
    assert pi("checkpoints", "ffff", "--cwd", str(ws))[2] == (
        "pi: error: no session 'ffff' in this workspace (see pi checkpoints --sessions)\n"
    )
    assert pi("rewind", "--undo", "--cwd", str(ws))[2] == (
        "pi: error: no rewind to undo in this workspace\n"
    )
    # a turn past SQLite's 64-bit integers is a turn the session does not have, not a traceback
    status, _, err = pi("rewind", "--turn", str(2**64), "--cwd", str(ws))
    assert status == 2
    assert err.startswith("pi: error: session ") and err.endswith(f" has no turn {2**64}\n")


def test_checkpoints_enabled_false_records_nothing(tmp_path: Path, ws: Path) -> None:
    (ws / "pi.toml").write_text("[checkpoints]\nenabled = false\n")
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps(message(call("c1", "write", path="a.txt", content="a"))) + "\n")
    assert pi("replay", str(script), "--json", cwd=ws)[0] == 0
    assert not os.path.exists(store_path(checkpoint_dir(), str(ws)))
    (ws / "pi.toml").write_text("[checkpoints]\nmax_bytes = -1\n")
    status, _, err = pi("replay", str(script), "--json", cwd=ws)
    assert (status, err) == (
        2,
        f"pi: error: {ws / 'pi.toml'}: checkpoints.max_bytes: Input should be greater than or"
        " equal to 0 (got -1)\n",
    )


def test_a_crash_during_bash_leaves_the_checkpoint_usable(tmp_path: Path, ws: Path) -> None:
    """``kill -9`` of the pi process while its bash command runs: the checkpoint recorded
    before the command is on disk, and the next reader recovers the call's changes."""
    before = checkpoint_probe.killed_during_bash(
        ws, "printf new > keep.txt; rm old.txt; mkdir made", tmp_path
    )
    listing = checkpoints_json(ws)
    (checkpoint,) = listing["checkpoints"]
    assert (checkpoint["toolCallId"], checkpoint["state"]) == ("call-1", "interrupted")
    assert [(c["change"], c["path"]) for c in checkpoint["changes"]] == [
        ("modified", "keep.txt"),
        ("created", "made/"),
        ("deleted", "old.txt"),
    ]
    assert tree_of(str(ws)) == before
    assert pi("rewind", "--to", "call-1", "--cwd", str(ws))[0] == 0
    assert (ws / "keep.txt").read_text() == "untouched\n"
    assert (ws / "old.txt").read_text() == "old\n"
    assert oct((ws / "old.txt").stat().st_mode & 0o777) == "0o640"
    assert not (ws / "made").exists()


async def test_session_checkpoints_python_api(tmp_path: Path, ws: Path) -> None:
    pm = make_plugin_manager()
    session = build_session(pm, ws, {}, host="agent", checkpoints=True)
    assert session.checkpoints is not None
    provider = ScriptedProvider(
        [
            pi_core.AssistantMessage(
                content=[
                    pi_core.ToolCall(
                        id="t1", name="write", arguments={"path": "n.txt", "content": "n"}
                    )
                ],
                stop_reason="toolUse",
            )
        ]
    )
    async with session.agent(provider) as agent:
        await agent.prompt("go")
        (checkpoint,) = await session.checkpoints.list()
        assert (checkpoint.call_id, [c.label() for c in checkpoint.changes]) == ("t1", ["+n.txt"])
        result = await session.checkpoints.rewind(to="t1")
        assert [c.label() for c in result.changes] == ["-n.txt"]
        assert not (ws / "n.txt").exists()
        result = await session.checkpoints.rewind(undo=True)
        assert (ws / "n.txt").read_text() == "n"
    assert build_session(pm, ws, {}, host="agent").checkpoints is None
    # after the session: the module-level functions read the same record
    info, listing = pi_core.list_checkpoints(ws)
    assert info.id == session.session_context.session_id
    assert [c.call_id for c in listing] == ["t1", "rewind-1", "rewind-2"]

    async def refuse(context: pi_core.RewindContext) -> RewindRefused:
        return RewindRefused(f"not {context.target}", "tester")

    with pytest.raises(RewindRefused, match="not before call t1"):
        await pi_core.rewind(ws, to="t1", before_rewind=refuse)
    assert (ws / "n.txt").exists()
    assert trio is not None and hookimpl is not None


def test_the_python_api_snippet_of_the_how_to_runs(tmp_path: Path) -> None:
    snippet = Path(__file__).parents[2] / "docs" / "snippets" / "undo_api.py"
    done = subprocess.run(
        [sys.executable, str(snippet), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "c1 ['+notes.md']\n"
        "rewound: ['-notes.md']\n"
        "agent ['c1', 'rewind-1', 'rewind-2']\n"
        "would: ['-notes.md']\n"
    )
    assert (tmp_path / "notes.md").read_text() == "hi\n"


def test_the_next_session_starts_from_the_stat_cache_of_the_last(tmp_path: Path, ws: Path) -> None:
    """The first shell call of a session stores the workspace's contents; the next session's
    first shell call finds them by stat and stores only what changed in between."""
    for i in range(20):
        (ws / f"f{i}.txt").write_text(f"file {i}\n")
    assert pi("call", "bash", '{"command": "true"}', "--cwd", str(ws))[0] == 0
    first = checkpoints_json(ws)["checkpoints"][0]["bytes"]
    (ws / "f3.txt").write_text("changed between the sessions\n")
    assert pi("call", "bash", '{"command": "true"}', "--cwd", str(ws))[0] == 0
    second = checkpoints_json(ws)["checkpoints"][0]
    assert (first, second["bytes"], second["changes"]) == (
        sum(len(f"file {i}\n") for i in range(20)) + len("untouched\n") + len("old\n"),
        len("changed between the sessions\n"),
        [],
    )
    sessions = checkpoints_json(ws, "--sessions")
    assert [s["calls"] for s in sessions] == [1, 1]
    status, out, _ = pi("checkpoints", "prune", "--max-bytes", "0", "--json", "--cwd", str(ws))
    pruned = json.loads(out)
    assert (status, len(pruned["removed"])) == (0, 2)
    assert pruned["bytes"] > 0  # the stat cache keeps the workspace's current contents
    assert checkpoints_json(ws, "--sessions") == []
    assert pi("checkpoints", "prune", "--all", "--json", "--cwd", str(ws))[1] == (
        '{\n  "removed": [],\n  "bytes": 0\n}\n'
    )


def test_a_name_that_is_not_utf8_is_recorded_and_restored(tmp_path: Path, ws: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    (ws / name).write_text("before\n")
    replay(
        tmp_path, ws, [message(call("c1", "bash", command="printf after > caf*.txt; rm keep.txt"))]
    )
    listing = checkpoints_json(ws)
    assert [c["path"] for c in listing["checkpoints"][0]["changes"]] == [name, "keep.txt"]
    assert pi("rewind", "--to", "c1", "--cwd", str(ws))[0] == 0
    assert (ws / name).read_text() == "before\n"
    assert (ws / "keep.txt").read_text() == "untouched\n"


def test_a_workspace_over_max_files_records_no_shell_call_and_a_rewind_says_so(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "pi.toml").write_text("[checkpoints]\nmax_files = 3\n")
    script = tmp_path / "s.jsonl"
    calls = [
        message(call("c1", "write", path="a.txt", content="a")),
        message(call("c2", "bash", command="printf b > b.txt")),
    ]
    script.write_text("".join(json.dumps(m) + "\n" for m in calls))
    assert pi("replay", str(script), "--json", cwd=ws)[0] == 0
    status, out, _ = pi("checkpoints", cwd=ws)
    assert out.splitlines()[2:] == [
        "1     c1    write  1 B    +a.txt",
        "2     c2    bash   0 B    (no change) [unrecorded]",
    ]
    status, out, _ = pi("rewind", "--to", "c1", cwd=ws)
    assert status == 1
    assert out.splitlines() == [
        f"rewound session {checkpoints_json(ws)['session']['id'][:12]} to before call c1: 1 path",
        "  -a.txt",
        "not restored:",
        "  ! (call c2): its changes were not recorded (the workspace was larger than max_files or"
        " max_bytes)",
        "recorded as rewind-1: pi rewind --undo takes it back",
    ]
    assert (ws / "b.txt").exists()


# -- pi call: one session per call, its id in PI_SESSION_ID ----------------------------------


def test_each_pi_call_is_a_session_whose_id_the_command_sees(ws: Path) -> None:
    for content in ("one\n", "two\n"):
        arguments = json.dumps({"path": "a.txt", "content": content})
        status, out, err = pi("call", "write", arguments, cwd=ws)
        assert (status, out, err) == (0, "Successfully wrote to a.txt\n", "")
    status, out, err = pi("call", "bash", '{"command": "printf %s \\"$PI_SESSION_ID\\""}', cwd=ws)
    assert (status, err) == (0, "")
    sessions = json.loads(pi("checkpoints", "--sessions", "--json", "--cwd", str(ws))[1])
    assert [(s["host"], s["calls"]) for s in sessions] == [("call", 1)] * 3
    assert out == sessions[0]["id"] + "\n"
    assert len(sessions[0]["id"]) == 32
    # the latest session is shown; an earlier one by its id
    latest = json.loads(pi("checkpoints", "--json", "--cwd", str(ws))[1])
    assert latest["session"]["id"] == sessions[0]["id"]
    first = json.loads(pi("checkpoints", sessions[2]["id"], "--json", "--cwd", str(ws))[1])
    assert [(c["toolCallId"], c["tool"], c["changes"]) for c in first["checkpoints"]] == [
        ("call-1", "write", [{"path": "a.txt", "change": "created", "kind": "file"}])
    ]
    # undone newest first: each session's call, back to before the first one
    for session in sessions:
        status, _, err = pi("rewind", session["id"], "--to", "call-1", "--cwd", str(ws))
        assert (status, err) == (0, "")
    assert not (ws / "a.txt").exists()


def test_the_store_keeps_the_state_folder_private(tmp_path: Path) -> None:
    """Every folder the store creates is 0700: ``$XDG_STATE_HOME/pi`` also holds the tokens of
    ``pi mcp serve``, which refuses a folder others can read (it did after a first checkpoint)."""
    from pi_core._checkpoints.store import Store

    state = tmp_path / "state"
    store = Store(str(state / "pi" / "checkpoints" / "ws.sqlite"))
    store.db.close()
    for folder in (state, state / "pi", state / "pi" / "checkpoints"):
        assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
