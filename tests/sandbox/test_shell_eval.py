"""Text that bash evaluates again (issue 23 point 1), construct by construct: the commands and
undecidable parts :func:`~pi_sandbox_plugin.policies.bash_parser.parse_command_line` finds, exactly.
The generated corpus (``test_eval_later.py``) covers every construct with every carrier; these
are the exact answers, one construct class at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from test_bash_parser import items

from pi_sandbox_plugin.policies.bash_parser import parse_command_line
from pi_sandbox_plugin.policies.shell_eval import brace_expand, parse_param, zsh_hazard


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # ARITHMETIC EVALUATION: a variable's value is evaluated, its subscript expanded
        ("x='a[$(rm y)]'; echo $((x))", [["echo", "$((x))"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; echo $(($x))", [["echo", "$(($x))"], ["rm", "y"]]),
        ("x=y; y='a[`rm z`]'; echo $[x]", [["echo", "$[x]"], ["rm", "z"]]),
        ("x='a[$(rm y)]'; ((x))", [["rm", "y"]]),
        ("x='a[$(rm y)]'; let x", [["let", "x"], ["rm", "y"]]),
        ("let 'a[$(rm y)]'", [["let", "a[$(rm y)]"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; for ((i=x; i<1; i++)); do :; done", [[":"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; [[ $x -eq 1 ]]", [["rm", "y"]]),
        ("x='a[$(rm y)]'; [[ 1 -le x ]]", [["rm", "y"]]),
        ("x='a[$(rm y)]'; [ \"$x\" -eq 1 ]", []),  # test's -eq does not evaluate
        ("x='a[$(rm y)]'; b=(1); echo ${b[x]}", [["echo", "${b[x]}"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; b[x]=1", [["rm", "y"]]),
        ("x='a[$(rm y)]'; b=([x]=1)", [["rm", "y"]]),
        ("b=(['a[$(rm y)]']=1)", [["rm", "y"]]),
        ("x='a[$(rm y)]'; declare -A m; m[x]=1", [["declare", "-A", "m"]]),
        ("x='a[$(rm y)]'; s=abc; echo ${s:x:1}", [["echo", "${s:x:1}"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; declare -i n; n=$x", [["declare", "-i", "n"], ["rm", "y"]]),
        ("x='a[$(rm y)]'; RANDOM=$x", [["rm", "y"]]),
        ("x='a[$(rm y)]'; cat <<EOF\n$((x))\nEOF", [["cat"], ["rm", "y"]]),
        (
            "echo $((a[\\$(rm y)]))",
            ["?the command line does not parse: unexpected '\\\\$' at line 1"],
        ),
        # names that take a subscript
        ("printf -v 'a[$(rm y)]' %s 1", [["printf", "-v", "a[$(rm y)]", "%s", "1"], ["rm", "y"]]),
        ("read 'a[$(rm y)]' <<< 1", [["read", "a[$(rm y)]"], ["rm", "y"]]),
        ("unset 'a[$(rm y)]'", [["unset", "a[$(rm y)]"], ["rm", "y"]]),
        ("test -v 'a[$(rm y)]'", [["test", "-v", "a[$(rm y)]"], ["rm", "y"]]),
        ("[[ -v 'a[$(rm y)]' ]]", [["rm", "y"]]),
        ("x='a[$(rm y)]'; echo ${!x}", [["echo", "${!x}"], ["rm", "y"]]),
        ("declare -n r='a[$(rm y)]'", [["declare", "-n", "r=a[$(rm y)]"], ["rm", "y"]]),
        (
            "x='a[$(rm y)]'; exec {b[x]}>/dev/null",
            [
                ["exec", "{b[x]}"],
                ["{b[x]}"],
                "?the program name is a glob pattern: {b[x]}",
                ["rm", "y"],
            ],
        ),
        (
            "exec {a[$(rm y)]}>/dev/null",
            [
                ["rm", "y"],
                ["exec", "{a[$(rm y)]}"],
                ["{a[$(rm y)]}"],
                "?the program name is not a literal: {a[$(rm y)]}",
            ],
        ),
        ("declare -a 'b=($(rm y))'", [["declare", "-a", "b=($(rm y))"], ["rm", "y"]]),
        # code strings
        ("trap 'rm y' EXIT", [["trap", "rm y", "EXIT"], ["rm", "y"]]),
        ("x='rm y'; trap \"$x\" EXIT", [["trap", '"$x"', "EXIT"], ["rm", "y"]]),
        (
            "mapfile -C 'rm' -c 1 b < f",
            [["mapfile", "-C", "rm", "-c", "1", "b"], ["rm", "0", '"$line"']],
        ),
        (
            "compgen -C 'rm y' x",
            [["compgen", "-C", "rm y", "x"], ["rm", "y", '"$1"', '"$2"', '"$3"']],
        ),
        ("bind -x '\"\\C-x\": rm y'", [["bind", "-x", '"\\C-x": rm y'], ["rm", "y"]]),
        ("PROMPT_COMMAND='rm y'", [["rm", "y"]]),
        (
            "env 'BASH_FUNC_ls%%=() { rm y; }' bash -c ls",
            [
                ["env", "BASH_FUNC_ls%%=() { rm y; }", "bash", "-c", "ls"],
                ["bash", "-c", "ls"],
                ["ls"],
                ["rm", "y"],
            ],
        ),
        # prompt strings and expanded words
        ("PS4='$(rm y)'; set -x", [["set", "-x"], ["rm", "y"]]),
        ("PS4='\\044(rm y)'; set -x", [["set", "-x"], ["rm", "y"]]),
        ("x='`rm y`'; echo ${x@P}", [["echo", "${x@P}"], ["rm", "y"]]),
        ("compgen -W '$(rm y)' x", [["compgen", "-W", "$(rm y)", "x"], ["rm", "y"]]),
        ("MAILPATH='f?$(rm y)'", [["rm", "y"]]),
    ],
)
def test_text_evaluated_again_is_judged(line: str, expected: list[list[str] | str]) -> None:
    assert items(line) == expected


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "x=$(cat f); echo $((x))",
            "arithmetic evaluates the value of $x, which is not a literal (a command's output)",
        ),
        (
            "read -r x; echo $((x))",
            "arithmetic evaluates the value of $x, which is not a literal (input read by read)",
        ),
        (
            "echo $(($1))",
            "arithmetic evaluates the value of $1, which is not a literal (a positional parameter)",
        ),
        (
            "for f in *; do echo $((f)); done",
            "arithmetic evaluates the value of $f, which is "
            "not a literal (file names a glob matches)",
        ),
        (
            "x=$(cat f); [[ $x -gt 0 ]]",
            "[[ -gt ]] evaluates the value of $x, which is not a literal (a command's output)",
        ),
        (
            "echo $(( $(date +%s) - 1 ))",
            "arithmetic evaluates a command's output, which is not a literal",
        ),
        (
            "declare -i n; read n",
            "assigning to the integer variable n evaluates the value of $n, which is not a literal "
            "(input read by read)",
        ),
        (
            'read -r v; printf -v "$v" x',
            "printf -v takes a variable name from the value of $v, "
            "which is not a literal (input read by read)",
        ),
        (
            "read -r n; echo ${!n}",
            "${!n} takes a variable name from the value of $n, which is "
            "not a literal (input read by read)",
        ),
        (
            "f() { local -n r=$1; }",
            "the nameref r takes a variable name from the value of $1, "
            "which is not a literal (a positional parameter)",
        ),
        ('trap "$(cat f)" EXIT', "trap runs a command's output, which is not a literal"),
        (
            'mapfile -C "$1" b',
            "mapfile -C runs the value of $1, which is not a literal (a positional parameter)",
        ),
        (
            "PS4=$1; set -x",
            "PS4 (a prompt string bash expands) evaluates the value of $1, "
            "which is not a literal (a positional parameter)",
        ),
        (
            "read -r x; echo ${x@P}",
            "${x@P} evaluates the value of $x, which is not a literal (input read by read)",
        ),
        (
            "x=$(cat f); declare -a b=$x",
            "declare parses again as the elements of the array b "
            "the value of $x, which is not a literal (a command's output)",
        ),
        ("env BASH_ENV=./rc bash -c true", "BASH_ENV names a file that a new shell sources"),
        (
            "BASH_CMDS[ls]=/bin/rm; ls",
            "BASH_CMDS gives a program another name the policy cannot follow",
        ),
        ("fc -s", "fc runs commands from the history, which the policy cannot see"),
        ("enable -f ./x.so x", "enable -f loads a shared object the policy cannot inspect"),
        (
            'TEXTDOMAINDIR=. ; echo $"hi"',
            '$"..." strings are translated from a catalogue '
            "TEXTDOMAINDIR chose, and the translation is expanded",
        ),
        (
            'x=$(cat f); env SHELLOPTS="$x" bash -c :',
            "SHELLOPTS (shell options) evaluates the "
            "value of $x, which is not a literal (a command's output)",
        ),
        (
            "zsh -c 'print *(e:rm y:)'",
            "zsh evaluates a glob qualifier or an = expansion (*(), which the bash grammar misses",
        ),
    ],
)
def test_text_that_is_not_a_literal_is_undecidable(line: str, reason: str) -> None:
    assert "?" + reason in items(line)


@pytest.mark.parametrize(
    "line",
    [
        "for ((i=0; i<3; i++)); do echo $i; done",
        "n=5; echo $((n+1))",
        "echo $((2*3))",
        "[[ $# -eq 0 ]]",
        "x=$HOME; echo $((x))",  # pi's own environment, not attacker data
        "echo $((count + 1))",
        "for i in {1..5}; do echo $((i*i)); done",
        "v=1.2.3; echo $((${v%%.*}+1))",
        "raw=$(date +%s); now=${raw//[!0-9]/}; echo $((now))",
        "printf -v n %s 5; echo $((n))",
        "set -x",
        "PS4='+ $LINENO '; set -x",
        "trap - EXIT",
        "read -r line",
        "x='a[1]'; echo $((x))",
        "declare -i n=2*3; n+=4",
        "s=hello; echo ${s:1:2}",
        "mapfile -t lines < f",
        "name=HOME; echo ${!name}",
        "compgen -W 'a b c' a",
        '[ "$(wc -l < f)" -gt 3 ]',
    ],
)
def test_ordinary_shell_has_nothing_undecidable(line: str) -> None:
    assert parse_command_line(line).undecidable == []


def test_evaluated_text_in_nested_shells() -> None:
    """``export`` and ``env`` carry values into nested ``bash -c`` strings: the values of every
    level count at every level."""
    assert ["rm", "y"] in items("export x='a[$(rm y)]'; bash -c 'echo $((x))'")
    assert ["rm", "y"] in items("env x='a[$(rm y)]' bash -c 'echo $((x))'")
    assert ["rm", "y"] in items("bash -c \"x='a[\\$(rm y)]'\"; echo $((x))")


def test_brace_expansion_and_parameters() -> None:
    assert brace_expand("{1..3}") == ["1", "2", "3"]
    assert brace_expand("a{b,c{d,e}}") == ["ab", "acd", "ace"]
    assert brace_expand("'{a,b}'") == ["'{a,b}'"]
    assert brace_expand("{1..1000}") is None
    p = parse_param("x//[!0-9]/")
    assert p is not None and (p.op, p.args) == ("//", ("[!0-9]", ""))
    p = parse_param("!x")
    assert p is not None and (p.indirect, p.name) == (True, "x")
    p = parse_param("a[$i]:1:2")
    assert p is not None and (p.name, p.subscript, p.op, p.args) == ("a", "$i", ":", ("1", "2"))
    assert parse_param("#a[@]") is not None and parse_param("%x") is None


@pytest.mark.parametrize(
    ("text", "hazard"),
    [
        ("print *(e:rm y:)", "a glob qualifier or an = expansion (*()"),
        ("print ${(e)x}", "a parameter flag or modifier (${()"),
        ("print $~x", "a parameter flag or modifier ($~x)"),
        ("cat =(ls)", "a glob qualifier or an = expansion (=()"),
        ("noglob rm y", "its noglob"),
        ("alias -g X=y", "its alias"),
        ("setopt GLOB_SUBST", "text under its option GLOB_SUBST"),
        ("echo ok; ls -l", None),
        ("f() { echo hi; }; f", None),
        ("a=(1 2); echo $a[1]", None),
        ("echo 'x(e:y:)' \"$(ls)\"", None),
        ("[[ $x == (a|b) ]]", None),
    ],
)
def test_zsh_hazards(text: str, hazard: str | None) -> None:
    assert zsh_hazard(text) == hazard


def test_how_to_examples(capsys: pytest.CaptureFixture[str]) -> None:
    """The console examples of the how-to's section run, with the output shown."""
    from test_rule_options import check_console_examples

    check_console_examples("Text that bash evaluates again", "deny.toml", 4, capsys)


def test_pattern_operators_compute_what_bash_computes(
    require_program: Callable[[str], str],
) -> None:
    """``${x#p}``, ``##``, ``%``, ``%%``, ``/``, ``//``, ``/#``, ``/%`` on literals give exactly
    bash's results (a wrong value could hide a ``$(`` from the policy)."""
    import random
    import shlex
    import subprocess

    from pi_sandbox_plugin.policies.shell_eval import _Budget, _pattern_regex, _remove, _substitute

    bash = require_program("bash")
    rng = random.Random(23)
    patterns = ["a", "*", "?", "a*b", "*a", "[ab]", "[!a]", "[[]", "[]a]", "[a-c]", "[[:digit:]]"]
    patterns += ["?*", "$", "\\$", "[$]*", "*[)]", "b?", ""]
    cases = []
    for _ in range(600):
        text = "".join(rng.choice("ab1$([)]") for _ in range(rng.randint(0, 7)))
        op = rng.choice(["#", "##", "%", "%%", "/", "//", "/#", "/%"])
        cases.append((text, rng.choice(patterns), op, rng.choice(["", "X", "&", "\\&"])))
    script = [
        f"x={shlex.quote(t)}; p={shlex.quote(p)}; r={shlex.quote(r)}; "
        + (
            f'printf "%s\\0" "${{x{op}$p/$r}}"'
            if op[0] == "/"
            else f'printf "%s\\0" "${{x{op}$p}}"'
        )
        for t, p, op, r in cases
    ]
    # $p unquoted inside ${...} is a pattern, as written literally
    got = subprocess.run(
        [bash], input="\n".join(script), capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for (text, pattern, op, rep), expected in zip(cases, got, strict=False):
        regex = _pattern_regex(pattern)
        assert regex is not None
        full = _Budget().matcher(regex)
        mine = (
            _substitute(text, full, regex == "", rep, op)
            if op[0] == "/"
            else _remove(text, full, op)
        )
        assert mine == expected, (text, pattern, op, rep)


def test_pattern_operators_have_a_budget() -> None:
    """A line crafted to make the cubic pattern match slow fails closed instead."""
    import time

    line = "x=" + "a" * 90 + "; " + "; ".join(f"y{i}=${{x//a*a?b/c}}" for i in range(40))
    start = time.perf_counter()
    reasons = [u.reason for u in parse_command_line(line + "; echo $((y1))").undecidable]
    assert time.perf_counter() - start < 2
    assert reasons == [
        "arithmetic evaluates the value of $y1, which is not a literal (a transformation of $x)"
    ]
