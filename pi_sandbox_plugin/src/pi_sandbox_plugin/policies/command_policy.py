"""The command policy: rules by program basename and literal argv prefix.

A rule is an argv prefix such as ``["git", "push"]``: its first element matches a command's
program by basename (``/usr/bin/git`` is ``git``; case-sensitive), the rest is compared literally,
token by token, after quote removal, with the words where the program's subcommand is: the
options the program's grammar (:mod:`pi_sandbox_plugin.policies.grammars`) knows are skipped first, so
``git -C . --no-pager push`` matches, and an option it does not know there is undecidable
(``prefix_match = "literal"`` compares the words right after the program instead). A
subcommand's other names count as it (``git send-pack`` is ``git push``). For a program whose
grammar knows its options (rm, cp, mv, chmod, chown, chgrp, git push/clean/reset/branch), a
rule's options match in any order and spelling (``["rm", "-rf"]`` matches ``rm -fr``, ``rm -r
-f``, ``rm --recursive --force``, ``rm x -Rf``) and its other words the first operands. Every
simple command :func:`~pi_sandbox_plugin.policies.bash_parser.parse_command_line` finds in the line is
checked:

* ``mode = "deny"``: the line is denied when some command matches a ``deny`` rule.
* ``mode = "allow"``: the line is denied when some command matches no ``allow`` rule.

In both modes, whatever the parser reports as undecidable denies the line (the policy fails
closed), and so does a word that is not a literal where a rule's prefix would be compared
(``git $SUB`` under ``["git", "push"]``): the rule might match.

The semantics are those of ``/work/shared/policy/README.md``.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pi_sandbox_plugin.policies.bash_parser import (
    SimpleCommand,
    Undecidable,
    Word,
    parse_command_line,
)
from pi_sandbox_plugin.policies.grammars import (
    BUILTIN_GRAMMARS,
    Options,
    ProgramGrammar,
    Undecided,
    WordLike,
)

Rule = tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one command line.

    * ``decision``: ``"allow"`` or ``"deny"``.
    * ``rule``: the rule that decided (the matching deny rule), ``None`` when no rule did
      (allowed, undecidable, or not in the allow list).
    * ``reason``: one line for a human and for the model.
    * ``commands``: every simple command the parser found, as argv lists.
    """

    decision: Literal["allow", "deny"]
    rule: Rule | None
    reason: str
    commands: list[list[str]] = field(default_factory=list)

    def block_reason(self) -> str:
        """The error text a blocked bash call gives the model: names the rule that decided."""
        if self.rule is not None:
            return f"Command blocked by the sandbox command policy: {self.reason}"
        if self.reason.startswith("undecidable: "):
            return (
                "Command blocked by the sandbox command policy (it fails closed: what it cannot "
                f"decide is denied): {self.reason}"
            )
        return f"Command blocked by the sandbox command policy: {self.reason}"

    @property
    def allowed(self) -> bool:
        """``decision == "allow"``."""
        return self.decision == "allow"

    def to_json_dict(self) -> dict[str, Any]:
        """``{"decision", "rule", "reason", "commands"}`` (``rule`` a list or ``null``)."""
        return {
            "decision": self.decision,
            "rule": list(self.rule) if self.rule is not None else None,
            "reason": self.reason,
            "commands": [list(c) for c in self.commands],
        }


def format_rule(rule: Sequence[str]) -> str:
    """A rule as JSON text: ``["git", "push"]``."""
    return json.dumps(list(rule))


def _matches(
    rule: Rule, command: SimpleCommand, grammars: Mapping[str, ProgramGrammar] | None = None
) -> bool | str:
    """``True`` when ``command`` matches ``rule``, ``False`` when not, or why it cannot be told
    (undecidable: a word that is not a literal where the rule's prefix is compared, or an
    option the program's grammar does not know before it).

    With ``grammars``, the options the program's :class:`~pi_sandbox_plugin.policies.grammars.
    ProgramGrammar` knows are skipped before the first compared word (before every one for an
    ``interspersed`` grammar), unless the rule's word is itself an option (``-x``, ``+x``)."""
    grammar = grammars.get(rule[0]) if grammars is not None else None
    if command.program != rule[0]:
        program = command.program or ""
        if grammar is not None and grammar.dashed and program.startswith(rule[0] + "-"):
            # git's dashed form: /usr/lib/git-core/git-push is `git push`
            sub = program[len(rule[0]) + 1 :]
            words = (_literal(rule[0]), _literal(sub), *command.words[1:])
            return _matches(rule, replace(command, words=words), grammars)
        return False
    scope = _option_scope(rule, grammar)
    if scope is not None and grammar is not None:
        result = _match_options(rule, command, grammar, scope)
        if result is not None:
            return result
    start = 1
    while True:
        result, first, _ = _match_from(rule, command, grammar, start)
        if result is not False or grammar is None or not grammar.any_operand:
            return result
        if first >= len(command.words):
            return False
        start = first + 1  # make deploy: any target may be the rule's word


def _literal(text: str) -> Word:
    return Word(raw=text, value=text, prefix=text)


def _option_scope(rule: Rule, grammar: ProgramGrammar | None) -> str | None:
    """The subcommand whose :class:`~pi_sandbox_plugin.policies.grammars.Options` read a rule's words
    after it (``""``: the program's own), or ``None`` when the grammar has none there."""
    if grammar is None or not grammar.options:
        return None
    k = 1
    while (
        k < len(rule) and rule[k][:1] not in "-+" and " ".join(rule[1 : k + 1]) in grammar.options
    ):
        k += 1
    scope = " ".join(rule[1:k])
    return scope if scope in grammar.options else None


def _match_options(
    rule: Rule, command: SimpleCommand, grammar: ProgramGrammar, scope: str
) -> bool | str | None:
    """Match a rule whose words after its subcommand ``scope`` are options (in any order and
    spelling) and the first operands; ``None`` when the rule names an option the table does
    not know (it is then compared literally)."""
    table: Options = grammar.options[scope]
    depth = len(scope.split()) if scope else 0
    wanted = table.read([_literal(t) for t in rule[1 + depth :]], rule[0])
    if wanted.unsure is not None:
        return None
    end = 1
    if depth:
        result, _, end = _match_from(rule[: 1 + depth], command, grammar, 1)
        if result is not True:
            return result
    found = table.read(command.words[end:], rule[0] if not scope else f"{rule[0]} {scope}")
    if not wanted.present <= found.present:
        return found.unsure if found.unsure is not None else False
    for n, token in enumerate(w.value or "" for w in wanted.operands):
        if n >= len(found.operands):
            if command.appends:
                return f"{command.filled_by} appends words there at run time"
            return False
        problem = _compare(token, found.operands[n], command)
        if problem is not True:
            return problem
    return True


def _compare(token: str, w: WordLike, command: SimpleCommand) -> bool | str:
    """Whether the word ``w`` is the rule's ``token`` (or why it cannot be told)."""
    if command.placeholder and command.placeholder in (w.value or ""):
        return f"{command.filled_by} replaces {w.raw} at run time"
    if w.value is None:
        return f"{w.raw} is not a literal"
    if w.glob and fnmatch.fnmatchcase(token, w.value):
        return f"{w.raw} is not a literal"
    return w.value == token


def _match_from(
    rule: Rule, command: SimpleCommand, grammar: ProgramGrammar | None, k: int
) -> tuple[bool | str, int, int]:
    """:func:`_matches` with the first compared word searched from ``words[k]``; also returns
    the index where the rule's first word was compared and the index after the last."""
    words = command.words
    first = k
    for n, token in enumerate(rule[1:]):
        if grammar is not None and (n == 0 or grammar.interspersed) and token[:1] not in "-+":
            found = grammar.operand(words, k, rule[0])
            if isinstance(found, Undecided):
                return found.why, first, k
            k = found
        if n == 0:
            first = k
        if k >= len(words):
            if command.appends:
                return f"{command.filled_by} appends words there at run time", first, k
            return False, first, k
        w = words[k]
        alias = grammar.aliases.get(w.value or "") if grammar is not None and n == 0 else None
        if alias is not None:
            w = _literal(alias)  # git send-pack is git push
        same = _compare(token, w, command)
        if same is not True:
            return same, first, k
        k += 1
    return True, first, k


def _show(command: SimpleCommand) -> str:
    return " ".join(command.argv)


@dataclass(frozen=True)
class CommandPolicy:
    """Rules and mode; :meth:`check` decides a command line.

    ``mode``: ``"deny"`` or ``"allow"``; ``deny`` / ``allow``: argv prefixes (non-empty tuples
    of non-empty strings, the first a program basename). ``prefix_match``: ``"grammar"`` (the
    default) skips the options a program's grammar knows before its subcommand (``git -C .
    push`` matches ``["git", "push"]``) and fails closed on options it does not know;
    ``"literal"`` compares the words right after the program. ``grammars``: the table by program
    basename (:data:`~pi_sandbox_plugin.policies.grammars.BUILTIN_GRAMMARS`; extend it with
    :func:`~pi_sandbox_plugin.policies.grammars.merged`).
    """

    mode: Literal["deny", "allow"] = "deny"
    deny: tuple[Rule, ...] = ()
    allow: tuple[Rule, ...] = ()
    prefix_match: Literal["grammar", "literal"] = "grammar"
    grammars: Mapping[str, ProgramGrammar] = field(default_factory=lambda: BUILTIN_GRAMMARS)

    def _grammars(self) -> Mapping[str, ProgramGrammar] | None:
        return self.grammars if self.prefix_match == "grammar" else None

    def check(self, command_line: str) -> Decision:
        """The :class:`Decision` for ``command_line`` (never raises)."""
        parsed = parse_command_line(command_line)
        commands = [c.argv for c in parsed.commands]
        for item in parsed.items:
            if isinstance(item, Undecidable):
                return Decision("deny", None, f"undecidable: {item.reason}", commands)
            if self.mode == "deny":
                for rule in self.deny:
                    m = _matches(rule, item, self._grammars())
                    if m is True:
                        return Decision(
                            "deny",
                            rule,
                            f"rule {format_rule(rule)} denies `{_show(item)}`",
                            commands,
                        )
                    if isinstance(m, str):
                        return Decision(
                            "deny",
                            rule,
                            f"undecidable: rule {format_rule(rule)} may deny `{_show(item)}` ({m})",
                            commands,
                        )
            else:
                verdict = self._allowed(item)
                if verdict is not None:
                    return Decision("deny", None, verdict, commands)
        if self.mode == "deny":
            reason = "no deny rule matches" if commands else "no command runs"
        else:
            reason = "every command matches an allow rule" if commands else "no command runs"
        return Decision("allow", None, reason, commands)

    def _allowed(self, command: SimpleCommand) -> str | None:
        """``None`` when an allow rule matches ``command``, else the deny reason."""
        undecided: str | None = None
        for rule in self.allow:
            m = _matches(rule, command, self._grammars())
            if m is True:
                return None
            if isinstance(m, str) and undecided is None:
                undecided = m
        if undecided is not None:
            return (
                f"undecidable: `{_show(command)}` may not match an allow rule "
                f'({undecided}; mode = "allow")'
            )
        return f'`{_show(command)}` matches no allow rule (mode = "allow")'


__all__ = ["CommandPolicy", "Decision", "Rule", "format_rule"]
