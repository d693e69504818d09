"""The command policy (issue 6 items 1-3): rules by program basename and literal argv prefix,
deny and allow-only modes, ``pi policy check``'s output, both policy corpora, and the
``pi_before_tool_call`` hook of the sandbox plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pi_builtin_tools.plugin as builtin_plugin
import pi_sandbox_plugin.plugin as sandbox_plugin
from pi_core._config import load_config
from pi_core._errors import ConfigError
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._plugins.session import build_session
from pi_core._wire.messages import ToolCall
from pi_sandbox_plugin.cli.policy_check import run_policy_check
from pi_sandbox_plugin.policies.command_policy import CommandPolicy, Decision

SHARED = Path("/work/shared/policy")
OWN_CORPUS = Path(__file__).parent / "policy_corpus.jsonl"
CORPUS_RULES = (
    ("rm",),
    ("curl",),
    ("wget",),
    ("sudo",),
    ("git", "push"),
    ("dd",),
    ("chmod", "777"),
)


def corpus(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def shared_config() -> dict:
    return load_config(SHARED / "pi.toml").data


# --- the corpora ----------------------------------------------------------------------------------


def test_shared_config_is_the_readme_rules() -> None:
    config = shared_config()
    policy = run_policy_check("true", config, json_output=True, config_path=str(SHARED / "pi.toml"))
    assert policy == (
        0,
        '{"decision": "allow", "rule": null, "reason": "no deny rule matches", '
        '"commands": [["true"]]}\n',
    )
    assert config == {
        "sandbox": {"policy": {"mode": "deny", "deny": [list(r) for r in CORPUS_RULES]}}
    }


SUPERSEDED = {"git -c color.ui=never push": "deny"}
"""Lines of the shared corpus that label the literal-prefix limit its README names ("options
before the subcommand defeat a literal prefix"), which issue 10 item 6 removes: with the default
``prefix_match = "grammar"`` they get the decision here; with ``prefix_match = "literal"`` the
shared corpus is decided exactly as labelled."""


@pytest.mark.parametrize("case", corpus(SHARED / "corpus.jsonl"), ids=lambda c: c["command"][:60])
def test_shared_corpus(case: dict[str, str]) -> None:
    code, out = run_policy_check(
        case["command"], shared_config(), json_output=True, config_path=str(SHARED / "pi.toml")
    )
    expected = SUPERSEDED.get(case["command"], case["decision"])
    assert (json.loads(out)["decision"], code) == (
        expected,
        0 if expected == "allow" else 1,
    ), case["why"]


def test_shared_corpus_with_literal_prefix_match() -> None:
    config = shared_config()
    config["sandbox"]["policy"]["prefix_match"] = "literal"
    wrong = [
        case["command"]
        for case in corpus(SHARED / "corpus.jsonl")
        if json.loads(
            run_policy_check(case["command"], config, json_output=True, config_path=None)[1]
        )["decision"]
        != case["decision"]
    ]
    assert wrong == []


def test_own_corpus_size() -> None:
    cases = corpus(OWN_CORPUS)
    assert len(cases) >= 300
    assert len({c["command"] for c in cases}) == len(cases)
    assert {c["decision"] for c in cases} == {"allow", "deny"}


@pytest.mark.parametrize("case", corpus(OWN_CORPUS), ids=lambda c: c["command"][:60])
def test_own_corpus(case: dict[str, str]) -> None:
    code, out = run_policy_check(
        case["command"], shared_config(), json_output=True, config_path=str(SHARED / "pi.toml")
    )
    assert (json.loads(out)["decision"], code) == (
        case["decision"],
        0 if case["decision"] == "allow" else 1,
    ), case["why"]


# --- decisions ------------------------------------------------------------------------------------

DENY = CommandPolicy(mode="deny", deny=CORPUS_RULES)


def test_deny_rule_decision() -> None:
    assert DENY.check("ls && /bin/rm -rf build") == Decision(
        "deny",
        ("rm",),
        'rule ["rm"] denies `/bin/rm -rf build`',
        [["ls"], ["/bin/rm", "-rf", "build"]],
    )


def test_prefix_rule_decision() -> None:
    assert DENY.check("sudo -u me git p'ush' -f") == Decision(
        "deny",
        ("sudo",),
        'rule ["sudo"] denies `sudo -u me git push -f`',
        [["sudo", "-u", "me", "git", "push", "-f"], ["git", "push", "-f"]],
    )
    assert DENY.check("env git push -f").rule == ("git", "push")


def test_undecidable_decision() -> None:
    assert DENY.check('echo ok; eval "$CMD"') == Decision(
        "deny",
        None,
        "undecidable: eval runs code the policy cannot inspect",
        [["echo", "ok"], ["eval", '"$CMD"']],
    )


def test_non_literal_word_where_a_prefix_is_compared() -> None:
    assert DENY.check("git $SUB origin") == Decision(
        "deny",
        ("git", "push"),
        'undecidable: rule ["git", "push"] may deny `git $SUB origin` ($SUB is not a literal)',
        [["git", "$SUB", "origin"]],
    )
    assert DENY.check('git -C "$DIR" status').allowed
    assert DENY.check("git -C $DIR push").reason == (
        'undecidable: rule ["git", "push"] may deny `git -C $DIR push` '
        "(the value $DIR may split into several words)"
    )


def test_allowed_decision() -> None:
    assert DENY.check("git pull | tee log") == Decision(
        "allow", None, "no deny rule matches", [["git", "pull"], ["tee", "log"]]
    )
    assert DENY.check("X=1 >out") == Decision("allow", None, "no command runs", [])


ALLOW_ONLY = CommandPolicy(mode="allow", allow=(("ls",), ("git", "status"), ("echo",)))


def test_allow_mode() -> None:
    assert ALLOW_ONLY.check("ls -la | echo; git status") == Decision(
        "allow",
        None,
        "every command matches an allow rule",
        [["ls", "-la"], ["echo"], ["git", "status"]],
    )
    assert ALLOW_ONLY.check("ls; git log") == Decision(
        "deny",
        None,
        '`git log` matches no allow rule (mode = "allow")',
        [["ls"], ["git", "log"]],
    )
    assert ALLOW_ONLY.check("echo $(cat f)") == Decision(
        "deny",
        None,
        '`cat f` matches no allow rule (mode = "allow")',
        [["cat", "f"], ["echo", "$(cat f)"]],
    )
    assert ALLOW_ONLY.check("git $X") == Decision(
        "deny",
        None,
        'undecidable: `git $X` may not match an allow rule ($X is not a literal; mode = "allow")',
        [["git", "$X"]],
    )
    assert not ALLOW_ONLY.check("ls; eval ls").allowed


def test_block_reason_names_the_rule() -> None:
    assert DENY.check("curl x").block_reason() == (
        'Command blocked by the sandbox command policy: rule ["curl"] denies `curl x`'
    )
    assert DENY.check("$P x").block_reason() == (
        "Command blocked by the sandbox command policy (it fails closed: what it cannot decide "
        "is denied): undecidable: the program name is not a literal: $P"
    )


# --- pi policy check ------------------------------------------------------------------------------


def test_policy_check_plain_output() -> None:
    assert run_policy_check(
        "cd x && rm -rf build", shared_config(), json_output=False, config_path=None
    ) == (
        1,
        "decision: deny\n"
        'rule: ["rm"]\n'
        'reason: rule ["rm"] denies `rm -rf build`\n'
        "commands:\n"
        '  ["cd", "x"]\n'
        '  ["rm", "-rf", "build"]\n',
    )
    assert run_policy_check("X=1", {}, json_output=False, config_path=None) == (
        0,
        "decision: allow\nrule: -\nreason: no command runs\ncommands: (none)\n",
    )


def test_policy_check_json_output() -> None:
    assert run_policy_check(
        "timeout 5 curl x", shared_config(), json_output=True, config_path=None
    ) == (
        1,
        '{"decision": "deny", "rule": ["curl"], "reason": "rule [\\"curl\\"] denies `curl x`", '
        '"commands": [["timeout", "5", "curl", "x"], ["curl", "x"]]}\n',
    )


def test_policy_check_without_a_policy_denies_only_what_is_undecidable() -> None:
    assert run_policy_check("rm -rf x", {}, json_output=True, config_path=None)[0] == 0
    assert run_policy_check("eval x", {"sandbox": {}}, json_output=True, config_path=None)[0] == 1


def test_policy_check_bad_config() -> None:
    with pytest.raises(ConfigError) as e:
        run_policy_check(
            "ls",
            {"sandbox": {"policy": {"mode": "never"}}},
            json_output=True,
            config_path="/x/pi.toml",
        )
    assert str(e.value) == "/x/pi.toml: sandbox.policy.mode: Input should be 'deny' or 'allow'"


# --- the hook ---------------------------------------------------------------------------------------


async def call_bash(plugin_manager, register_plugin, tmp_path: Path, config: dict, command: str):
    register_plugin(builtin_plugin, name="builtin_tools")
    register_plugin(sandbox_plugin, name="sandbox")
    session = build_session(plugin_manager, tmp_path, config)
    outcome = await run_tool_call(
        ToolCall(id="c1", name="bash", arguments={"command": command}),
        AgentContext(tools=session.tools),
        session.loop_config(),
    )
    return outcome.result.text, outcome.is_error


POLICY = {"sandbox": {"policy": {"deny": [["rm"], ["git", "push"]]}}}


async def test_pi_before_tool_call_blocks_a_denied_command(
    plugin_manager, register_plugin, tmp_path
) -> None:
    (tmp_path / "keep").write_text("x")
    text, is_error = await call_bash(
        plugin_manager, register_plugin, tmp_path, POLICY, "echo start; rm -f keep"
    )
    assert (text, is_error) == (
        'Command blocked by the sandbox command policy: rule ["rm"] denies `rm -f keep`',
        True,
    )
    assert (tmp_path / "keep").read_text() == "x"


async def test_pi_before_tool_call_lets_an_allowed_command_run(
    plugin_manager, register_plugin, tmp_path
) -> None:
    assert await call_bash(
        plugin_manager, register_plugin, tmp_path, POLICY, "echo rm; printf '%s\\n' git-push"
    ) == ("rm\ngit-push\n", False)


async def test_pi_before_tool_call_without_sandbox_changes_nothing(
    plugin_manager, register_plugin, tmp_path
) -> None:
    (tmp_path / "gone").write_text("x")
    assert await call_bash(
        plugin_manager, register_plugin, tmp_path, {"other": {"x": 1}}, "rm gone; eval echo ok"
    ) == ("ok\n", False)
    assert not (tmp_path / "gone").exists()


async def test_pi_before_tool_call_without_a_policy_table_changes_nothing(
    plugin_manager, register_plugin, tmp_path
) -> None:
    assert await call_bash(
        plugin_manager, register_plugin, tmp_path, {"sandbox": {"backend": "local"}}, "eval echo ok"
    ) == ("ok\n", False)


async def test_pi_before_tool_call_ignores_other_tools(
    plugin_manager, register_plugin, tmp_path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    register_plugin(sandbox_plugin, name="sandbox")
    (tmp_path / "rm").write_text("eval $(rm -rf /)\n")
    session = build_session(plugin_manager, tmp_path, POLICY)
    outcome = await run_tool_call(
        ToolCall(id="c1", name="read", arguments={"path": "rm"}),
        AgentContext(tools=session.tools),
        session.loop_config(),
    )
    assert (outcome.result.text, outcome.is_error) == ("eval $(rm -rf /)\n", False)


def test_pi_register_tools_validates_the_sandbox_table(
    plugin_manager, register_plugin, tmp_path
) -> None:
    register_plugin(sandbox_plugin, name="sandbox")
    bad = {"sandbox": {"policy": {"deny": [["rm"]], "tests": {"deny": ["echo rm"]}}}}
    with pytest.raises(ConfigError) as e:
        build_session(plugin_manager, tmp_path, bad)
    assert str(e.value) == (
        "pi.toml: sandbox.policy.tests.deny[0]: 'echo rm' is allowed, expected deny "
        "(no deny rule matches)"
    )
    assert build_session(plugin_manager, tmp_path, {}).tools == []
