"""The generated corpus of issue 23 point 1: every construct by which bash evaluates text again,
times every way to carry text into it, times the denied programs.

A *construct* is a template of bash code with a hole for the text bash evaluates again; the text
is a payload of the construct's *kind* around a command (``a[$(CMD)]`` for arithmetic, ``CMD``
for a code string, ``$(CMD)`` for a prompt string, ...). A *carrier* puts the text into the hole:
as a literal (single or double quotes), through a variable, ``export`` into a nested ``bash
-c``, ``env NAME=...``, ``read`` from a here-string or a here-doc, a command's output, a
positional parameter, an indirect expansion, a file name a glob matches, ...

Each (construct, carrier) pair gives:

* one *attack* a denied program (``rm``, ``curl``, ``git push``): the policy must deny it;
* one *witness*: the same line running ``touch marker``, which the differential test runs under
  real bash to prove that the construct really evaluates the text (the marker appears), and
  which the policy must allow when the carrier is a literal (it judges what the text runs and
  ``touch`` is allowed) and deny as undecidable when the carrier is data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

DENIED_COMMANDS = {"rm": "rm -f y", "curl": "curl -s x", "git push": "git push origin main"}
"""The payload command of each denied program (no ``/``: it may be a file name)."""

WITNESS = "touch marker"
"""The payload of a witness line: creates ``marker`` in the case's directory."""

DENY_RULES = [["rm"], ["curl"], ["wget"], ["sudo"], ["git", "push"], ["dd"], ["chmod", "777"]]
"""The rules of the shared policy corpus (``/work/shared/policy/pi.toml``)."""

ALLOW_RULES = [
    [p]
    for p in (
        "echo printf cat ls true false test [ let trap read mapfile readarray set declare typeset "
        "local export readonly unset env bash sh wait sleep getopts compgen complete shopt touch "
        "history fc f g h zz cleanup greet : shift cd pwd grep wc head tail sort seq mkdir cp mv "
        "date basename v coproc "
        "dirname tr cut sed uniq"
    ).split()
]
"""An allow list holding every program the templates use (and ``touch``), not the denied ones;
``v`` too: tree-sitter-bash reads ``((v))`` after ``!`` or ``coproc`` as subshells running
``v`` (the policy judges both readings)."""

CODEX_RULES = """\
prefix_rule(pattern = ["rm"], decision = "forbidden")
prefix_rule(pattern = ["curl"], decision = "forbidden")
prefix_rule(pattern = ["wget"], decision = "forbidden")
prefix_rule(pattern = ["git", "push"], decision = "forbidden")
prefix_rule(pattern = ["touch"], decision = "allow")
"""
"""Codex rules forbidding the denied programs (the command policy has no rules of its own)."""


def sq(text: str) -> str:
    """``text`` single-quoted for bash."""
    return "'" + text.replace("'", "'\\''") + "'"


def dq_inner(text: str) -> str:
    """``text`` escaped for the inside of double quotes."""
    return "".join("\\" + c if c in '\\$`"' else c for c in text)


@dataclass(frozen=True)
class Refs:
    """How a template reaches the text: ``word``, a quoted word expanding to it; ``bare``, the
    same without quotes (inside ``$(( ))`` or a subscript); ``name``, a variable holding it (or
    ``None``)."""

    word: str
    bare: str
    name: str | None


Template = Callable[[Refs], str]


@dataclass(frozen=True)
class Construct:
    """``kind``: which payload; ``needs_name``: the template uses ``refs.name``; ``runs``: bash
    -c really evaluates it (not only an interactive shell); ``nested``: it may sit inside a
    ``bash -c`` string."""

    id: str
    kind: str
    template: Template
    needs_name: bool = False
    runs: bool = True
    section: str = ""
    judged: bool = True
    """With a literal carrier the policy judges what the text runs (``False``: the construct is
    undecidable whatever the text, as ``fc``)."""
    excluded: tuple[str, ...] = ()
    """Carriers whose text does not reach the construct in bash (the ids)."""
    in_arith: bool = False
    """The template puts the word inside ``$(( ))`` or a subscript, where bash keeps the
    backslash of a double-quoted ``\\$``: the double-quoted carriers do not reach it."""


def payload(kind: str, command: str) -> str:
    """The text bash evaluates again, for a construct of ``kind``, that runs ``command``."""
    return {
        "arith": f"a[$({command})]",
        "name": f"a[$({command})]",
        "code": command,
        "prompt": f"$({command})",
        "words": f"$({command})",
        "compound": f"($({command}))",
        "function": f"() {{ {command}; }}",
        "declare": f"a[$({command})]=1",
    }[kind]


_POSITIONALS = ("positional (set --)", "positional (bash -c)", "function argument")
"""Carriers whose text is a positional parameter: a function of the template has its own."""

A = "ARITHMETIC EVALUATION"
B = "SHELL BUILTIN COMMANDS"
P = "PARAMETERS / EXPANSION"
PR = "PROMPTING"
E = "ENVIRONMENT / FUNCTIONS"

CONSTRUCTS: list[Construct] = [
    # --- arithmetic: a variable's value is evaluated, a subscript in it expanded -----------------
    Construct("$(( word ))", "arith", lambda r: f"echo $(({r.word}))", in_arith=True, section=A),
    Construct("$(( name ))", "arith", lambda r: f"echo $(({r.name}))", True, section=A),
    Construct("$[ word ]", "arith", lambda r: f"echo $[{r.word}]", in_arith=True, section=A),
    Construct("(( word ))", "arith", lambda r: f"(({r.word}))", in_arith=True, section=A),
    Construct("(( y = name ))", "arith", lambda r: f"((y = {r.name}))", True, section=A),
    Construct("! (( name ))", "arith", lambda r: f"! (({r.name}))", True, section=A),
    Construct(
        "coproc (( name ))", "arith", lambda r: f"coproc (({r.name})); wait", True, section=A
    ),
    Construct("let word", "arith", lambda r: f"let {r.word}", section=A),
    Construct("let y=name", "arith", lambda r: f"let y={r.name}", True, section=A),
    Construct(
        "for (( ))",
        "arith",
        lambda r: f"for ((i={r.bare}; i<0; i++)); do :; done",
        in_arith=True,
        section=A,
    ),
    Construct("[[ -eq ]]", "arith", lambda r: f"[[ {r.word} -eq 1 ]]", in_arith=True, section=A),
    Construct("[[ name -lt ]]", "arith", lambda r: f"[[ 1 -lt {r.name} ]]", True, section=A),
    Construct(
        "${a[sub]}", "arith", lambda r: f'b=(1); echo "${{b[{r.bare}]}}"', in_arith=True, section=A
    ),
    Construct("a[sub]=", "arith", lambda r: f"b[{r.bare}]=1", in_arith=True, section=A),
    Construct("a=([sub]=)", "arith", lambda r: f"b=([{r.bare}]=1)", section=A),
    Construct(
        "${#a[sub]}", "arith", lambda r: f"b=(1); echo ${{#b[{r.bare}]}}", in_arith=True, section=A
    ),
    Construct(
        "${s:off}", "arith", lambda r: f's=abc; echo "${{s:{r.bare}}}"', in_arith=True, section=A
    ),
    Construct(
        "${s:0:len}",
        "arith",
        lambda r: f's=abc; echo "${{s:0:{r.bare}}}"',
        in_arith=True,
        section=A,
    ),
    Construct(
        "${@:off}",
        "arith",
        lambda r: f'set -- p q; echo "${{@:{r.bare}}}"',
        in_arith=True,
        section=A,
        excluded=_POSITIONALS,
    ),
    Construct("declare -i y; y=", "arith", lambda r: f"declare -i y; y={r.word}", section=A),
    Construct("declare -i y=", "arith", lambda r: f"declare -i y={r.word}", section=A),
    Construct("typeset -i +=", "arith", lambda r: f"typeset -i y=1; y+={r.word}", section=A),
    Construct(
        "local -i",
        "arith",
        lambda r: f"g() {{ local -i y={r.word}; }}; g",
        section=A,
        excluded=_POSITIONALS,
    ),
    Construct("declare -ai", "arith", lambda r: f"declare -ai y; y[0]={r.word}", section=A),
    Construct(
        "read into -i",
        "arith",
        lambda r: f"declare -i y; read -r y <<< {r.word}",
        section=A,
        judged=False,  # what read reads is input, never a literal
    ),
    Construct(
        "printf -v into -i", "arith", lambda r: f"declare -i y; printf -v y %s {r.word}", section=A
    ),
    Construct(
        "for into -i", "arith", lambda r: f"declare -i y; for y in {r.word}; do :; done", section=A
    ),
    Construct("RANDOM=", "arith", lambda r: f"RANDOM={r.word}", section=A),
    Construct("OPTIND=", "arith", lambda r: f"OPTIND={r.word}", section=A),
    Construct(
        "case $(( ))",
        "arith",
        lambda r: f"case $(({r.word})) in *) ;; esac",
        in_arith=True,
        section=A,
    ),
    Construct('"$(( ))"', "arith", lambda r: f'echo "$(({r.bare}))"', in_arith=True, section=A),
    Construct(
        "here-doc $(( ))", "arith", lambda r: f"cat <<EOF\n$(({r.name}))\nEOF", True, section=A
    ),
    # --- names that take a subscript ---------------------------------------------------------
    Construct("printf -v", "name", lambda r: f"printf -v {r.word} %s 1", section=B),
    Construct("read NAME", "name", lambda r: f"read -r {r.word} <<< 1", section=B),
    Construct("unset", "name", lambda r: f"a=(1); unset {r.word}", section=B),
    Construct("test -v", "name", lambda r: f"test -v {r.word}", section=B),
    Construct("[ -v ]", "name", lambda r: f"[ -v {r.word} ]", section=B),
    Construct(
        "[[ -v ]]",
        "name",
        lambda r: f"[[ -v {r.bare} ]]",
        section=B,
        excluded=("double-quoted", "${u:-default}"),
    ),
    Construct("wait -p", "name", lambda r: f"sleep 0 & wait -n -p {r.word}", section=B),
    Construct(
        "${!name}",
        "name",
        lambda r: f'echo "${{!{r.name}}}"',
        True,
        section=P,
        excluded=("nameref",),  # ${!ref} of a nameref is the name it refers to
    ),
    Construct("declare -n", "name", lambda r: f'declare -n ref={r.word}; echo "$ref"', section=P),
    Construct("declare NAME[SUB]=", "declare", lambda r: f"declare {r.word}", section=B),
    Construct(
        "local NAME[SUB]=",
        "declare",
        lambda r: f"g() {{ local {r.word}; }}; g",
        section=B,
        excluded=_POSITIONALS,
    ),
    # --- code strings ------------------------------------------------------------------------
    Construct("trap EXIT", "code", lambda r: f"trap {r.word} EXIT", section=B),
    Construct("trap DEBUG", "code", lambda r: f"trap {r.word} DEBUG; :", section=B),
    Construct("mapfile -C", "code", lambda r: f"mapfile -C {r.word} -c 1 b <<< x", section=B),
    Construct("readarray -C", "code", lambda r: f"readarray -C {r.word} -c 1 b <<< x", section=B),
    Construct("compgen -C", "code", lambda r: f"compgen -C {r.word} x", section=B),
    Construct("complete -C", "code", lambda r: f"complete -C {r.word} x", runs=False, section=B),
    Construct(
        "PROMPT_COMMAND=", "code", lambda r: f"PROMPT_COMMAND={r.word}", runs=False, section=PR
    ),
    Construct(
        "BASH_ALIASES",
        "code",
        lambda r: f"shopt -s expand_aliases; BASH_ALIASES[zz]={r.word}\nzz",
        section=P,
        # an alias defined inside a compound command is not used by it
        excluded=("for list", "function argument", "glob"),
    ),
    Construct(
        "fc -s",
        "code",
        lambda r: 'bash -ic "history -s ' + r.word.replace('"', '\\"') + '; fc -s" 2>/dev/null',
        section=B,
        judged=False,
    ),
    # --- prompt strings and words that are expanded --------------------------------------------
    Construct("PS4 + set -x", "prompt", lambda r: f"PS4={r.word}; set -x; :", section=PR),
    Construct("${x@P}", "prompt", lambda r: f'echo "${{{r.name}@P}}"', True, section=P),
    Construct("PS1=", "prompt", lambda r: f"PS1={r.word}", runs=False, section=PR),
    Construct("PS0=", "prompt", lambda r: f"PS0={r.word}", runs=False, section=PR),
    Construct("compgen -W", "words", lambda r: f"compgen -W {r.word} x", section=B),
    Construct("complete -W", "words", lambda r: f"complete -W {r.word} x", runs=False, section=B),
    # --- declarations re-parse (...) -----------------------------------------------------------
    Construct("declare -a arr=", "compound", lambda r: f"declare -a b={r.word}", section=B),
    Construct(
        "array declare arr=",
        "compound",
        lambda r: f"b=(); declare b={r.word}",
        section=B,
        excluded=("function argument",),  # declare makes a new local there
    ),
    Construct(
        "local -a arr=",
        "compound",
        lambda r: f"g() {{ local -a b={r.word}; }}; g",
        section=B,
        excluded=_POSITIONALS,
    ),
    Construct("readonly -a", "compound", lambda r: f"readonly -a b={r.word}", section=B),
    # --- the environment imports code ---------------------------------------------------------
    Construct(
        "BASH_FUNC_g%%",
        "function",
        lambda r: f'env "BASH_FUNC_g%%="{r.word} bash -c g',
        section=E,
    ),
]


@dataclass(frozen=True)
class Carrier:
    """``data``: the text is not a literal (the line is undecidable); ``files``: file names the
    case's directory holds (the glob carrier); ``make(text, template)`` gives the line."""

    id: str
    data: bool
    make: Callable[[str, Template], str]
    files: Callable[[str], tuple[str, ...]] = field(default=lambda text: ())
    needs: str = ""
    """``name``: only for constructs that need a name; ``word``: only for the others."""


_V = Refs('"$v"', "$v", "v")
"""The references to a variable ``v`` holding the text."""


def _then(setup: Callable[[str], str], refs: Refs = _V) -> Callable[[str, Template], str]:
    """A carrier that runs ``setup(text)``, then the template reading ``refs``."""
    return lambda s, t: setup(s) + t(refs)


def _into_bash(
    setup: Callable[[str], str], refs: Refs = _V, after: str = ""
) -> Callable[[str, Template], str]:
    """A carrier that runs the template in a nested ``bash -c`` after ``setup(text)`` (and
    gives it ``after(text)`` as its arguments)."""
    return lambda s, t: setup(s) + "bash -c " + sq(t(refs)) + after.format(text=sq(s))


def _literal(quote: Callable[[str], str]) -> Callable[[str, Template], str]:
    return lambda s, t: t(Refs(quote(s), quote(s), None))


_ARRAY = Refs('"${c[0]}"', "${c[0]}", None)
_ARG = Refs('"$1"', "$1", None)

CARRIERS: list[Carrier] = [
    Carrier("single-quoted", False, _literal(sq), needs="word"),
    Carrier("double-quoted", False, _literal(lambda s: f'"{dq_inner(s)}"'), needs="word"),
    Carrier("variable", False, _then(lambda s: f"v={sq(s)}; ")),
    Carrier("declare", False, _then(lambda s: f"declare v={sq(s)}; ")),
    Carrier("export into bash -c", False, _into_bash(lambda s: f"export v={sq(s)}; ")),
    Carrier("env into bash -c", False, _into_bash(lambda s: f"env v={sq(s)} ")),
    Carrier("prefix into bash -c", False, _into_bash(lambda s: f"v={sq(s)} ")),
    Carrier("for list", False, lambda s, t: f"for v in {sq(s)}; do " + t(_V) + "\ndone"),
    Carrier("array element", False, _then(lambda s: f"c=({sq(s)}); ", _ARRAY)),
    Carrier(
        "indirect", False, _then(lambda s: f"w={sq(s)}; n=w; ", Refs('"${!n}"', "${!n}", None))
    ),
    Carrier("nameref", False, _then(lambda s: f"w={sq(s)}; declare -n v=w; ")),
    Carrier("printf -v %s", False, _then(lambda s: f"printf -v v %s {sq(s)}; ")),
    Carrier("copied", False, _then(lambda s: f"w={sq(s)}; v=$w; ")),
    Carrier(
        "${u:-default}",
        False,
        _literal(lambda s: f'"${{u:-{dq_inner(s)}}}"'),
        needs="word",
    ),
    Carrier("${v:=default}", False, _then(lambda s: f': "${{v:={dq_inner(s)}}}"; ')),
    # --- data: never a literal -------------------------------------------------------------
    Carrier("here-string read", True, _then(lambda s: f"read -r v <<< {sq(s)}; ")),
    Carrier("here-doc read", True, _then(lambda s: f"read -r v <<'EOF'\n{s}\nEOF\n")),
    Carrier("command output", True, _then(lambda s: f"v=$(printf %s {sq(s)}); ")),
    Carrier("positional (set --)", True, _then(lambda s: f"set -- {sq(s)}; ", _ARG)),
    Carrier("positional (bash -c)", True, _into_bash(lambda s: "", _ARG, " _ {text}")),
    Carrier("function argument", True, lambda s, t: "h() { " + t(_ARG) + f"\n}}; h {sq(s)}"),
    Carrier("mapfile", True, _then(lambda s: f"mapfile -t c <<< {sq(s)}; ", _ARRAY)),
    Carrier("printf -v %b", True, _then(lambda s: f"printf -v v %b {sq(s)}; ")),
    Carrier(
        "getopts",
        True,
        _then(lambda s: f"getopts a: o -a {sq(s)}; ", Refs('"$OPTARG"', "$OPTARG", None)),
    ),
    Carrier(
        "glob",
        True,
        lambda s, t: "for v in *; do " + t(_V) + "\ndone",
        files=lambda s: (s,),
    ),
    Carrier(
        "output into env",
        True,
        _into_bash(lambda s: f'x=$(printf %s {sq(s)}); env v="$x" '),
    ),
    Carrier(
        "indirect name from input",
        True,
        _then(lambda s: f"w={sq(s)}; read -r n <<< w; ", Refs('"${!n}"', "${!n}", None)),
    ),
]


@dataclass(frozen=True)
class Case:
    """One generated line: ``program`` is the denied program it runs, or ``""`` for a witness;
    ``files``: names the case's directory holds."""

    command: str
    construct: Construct
    carrier: Carrier
    program: str
    files: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.construct.id} | {self.carrier.id} | {self.program or 'witness'}"


def _refs(carrier: Carrier) -> Refs:
    """The references a carrier gives its template."""
    seen: list[Refs] = []

    def probe(refs: Refs) -> str:
        seen.append(refs)
        return ""

    carrier.make("x", probe)
    return seen[0]


def _gives_name(carrier: Carrier) -> bool:
    return _refs(carrier).name is not None


def _fits(construct: Construct, carrier: Carrier) -> bool:
    if carrier.id in construct.excluded:
        return False
    if construct.in_arith and carrier.id in ("double-quoted", "${u:-default}"):
        return False
    if construct.needs_name and not _gives_name(carrier):
        return False
    if construct.kind == "function" and carrier.id in ("${u:-default}", "${v:=default}"):
        return False  # the payload holds a "}"
    return not (carrier.files(".") and construct.kind == "function")


_PARSE_LIMITS: dict[tuple[str, str], str] = {
    ("for (( ))", "single-quoted"): "a quoted word in for (( ))",
    ("${s:0:len}", "single-quoted"): "a quoted length in ${s:0:'...'}",
}


def known_over_denial(construct: Construct, carrier: Carrier) -> str | None:
    """Why the policy denies the witness of a literal carrier although its text is harmless:
    tree-sitter-bash does not parse the line, and the policy fails closed where its parser
    does. ``None`` for every other pair."""
    if (construct.id, carrier.id) in _PARSE_LIMITS:
        return "tree-sitter-bash does not parse " + _PARSE_LIMITS[(construct.id, carrier.id)]
    if construct.id in ("${s:off}", "${@:off}") and re.match(r"\$\w|'", _refs(carrier).bare):
        return "tree-sitter-bash does not parse ${s:$x} or ${s:'x'} (write ${s:x} or ${s:${x}})"
    if carrier.id in ("${u:-default}", "${v:=default}") and construct.kind in (
        "prompt",
        "words",
        "compound",
    ):
        return "tree-sitter-bash does not parse \\$ or ( inside ${u:-...} in double quotes"
    return None


def cases() -> list[Case]:
    """Every (construct, carrier) pair: an attack for each denied program and a witness."""
    out: list[Case] = []
    for construct in CONSTRUCTS:
        for carrier in CARRIERS:
            if not _fits(construct, carrier):
                continue
            for program, command in [*DENIED_COMMANDS.items(), ("", WITNESS)]:
                text = payload(construct.kind, command)
                line = carrier.make(text, construct.template)
                out.append(Case(line, construct, carrier, program, carrier.files(text)))
    return out


HAND_WRITTEN_DENIED: dict[str, str] = {
    # environment and files the policy cannot see
    "env BASH_ENV=setup.sh bash -c :": "BASH_ENV: a file a new shell sources",
    "BASH_ENV=setup.sh bash -c true": "BASH_ENV as a prefix",
    "export ENV=setup.sh; sh -ic :": "ENV of an interactive sh",
    "BASH_CMDS[ls]=/bin/rm; ls y": "BASH_CMDS renames a program",
    "systemd-run -E x='a[$(rm -f y)]' --user bash -c 'echo $((x))'": "systemd-run -E",
    "ssh -o SetEnv=x='a[$(rm -f y)]' host 'echo $((x))'": "ssh SetEnv into the remote shell",
    "sudo x='a[$(rm -f y)]' bash -c 'echo $((x))'": "sudo NAME=VALUE",
    "x='a[$(rm -f y)]'; ! ((x))": "((x)) after !, which tree-sitter-bash reads as subshells",
    "enable -f ./evil.so evil; evil": "enable -f loads a shared object",
    "fc -e vi": "fc runs the history",
    'TEXTDOMAINDIR=. TEXTDOMAIN=x; echo $"hello"': '$"..." with a chosen catalogue',
    'x=$(cat f); env SHELLOPTS="$x" bash -c :': "SHELLOPTS that is not a literal",
    # literal code in code strings
    "bind -x '\"\\C-x\": rm -f y'": "bind -x",
    "complete -C 'rm -f y' x": "complete -C",
    "PS1='$(curl -s x)'": "PS1",
    "MAILPATH='mbox?$(rm -f y)'": "MAILPATH message",
    "x='a[$(rm -f y)]'; declare -n r=x; echo $((r))": "arithmetic through a nameref",
    "exec {a[$(rm -f y)]}>/dev/null": "a redirection's variable",
    "declare -a 'b=([$(rm -f y)]=1)'": "declare re-parses a quoted compound assignment",
    "x='a[$(rm -f y)]'; b=(1); unset 'b[$x]'": "unset's subscript is expanded again",
    "k='$(rm -f y)'; declare -A A; unset \"A[$k]\"": "an associative key expanded again",
    "echo $((a[\\$(rm -f y)]))": "an escaped $( in arithmetic is expanded again",
    # zsh strings: what zsh evaluates and bash does not
    "zsh -c 'print *(e:rm y:)'": "zsh glob qualifier",
    "zsh -c 'print *(+rmf)'": "zsh glob qualifier calling a function",
    "zsh -c 'x=\"rm y\"; print ${(e)x}'": "zsh (e) flag",
    "zsh -c 'print $~x'": "zsh $~",
    "zsh -c 'cat =(rm y)'": "zsh =(cmd)",
    "zsh -c '=rm y'": "zsh =prog",
    "zsh -c 'noglob rm y'": "zsh noglob",
    "zsh -c 'setopt globsubst; x=\"*(e:rm y:)\"; print $x'": "zsh GLOB_SUBST",
    "zsh -c 'alias -g X=\"; rm y\"; echo X'": "zsh global alias",
    "zsh -c 'sched +1 rm y'": "zsh sched",
    "zsh -c 'emulate sh -c \"rm y\"'": "zsh emulate -c",
    "zsh -c 'zmodload zsh/system'": "zsh zmodload",
    "zsh -c 'r'": "zsh r re-runs the history",
    # git's other names of push
    "git send-pack origin main": "git send-pack pushes",
    "git http-push https://example.com/repo.git main": "git http-push pushes",
    "git -C . send-pack x main": "git send-pack after options",
    "git remote-https origin https://example.com/r": "a remote helper reads push commands",
    "git remote-ext origin 'sh -c rm% y'": "git remote-ext runs a command",
}
"""Lines a construct of point 1 denies that the generated pairs do not cover."""

GRAMMAR_ONLY = {"git -C . send-pack x main"}
"""Lines only pi's program grammars deny: Codex rules compare words literally, so options before
the subcommand defeat them there (as in Codex itself)."""


# ---------------------------------------------------------------------------------------------
# Running lines under real bash, with recording stand-ins for the denied programs
# ---------------------------------------------------------------------------------------------

STANDINS = ("rm", "curl", "wget", "sudo", "dd", "chmod", "git")
"""The denied programs replaced by a recording stand-in (on ``PATH`` and over ``/usr/bin``)."""

_STANDIN = """#!/bin/sh
read -r _ _ _ _ _ sid _ < /proc/$$/stat
printf '\\037%s' "$0" "$@" > "{calls}/${{PI_CASE:-?}}:$sid:$$:{name}"
{then}
"""
"""A stand-in: records its argv in a file of its own, named after the line's number (or, when
the line emptied its environment, the session the line runs in) and the program it stands in
for (a stand-in killed between creating its file and writing it, when its line ends, still
counts as a call of that program)."""

_DRIVER = r"""
import json, os, signal, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

cases = json.load(open(sys.argv[1]))
work = sys.argv[2]
standins = sys.argv[3]


def run(k):
    case = cases[k]
    home = os.path.join(work, str(k))
    os.makedirs(home)
    for name, content in case["files"].items():
        with open(os.path.join(home, name), "w") as f:
            f.write(content)
    env = {"PATH": standins + ":/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
           "PI_CASE": str(k), "TERM": "dumb"}
    proc = subprocess.Popen(["/bin/bash", "-c", case["command"]], cwd=home, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=10)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    return {"marker": os.path.exists(os.path.join(home, "marker")), "timed_out": timed_out,
            "session": proc.pid}


with ThreadPoolExecutor(max_workers=int(sys.argv[4])) as pool:
    results = list(pool.map(run, range(len(cases))))
json.dump(results, open(sys.argv[5], "w"))
"""


@dataclass(frozen=True)
class RunResult:
    """What running a line did: ``marker`` (it created ``marker``), ``timed_out``, and the
    denied programs' stand-ins it called (argv lists)."""

    marker: bool
    timed_out: bool
    calls: tuple[tuple[str, ...], ...]


DEFAULT_FILES = {"y": "", "f": "a[1]\n", "x": "", "setup.sh": "touch marker\n"}
"""Files every case's directory holds (``setup.sh`` is what ``BASH_ENV`` lines source)."""


def run_under_bash(
    lines: list[tuple[str, tuple[str, ...]]], scratch: str, python: str, workers: int = 4
) -> list[RunResult]:
    """Run each ``(command, file names)`` under ``bash -c`` in a directory of its own (holding
    the empty files named, or else :data:`DEFAULT_FILES`), all inside one bubblewrap sandbox with no
    network, its own process tree, and a recording stand-in for each of :data:`STANDINS`
    first on ``PATH`` and bound over ``/usr/bin/NAME``; the stand-in of git records, then runs
    git."""
    import json
    import os
    import subprocess

    standins = os.path.join(scratch, "standins")
    work = os.path.join(scratch, "work")
    calls_dir = os.path.join(scratch, "calls")
    os.makedirs(standins)
    os.makedirs(work)
    os.makedirs(calls_dir)
    binds: list[str] = []
    for name in STANDINS:
        path = os.path.join(standins, name)
        then = 'exec /usr/lib/git-core/git "$@"' if name == "git" else "exit 0"
        with open(path, "w") as f:
            f.write(_STANDIN.format(calls=calls_dir, then=then, name=name))
        os.chmod(path, 0o755)
        if os.path.exists(f"/usr/bin/{name}"):
            binds += ["--ro-bind", path, f"/usr/bin/{name}"]
    cases_file = os.path.join(scratch, "cases.json")
    results_file = os.path.join(scratch, "results.json")
    with open(cases_file, "w") as f:
        json.dump(
            [
                {"command": command, "files": {n: "" for n in files} if files else DEFAULT_FILES}
                for command, files in lines
            ],
            f,
        )
    argv = [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", scratch, scratch,
        *binds,
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--",
        python, "-c", _DRIVER, cases_file, work, standins, str(workers), results_file,
    ]  # fmt: skip
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, timeout=600)
    with open(results_file) as f:
        raw = json.load(f)
    calls: dict[int, list[tuple[str, ...]]] = {}
    sessions = {str(r["session"]): k for k, r in enumerate(raw)}
    for name in sorted(os.listdir(calls_dir)):
        case, session, _, program = name.split(":")
        with open(os.path.join(calls_dir, name), encoding="utf-8", errors="replace") as f:
            argv_ = f.read().split("\x1f")[1:] or [program]  # killed before it wrote
        # the line's number, or (when it emptied its environment) the session it runs in
        key = int(case) if case.isdigit() else sessions.get(session, -1)
        calls.setdefault(key, []).append(tuple(argv_))
    out = [
        RunResult(r["marker"], r["timed_out"], tuple(calls.get(k, ()))) for k, r in enumerate(raw)
    ]
    if -1 in calls:  # a line that emptied the environment: counted against every line
        out = [RunResult(r.marker, r.timed_out, r.calls + tuple(calls[-1])) for r in out]
    return out


SAFE_LINES = [
    # arithmetic on literals, numbers and pi's own environment
    "for ((i=0; i<3; i++)); do echo $i; done",
    "n=5; echo $((n+1))",
    "echo $((2*3)) $[4+5]",
    "[[ $# -eq 0 ]] && echo none",
    "[[ $? -ne 1 ]]",
    "((count++)); echo $count",
    "i=0; while ((i < 3)); do i=$((i+1)); done; echo $i",
    "let 'x = 3 * 4' y++; echo $x $y",
    "declare -i total=0; total+=5; total+=7; echo $total",
    "for i in {1..5}; do echo $((i*i)); done",
    "for i in 1 2 3; do echo $((i + 1)); done",
    "x='a[1]'; a=(7 8); echo $((x))",
    "arr=(a b c); echo ${arr[1]} ${#arr[@]} ${arr[@]:1} ${!arr[@]}",
    "s=hello; echo ${s:1:2} ${s: -3} ${#s}",
    "v=1.2.3; echo $((${v%%.*} + 1))",
    "raw=$(date +%s); now=${raw//[!0-9]/}; echo $((now > 0))",
    "printf -v n '%s' 41; echo $((n + 1))",
    "echo $((RANDOM % 6 + 1)) $((SECONDS >= 0)) $((LINENO))",
    "echo $((HOME == HOME))",
    '[ "$(ls | wc -l)" -gt 0 ] && echo files',
    "test 3 -eq 3",
    # names, reads and traps with literal or harmless text
    'read -r line <<< hello; echo "$line"',
    'while IFS= read -r line; do echo "$line"; done < f',
    'mapfile -t lines < f; echo "${#lines[@]}"',
    "printf -v greeting '%s, %s' hello world; echo \"$greeting\"",
    "unset x; unset 'a[0]'",
    "[[ -v HOME ]] && echo set",
    "getopts ab: opt -a; echo $opt",
    "trap 'echo bye' EXIT",
    "trap - EXIT",
    "cleanup() { echo done; }; trap cleanup EXIT",
    "set -x; echo traced",
    "PS4='+ $LINENO: '; set -x; echo traced",
    'declare -n ref=HOME; echo "$ref"',
    'name=HOME; echo "${!name}"',
    "export PS1='\\u@\\h:\\w\\$ '",
    'x=hi; echo "${x@Q}" "${x@U}"',
    "compgen -W 'start stop status' st",
    "mapfile -C 'echo got' -c 1 l < f",
    "env BASH_FUNC_greet%%='() { echo hi; }' bash -c greet",
    "cat <<EOF\n$((1+2)) ${HOME:0:1}\nEOF",
    "b=([0]=x [1]=y); echo ${b[1]}",
    "declare -A m=([k]=v); m[other]=w; echo ${m[k]}",
]
"""Ordinary shell around the constructs, harmless: every policy allows each line."""
