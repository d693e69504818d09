"""Program grammars and wrappers in the command policy (issue 10 item 6): global options before
a subcommand are skipped (``git -C . push`` is ``git push``), an option a grammar does not know
fails closed, wrappers (``ionice``, ``chrt``, ``flock``, ``script -c``, ``busybox sh``, ...) are
unwrapped, and the grammar table is extended from ``pi.toml`` or Python. Decisions are read
from ``pi policy check --json``, exactly as a user sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_core._cli import run
from pi_core._errors import ConfigError
from pi_sandbox_plugin.policies.command_policy import CommandPolicy, Decision
from pi_sandbox_plugin.policies.grammars import BUILTIN_GRAMMARS, ProgramGrammar, merged
from pi_sandbox_plugin.settings.config import load_sandbox_config

RULES = """\
[sandbox.policy]
mode = "deny"
deny = [["rm"], ["curl"], ["wget"], ["sudo"], ["git", "push"], ["dd"], ["chmod", "777"]]
"""


def policy_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, toml: str = RULES
) -> tuple[int, dict]:
    config = tmp_path / "pi.toml"
    config.write_text(toml)
    status = run(["--config", str(config), "policy", "check", command, "--json"])
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count("\n") == 1
    return status, json.loads(out)


def deny(rule: list[str] | None, reason: str, *commands: list[str]) -> tuple[int, dict]:
    return 1, {"decision": "deny", "rule": rule, "reason": reason, "commands": list(commands)}


def allow(*commands: list[str]) -> tuple[int, dict]:
    return 0, {
        "decision": "allow",
        "rule": None,
        "reason": "no deny rule matches",
        "commands": list(commands),
    }


GIT_PUSH = ["git", "push"]

# the bypasses issue 10 reports, each with its exact answer
ISSUE_BYPASSES = {
    "git -C . push": deny(
        GIT_PUSH, 'rule ["git", "push"] denies `git -C . push`', ["git", "-C", ".", "push"]
    ),
    "git --no-pager push": deny(
        GIT_PUSH, 'rule ["git", "push"] denies `git --no-pager push`', ["git", "--no-pager", "push"]
    ),
    "git -c a=b push": deny(
        GIT_PUSH, 'rule ["git", "push"] denies `git -c a=b push`', ["git", "-c", "a=b", "push"]
    ),
    "ionice -c 3 git push": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `git push`',
        ["ionice", "-c", "3", "git", "push"],
        ["git", "push"],
    ),
    "chrt -f 10 git push": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `git push`',
        ["chrt", "-f", "10", "git", "push"],
        ["git", "push"],
    ),
    "flock /tmp/l git push": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `git push`',
        ["flock", "/tmp/l", "git", "push"],
        ["git", "push"],
    ),
    "script -c 'rm x' /dev/null": deny(
        ["rm"], 'rule ["rm"] denies `rm x`', ["script", "-c", "rm x", "/dev/null"], ["rm", "x"]
    ),
    "busybox sh -c 'curl x'": deny(
        ["curl"],
        'rule ["curl"] denies `curl x`',
        ["busybox", "sh", "-c", "curl x"],
        ["sh", "-c", "curl x"],
        ["curl", "x"],
    ),
}


@pytest.mark.parametrize("command", list(ISSUE_BYPASSES))
def test_issue_bypasses_are_denied(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert policy_check(capsys, tmp_path, command) == ISSUE_BYPASSES[command]


GRAMMAR_DECISIONS = {
    "git --git-dir .git --work-tree=. -p --bare push": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `git --git-dir .git --work-tree=. -p --bare push`',
        ["git", "--git-dir", ".git", "--work-tree=.", "-p", "--bare", "push"],
    ),
    "/usr/lib/git-core/git-push origin": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `/usr/lib/git-core/git-push origin`',
        ["/usr/lib/git-core/git-push", "origin"],
    ),
    "git --frobnicate push": deny(
        GIT_PUSH,
        'undecidable: rule ["git", "push"] may deny `git --frobnicate push` '
        "(--frobnicate is an option of git the policy does not know)",
        ["git", "--frobnicate", "push"],
    ),
    "git -C $DIR status": deny(
        GIT_PUSH,
        'undecidable: rule ["git", "push"] may deny `git -C $DIR status` '
        "(the value $DIR may split into several words)",
        ["git", "-C", "$DIR", "status"],
    ),
    'git -C "$DIR" status': allow(["git", "-C", '"$DIR"', "status"]),
    "git --version push": allow(["git", "--version", "push"]),
    "git -C repo stash push": allow(["git", "-C", "repo", "stash", "push"]),
    "chmod -R 777 out": deny(
        ["chmod", "777"],
        'rule ["chmod", "777"] denies `chmod -R 777 out`',
        ["chmod", "-R", "777", "out"],
    ),
    "chmod -R -w out": allow(["chmod", "-R", "-w", "out"]),
    "git -c alias.x='!rm y' x": deny(
        ["rm"], 'rule ["rm"] denies `rm y`', ["git", "-c", "alias.x=!rm y", "x"], ["rm", "y"]
    ),
    "git -c alias.p=push p": deny(
        GIT_PUSH,
        'rule ["git", "push"] denies `git push`',
        ["git", "-c", "alias.p=push", "p"],
        ["git", "push"],
    ),
    "git -c core.pager='curl x' log": deny(
        ["curl"],
        'rule ["curl"] denies `curl x`',
        ["git", "-c", "core.pager=curl x", "log"],
        ["curl", "x"],
    ),
}


@pytest.mark.parametrize("command", list(GRAMMAR_DECISIONS))
def test_grammar_decisions(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert policy_check(capsys, tmp_path, command) == GRAMMAR_DECISIONS[command]


WRAPPER_DECISIONS = {
    "taskset -c 0,1 curl x": deny(
        ["curl"],
        'rule ["curl"] denies `curl x`',
        ["taskset", "-c", "0,1", "curl", "x"],
        ["curl", "x"],
    ),
    "setsid -f rm x": deny(
        ["rm"], 'rule ["rm"] denies `rm x`', ["setsid", "-f", "rm", "x"], ["rm", "x"]
    ),
    "su bob -c 'wget y'": deny(
        ["wget"], 'rule ["wget"] denies `wget y`', ["su", "bob", "-c", "wget y"], ["wget", "y"]
    ),
    "runuser -u bob -- rm x": deny(
        ["rm"], 'rule ["rm"] denies `rm x`', ["runuser", "-u", "bob", "--", "rm", "x"], ["rm", "x"]
    ),
    "unshare -r curl x": deny(
        ["curl"], 'rule ["curl"] denies `curl x`', ["unshare", "-r", "curl", "x"], ["curl", "x"]
    ),
    "ssh -p 22 host 'rm x'": deny(
        ["rm"], 'rule ["rm"] denies `rm x`', ["ssh", "-p", "22", "host", "rm x"], ["rm", "x"]
    ),
    "ssh -o ProxyCommand='curl x' host ls": deny(
        ["curl"],
        'rule ["curl"] denies `curl x`',
        ["ssh", "-o", "ProxyCommand=curl x", "host", "ls"],
        ["curl", "x"],
    ),
    "ssh host": deny(
        None,
        "undecidable: ssh without a command starts a remote shell reading standard input",
        ["ssh", "host"],
    ),
    "parallel 'rm {}' ::: a": deny(
        ["rm"], 'rule ["rm"] denies `rm {}`', ["parallel", "rm {}", ":::", "a"], ["rm", "{}"]
    ),
    "parallel ::: 'rm x'": deny(
        None,
        "undecidable: parallel without a command runs its arguments as commands",
        ["parallel", ":::", "rm x"],
    ),
    "script out.log": deny(
        None,
        "undecidable: script without -c starts a shell reading standard input",
        ["script", "out.log"],
    ),
    "ionice -X 3 rm x": deny(
        None,
        "undecidable: -X is an option of ionice the policy does not know",
        ["ionice", "-X", "3", "rm", "x"],
    ),
    "echo push | xargs git": deny(
        GIT_PUSH,
        'undecidable: rule ["git", "push"] may deny `git` (xargs appends words there at run time)',
        ["echo", "push"],
        ["xargs", "git"],
        ["git"],
    ),
    "find push -maxdepth 0 -exec git {} \\;": deny(
        GIT_PUSH,
        'undecidable: rule ["git", "push"] may deny `git {}` (find replaces {} at run time)',
        ["find", "push", "-maxdepth", "0", "-exec", "git", "{}", ";"],
        ["git", "{}"],
    ),
    "parallel git ::: push": deny(
        GIT_PUSH,
        'undecidable: rule ["git", "push"] may deny `git {}` (parallel replaces {} at run time)',
        ["parallel", "git", ":::", "push"],
        ["git", "{}"],
    ),
    "xargs git status": allow(["xargs", "git", "status"], ["git", "status"]),
    "ionice -p 1234": allow(["ionice", "-p", "1234"]),
    "flock -n 9": allow(["flock", "-n", "9"]),
    "busybox ls -l": allow(["busybox", "ls", "-l"], ["ls", "-l"]),
    "python -m pip install x": allow(
        ["python", "-m", "pip", "install", "x"], ["pip", "install", "x"]
    ),
}


@pytest.mark.parametrize("command", list(WRAPPER_DECISIONS))
def test_wrapper_decisions(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert policy_check(capsys, tmp_path, command) == WRAPPER_DECISIONS[command]


def test_prefix_match_literal_compares_the_words_after_the_program(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    toml = RULES + 'prefix_match = "literal"\n'
    assert policy_check(capsys, tmp_path, "git -C . push", toml) == allow(
        ["git", "-C", ".", "push"]
    )
    # wrappers are unwrapped whatever the prefix matching
    assert policy_check(capsys, tmp_path, "ionice -c 3 git push", toml)[1]["decision"] == "deny"


def test_grammar_table_from_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    toml = """\
[sandbox.policy]
deny = [["mytool", "nuke"], ["git", "push"]]
[sandbox.policy.grammars.mytool]
value_options = ["-C", "--root"]
flag_options = ["-q"]
attached = true
[sandbox.policy.grammars.git]
flag_options = ["--frobnicate"]
[sandbox.policy.tests]
deny = ["mytool -C x --root=/ -q nuke", "mytool -Cx nuke", "git --frobnicate push"]
allow = ["mytool -C nuke status", "git --frobnicate -C . status"]
"""
    assert policy_check(capsys, tmp_path, "mytool -q -v nuke", toml) == deny(
        ["mytool", "nuke"],
        'undecidable: rule ["mytool", "nuke"] may deny `mytool -q -v nuke` '
        "(-v is an option of mytool the policy does not know)",
        ["mytool", "-q", "-v", "nuke"],
    )
    # extending git keeps its built-in options
    assert policy_check(capsys, tmp_path, "git --frobnicate --no-pager push", toml)[0] == 1


def test_grammar_table_replaces_a_builtin_entry(tmp_path: Path) -> None:
    sandbox = load_sandbox_config(
        {
            "sandbox": {
                "policy": {
                    "deny": [["git", "push"]],
                    "grammars": {"git": {"extend": False, "value_options": ["-C"]}},
                }
            }
        }
    )
    assert sandbox is not None and sandbox.policy is not None
    policy = sandbox.policy.command_policy()
    assert policy.check("git -C . push").rule == ("git", "push")
    assert policy.check("git --no-pager push").reason == (
        'undecidable: rule ["git", "push"] may deny `git --no-pager push` '
        "(--no-pager is an option of git the policy does not know)"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"value_options": ["C"]},
            "/x/pi.toml: sandbox.policy.grammars.tool.value_options: an option starts with "
            "'-': 'C'",
        ),
        (
            {"valu_options": ["-C"]},
            "/x/pi.toml: sandbox.policy.grammars.tool.valu_options: unknown key",
        ),
        (
            {"operand_pattern": "("},
            "/x/pi.toml: sandbox.policy.grammars.tool.operand_pattern: not a regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
    ],
)
def test_bad_grammar_table(table: dict, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config({"sandbox": {"policy": {"grammars": {"tool": table}}}}, "/x/pi.toml")
    assert str(e.value) == message


def test_grammar_named_by_a_path() -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config(
            {"sandbox": {"policy": {"grammars": {"/usr/bin/git": {}}}}}, "/x/pi.toml"
        )
    assert str(e.value) == (
        "/x/pi.toml: sandbox.policy.grammars: a grammar is named by the program's basename, "
        "not '/usr/bin/git'"
    )


def test_bad_prefix_match() -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config({"sandbox": {"policy": {"prefix_match": "loose"}}}, "/x/pi.toml")
    assert str(e.value) == (
        "/x/pi.toml: sandbox.policy.prefix_match: Input should be 'grammar' or 'literal'"
    )


def test_python_api_extends_the_table() -> None:
    grammars = merged({"deploy": ProgramGrammar(value_options=frozenset({"--env"}))})
    policy = CommandPolicy(deny=(("deploy", "prod"), ("git", "push")), grammars=grammars)
    assert policy.check("deploy --env x prod") == Decision(
        "deny",
        ("deploy", "prod"),
        'rule ["deploy", "prod"] denies `deploy --env x prod`',
        [["deploy", "--env", "x", "prod"]],
    )
    assert policy.check("git -C . push").rule == ("git", "push")
    assert "deploy" not in BUILTIN_GRAMMARS


def test_allow_mode_with_grammars() -> None:
    policy = CommandPolicy(mode="allow", allow=(("git", "status"), ("kubectl", "get")))
    assert policy.check("git -C repo --no-pager status && kubectl -n prod get pods").allowed
    assert policy.check("git --frobnicate status") == Decision(
        "deny",
        None,
        "undecidable: `git --frobnicate status` may not match an allow rule "
        '(--frobnicate is an option of git the policy does not know; mode = "allow")',
        [["git", "--frobnicate", "status"]],
    )


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        (("kubectl", "delete", "pod"), "kubectl -n prod delete --context=c pod x"),
        (("docker", "rm"), "docker -H tcp://h:2375 --log-level=debug rm c"),
        (("podman", "rm"), "podman --remote -c conn rm c"),
        (("helm", "uninstall"), "helm --kube-context c -n ns uninstall app"),
        (("npm", "publish"), "npm --prefix pkg -w a publish"),
        (("pnpm", "publish"), "pnpm -C pkg --filter a publish"),
        (("yarn", "publish"), "yarn --cwd pkg publish"),
        (("cargo", "publish"), "cargo +nightly -Zunstable-options -C dir publish"),
        (("pip", "install"), "python3 -m pip --no-input -q install x"),
        (("uv", "publish"), "uv --directory pkg publish"),
        (("go", "run"), "go -C cmd run ."),
        (("make", "deploy"), "make -j 4 -C site V=1 deploy"),
        (("make", "deploy"), "make -j4 build deploy"),
        (("terraform", "destroy"), "terraform -chdir=infra destroy"),
        (("aws", "s3", "rm"), "aws --profile p s3 --region eu-west-1 rm s3://b/k"),
        (("gh", "repo", "delete"), "gh repo -R o/r delete"),
        (("systemctl", "stop"), "systemctl --user -q stop app"),
        (("sudo", "apt"), "sudo -E -u root apt install x"),
        (("chown", "root"), "chown -R --from=me root f"),
    ],
)
def test_builtin_grammars(rule: tuple[str, ...], command: str) -> None:
    policy = CommandPolicy(deny=(rule,))
    assert policy.check(command).rule == rule
    assert CommandPolicy(deny=(rule,), prefix_match="literal").check(command).allowed


# --- the how-to page's examples run -------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
HOW_TO = ROOT / "docs" / "how-to" / "sandbox.md"


def section(title: str) -> str:
    page = HOW_TO.read_text()
    start = page.index(f"## {title}\n")
    return page[start : page.index("\n## ", start + 1)]


def blocks(text: str, language: str) -> list[str]:
    parts = text.split(f"```{language}\n")[1:]
    return [p.split("```", 1)[0] for p in parts]


def test_how_to_grammar_console_examples(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    examples = blocks(section("Program grammars"), "console")
    assert len(examples) == 2
    for example in examples:
        prompt, expected = example.split("\n", 1)
        prefix = '$ pi --config docs/snippets/sandbox/deny.toml policy check "'
        assert prompt.startswith(prefix) and prompt.endswith('"')
        command = prompt[len(prefix) : -1]
        status = run(["--config", "docs/snippets/sandbox/deny.toml", "policy", "check", command])
        assert (status, capsys.readouterr().out) == (1, expected)


def test_how_to_grammar_toml_and_python_examples() -> None:
    import tomllib

    (toml,) = blocks(section("Program grammars"), "toml")
    sandbox = load_sandbox_config(tomllib.loads(toml))
    assert sandbox is not None and sandbox.policy is not None
    policy = sandbox.policy.command_policy()
    assert policy.check("deploy -eprod --verbose prod").rule == ("deploy", "prod")
    assert policy.check("git --my-wrapper-flag -C . push").rule == ("git", "push")
    (python,) = blocks(section("Program grammars"), "python")
    exec(compile(python, str(HOW_TO), "exec"), {})
