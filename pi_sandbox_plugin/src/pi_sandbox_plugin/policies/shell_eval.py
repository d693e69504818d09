"""Text that bash evaluates again: code hidden in data.

A single-quoted word is inert when bash reads a command line, but bash evaluates some text a
second time, after the line has been parsed: ``x='a[$(rm y)]'; echo $((x))`` runs ``rm y``.
While :mod:`pi_sandbox_plugin.policies.bash_parser` walks a line and every command string nested in it,
it records *facts* here (:class:`Facts`): each assignment of a variable (``=``, ``+=``,
``declare``, ``read``, ``for``, ``env NAME=...``, ``${x:=...}``, ...) and each *site* where bash
evaluates text again. :func:`resolve` then computes the possible values of every variable over
the whole line (:class:`Values`) and judges each site:

* text that is a known literal is judged as what bash would run with it (``trap 'rm y' EXIT``
  runs ``rm y``; ``x='a[$(rm y)]'; echo $((x))`` runs ``rm y``);
* text that is not (a command's output, input ``read`` reads, a positional parameter, the file
  names of a glob, ...) makes the line undecidable, with a reason naming the construct
  (``arithmetic evaluates the value of $x, which is not a literal (input read by read)``).

Values are flow-insensitive: every assignment anywhere in the line (at any nesting level, since
``export`` and ``env`` carry values into nested ``bash -c`` strings) counts everywhere. A
variable the line never assigns holds what pi's own environment gave the fresh process: not
attacker data (the model writes the command line, not pi's environment), so it is judged
harmless. Variables bash sets from data (``PWD``, ``REPLY``, ``_``, ``BASH_REMATCH``,
``BASH_COMMAND``, ...) and positional parameters are never literals.

The constructs, by section of the bash 5.2 manual:

* ARITHMETIC EVALUATION (a variable's value is evaluated again as an expression, and a subscript
  in it is expanded, so a ``$(...)`` there runs): ``$(( ))``, ``$[ ]``, ``(( ))``, ``let``,
  ``for (( ))``, the arithmetic operators of ``[[ ]]``, subscripts of indexed arrays
  (``${a[E]}``, ``a[E]=``, ``a=([E]=v)``), ``${x:OFFSET:LENGTH}``, and every assignment to a
  variable with the integer attribute (``declare``/``typeset``/``local -i``, zsh's ``integer``)
  or to ``RANDOM``, ``SRANDOM``, ``OPTIND``, ``HISTCMD``.
* SHELL BUILTIN COMMANDS, arguments that name a variable and may hold a subscript: ``printf
  -v``, ``read``, ``mapfile``, ``getopts``, ``wait -p``, ``unset``, ``test -v``, ``[[ -v ]]``,
  ``declare NAME[SUB]=``, ``exec {NAME[SUB]}>``; PARAMETERS: ``${!name}`` and namerefs
  (``declare -n``). ``declare``, ``local``, ``typeset``, ``export`` and ``readonly`` re-parse a
  value ``(...)`` given to an array as a compound assignment, even a quoted one.
* Code strings: ``trap`` (judged by the parser's wrapper table), ``mapfile -C``, ``compgen`` and
  ``complete`` (``-C``, and ``-W``, a word list that is expanded), ``bind -x``,
  ``PROMPT_COMMAND``, functions imported from the environment (``BASH_FUNC_name%%``),
  ``BASH_ALIASES``.
* PROMPTING: ``PS0``, ``PS1``, ``PS2``, ``PS4`` (expanded before each command under ``set -x``)
  and ``${x@P}``; ``MAILPATH`` messages.
* What the policy cannot see: ``BASH_ENV`` and ``ENV`` (files a new shell sources),
  ``BASH_CMDS`` (like ``hash -p``), ``fc`` (runs the history), ``enable -f`` (loads a shared
  object), ``$"..."`` strings with ``TEXTDOMAIN``/``TEXTDOMAINDIR`` set in the line (the
  translation comes from a catalogue the line chose and is expanded), ``SHELLOPTS`` and
  ``BASHOPTS`` that are not literals.

zsh evaluates more than bash (glob qualifiers ``*(e:...:)``, parameter flags ``${(e)x}``,
``$~x``, ``=(cmd)``, ...), which the bash grammar does not see: a zsh ``-c`` string holding one
of them is undecidable (:func:`zsh_hazard`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pi_sandbox_plugin.policies.grammars import WordLike

LIMIT = 64
"""How many literal values a variable may have before it counts as not a literal."""

MAX_ROUNDS = 8
"""How many times text evaluated again may hold more text evaluated again."""

_LONGEST = 96
"""Literals longer than this are not transformed by a pattern operator (bash's algorithm tries
every start and end: cubic): the result is then not a literal, unless the text is inert."""


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Val:
    """What a piece of text may be: one of ``lits`` or, when ``unknown`` is set, anything (the
    reason says where it comes from: ``a command's output``); ``via`` is the first variable the
    unknown text went through."""

    lits: frozenset[str] = frozenset({""})
    unknown: str | None = None
    via: str | None = None

    def join(self, other: Val) -> Val:
        """Either this or ``other``."""
        unknown, via = (self.unknown, self.via) if self.unknown else (other.unknown, other.via)
        lits = self.lits | other.lits
        if len(lits) > LIMIT:
            return Val(frozenset(), unknown or "too many possible values", via)
        return Val(lits, unknown, via)

    def concat(self, other: Val) -> Val:
        """This followed by ``other``."""
        unknown, via = (self.unknown, self.via) if self.unknown else (other.unknown, other.via)
        if len(self.lits) * len(other.lits) > LIMIT:
            return Val(frozenset(), unknown or "too many possible values", via)
        return Val(frozenset(a + b for a in self.lits for b in other.lits), unknown, via)

    def through(self, name: str) -> Val:
        """This value read from the variable ``name``."""
        if self.unknown and self.via is None:
            return Val(self.lits, self.unknown, name)
        return self

    def mapped(self, f: Callable[[str], str | None], why: str) -> Val:
        """Each literal transformed by ``f`` (``None``: it cannot tell, the result is unknown)."""
        out: set[str] = set()
        for s in self.lits:
            r = f(s) if len(s) <= _LONGEST else None
            if r is None:
                return _fallback(self, why)
            out.add(r)
        return Val(frozenset(out), self.unknown, self.via)


EMPTY = Val()
NUMBER = Val(frozenset({"0"}))
"""An integer: nothing in it can run."""


def unknown(reason: str) -> Val:
    """Text that is not a literal, for ``reason``."""
    return Val(frozenset(), reason)


def literal(text: str) -> Val:
    """The literal ``text``."""
    return Val(frozenset({text}))


_INERT = re.compile(r"[0-9\s+\-*/%<>=!&|^~?:,().]*")
"""Text that holds no name, expansion or subscript: nothing in it can run, whatever part of it
is taken."""


def _fallback(value: Val, why: str) -> Val:
    """A transformation of ``value`` the policy does not compute: harmless when every literal is
    inert, else not a literal."""
    if value.unknown:
        return value
    if all(_INERT.fullmatch(s) for s in value.lits):
        return NUMBER
    return unknown(why)


def _join_all(values: Iterable[Val]) -> Val:
    out: Val | None = None
    for v in values:
        out = v if out is None else out.join(v)
    return out if out is not None else EMPTY


# ---------------------------------------------------------------------------------------------
# Pieces: a text cut at its expansions
# ---------------------------------------------------------------------------------------------

Mode = Literal["word", "dq", "raw"]
"""How a text is read: ``word``, a shell word of the command line (quotes, escapes); ``dq``, the
inside of double quotes or the body of a here-doc; ``raw``, text that bash evaluates again, read
without quotes or escapes so that no ``$(`` is missed."""


@dataclass(frozen=True)
class Lit:
    """Literal text (``glob``: an unquoted ``*``, ``?`` or ``[``)."""

    text: str
    glob: bool = False


@dataclass(frozen=True)
class Exp:
    """An expansion: ``cmd`` (``$( )``, backquotes, ksh's ``${ ...; }``), ``arith`` (``$(( ))``,
    ``$[ ]``), ``param`` (``$x``, ``${...}``: ``body`` without the ``$``, braces) or ``procsub``
    (``<( )``); ``quoted``: inside double quotes (no word splitting)."""

    kind: Literal["cmd", "arith", "param", "procsub"]
    body: str
    quoted: bool = False


Piece = Lit | Exp


class Unreadable(Exception):
    """A text whose expansions cannot be delimited (an unterminated ``${``, ``$(``, quote)."""


class Helpers(Protocol):
    """What the scanner needs from the parser."""

    def substitution_end(self, text: str, i: int) -> int | None:
        """The index of the ``)`` closing the ``$(`` at ``text[i]``."""

    def ansi_c(self, raw: str, i: int) -> tuple[str, int]:
        """Decode ``$'...'`` whose opening quote is at ``raw[i]``: (text, index after)."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-]")


def _skip_quoted(text: str, i: int) -> int:
    """The index after the quoted string (``'...'`` or ``"..."``) opening at ``text[i]``."""
    q = text[i]
    j = i + 1
    while j < len(text):
        if q == '"' and text[j] == "\\":
            j += 2
            continue
        if text[j] == q:
            return j + 1
        j += 1
    raise Unreadable(f"an unterminated {'single' if q == chr(39) else 'double'} quote")


def _unquoted(text: str, start: int, h: Helpers | None = None) -> Iterator[tuple[int, str]]:
    """Each index and character of ``text`` from ``start`` that is outside quotes and backslash
    escapes (and, given the parser's helpers ``h``, outside ``$( )`` and backquotes). Raises
    :class:`Unreadable` for one that does not end."""
    j = start
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
        elif c in "'\"":
            j = _skip_quoted(text, j)
        elif h is not None and c == "`":
            end = text.find("`", j + 1)
            if end < 0:
                raise Unreadable("an unterminated backquote")
            j = end + 1
        elif h is not None and text.startswith("$(", j) and not text.startswith("$((", j):
            close_at = h.substitution_end(text, j)
            if close_at is None:
                raise Unreadable("an unbalanced $(")
            j = close_at + 1
        else:
            yield j, c
            j += 1


def _closing(text: str, i: int, h: Helpers | None, open_: str, close: str) -> int:
    """The index of the ``close`` matching the ``open_`` at ``text[i]``, skipping quotes, escapes
    (and with ``h``, ``$( )`` and backquotes)."""
    depth = 1
    for j, c in _unquoted(text, i + 1, h):
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
    raise Unreadable(f"an unbalanced {open_}")


def _arith_end(text: str, start: int) -> int | None:
    """For ``$((`` ending at ``start``: the index of the first ``)`` of the closing ``))``, or
    ``None`` when the parentheses close apart (``$( (cmd) )`` is a command substitution)."""
    depth = 0
    j = start
    while j < len(text):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return j if text[j + 1 : j + 2] == ")" else None
            depth -= 1
        j += 1
    return None


def _expansion(text: str, i: int, h: Helpers) -> tuple[Exp | None, int]:
    """The expansion starting at ``text[i]`` (``$`` or a backquote) and the index after it;
    ``(None, i + 1)`` for a ``$`` that starts none."""
    n = len(text)
    if text[i] == "`":
        j = i + 1
        while j < n and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        if j >= n:
            raise Unreadable("an unterminated backquote")
        return Exp("cmd", re.sub(r"\\([\\`$])", r"\1", text[i + 1 : j])), j + 1
    nxt = text[i + 1 : i + 2]
    if text.startswith("$((", i):
        end = _arith_end(text, i + 3)
        if end is not None:
            return Exp("arith", text[i + 3 : end]), end + 2
    if nxt == "(":
        close = h.substitution_end(text, i)
        if close is None:
            raise Unreadable("an unbalanced $(")
        return Exp("cmd", text[i + 2 : close]), close + 1
    if nxt == "[":
        end = _closing(text, i + 1, h, "[", "]")
        return Exp("arith", text[i + 2 : end]), end + 1
    if nxt == "{":
        end = _closing(text, i + 1, h, "{", "}")
        body = text[i + 2 : end]
        if body[:1] in (" ", "\t", "\n", "|"):
            return Exp("cmd", body[1:]), end + 1  # ksh's and bash 5.3's ${ cmd; }
        return Exp("param", body), end + 1
    m = _NAME.match(text, i + 1)
    if m is not None:
        return Exp("param", m.group()), m.end()
    return None, i + 1


def scan(text: str, mode: Mode, h: Helpers) -> list[Piece]:
    """``text`` cut into literal text and expansions, read as ``mode`` says. Raises
    :class:`Unreadable`."""
    pieces: list[Piece] = []
    i = 0
    n = len(text)
    in_dq = mode == "dq"
    while i < n:
        c = text[i]
        if mode == "word" and not in_dq:
            if c == "\\":
                if i + 1 < n and text[i + 1] != "\n":
                    pieces.append(Lit(text[i + 1]))
                elif i + 1 >= n:
                    pieces.append(Lit(c))
                i += 2
                continue
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0:
                    raise Unreadable("an unterminated single quote")
                pieces.append(Lit(text[i + 1 : j]))
                i = j + 1
                continue
            if text.startswith("$'", i):
                decoded, i = h.ansi_c(text, i + 1)
                pieces.append(Lit(decoded))
                continue
            if text.startswith('$"', i) or c == '"':
                in_dq = True
                i += 2 if c == "$" else 1
                continue
            if c in "<>" and i == 0 and text[1:2] == "(":
                end = _closing(text, 1, h, "(", ")")
                pieces.append(Exp("procsub", text[2:end]))
                i = end + 1
                continue
            if c in "*?" or (c == "[" and "]" in text[i + 1 :]):
                pieces.append(Lit(c, glob=True))
                i += 1
                continue
        elif in_dq and mode != "raw":
            if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                if text[i + 1] == '"' and mode == "dq":
                    pieces.append(Lit("\\"))
                    i += 1
                    continue
                if text[i + 1] != "\n":
                    pieces.append(Lit(text[i + 1]))
                i += 2
                continue
            if c == '"' and mode == "word":
                in_dq = False
                i += 1
                continue
        if c in "$`":
            exp, j = _expansion(text, i, h)
            if exp is not None:
                pieces.append(Exp(exp.kind, exp.body, in_dq))
                i = j
                continue
        pieces.append(Lit(c))
        i += 1
    if in_dq and mode == "word":
        raise Unreadable("an unterminated double quote")
    merged: list[Piece] = []
    for p in pieces:
        last = merged[-1] if merged else None
        if isinstance(p, Lit) and isinstance(last, Lit) and not p.glob and not last.glob:
            merged[-1] = Lit(last.text + p.text)
        else:
            merged.append(p)
    return merged


def translated(raw: str) -> bool:
    """Whether the shell word ``raw`` holds a ``$"..."`` string outside single quotes."""
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            i += 2
        elif c == "'" and (i == 0 or raw[i - 1] != "$"):
            end = raw.find("'", i + 1)
            i = len(raw) if end < 0 else end + 1
        elif raw.startswith('$"', i):
            return True
        else:
            i += 1
    return False


# ---------------------------------------------------------------------------------------------
# Brace expansion (for words that are split into several: `for` lists, array elements)
# ---------------------------------------------------------------------------------------------


def _brace_parts(text: str, open_: int) -> tuple[list[str], int] | None:
    """The comma-separated parts of the brace group opening at ``text[open_]`` and the index of
    its ``}``; ``None`` when it is not a group."""
    depth = 0
    parts: list[str] = []
    start = open_ + 1
    try:
        for j, c in _unquoted(text, open_ + 1):
            if c == "{":
                depth += 1
            elif c == "}" and depth:
                depth -= 1
            elif c == "}" or (c == "," and depth == 0):
                parts.append(text[start:j])
                if c == "}":
                    return parts, j
                start = j + 1
    except Unreadable:
        return None
    return None


def _sequence(body: str) -> list[str] | None:
    """The words of a sequence expression ``{1..5}``, ``{a..e}``; ``None`` when ``body`` is
    not one. Raises :class:`Unreadable` for one with too many words."""
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", body)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        if abs(b - a) // step > LIMIT:
            raise Unreadable("a sequence with too many words")
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(k) for k in rng]
    m = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])", body)
    if m:
        a, b = ord(m.group(1)), ord(m.group(2))
        rng = range(a, b + 1) if a <= b else range(a, b - 1, -1)
        return [chr(k) for k in rng]
    return None


def brace_expand(raw: str) -> list[str] | None:
    """The words brace expansion makes of the shell word ``raw`` (still quoted), ``None`` when
    there are too many."""
    after_expansion = 0
    try:
        for i, c in _unquoted(raw, 0):
            if i < after_expansion:
                continue  # inside ${...} or $(...): not a brace group
            if c == "$" and raw[i + 1 : i + 2] in ("{", "("):
                after_expansion = _closing(raw, i + 1, None, raw[i + 1], "}()"[raw[i + 1] == "("])
                continue
            found = _brace_parts(raw, i) if c == "{" else None
            if found is None:
                continue
            parts, end = found
            alternatives = parts if len(parts) > 1 else _sequence(parts[0])
            if alternatives is None:
                continue
            words: list[str] = []
            for alt in alternatives:
                more = brace_expand(raw[:i] + alt + raw[end + 1 :])
                if more is None or len(words) + len(more) > LIMIT:
                    return None
                words.extend(more)
            return words
    except Unreadable as e:
        return None if "too many" in str(e) else [raw]
    return [raw]


# ---------------------------------------------------------------------------------------------
# Parameter expansions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A parameter expansion ``${...}`` taken apart: ``${!name}`` (``indirect``), ``${#name}``
    (``length``), ``name``, ``subscript`` (the text inside ``[...]``), ``op`` (``:-``, ``#``,
    ``//``, ``@P``, ``:`` for a substring, ``!names`` for ``${!prefix*}``, ...) and its ``args``
    (the word; pattern and replacement; offset and length)."""

    name: str
    subscript: str | None = None
    indirect: bool = False
    length: bool = False
    op: str = ""
    args: tuple[str, ...] = ()


def _split_top(text: str, sep: str) -> tuple[str, str] | None:
    """``text`` cut at its first ``sep`` outside quotes, brackets and expansions."""
    depth = 0
    try:
        for j, c in _unquoted(text, 0):
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == sep and depth <= 0:
                return text[:j], text[j + 1 :]
    except Unreadable:
        return None
    return None


def parse_param(body: str) -> Param | None:
    """``body`` (the text of ``${body}``, or a bare name) taken apart; ``None`` when it is not a
    parameter expansion bash accepts."""
    if body.startswith("#") and re.fullmatch(
        r"#([A-Za-z_]\w*|[0-9]+|[@*#?$!-])(\[.*\])?", body, re.DOTALL
    ):
        inner = parse_param(body[1:])
        return Param(inner.name, inner.subscript, length=True) if inner else None
    indirect = body.startswith("!") and len(body) > 1
    i = 1 if indirect else 0
    m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]").match(body, i)
    if m is None:
        return None
    name = m.group()
    j = m.end()
    subscript = None
    if body[j : j + 1] == "[":
        depth = 0
        k = j
        while k < len(body):
            if body[k] == "[":
                depth += 1
            elif body[k] == "]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        if k >= len(body):
            return None
        subscript = body[j + 1 : k]
        j = k + 1
    rest = body[j:]
    if indirect and rest in ("*", "@") and subscript is None:
        return Param(name, None, True, op="!names")
    p = Param(name, subscript, indirect)
    if not rest:
        return p
    two = rest[:2]
    if rest[0] == ":" and rest[1:2] in ("-", "=", "+", "?"):
        return Param(name, subscript, indirect, op=two, args=(rest[2:],))
    if rest[0] in "-=+?":
        return Param(name, subscript, indirect, op=rest[0], args=(rest[1:],))
    if rest[0] == ":":
        cut = _split_top(rest[1:], ":")
        args = (cut[0], cut[1]) if cut is not None else (rest[1:],)
        return Param(name, subscript, indirect, op=":", args=args)
    if two in ("##", "%%", "^^", ",,", "~~"):
        return Param(name, subscript, indirect, op=two, args=(rest[2:],))
    if rest[0] in "#%^,~":
        return Param(name, subscript, indirect, op=rest[0], args=(rest[1:],))
    if rest[0] == "/":
        op = "/"
        tail = rest[1:]
        if tail[:1] in ("/", "#", "%"):
            op, tail = "/" + tail[0], tail[1:]
        cut = _split_top(tail, "/")
        args = (cut[0], cut[1]) if cut is not None else (tail, "")
        return Param(name, subscript, indirect, op=op, args=args)
    if rest[0] == "@" and len(rest) == 2 and rest[1] in "QEPAKaUuLk":
        return Param(name, subscript, indirect, op=rest)
    return None


_POSITIONAL = "a positional parameter"

DATA_VARIABLES: dict[str, str] = {
    "_": "the last argument of the command before",
    "REPLY": "input read by read or select",
    "OPTARG": "an option argument getopts reads",
    "MAPFILE": "input read by mapfile",
    "PWD": "a directory name",
    "OLDPWD": "a directory name",
    "DIRSTACK": "a directory name",
    "BASH_REMATCH": "text matched by =~",
    "BASH_COMMAND": "the text of a command",
    "BASH_EXECUTION_STRING": "the text of a command",
    "BASH_ARGV": _POSITIONAL,
    "BASH_ARGV0": _POSITIONAL,
    "BASH_SOURCE": "a file name",
    "FUNCNAME": "a function name",
    "COPROC": "a coprocess",
    "READLINE_LINE": "the line being edited",
    "COMP_LINE": "the line being completed",
    "COMP_WORDS": "the line being completed",
}
"""Variables bash sets from data: never literals."""

NUMBER_VARIABLES = frozenset(
    "# ? $ ! RANDOM SRANDOM SECONDS LINENO BASHPID PPID UID EUID EPOCHSECONDS EPOCHREALTIME "
    "OPTIND HISTCMD BASH_SUBSHELL SHLVL COLUMNS LINES PIPESTATUS BASH_LINENO BASH_ARGC "
    "GROUPS COMP_CWORD COMP_POINT COMP_TYPE COMP_KEY".split()
)
"""Variables bash sets to numbers."""


def _base(name: str) -> Val:
    """What ``name`` holds before the line assigns it."""
    if name.isdigit() or name in ("@", "*", "0"):
        return unknown(_POSITIONAL)
    if name == "-":
        return unknown("the shell's option letters")
    if name in DATA_VARIABLES:
        return unknown(DATA_VARIABLES[name])
    if name in NUMBER_VARIABLES:
        return NUMBER.join(EMPTY)  # or unset: ${!} before a background job, COLUMNS, ...
    return EMPTY  # pi's own environment: not attacker data


_CLASSES = {"digit": "0-9", "alpha": "A-Za-z", "alnum": "A-Za-z0-9", "space": r"\s"}
"""The character classes of a bash pattern the policy translates."""


class _Untranslatable(Exception):
    pass


def _bracket(pattern: str, i: int) -> tuple[str, int] | None:
    """The regular expression of the bracket expression opening at ``pattern[i]`` and the
    index after it; ``None`` when it does not close (the ``[`` is then a character). Raises
    :class:`_Untranslatable` for a character class the policy does not know."""
    j = i + 1
    negate = pattern[j : j + 1] in ("!", "^")
    j += 1 if negate else 0
    items: list[str] = []
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and items:
            return ("[^" if negate else "[") + "".join(items) + "]", j + 1
        if pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            cls = _CLASSES.get(pattern[j + 2 : end]) if end > 0 else None
            if cls is None:
                raise _Untranslatable
            items.append(cls)
            j = end + 2
        elif c == "\\" and j + 1 < len(pattern):
            items.append(re.escape(pattern[j + 1]))
            j += 2
        elif c == "-" and items and pattern[j + 1 : j + 2] not in ("", "]"):
            items.append("-")
            j += 1
        else:
            items.append(re.escape(c))
            j += 1
    return None


def _pattern_regex(pattern: str) -> str | None:
    """A bash pattern (``*``, ``?``, ``[...]``, escapes) as a Python regular expression;
    ``None`` for what it does not translate (extended globs, unknown character classes)."""
    out: list[str] = []
    i = 0
    try:
        while i < len(pattern):
            c = pattern[i]
            if c in "@!+*?" and pattern[i + 1 : i + 2] == "(":
                return None
            bracket = _bracket(pattern, i) if c == "[" else None
            if bracket is not None:
                out.append(bracket[0])
                i = bracket[1]
            elif c == "\\" and i + 1 < len(pattern):
                out.append(re.escape(pattern[i + 1]))
                i += 2
            else:
                out.append({"*": ".*", "?": "."}.get(c, re.escape(c)))
                i += 1
    except _Untranslatable:
        return None
    return "".join(out)


class _Budget:
    """How many pattern matches the exact pattern operators of one line may still try."""

    def __init__(self, tries: int = 100_000) -> None:
        self.tries = tries

    def matcher(self, regex: str) -> Callable[[str], bool]:
        pat = re.compile(regex, re.DOTALL)

        def full(text: str) -> bool:
            self.tries -= 1
            if self.tries < 0:
                raise _Untranslatable
            return pat.fullmatch(text) is not None

        return full


def _remove(s: str, full: Callable[[str], bool], op: str) -> str:
    """``${s#p}``, ``##``, ``%``, ``%%``: the shortest or longest prefix or suffix matching."""
    n = len(s)
    if op in ("#", "##"):
        cuts = range(n + 1) if op == "#" else range(n, -1, -1)
        for k in cuts:
            if full(s[:k]):
                return s[k:]
        return s
    cuts = range(n, -1, -1) if op == "%" else range(n + 1)
    for k in cuts:
        if full(s[k:]):
            return s[:k]
    return s


def _substitute(s: str, full: Callable[[str], bool], empty: bool, replacement: str, op: str) -> str:
    """``${s/p/r}``, ``//``, ``/#``, ``/%`` as bash's ``pat_subst`` computes them: the longest
    match at the first start that matches (``empty``: the pattern is empty; an empty match
    counts); ``&`` in ``r`` is the matched text, ``\\&`` a ``&``."""

    def rep(matched: str) -> str:
        return re.sub(r"\\&|&", lambda m: "&" if m.group() == "\\&" else matched, replacement)

    n = len(s)
    if empty and op in ("/", "//"):
        return s
    if n == 0:
        return rep("") if full("") else s
    if op == "/#":
        hit = next((b for b in range(n, -1, -1) if full(s[:b])), None)
        return s if hit is None else rep(s[:hit]) + s[hit:]
    if op == "/%":
        hit = next((a for a in range(n + 1) if full(s[a:])), None)
        return s if hit is None else s[:hit] + rep(s[hit:])
    out: list[str] = []
    i = 0
    while i < n:
        hit = next((b for b in range(n, i - 1, -1) if full(s[i:b])), None)
        if hit is None:
            out.append(s[i])
            i += 1
            continue
        out.append(rep(s[i:hit]))
        if op == "/":
            return "".join(out) + s[hit:]
        if hit == i:  # an empty match: the next character is kept
            out.append(s[i])
            hit += 1
        i = hit
    return "".join(out)


def _pattern_operator(
    op: str, regex: str, replacement: str, budget: _Budget
) -> Callable[[str], str | None]:
    """The function ``${x OP pattern/replacement}`` applies to a literal (``None`` once the
    line's budget of matches is spent)."""
    full = budget.matcher(regex)

    def apply(s: str) -> str | None:
        try:
            if op.startswith("/"):
                return _substitute(s, full, regex == "", replacement, op)
            return _remove(s, full, op)
        except _Untranslatable:
            return None

    return apply


_DIGITS_ONLY = re.compile(r"\[[!^](?:0-9|\[:digit:\])\]\*?")
"""A pattern matching every character but a digit: ``${x//[!0-9]/}`` keeps only digits."""


def _case(op: str, s: str) -> str:
    if op in ("^^", "@U"):
        return s.upper()
    if op in (",,", "@L"):
        return s.lower()
    if op in ("^", "@u"):
        return s[:1].upper() + s[1:]
    if op == ",":
        return s[:1].lower() + s[1:]
    if op == "~~":
        return s.swapcase()
    return s[:1].swapcase() + s[1:]


# ---------------------------------------------------------------------------------------------
# Facts recorded while the parser walks the line
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    """``name`` is given the value of ``pieces`` (``split``: the text is split into words and
    globbed, as a ``for`` list; ``append``: ``+=``), or ``opaque``, text that is not a literal
    for that reason, or a ``number``."""

    name: str
    pieces: tuple[Piece, ...] = ()
    split: bool = False
    opaque: str | None = None
    number: bool = False
    append: bool = False


SiteKind = Literal["arith", "code", "name", "param", "words", "assigns", "fail"]


@dataclass(frozen=True)
class Site:
    """A place where bash evaluates text again.

    ``kind``: ``arith`` (a text of the command line evaluated as arithmetic; ``suffix`` names
    the array of a subscript), ``code`` (run as a command line, ``suffix`` appended; ``what`` is
    ``compound`` or ``declare`` for a declaration's argument, ``suffix`` its name and options),
    ``name`` (a variable name that may hold a subscript), ``param`` (a ``${...}`` body),
    ``words`` (expanded as shell words), ``assigns`` (a builtin assigns the variables its text
    names: ``what`` is the reason, or ``number``), ``fail`` (undecidable, ``what`` is the reason).
    ``pieces`` is the text (``body`` for ``param``); ``source``: the text is from the command
    line, whose command substitutions the parser has already found."""

    kind: SiteKind
    what: str
    depth: int
    pieces: tuple[Piece, ...] = ()
    body: str = ""
    source: bool = True
    suffix: str = ""


DECLARATIONS = frozenset({"declare", "typeset", "local", "export", "readonly", "integer", "float"})
"""Builtins that assign their ``NAME=VALUE`` arguments (zsh's ``integer``/``float``: ``-i``)."""


def _before_equals(pieces: Sequence[Piece]) -> tuple[str, tuple[Piece, ...]] | None:
    """The literal text before the first ``=`` of ``pieces`` and the pieces after it; ``None``
    when an expansion comes first."""
    text = ""
    for k, p in enumerate(pieces):
        if not isinstance(p, Lit):
            return None
        eq = p.text.find("=")
        if eq < 0:
            text += p.text
            continue
        rest = (Lit(p.text[eq + 1 :]), *pieces[k + 1 :]) if p.text[eq + 1 :] else pieces[k + 1 :]
        return text + p.text[:eq], tuple(rest)
    return None


def _split_assignment(pieces: Sequence[Piece]) -> tuple[str, bool, tuple[Piece, ...]] | None:
    """``NAME=VALUE`` or ``NAME+=VALUE`` whose ``NAME`` is literal (quoted or not): the name,
    whether it appends, and VALUE's pieces; ``None`` otherwise."""
    got = _before_equals(pieces)
    if got is None:
        return None
    text, rest = got
    append = text.endswith("+")
    name = text[:-1] if append else text
    return (name, append, rest) if re.fullmatch(r"[A-Za-z_]\w*", name) else None


@dataclass(frozen=True)
class _Options:
    """A builtin's options as :func:`_options` reads them: the option letters ``seen`` with
    their values, the ``operands``, and ``hidden``: the first operand is not a literal and may
    hold options (``printf "$opts" ...``: the word after it may then be an option's value)."""

    seen: dict[str, list[WordLike]]
    operands: list[WordLike]
    hidden: bool = False


def _options(args: Sequence[WordLike], values: str) -> _Options:
    """A builtin's options (getopt style; ``values``: letters taking a value) and operands. An
    option's value may be an expansion (``-p"$v"``); a word that is not a literal otherwise
    ends the options."""
    seen: dict[str, list[WordLike]] = {}
    i = 0
    while i < len(args):
        w = args[i]
        v = w.value
        if v == "--":
            return _Options(seen, list(args[i + 1 :]))
        if v is None:  # option letters written plainly, then an expansion: -p"$v", -C\\ "$1"
            plain = re.match(r"-[A-Za-z0-9]+", w.raw)
            letters = plain.group() if plain else ""
            if not letters:
                return _Options(seen, list(args[i:]), not w.prefix or w.prefix.startswith("-"))
        else:
            letters = v
        if not letters.startswith("-") or letters == "-":
            break
        i += 1
        for k, ch in enumerate(letters[1:], start=2):
            if ch in values:
                if k < len(letters) or v is None:  # attached: -vNAME, -v"$NAME"
                    value = letters[k:] if v is not None else None
                    seen.setdefault(ch, []).append(_Literal(w.raw[k:], value))
                elif i < len(args):
                    seen.setdefault(ch, []).append(args[i])
                    i += 1
                break
            seen.setdefault(ch, [])
        else:
            if v is None:  # -r"$more": the expansion may hold more letters
                return _Options(seen, list(args[i:]), True)
    return _Options(seen, list(args[i:]))


@dataclass(frozen=True)
class _Literal:
    """A word made here (an attached option value, the default ``MAPFILE``)."""

    raw: str
    value: str | None

    @property
    def prefix(self) -> str:
        return self.value or ""

    glob = False
    split = False


@dataclass
class Facts:
    """What the parser records while it walks a line (all nesting levels together)."""

    helpers: Helpers
    assigns: dict[Assign, None] = field(default_factory=dict)
    sites: dict[Site, None] = field(default_factory=dict)
    ints: set[str] = field(default_factory=set)
    arrays: set[str] = field(default_factory=set)
    assocs: set[str] = field(default_factory=set)
    namerefs: dict[tuple[str, tuple[Piece, ...]], None] = field(default_factory=dict)
    translated: bool = False

    def size(self) -> int:
        """How many facts there are (to tell when judging adds none)."""
        return (
            len(self.assigns)
            + len(self.sites)
            + len(self.namerefs)
            + len(self.ints)
            + len(self.arrays)
            + len(self.assocs)
        )

    # --- recording ------------------------------------------------------------------------

    def pieces(self, raw: str, mode: Mode = "word") -> tuple[Piece, ...] | str:
        """``raw`` cut into pieces, or why it cannot be."""
        if mode == "word" and translated(raw):
            self.translated = True
        try:
            return tuple(scan(raw, mode, self.helpers))
        except Unreadable as e:
            return str(e)

    def fail(self, reason: str, depth: int) -> None:
        """Record an undecidable ``reason``."""
        self.sites[Site("fail", reason, depth)] = None

    def site(self, kind: SiteKind, raw: str, what: str, depth: int, suffix: str = "") -> None:
        """A site whose text is the shell word ``raw`` of the line."""
        got = self.pieces(raw)
        if isinstance(got, str):
            self.fail(f"{what}: {got}: {raw}", depth)
            return
        self.sites[Site(kind, what, depth, pieces=got, suffix=suffix)] = None
        self.nested(got, depth)

    def nested(self, pieces: Sequence[Piece], depth: int) -> None:
        """The sites of the expansions inside ``pieces`` (a text of the command line)."""
        for p in pieces:
            if isinstance(p, Exp) and p.kind == "arith":
                self.site("arith", p.body, "arithmetic", depth)
            elif isinstance(p, Exp) and p.kind == "param":
                self.param(p.body, depth)

    def arith(self, raw: str, what: str, depth: int) -> None:
        """An arithmetic text of the command line (``$((raw))``, ``let raw``, ...)."""
        self.site("arith", raw, what, depth)

    def heredoc(self, body: str, depth: int) -> None:
        """The body of a here-doc whose delimiter is not quoted: expanded as in double quotes
        (its command substitutions are the parser's)."""
        got = self.pieces(body, "dq")
        if isinstance(got, str):
            self.fail(f"a here-doc the policy cannot read ({got})", depth)
            return
        self.nested(got, depth)

    def param(self, body: str, depth: int, *, source: bool = True) -> None:
        """A ``${body}`` of the command line (or, ``source=False``, of evaluated text)."""
        p = parse_param(body)
        if p is None:
            if source:
                self.fail(f"an expansion the policy cannot read: ${{{body}}}", depth)
            return
        self.sites[Site("param", f"${{{body}}}", depth, body=body, source=source)] = None
        if p.op in ("=", ":=") and not p.indirect:
            self.assign(p.name, self.pieces(p.args[0]))
        if source:
            for arg in p.args:
                got = self.pieces(arg)
                if not isinstance(got, str):
                    self.nested(got, depth)

    def assign(
        self,
        name: str,
        pieces: tuple[Piece, ...] | str,
        *,
        split: bool = False,
        append: bool = False,
    ) -> None:
        """``name=VALUE`` (``pieces``: VALUE, or why it cannot be read)."""
        if isinstance(pieces, str):
            self.opaque(name, f"text the policy cannot read: {pieces}")
            return
        self.assigns[Assign(name, pieces, split, append=append)] = None

    def opaque(self, name: str, reason: str) -> None:
        """``name`` is given text that is not a literal (``reason``: where it comes from)."""
        self.assigns[Assign(name, opaque=reason)] = None

    def number(self, name: str) -> None:
        """``name`` is given a number."""
        self.assigns[Assign(name, number=True)] = None

    def name_site(self, raw: str, what: str, depth: int) -> None:
        """A word naming a variable, which may hold a subscript bash evaluates."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", raw):
            self.site("name", raw, what, depth)

    def subscript(self, array: str, raw: str, depth: int) -> None:
        """``array[raw]`` in an assignment of the command line (judged as arithmetic unless the
        array is associative)."""
        self.arrays.add(array)
        if raw not in ("@", "*"):
            self.site("arith", raw, f"the subscript of {array}", depth, suffix=array)

    def attributes(self, name: str, declared: str) -> None:
        """``declare -i``/``-a``/``-A`` on ``name``."""
        if "i" in declared:
            self.ints.add(name)
        if "a" in declared:
            self.arrays.add(name)
        if "A" in declared:
            self.assocs.add(name)
            self.arrays.add(name)

    def assignment(
        self,
        name: str,
        subscript: str | None,
        append: bool,
        value: str,
        elements: Sequence[str] | None,
        depth: int,
        declared: str = "",
    ) -> None:
        """An assignment the parser found (``name[subscript]+=value``, or ``name=(elements)``);
        ``declared``: the options of the declaration it is an argument of."""
        if subscript is not None:
            self.subscript(name, subscript, depth)
        self.attributes(name, declared)
        if elements is not None:
            self.arrays.add(name)
            for element in elements:
                close = -1
                if element.startswith("["):
                    try:
                        close = _closing(element, 0, self.helpers, "[", "]")
                    except Unreadable:
                        self.fail(f"an element of the array {name} the policy cannot read", depth)
                        continue
                m = re.compile(r"\+?=").match(element, close + 1) if close > 0 else None
                if m is not None:
                    self.subscript(name, element[1:close], depth)
                    self.assign(name, self.pieces(element[m.end() :]))
                else:
                    self.words(name, element)
            return
        if "n" in declared:
            self.nameref(name, value, depth)
            return
        pieces = self.pieces(value)
        if declared and not isinstance(pieces, str):
            self.sites[Site("code", "compound", depth, pieces, suffix=f"{name}\0{declared}")] = None
        self.assign(name, pieces, append=append)

    def nameref(self, name: str, value: str, depth: int) -> None:
        """``declare -n name=value``: ``name`` and the variable ``value`` names are one."""
        got = self.pieces(value)
        if isinstance(got, str):
            self.fail(f"the nameref {name}: {got}", depth)
            return
        self.namerefs[(name, got)] = None
        self.sites[Site("name", f"the nameref {name}", depth, pieces=got)] = None

    def declaration_word(self, raw: str, depth: int, declared: str) -> None:
        """An argument of a declaration that the parser did not read as an assignment: a
        name, or a quoted ``"NAME=VALUE"``, or an expansion (judged from its value)."""
        if re.fullmatch(r"[A-Za-z_]\w*", raw):
            self.attributes(raw, declared)
            return
        got = self.pieces(raw)
        if isinstance(got, str):
            self.fail(f"an argument of a declaration: {got}: {raw}", depth)
            return
        split = _split_assignment(got)
        if split is not None:
            name, append, value = split
            self.attributes(name, declared)
            if "n" in declared:
                self.namerefs[(name, value)] = None
                self.sites[Site("name", f"the nameref {name}", depth, pieces=value)] = None
                return
            self.sites[Site("code", "compound", depth, value, suffix=f"{name}\0{declared}")] = None
            self.assign(name, value, append=append)
        else:
            self.sites[Site("code", "declare", depth, got, suffix=declared)] = None
        self.nested(got, depth)

    def declared_literal(self, text: str, depth: int, declared: str) -> None:
        """A declaration argument whose text (after expansion) is the literal ``text``: its
        subscript is evaluated, and a value ``(...)`` of an array is re-parsed."""
        m = re.match(r"([A-Za-z_]\w*)(\[.*?\])?(\+?=)?", text, re.DOTALL)
        if m is None:
            return
        name = m.group(1)
        self.attributes(name, declared)
        if m.group(2):
            self.arrays.add(name)
            self.sites[Site("name", "declare", depth, (Lit(name + m.group(2)),))] = None
        if not m.group(3):
            return
        value = text[m.end() :]
        if "n" in declared:
            self.namerefs[(name, (Lit(value),))] = None
            self.sites[Site("name", f"the nameref {name}", depth, (Lit(value),))] = None
            return
        self.sites[Site("code", "compound", depth, (Lit(value),), suffix=f"{name}\0{declared}")] = (
            None
        )
        self.assign(name, (Lit(value),), append=m.group(3) == "+=")

    def declaration(self, words: Sequence[WordLike], depth: int) -> None:
        """``declare`` and the like given as words (``command declare ...``)."""
        program = (words[0].value or "").rsplit("/", 1)[-1]
        declared = self.declared_options(program, words)
        for w in words[1:]:
            v = w.value
            if v is not None and (v == "--" or (len(v) > 1 and v[0] in "-+" and "=" not in v)):
                continue
            if "f" in declared or "F" in declared:
                continue
            m = re.match(r"([A-Za-z_]\w*)(?:\[([^\]]*)\])?(\+?)=", w.raw)
            if m is not None:
                value = w.raw[m.end() :]
                self.assignment(
                    m.group(1), m.group(2), bool(m.group(3)), value, None, depth, declared
                )
            else:
                self.declaration_word(w.raw, depth, declared)

    @staticmethod
    def declared_options(program: str, words: Sequence[WordLike]) -> str:
        """The option letters of a declaration (``integer`` is ``-i``); at least ``+``."""
        declared = "+i" if program in ("integer", "float") else "+"
        for w in words[1:]:
            v = w.value
            if v is not None and len(v) > 1 and v[0] == "-" and v != "--" and "=" not in v:
                declared += v[1:]
        return declared

    def words(self, name: str, raw: str) -> None:
        """``name`` is given each word bash makes of ``raw`` (brace expansion, splitting,
        globbing), as in a ``for`` list or an array's elements."""
        words = brace_expand(raw)
        if words is None:
            self.opaque(name, "a brace expansion with too many words")
            return
        for w in words:
            self.assign(name, self.pieces(w), split=True)

    def for_list(self, name: str, raws: Sequence[str] | None, depth: int) -> None:
        """``for name in raws`` (``None``: the positional parameters)."""
        if raws is None:
            self.opaque(name, _POSITIONAL)
            return
        for raw in raws:
            self.words(name, raw)

    def environment(self, raw: str, depth: int) -> None:
        """A ``NAME=VALUE`` word given to ``env`` or ``sudo``: the environment of the command
        it runs; ``BASH_FUNC_name%%=() {...}`` imports a function into a bash there."""
        got = self.pieces(raw)
        if isinstance(got, str):
            self.fail(f"a variable of the environment the policy cannot read: {got}: {raw}", depth)
            return
        named = _before_equals(got)
        if named is not None and named[0].startswith("BASH_FUNC_") and named[0].endswith("%%"):
            what = f"the function {named[0]} imported from the environment"
            self.sites[Site("code", what, depth, (Lit("f"), *named[1]))] = None
            self.nested(got, depth)
            return
        split = _split_assignment(got)
        if split is None:
            self.fail(f"a variable of the environment whose name is not a literal: {raw}", depth)
            return
        name, _, value = split
        self.assign(name, value)
        self.nested(got, depth)

    # --- builtins ----------------------------------------------------------------------------

    def builtin(self, name: str, words: Sequence[WordLike], depth: int) -> None:
        """The builtins that assign variables or evaluate text, called as ``words``."""
        args = words[1:]
        for w in args:
            m = re.fullmatch(r"\{([A-Za-z_]\w*\[.*\])\}", w.value or "", re.DOTALL)
            if m is not None:  # exec {a[$x]}>file: the descriptor goes to a[$x]
                self.sites[Site("name", "a redirection's variable", depth, (Lit(m.group(1)),))] = (
                    None
                )
        handler = _BUILTINS.get(name)
        if handler is not None:
            handler(self, name, args, depth)
        elif name in DECLARATIONS:
            self.declaration(words, depth)

    def _read(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "adinNptu")
        for w in got.seen.get("a", []):
            self.arrays.add(w.value or "")
            self.assigned_by(w, "read -a", depth)
        for w in got.operands:
            self.assigned_by(w, "read", depth)

    def assigned_by(self, w: WordLike, what: str, depth: int, *, number: bool = False) -> None:
        """The builtin ``what`` assigns input (or a number) to the variable the word ``w``
        names; a name that is not a literal is judged from its possible values."""
        self.name_site(w.raw, what, depth)
        reason = (
            f"input read by {what.split()[0]}"
            if not what.startswith("printf")
            else ("the output of printf -v")
        )
        if w.value is not None:
            target = re.split(r"\[", w.value, maxsplit=1)[0]
            if number:
                self.number(target)
            else:
                self.opaque(target, reason)
            return
        got = self.pieces(w.raw)
        if not isinstance(got, str):
            kind = "number" if number else reason
            self.sites[Site("assigns", kind, depth, pieces=got)] = None

    def _mapfile(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "dnOsuCc")
        callbacks = list(got.seen.get("C", []))
        if got.hidden and len(got.operands) > 1:
            callbacks.append(got.operands[1])  # "$opt" may be -C
        for w in callbacks:
            self.site("code", w.raw, f"{name} -C", depth, suffix=' 0 "$line"')
        targets = got.operands or [_Literal("MAPFILE", "MAPFILE")]
        for target in targets if got.hidden else targets[:1]:
            self.arrays.add(target.value or "")
            self.assigned_by(target, name, depth)

    def _printf(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args[:2], "v")
        rest = [*got.operands, *args[2:]]
        if rest and rest[0].value == "--":
            rest = rest[1:]
        targets = list(got.seen.get("v", []))
        if got.hidden and len(rest) > 1:
            targets.append(rest[1])  # printf "$x" NAME ...: "$x" may be -v
        for w in targets:
            fmt = rest[0].value if rest and not got.hidden else None
            if w.value and fmt is not None and len(rest) <= 2:
                if re.fullmatch(r"[^%\\]*(%s[^%\\]*)?", fmt):
                    # printf -v x '%s' "$y": the format with the argument in it
                    before, _, after = fmt.partition("%s")
                    value = self.pieces(rest[1].raw) if len(rest) == 2 else ()
                    if not isinstance(value, str):
                        self.name_site(w.raw, "printf -v", depth)
                        target = re.split(r"\[", w.value, maxsplit=1)[0]
                        self.assign(target, (Lit(before), *value, Lit(after)))
                        continue
            self.assigned_by(w, "printf -v", depth)

    def _trap(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        """``trap ACTION SIGNAL...`` whose action is not a literal (a literal one is a wrapper
        of the parser)."""
        got = _options(args, "")
        if "p" not in got.seen and "l" not in got.seen and len(got.operands) >= 2:
            action = got.operands[0]
            if action.value is None:
                self.site("code", action.raw, "trap", depth)

    def _getopts(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        if len(args) > 1:
            self.assigned_by(args[1], "getopts", depth)

    def _wait(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "p")
        targets = list(got.seen.get("p", []))
        if got.hidden and len(got.operands) > 1:
            targets.append(got.operands[1])  # wait "$opt" NAME: "$opt" may be -p
        for w in targets:
            self.assigned_by(w, "wait -p", depth, number=True)

    def _let(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        for w in args:
            self.arith(w.raw, "let", depth)

    def _unset(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "")
        if "f" not in got.seen:
            for w in got.operands:
                self.name_site(w.raw, "unset", depth)

    def _test(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        for k, w in enumerate(args[:-1]):
            hidden = w.value is None and (not w.prefix or w.prefix.startswith("-"))
            if w.value in ("-v", "-R") or hidden:  # "$op" may be -v
                self.name_site(args[k + 1].raw, f"test {w.value or '-v'}", depth)

    def _complete(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "oAGWFCXPS")
        commands = list(got.seen.get("C", []))
        words = list(got.seen.get("W", []))
        if got.hidden and len(got.operands) > 1:
            commands.append(got.operands[1])  # "$opt" may be -C or -W
            words.append(got.operands[1])
        for w in commands:
            self.site("code", w.raw, f"{name} -C", depth, suffix=' "$1" "$2" "$3"')
        for w in words:
            self.site("words", w.raw, f"{name} -W", depth)

    def _bind(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "mfqurx")
        if got.hidden:
            self.fail(f"bind takes an option that is not a literal: {got.operands[0].raw}", depth)
        for w in got.seen.get("x", []):
            if w.value is None:
                self.fail(f"bind -x binds a command that is not a literal: {w.raw}", depth)
                continue
            m = re.match(r"\s*(\"(?:[^\"\\]|\\.)*\"|[^:\s]*)\s*:\s*(.*)", w.value, re.DOTALL)
            command = m.group(2) if m else w.value
            if len(command) > 1 and command[0] == command[-1] and command[0] in "\"'":
                command = command[1:-1]
            self.sites[Site("code", "bind -x", depth, (Lit(command),))] = None

    def _fc(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "e")
        if "l" not in got.seen or got.hidden:
            self.fail("fc runs commands from the history, which the policy cannot see", depth)

    def _enable(self, name: str, args: Sequence[WordLike], depth: int) -> None:
        got = _options(args, "f")
        if "f" in got.seen:
            self.fail("enable -f loads a shared object the policy cannot inspect", depth)
        elif got.hidden:
            self.fail(f"enable takes an option that is not a literal: {got.operands[0].raw}", depth)


_BUILTINS: dict[str, Callable[[Facts, str, Sequence[WordLike], int], None]] = {
    "read": Facts._read,
    "mapfile": Facts._mapfile,
    "readarray": Facts._mapfile,
    "printf": Facts._printf,
    "getopts": Facts._getopts,
    "wait": Facts._wait,
    "let": Facts._let,
    "unset": Facts._unset,
    "test": Facts._test,
    "[": Facts._test,
    "compgen": Facts._complete,
    "complete": Facts._complete,
    "bind": Facts._bind,
    "fc": Facts._fc,
    "trap": Facts._trap,
    "enable": Facts._enable,
}
"""The builtins :meth:`Facts.builtin` reads, by name."""


# ---------------------------------------------------------------------------------------------
# The values of the variables
# ---------------------------------------------------------------------------------------------


class Values:
    """The possible values of every variable of the line, from its :class:`Facts`."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.budget = _Budget()
        self.parent: dict[str, str] = {}
        for name, pieces in facts.namerefs:
            for target in self._literal_names(pieces):
                self._union(name, target)
        self.assigned: dict[str, Val] = {}
        self._fixpoint()

    # --- namerefs: a nameref and its target are one variable ------------------------------

    def find(self, name: str) -> str:
        while self.parent.get(name, name) != name:
            name = self.parent[name]
        return name

    def _union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    @staticmethod
    def _literal_names(pieces: Sequence[Piece]) -> list[str]:
        if all(isinstance(p, Lit) for p in pieces):
            text = "".join(p.text for p in pieces if isinstance(p, Lit))
            return [re.split(r"\[", text, maxsplit=1)[0]]
        return []

    def members(self, name: str) -> list[str]:
        """Every name that is the same variable as ``name``."""
        root = self.find(name)
        return [n for n in {name, *self.parent} if self.find(n) == root]

    def _fixpoint(self) -> None:
        table: dict[str, Val] = {}
        for _ in range(2 * LIMIT):
            self.assigned = table
            new: dict[str, Val] = {}
            for a in self.facts.assigns:
                key = self.find(a.name)
                v = self.of_assign(a)
                new[key] = new[key].join(v) if key in new else v
            if new == table:
                return
            table = new
        self.assigned = {
            k: (v if v == table.get(k) else unknown("a value built from itself"))
            for k, v in new.items()
        }

    def of_assign(self, a: Assign) -> Val:
        """The value an assignment gives the variable (``+=`` adds to an integer, appends to a
        string)."""
        v = self.assigned_text(a)
        if a.append:
            if self.find(a.name) in {self.find(n) for n in self.facts.ints}:
                return NUMBER
            return self.var(a.name).concat(v)
        return v

    def assigned_text(self, a: Assign) -> Val:
        """The text an assignment gives (what bash evaluates for an integer variable)."""
        if a.opaque is not None:
            return unknown(a.opaque)
        if a.number:
            return NUMBER
        return self.of(a.pieces, split=a.split)

    # --- values of text --------------------------------------------------------------------

    def var(self, name: str) -> Val:
        """What the variable ``name`` may hold (any element of an array)."""
        v = _base(name)
        got = self.assigned.get(self.find(name))
        return (v.join(got) if got is not None else v).through(name)

    def of(self, pieces: Sequence[Piece], *, split: bool = False) -> Val:
        """The value of a text cut into ``pieces`` (``split``: as a word bash splits and
        globs, e.g. in a ``for`` list)."""
        out = EMPTY
        for p in pieces:
            if isinstance(p, Lit):
                v = unknown("file names a glob matches") if split and p.glob else literal(p.text)
            elif p.kind == "cmd":
                v = unknown("a command's output")
            elif p.kind == "procsub":
                v = unknown("the path of a process substitution")
            elif p.kind == "arith":
                v = NUMBER
            else:
                v = self.param(p.body)
            if split and isinstance(p, Exp) and not p.quoted and not v.unknown:
                # word splitting: each field, as well as the whole value
                fields = {f for s in v.lits for f in s.split()} | v.lits
                v = (
                    Val(frozenset(fields))
                    if len(fields) <= LIMIT
                    else unknown("too many possible values")
                )
            out = out.concat(v)
        return out

    def word(self, raw: str) -> Val:
        """The value of a word inside a parameter expansion (``${x:-WORD}``)."""
        try:
            return self.of(scan(raw, "word", self.facts.helpers))
        except Unreadable as e:
            return unknown(f"text the policy cannot read ({e})")

    def param(self, body: str) -> Val:
        """The value of ``${body}``."""
        p = parse_param(body)
        if p is None:
            return unknown(f"an expansion the policy cannot read (${{{body}}})")
        if p.length:
            return NUMBER
        if p.op == "!names":
            return unknown("the names of variables")
        if p.indirect and p.subscript in ("@", "*"):
            if self.find(p.name) in {self.find(a) for a in self.facts.assocs}:
                return unknown("the keys of an array")
            return NUMBER
        base = self.var(p.name)
        if p.indirect:
            if base.unknown:
                return base
            base = _join_all(self.var(re.split(r"\[", n, maxsplit=1)[0]) for n in base.lits if n)
        return self._operator(p, base)

    def _operator(self, p: Param, base: Val) -> Val:
        op = p.op
        why = f"a transformation of ${p.name}"
        if op == "":
            return base
        if op in (":-", "-", ":=", "="):
            return base.join(self.word(p.args[0]))
        if op in (":+", "+"):
            return EMPTY.join(self.word(p.args[0]))
        if op in (":?", "?"):
            return base
        if op in ("^", "^^", ",", ",,", "~", "~~", "@U", "@u", "@L"):
            if p.args and p.args[0]:
                return _fallback(base, why)
            return base.mapped(lambda s: _case(op, s), why)
        if op == "@Q":
            return base.mapped(lambda s: "'" + s.replace("'", "'\\''") + "'", why)
        if op == "@E":
            helpers = self.facts.helpers
            return base.mapped(
                lambda s: helpers.ansi_c("'" + s.replace("'", "\\'") + "'", 0)[0], why
            )
        if op in ("#", "##", "%", "%%", "/", "//", "/#", "/%"):
            return self._pattern(p, base, why)
        if op == ":":
            return self._substring(p, base, why)
        if op == "@P":
            return unknown("the expansion of a prompt string")
        return _fallback(base, why)

    def _pattern(self, p: Param, base: Val, why: str) -> Val:
        pattern = self.word(p.args[0])
        if p.op == "//" and _DIGITS_ONLY.fullmatch(p.args[0]):
            if self.word(p.args[1]).lits <= {""}:
                return NUMBER  # ${x//[!0-9]/}: digits only
        replacement = self.word(p.args[1]) if len(p.args) > 1 else EMPTY
        if pattern.unknown or replacement.unknown or len(pattern.lits) * len(replacement.lits) > 8:
            return _fallback(base, why) if replacement.lits <= {""} else unknown(why)
        out: Val | None = None
        for pat_text in pattern.lits:
            regex = _pattern_regex(pat_text)
            for rep in replacement.lits:
                if regex is None:
                    v = _fallback(base, why) if rep == "" else unknown(why)
                else:
                    v = base.mapped(_pattern_operator(p.op, regex, rep, self.budget), why)
                out = v if out is None else out.join(v)
        return out if out is not None else base

    def _substring(self, p: Param, base: Val, why: str) -> Val:
        bounds: list[int | None] = []
        for arg in (*p.args, "")[:2]:
            text = arg.strip()
            if not text:
                bounds.append(None)
            elif re.fullmatch(r"-?\d+", text):
                bounds.append(int(text))
            else:
                return _fallback(base, why)
        off, length = bounds

        def cut(s: str) -> str:
            start = off or 0
            start = max(len(s) + start, 0) if start < 0 else start
            if length is None:
                return s[start:]
            end = len(s) + length if length < 0 else start + length
            return s[start:end]

        return base.mapped(cut, why)


# ---------------------------------------------------------------------------------------------
# Judging the sites
# ---------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"(?<![\w#@.$])[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_ARITH = re.compile(r"[\s0-9+\-*/%<>=!&|^~?:,().]*")

PROMPT_VARIABLES = ("PS0", "PS1", "PS2", "PS4")
INTEGER_VARIABLES = ("RANDOM", "SRANDOM", "OPTIND", "HISTCMD")
"""Special variables whose assigned value bash evaluates as arithmetic."""


def _origin(v: Val) -> str:
    """Where the text that is not a literal comes from: ``the value of $x, which is not a
    literal (a command's output)``."""
    if v.via:
        return f"the value of ${v.via}, which is not a literal ({v.unknown})"
    return f"{v.unknown}, which is not a literal"


def _subject(v: Val, what: str) -> str:
    return f"{what} evaluates {_origin(v)}"


class _Judge:
    def __init__(
        self,
        facts: Facts,
        values: Values,
        extract: Callable[[str, int], list[Any]],
        undecidable: Callable[[str], Any],
    ) -> None:
        self.facts = facts
        self.values = values
        self.extract = extract
        self.undecidable = undecidable
        self.items: list[Any] = []
        self.done: set[tuple[str, str, int]] = set()
        self.failed: set[str] = set()

    def once(self, kind: str, text: str, depth: int) -> bool:
        key = (kind, text, depth)
        if key in self.done:
            return False
        self.done.add(key)
        return True

    def fail(self, reason: str) -> None:
        if reason not in self.failed:
            self.failed.add(reason)
            self.items.append(self.undecidable(reason))

    def code_text(self, text: str, depth: int) -> None:
        if text.strip() and self.once("code", text, depth):
            self.items.extend(self.extract(text, depth + 1))

    def raw_pieces(self, text: str, what: str) -> list[Piece] | None:
        """The pieces of text bash evaluates again, read both with and without its backslash
        escapes: each round of expansion removes one level (``\\$(`` runs one round later, and
        ``\\$$(`` is an escaped ``$`` before a ``$(``)."""
        try:
            pieces = scan(text, "raw", self.facts.helpers)
            if "\\" in text:
                pieces += scan(text, "dq", self.facts.helpers)
            return pieces
        except Unreadable as e:
            self.fail(f"{what} evaluates text the policy cannot read ({e}): {text}")
            return None

    # --- arithmetic --------------------------------------------------------------------------

    def arith(self, v: Val, what: str, depth: int) -> None:
        if v.unknown:
            self.fail(_subject(v, what))
        for s in sorted(v.lits):
            self.arith_text(s, what, depth)

    def arith_text(self, s: str, what: str, depth: int) -> None:
        """An expression bash evaluates (after its own expansion): every name's value is
        evaluated too, and a subscript is expanded (read ``raw``: any ``$`` counts)."""
        if _PLAIN_ARITH.fullmatch(s) or not self.once("arith", s, depth):
            return
        pieces = self.raw_pieces(s, what)
        for p in pieces or ():
            if isinstance(p, Lit):
                for m in _IDENTIFIER.finditer(p.text):
                    self.arith_var(m.group(), depth)
            else:
                self.expansion(p, what, depth)
                if p.kind == "param":
                    self.arith(self.values.param(p.body), what, depth)

    def arith_var(self, name: str, depth: int) -> None:
        if self.once("var", name, depth):
            self.arith(self.values.var(name), "arithmetic", depth)

    def expansion(self, p: Exp, what: str, depth: int) -> None:
        """An expansion inside text that bash evaluates again: its commands run."""
        if p.kind in ("cmd", "procsub"):
            self.code_text(p.body, depth)
        elif p.kind == "arith":
            self.arith_text(p.body, what, depth)
        else:
            self.param(p.body, depth, source=False)

    # --- the other evaluators -----------------------------------------------------------------

    def expanded(self, v: Val, what: str, depth: int, *, prompt: bool = False) -> None:
        """Text expanded as in double quotes (a prompt string after its escapes)."""
        if v.unknown:
            self.fail(_subject(v, what))
        for s in sorted(v.lits):
            if prompt:
                s = re.sub(r"\\([0-7]{1,3})", lambda m: chr(int(m.group(1), 8) & 0xFF), s)
            for p in self.raw_pieces(s, what) or ():
                if isinstance(p, Exp):
                    self.expansion(p, what, depth)

    def words(self, v: Val, what: str, depth: int) -> None:
        """Text split into words, each expanded (``compgen -W``)."""
        if v.unknown:
            self.fail(_subject(v, what))
        for s in sorted(v.lits):
            self.expand_word(s, what, depth)

    def expand_word(self, text: str, what: str, depth: int) -> None:
        """The expansions of ``text`` read as a shell word, which bash performs."""
        try:
            pieces = scan(text, "word", self.facts.helpers)
        except Unreadable as e:
            self.fail(f"{what} expands text the policy cannot read ({e}): {text}")
            return
        for p in pieces:
            if isinstance(p, Exp):
                self.expansion(p, what, depth)

    def name(self, v: Val, what: str, depth: int) -> None:
        """Variable names: a subscript in one is expanded and evaluated."""
        if v.unknown:
            self.fail(f"{what} takes a variable name from {_origin(v)}")
        for s in sorted(v.lits):
            m = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\[(.*)\]", s, re.DOTALL)
            if m is not None and m.group(1) not in ("@", "*"):
                self.arith_text(m.group(1), what, depth)

    def code(self, v: Val, what: str, depth: int, suffix: str = "") -> None:
        if v.unknown:
            self.fail(f"{what} runs {_origin(v)}")
        for s in sorted(v.lits):
            self.code_text(s + suffix if s.strip() else s, depth)

    def param(self, body: str, depth: int, *, source: bool) -> None:
        p = parse_param(body)
        if p is None:
            if not source:
                self.fail(f"an expansion the policy cannot read: ${{{body}}}")
            return
        if not self.once("param", body, depth) and not source:
            return
        assocs = {self.values.find(a) for a in self.facts.assocs}
        what = f"${{{body}}}"
        if p.subscript is not None and p.subscript not in ("@", "*"):
            if self.values.find(p.name) not in assocs:
                self.subscript_text(p.subscript, f"the subscript of {p.name}", depth, source)
        if p.indirect and p.op != "!names" and p.subscript not in ("@", "*"):
            self.name(self.values.var(p.name), f"${{!{p.name}}}", depth)
        if p.op == "@P":
            self.expanded(self.values.param(body[:-2]), what, depth, prompt=True)
        if p.op == ":":
            for arg in p.args:
                self.subscript_text(arg, f"the offset of {what}", depth, source)
        if not source:
            if p.op in ("=", ":="):
                self.facts.assign(p.name, self.facts.pieces(p.args[0]))
            for arg in p.args if p.op != ":" else ():
                self.expand_word(arg, what, depth)

    def subscript_text(self, text: str, what: str, depth: int, source: bool) -> None:
        """An arithmetic text inside a ``${...}``: expanded, then evaluated."""
        if not source:
            self.arith_text(text, what, depth)
            return
        try:
            pieces = scan(text, "word", self.facts.helpers)
        except Unreadable as e:
            self.fail(f"{what}: text the policy cannot read ({e}): {text}")
            return
        self.arith(self.values.of(pieces), what, depth)

    # --- sites -----------------------------------------------------------------------------

    def site(self, s: Site) -> None:
        v = self.values
        if s.kind == "fail":
            self.fail(s.what)
        elif s.kind == "arith":
            if s.suffix and v.find(s.suffix) in {v.find(a) for a in self.facts.assocs}:
                return  # an associative array's key is a string
            self.arith(v.of(s.pieces), s.what, s.depth)
        elif s.kind == "words":
            self.words(v.of(s.pieces), s.what, s.depth)
        elif s.kind == "name":
            self.name(v.of(s.pieces), s.what, s.depth)
        elif s.kind == "param":
            self.param(s.body, s.depth, source=s.source)
        elif s.kind == "assigns":
            for name in sorted(v.of(s.pieces).lits):
                target = re.split(r"\[", name, maxsplit=1)[0]
                if not re.fullmatch(r"[A-Za-z_]\w*", target):
                    continue
                if s.what == "number":
                    self.facts.number(target)
                else:
                    self.facts.opaque(target, s.what)
        elif s.what == "compound":
            self.compound(s)
        elif s.what == "declare":
            self.declare(s)
        else:
            self.code(v.of(s.pieces), s.what, s.depth, s.suffix)

    def compound(self, s: Site) -> None:
        """A declaration's ``NAME=VALUE``: a value ``(...)`` given to an array is parsed again
        as a compound assignment, even when it was quoted or came from an expansion."""
        name, declared = s.suffix.split("\0")
        v = self.values
        arrays = {v.find(a) for a in self.facts.arrays}
        if not ({"a", "A"} & set(declared) or v.find(name) in arrays):
            return
        value = v.of(s.pieces)
        if value.unknown:
            self.fail(f"declare parses again as the elements of the array {name} {_origin(value)}")
        for lit in sorted(value.lits):
            if lit.startswith("("):
                self.code_text(f"{name}={lit}", s.depth)

    def declare(self, s: Site) -> None:
        """A declaration's argument whose name is not a literal (``declare "$x"``): each
        literal it may be is judged as that argument."""
        value = self.values.of(s.pieces)
        if value.unknown:
            self.fail(f"declare takes an argument from {_origin(value)}")
        for lit in sorted(value.lits):
            if lit[:1] in ("-", "+"):
                self.fail(f"declare takes options that are not literals: {lit}")
                continue
            self.facts.declared_literal(lit, s.depth, s.suffix)

    def variables(self) -> None:
        """The variables bash evaluates when they are assigned or used."""
        v = self.values
        by_root: dict[str, list[Assign]] = {}
        for a in self.facts.assigns:
            by_root.setdefault(v.find(a.name), []).append(a)
        ints = {v.find(n) for n in self.facts.ints}
        for root, assigns in by_root.items():
            names = set(v.members(root)) | {a.name for a in assigns}
            value = _join_all(v.assigned_text(a).through(a.name) for a in assigns)
            depth = 0
            for name in sorted(names):
                if name in ("BASH_ENV", "ENV"):
                    self.fail(f"{name} names a file that a new shell sources")
                elif name in PROMPT_VARIABLES:
                    self.expanded(
                        value, f"{name} (a prompt string bash expands)", depth, prompt=True
                    )
                elif name == "PROMPT_COMMAND":
                    self.code(value, name, depth)
                elif name in ("MAILPATH", "MAIL"):
                    self.expanded(value, name, depth)
                elif name in ("SHELLOPTS", "BASHOPTS") and value.unknown:
                    self.fail(_subject(value, f"{name} (shell options)"))
                elif name == "BASH_CMDS":
                    self.fail("BASH_CMDS gives a program another name the policy cannot follow")
                elif name == "BASH_ALIASES":
                    self.code(value, "an alias defined in BASH_ALIASES", depth)
                elif name in ("TEXTDOMAIN", "TEXTDOMAINDIR") and self.facts.translated:
                    self.fail(
                        f'$"..." strings are translated from a catalogue {name} chose, '
                        "and the translation is expanded"
                    )
            if root in ints or names & set(INTEGER_VARIABLES):
                shown = sorted(names & (set(INTEGER_VARIABLES) | set(self.facts.ints)))
                self.arith(
                    value, f"assigning to the integer variable {shown[0] if shown else root}", depth
                )


def resolve(
    facts: Facts,
    extract: Callable[[str, int], list[Any]],
    undecidable: Callable[[str], Any],
) -> list[Any]:
    """Judge every site of ``facts``: the commands and undecidable parts text evaluated again
    adds to the line. ``extract(text, depth)`` parses a command line found in such text (it
    records that line's facts into ``facts`` too); ``undecidable(reason)`` makes an undecidable
    item."""
    cache: dict[tuple[str, int], list[Any]] = {}

    def extract_once(text: str, depth: int) -> list[Any]:
        key = (text, depth)
        if key not in cache:
            cache[key] = extract(text, depth)
        return cache[key]

    for _ in range(MAX_ROUNDS):
        before = facts.size()
        judge = _Judge(facts, Values(facts), extract_once, undecidable)
        for site in list(facts.sites):
            judge.site(site)
        judge.variables()
        if facts.size() == before:
            return judge.items
    return [undecidable("text that bash evaluates again holds more such text too deeply")]


# ---------------------------------------------------------------------------------------------
# zsh
# ---------------------------------------------------------------------------------------------

_ZSH_EXPANSION = re.compile(r"\$\{[(~=^]|\$[~=^][A-Za-z_{]")
_ZSH_WORDS = re.compile(
    r"(?:^|[\s;&|(])(emulate|zmodload|autoload|zle|sched|zpty|zstyle|zcompile|noglob|nocorrect"
    r"|repeat|r|fc|alias\s+-[a-zA-Z]*[gs])(?=[\s;&|)]|$)"
)
_ZSH_OPTIONS = re.compile(
    r"glob_?subst|prompt_?subst|magic_?equal_?subst|rc_?expand_?param", re.IGNORECASE
)


def zsh_hazard(text: str) -> str | None:
    """What in the zsh command string ``text`` zsh evaluates and the bash grammar does not see:
    a glob qualifier (``*(e:...:)``, ``*(+f)``), a parameter flag (``${(e)x}``), ``$~x``,
    ``=(cmd)`` or ``=prog``, ``noglob``/``repeat`` (they run the rest), ``emulate -c``,
    ``zmodload``, ``sched``, global aliases, ``GLOB_SUBST``... ``None`` without one."""
    outside: list[str] = []  # text outside single quotes, double-quoted parts blanked
    unquoted: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            outside.append(text[i : i + 2])
            unquoted.append("  ")
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            end = len(text) if end < 0 else end + 1
            unquoted.append(" " * (end - i))
            outside.append(" " * (end - i))
            i = end
        elif c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            outside.append(text[i : j + 1])
            unquoted.append(" " * (j + 1 - i))
            i = j + 1
        else:
            outside.append(c)
            unquoted.append(c)
            i += 1
    seen = "".join(outside)
    bare = "".join(unquoted)
    m = _ZSH_EXPANSION.search(seen)
    if m:
        return f"a parameter flag or modifier ({m.group()})"
    m = re.search(r"[^\s;&|()<>=$`!@\[\]{}]\((?!\))|(?:^|[\s;&|(])=[(A-Za-z_./]", bare)
    if m:
        return f"a glob qualifier or an = expansion ({m.group().strip()})"
    m = _ZSH_WORDS.search(bare)
    if m:
        return f"its {m.group(1).split()[0]}"
    m = _ZSH_OPTIONS.search(text)
    if m:
        return f"text under its option {m.group()}"
    return None


__all__ = [
    "DATA_VARIABLES",
    "LIMIT",
    "NUMBER_VARIABLES",
    "Assign",
    "Exp",
    "Facts",
    "Lit",
    "Param",
    "Piece",
    "Site",
    "Unreadable",
    "Val",
    "Values",
    "brace_expand",
    "parse_param",
    "resolve",
    "scan",
    "zsh_hazard",
]
