"""``pi replay --verify`` on the real Pi sessions of ``../shared/sessions`` (issue 5 item 5).

Each session is replayed in an empty workspace with ``--seed-from-reads --bash recorded``: the
files the agent read in full are created from the recording, bash calls are answered from the
recording (and not counted). The agreement counts are pinned exactly. Where they fall short of
the totals, the causes are (measured when pinning, see ``docs`` of the issue-5 report):

* the workspace is not the real checkout: files never read in full do not exist (``ENOENT`` for
  reads and edits, ``Path not found`` for grep/ls), and bash commands that changed files
  (``npm run check`` reformatting with biome, ``git checkout``, ``sed -i``, ``mv``) were not
  run, so later edits do not find their text and later reads differ;
* the recorded Pi was older: its read continuation notice was
  ``[N more lines in file. Use offset=X to continue]`` (no final period) or, in the oldest
  session, ``... (N more lines not shown. Use offset=X to continue reading)``;
* tools of the kimchi harness that pi does not have (``set_phase``, ``web_search``) give
  ``Tool NAME not found``;
* edits of ``~/.pi/...`` (outside the workspace) are never run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT.parent / "shared" / "sessions"
PI = Path(sys.executable).parent / "pi"

EXPECTED = {
    "kimchi-dev_user-agent_2026-04-27.jsonl": {
        "set_phase": {"agree": 0, "total": 8},
        "ls": {"agree": 0, "total": 3},
        "grep": {"agree": 3, "total": 22},
        "read": {"agree": 9, "total": 16},
        "edit": {"agree": 1, "total": 1},
        "web_search": {"agree": 0, "total": 1},
    },
    "pi-mono_before-compaction_2025-12-08.jsonl": {
        "read": {"agree": 10, "total": 104},
        "write": {"agree": 16, "total": 16},
        "edit": {"agree": 83, "total": 124},
    },
    "pi-mono_compact_2025-12-24.jsonl": {
        "read": {"agree": 9, "total": 132},
        "edit": {"agree": 11, "total": 85},
        "write": {"agree": 5, "total": 5},
    },
    "pi-mono_large-session_2025-11-20.jsonl": {
        "read": {"agree": 22, "total": 50},
        "edit": {"agree": 86, "total": 128},
        "write": {"agree": 3, "total": 3},
    },
    "pi-mono_session_2025-12-17.jsonl": {
        "read": {"agree": 21, "total": 30},
        "edit": {"agree": 32, "total": 43},
        "write": {"agree": 1, "total": 1},
    },
}


def test_every_pi_session_is_covered() -> None:
    if not SESSIONS.is_dir():
        pytest.skip(f"{SESSIONS} is not here")
    assert sorted(p.name for p in SESSIONS.glob("*.jsonl")) == sorted(EXPECTED)


def _verify(name: str, tmp_path: Path) -> list[dict]:
    if not SESSIONS.is_dir():
        pytest.skip(f"{SESSIONS} is not here")
    workspace = tmp_path / "workspace"
    home = tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("PI_DISABLE_PLUGIN_AUTOLOAD", None)
    proc = subprocess.run(
        [
            str(PI),
            "replay",
            str(SESSIONS / name),
            "--verify",
            "--seed-from-reads",
            "--bash",
            "recorded",
            "--cwd",
            str(workspace),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_agreement_counts_are_pinned(name: str, tmp_path: Path) -> None:
    lines = _verify(name, tmp_path)
    assert lines[-1] == {"summary": EXPECTED[name]}
    calls = lines[:-1]
    assert len(calls) == sum(row["total"] for row in EXPECTED[name].values())
    assert all(set(line) == {"toolCallId", "toolName", "agree", "why"} for line in calls)
    assert "bash" not in {line["toolName"] for line in calls}


def test_the_reasons_of_the_pi_mono_session_disagreements(tmp_path: Path) -> None:
    lines = _verify("pi-mono_session_2025-12-17.jsonl", tmp_path)[:-1]
    reasons: dict[tuple[str, str], int] = {}
    for line in lines:
        if not line["agree"]:
            key = (line["toolName"], line["why"])
            reasons[key] = reasons.get(key, 0) + 1
    assert reasons == {
        ("edit", "isError differs (recorded false, replayed true)"): 11,
        ("read", "text differs"): 6,
        ("read", "isError differs (recorded false, replayed true)"): 3,
    }
