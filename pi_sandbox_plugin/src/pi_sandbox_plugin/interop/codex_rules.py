"""Codex execution-policy ``.rules`` files, loaded with a real Starlark interpreter and applied to
argv lists and to whole bash command lines.

The format and Codex's semantics are in ``/work/shared/spec/policy-formats.md`` §2; for a plain
argv, :meth:`CodexRules.check_argv` gives exactly what ``codex execpolicy check`` prints (its
:meth:`RulesVerdict.to_codex_json` is that JSON; the tests compare them with the ``codex``
binary).

API:

* :func:`load_codex_rules` (``paths``, ``display_names=None``, ``limits=None``) ->
  :class:`CodexRules`, or :class:`CodexRulesError` (a ``pi_core.ConfigError``) whose message is
  one line, ``FILE:LINE: problem`` (``FILE: problem`` when the problem has no line: an unreadable
  file, a file over the size cap, an evaluation killed for time or memory).
* :meth:`CodexRules.check_argv` -> :class:`RulesVerdict` (``decision``, ``matches`` of
  :class:`RuleMatch`).
* :meth:`CodexRules.check_command_line` -> :class:`LineVerdict`: every simple command that
  :func:`pi_sandbox_plugin.policies.bash_parser.parse_command_line` finds (pipelines, lists,
  substitutions, ``bash -c`` strings, ``env``/``sudo``/``xargs``/... wrappers and what they
  run) is judged, and the strictest decision wins (``forbidden`` > ``prompt`` > ``allow``).

Loading. Each file is evaluated in its own module by starlark-pyo3 (the starlark-rust engine of
Codex; Extended dialect with f-strings) with the builtins ``prefix_rule(pattern, decision,
match, not_match, justification)``, ``host_executable(name, paths)`` and ``network_rule(host,
protocol, decision, justification)``, checked as Codex checks them. The evaluation runs in a
child process (:mod:`pi_sandbox_plugin._codex_starlark`) with its memory, time, call depth,
rule count and data size capped (:class:`CodexRulesLimits`); the files are read here (size cap,
UTF-8). As in Codex, the ``match``/``not_match`` examples of a ``prefix_rule`` are checked once
its whole file is evaluated, against that rule alone (all its first-token alternatives) with
host executables resolved, using the ``host_executable`` declarations of that file and of the
files loaded before it (a later file's declarations do not count). A later
``host_executable`` for the same name replaces an earlier one. Two leniencies: pi accepts
``~/...`` paths in ``host_executable`` as the Codex documentation says (``codex`` 0.171 rejects
them), and a tuple where a list is expected (starlark-pyo3 hands both to Python as a list).

Matching (Codex's ``Policy``): a rule matches an argv when the argv starts with its pattern
(a nested list is a set of alternatives at that position); all the rules whose program is
``argv[0]`` are tried. When none matches and host executables are resolved, a ``argv[0]`` that
names a path (``/usr/bin/git``, ``./git``, ``~/bin/git``) is made absolute against ``cwd`` and
normalized, and the rules of its basename apply if no ``host_executable`` of that name is
declared or the path is one of its paths; those matches report ``resolved_program``.

Command lines. What the parser cannot decide is judged strictly:

* a part the parser marks undecidable (a program name that is not a literal, as in ``$CMD rm -rf
  /``; ``eval``; a shell reading standard input; a line that does not parse) gives ``prompt``,
  with the parser's reason in :attr:`LineVerdict.undecidable` (when the rules hold no
  ``prefix_rule``, nothing can match and it gives no decision);
* a subcommand's other name counts as that subcommand too (``git send-pack`` and ``git
  http-push`` match a rule ``["git", "push"]``: :attr:`~pi_sandbox_plugin.policies.grammars.
  ProgramGrammar.aliases`);
* a word that is not a literal at a position a rule compares (``git $SUB`` against ``["git",
  "push"]``), a glob there, a word ``xargs``/``find -exec`` fill in, or words ``xargs`` appends
  after the last one: a rule that may match counts as matching, with its own decision; the
  match has ``may_match=True`` and a reason ``may match`` is listed. A quoted expansion is one
  word of any value (it may match when some alternative starts with its literal prefix); an
  unquoted one may become any number of words, so the rest of the pattern may match; a glob may
  match the alternatives it matches as a pattern.

``decision`` is ``None`` when no rule matched (pi's own command policy decides then).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_core import ConfigError
from pi_sandbox_plugin.interop import _codex_starlark
from pi_sandbox_plugin.interop._codex_starlark import absolutize, home_dir, rust_file_name
from pi_sandbox_plugin.policies.bash_parser import SimpleCommand, Undecidable, parse_command_line
from pi_sandbox_plugin.policies.grammars import BUILTIN_GRAMMARS

RuleDecision = Literal["allow", "prompt", "forbidden"]
"""A Codex decision."""

_ORDER: tuple[RuleDecision, ...] = ("allow", "prompt", "forbidden")


def _strictest(decisions: Sequence[str | None]) -> RuleDecision | None:
    """The strictest of ``decisions`` (forbidden > prompt > allow), ``None`` when none."""
    ranks = [_ORDER.index(d) for d in decisions if d in _ORDER]
    return _ORDER[max(ranks)] if ranks else None


class CodexRulesError(ConfigError):
    """A rules file pi cannot use. The message is one line: ``FILE:LINE: problem`` or, when the
    problem has no line, ``FILE: problem``; ``file``, ``line`` and ``problem`` hold the parts."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.line = line
        self.problem = problem


@dataclass(frozen=True)
class CodexRulesLimits:
    """The caps of one :func:`load_codex_rules` (all files together unless said otherwise)."""

    max_file_bytes: int = 1 << 20
    """The size of each file."""
    max_rules: int = 10_000
    """Rules (a ``prefix_rule`` counts once per first-token alternative; each
    ``host_executable`` and ``network_rule`` once)."""
    max_examples: int = 10_000
    """``match`` and ``not_match`` examples."""
    max_data_bytes: int = 8 << 20
    """What the rules hold, as JSON."""
    max_call_depth: int = 200
    """Starlark call stack depth (``EvalOptions.max_callstack_size``)."""
    seconds: float = 10.0
    """Evaluation time of all the files."""
    grace_seconds: float = 5.0
    """How much longer the child process may run before it is killed (a single Starlark
    operation is not cancelled until it returns)."""
    memory_bytes: int = 1 << 30
    """Address space of the evaluating child process (``RLIMIT_AS``)."""


@dataclass(frozen=True)
class PrefixRule:
    """One ``prefix_rule`` for one program (a first-token alternative makes one per program).

    ``rest``: the alternatives at each position after the program; ``pattern``: the pattern as
    written (for messages); ``file``/``line``: where the ``prefix_rule`` call is."""

    program: str
    rest: tuple[tuple[str, ...], ...]
    decision: RuleDecision
    justification: str | None
    pattern: tuple[str | tuple[str, ...], ...]
    file: str
    line: int

    @property
    def pattern_text(self) -> str:
        """The pattern as JSON: ``["git", ["pull", "fetch"]]``."""
        return _pattern_text(self.pattern)


@dataclass(frozen=True)
class NetworkRule:
    """A ``network_rule`` (validated and kept; it has no effect on commands). ``host`` is
    normalized, ``protocol`` is ``http``, ``https``, ``socks5_tcp`` or ``socks5_udp`` and a
    ``deny`` decision is ``forbidden``."""

    host: str
    protocol: str
    decision: RuleDecision
    justification: str | None
    file: str
    line: int


@dataclass(frozen=True)
class RuleMatch:
    """A rule that matched (``prefixRuleMatch`` in Codex's output).

    ``matched_prefix``: the argv words the pattern covered (the basename in place of a resolved
    program path); ``resolved_program``: the absolute program path when the match came through
    host-executable resolution; ``file``/``line``: the ``prefix_rule`` call; ``pattern``: its
    pattern as JSON text; ``may_match``: a command-line word the parser cannot decide stands
    where the rule compares (the match is assumed, see the module docstring)."""

    matched_prefix: list[str]
    decision: RuleDecision
    justification: str | None
    resolved_program: str | None
    file: str
    line: int
    pattern: str = ""
    may_match: bool = False

    def to_codex_json(self) -> dict[str, Any]:
        """``{"prefixRuleMatch": {"matchedPrefix", "decision", "resolvedProgram"?,
        "justification"?}}`` as ``codex execpolicy check`` prints it."""
        body: dict[str, Any] = {
            "matchedPrefix": list(self.matched_prefix),
            "decision": self.decision,
        }
        if self.resolved_program is not None:
            body["resolvedProgram"] = self.resolved_program
        if self.justification is not None:
            body["justification"] = self.justification
        return {"prefixRuleMatch": body}


@dataclass(frozen=True)
class RulesVerdict:
    """The rules that match one argv, in rule order, and the strictest decision (``None``: no
    rule matched)."""

    decision: RuleDecision | None
    matches: list[RuleMatch]

    def to_codex_json(self) -> dict[str, Any]:
        """The JSON object ``codex execpolicy check`` prints: ``{"matchedRules": [...],
        "decision": ...}``, without ``decision`` when nothing matched."""
        out: dict[str, Any] = {"matchedRules": [m.to_codex_json() for m in self.matches]}
        if self.decision is not None:
            out["decision"] = self.decision
        return out


@dataclass(frozen=True)
class LineVerdict:
    """The verdict on a command line.

    ``decision``: the strictest over its parts and its undecidable parts (``None`` when no rule
    matched and nothing was undecidable, or the rules hold no ``prefix_rule``); ``parts``: each
    simple command judged (its words as text, its verdict), in line order; ``deciding``: the
    first match, in line order, with the overall decision (``None`` when the decision came
    from an undecidable part alone); ``undecidable``: the reasons (the parser's, and one per
    assumed ``may match``); ``reason``: one line saying why, for the model or a person."""

    decision: RuleDecision | None
    parts: list[tuple[list[str], RulesVerdict]] = field(default_factory=list)
    deciding: RuleMatch | None = None
    undecidable: list[str] = field(default_factory=list)
    reason: str = ""


@dataclass(frozen=True)
class _Unknown:
    """A command-line word the parser cannot decide: ``raw`` text, the literal ``prefix`` every
    value starts with, the ``glob`` its value matches (when it is a glob), and whether it may
    become several words or none (``many``)."""

    raw: str
    prefix: str = ""
    glob: str | None = None
    many: bool = False

    def may_be(self, alternatives: Sequence[str]) -> bool:
        if self.glob is not None:
            return any(a == self.glob or fnmatch.fnmatchcase(a, self.glob) for a in alternatives)
        return any(a.startswith(self.prefix) for a in alternatives)


_Token = str | _Unknown


def _pattern_text(pattern: Sequence[str | Sequence[str]]) -> str:
    return json.dumps([p if isinstance(p, str) else list(p) for p in pattern], ensure_ascii=False)


def _match_rule(rule: PrefixRule, tokens: Sequence[_Token], open_end: bool) -> bool | None:
    """Whether ``tokens`` (the program already matched) start with the rule's pattern: ``True``,
    ``None`` (may: an undecidable word decides), ``False``."""
    certain = True
    for i, alternatives in enumerate(rule.rest, start=1):
        if i >= len(tokens):
            return None if open_end else False
        token = tokens[i]
        if isinstance(token, str):
            if token not in alternatives:
                return False
            continue
        if token.many:
            if token.prefix == "" and token.glob is None:
                return None
            return None if token.may_be(alternatives) else False
        if not token.may_be(alternatives):
            return False
        certain = False
    return True if certain else None


class CodexRules:
    """Loaded Codex rules (from :func:`load_codex_rules`).

    ``rules``: every :class:`PrefixRule` in load order; ``host_executables``: the declared
    paths by executable name; ``network_rules``: the :class:`NetworkRule` list; ``files``: the
    display names of the files loaded."""

    def __init__(
        self,
        rules: Sequence[PrefixRule] = (),
        host_executables: Mapping[str, Sequence[str]] | None = None,
        network_rules: Sequence[NetworkRule] = (),
        files: Sequence[str] = (),
    ) -> None:
        self.rules: tuple[PrefixRule, ...] = tuple(rules)
        self.host_executables: dict[str, tuple[str, ...]] = {
            k: tuple(v) for k, v in (host_executables or {}).items()
        }
        self.network_rules: tuple[NetworkRule, ...] = tuple(network_rules)
        self.files: tuple[str, ...] = tuple(files)
        self._by_program: dict[str, list[PrefixRule]] = {}
        for rule in self.rules:
            self._by_program.setdefault(rule.program, []).append(rule)

    def __repr__(self) -> str:
        return (
            f"CodexRules(files={list(self.files)!r}, rules={len(self.rules)}, "
            f"host_executables={sorted(self.host_executables)!r}, "
            f"network_rules={len(self.network_rules)})"
        )

    # --- matching -----------------------------------------------------------------------------

    def _matches(
        self,
        tokens: Sequence[_Token],
        texts: Sequence[str],
        open_end: bool,
        resolve_host_executables: bool,
        cwd: str | None,
    ) -> list[RuleMatch]:
        first = tokens[0]
        assert isinstance(first, str)
        found = self._apply(self._by_program.get(first, ()), tokens, texts, open_end, None)
        if found or not resolve_host_executables:
            return found
        basename = rust_file_name(first)
        if basename is None or basename not in self._by_program:
            return []
        program = absolutize(first, cwd if cwd is not None else os.getcwd(), home_dir())
        paths = self.host_executables.get(basename)
        if paths is not None and program not in paths:
            return []
        tokens = [basename, *tokens[1:]]
        texts = [basename, *texts[1:]]
        return self._apply(self._by_program[basename], tokens, texts, open_end, program)

    @staticmethod
    def _apply(
        rules: Sequence[PrefixRule],
        tokens: Sequence[_Token],
        texts: Sequence[str],
        open_end: bool,
        resolved: str | None,
    ) -> list[RuleMatch]:
        out: list[RuleMatch] = []
        for rule in rules:
            result = _match_rule(rule, tokens, open_end)
            if result is False:
                continue
            width = len(rule.rest) + 1
            out.append(
                RuleMatch(
                    matched_prefix=list(texts[:width]),
                    decision=rule.decision,
                    justification=rule.justification,
                    resolved_program=resolved,
                    file=rule.file,
                    line=rule.line,
                    pattern=rule.pattern_text,
                    may_match=result is None,
                )
            )
        return out

    def check_argv(
        self,
        argv: Sequence[str],
        *,
        resolve_host_executables: bool = True,
        cwd: str | None = None,
    ) -> RulesVerdict:
        """What ``codex execpolicy check [--resolve-host-executables] -- ARGV...`` decides.

        Relative program paths (``./git``) are resolved against ``cwd`` (default: the process's
        working directory), as Codex resolves them against its own."""
        if not argv:
            return RulesVerdict(None, [])
        words = [str(a) for a in argv]
        matches = self._matches(words, words, False, resolve_host_executables, cwd)
        return RulesVerdict(_strictest([m.decision for m in matches]), matches)

    def check_command_line(
        self,
        line: str,
        *,
        resolve_host_executables: bool = True,
        cwd: str | None = None,
    ) -> LineVerdict:
        """Judge every simple command of a bash command line (see the module docstring for what
        cannot be decided). ``cwd`` resolves relative program paths, as in :meth:`check_argv`."""
        parsed = parse_command_line(line)
        parts: list[tuple[list[str], RulesVerdict]] = []
        undecidable: list[str] = []
        for item in parsed.items:
            if isinstance(item, Undecidable):
                undecidable.append(item.reason)
                continue
            tokens = _tokens(item)
            if tokens is None:
                continue  # the parser adds an Undecidable for the program word
            texts = item.argv
            matches = self._matches(tokens, texts, item.appends, resolve_host_executables, cwd)
            alias = _subcommand_alias(tokens)
            if alias is not None:  # git send-pack pushes: judged as git push too
                more = self._matches(alias, texts, item.appends, resolve_host_executables, cwd)
                matches += [m for m in more if m not in matches]
            shown = " ".join(texts)
            for m in matches:
                if m.may_match:
                    undecidable.append(
                        f"`{shown}` may match prefix_rule {m.pattern} at {m.file}:{m.line}"
                    )
            parts.append((texts, RulesVerdict(_strictest([m.decision for m in matches]), matches)))
        decisions: list[str | None] = [v.decision for _, v in parts]
        parser_doubts = [i.reason for i in parsed.items if isinstance(i, Undecidable)]
        if parser_doubts and self.rules:
            decisions.append("prompt")
        decision = _strictest(decisions)
        deciding: RuleMatch | None = None
        deciding_text = ""
        for texts, verdict in parts:
            for m in verdict.matches:
                if deciding is None and m.decision == decision:
                    deciding, deciding_text = m, " ".join(texts)
        return LineVerdict(
            decision=decision,
            parts=parts,
            deciding=deciding,
            undecidable=undecidable,
            reason=_reason(decision, deciding, deciding_text, parser_doubts),
        )


def _subcommand_alias(tokens: Sequence[_Token]) -> list[_Token] | None:
    """``tokens`` with a subcommand's other name replaced by the subcommand its program's
    grammar gives (``git send-pack`` is ``git push``); ``None`` without one."""
    first = tokens[0]
    grammar = BUILTIN_GRAMMARS.get(first.rsplit("/", 1)[-1]) if isinstance(first, str) else None
    if grammar is None or len(tokens) < 2 or not isinstance(tokens[1], str):
        return None
    sub = grammar.aliases.get(tokens[1])
    return [first, sub, *tokens[2:]] if sub is not None else None


def _tokens(command: SimpleCommand) -> list[_Token] | None:
    """The words of ``command`` as literals or :class:`_Unknown`; ``None`` when the program word
    is not a literal."""
    out: list[_Token] = []
    for i, w in enumerate(command.words):
        filled = bool(command.placeholder) and command.placeholder in (w.value or w.raw)
        if w.value is not None and not w.glob and not filled:
            out.append(w.value)
            continue
        if i == 0:
            return None
        if filled:
            out.append(_Unknown(w.raw, (w.value or "").split(command.placeholder)[0]))
        elif w.value is None:
            out.append(_Unknown(w.raw, w.prefix, None, w.split))
        else:
            cut = min((w.value.find(c) for c in "*?[" if c in w.value), default=len(w.value))
            out.append(_Unknown(w.raw, w.value[:cut], w.value, True))
    return out or None


def _reason(
    decision: str | None, deciding: RuleMatch | None, text: str, doubts: Sequence[str]
) -> str:
    if decision is None:
        return "no Codex rule matches"
    if deciding is None:
        return "cannot tell which Codex rules match: " + "; ".join(doubts)
    may = ", which may match" if deciding.may_match else ""
    reason = (
        f"`{text}`: {decision} by prefix_rule {deciding.pattern} at "
        f"{deciding.file}:{deciding.line}{may}"
    )
    if deciding.justification is not None:
        reason += f": {deciding.justification}"
    return reason


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def _read(path: str, name: str, limits: CodexRulesLimits) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(limits.max_file_bytes + 1)
    except OSError as e:
        raise CodexRulesError(name, None, f"cannot read the file: {e.strerror or e}") from None
    if len(data) > limits.max_file_bytes:
        raise CodexRulesError(name, None, f"the file is larger than {_size(limits.max_file_bytes)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CodexRulesError(
            name, line, f"not UTF-8 text (byte 0x{data[e.start]:02x} at column {column})"
        ) from None


def _size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def _evaluate(
    texts: Sequence[str], names: Sequence[str], limits: CodexRulesLimits
) -> list[list[dict[str, Any]] | CodexRulesError]:
    """Evaluate the files in the child process; one list of calls per file evaluated, the last
    entry a :class:`CodexRulesError` when a file failed."""
    request = {
        "files": [{"text": t} for t in texts],
        "limits": {
            "max_rules": limits.max_rules,
            "max_examples": limits.max_examples,
            "max_data_bytes": limits.max_data_bytes,
            "max_call_depth": limits.max_call_depth,
            "seconds": limits.seconds,
            "memory_bytes": limits.memory_bytes,
        },
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isabs(p))
    env.pop("PYTHONSAFEPATH", None)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", _codex_starlark.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as e:
        raise CodexRulesError(
            names[0], None, f"cannot start the Starlark evaluator: {e.strerror or e}"
        ) from None
    killed = False
    try:
        out, err = proc.communicate(
            json.dumps(request).encode(), timeout=limits.seconds + limits.grace_seconds
        )
    except subprocess.TimeoutExpired:
        killed = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    results: list[list[dict[str, Any]] | CodexRulesError] = []
    current = 0
    for raw in out.decode("utf-8", "replace").splitlines():
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if "start" in message:
            current = int(message["start"])
        elif "done" in message:
            results.append(message["calls"])
        elif "error" in message:
            index = int(message["error"])
            results.append(CodexRulesError(names[index], message["line"], message["problem"]))
            return results
    if len(results) == len(texts):
        return results
    name = names[min(current, len(names) - 1)]
    stderr = err.decode("utf-8", "replace")
    if killed:
        problem = f"evaluation took longer than {_codex_starlark.seconds_text(limits.seconds)}"
    elif "memory allocation" in stderr or "out of memory" in stderr or "MemoryError" in stderr:
        problem = f"evaluation needs more than {_size(limits.memory_bytes)} of memory"
    else:
        last = [line for line in stderr.splitlines() if line.strip()]
        detail = _codex_starlark.one_line(last[-1]) if last else f"exit status {proc.returncode}"
        problem = f"the Starlark evaluator failed: {detail}"
    results.append(CodexRulesError(name, None, problem))
    return results


def load_codex_rules(
    paths: Sequence[str | os.PathLike[str]],
    *,
    display_names: Sequence[str] | None = None,
    limits: CodexRulesLimits | None = None,
) -> CodexRules:
    """Load Codex ``.rules`` files, in order, into one :class:`CodexRules`.

    ``display_names`` (one per path) name the files in errors and in :class:`RuleMatch`
    (default: the paths as given). Raises :class:`CodexRulesError` for the first problem:
    unreadable, too large or not UTF-8, a Starlark syntax or runtime error, a builtin given bad
    arguments, a cap of ``limits`` reached, or a failing ``match``/``not_match`` example. This
    is synchronous and starts a child process (under 0.1 s for small files; at most
    ``limits.seconds + limits.grace_seconds``)."""
    limits = limits or CodexRulesLimits()
    files = [os.fspath(p) for p in paths]
    names = list(display_names) if display_names is not None else list(files)
    if len(names) != len(files):
        raise ValueError("display_names must name each path")
    if not files:
        return CodexRules()
    texts = [_read(path, name, limits) for path, name in zip(files, names, strict=True)]
    rules: list[PrefixRule] = []
    hosts: dict[str, tuple[str, ...]] = {}
    network: list[NetworkRule] = []
    cwd = os.getcwd()
    for index, result in enumerate(_evaluate(texts, names, limits)):
        if isinstance(result, CodexRulesError):
            raise result
        name = names[index]
        pending: list[tuple[dict[str, Any], list[PrefixRule]]] = []
        for call in result:
            line = int(call["line"] or 0)
            if call["kind"] == "prefix_rule":
                positions = call["positions"]
                pattern = tuple(p if isinstance(p, str) else tuple(p) for p in call["pattern"])
                rest = tuple(tuple(alts) for alts in positions[1:])
                made = [
                    PrefixRule(
                        program,
                        rest,
                        call["decision"],
                        call["justification"],
                        pattern,
                        name,
                        line,
                    )
                    for program in positions[0]
                ]
                rules.extend(made)
                pending.append((call, made))
            elif call["kind"] == "host_executable":
                hosts[call["name"]] = tuple(call["paths"])
            else:
                network.append(
                    NetworkRule(
                        call["host"],
                        call["protocol"],
                        call["decision"],
                        call["justification"],
                        name,
                        line,
                    )
                )
        for call, made in pending:
            _check_examples(call, CodexRules(made, hosts), name, cwd)
    return CodexRules(rules, hosts, network, names)


def _check_examples(call: dict[str, Any], own: CodexRules, name: str, cwd: str) -> None:
    """Codex's load-time unit tests of one ``prefix_rule``: no ``not_match`` example may match
    it, every ``match`` example must (host executables resolved)."""
    line = int(call["line"] or 0) or None
    pattern = own.rules[0].pattern_text
    for example in call["not_match"]:
        if own.check_argv(example, cwd=cwd).matches:
            raise CodexRulesError(
                name,
                line,
                f"prefix_rule not_match example {json.dumps(shlex.join(example))} "
                f"matches pattern {pattern}",
            )
    for example in call["match"]:
        if not own.check_argv(example, cwd=cwd).matches:
            raise CodexRulesError(
                name,
                line,
                f"prefix_rule match example {json.dumps(shlex.join(example))} "
                f"does not match pattern {pattern}",
            )


__all__ = [
    "CodexRules",
    "CodexRulesError",
    "CodexRulesLimits",
    "LineVerdict",
    "NetworkRule",
    "PrefixRule",
    "RuleDecision",
    "RuleMatch",
    "RulesVerdict",
    "load_codex_rules",
]
