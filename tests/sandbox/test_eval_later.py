"""Issue 23 point 1: code hidden in text that bash evaluates again is judged as code.

Two proofs over the generated corpus of :mod:`eval_later_support` (every construct by which
bash evaluates text again, times every way to carry text into it, times the denied programs),
under a deny policy, an allow-list policy and Codex rules, all through the function ``pi policy
check`` calls (:func:`~pi_sandbox_plugin.cli.policy_check.judge_command`, the policies loaded once),
and the ``pi policy check`` command itself on a sample:

(a) every attack is denied; every witness (the same line running ``touch marker``) with a
    literal carrier is allowed (the policy judges what the text runs) and with a data carrier
    is undecidable;
(b) every line some policy allows (the witnesses, the allowed lines of both policy corpora,
    ordinary shell) runs under real bash with a recording stand-in for each denied program first
    on ``PATH`` and bound over ``/usr/bin``: no allowed line calls one with arguments that
    policy denies, and every witness creates its marker (the corpus holds real attacks).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from eval_later_support import (
    ALLOW_RULES,
    CARRIERS,
    CODEX_RULES,
    CONSTRUCTS,
    DENY_RULES,
    GRAMMAR_ONLY,
    HAND_WRITTEN_DENIED,
    SAFE_LINES,
    Case,
    cases,
    known_over_denial,
    run_under_bash,
)

from pi_core._cli import run
from pi_sandbox_plugin.cli.policy_check import judge_command
from pi_sandbox_plugin.interop.policy_sources import load_policies
from pi_sandbox_plugin.policies.bash_parser import parse_command_line
from pi_sandbox_plugin.policies.command_policy import CommandPolicy
from pi_sandbox_plugin.settings.config import load_sandbox_config

pytestmark = pytest.mark.xdist_group("eval-later")
"""One test process (``pytest -n``) runs this module: the verdicts of every line under the three
policies (about 10 s of CPU) are computed once, not once in each test process."""

SHARED_CORPUS = Path("/work/shared/policy/corpus.jsonl")
OWN_CORPUS = Path(__file__).parent / "policy_corpus.jsonl"
POLICIES = ("deny", "allow", "codex")

CONFIGS: dict[str, dict[str, Any]] = {
    "deny": {"sandbox": {"policy": {"mode": "deny", "deny": DENY_RULES}}},
    "allow": {"sandbox": {"policy": {"mode": "allow", "allow": ALLOW_RULES}}},
    "codex": {"sandbox": {"codex_rules": {"files": ["default.rules"]}}},
}
"""The three policies; Codex rules alone (pi's command policy then has no rules: it denies
only what is undecidable)."""

CASES = cases()
ATTACKS = [c for c in CASES if c.program]
WITNESSES = [c for c in CASES if not c.program]

INTERPRETERS = frozenset({"python", "python3", "perl", "node", "ruby", "awk", "gawk", "mawk"})
"""Programs whose code strings are out of a command policy's scope (the corpus README): an
allowed line running one is not run by the differential test."""


def corpus_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["command"] for line in path.read_text().splitlines() if line.strip()]


Verdict = tuple[str, str]
"""A policy's decision and its reason."""


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules")
    (path / "default.rules").write_text(CODEX_RULES)
    for name, config in CONFIGS.items():
        lines = [f'[sandbox.policy]\nmode = "{name}"'] if name != "codex" else []
        policy = config["sandbox"].get("policy")
        if policy and name == "deny":
            lines.append(f"deny = {json.dumps(policy['deny'])}")
        if policy and name == "allow":
            lines.append(f"allow = {json.dumps(policy['allow'])}")
        if name == "codex":
            lines.append('[sandbox.codex_rules]\nfiles = ["default.rules"]')
        (path / f"{name}.toml").write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def verdicts(rules_dir: Path) -> dict[str, dict[str, Verdict]]:
    """Every line's verdict under each policy, from ``judge_command`` (what ``pi policy
    check`` calls), the policies loaded once."""
    lines = sorted(
        {c.command for c in CASES}
        | set(HAND_WRITTEN_DENIED)
        | set(SAFE_LINES)
        | set(corpus_lines(SHARED_CORPUS))
        | set(corpus_lines(OWN_CORPUS))
    )
    out: dict[str, dict[str, Verdict]] = {}

    async def judge_all() -> None:
        for name, config in CONFIGS.items():
            sandbox = load_sandbox_config(config, None)
            assert sandbox is not None
            policies = load_policies(sandbox, str(rules_dir), f"{name}.toml")
            table: dict[str, Verdict] = {}
            for line in lines:
                verdict = await judge_command(
                    line, sandbox, cwd=str(rules_dir), config_file="", policies=policies
                )
                decided = verdict.decided_by
                table[line] = (verdict.decision, decided.reason if decided else "")
            out[name] = table

    trio.run(judge_all)
    return out


def _listing(cases_: list[Case], verdict: Callable[[Case], Verdict]) -> str:
    return "\n".join(f"{c.id}: {c.command!r} -> {verdict(c)}" for c in cases_)


# --- (a) the generated corpus -------------------------------------------------------------------


def test_corpus_size() -> None:
    assert len(CONSTRUCTS) >= 55
    assert len(CARRIERS) >= 26
    assert len(ATTACKS) >= 4000
    assert len({(c.command, c.files) for c in CASES}) == len(CASES)
    assert {c.program for c in ATTACKS} == {"rm", "curl", "git push"}


@pytest.mark.parametrize("policy", POLICIES)
def test_every_attack_is_denied(policy: str, verdicts: dict[str, dict[str, Verdict]]) -> None:
    table = verdicts[policy]
    allowed = [c for c in ATTACKS if table[c.command][0] != "deny"]
    assert allowed == [], _listing(allowed, lambda c: table[c.command])


@pytest.mark.parametrize("policy", POLICIES)
def test_literal_witnesses_are_judged_and_allowed(
    policy: str, verdicts: dict[str, dict[str, Verdict]]
) -> None:
    """With a literal carrier the policy reads the text and judges what it runs (``touch``):
    allowed, except where tree-sitter-bash cannot parse the line (listed, with the reason)."""
    table = verdicts[policy]
    judged = [
        c
        for c in WITNESSES
        if not c.carrier.data
        and c.construct.judged
        and known_over_denial(c.construct, c.carrier) is None
    ]
    assert len(judged) >= 700
    denied = [c for c in judged if table[c.command][0] != "allow"]
    assert denied == [], _listing(denied, lambda c: table[c.command])


@pytest.mark.parametrize("policy", POLICIES)
def test_data_witnesses_are_undecidable(
    policy: str, verdicts: dict[str, dict[str, Verdict]]
) -> None:
    """Text that is data (input, a command's output, a positional parameter, file names) or a
    construct that is always undecidable (``fc``): denied, and the reason says undecidable."""
    table = verdicts[policy]
    data = [c for c in WITNESSES if c.carrier.data or not c.construct.judged]
    assert len(data) >= 500
    wrong = [
        c
        for c in data
        if table[c.command][0] != "deny" or "undecidable: " not in table[c.command][1]
    ]
    assert wrong == [], _listing(wrong, lambda c: table[c.command])


@pytest.mark.parametrize("policy", POLICIES)
def test_hand_written_lines_are_denied(
    policy: str, verdicts: dict[str, dict[str, Verdict]]
) -> None:
    table = verdicts[policy]
    allowed = {
        line: why
        for line, why in HAND_WRITTEN_DENIED.items()
        if table[line][0] != "deny" and not (policy == "codex" and line in GRAMMAR_ONLY)
    }
    assert allowed == {}


@pytest.mark.parametrize("policy", POLICIES)
def test_ordinary_shell_stays_allowed(policy: str, verdicts: dict[str, dict[str, Verdict]]) -> None:
    table = verdicts[policy]
    denied = {line: table[line] for line in SAFE_LINES if table[line][0] != "allow"}
    assert denied == {}


def test_reasons_name_the_construct() -> None:
    policy = CommandPolicy(mode="deny", deny=(("rm",),))
    assert policy.check("x=$(cat f); echo $((x))").reason == (
        "undecidable: arithmetic evaluates the value of $x, which is not a literal "
        "(a command's output)"
    )
    assert policy.check('read -r v; printf -v "$v" %s 1').reason == (
        "undecidable: printf -v takes a variable name from the value of $v, which is not a "
        "literal (input read by read)"
    )
    assert policy.check('trap "$1" EXIT').reason == (
        "undecidable: trap runs the value of $1, which is not a literal (a positional parameter)"
    )
    assert policy.check('PS4="$(cat f)"; set -x; :').reason == (
        "undecidable: PS4 (a prompt string bash expands) evaluates the value of $PS4, which is "
        "not a literal (a command's output)"
    )
    assert policy.check("x='a[$(rm y)]'; echo $((x))").reason == 'rule ["rm"] denies `rm y`'
    assert policy.check("env BASH_ENV=./setup.sh bash -c true").reason == (
        "undecidable: BASH_ENV names a file that a new shell sources"
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_pi_policy_check_agrees(
    policy: str,
    rules_dir: Path,
    verdicts: dict[str, dict[str, Verdict]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ``pi policy check`` command gives the same decisions (an attack, a literal witness
    and a data witness of each kind of construct; a few hand-written and ordinary lines)."""
    monkeypatch.chdir(rules_dir)
    sample: dict[str, Case] = {}
    for c in CASES:
        sample.setdefault(f"{c.construct.kind}|{bool(c.program)}|{c.carrier.data}", c)
    lines = [c.command for c in sample.values()] + list(HAND_WRITTEN_DENIED)[::6] + SAFE_LINES[::6]
    if policy == "codex":
        lines = lines[::2]  # each call loads the rules in a child process
    wrong = []
    for line in lines:
        status = run(["--config", f"{policy}.toml", "policy", "check", line, "--json"])
        out = json.loads(capsys.readouterr().out)
        expected = verdicts[policy][line][0]
        if out["decision"] != expected or status != (0 if expected == "allow" else 1):
            wrong.append((line, out["decision"], expected))
    assert len(lines) >= 15
    assert wrong == []


def test_the_parser_caches_nothing_between_lines() -> None:
    """Facts of one line do not leak into the next (each line is judged alone)."""
    assert parse_command_line("x='a[$(rm y)]'").undecidable == []
    assert [c.argv for c in parse_command_line("echo $((x))").commands] == [["echo", "$((x))"]]


# --- (b) the differential test under real bash ------------------------------------------------------


def _denies(policy: str, argv: tuple[str, ...], rules_dir: Path) -> bool:
    line = shlex.join(["/".join(argv[0].split("/")[-1:]), *argv[1:]])
    if policy == "deny":
        return not CommandPolicy("deny", tuple(tuple(r) for r in DENY_RULES)).check(line).allowed
    if policy == "allow":
        return (
            not CommandPolicy("allow", allow=tuple(tuple(r) for r in ALLOW_RULES))
            .check(line)
            .allowed
        )
    return any(
        line.split()[: len(rule)] == rule for rule in (["rm"], ["curl"], ["wget"], ["git", "push"])
    )


def test_allowed_lines_run_no_denied_program(
    bwrap_ok: None,
    tmp_path: Path,
    rules_dir: Path,
    verdicts: dict[str, dict[str, Verdict]],
) -> None:
    """Every line some policy allows runs under real bash (in one bubblewrap sandbox, four at a
    time): none calls a denied program's stand-in with arguments that policy denies, and every
    witness of a construct bash evaluates in ``bash -c`` creates its marker."""
    files = {c.command: c.files for c in CASES}
    allowed_by = {
        line: [p for p in POLICIES if verdicts[p][line][0] == "allow"] for line in verdicts["deny"]
    }
    runnable = []
    for line, policies in allowed_by.items():
        if not policies:
            continue
        programs = {c.program for c in parse_command_line(line).commands}
        if programs & INTERPRETERS:
            continue  # code strings of interpreters: out of scope
        runnable.append(line)
    witnesses = [c for c in WITNESSES if c.construct.runs]
    lines = sorted(set(runnable) | {c.command for c in witnesses})
    assert len(runnable) >= 1200
    results = run_under_bash(
        [(line, files.get(line, ())) for line in lines], str(tmp_path), sys.executable
    )
    by_line = dict(zip(lines, results, strict=True))
    violations = [
        (line, policy, call)
        for line in runnable
        for call in by_line[line].calls
        for policy in allowed_by[line]
        if _denies(policy, call, rules_dir)
    ]
    assert violations == []
    no_marker = [c.id for c in witnesses if not by_line[c.command].marker]
    assert no_marker == []
    assert [line for line in runnable if by_line[line].timed_out] == []
