"""``pi policy check "COMMAND" [--json]`` (issue 6, item 3): the sandbox plugin's subcommand,
added through ``pi_register_commands``; every line of the shared corpus gets its decision."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core._cli import run

SHARED_POLICY = Path(__file__).resolve().parents[2].parent / "shared" / "policy"
PI = Path(sys.executable).parent / "pi"
CONFIG = """\
[sandbox.policy]
mode = "deny"
deny = [["rm"], ["curl"], ["git", "push"]]
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "pi.toml"
    path.write_text(CONFIG)
    return path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = run(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_policy_check_json_deny(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = check(
        capsys, "--config", str(config), "policy", "check", "ls && c''url x | wc", "--json"
    )
    assert (status, err) == (1, "")
    assert json.loads(out) == {
        "decision": "deny",
        "rule": ["curl"],
        "reason": 'rule ["curl"] denies `curl x`',
        "commands": [["ls"], ["curl", "x"], ["wc"]],
    }


def test_policy_check_plain_allow(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = check(capsys, "--config", str(config), "policy", "check", "echo rm")
    assert (status, err) == (0, "")
    assert out == (
        'decision: allow\nrule: -\nreason: no deny rule matches\ncommands:\n  ["echo", "rm"]\n'
    )


def test_policy_command_is_listed_in_help(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = check(capsys, "--config", str(config), "policy", "--help")
    assert status == 0
    assert "check" in out


def test_unknown_command_is_still_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(PI), "frobnicate"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "pi: error: argument COMMAND: invalid choice: 'frobnicate' (choose from 'plugins', "
        "'tools', 'call', 'replay', 'run', 'checkpoints', 'rewind', 'config', 'export', 'policy', 'mcp')\n"
    )


def test_policy_check_without_sandbox_plugin_is_unknown(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(PI), "--no-plugin", "sandbox", "policy", "check", "rm x"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "invalid choice: 'policy'" in proc.stderr


def test_shared_corpus_through_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = SHARED_POLICY / "corpus.jsonl"
    if not corpus.exists():
        pytest.skip("../shared/policy is not beside this checkout")
    wrong = []
    for line in corpus.read_text().splitlines():
        case = json.loads(line)
        status, out, _ = check(
            capsys,
            "--config",
            str(SHARED_POLICY / "pi.toml"),
            "policy",
            "check",
            case["command"],
            "--json",
        )
        decision = json.loads(out)["decision"]
        if decision != case["decision"] or status != (0 if decision == "allow" else 1):
            wrong.append(case["command"])
    # the literal-prefix limit the corpus labels is gone (issue 10 item 6); see
    # test_command_policy.SUPERSEDED and its test with prefix_match = "literal"
    assert wrong == ["git -c color.ui=never push"]
