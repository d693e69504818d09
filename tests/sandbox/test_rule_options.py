"""Issue 23 point 8: rules that mean what they say. For a program whose grammar knows its
options (rm, cp, mv, chmod, chown, chgrp, git push/clean/reset/branch), a rule's options match
in any order and spelling; git's other names of push are push; for a program without one the
match stays literal. Decisions are read from ``pi policy check --json``."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from pi_core._cli import run
from pi_sandbox_plugin.policies.command_policy import CommandPolicy

RULES = """\
[sandbox.policy]
mode = "deny"
deny = [["rm", "-rf"], ["git", "push", "--force"], ["chmod", "-R", "777"], ["cp", "-r", "/etc"],
        ["git", "clean", "-f", "-x"], ["deploy", "--prod"]]
"""


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> dict:
    config = tmp_path / "pi.toml"
    config.write_text(RULES)
    status = run(["--config", str(config), "policy", "check", command, "--json"])
    out, err = capsys.readouterr()
    assert err == ""
    decision = json.loads(out)
    assert status == (0 if decision["decision"] == "allow" else 1)
    return decision


RM_RF = [
    "rm -rf x",
    "rm -fr x",
    "rm -r -f x",
    "rm -R -f x",
    "rm -f -R x",
    "rm --recursive --force x",
    "rm --force --recursive x",
    "rm -rfv x",
    "rm -vrf x",
    "rm -Rfi x",
    "rm x -rf",
    "rm x -r y -f",
    "rm --rec --forc x",
    "rm -r --force x",
    "/bin/rm -fR x",
    "sudo rm -rf x",
    "bash -c 'rm -fr x'",
    "x='a[$(rm -fr y)]'; echo $((x))",
]


NOT_RM_RF = ["rm -r x", "rm -f x", "rm x", "rm -- -rf", "rm ./-rf", "rmdir -rf x", "rm -d x"]


@pytest.mark.parametrize("command", NOT_RM_RF)
def test_rm_without_both_options_is_allowed(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert check(capsys, tmp_path, command)["decision"] == "allow"


def test_what_may_hold_options_is_undecidable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert check(capsys, tmp_path, 'rm "$F" x') == {
        "decision": "deny",
        "rule": ["rm", "-rf"],
        "reason": 'undecidable: rule ["rm", "-rf"] may deny `rm "$F" x` ("$F" may hold options '
        "of rm)",
        "commands": [["rm", '"$F"', "x"]],
    }
    assert check(capsys, tmp_path, "rm -rP x")["reason"] == (
        'undecidable: rule ["rm", "-rf"] may deny `rm -rP x` (-P is an option of rm the policy '
        "does not know)"
    )
    # a word with a literal start that is not an option cannot be one: ./$F is a file
    assert check(capsys, tmp_path, 'rm -r "./$F"')["decision"] == "allow"


GIT_PUSH_FORCE = [
    "git push --force",
    "git push -f",
    "git push -fu origin main",
    "git push origin main --force",
    "git push origin +main",
    "git push --mirror backup",
    "git push --force-with-lease",
    "git push --force-w",  # an unambiguous prefix of --force-with-lease
    "git -C repo push -f origin",
    "git send-pack --force origin main",
    "/usr/lib/git-core/git-push -f",
]


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        *((c, ["rm", "-rf"]) for c in RM_RF),
        *((c, ["git", "push", "--force"]) for c in GIT_PUSH_FORCE),
    ],
)
def test_options_in_every_spelling(
    command: str, rule: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    decision = check(capsys, tmp_path, command)
    assert (decision["decision"], decision["rule"]) == ("deny", rule)
    assert decision["reason"].startswith(f"rule {json.dumps(rule)} denies `")


@pytest.mark.parametrize(
    "command", ["git push", "git push origin main", "git push --no-force", "git push -u o m"]
)
def test_git_push_without_force_is_allowed(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert check(capsys, tmp_path, command)["decision"] == "allow"


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("chmod 777 -R out", "deny"),
        ("chmod --recursive 777 out", "deny"),
        ("chmod -Rv 777 out", "deny"),
        ("chmod 777 out", "allow"),
        ("chmod -R 755 out", "allow"),
        ("chmod -R 0777 out", "allow"),  # a mode is compared as written (documented)
        ("cp -a /etc backup", "deny"),  # -a is -dR --preserve=all
        ("cp --recursive /etc backup", "deny"),
        ("cp /etc/hosts x", "allow"),
        ("git clean -xf", "deny"),
        ("git clean -fdx", "deny"),
        ("git clean -f", "allow"),
        ("deploy --prod", "deny"),
        ("deploy -v --prod", "allow"),  # no grammar: literal, as the docs say
    ],
)
def test_other_programs(
    command: str, decision: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert check(capsys, tmp_path, command)["decision"] == decision


GIT_PUSH_NAMES = [
    "git send-pack origin main",
    "git http-push https://example.com/r.git main",
    "git -C repo send-pack origin main",
    "git remote-https origin https://example.com/r.git",
    "/usr/lib/git-core/git-send-pack origin main",
    "git remote-ext origin 'sh -c true'",
]


@pytest.mark.parametrize("command", GIT_PUSH_NAMES)
def test_git_pushes_under_other_names(command: str) -> None:
    policy = CommandPolicy(deny=(("git", "push"),))
    assert policy.check(command).rule == ("git", "push")
    assert CommandPolicy(mode="allow", allow=(("git", "status"),)).check(command).decision == (
        "deny"
    )


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("git clone -u 'rm -rf x;' . y", ["rm", "-rf", "x"]),
        ("git ls-remote --upload-pack='rm y;' .", ["rm", "y"]),
        ("git fetch --upload-pack 'rm y' origin", ["rm", "y"]),
        ("git push --receive-pack='rm y' . HEAD", ["rm", "y"]),
        ("git archive --exec='rm y' --remote=. HEAD", ["rm", "y"]),
    ],
)
def test_git_options_that_run_a_program(command: str, runs: list[str]) -> None:
    decision = CommandPolicy(deny=(("rm",),)).check(command)
    assert (decision.decision, decision.commands[-1]) == ("deny", runs)


def test_git_protocol_ext_is_undecidable() -> None:
    decision = CommandPolicy(deny=(("rm",),)).check(
        "git -c protocol.ext.allow=always clone 'ext::sh -c rm% y' z"
    )
    assert decision.reason == (
        "undecidable: git -c protocol.ext.allow=always lets ext:: addresses run commands"
    )


def test_literal_prefix_match_keeps_literal_words() -> None:
    policy = CommandPolicy(deny=(("rm", "-rf"),), prefix_match="literal")
    assert policy.check("rm -rf x").rule == ("rm", "-rf")
    assert policy.check("rm -fr x").allowed


def test_a_rule_naming_an_unknown_option_is_literal() -> None:
    policy = CommandPolicy(deny=(("rm", "--frobnicate"),))
    assert policy.check("rm --frobnicate x").rule == ("rm", "--frobnicate")
    assert policy.check("rm x --frobnicate").allowed


def test_allow_rules_with_options() -> None:
    policy = CommandPolicy(mode="allow", allow=(("rm", "-i"), ("git", "push", "--dry-run")))
    assert policy.check("rm x -i").allowed
    assert policy.check("git push -n origin").allowed
    assert not policy.check("rm x").allowed
    assert not policy.check("git push origin").allowed


DOCS = Path(__file__).resolve().parents[2] / "docs"


def _doc_rules() -> list[list[str]]:
    """Every rule written in ``docs/`` (``[["program", "word"], ...]`` lists)."""
    rules: list[list[str]] = []
    for path in sorted(DOCS.rglob("*")):
        if path.suffix not in (".md", ".toml"):
            continue
        for m in re.finditer(r"(?:deny|allow)\s*=\s*(\[\[.*?\]\])", path.read_text()):
            rules.extend(json.loads(m.group(1)))
    return rules


def test_every_rule_in_the_docs_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``pi policy check`` denies, under each rule the documentation shows, the command the
    rule names; a rule with options also in another order."""
    rules = _doc_rules()
    assert len(rules) >= 15
    config = tmp_path / "pi.toml"
    for rule in rules:
        config.write_text(f"[sandbox.policy]\ndeny = [{json.dumps(rule)}]\n")
        options = [w for w in rule[1:] if w.startswith("-")]
        commands = [" ".join(rule) + " x"]
        if len(options) > 1:
            commands.append(" ".join([rule[0], *reversed(options), "x"]))
        for command in commands:
            run(["--config", str(config), "policy", "check", command, "--json"])
            assert json.loads(capsys.readouterr().out)["rule"] == rule, command


HOW_TO = DOCS / "how-to" / "sandbox.md"


def console_examples(title: str) -> list[tuple[list[str], str]]:
    """The ``$ pi ...`` commands of a section of the sandbox how-to and the output shown."""
    page = HOW_TO.read_text()
    start = page.index(f"## {title}\n")
    text = page[start : page.index("\n## ", start + 1)]
    out = []
    for block in text.split("```console\n")[1:]:
        body = block.split("```", 1)[0]
        for example in body.split("$ ")[1:]:
            prompt, expected = example.split("\n", 1)
            out.append((shlex.split(prompt), expected))
    return out


def check_console_examples(
    title: str, config: str, count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run the ``$ pi --config docs/snippets/sandbox/CONFIG ...`` examples of a section of the
    sandbox how-to (from the repository root): each prints what the page shows."""
    examples = console_examples(title)
    assert len(examples) == count
    cwd = Path.cwd()
    try:
        os.chdir(DOCS.parent)
        for argv, expected in examples:
            assert argv[:3] == ["pi", "--config", f"docs/snippets/sandbox/{config}"]
            status = run(argv[1:])
            out = capsys.readouterr().out
            assert (status, out) == (0 if "decision: allow" in expected else 1, expected)
    finally:
        os.chdir(cwd)


def test_how_to_option_examples(capsys: pytest.CaptureFixture[str]) -> None:
    check_console_examples("Rules that name options", "options.toml", 3, capsys)


def test_how_to_options_snippet_checks_itself() -> None:
    """The snippet's ``[sandbox.policy.tests]`` lines are checked when it loads."""
    import tomllib

    from pi_sandbox_plugin.settings.config import load_sandbox_config

    config = tomllib.loads((DOCS / "snippets" / "sandbox" / "options.toml").read_text())
    sandbox = load_sandbox_config(config)
    assert sandbox is not None and sandbox.policy is not None
