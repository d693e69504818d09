"""Codex ``.rules`` files (issue 14 item 2): loading with a real Starlark interpreter, every
builtin's checks, load-time examples, alternatives, host executables, compound command lines,
what cannot be decided, and the caps on hostile files. ``test_codex_rules_oracle.py`` compares
``check_argv`` with the ``codex`` binary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_core import ConfigError
from pi_sandbox_plugin.interop.codex_rules import (
    CodexRules,
    CodexRulesError,
    CodexRulesLimits,
    LineVerdict,
    NetworkRule,
    PrefixRule,
    RuleMatch,
    RulesVerdict,
    load_codex_rules,
)

RULES = Path(__file__).parent / "codex_rules"


def load_text(tmp_path: Path, text: str, **kwargs: object) -> CodexRules:
    path = tmp_path / "default.rules"
    path.write_text(text)
    return load_codex_rules([path], display_names=[".codex/rules/default.rules"], **kwargs)  # type: ignore[arg-type]


def load_error(tmp_path: Path, text: str, **kwargs: object) -> str:
    with pytest.raises(CodexRulesError) as caught:
        load_text(tmp_path, text, **kwargs)
    return str(caught.value)


# ==== loading ====================================================================================


def test_a_rules_file_loads_into_rules_with_file_and_line() -> None:
    rules = load_codex_rules([RULES / "basic.rules"], display_names=["basic.rules"])
    assert [(r.program, r.rest, r.decision, r.line) for r in rules.rules] == [
        ("git", (("push",),), "forbidden", 2),
        ("git", (("push",), ("--force",)), "forbidden", 9),
        ("git", (("status", "diff", "log"),), "allow", 10),
        ("git", (), "prompt", 11),
        ("gh", (("pr",), ("view", "list")), "prompt", 12),
        ("hub", (("pr",), ("view", "list")), "prompt", 12),
        ("ls", (), "allow", 19),
        ("rm", (("-rf",),), "forbidden", 20),
        ("sudo", (), "forbidden", 25),
        ("doas", (), "forbidden", 25),
    ]
    assert rules.rules[0] == PrefixRule(
        program="git",
        rest=(("push",),),
        decision="forbidden",
        justification="Pushing needs a person.",
        pattern=("git", "push"),
        file="basic.rules",
        line=2,
    )
    assert rules.rules[4].pattern_text == '[["gh", "hub"], "pr", ["view", "list"]]'
    assert rules.rules[8].justification == "Privilege escalation."
    assert rules.files == ("basic.rules",)
    assert rules.host_executables == {}


def test_display_names_default_to_the_paths_and_must_match_them() -> None:
    path = RULES / "extra.rules"
    rules = load_codex_rules([path])
    assert {r.file for r in rules.rules} == {str(path)}
    with pytest.raises(ValueError, match="display_names must name each path"):
        load_codex_rules([path], display_names=[])


def test_no_files_give_no_rules() -> None:
    rules = load_codex_rules([])
    assert rules.rules == ()
    assert rules.check_argv(["rm", "-rf", "/"]) == RulesVerdict(None, [])
    assert rules.check_command_line("$CMD").decision is None


def test_the_error_is_a_config_error_with_its_parts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(tmp_path, "\n\nprefix_rule(pattern = [])\n")
    error = caught.value
    assert isinstance(error, CodexRulesError)
    assert (error.file, error.line, error.problem) == (
        ".codex/rules/default.rules",
        3,
        "prefix_rule: pattern cannot be empty",
    )
    assert str(error) == ".codex/rules/default.rules:3: prefix_rule: pattern cannot be empty"


def test_files_are_separate_modules(tmp_path: Path) -> None:
    first = tmp_path / "a.rules"
    first.write_text('x = ["git"]\nprefix_rule(pattern = x)\n')
    second = tmp_path / "b.rules"
    second.write_text("prefix_rule(pattern = x)\n")
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([first, second], display_names=["a.rules", "b.rules"])
    assert str(caught.value) == "b.rules:1: Variable `x` not found"


def test_the_first_files_problem_is_reported_first(tmp_path: Path) -> None:
    """As Codex: a file is evaluated and its examples checked before the next file."""
    first = tmp_path / "a.rules"
    first.write_text('prefix_rule(pattern = ["git"], match = ["ls"])\n')
    second = tmp_path / "b.rules"
    second.write_text("x = \n")
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([first, second], display_names=["a.rules", "b.rules"])
    assert str(caught.value) == (
        'a.rules:1: prefix_rule match example "ls" does not match pattern ["git"]'
    )


# ==== every builtin's checks =====================================================================

BUILTIN_ERRORS = [
    # prefix_rule: arguments
    ("prefix_rule()", "prefix_rule: missing argument pattern"),
    ('prefix_rule(pattern = ["a"], foo = 1)', "prefix_rule: unknown argument foo"),
    (
        'prefix_rule(["a"], "allow", [], [], "why", 6)',
        "prefix_rule: takes at most 5 positional arguments (6 given)",
    ),
    ('prefix_rule(["a"], pattern = ["b"])', "prefix_rule: argument pattern given twice"),
    ('prefix_rule(pattern = "git")', "prefix_rule: pattern must be a list (got string)"),
    (
        'prefix_rule(pattern = ["a"], decision = None)',
        "prefix_rule: decision must be a string (got NoneType)",
    ),
    (
        'prefix_rule(pattern = ["a"], justification = None)',
        "prefix_rule: justification must be a string (got NoneType)",
    ),
    ('prefix_rule(pattern = ["a"], match = "a")', "prefix_rule: match must be a list (got string)"),
    (
        'prefix_rule(pattern = ["a"], not_match = {"a": 1})',
        "prefix_rule: not_match must be a list (got dict)",
    ),
    # prefix_rule: values
    ("prefix_rule(pattern = [])", "prefix_rule: pattern cannot be empty"),
    ('prefix_rule(pattern = ["git", []])', "prefix_rule: pattern alternatives cannot be empty"),
    (
        'prefix_rule(pattern = ["git", ["a", 1]])',
        "prefix_rule: pattern alternative must be a string (got int)",
    ),
    (
        'prefix_rule(pattern = ["git", True])',
        "prefix_rule: pattern element must be a string or a list of strings (got bool)",
    ),
    (
        'prefix_rule(pattern = ["git"], decision = "deny")',
        "prefix_rule: decision must be allow, prompt or forbidden (got deny)",
    ),
    (
        'prefix_rule(pattern = ["git"], decision = "Allow")',
        "prefix_rule: decision must be allow, prompt or forbidden (got Allow)",
    ),
    (
        'prefix_rule(pattern = ["git"], justification = " ")',
        "prefix_rule: justification cannot be empty",
    ),
    (
        'prefix_rule(pattern = ["git"], match = [1])',
        "prefix_rule: match example must be a string or a list of strings (got int)",
    ),
    (
        'prefix_rule(pattern = ["git"], not_match = [["git", 2]])',
        "prefix_rule: not_match example tokens must be strings (got int)",
    ),
    ('prefix_rule(pattern = ["git"], match = [""])', "prefix_rule: match example cannot be empty"),
    ('prefix_rule(pattern = ["git"], match = [[]])', "prefix_rule: match example cannot be empty"),
    (
        'prefix_rule(pattern = ["git"], match = ["# a comment"])',
        "prefix_rule: match example cannot be empty",
    ),
    (
        'prefix_rule(pattern = ["git"], match = [\'git "pull\'])',
        'prefix_rule: match example "git \\"pull" is not valid shell syntax',
    ),
    (
        "prefix_rule(pattern = [lambda x: x])",
        "prefix_rule: an argument is a function, not a string or a list",
    ),
    # host_executable
    ('host_executable(name = "git")', "host_executable: missing argument paths"),
    ('host_executable(name = "", paths = [])', "host_executable: name cannot be empty"),
    (
        'host_executable(name = "bin/git", paths = [])',
        "host_executable: name must be a bare executable name (got bin/git)",
    ),
    (
        'host_executable(name = "..", paths = [])',
        "host_executable: name must be a bare executable name (got ..)",
    ),
    (
        'host_executable(name = "git", paths = "/usr/bin/git")',
        "host_executable: paths must be a list (got string)",
    ),
    (
        'host_executable(name = "git", paths = [1])',
        "host_executable: paths must be strings (got int)",
    ),
    (
        'host_executable(name = "git", paths = ["git"])',
        "host_executable: paths must be absolute or start with ~/ (got git)",
    ),
    (
        'host_executable(name = "git", paths = ["~git"])',
        "host_executable: paths must be absolute or start with ~/ (got ~git)",
    ),
    (
        'host_executable(name = "git", paths = ["/usr/bin/gitx"])',
        "host_executable: path /usr/bin/gitx must have basename git",
    ),
    (
        'host_executable(name = "git", paths = ["/usr/bin/git/.."])',
        "host_executable: path /usr/bin/git/.. must have basename git",
    ),
    # network_rule
    (
        'network_rule(host = "x.com", protocol = "https")',
        "network_rule: missing argument decision",
    ),
    (
        'network_rule(host = "x.com", protocol = "ftp", decision = "allow")',
        "network_rule: protocol must be one of http, https, socks5_tcp, socks5_udp (got ftp)",
    ),
    (
        'network_rule(host = "x.com", protocol = "https", decision = "maybe")',
        "network_rule: decision must be allow, prompt, forbidden or deny (got maybe)",
    ),
    (
        'network_rule(host = "x.com", protocol = "https", decision = "allow", justification = "")',
        "network_rule: justification cannot be empty",
    ),
    (
        'network_rule(host = " ", protocol = "https", decision = "allow")',
        "network_rule: host cannot be empty",
    ),
    (
        'network_rule(host = "https://x.com", protocol = "https", decision = "allow")',
        "network_rule: host must be a hostname or IP literal (without scheme or path)",
    ),
    (
        'network_rule(host = "[::1", protocol = "https", decision = "allow")',
        "network_rule: host has an invalid bracketed IPv6 literal",
    ),
    (
        'network_rule(host = "[::1]x", protocol = "https", decision = "allow")',
        "network_rule: host contains an unsupported suffix: [::1]x",
    ),
    (
        'network_rule(host = "*.x.com", protocol = "https", decision = "allow")',
        "network_rule: host must be a specific host; wildcards are not allowed",
    ),
    (
        'network_rule(host = "a b", protocol = "https", decision = "allow")',
        "network_rule: host cannot contain whitespace",
    ),
    (
        'network_rule(host = ".", protocol = "https", decision = "allow")',
        "network_rule: host cannot be empty",
    ),
    # Starlark itself
    ("x = 1 +", None),
    ("x = undefined_name", "Variable `undefined_name` not found"),
    ('print("hi")', "Variable `print` not found, did you mean `int`?"),
    ('fail("no\\nway")', "fail: no way"),
    (
        'load("other.star", "x")',
        "No imports are available, you tried `other.star` (no call to `Evaluator.set_loader`)",
    ),
    ("x = [1][5]", "Index `5` is out of bound"),
]


@pytest.mark.parametrize(("source", "problem"), BUILTIN_ERRORS, ids=[s for s, _ in BUILTIN_ERRORS])
def test_each_builtin_rejects_bad_arguments(
    tmp_path: Path, source: str, problem: str | None
) -> None:
    message = load_error(tmp_path, "\n" + source + "\n")
    if problem is None:  # a syntax error: the engine's own wording
        assert message.startswith(".codex/rules/default.rules:2: Parse error: unexpected new line")
        assert "\n" not in message
    else:
        assert message == f".codex/rules/default.rules:2: {problem}"


def test_positional_arguments_follow_codex_order(tmp_path: Path) -> None:
    """``prefix_rule(pattern, decision, match, not_match, justification)``."""
    rules = load_text(
        tmp_path,
        'prefix_rule(["git"], "prompt", ["git x"], ["ls"], "why")\n'
        'host_executable("git", ["/usr/bin/git"])\n'
        'network_rule("x.com", "http", "prompt", "why")\n',
    )
    assert (rules.rules[0].decision, rules.rules[0].justification) == ("prompt", "why")
    assert rules.host_executables == {"git": ("/usr/bin/git",)}
    assert rules.network_rules[0].decision == "prompt"


def test_network_rules_are_normalized_and_kept(tmp_path: Path) -> None:
    rules = load_codex_rules([RULES / "network.rules"], display_names=["network.rules"])
    assert rules.network_rules == (
        NetworkRule("api.github.com", "https", "forbidden", "No API calls.", "network.rules", 1),
        NetworkRule("::1", "socks5_tcp", "allow", None, "network.rules", 2),
    )
    assert rules.check_argv(["curl", "https://api.github.com"]).decision == "prompt"


def test_defaults_and_starlark_features(tmp_path: Path) -> None:
    rules = load_text(
        tmp_path,
        "def tools(names):\n"
        "    return [n for n in names if n != 'rm']\n"
        "for t in tools(['ls', 'rm', 'cat']):\n"
        "    prefix_rule(pattern = [t, f'--{t}'])\n"
        "prefix_rule(pattern = ('tuple',))\n",
    )
    assert [(r.program, r.rest, r.decision, r.justification, r.line) for r in rules.rules] == [
        ("ls", (("--ls",),), "allow", None, 4),
        ("cat", (("--cat",),), "allow", None, 4),
        ("tuple", (), "allow", None, 5),
    ]


# ==== line numbers ===============================================================================


def test_the_line_is_the_innermost_call_in_the_rules_file(tmp_path: Path) -> None:
    source = (
        "def deny(p):\n"  # 1
        "    prefix_rule(\n"  # 2
        "        pattern = p,\n"  # 3
        '        decision = "forbid",\n'  # 4
        "    )\n"  # 5
        "\n"  # 6
        'deny(["rm"])\n'  # 7
    )
    assert load_error(tmp_path, source) == (
        ".codex/rules/default.rules:2: prefix_rule: decision must be allow, prompt or forbidden "
        "(got forbid)"
    )


def test_rules_made_in_a_helper_remember_the_call_line(tmp_path: Path) -> None:
    rules = load_text(
        tmp_path,
        "\n\ndef allow(p):\n\n    prefix_rule(pattern = p)\n\nallow(['ls'])\nallow(['cat'])\n",
    )
    assert [(r.program, r.line) for r in rules.rules] == [("ls", 5), ("cat", 5)]


def test_a_runtime_error_names_its_line(tmp_path: Path) -> None:
    source = 'prefix_rule(pattern = ["ls"])\n\ndef f(x):\n    return x["missing"]\n\nf({})\n'
    assert load_error(tmp_path, source) == (
        '.codex/rules/default.rules:4: Key `"missing"` was not found'
    )


def test_an_error_after_valid_rules_still_fails_the_file(tmp_path: Path) -> None:
    source = 'prefix_rule(pattern = ["ls"])\n' * 3 + 'host_executable(name = "a/b", paths = [])\n'
    assert load_error(tmp_path, source) == (
        ".codex/rules/default.rules:4: host_executable: name must be a bare executable name "
        "(got a/b)"
    )


# ==== examples ===================================================================================


def test_valid_examples_load(tmp_path: Path) -> None:
    rules = load_codex_rules([RULES / "basic.rules", RULES / "hosts.rules"])
    assert len(rules.rules) == 13


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            'prefix_rule(pattern = ["git", "pull"], match = ["git push origin"])',
            'prefix_rule match example "git push origin" does not match pattern ["git", "pull"]',
        ),
        (
            'prefix_rule(pattern = ["git", "pull"], match = [["git", "pull", "a b"], ["git"]])',
            'prefix_rule match example "git" does not match pattern ["git", "pull"]',
        ),
        (
            'prefix_rule(pattern = ["git", "pull"], not_match = ["git pull --rebase"])',
            'prefix_rule not_match example "git pull --rebase" matches pattern ["git", "pull"]',
        ),
        (
            'prefix_rule(pattern = ["git", "commit"], not_match = [\'git commit -m "a b"\'])',
            "prefix_rule not_match example \"git commit -m 'a b'\" matches pattern "
            '["git", "commit"]',
        ),
        (
            'prefix_rule(pattern = [["gh", "hub"], "pr"], not_match = ["hub pr"])',
            'prefix_rule not_match example "hub pr" matches pattern [["gh", "hub"], "pr"]',
        ),
        (
            # not_match is checked before match, as in Codex
            'prefix_rule(pattern = ["a"], match = ["b"], not_match = ["a"])',
            'prefix_rule not_match example "a" matches pattern ["a"]',
        ),
        (
            # examples test only their own rule, not the others
            'prefix_rule(pattern = ["git"])\nprefix_rule(pattern = ["git", "status"], match = ["git log"])',
            'prefix_rule match example "git log" does not match pattern ["git", "status"]',
        ),
        (
            # a later host_executable counts: the examples run after the whole file
            'prefix_rule(pattern = ["git"], match = ["/opt/git x"])\n'
            'host_executable(name = "git", paths = ["/usr/bin/git"])',
            'prefix_rule match example "/opt/git x" does not match pattern ["git"]',
        ),
    ],
)
def test_a_failing_example_is_a_config_error(tmp_path: Path, source: str, problem: str) -> None:
    line = source.count("\n") + 1 if "examples test only" not in source else 2
    message = load_error(tmp_path, source + "\n")
    assert message.split(": ", 1)[1] == problem
    assert message.startswith(".codex/rules/default.rules:")
    assert int(message.split(":")[1]) in (1, line)


def test_example_words_are_split_like_codex(tmp_path: Path) -> None:
    """The Rust ``shlex`` rules: ``#`` starts a comment only at the start of a word."""
    load_text(
        tmp_path,
        'prefix_rule(pattern = ["git", "a#b"], match = ["git a#b", "git a#b # note"])\n'
        'prefix_rule(pattern = ["echo", "a b", "$x", "c\\\\d"], '
        "match = ['echo \"a b\" \\'$x\\' \"c\\\\\\\\d\"'])\n",
    )


def test_examples_resolve_host_executables(tmp_path: Path) -> None:
    rules = load_text(
        tmp_path,
        'host_executable(name = "git", paths = ["~/bin/git", "/usr/bin/git"])\n'
        'prefix_rule(pattern = ["git"], match = ["~/bin/git log", "/usr/bin/git"], '
        'not_match = ["/tmp/git"])\n',
    )
    home = os.path.expanduser("~").rstrip("/")
    assert rules.host_executables == {"git": (f"{home}/bin/git", "/usr/bin/git")}


# ==== check_argv =================================================================================


def test_check_argv_verdict_and_codex_json() -> None:
    rules = load_codex_rules([RULES / "basic.rules"], display_names=["basic.rules"])
    verdict = rules.check_argv(["git", "push", "--force"])
    assert verdict == RulesVerdict(
        "forbidden",
        [
            RuleMatch(
                ["git", "push"],
                "forbidden",
                "Pushing needs a person.",
                None,
                "basic.rules",
                2,
                '["git", "push"]',
            ),
            RuleMatch(
                ["git", "push", "--force"],
                "forbidden",
                "Never force-push.",
                None,
                "basic.rules",
                9,
                '["git", "push", "--force"]',
            ),
            RuleMatch(
                ["git"],
                "prompt",
                "Other git commands ask first.",
                None,
                "basic.rules",
                11,
                '["git"]',
            ),
        ],
    )
    assert rules.check_argv(["gh", "pr", "view"]).to_codex_json() == {
        "matchedRules": [
            {
                "prefixRuleMatch": {
                    "matchedPrefix": ["gh", "pr", "view"],
                    "decision": "prompt",
                    "justification": "Contacts GitHub.",
                }
            }
        ],
        "decision": "prompt",
    }
    assert rules.check_argv(["echo"]).to_codex_json() == {"matchedRules": []}
    assert rules.check_argv([]).to_codex_json() == {"matchedRules": []}


def test_alternatives_in_the_first_token_make_one_rule_per_program() -> None:
    rules = load_codex_rules([RULES / "basic.rules"])
    assert rules.check_argv(["hub", "pr", "list", "-s"]).matches[0].matched_prefix == [
        "hub",
        "pr",
        "list",
    ]
    assert rules.check_argv(["gh", "pr", "diff"]).decision is None


def test_host_executables(tmp_path: Path) -> None:
    rules = load_codex_rules([RULES / "hosts.rules"], display_names=["hosts.rules"])
    assert rules.host_executables == {
        "git": ("/usr/bin/git", "/opt/homebrew/bin/git", "/usr/local/bin/git"),
        "cat": (),
    }
    listed = rules.check_argv(["/usr/local/bin/git", "push"])
    assert listed.to_codex_json() == {
        "matchedRules": [
            {
                "prefixRuleMatch": {
                    "matchedPrefix": ["git", "push"],
                    "decision": "forbidden",
                    "resolvedProgram": "/usr/local/bin/git",
                }
            }
        ],
        "decision": "forbidden",
    }
    assert rules.check_argv(["/opt/evil/git", "push"]).decision is None
    assert (
        rules.check_argv(["/usr/bin/git", "push"], resolve_host_executables=False).decision is None
    )
    # ls has no host_executable: any path of that name resolves, relative ones against cwd
    relative = rules.check_argv(["./ls", "-l"], cwd=str(tmp_path))
    assert relative.matches[0].resolved_program == f"{tmp_path}/ls"
    # an empty path list allows no path at all
    assert rules.check_argv(["/bin/cat", "x"]).decision is None
    assert rules.check_argv(["cat", "x"]).decision == "allow"


def test_a_later_host_executable_replaces_an_earlier_one(tmp_path: Path) -> None:
    rules = load_text(
        tmp_path,
        'host_executable(name = "git", paths = ["/usr/bin/git"])\n'
        'host_executable(name = "git", paths = ["/opt/bin/git", "/opt/bin/./git"])\n'
        'prefix_rule(pattern = ["git"], decision = "prompt")\n',
    )
    assert rules.host_executables == {"git": ("/opt/bin/git",)}
    assert rules.check_argv(["/usr/bin/git", "x"]).decision is None
    assert rules.check_argv(["/opt/bin/git", "x"]).decision == "prompt"


# ==== command lines ==============================================================================


@pytest.fixture(scope="module")
def basic() -> CodexRules:
    return load_codex_rules([RULES / "basic.rules"], display_names=["basic.rules"])


def test_a_wrapped_shell_string_is_judged_on_each_command(basic: CodexRules) -> None:
    verdict = basic.check_command_line('bash -lc "git status && git push"')
    assert [p for p, _ in verdict.parts] == [
        ["bash", "-lc", "git status && git push"],
        ["git", "status"],
        ["git", "push"],
    ]
    assert [v.decision for _, v in verdict.parts] == [None, "prompt", "forbidden"]
    assert verdict.decision == "forbidden"
    assert verdict.deciding is not None and verdict.deciding.line == 2
    assert verdict.undecidable == []
    assert verdict.reason == (
        '`git push`: forbidden by prefix_rule ["git", "push"] at basic.rules:2: '
        "Pushing needs a person."
    )


@pytest.mark.parametrize(
    ("line", "decision", "reason"),
    [
        (
            "ls | rm -rf x",
            "forbidden",
            '`rm -rf x`: forbidden by prefix_rule ["rm", "-rf"] at basic.rules:20',
        ),
        (
            "echo $(git push)",
            "forbidden",
            '`git push`: forbidden by prefix_rule ["git", "push"] at basic.rules:2: '
            "Pushing needs a person.",
        ),
        (
            "ls && echo `sudo id`",
            "forbidden",
            '`sudo id`: forbidden by prefix_rule ["sudo"] at basic.rules:25: Privilege escalation.',
        ),
        ("ls -la; echo done", "allow", '`ls -la`: allow by prefix_rule ["ls"] at basic.rules:19'),
        (
            "env GIT_DIR=x git diff",
            "prompt",
            '`git diff`: prompt by prefix_rule ["git"] at basic.rules:11: '
            "Other git commands ask first.",
        ),
        (
            "timeout 5 gh pr view 1",
            "prompt",
            '`gh pr view 1`: prompt by prefix_rule [["gh", "hub"], "pr", ["view", "list"]] at '
            "basic.rules:12: Contacts GitHub.",
        ),
        ("echo hi > out.txt", None, "no Codex rule matches"),
        (
            "/usr/bin/rm -rf /",
            "forbidden",
            '`/usr/bin/rm -rf /`: forbidden by prefix_rule ["rm", "-rf"] at basic.rules:20',
        ),
    ],
)
def test_compound_lines(basic: CodexRules, line: str, decision: str | None, reason: str) -> None:
    verdict = basic.check_command_line(line)
    assert (verdict.decision, verdict.reason) == (decision, reason)
    assert verdict.undecidable == []


def test_plain_command_lines_decide_as_check_argv(basic: CodexRules) -> None:
    for line, argv in [
        ("git push origin", ["git", "push", "origin"]),
        ("'git' \"status\"", ["git", "status"]),
        ("gh pr create", ["gh", "pr", "create"]),
        ("rm -r -f x", ["rm", "-r", "-f", "x"]),
    ]:
        verdict = basic.check_command_line(line)
        assert verdict.parts == [(argv, basic.check_argv(argv))]
        assert verdict.decision == basic.check_argv(argv).decision


def test_a_program_that_is_not_a_literal_asks(basic: CodexRules) -> None:
    verdict = basic.check_command_line("$CMD rm -rf /")
    assert verdict == LineVerdict(
        decision="prompt",
        parts=[],
        deciding=None,
        undecidable=["the program name is not a literal: $CMD"],
        reason="cannot tell which Codex rules match: the program name is not a literal: $CMD",
    )
    assert basic.check_command_line("eval 'git push'").reason == (
        "cannot tell which Codex rules match: eval runs code the policy cannot inspect"
    )


def test_an_undecidable_part_does_not_lower_a_forbidden_one(basic: CodexRules) -> None:
    verdict = basic.check_command_line("$CMD; rm -rf /")
    assert verdict.decision == "forbidden"
    assert verdict.undecidable == ["the program name is not a literal: $CMD"]


def test_rules_without_prefix_rules_decide_nothing(tmp_path: Path) -> None:
    rules = load_text(tmp_path, 'host_executable(name = "git", paths = [])\n')
    verdict = rules.check_command_line("$CMD x")
    assert (verdict.decision, verdict.undecidable) == (
        None,
        ["the program name is not a literal: $CMD"],
    )


@pytest.mark.parametrize(
    ("line", "decision", "reasons"),
    [
        (
            "git $SUB",
            "forbidden",
            [
                '`git $SUB` may match prefix_rule ["git", "push"] at basic.rules:2',
                '`git $SUB` may match prefix_rule ["git", "push", "--force"] at basic.rules:9',
                '`git $SUB` may match prefix_rule ["git", ["status", "diff", "log"]] at '
                "basic.rules:10",
            ],
        ),
        (
            'git "$SUB" --force',
            "forbidden",
            [
                '`git "$SUB" --force` may match prefix_rule ["git", "push"] at basic.rules:2',
                '`git "$SUB" --force` may match prefix_rule ["git", "push", "--force"] at '
                "basic.rules:9",
                '`git "$SUB" --force` may match prefix_rule ["git", ["status", "diff", "log"]] '
                "at basic.rules:10",
            ],
        ),
        (
            # a quoted expansion is one word that starts with its literal prefix
            'git "st$X"',
            "prompt",
            [
                '`git "st$X"` may match prefix_rule ["git", ["status", "diff", "log"]] at '
                "basic.rules:10"
            ],
        ),
        (
            "git p*",
            "forbidden",
            [
                '`git p*` may match prefix_rule ["git", "push"] at basic.rules:2',
                '`git p*` may match prefix_rule ["git", "push", "--force"] at basic.rules:9',
            ],
        ),
        ("git x*", "prompt", []),
        (
            "echo . | xargs rm",
            "forbidden",
            ['`rm` may match prefix_rule ["rm", "-rf"] at basic.rules:20'],
        ),
        (
            "find . -exec rm {} +",
            "forbidden",
            ['`rm {}` may match prefix_rule ["rm", "-rf"] at basic.rules:20'],
        ),
        ("rm $X", "forbidden", ['`rm $X` may match prefix_rule ["rm", "-rf"] at basic.rules:20']),
        ('rm "x$X"', None, []),
    ],
)
def test_words_that_are_not_literals_may_match(
    basic: CodexRules, line: str, decision: str | None, reasons: list[str]
) -> None:
    verdict = basic.check_command_line(line)
    assert (verdict.decision, verdict.undecidable) == (decision, reasons)


def test_a_may_match_decision_says_so(basic: CodexRules) -> None:
    verdict = basic.check_command_line("git $SUB")
    assert verdict.deciding is not None and verdict.deciding.may_match
    assert verdict.reason == (
        '`git $SUB`: forbidden by prefix_rule ["git", "push"] at basic.rules:2, which may '
        "match: Pushing needs a person."
    )
    # a certain match of the same decision comes first in line order, may or not
    assert (
        basic.check_command_line("git push; git $X").deciding
        == basic.check_argv(["git", "push"]).matches[0]
    )


def test_command_lines_resolve_host_executables(tmp_path: Path) -> None:
    rules = load_codex_rules([RULES / "hosts.rules"], display_names=["hosts.rules"])
    assert rules.check_command_line("/usr/bin/git push && /opt/evil/git push").decision == (
        "forbidden"
    )
    assert rules.check_command_line("/opt/evil/git push").decision is None
    verdict = rules.check_command_line("./ls -l", cwd=str(tmp_path))
    assert verdict.deciding is not None
    assert verdict.deciding.resolved_program == f"{tmp_path}/ls"
    plain = rules.check_command_line("/usr/bin/git push", resolve_host_executables=False)
    assert plain.decision is None


# ==== hostile files ==============================================================================


def test_an_endless_loop_is_cancelled(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "prefix_rule(pattern = ['ls'])\n\nfor i in range(2000000000):\n    pass\n",
        limits=CodexRulesLimits(seconds=1),
    )
    assert message == ".codex/rules/default.rules:3: evaluation took longer than 1 second"


def test_a_long_single_operation_is_killed(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        'x = "ab" * 200000000\n',
        limits=CodexRulesLimits(seconds=0.1, grace_seconds=0.05),
    )
    assert message == ".codex/rules/default.rules: evaluation took longer than 0.1 seconds"


def test_memory_is_capped(tmp_path: Path) -> None:
    message = load_error(tmp_path, "x = [0] * 1000000000\n")
    assert message == ".codex/rules/default.rules: evaluation needs more than 1024 MiB of memory"


def test_recursion_is_capped(tmp_path: Path) -> None:
    message = load_error(tmp_path, "def f(n):\n    return f(n + 1)\n\nf(0)\n")
    assert message == ".codex/rules/default.rules:2: Starlark call stack overflow"


def test_rule_count_is_capped(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "\nfor i in range(100):\n    prefix_rule(pattern = [['a%d' % i, 'b%d' % i]])\n",
        limits=CodexRulesLimits(max_rules=101),
    )
    assert message == ".codex/rules/default.rules:3: more than 101 rules"


def test_example_count_is_capped(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "prefix_rule(pattern = ['a'], match = ['a'] * 6, not_match = ['b'] * 5)\n",
        limits=CodexRulesLimits(max_examples=10),
    )
    assert message == ".codex/rules/default.rules:1: more than 10 match/not_match examples"


def test_data_size_is_capped(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "for i in range(30):\n    prefix_rule(pattern = ['a'], justification = 'x' * 300000)\n",
    )
    assert message == ".codex/rules/default.rules:2: the rules hold more than 8 MiB of data"


def test_file_size_is_capped(tmp_path: Path) -> None:
    text = "# padding\n" * 200
    message = load_error(tmp_path, text, limits=CodexRulesLimits(max_file_bytes=1024))
    assert message == ".codex/rules/default.rules: the file is larger than 1 KiB"


def test_unreadable_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([tmp_path / "missing.rules"], display_names=["missing.rules"])
    assert str(caught.value) == "missing.rules: cannot read the file: No such file or directory"
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([tmp_path], display_names=["dir"])
    assert str(caught.value) == "dir: cannot read the file: Is a directory"
    bad = tmp_path / "bad.rules"
    bad.write_bytes(b'prefix_rule(pattern = ["ls"])\nx = "\xff"\n')
    with pytest.raises(CodexRulesError) as caught:
        load_codex_rules([bad], display_names=["bad.rules"])
    assert str(caught.value) == "bad.rules:2: not UTF-8 text (byte 0xff at column 6)"


def test_an_error_text_is_one_line(tmp_path: Path) -> None:
    message = load_error(tmp_path, "fail('a' * 1000 + '\\n\\x1b[31m')\n")
    assert message == ".codex/rules/default.rules:1: fail: " + "a" * 291 + "..."
