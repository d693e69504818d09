"""``CodexRules.check_argv`` against the real ``codex execpolicy check`` (issue 14 item 2).

The binary comes from the npm package ``@openai/codex`` (``npm install --prefix
~/.cache/codex-cli @openai/codex``); set ``PI_CODEX_BIN`` to use another one. Without it the
tests skip, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pi_sandbox_plugin.interop.codex_rules import CodexRulesError, load_codex_rules

pytestmark = pytest.mark.slow  # the Codex CLI (npm), once per case

RULES = Path(__file__).parent / "codex_rules"
DEFAULT_BIN = Path.home() / ".cache/codex-cli/node_modules/.bin/codex"


@pytest.fixture(scope="module")
def codex() -> str:
    """The ``codex`` binary (skip, or fail under CI, without it)."""
    path = os.environ.get("PI_CODEX_BIN") or str(DEFAULT_BIN)
    if not os.access(path, os.X_OK):
        why = f"the codex binary is not installed at {path} (npm install @openai/codex)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return native_codex(path)


def native_codex(path: str) -> str:
    """The native binary that npm's launcher ``@openai/codex/bin/codex.js`` at ``path`` runs
    (the launcher only picks the binary of this platform's package and passes the arguments
    on), when there is exactly one; else ``path``. Starting Node for each of the 150 checks
    took more CPU than the checks."""
    launcher = Path(path).resolve()
    if launcher.name != "codex.js":
        return path
    binaries = [
        found
        for found in launcher.parents[2].glob("codex-*/vendor/*/bin/codex")
        if os.access(found, os.X_OK)
    ]
    return str(binaries[0]) if len(binaries) == 1 else path


def run_codex(codex: str, files: list[str], argv: list[str], resolve: bool, cwd: Path) -> dict:
    command = [codex, "execpolicy", "check"]
    for f in files:
        command += ["--rules", str(RULES / f)]
    if resolve:
        command.append("--resolve-host-executables")
    result = subprocess.run(
        [*command, "--", *argv], capture_output=True, text=True, cwd=cwd, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# (rules files, argv): each case runs with and without host-executable resolution.
CASES: list[tuple[list[str], list[str]]] = [
    (["basic.rules"], ["git", "push"]),
    (["basic.rules"], ["git", "push", "origin", "main"]),
    (["basic.rules"], ["git", "push", "--force"]),
    (["basic.rules"], ["git", "push", "--force", "origin"]),
    (["basic.rules"], ["git", "pull"]),
    (["basic.rules"], ["git", "status"]),
    (["basic.rules"], ["git", "diff", "HEAD"]),
    (["basic.rules"], ["git", "log", "-1"]),
    (["basic.rules"], ["git"]),
    (["basic.rules"], ["git", "-C", "/tmp", "push"]),
    (["basic.rules"], ["git", "Push"]),
    (["basic.rules"], ["gh", "pr", "view", "7888"]),
    (["basic.rules"], ["gh", "pr", "list"]),
    (["basic.rules"], ["hub", "pr", "view"]),
    (["basic.rules"], ["gh", "pr"]),
    (["basic.rules"], ["gh", "pr", "create"]),
    (["basic.rules"], ["gh", "--repo", "x", "pr", "view"]),
    (["basic.rules"], ["ls"]),
    (["basic.rules"], ["ls", "-la", "/"]),
    (["basic.rules"], ["rm", "-rf", "/"]),
    (["basic.rules"], ["rm", "-r", "-f", "/"]),
    (["basic.rules"], ["rm"]),
    (["basic.rules"], ["sudo", "ls"]),
    (["basic.rules"], ["doas", "sh"]),
    (["basic.rules"], ["echo", "hi"]),
    (["basic.rules"], ["/usr/bin/git", "push"]),
    (["basic.rules"], ["/bin/ls"]),
    (["basic.rules"], ["./rm", "-rf", "x"]),
    (["basic.rules"], ["bin/sudo", "id"]),
    (["basic.rules"], ["/usr/bin/../bin/sudo", "id"]),
    (["basic.rules"], ["~/bin/ls"]),
    (["basic.rules"], ["/usr/bin/"]),
    (["basic.rules"], ["/"]),
    (["basic.rules"], [".."]),
    (["basic.rules"], ["ls/", "x"]),
    (["basic.rules"], [""]),
    (["basic.rules"], ["git push"]),
    (["hosts.rules"], ["git", "push"]),
    (["hosts.rules"], ["/usr/bin/git", "push"]),
    (["hosts.rules"], ["/usr/bin/git", "push", "--tags"]),
    (["hosts.rules"], ["/opt/homebrew/bin/git", "push"]),
    (["hosts.rules"], ["/opt/evil/git", "push"]),
    (["hosts.rules"], ["/usr/local/bin/git", "push"]),
    (["hosts.rules"], ["/usr//bin/./git", "push"]),
    (["hosts.rules"], ["/usr/bin/x/../git", "push"]),
    (["hosts.rules"], ["/usr/bin/git/", "push"]),
    (["hosts.rules"], ["./git", "push"]),
    (["hosts.rules"], ["/usr/bin/git"]),
    (["hosts.rules"], ["/bin/ls", "-l"]),
    (["hosts.rules"], ["/anywhere/ls", "-l", "x"]),
    (["hosts.rules"], ["./ls", "-l"]),
    (["hosts.rules"], ["~/ls", "-l"]),
    (["hosts.rules"], ["ls", "-l"]),
    (["hosts.rules"], ["/bin/ls/.", "-l"]),
    (["hosts.rules"], ["~//ls", "-l"]),
    (["hosts.rules"], ["//ls", "-l"]),
    (["hosts.rules"], ["/bin/ls/..", "-l"]),
    (["hosts.rules"], ["~", "-l"]),
    (["hosts.rules"], ["/bin/cat", "x"]),
    (["hosts.rules"], ["cat", "x"]),
    (["network.rules"], ["curl", "https://api.github.com"]),
    (["network.rules"], ["wget", "x"]),
    (["basic.rules", "extra.rules"], ["git", "status"]),
    (["basic.rules", "extra.rules"], ["git", "status", "-s"]),
    (["basic.rules", "extra.rules"], ["ls", "-la"]),
    (["basic.rules", "extra.rules"], ["ls", "-l"]),
    (["extra.rules", "basic.rules"], ["git", "status"]),
    (["basic.rules", "hosts.rules"], ["/usr/bin/git", "push"]),
    (["basic.rules", "hosts.rules"], ["/opt/evil/git", "push"]),
    (["basic.rules", "hosts.rules"], ["git", "push"]),
    (["later_host.rules"], ["/opt/bin/git", "status"]),
    (["later_host.rules"], ["/usr/bin/git", "status"]),
]


@pytest.mark.parametrize("resolve", [False, True], ids=["plain", "resolve"])
@pytest.mark.parametrize(("files", "argv"), CASES, ids=[" ".join(c[1]) or "''" for c in CASES])
def test_check_argv_equals_codex_execpolicy_check(
    codex: str, files: list[str], argv: list[str], resolve: bool, tmp_path: Path
) -> None:
    rules = load_codex_rules([RULES / f for f in files])
    expected = run_codex(codex, files, argv, resolve, tmp_path)
    verdict = rules.check_argv(argv, resolve_host_executables=resolve, cwd=str(tmp_path))
    assert json.loads(json.dumps(verdict.to_codex_json())) == expected


def test_the_oracle_cases_cover_every_decision_and_resolution(tmp_path: Path) -> None:
    """The cases above are not all alike: each outcome occurs."""
    seen: set[str | None] = set()
    for files, argv in CASES:
        rules = load_codex_rules([RULES / f for f in files])
        verdict = rules.check_argv(argv, cwd=str(tmp_path))
        seen.add(verdict.decision)
        if any(m.resolved_program for m in verdict.matches):
            seen.add("resolved")
        if len(verdict.matches) > 1:
            seen.add("several")
        if any(m.justification for m in verdict.matches):
            seen.add("justification")
    assert seen == {None, "allow", "prompt", "forbidden", "resolved", "several", "justification"}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            ["bad_match.rules"],
            'bad_match.rules:3: prefix_rule match example "git push origin" does not match '
            'pattern ["git", "pull"]',
        ),
        (
            ["bad_not_match.rules"],
            'bad_not_match.rules:1: prefix_rule not_match example "git fetch --all" matches '
            'pattern ["git", ["pull", "fetch"]]',
        ),
        (
            ["bad_host_match.rules"],
            'bad_host_match.rules:2: prefix_rule match example "/opt/bin/git status" does not '
            'match pattern ["git"]',
        ),
        (
            ["hosts.rules", "later_host.rules"],
            None,  # loads: /opt/bin/git is not a listed git, so the not_match example holds
        ),
    ],
)
def test_failing_examples_are_rejected_by_both(
    codex: str, files: list[str], message: str | None, tmp_path: Path
) -> None:
    command = [codex, "execpolicy", "check"]
    for f in files:
        command += ["--rules", str(RULES / f)]
    result = subprocess.run(
        [*command, "--", "true"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    names = list(files)
    if message is None:
        assert result.returncode == 0, result.stderr
        load_codex_rules([RULES / f for f in files], display_names=names)
        return
    assert result.returncode != 0
    assert "failed to parse policy" in result.stderr
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([RULES / f for f in files], display_names=names)
    assert str(caught.value) == message


def test_examples_see_host_executables_of_earlier_files_only(codex: str, tmp_path: Path) -> None:
    """Codex checks a file's examples when that file is parsed: a host_executable in an
    earlier file counts, one in a later file does not."""
    early = tmp_path / "early.rules"
    early.write_text('host_executable(name = "git", paths = ["/usr/bin/git"])\n')
    late = tmp_path / "late.rules"
    late.write_text('prefix_rule(pattern = ["git"], match = ["/opt/bin/git status"])\n')
    for order, fails in (([early, late], True), ([late, early], False)):
        command = [codex, "execpolicy", "check"]
        for f in order:
            command += ["--rules", str(f)]
        result = subprocess.run(
            [*command, "--", "true"], capture_output=True, text=True, cwd=tmp_path, check=False
        )
        assert (result.returncode != 0) is fails
        if fails:
            with pytest.raises(CodexRulesError) as caught:
                load_codex_rules(order, display_names=["early.rules", "late.rules"])
            assert str(caught.value) == (
                'late.rules:1: prefix_rule match example "/opt/bin/git status" does not match '
                'pattern ["git"]'
            )
        else:
            load_codex_rules(order)
