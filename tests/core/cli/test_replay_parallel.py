"""``pi replay --parallel N FILE...`` (issue 16, part 3): several recorded sessions, each in its
own session, N at a time; the same results as one ``pi replay FILE`` each, a summary table, a
progress bar on a terminal only, and its usage errors. (The same over the Ray backend, each
session on its own actor: ``tests/sandbox/test_ray_backend.py``.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import call, without_timestamps, write_jsonl
from pty_helpers import run_on_pty


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(calls), "stopReason": "toolUse"}


@pytest.fixture
def recordings(plugin_env: Path) -> list[Path]:
    """Three recorded sessions: slow echoes (so running them in parallel overlaps), an error."""
    files = []
    for index in range(3):
        files.append(
            write_jsonl(
                plugin_env / f"s{index}.jsonl",
                [
                    assistant(call("a", "echo", value=f"one-{index}", delay=0.3)),
                    assistant(call("b", "echo", value=f"two-{index}"), call("c", "nope")),
                ],
            )
        )
    return files


def normalised(out: str) -> list[Any]:
    lines = [without_timestamps(json.loads(line)) for line in out.splitlines()]
    for line in lines:
        line.pop("seconds", None)
    return lines


def test_parallel_results_equal_one_replay_per_file(pi, recordings: list[Path]) -> None:
    sequential = []
    for file in recordings:
        out = pi("-p", "cli_plugin", "replay", str(file), "--json")
        assert (out.status, out.err) == (0, "")
        sequential.append([without_timestamps(json.loads(x)) for x in out.out.splitlines()])
    out = pi("-p", "cli_plugin", "replay", "--parallel", "3", *map(str, recordings), "--json")
    assert (out.status, out.err) == (0, "")
    assert normalised(out.out) == [
        {"file": str(file), "status": "ok", "calls": 3, "errors": 1, "results": results}
        for file, results in zip(recordings, sequential, strict=True)
    ]
    assert [r["content"][0]["text"] for r in sequential[1]] == [
        "one-1",
        "two-1",
        "Tool nope not found",
    ]


def test_parallel_runs_sessions_at_the_same_time(pi, recordings: list[Path]) -> None:
    one = pi("-p", "cli_plugin", "replay", "--parallel", "1", *map(str, recordings), "--json")
    three = pi("-p", "cli_plugin", "replay", "--parallel", "3", *map(str, recordings), "--json")
    assert normalised(one.out) == normalised(three.out)
    starts = {}
    for name, out in (("one", one), ("three", three)):
        stamps = [
            min(r["timestamp"] for r in json.loads(line)["results"])
            for line in out.out.splitlines()
        ]
        starts[name] = max(stamps) - min(stamps)
    assert starts["three"] < 250 <= starts["one"]  # ms between the sessions' first results


def test_summary_table_without_a_terminal(pi, recordings: list[Path]) -> None:
    out = pi("-p", "cli_plugin", "replay", "--parallel", "2", *map(str, recordings))
    assert (out.status, out.err) == (0, "")
    text = re.sub(r"\d+\.\d+", "T", out.out)
    width = len(str(recordings[0]))
    assert text == (
        f"{'FILE'.ljust(width)}  CALLS  ERRORS  SECONDS  STATUS\n"
        + "".join(f"{file}      3       1     T  ok\n" for file in recordings)
        + "3 sessions, 9 tool calls in T s (T calls/s), 2 at a time\n"
    )


def test_progress_bar_and_table_on_a_terminal(plugin_env: Path, recordings: list[Path]) -> None:
    status, data = run_on_pty(
        ["-p", "cli_plugin", "replay", "--parallel", "2", *map(str, recordings)],
        plugin_env,
        env={"COLUMNS": "200", "TERM": "xterm"},
    )
    text = re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]", b"", data).decode()
    assert status == 0, text
    assert "3/3" in text  # the progress bar's count
    assert "pi replay --parallel" in text  # the table's title
    assert "3 sessions, 9 tool calls in " in text


def test_a_failing_session_is_reported_and_the_others_run(
    pi, recordings: list[Path], plugin_env: Path
) -> None:
    out = pi(
        "-p", "cli_plugin", "replay", "--parallel", "2", str(recordings[0]), "--json",
        "--exposure", "nosuchtool=direct",
    )  # fmt: skip
    lines = normalised(out.out)
    assert out.status == 1
    assert lines[0]["status"].startswith("failed: --exposure: unknown tool 'nosuchtool'")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--parallel", "0"], "argument --parallel: must be at least 1: '0'"),
        (["--parallel", "x"], "argument --parallel: not a whole number: 'x'"),
        (["--parallel", "2", "--verify"], "--verify and --events replay one FILE"),
        (["--parallel", "2", "missing.jsonl"], "missing.jsonl"),
    ],
)
def test_usage_errors(pi, recordings: list[Path], args: list[str], message: str) -> None:
    out = pi("replay", str(recordings[0]), *args)
    assert out.status == 2
    assert message in out.err, out.err
