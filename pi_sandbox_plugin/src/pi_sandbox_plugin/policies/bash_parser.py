"""Every simple command a bash command line would run, found with tree-sitter-bash.

:func:`parse_command_line` parses a command line with the tree-sitter bash grammar and returns,
in source order, one :class:`SimpleCommand` per simple command anywhere in it (pipelines, lists,
subshells, brace groups, ``if``/``while``/``for``/``case`` bodies and conditions, function
bodies, command and process substitutions in words, double quotes, assignments, redirection
targets, here-strings and the bodies of here-docs with an unquoted delimiter) and, for wrappers
that run their arguments (``bash -c``, ``env``, ``sudo``, ``xargs``, ``timeout``, ``find
-exec``, ``ionice``, ``chrt``, ``flock``, ``taskset``, ``script -c``, ``busybox``, ``ssh``,
``parallel``, ``git -c alias.x=!cmd``, ... : :data:`WRAPPERS`), the command they run,
unwrapped recursively. The getopt-style wrappers (:func:`_getopt`) know their options
completely: an option they do not know is undecidable rather than guessed. Words a wrapper
fills in at run time (``xargs``, ``find -exec``'s ``{}``, ``parallel``) are marked on the
:class:`SimpleCommand`. What the policy cannot decide statically (``eval``, a program name
that is not a literal, a shell reading standard input, a line that does not parse, ...)
becomes an :class:`Undecidable` item with the reason.

The words of each command are given after bash's quote removal and escape removal
(:class:`Word`); backslash-newline is removed before parsing, as bash does. Nothing is
evaluated: a word holding an expansion or a substitution has no literal ``value``.

The semantics are those of ``/work/shared/policy/README.md`` (the policy corpus).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter
import tree_sitter_bash

from pi_sandbox_plugin.policies import shell_eval
from pi_sandbox_plugin.policies.grammars import BUILTIN_GRAMMARS

MAX_DEPTH = 12
"""How deeply command strings (``bash -c``, backticks in here-docs, ...) may nest."""

SHELLS = frozenset(
    {"bash", "rbash", "sh", "zsh", "dash", "ksh", "ksh93", "rksh", "mksh", "lksh", "pdksh"}
    | {"oksh", "loksh", "posh", "ash", "yash"}
)
"""Shells whose ``-c`` string is parsed as a command line (the restricted ``rbash`` and
``rksh`` run ``-c`` as the others do)."""

_OWN_EXECUTABLE = re.compile(r"(?:^|/)proc/[^/]+/(?:task/[^/]+/)?exe$")
"""A program path that is a process's own executable (``/proc/self/exe``: in a shell, the
shell itself), whatever its name."""

_DYNAMIC_LOADER = re.compile(r"ld(?:-linux(?:-[\w.-]+)?|64|-musl-[\w.-]+)?\.so(?:\.\d+)*")
"""The dynamic loader's names (``ld-linux-x86-64.so.2``, ``ld.so``, ``ld64.so.2``,
``ld-musl-x86_64.so.1``): run as a program, it runs the program its first operand names."""

_RESERVED = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "}", "in"})

UNDECIDABLE_PROGRAMS = frozenset({"eval", "source", "."})
"""Builtins that run a string or a file as shell code: always undecidable."""

PROGRAM_RUNNERS = frozenset(
    {"perf", "valgrind", "ltrace", "gdb", "lldb", "catchsegv", "setarch", "linux32", "linux64"}
    | {"i386", "x86_64", "uname26", "prlimit", "setpriv", "capsh", "sg", "newgrp", "runcon"}
    | {"bwrap", "firejail", "nsjail", "systemd-nspawn", "ssh-agent", "dbus-launch", "tmux"}
    | {"screen", "start-stop-daemon", "daemonize", "chpst", "numactl", "cgexec", "cpulimit"}
    | {"trickle", "faketime", "torsocks", "xvfb-run", "rlwrap", "entr", "schroot"}
)
"""Programs that start another program or a shell, given with any argument, whose options
this policy does not unwrap: undecidable (``perf stat rm x``, ``valgrind rm x``, ``setarch
x86_64 rm x``, ``sg grp -c 'rm x'``)."""


@dataclass(frozen=True)
class Word:
    """One shell word.

    * ``raw``: the source text.
    * ``value``: the word after quote and escape removal, ``None`` when it is not a literal (it
      holds a parameter expansion, a substitution, arithmetic or a brace expansion).
    * ``prefix``: the literal text before the first non-literal part (``value`` when literal).
    * ``glob``: an unquoted ``*``, ``?`` or ``[...]`` (pathname expansion may change it).
    * ``split``: an unquoted expansion or a brace expansion: at run time the word may become
      several words or none.
    """

    raw: str
    value: str | None
    prefix: str = ""
    glob: bool = False
    split: bool = False

    @property
    def text(self) -> str:
        """``value`` when literal, else ``raw``: what ``pi policy check`` prints."""
        return self.value if self.value is not None else self.raw


@dataclass(frozen=True)
class SimpleCommand:
    """A simple command: its ``words`` (argv, assignments and redirections left out)."""

    words: tuple[Word, ...]
    filled_by: str = ""
    """The wrapper that adds words to this command at run time (``xargs``, ``find``,
    ``parallel``), or ``""``."""
    appends: bool = False
    """``filled_by`` appends words after the last one (``xargs`` without ``-I``)."""
    placeholder: str = ""
    """A word holding this text is replaced at run time (``{}`` of ``find -exec``)."""

    @property
    def argv(self) -> list[str]:
        """The words as text (``Word.text``)."""
        return [w.text for w in self.words]

    @property
    def program(self) -> str | None:
        """The basename of argv[0] when it is a literal without glob characters, else ``None``."""
        first = self.words[0]
        if first.value is None or first.glob:
            return None
        return basename(first.value)


@dataclass(frozen=True)
class Undecidable:
    """Something the policy cannot decide statically; ``reason`` says what."""

    reason: str


Item = SimpleCommand | Undecidable


@dataclass
class ParseResult:
    """What :func:`parse_command_line` found, in source order."""

    items: list[Item] = field(default_factory=list)

    @property
    def commands(self) -> list[SimpleCommand]:
        """Every simple command (wrappers and what they run both count)."""
        return [i for i in self.items if isinstance(i, SimpleCommand)]

    @property
    def undecidable(self) -> list[Undecidable]:
        """Every undecidable part."""
        return [i for i in self.items if isinstance(i, Undecidable)]


def basename(path: str) -> str:
    """The last ``/``-separated part of ``path`` (``/bin/rm`` -> ``rm``)."""
    return path.rsplit("/", 1)[-1]


# ---------------------------------------------------------------------------------------------
# Words: quote removal, escape removal, ANSI-C strings
# ---------------------------------------------------------------------------------------------

_NAME_START = re.compile(r"[A-Za-z_0-9{(\[@*#?!$-]")
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


class _NotLiteral(Exception):
    def __init__(self, split: bool) -> None:
        self.split = split


class _BadWord(Exception):
    pass


def _ansi_c(raw: str, i: int) -> tuple[str, int]:
    """Decode ``$'...'`` whose opening quote is at ``raw[i]``; returns (text, index after)."""
    out: list[str] = []
    j = i + 1
    n = len(raw)
    while j < n:
        c = raw[j]
        if c == "'":
            return "".join(out), j + 1
        if c != "\\" or j + 1 >= n:
            out.append(c)
            j += 1
            continue
        e = raw[j + 1]
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            j += 2
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", raw[j + 1 :])
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            j += 1 + len(m.group())
        elif e in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(f"[0-9A-Fa-f]{{1,{size}}}", raw[j + 2 :])
            if m is None:
                out.append("\\" + e)
                j += 2
            else:
                out.append(chr(int(m.group(), 16)))
                j += 2 + len(m.group())
        elif e == "c" and j + 2 < n:
            out.append(chr(ord(raw[j + 2]) & 0x1F))
            j += 3
        else:
            out.append("\\" + e)
            j += 2
    raise _BadWord("unterminated $'...' string")


def _double_quoted(raw: str, i: int, out: list[str]) -> int:
    """Append the content of the double-quoted string opening at ``raw[i]``; index after it."""
    j = i + 1
    n = len(raw)
    while j < n:
        c = raw[j]
        if c == '"':
            return j + 1
        if c == "\\" and j + 1 < n and raw[j + 1] in '$`"\\\n':
            if raw[j + 1] != "\n":
                out.append(raw[j + 1])
            j += 2
            continue
        if c == "`" or (c == "$" and j + 1 < n and _NAME_START.match(raw[j + 1])):
            raise _NotLiteral(split=False)
        out.append(c)
        j += 1
    raise _BadWord("unterminated double quote")


def scan_word(raw: str) -> Word:
    """A :class:`Word` from its source text (quote removal, escapes, ``$'...'``, globs)."""
    out: list[str] = []
    glob = False
    parens = 0  # unquoted parentheses open: <(...), a=(...), @(...)
    i = 0
    n = len(raw)
    try:
        while i < n:
            c = raw[i]
            if c == "\\":
                if i + 1 < n:
                    if raw[i + 1] != "\n":
                        out.append(raw[i + 1])
                    i += 2
                else:
                    out.append(c)
                    i += 1
            elif c == "'":
                j = raw.find("'", i + 1)
                if j < 0:
                    raise _BadWord("unterminated single quote")
                out.append(raw[i + 1 : j])
                i = j + 1
            elif c == "$" and raw.startswith("$'", i):
                text, i = _ansi_c(raw, i + 1)
                out.append(text)
            elif c == "$" and raw.startswith('$"', i):
                i = _double_quoted(raw, i + 1, out)
            elif c == '"':
                i = _double_quoted(raw, i, out)
            elif c == "`" or (c == "$" and i + 1 < n and _NAME_START.match(raw[i + 1])):
                raise _NotLiteral(split=True)
            elif c in " \t\n" and parens <= 0:
                # outside parentheses (<(...), a=(...), @(...)) bash ends a word at a blank:
                # tree-sitter-bash read the line otherwise (`declare $ y=1`)
                raise _BadWord("a word holding an unquoted blank")
            elif c in "*?":
                glob = True
                out.append(c)
                i += 1
            elif c == "[":
                if "]" in raw[i + 1 :]:
                    glob = True
                out.append(c)
                i += 1
            elif c == "{":
                close = raw.find("}", i + 1)
                if close > 0 and ("," in raw[i + 1 : close] or ".." in raw[i + 1 : close]):
                    raise _NotLiteral(split=True)
                out.append(c)
                i += 1
            else:
                parens += {"(": 1, ")": -1}.get(c, 0)
                out.append(c)
                i += 1
    except _NotLiteral as e:
        return Word(raw=raw, value=None, prefix="".join(out), glob=glob, split=e.split)
    value = "".join(out)
    return Word(raw=raw, value=value, prefix=value, glob=glob)


# ---------------------------------------------------------------------------------------------
# Wrappers: the command a wrapper runs
# ---------------------------------------------------------------------------------------------

Runs = list[Word] | str | Undecidable | None
"""What a wrapper runs: argv words, a command line to parse, undecidable, or nothing."""


def _not_literal(words: list[Word], i: int, wrapper: str) -> Undecidable:
    return Undecidable(
        f"the command run by {wrapper} is not a literal: {words[i].raw}"
        if i < len(words)
        else f"{wrapper}: cannot tell what it runs"
    )


def _skip_options(
    words: list[Word],
    wrapper: str,
    *,
    short_arg: str = "",
    long_arg: frozenset[str] = frozenset(),
    stop_at_digits: bool = False,
) -> int | Undecidable:
    """Index of the first operand after the options of ``words[0]`` (a getopt-style wrapper).

    ``short_arg``: option letters taking an argument (attached or the next word);
    ``long_arg``: long options taking an argument when not given with ``=``. ``--`` ends the
    options. A word that is not a literal where an option may be ends the options when it cannot
    be one (``"$X"``, ``./$X``); otherwise (``$X``, ``-$X``) it is undecidable.
    """
    i = 1
    while i < len(words):
        w = words[i]
        if w.value is None:
            if w.prefix.startswith("-") and "=" in w.prefix:
                i += 1
                continue
            if _is_script_path(w):
                return i
            return _not_literal(words, i, wrapper)
        v = w.value
        if v == "--":
            return i + 1
        if v.startswith("--"):
            i += 2 if ("=" not in v and v[2:] in long_arg) else 1
            continue
        if v.startswith("-") and len(v) > 1:
            if stop_at_digits and v[1:].isdigit():
                i += 1
                continue
            i += 1
            for k, ch in enumerate(v[1:], start=1):
                if ch in short_arg:
                    if k == len(v) - 1:
                        i += 1
                    break
            continue
        return i
    return i


def _cluster_letters(words: list[Word], end: int) -> set[str]:
    letters: set[str] = set()
    for w in words[1:end]:
        if w.value and w.value.startswith("-") and not w.value.startswith("--"):
            letters.update(w.value[1:])
    return letters


def _rest(words: list[Word], start: int | Undecidable) -> Runs:
    if isinstance(start, Undecidable):
        return start
    return words[start:] or None


def _shell(words: list[Word]) -> Runs:
    name = basename(words[0].text)
    i = 1
    has_c = False
    stdin = False
    while i < len(words):
        w = words[i]
        if w.value is None:
            if has_c:
                return Undecidable(f"the {name} -c string is not a literal: {w.raw}")
            if w.raw.startswith(("<(", ">(")):
                return Undecidable(f"{name} runs the output of a process substitution: {w.raw}")
            if _is_script_path(w):
                return None
            return Undecidable(f"an argument of {name} is not a literal: {w.raw}")
        v = w.value
        if v in ("--", "-"):
            i += 1
            break
        if v.startswith("--"):
            if v in ("--version", "--help"):
                return None
            i += 2 if v in ("--rcfile", "--init-file") else 1
            continue
        if len(v) > 1 and v[0] in "-+":
            i += 1
            for ch in v[1:]:
                if ch == "c":
                    has_c = True
                elif ch == "s":
                    stdin = True
                elif ch in "oO":
                    i += 1
            continue
        break
    operands = words[i:]
    if stdin:
        return Undecidable(f"{name} -s reads its commands from standard input")
    if has_c:
        if not operands:
            return Undecidable(f"{name} -c without a command string")
        if operands[0].value is None:
            return Undecidable(f"the {name} -c string is not a literal: {operands[0].raw}")
        return operands[0].value
    if not operands:
        return Undecidable(f"{name} without -c or a script reads its commands from standard input")
    if operands[0].raw.startswith(("<(", ">(")):
        return Undecidable(f"{name} runs the output of a process substitution: {operands[0].raw}")
    if operands[0].value is not None and _STREAM.search(_normal_path(operands[0].value)):
        return Undecidable(f"{name} reads its script from a stream: {operands[0].value}")
    if operands[0].value is None and not _is_script_path(operands[0]):
        return Undecidable(f"the script run by {name} is not a literal: {operands[0].raw}")
    return None


_STREAM = re.compile(r"(?:^|/)(?:dev/(?:stdin|tty|fd/\d+)|proc/[^/]+/(?:task/[^/]+/)?fd/\d+)$")
"""A path that names a stream rather than a file: standard input, a file descriptor, the
terminal (``bash /dev/stdin <<< 'rm x'`` runs what the here-string holds)."""


def _normal_path(path: str) -> str:
    """``path`` with repeated slashes and ``.`` components taken out (``//dev/./stdin``)."""
    return posixpath.normpath(re.sub("/+", "/", path))


def _is_script_path(word: Word) -> bool:
    """A shell operand that names a script file whatever it expands to: a process
    substitution (``<(...)``), a literal start that is not an option (``./$X.sh``), or a quoted
    expansion (``"$SCRIPT"``)."""
    if word.raw.startswith(("<(", ">(")):
        return True
    if word.prefix:
        return not word.prefix.startswith("-")
    return not word.split


_ENV_LONG_VALUES = frozenset({"unset", "chdir", "argv0"})
_ENV_LONG_FLAGS = frozenset(
    {"ignore-environment", "null", "debug", "list-signal-handling", "help", "version"}
)
_ENV_LONG_OPTIONAL = frozenset({"block-signal", "default-signal", "ignore-signal"})
"""GNU env's long options: with a value (also as the next word), without, and with an optional
value (only as ``--NAME=VALUE``)."""


def _env(words: list[Word]) -> Runs:
    i = 1
    while i < len(words):
        w = words[i]
        if w.value is None:
            if "=" in w.prefix:
                i += 1
                continue
            return _not_literal(words, i, "env")
        v = w.value
        if v == "--":
            i += 1
            break
        if v in ("-S", "--split-string") or v.startswith(("--split-string=", "-S")):
            return Undecidable("env -S splits a string the policy does not parse")
        if v.startswith("--"):
            name = v[2:].split("=", 1)[0]
            if name in _ENV_LONG_VALUES:
                i += 1 if "=" in v else 2
            elif name in _ENV_LONG_FLAGS or name in _ENV_LONG_OPTIONAL:
                i += 1
            else:
                return Undecidable(f"{v} is an option of env the policy does not know")
            continue
        if v.startswith("-") and len(v) > 1:
            i += 1
            for k, ch in enumerate(v[1:], start=1):
                if ch == "S":
                    return Undecidable("env -S splits a string the policy does not parse")
                if ch in "uCPa":  # -P ALTPATH (BSD), -a ARGV0 (GNU): the value follows
                    if k == len(v) - 1:
                        i += 1
                    break
                if ch not in "i0v":
                    return Undecidable(f"env -{ch} is an option the policy does not know")
            continue
        if v == "-":
            i += 1
            continue
        if "=" in v:
            i += 1
            continue
        break
    while i < len(words) and (
        (words[i].value is not None and "=" in words[i].value)  # type: ignore[operator]
        or (words[i].value is None and "=" in words[i].prefix)
    ):
        i += 1
    return words[i:] or None


def _environment_words(words: list[Word]) -> list[str]:
    """The ``NAME=VALUE`` words (as source text) ``env``, ``sudo``, ``systemd-run`` (``-E``,
    ``--setenv``) or ``ssh`` (``-o SetEnv=``) put in the environment of what they run."""
    name = basename(words[0].text)
    if name in ("systemd-run", "ssh"):
        return _option_environment(words, name)
    run = _env(words) if name == "env" else _sudo(words)
    end = len(words) - len(run) if isinstance(run, list) else len(words)
    out: list[str] = []
    for w in words[1:end]:
        text = w.value if w.value is not None else w.prefix
        if "=" in text and not text.startswith("-"):
            out.append(w.raw)
    return out


def _option_environment(words: list[Word], name: str) -> list[str]:
    """``systemd-run -E NAME=VALUE`` (``--setenv``) and ``ssh -o SetEnv=NAME=VALUE`` words."""
    out: list[str] = []
    for k, w in enumerate(words[1:], start=1):
        v = w.value if w.value is not None else w.prefix
        following = words[k + 1].raw if k + 1 < len(words) else ""
        if name == "systemd-run":
            if v in ("-E", "--setenv"):
                out.append(following)
            elif v.startswith("--setenv="):
                out.append(w.raw.split("=", 1)[1])
            elif v.startswith("-E") and len(v) > 2:
                out.append(w.raw[2:])
            continue
        setting = following if v == "-o" else w.raw[2:] if v.startswith("-o") else ""
        m = re.match(r"""(['"]?)setenv[\s=]+""", setting, re.IGNORECASE)
        if m is not None:
            out.append(m.group(1) + setting[m.end() :])
    return out


_XARGS_LONG = frozenset(
    {"max-args", "max-procs", "delimiter", "max-chars", "arg-file", "process-slot-var"}
)


@dataclass(frozen=True)
class _Fill:
    """How a wrapper adds words to the command it runs (see :class:`SimpleCommand`)."""

    by: str
    appends: bool
    placeholder: str


def _xargs_fill(words: list[Word]) -> _Fill:
    """xargs appends the words it reads, or with ``-I R`` / ``-i[R]`` / ``--replace[=R]``
    replaces ``R`` in its command's words."""
    k = 1
    while k < len(words):
        v = words[k].value or ""
        k += 1
        if not v.startswith("-") or v in ("-", "--"):
            break
        if v.startswith("--"):
            name, eq, value = v[2:].partition("=")
            if name == "replace":
                return _Fill("xargs", False, value or "{}")
            if name in _XARGS_LONG and not eq:
                k += 1
            continue
        for j, ch in enumerate(v[1:], start=2):
            if ch == "i":
                return _Fill("xargs", False, v[j:] or "{}")
            if ch in "nLPIdEsa":
                value = v[j:]
                if not value and k < len(words):
                    value = words[k].value or "{}"
                    k += 1
                if ch == "I":
                    return _Fill("xargs", False, value or "{}")
                break
    return _Fill("xargs", True, "")


def _xargs(words: list[Word]) -> Runs:
    start = _skip_options(words, "xargs", short_arg="nLPIdEsa", long_arg=_XARGS_LONG)
    if isinstance(start, Undecidable):
        return start
    return words[start:] or [Word(raw="echo", value="echo", prefix="echo")]


def _nice(words: list[Word]) -> Runs:
    return _rest(
        words,
        _skip_options(
            words, "nice", short_arg="n", long_arg=frozenset({"adjustment"}), stop_at_digits=True
        ),
    )


def _plain(name: str, short_arg: str = "", long_arg: frozenset[str] = frozenset()) -> Wrapper:
    def run(words: list[Word]) -> Runs:
        return _rest(words, _skip_options(words, name, short_arg=short_arg, long_arg=long_arg))

    return run


def _timeout(words: list[Word]) -> Runs:
    start = _skip_options(
        words, "timeout", short_arg="sk", long_arg=frozenset({"signal", "kill-after"})
    )
    if isinstance(start, Undecidable):
        return start
    return words[start + 1 :] or None


def _command(words: list[Word]) -> Runs:
    start = _skip_options(words, "command")
    if isinstance(start, Undecidable):
        return start
    if _cluster_letters(words, start) & {"v", "V"}:
        return None
    return words[start:] or None


def _sudo(words: list[Word]) -> Runs:
    start = _skip_options(
        words,
        "sudo",
        short_arg="ugpCDrtTUR",
        long_arg=frozenset(
            {"user", "group", "prompt", "close-from", "chdir", "role", "type"}
            | {"command-timeout", "other-user", "host"}
        ),
    )
    if isinstance(start, Undecidable):
        return start
    letters = _cluster_letters(words, start)
    longs = {w.value for w in words[1:start] if w.value and w.value.startswith("--")}
    i = start
    while i < len(words) and words[i].value is not None and "=" in words[i].text:
        i += 1
    if i < len(words):
        return words[i:]
    if letters & {"s", "i"} or longs & {"--shell", "--login"}:
        return Undecidable("sudo -s / -i without a command starts a shell reading standard input")
    return None


def _doas(words: list[Word]) -> Runs:
    start = _skip_options(words, "doas", short_arg="uC")
    if isinstance(start, Undecidable):
        return start
    if start < len(words):
        return words[start:]
    if "s" in _cluster_letters(words, start):
        return Undecidable("doas -s starts a shell reading standard input")
    return None


def _su(words: list[Word]) -> Runs:
    i = 1
    while i < len(words):
        w = words[i]
        if w.value is None:
            return Undecidable(f"an argument of su is not a literal: {w.raw}")
        v = w.value
        if v in ("-c", "--command") or v.startswith(("--command=", "-c")):
            if v in ("-c", "--command"):
                if i + 1 >= len(words):
                    return Undecidable("su -c without a command string")
                s = words[i + 1]
                if s.value is None:
                    return Undecidable(f"the su -c string is not a literal: {s.raw}")
                return s.value
            return v.split("=", 1)[1] if v.startswith("--") else v[2:]
        i += 1
    return Undecidable("su without -c starts a shell reading standard input")


def _exec(words: list[Word]) -> Runs:
    return _rest(words, _skip_options(words, "exec", short_arg="a"))


def _time(words: list[Word]) -> Runs:
    return _rest(
        words,
        _skip_options(words, "time", short_arg="of", long_arg=frozenset({"output", "format"})),
    )


def _watch(words: list[Word]) -> Runs:
    start = _skip_options(
        words, "watch", short_arg="nq", long_arg=frozenset({"interval", "equexit"})
    )
    if isinstance(start, Undecidable):
        return start
    rest = words[start:]
    if not rest:
        return None
    longs = {w.value for w in words[1:start]}
    if "x" in _cluster_letters(words, start) or "--exec" in longs:
        return rest
    if any(w.value is None for w in rest):
        return Undecidable("the command run by watch is not a literal")
    return " ".join(w.value or "" for w in rest)


def _chroot(words: list[Word]) -> Runs:
    start = _skip_options(words, "chroot", long_arg=frozenset({"userspec", "groups"}))
    if isinstance(start, Undecidable):
        return start
    if start >= len(words):
        return None
    if start + 1 >= len(words):
        return Undecidable("chroot without a command starts a shell reading standard input")
    return words[start + 1 :]


def _trap(words: list[Word]) -> Runs:
    start = _skip_options(words, "trap")
    if isinstance(start, Undecidable):
        return start
    operands = words[start:]
    if len(operands) < 2:
        return None
    action = operands[0]
    if action.value is None:
        return None  # judged from its possible values (policies.shell_eval)
    return None if action.value == "-" else action.value


def _find(words: list[Word]) -> list[Runs]:
    runs: list[Runs] = []
    i = 1
    while i < len(words):
        v = words[i].value
        if v in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words):
                wv = words[j].value
                if wv == ";" or (wv == "+" and words[j - 1].value == "{}" and j > i + 1):
                    break
                j += 1
            if j >= len(words):
                runs.append(Undecidable(f"find {v} without its terminating ';' or '+'"))
                return runs
            runs.append(words[i + 1 : j] or Undecidable(f"find {v} without a command"))
            i = j + 1
            continue
        i += 1
    return runs


# --- getopt-style wrappers that fail closed on options they do not know -----


@dataclass(frozen=True)
class _Spec:
    """The options of a wrapper: ``flags`` / ``values`` are short option letters without /
    with a required value; ``optional`` letters take a value only when attached (``-m[file]``);
    ``long_flags`` / ``long_values`` / ``long_optional`` the same for long options (an
    unambiguous prefix of a long option is that option, as getopt_long reads it)."""

    flags: str = ""
    values: str = ""
    optional: str = ""
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()


def _spec(
    flags: str = "",
    values: str = "",
    optional: str = "",
    long_flags: str = "",
    long_values: str = "",
    long_optional: str = "",
) -> _Spec:
    return _Spec(
        flags,
        values,
        optional,
        frozenset(long_flags.split()),
        frozenset(long_values.split()),
        frozenset(long_optional.split()),
    )


_Seen = dict[str, Word | None]
"""Options seen, by letter or long name: the value word, or ``None`` for a flag."""


def _long_name(spec: _Spec, given: str) -> str | None:
    names = spec.long_flags | spec.long_values | spec.long_optional
    if given in names:
        return given
    matches = [n for n in names if n.startswith(given)]
    return matches[0] if len(matches) == 1 else None


def _getopt(
    words: list[Word], name: str, spec: _Spec, start: int = 1
) -> tuple[int, _Seen] | Undecidable:
    """Index of the first operand after the options of ``words[start - 1]`` and the options
    seen; an option ``spec`` does not know, or one that is not a literal, is undecidable (the
    policy cannot tell whether it takes the next word). ``--`` ends the options."""
    seen: _Seen = {}
    i = start
    while i < len(words):
        w = words[i]
        if w.value is None:
            if _is_script_path(w):
                return i, seen
            return Undecidable(f"an option of {name} is not a literal: {w.raw}")
        v = w.value
        if v == "--":
            return i + 1, seen
        if v.startswith("--"):
            given, eq, attached = v[2:].partition("=")
            long = _long_name(spec, given)
            if long is None:
                return Undecidable(f"{v} is an option of {name} the policy does not know")
            if long in spec.long_values and not eq:
                if i + 1 >= len(words):
                    return Undecidable(f"{name} {v} without its value")
                seen[long] = words[i + 1]
                i += 2
                continue
            seen[long] = Word(raw=attached, value=attached, prefix=attached) if eq else None
            i += 1
            continue
        if v.startswith("-") and len(v) > 1:
            i += 1
            for k, ch in enumerate(v[1:], start=1):
                rest = v[k + 1 :]
                if ch in spec.flags:
                    seen[ch] = None
                elif ch in spec.optional:
                    seen[ch] = Word(raw=rest, value=rest, prefix=rest) if rest else None
                    break
                elif ch in spec.values:
                    if rest:
                        seen[ch] = Word(raw=rest, value=rest, prefix=rest)
                    elif i < len(words):
                        seen[ch] = words[i]
                        i += 1
                    else:
                        return Undecidable(f"{name} -{ch} without its value")
                    break
                else:
                    return Undecidable(f"-{ch} is an option of {name} the policy does not know")
            continue
        return i, seen
    return i, seen


def _getopt_permuted(
    words: list[Word], name: str, spec: _Spec
) -> tuple[list[Word], _Seen] | Undecidable:
    """:func:`_getopt` for a program whose getopt permutes (options may follow operands, as
    in ``su bob -c CMD``): the operands and the options seen."""
    operands: list[Word] = []
    seen: _Seen = {}
    i = 1
    while True:
        got = _getopt(words, name, spec, i)
        if isinstance(got, Undecidable):
            return got
        j, found = got
        seen.update(found)
        if j >= len(words):
            return operands, seen
        if j > i and words[j - 1].value == "--":
            return [*operands, *words[j:]], seen
        operands.append(words[j])
        i = j + 1


def _string(word: Word | None, what: str) -> str | Undecidable:
    if word is None or word.value is None:
        return Undecidable(f"{what} is not a literal: {word.raw if word else ''}")
    return word.value


def _ionice(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "ionice",
        _spec(
            "t",
            "cnpPu",
            long_flags="ignore help version",
            long_values="class classdata pid pgid uid",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"p", "P", "u", "pid", "pgid", "uid"}:
        return None  # changes running processes
    return words[i:] or None


def _chrt(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "chrt",
        _spec(
            "abdfiormRpvhV",
            "TPD",
            long_flags="all-tasks batch deadline fifo idle other rr reset-on-fork max pid "
            "verbose help version",
            long_values="sched-runtime sched-period sched-deadline",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"p", "pid", "m", "max", "h", "help", "V", "version"}:
        return None
    return words[i + 1 :] or None  # after the priority


def _flock(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "flock",
        _spec(
            "sexunoFhV",
            "wEc",
            long_flags="shared exclusive unlock nonblock nb close no-fork verbose help version",
            long_values="timeout wait conflict-exit-code command",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    for key in ("c", "command"):
        if key in seen:
            return _string(seen[key], "the flock -c string")
    rest = words[i + 1 :]  # after the lock file (or descriptor)
    if rest and rest[0].value in ("-c", "--command"):
        if len(rest) < 2:
            return Undecidable("flock -c without a command string")
        return _string(rest[1], "the flock -c string")
    return rest or None


def _taskset(words: list[Word]) -> Runs:
    got = _getopt(
        words, "taskset", _spec("acphV", long_flags="all-tasks cpu-list pid help version")
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"p", "pid", "h", "help", "V", "version"}:
        return None
    return words[i + 1 :] or None  # after the mask or CPU list


def _script(words: list[Word]) -> Runs:
    got = _getopt_permuted(
        words,
        "script",
        _spec(
            "aefqhV",
            "cEIOBTm",
            "t",
            long_flags="append return flush force quiet help version",
            long_values="command echo log-in log-out log-io log-timing logging-format output-limit",
            long_optional="timing",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    operands, seen = got
    for key in ("c", "command"):
        if key in seen:
            return _string(seen[key], "the script -c string")
    if seen.keys() & {"h", "help", "V", "version"}:
        return None
    if len(operands) > 1:
        return operands[1:]  # BSD script: script [file [command ...]]
    return Undecidable("script without -c starts a shell reading standard input")


def _busybox(words: list[Word]) -> Runs:
    if len(words) < 2 or (words[1].value or "").startswith("-"):
        return None  # --list, --install, --help
    return words[1:]  # the applet, run like the program of that name


def _runuser(words: list[Word]) -> Runs:
    got = _getopt_permuted(
        words,
        "runuser",
        _spec(
            "lmpPfh",
            "ugGcsw",
            long_flags="login preserve-environment pty fast help version",
            long_values="user group supp-group command session-command shell whitelist-environment",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    operands, seen = got
    for key in ("c", "command", "session-command"):
        if key in seen:
            return _string(seen[key], "the runuser -c string")
    if seen.keys() & {"u", "user"}:
        if operands:
            return operands
        return Undecidable("runuser -u without a command starts a shell reading standard input")
    if seen.keys() & {"h", "help", "version"}:
        return None
    return Undecidable("runuser without -c starts a shell reading standard input")


_NAMESPACES = "mount uts ipc net pid user cgroup time"


def _nsenter(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "nsenter",
        _spec(
            "aFZhV",
            "tSGN",
            "muinpUCTrw",
            long_flags="all follow-context preserve-credentials no-fork keep-caps help version "
            "join-cgroup",
            long_values="target setuid setgid net-socket user-parent env",
            long_optional=f"{_NAMESPACES} root wd wdns",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"h", "help", "V", "version"}:
        return None
    return words[i:] or Undecidable("nsenter without a program starts a shell")


def _unshare(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "unshare",
        _spec(
            "frchV",
            "RwSGl",
            "muinpUCT",
            long_flags="fork map-root-user map-current-user map-auto keep-caps help version",
            long_values="map-user map-group map-users map-groups propagation setgroups root wd "
            "setuid setgid load-interp monotonic boottime owner",
            long_optional=f"{_NAMESPACES} kill-child mount-proc mount-binfmt",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"h", "help", "V", "version"}:
        return None
    return words[i:] or Undecidable("unshare without a program starts a shell")


_SSH_COMMAND_OPTIONS = ("proxycommand", "localcommand", "knownhostscommand", "remotecommand")
"""``-o`` options of ssh whose value a shell runs (locally, or remotely for RemoteCommand)."""


def _ssh_local_commands(options: list[Word]) -> Runs:
    """The commands of ``-o ProxyCommand=...`` (and the like) among ssh's options (``-o
    Key=Value``, ``-o "Key Value"``, ``-oKey=Value``), one per line; ``None`` without one."""
    commands: list[str] = []
    for k, w in enumerate(options):
        v = w.value
        if v == "-o" and k + 1 < len(options):
            setting = options[k + 1]
        elif v is not None and v.startswith("-o") and len(v) > 2:
            setting = Word(raw=v[2:], value=v[2:], prefix=v[2:])
        else:
            continue
        if setting.value is None:
            if setting.prefix.lower().startswith(_SSH_COMMAND_OPTIONS) or not setting.prefix:
                return Undecidable(f"the ssh option {setting.raw} is not a literal")
            continue
        m = re.match(r"\s*([A-Za-z]+)\s*(?:=\s*|\s+)(.*)", setting.value, re.DOTALL)
        if m and m.group(1).lower() in _SSH_COMMAND_OPTIONS and m.group(2).lower() != "none":
            commands.append(m.group(2))
    return "\n".join(commands) if commands else None


_SSH = _spec("46AaCfGgKkMNnqsTtVvXxYy", "BbcDEeFIiJLlmOoPpQRSWw")


def _ssh(words: list[Word]) -> Runs:
    got = _getopt(words, "ssh", _SSH)
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    end = i
    if i < len(words):
        # ssh reads options after the destination too (ssh host -p 22 cmd)
        again = _getopt(words, "ssh", _SSH, i + 1)
        if isinstance(again, Undecidable):
            return again
        end, more = again
        seen.update(more)
    local = _ssh_local_commands([w for k, w in enumerate(words[1:end], 1) if k != i])
    if local is not None:
        return local
    if i >= len(words) or seen.keys() & {"V", "G", "O"}:
        return None  # no connection, or a control command
    remote = words[end:]
    if not remote:
        if seen.keys() & {"N", "s", "W"}:
            return None
        return Undecidable("ssh without a command starts a remote shell reading standard input")
    if "s" in seen:
        return None  # a subsystem name, not a command
    if any(w.value is None for w in remote):
        return Undecidable("the remote command of ssh is not a literal")
    return " ".join(w.value or "" for w in remote)  # the remote shell parses it


_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})


def _parallel(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "parallel",
        _spec(
            "0kmqruvXxtphV",
            "aCdEIjLNnPSsW",
            "eil",
            long_flags="keep-order group ungroup line-buffer lb null tag verbose dry-run bar "
            "progress eta no-notice will-cite quote no-run-if-empty pipe pipepart xargs "
            "citation version help semaphore fg bg shuf plus files nonall onall cleanup "
            "transfer halt-on-error",
            long_values="arg-file colsep delimiter eof replace jobs max-lines max-args "
            "max-replace-args max-procs sshlogin max-chars workdir wd joblog results res "
            "tmpdir tempdir delay timeout retries env tag-string tagstring halt memfree load "
            "nice basefile bf return transfer-file tf sshloginfile slf termseq header block "
            "block-size rpl limit id semaphorename",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    command: list[Word] = []
    for w in words[i:]:
        if w.value in _PARALLEL_SEPARATORS:
            break
        command.append(w)
    if not command:
        if seen.keys() & {"h", "help", "V", "version", "citation"}:
            return None
        return Undecidable("parallel without a command runs its arguments as commands")
    if any(w.value is None for w in command):
        return Undecidable("the command run by parallel is not a literal")
    template = " ".join(w.value or "" for w in command)  # run by a shell
    # without a replacement string, parallel appends its arguments
    return template if "{" in template else template + " {}"


def _fakeroot(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "fakeroot",
        _spec("uhv", "lisb", long_flags="unknown-is-real help version", long_values="lib faked"),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"h", "help", "v", "version"}:
        return None
    return words[i:] or Undecidable("fakeroot without a command starts a shell")


def _strace(words: list[Word]) -> Runs:
    got = _getopt(words, "strace", _spec("cCdDfFhiknqrtTvVwxyzZ", "abeEIoOpPsSuUX"))
    if isinstance(got, Undecidable):
        return got
    i, _ = got
    return words[i:] or None  # -p PID: traces a running process


def _systemd_run(words: list[Word]) -> Runs:
    got = _getopt(
        words,
        "systemd-run",
        _spec(
            "dtPqGrhS",
            "upEHM",
            long_flags="user system scope wait no-block no-ask-password send-sighup "
            "slice-inherit pty pipe quiet collect remain-after-exit same-dir shell help "
            "version ignore-failure background",
            long_values="unit property setenv host machine description slice service-type "
            "uid gid nice working-directory on-active on-boot on-startup on-unit-active "
            "on-unit-inactive on-calendar path-property socket-property timer-property "
            "expand-environment json",
        ),
    )
    if isinstance(got, Undecidable):
        return got
    i, seen = got
    if seen.keys() & {"S", "shell"}:
        return Undecidable("systemd-run --shell starts a shell reading standard input")
    if seen.keys() & {"h", "help", "version"}:
        return None
    return words[i:] or None


FOREIGN_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh", "powershell"})
"""Shells whose language is not bash's: a command string they run is undecidable."""


def _foreign_shell(words: list[Word]) -> Runs:
    name = basename(words[0].text)
    operands = 0
    for w in words[1:]:
        v = w.value
        if v is None:
            return Undecidable(f"an argument of {name} is not a literal: {w.raw}")
        low = v.lower()
        if low.startswith("-") and (
            re.fullmatch(r"-[a-z]*c", low)
            or low.startswith(("--command", "-command", "-encodedcommand", "-ec", "-e"))
        ):
            return Undecidable(
                f"{name} runs a command string in a language the policy does not parse"
            )
        if not v.startswith("-"):
            operands += 1
    if operands == 0:
        return Undecidable(f"{name} without a script reads its commands from standard input")
    return None  # a script file: not inspected


_PYTHON = re.compile(r"python[0-9.]*")


def _python(words: list[Word]) -> Runs:
    """``python -m pip ...`` runs pip (``-m`` ends python's options); other code (``-c``,
    ``-m MODULE``, a script) is out of scope."""
    i = 1
    while i < len(words):
        v = words[i].value
        if v is None or not v.startswith("-") or v == "-" or v.startswith(("-c", "--")):
            return None
        if v in ("-m", "-W", "-X"):
            if v == "-m" and i + 1 < len(words) and words[i + 1].value in ("pip", "pip3"):
                return words[i + 1 :]
            if v == "-m":
                return None
            i += 2
            continue
        if v.startswith("-m"):
            if v[2:] in ("pip", "pip3"):
                return [Word(raw=v[2:], value=v[2:], prefix=v[2:]), *words[i + 1 :]]
            return None
        i += 1
    return None


_GIT_COMMAND_KEYS = re.compile(
    r"core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy)|sequence\.editor"
    r"|diff\.external|gpg\.(.+\.)?program|pager\..+|diff\..+\.(textconv|command)"
    r"|merge\..+\.driver|filter\..+\.(clean|smudge|process)|remote\..+\.(uploadpack|receivepack)"
    r"|uploadpack\.packobjectshook|interactive\.difffilter|web\.browser|browser\..+\.cmd"
    r"|man\..+\.cmd|(merge|diff)tool\..+\.cmd|sendemail\.(sendmailcmd|tocmd|cccmd)"
    r"|credential(\..+)?\.helper|core\.hookspath"
)
"""Configuration keys whose value git runs as a command (through the shell)."""


def _git_runs_key(key: str) -> bool:
    """Whether git runs the value of the configuration ``key`` as a command (or, for an
    alias, as git's arguments)."""
    name = key.lower()
    return (
        name.startswith(("alias.", "include.", "includeif."))
        or _GIT_COMMAND_KEYS.fullmatch(name) is not None
    )


def _git_setting(setting: str) -> Runs:
    key, eq, value = setting.partition("=")
    name = key.lower()
    if name == "include.path" or (name.startswith("includeif.") and name.endswith(".path")):
        return Undecidable(f"git -c {key} loads settings the policy cannot see")
    if name in ("protocol.allow", "protocol.ext.allow") and value.lower() in ("always", "user"):
        return Undecidable(f"git -c {key}={value} lets ext:: addresses run commands")
    if name.startswith("alias."):
        if not eq:
            return None
        if value.startswith("!"):
            return value[1:]  # a shell alias
        return f"git {value}"  # an alias of git's own commands
    if not _GIT_COMMAND_KEYS.fullmatch(name) or not eq or not value:
        return None
    if value.lower() in ("true", "false", "yes", "no", "on", "off", "0", "1"):
        return None
    if name == "core.hookspath":
        return Undecidable(f"git -c {key} runs the hooks of another directory")
    if name.endswith(".helper") and not value.startswith("!") and " " not in value:
        return None  # a helper program (git credential-NAME)
    return value.removeprefix("!")


_GIT_VALUE_OPTIONS = BUILTIN_GRAMMARS["git"].value_options - {"--exec-path"}


def _git(words: list[Word]) -> list[Runs]:
    """What ``git -c KEY=VALUE`` makes git run: a shell alias (``alias.x=!cmd``), an alias of
    git's commands (``alias.p=push``) and the keys whose value is a command (``core.pager``,
    ``core.sshCommand``, ...). ``--config-env`` with such a key is undecidable."""
    runs: list[Runs] = []
    i = 1
    while i < len(words):
        w = words[i]
        v = w.value
        if v in ("-c", "--config-env") and i + 1 < len(words):
            setting = words[i + 1]
            if setting.value is None:
                if v == "-c":
                    runs.append(Undecidable(f"the git -c setting is not a literal: {setting.raw}"))
            elif v == "-c":
                runs.append(_git_setting(setting.value))
            elif _git_runs_key(setting.value.split("=", 1)[0]):
                runs.append(Undecidable(f"git --config-env {setting.value} runs a command"))
            i += 2
            continue
        if v is not None and v.startswith("--config-env="):
            if _git_runs_key(v.split("=", 2)[1]):
                runs.append(Undecidable(f"git {v} runs a command from the environment"))
            i += 1
            continue
        if v is not None and v.startswith("-"):
            i += 2 if v in _GIT_VALUE_OPTIONS else 1
            continue
        break
    if i < len(words):
        runs.extend(_git_subcommand(words[i:]))
    return runs


_GIT_PROGRAM_OPTIONS = {
    "clone": ("--upload-pack", "-u"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "fetch-pack": ("--upload-pack", "--exec"),
    "archive": ("--exec",),
    "push": ("--receive-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"),
}
"""Options of git's subcommands whose value is the program git runs at the other end, through
the shell, which is this machine for a local repository (``git clone -u 'CMD;' . x``)."""


def _git_subcommand(words: list[Word]) -> list[Runs]:
    """What a git subcommand runs itself: the value of ``--upload-pack``/``--receive-pack``/
    ``--exec`` (a command); ``remote-ext`` runs the command its address names."""
    sub = words[0].value
    if sub == "remote-ext":
        return [Undecidable("git remote-ext runs the command its address names")]
    names = _GIT_PROGRAM_OPTIONS.get(sub or "", ())
    runs: list[Runs] = []
    for k, w in enumerate(words[1:], start=1):
        v = w.value if w.value is not None else w.prefix
        for name in names:
            value: Word | None = None
            if v == name and k + 1 < len(words):
                value = words[k + 1]
            elif v.startswith(name + "=") and name.startswith("--"):
                value = scan_word(w.raw.split("=", 1)[1]) if "=" in w.raw else None
            elif name == "-u" and v.startswith("-u") and len(v) > 2:
                value = Word(raw=v[2:], value=v[2:], prefix=v[2:])
            if value is None:
                continue
            if value.value is None:
                runs.append(Undecidable(f"the git {sub} {name} program is not a literal"))
            else:
                runs.append(value.value)
    return runs


_LOADER_SPEC = _spec(
    long_flags="list verify inhibit-cache list-tunables list-diagnostics help version",
    long_values="library-path inhibit-rpath audit preload argv0 glibc-hwcaps-prepend "
    "glibc-hwcaps-mask",
)
"""glibc's ``ld.so`` options (``ld.so --help``)."""


def _dynamic_loader(words: list[Word]) -> Runs:
    """``ld.so [OPTION]... PROGRAM [ARG]...`` (glibc's options): the program and its arguments;
    ``--preload`` and ``--audit`` load a library's code, which the policy cannot read."""
    got = _getopt(words, basename(words[0].value or "ld.so"), _LOADER_SPEC)
    if isinstance(got, Undecidable):
        return got
    start, seen = got
    for option in ("preload", "audit"):
        if option in seen:
            return Undecidable(f"the dynamic loader's --{option} loads code the policy cannot read")
    return words[start:] or None


_TAR_RUNS = (
    "--to-command",
    "--checkpoint-action",
    "--use-compress-program",
    "--info-script",
    "--new-volume-script",
    "--rsh-command",
    "--rmt-command",
)
"""tar's long options whose value is a command it runs (``--checkpoint-action=exec=CMD``)."""


def _runs_option(
    word: Word, longs: tuple[str, ...], minimum: int, others: frozenset[str] = frozenset()
) -> str | None:
    """The long option of ``longs`` that ``word`` gives (as getopt_long reads it: a prefix of at
    least ``minimum`` letters, with or without ``=VALUE``; ``others``, options of the program
    that are themselves prefixes of one of ``longs``, win when given exactly), or ``None``."""
    text = (word.value if word.value is not None else word.prefix).split("=", 1)[0]
    if not text.startswith("--") or len(text) - 2 < minimum or text in others:
        return None
    return next((long for long in longs if long.startswith(text)), None)


def _tar(words: list[Word]) -> Runs:
    """tar runs a command of its options' (``--to-command``, ``--checkpoint-action=exec=``,
    ``-I``/``--use-compress-program``, ``-F``/``--info-script``, ``--rsh-command``, ...):
    undecidable; otherwise it runs nothing."""
    for k, word in enumerate(words[1:], start=1):
        text = word.value if word.value is not None else word.prefix
        if text == "--":
            break
        long = _runs_option(word, _TAR_RUNS, 3, frozenset({"--checkpoint"}))
        if long is not None:
            return Undecidable(f"tar {long} runs a command the policy does not judge")
        # short options (-I CMD, -F SCRIPT), also bundled and in the old style (`tar cIf`)
        letters = text[1:] if text.startswith("-") and not text.startswith("--") else ""
        if k == 1 and not text.startswith("-"):
            letters = text
        if "I" in letters or "F" in letters:
            return Undecidable(f"tar {text} runs a command the policy does not judge")
    return None


_RSYNC_RUNS = ("--rsh",)
"""rsync's option whose value is a command it runs on this machine (also ``-e``)."""


def _rsync(words: list[Word]) -> Runs:
    """rsync runs the remote shell ``-e``/``--rsh`` names on this machine: undecidable."""
    for word in words[1:]:
        text = word.value if word.value is not None else word.prefix
        if text == "--":
            break
        if _runs_option(word, _RSYNC_RUNS, 3) is not None or (
            text.startswith("-") and not text.startswith("--") and "e" in text[1:]
        ):
            return Undecidable(f"rsync {text} runs a command the policy does not judge")
    return None


Wrapper = Callable[[list[Word]], Runs]

WRAPPERS: dict[str, Wrapper] = {
    **{shell: _shell for shell in SHELLS},
    "env": _env,
    "xargs": _xargs,
    "nice": _nice,
    "nohup": _plain("nohup"),
    "time": _time,
    "stdbuf": _plain("stdbuf", "ioe", frozenset({"input", "output", "error"})),
    "timeout": _timeout,
    "command": _command,
    "builtin": _plain("builtin"),
    "exec": _exec,
    "sudo": _sudo,
    "doas": _doas,
    "su": _su,
    "setsid": _plain("setsid"),
    "coproc": _plain("coproc"),
    "watch": _watch,
    "chroot": _chroot,
    "trap": _trap,
    "ionice": _ionice,
    "chrt": _chrt,
    "flock": _flock,
    "taskset": _taskset,
    "script": _script,
    "busybox": _busybox,
    "toybox": _busybox,
    "runuser": _runuser,
    "nsenter": _nsenter,
    "unshare": _unshare,
    "ssh": _ssh,
    "parallel": _parallel,
    "sem": _parallel,
    **{shell: _foreign_shell for shell in FOREIGN_SHELLS},
    "fakeroot": _fakeroot,
    "strace": _strace,
    "systemd-run": _systemd_run,
    "chronic": _plain("chronic"),
    "unbuffer": _plain("unbuffer"),
    "pkexec": _plain("pkexec", long_arg=frozenset({"user"})),
    "proxychains": _plain("proxychains", "f"),
    "proxychains4": _plain("proxychains4", "f"),
    "dbus-run-session": _plain(
        "dbus-run-session", long_arg=frozenset({"config-file", "dbus-daemon"})
    ),
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "rsync": _rsync,
}
"""Wrappers by basename: each returns what it runs (find is handled on its own)."""


# ---------------------------------------------------------------------------------------------
# The tree walk
# ---------------------------------------------------------------------------------------------


@functools.cache
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_bash.language())


def _join_continuations(source: str) -> str:
    """Remove backslash-newline outside single quotes and comments, as bash's reader does."""
    if "\\\n" not in source:
        return source
    out: list[str] = []
    i = 0
    n = len(source)
    in_dq = False
    while i < n:
        c = source[i]
        if c == "\\" and i + 1 < n:
            if source[i + 1] != "\n":
                out.append(source[i : i + 2])
            i += 2
            continue
        if not in_dq and c == "'":
            j = source.find("'", i + 1)
            j = n if j < 0 else j + 1
            if i > 0 and source[i - 1] == "$":
                # $'...': a backslash escapes the quote
                j = i + 1
                while j < n and source[j] != "'":
                    j += 2 if source[j] == "\\" else 1
                j = min(j + 1, n)
            out.append(source[i:j])
            i = j
            continue
        if not in_dq and c == "#" and (i == 0 or source[i - 1] in " \t\n;&|()<>"):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(source[i:j])
            i = j
            continue
        if c == '"':
            in_dq = not in_dq
        out.append(c)
        i += 1
    return "".join(out)


class _Walker:
    def __init__(
        self,
        source: bytes,
        depth: int,
        items: list[Item],
        display: bytes,
        synthetic: set[int],
        facts: shell_eval.Facts,
        fill: _Fill | None = None,
    ) -> None:
        self.fill = fill
        """How the wrapper that runs this text adds words to each command of it (``parallel``
        runs its template once per argument), or ``None``."""
        self.facts = facts
        """What text bash evaluates again needs to know (:mod:`~pi_sandbox_plugin.policies.
        shell_eval`): variables assigned, sites of evaluation."""
        self.declared: str | None = None
        """The options of the declaration whose assignments are being walked."""
        self.synthetic = synthetic
        """Offsets of the `:` commands added to make the line parse."""
        self.src = source
        self.display = display
        self.depth = depth
        self.items = items
        self.pending: dict[int, list[tree_sitter.Node]] = {}
        """Words of a redirection that belong to a command further down (by node id)."""
        self.aliases: dict[str, str] = {}
        """The aliases the line defined so far (``alias NAME=VALUE``), by name."""

    def define_aliases(self, words: list[Word]) -> None:
        """Remember ``alias NAME=VALUE`` definitions; one that is not a literal is
        undecidable (it may name any program)."""
        for word in words[1:]:
            if word.value is None:
                self.items.append(
                    Undecidable(f"alias defines a name the policy cannot read: {word.raw}")
                )
            elif "=" in word.value:
                alias, value = word.value.split("=", 1)
                self.aliases[alias] = value

    def text(self, node: tree_sitter.Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def walk(self, node: tree_sitter.Node) -> None:
        t = node.type
        if t == "command":
            self.command(node, self.pending.pop(node.id, []))
        elif t == "redirected_statement":
            self.redirected(node)
        elif t == "heredoc_redirect":
            self.heredoc(node)
        elif t in ("declaration_command", "unset_command"):
            self.declaration(node)
        elif t in ("comment", "raw_string", "ansi_c_string", "heredoc_body"):
            return
        elif (
            t == "command_substitution" and self.src[node.start_byte : node.start_byte + 1] == b"`"
        ):
            # bash unescapes \\ \` \$ in a backquoted command before parsing it (nesting)
            inner = re.sub(r"\\([\\`$])", r"\1", self.text(node)[1:-1])
            self.items.extend(_extract(inner, self.depth + 1, self.facts))
        elif t in (";;", ";&", ";;&"):
            parent = node.parent
            if parent is None or parent.type != "case_item":
                self.items.append(Undecidable(f"the command line does not parse: unexpected {t!r}"))
        elif node.child_count == 0:
            # a leaf (word, string_content, regex, ...) holding a substitution tree-sitter-bash
            # did not parse
            text = self.text(node)
            if node.is_named and ("`" in text or "$(" in text):
                self.scan_text(text, quotes=True)
            if node.is_named and "$" in text:
                got = self.facts.pieces(text)
                if not isinstance(got, str):
                    self.facts.nested(got, self.depth)
        else:
            self.evaluated(node)
            for child in node.children:
                self.walk(child)

    def evaluated(self, node: tree_sitter.Node) -> None:
        """Record what bash evaluates again in ``node``, and the variables it assigns."""
        t = node.type
        facts = self.facts
        if t == "arithmetic_expansion" and node.child_count >= 2:
            inner = self.src[node.children[0].end_byte : node.children[-1].start_byte]
            facts.arith(inner.decode("utf-8", "surrogateescape"), "arithmetic", self.depth)
        elif t in ("compound_statement", "c_style_for_statement"):
            tokens = [c for c in node.children if c.type in ("((", "))")]
            if len(tokens) >= 2:
                inner = self.src[tokens[0].end_byte : tokens[1].start_byte]
                text = inner.decode("utf-8", "surrogateescape")
                facts.arith(
                    text,
                    "arithmetic (( ))" if t != "c_style_for_statement" else "arithmetic for (( ))",
                    self.depth,
                )
        elif (
            t == "subshell" and self.text(node).startswith("((") and self.text(node).endswith("))")
        ):
            # `! ((x))`, `coproc ((x))`: tree-sitter-bash reads two subshells, bash arithmetic
            facts.arith(self.text(node)[2:-2], "arithmetic (( ))", self.depth)
        elif t == "expansion":
            facts.param(self.text(node)[2:-1], self.depth)
        elif t == "variable_assignment":
            self.assignment(node)
        elif t == "for_statement":
            self.for_list(node)
        elif t in ("binary_expression", "unary_expression") and self.test_bracket(node):
            bracket = self.test_bracket(node)
            operator = next((c for c in node.children if c.type == "test_operator"), None)
            operands = [c for c in node.named_children if c.type != "test_operator"]
            op = self.text(operator) if operator is not None else ""
            if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge") and bracket == "[[":
                for operand in operands:
                    facts.arith(self.text(operand), f"[[ {op} ]]", self.depth)
            elif op in ("-v", "-R") and operands:
                closing = "]]" if bracket == "[[" else "]"
                facts.name_site(self.text(operands[-1]), f"{bracket} {op} {closing}", self.depth)

    @staticmethod
    def test_bracket(node: tree_sitter.Node) -> str:
        """``[[`` or ``[`` when ``node`` is an expression of that test (``[ ]``'s ``-eq``
        compares integers without evaluating them), else ``""``."""
        parent = node.parent
        while parent is not None and parent.type in (
            "binary_expression",
            "unary_expression",
            "parenthesized_expression",
        ):
            parent = parent.parent
        if parent is None or parent.type != "test_command" or not parent.children:
            return ""
        return parent.children[0].type if parent.children[0].type in ("[", "[[") else ""

    def assignment(self, node: tree_sitter.Node) -> None:
        """``NAME=VALUE`` (``NAME[SUB]+=VALUE``, ``NAME=(...)``)."""
        if not node.children:
            return
        target = node.children[0]
        op = node.children[1] if node.child_count > 1 else None
        if op is None or op.type not in ("=", "+="):
            return
        subscript: str | None = None
        name = self.text(target)
        if target.type == "subscript":
            base = target.child_by_field_name("name") or target.named_children[0]
            name = self.text(base)
            text = self.text(target)
            subscript = text[len(name) + 1 : -1]
        value = self.src[op.end_byte : node.end_byte].decode("utf-8", "surrogateescape")
        array = next((c for c in node.children[2:] if c.type == "array"), None)
        after = self.src[node.end_byte : node.end_byte + 1]
        if after and after not in b" \t\n;&|()<>":
            # `a=(1)x`, `w='a'\;`, `w=#'x'`: bash reads one word, tree-sitter-bash an
            # assignment and another word
            self.items.append(Undecidable(f"an assignment joined to more text: {self.text(node)}"))
        elements = (
            [self.text(c) for c in array.named_children if c.type != "comment"]
            if array is not None
            else None
        )
        self.facts.assignment(
            name, subscript, op.type == "+=", value, elements, self.depth, self.declared or ""
        )

    def for_list(self, node: tree_sitter.Node) -> None:
        """``for NAME in WORDS`` and ``select NAME in WORDS``."""
        variable = node.child_by_field_name("variable")
        if variable is None:
            return
        name = self.text(variable)
        words: list[str] | None = None
        if any(c.type == "in" for c in node.children):
            words = [self.text(c) for c in node.children_by_field_name("value")]
        self.facts.for_list(name, words, self.depth)
        if node.children and node.children[0].type == "select":
            self.facts.assign(name, ())

    # --- simple commands ----------------------------------------------------------------------

    def redirect_words(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """Walk a file redirect's target; return the words after it (argv words in bash)."""
        extra: list[tree_sitter.Node] = []
        seen_target = False
        for child in node.children:
            if not child.is_named or child.type == "file_descriptor":
                continue
            if seen_target:
                extra.append(child)
            else:
                seen_target = True
                self.walk(child)
        return extra

    def redirected(self, node: tree_sitter.Node) -> None:
        body = node.child_by_field_name("body")
        extra: list[tree_sitter.Node] = []
        for child in node.children:
            if child is body or child == body:
                continue
            if child.type == "file_redirect":
                extra.extend(self.redirect_words(child))
            else:
                self.walk(child)
        if body is None:
            if extra:
                self.argv_nodes(extra)
            return
        if extra:
            # the words belong to the last simple command of a pipeline or list
            last = body
            while last.type in ("pipeline", "list", "negated_command") and last.named_children:
                last = last.named_children[-1]
            if last.type != "command":
                self.walk(body)
                self.items.append(
                    Undecidable("words after a redirection of a compound command do not parse")
                )
                return
            self.pending[last.id] = extra
        self.walk(body)

    def command(self, node: tree_sitter.Node, extra: list[tree_sitter.Node]) -> None:
        word_nodes: list[tree_sitter.Node] = []
        for i, child in enumerate(node.children):
            fname = node.field_name_for_child(i)
            if fname in ("name", "argument"):
                if child.end_byte > child.start_byte:
                    word_nodes.append(child)
            elif child.type == "file_redirect":
                word_nodes.extend(self.redirect_words(child))
            else:
                self.walk(child)
        self.argv_nodes(word_nodes + extra)

    def argv_nodes(self, nodes: list[tree_sitter.Node]) -> None:
        spans: list[list[int]] = []
        nodes = sorted(nodes, key=lambda x: x.start_byte)
        if nodes and nodes[0].start_byte in self.synthetic:
            nodes = nodes[1:]
        for n in nodes:
            self.walk(n)  # the substitutions inside the word
            if spans and spans[-1][1] == n.start_byte:
                spans[-1][1] = n.end_byte
            else:
                spans.append([n.start_byte, n.end_byte])
        words: list[Word] = []
        for start, end in spans:
            raw = self.display[start:end].decode("utf-8", "surrogateescape")
            try:
                words.append(scan_word(raw))
            except _BadWord as e:
                self.items.append(Undecidable(f"{e}: {raw}"))
                return
        self.analyze(words, self.depth, self.fill)

    def declaration(self, node: tree_sitter.Node) -> None:
        words: list[Word] = []
        nodes = [c for c in node.children if c.type != "comment"]
        program = self.text(nodes[0]) if nodes else ""
        try:
            all_words = [scan_word(self.text(c)) for c in nodes]
        except _BadWord:
            all_words = []
        declared = self.facts.declared_options(program, all_words)
        for child in nodes:
            self.declared = declared if program != "unset" else None
            self.walk(child)
            self.declared = None
            raw = self.text(child)
            try:
                words.append(scan_word(raw))
            except _BadWord as e:
                self.items.append(Undecidable(f"{e}: {raw}"))
                return
            if (
                program != "unset"
                and child is not nodes[0]
                and child.type != "variable_assignment"
                and not (raw.startswith(("-", "+")) and "=" not in raw)
                and "f" not in declared
            ):
                self.facts.declaration_word(raw, self.depth, declared)
        if words:
            if program == "unset":
                self.facts.builtin("unset", words, self.depth)
            self.items.append(SimpleCommand(tuple(words)))

    # --- here-docs and substitutions tree-sitter leaves as text -------------------------------

    def heredoc(self, node: tree_sitter.Node) -> None:
        self.items.append(Undecidable("a here-doc the parser cannot delimit"))

    def scan_text(self, text: str, *, quotes: bool = False) -> None:
        """Find ``$( )`` and backquote substitutions in ``text``: the body of an unquoted
        here-doc (``quotes=False``: quote characters are text) or a leaf tree-sitter did not
        parse (``quotes=True``: nothing in single quotes is a substitution); ``\\`` escapes."""
        i = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
            elif quotes and c == "'":
                end = text.find("'", i + 1)
                i = n if end < 0 else end + 1
            elif c == "`":
                j = i + 1
                while j < n and text[j] != "`":
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    self.items.append(Undecidable("an unterminated backquote"))
                    return
                inner = re.sub(r"\\([\\`$])", r"\1", text[i + 1 : j])
                self.items.extend(_extract(inner, self.depth + 1, self.facts))
                i = j + 1
            elif text.startswith("$((", i):
                i += 3
            elif text.startswith("$(", i):
                close = _substitution_end(text, i)
                if close is None:
                    self.items.append(Undecidable("an unbalanced $( in a here-doc"))
                    return
                self.items.extend(_extract(text[i + 2 : close], self.depth + 1, self.facts))
                i = close + 1
            else:
                i += 1

    # --- wrappers -----------------------------------------------------------------------------

    def analyze(self, words: list[Word], depth: int, fill: _Fill | None = None) -> None:
        if not words:
            return
        first = words[0]
        if first.raw in _RESERVED:
            self.items.append(
                Undecidable(f"the command line does not parse: unexpected {first.raw!r}")
            )
            return
        if fill is None:
            self.items.append(SimpleCommand(tuple(words)))
        else:
            self.items.append(SimpleCommand(tuple(words), fill.by, fill.appends, fill.placeholder))
            if fill.placeholder and fill.placeholder in (first.value or ""):
                self.items.append(
                    Undecidable(f"the program is filled in by {fill.by} at run time: {first.raw}")
                )
                return
        if first.value is None:
            self.items.append(Undecidable(f"the program name is not a literal: {first.raw}"))
            return
        if first.glob:
            self.items.append(Undecidable(f"the program name is a glob pattern: {first.raw}"))
            return
        if _OWN_EXECUTABLE.search(first.value):
            self.items.append(
                Undecidable(f"the program is a process's own executable: {first.raw}")
            )
            return
        if _STREAM.search(first.value):
            self.items.append(Undecidable(f"the program is read from a stream: {first.raw}"))
            return
        name = basename(first.value)
        if name in UNDECIDABLE_PROGRAMS:
            self.items.append(Undecidable(f"{name} runs code the policy cannot inspect"))
            return
        if name in PROGRAM_RUNNERS and len(words) > 1:
            self.items.append(
                Undecidable(f"{name} starts a program the policy does not follow: {first.raw}")
            )
            return
        if name == "hash" and any(w.value is None or w.value.startswith("-p") for w in words[1:]):
            self.items.append(
                Undecidable("hash -p gives a program another name the policy cannot follow")
            )
            return
        self.facts.builtin(name, words, depth)
        if name in ("env", "sudo", "systemd-run", "ssh"):
            for raw in _environment_words(words):
                self.facts.environment(raw, depth)
        if name == "alias":
            self.define_aliases(words)
        elif first.value in self.aliases and depth == self.depth:
            # `alias r=rm` earlier in the line, then `r x`: bash (with expand_aliases) runs
            # `rm x`; judged as that too (the alias value stays a string, not a program)
            rest = " ".join(w.raw for w in words[1:])
            self.items.extend(
                _extract(f"{self.aliases[first.value]} {rest}", self.depth + 1, self.facts)
            )
        if name == "find":
            runs = _find(words)
            fill = _Fill("find", False, "{}")
        elif name == "xargs":
            runs = [_xargs(words)]
            fill = _xargs_fill(words)
        elif name == "git":
            runs = _git(words)
        elif _PYTHON.fullmatch(name):
            runs = [_python(words)]
        elif name in WRAPPERS:
            runs = [WRAPPERS[name](words)]
        elif _DYNAMIC_LOADER.fullmatch(name):
            runs = [_dynamic_loader(words)]
        else:
            return
        for run in runs:
            if run is None:
                continue
            if isinstance(run, Undecidable):
                self.items.append(run)
            elif isinstance(run, str):
                hazard = shell_eval.zsh_hazard(run) if name == "zsh" else None
                if hazard is not None:
                    self.items.append(
                        Undecidable(f"zsh evaluates {hazard}, which the bash grammar misses")
                    )
                    continue
                if (
                    name in SHELLS
                    and fill is not None
                    and fill.placeholder
                    and fill.placeholder in run
                ):
                    # `xargs -I{} bash -c 'echo {}'`: the text put in for the placeholder is
                    # code that the shell evaluates
                    self.items.append(
                        Undecidable(
                            f"the script {name} -c runs is filled in by {fill.by} at run time"
                        )
                    )
                    continue
                filled = _Fill("parallel", False, "{") if name in ("parallel", "sem") else None
                self.items.extend(_extract(run, depth + 1, self.facts, filled))
            else:
                self.analyze(run, depth, fill)


_HEREDOC_OPERATOR = re.compile(
    rb"((?<!<)<<(?!<)-?[ \t]*(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s;&|()<>'\"]+))([;&|()<>])"
)
"""A here-doc delimiter word directly followed by an operator (``<<EOF;``): tree-sitter-bash
takes the operator into the word, so a blank is put between them."""

_TIME_COMPOUND = re.compile(
    rb"((?:^|[;&|(\n!])[ \t]*)(time(?:[ \t]+-p)?)"
    rb"(?=[ \t]+(?:[{(!]|\[\[|(?:if|for|while|until|case|select)\b))"
)
"""The ``time`` keyword before a compound command, which tree-sitter-bash cannot parse: it is
blanked (it only times what follows)."""


def _parse(data: bytes) -> tree_sitter.Node:
    return tree_sitter.Parser(_language()).parse(data).root_node


@dataclass(frozen=True)
class _HereDoc:
    """A here-doc found by :func:`_find_heredocs`: its ``body``, whether the delimiter was
    quoted, the byte span of its operator and delimiter word (``op_start``, ``op_end``) and of
    the lines that follow up to and with the delimiter line (``body_start``, ``body_end``)."""

    quoted: bool
    body: str
    op_start: int
    op_end: int
    body_start: int
    body_end: int
    delimiter: str = ""
    """The delimiter bash looks for (the word after quote removal)."""
    raw_delimiter: str = ""
    """The delimiter word as written."""


def _find_heredocs(data: bytes, root: tree_sitter.Node) -> list[_HereDoc]:
    """The here-docs of ``data``, found as bash does.

    tree-sitter-bash finds the here-doc operators but delimits their bodies unreliably (a body
    starting with a backslash or a tab, an operator after the delimiter word), so each body is
    taken here: from the line after the operator to the first line equal to the delimiter
    (after leading tabs with ``<<-``), or the end of input.
    """
    starts: list[tree_sitter.Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "heredoc_start":
            starts.append(node)
        stack.extend(node.children)
    starts.sort(key=lambda n: n.start_byte)
    docs: list[_HereDoc] = []
    resume = 0
    for node in starts:
        raw = data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
        op_start = data.rfind(b"<<", 0, node.start_byte)
        if not raw or any(d.body_start <= op_start < d.body_end for d in docs):
            continue  # text inside an earlier body
        try:
            word = scan_word(raw)
        except _BadWord:
            continue
        delim = word.value if word.value is not None else raw
        strip_tabs = data[op_start : op_start + 3] == b"<<-"
        quoted = any(q in raw for q in "'\"\\")
        line_end = data.find(b"\n", max(node.end_byte, resume))
        if line_end < 0:
            line_end = len(data)
        body_start = pos = min(line_end + 1, len(data))
        body_end = len(data)
        after = len(data)
        while pos < len(data):
            nl = data.find(b"\n", pos)
            line_stop = len(data) if nl < 0 else nl
            line = data[pos:line_stop]
            if strip_tabs:
                line = line.lstrip(b"\t")
            if line.decode("utf-8", "surrogateescape") == delim:
                body_end = pos
                after = line_stop
                break
            pos = line_stop + 1
        body = data[body_start:body_end].decode("utf-8", "surrogateescape")
        docs.append(_HereDoc(quoted, body, op_start, node.end_byte, body_start, after, delim, raw))
        resume = after
    return docs


_CLOSERS = frozenset(" \t);&|")


def _heredoc_doubt(source: str, docs: list[_HereDoc]) -> str | None:
    """Why the here-docs of ``source`` may end elsewhere than :func:`_find_heredocs` found,
    or ``None``. Bash joins backslash-newlines in an unquoted here-doc's body before it looks
    for the delimiter, but not in a quoted one's (this parser joins them all first); it takes a
    delimiter word with ``$`` or a backquote after quote removal only (``<<"$x"`` ends at a line
    ``$x``); and inside ``$( )`` a line of the delimiter followed by ``)`` ends the here-doc.
    Rare in real commands, so undecidable rather than modelled."""
    if not docs:
        return None
    if "\\\n" in source:
        return (
            "a here-doc in a command line with a backslash-newline (bash joins the lines of"
            " some here-doc bodies and not of others)"
        )
    for doc in docs:
        if "$" in doc.raw_delimiter or "`" in doc.raw_delimiter:
            return f"a here-doc delimiter with an expansion in it: {doc.raw_delimiter}"
        for line in doc.body.split("\n"):
            line = line.lstrip("\t")
            if doc.delimiter and line.startswith(doc.delimiter) and line != doc.delimiter:
                if set(line[len(doc.delimiter) :]) <= _CLOSERS:
                    return f"a here-doc line that may end it: {line}"
    return None


def _neutralize(data: bytes, docs: list[_HereDoc]) -> bytes:
    """``data`` with each here-doc operator made an input redirection (``< ___``) and its body
    and delimiter line blanked (newlines kept), so the offsets do not move."""
    out = bytearray(data)
    for doc in docs:
        length = doc.op_end - doc.op_start
        out[doc.op_start : doc.op_end] = b"< " + b"_" * (length - 2)
        for k in range(doc.body_start, doc.body_end):
            if out[k] != 0x0A:
                out[k] = 0x20
    return bytes(out)


def _substitution_end(text: str, i: int) -> int | None:
    """The index of the ``)`` closing the ``$(`` at ``text[i]``: the first ``)`` before which
    the text parses as a command line; ``None`` when there is none."""
    j = text.find(")", i + 2)
    while j >= 0:
        if not _parse(text[i + 2 : j].encode("utf-8", "surrogateescape")).has_error:
            return j
        j = text.find(")", j + 1)
    return None


def _extract(
    source: str, depth: int, facts: shell_eval.Facts, fill: _Fill | None = None
) -> list[Item]:
    if depth > MAX_DEPTH:
        return [Undecidable(f"command strings nest more than {MAX_DEPTH} levels deep")]
    if '$"' in source and shell_eval.translated(source):
        facts.translated = True
    data = _join_continuations(source).encode("utf-8", "surrogateescape")
    # the `time` keyword before a compound command, which tree-sitter-bash cannot parse
    data = _TIME_COMPOUND.sub(lambda m: m.group(1) + b" " * len(m.group(2)), data)
    docs: list[_HereDoc] = []
    display = data
    if b"<<" in data:
        data = display = _HEREDOC_OPERATOR.sub(rb"\1 \2", data)
        docs = _find_heredocs(data, _parse(data))
        doubt = _heredoc_doubt(source, docs)
        if doubt is not None:
            return [Undecidable(doubt)]
        data = _neutralize(data, docs)
    root = _parse(data)
    synthetic: set[int] = set()
    for _ in range(_MAX_FILLS):
        if not _has_syntax_error(root):
            break
        at = _commandless_prefix_end(root)
        if at is None:
            break
        # `X=1 >out; ...`: tree-sitter-bash wants a command name after an assignment and a
        # redirection; a `:` there parses, and is left out of the commands found
        data = data[:at] + b" :" + data[at:]
        display = display[:at] + b" :" + display[at:]
        synthetic.add(at + 1)
        root = _parse(data)
    if _has_syntax_error(root):
        return [Undecidable(f"the command line does not parse: {_error_hint(root, data)}")]
    items: list[Item] = []
    walker = _Walker(data, depth, items, display, synthetic, facts, fill)
    walker.walk(root)
    for doc in docs:
        if not doc.quoted:
            walker.scan_text(doc.body)
            facts.heredoc(doc.body, depth)
    return items


_MAX_FILLS = 32


def _commandless_prefix_end(root: tree_sitter.Node) -> int | None:
    """The end of the first assignments-and-redirections prefix that tree-sitter-bash could
    not parse without a command name after it (an error or a missing name follows)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.type == "command":
            prefix_end = None
            has_redirect = False
            for child in node.children:
                if child.type in ("variable_assignment", "file_redirect", "herestring_redirect"):
                    has_redirect = has_redirect or child.type != "variable_assignment"
                    prefix_end = child.end_byte
                    continue
                broken = child.is_error or (
                    child.type == "command_name" and any(c.is_missing for c in child.children)
                )
                if broken and has_redirect and prefix_end is not None:
                    return prefix_end
                break
        stack.extend(reversed(node.children))
    return None


def _benign_missing(node: tree_sitter.Node) -> bool:
    """A missing command name after assignments or redirections only (``X=1 >out``): valid
    bash that tree-sitter-bash does not parse; the command runs no program."""
    name = node.parent
    command = name.parent if name is not None else None
    return (
        name is not None
        and name.type == "command_name"
        and command is not None
        and command.type == "command"
        and any(c.type in ("variable_assignment", "file_redirect") for c in command.children)
        and all(
            c.type in ("variable_assignment", "file_redirect", "herestring_redirect") or c == name
            for c in command.children
        )
    )


def _has_syntax_error(root: tree_sitter.Node) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.is_error or (node.is_missing and not _benign_missing(node)):
            return True
        stack.extend(node.children)
    return False


def _error_hint(root: tree_sitter.Node, data: bytes) -> str:
    """Where the first syntax error is: ``unexpected 'TEXT' at line L`` or ``missing 'X'``."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing and not _benign_missing(node):
            return f"missing {node.type!r} at line {node.start_point[0] + 1}"
        if node.is_error:
            text = data[node.start_byte : node.end_byte].decode("utf-8", "replace")
            text = text if len(text) <= 40 else text[:37] + "..."
            return f"unexpected {text!r} at line {node.start_point[0] + 1}"
        stack.extend(reversed(node.children))
    return "syntax error"


class _ScanHelpers:
    """What :mod:`~pi_sandbox_plugin.policies.shell_eval` needs of the parser."""

    @staticmethod
    def substitution_end(text: str, i: int) -> int | None:
        return _substitution_end(text, i)

    @staticmethod
    def ansi_c(raw: str, i: int) -> tuple[str, int]:
        try:
            return _ansi_c(raw, i)
        except _BadWord as e:
            raise shell_eval.Unreadable(str(e)) from None


_SCAN_HELPERS = _ScanHelpers()


def parse_command_line(source: str) -> ParseResult:
    """Every simple command of ``source`` and what cannot be decided, in source order: the
    commands of the line, then those of text bash evaluates again
    (:mod:`~pi_sandbox_plugin.policies.shell_eval`).

    Never raises for any input: a line that does not parse gives one :class:`Undecidable`, and
    so does a failure of the parser itself (e.g. nesting too deep for Python's stack). The last
    lines parsed are cached (a call judged by Codex rules and the command policy is parsed
    once).
    """
    return ParseResult(list(_parse_cached(source)))


@functools.lru_cache(maxsize=256)
def _parse_cached(source: str) -> tuple[Item, ...]:
    try:
        facts = shell_eval.Facts(_SCAN_HELPERS)
        items = _extract(source, 0, facts)
        items.extend(
            shell_eval.resolve(facts, lambda text, depth: _extract(text, depth, facts), Undecidable)
        )
        return tuple(items)
    except Exception as e:  # fail closed, whatever went wrong
        return (Undecidable(f"the parser failed: {type(e).__name__}: {e}"),)


__all__ = [
    "FOREIGN_SHELLS",
    "MAX_DEPTH",
    "SHELLS",
    "UNDECIDABLE_PROGRAMS",
    "WRAPPERS",
    "Item",
    "ParseResult",
    "SimpleCommand",
    "Undecidable",
    "Word",
    "basename",
    "parse_command_line",
    "scan_word",
]
