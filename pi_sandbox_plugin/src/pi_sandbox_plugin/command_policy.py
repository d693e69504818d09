"""The command policy: rules by program basename and literal argv prefix (issue 6 items 1-2).

A rule is an argv prefix such as ``["git", "push"]``: its first element matches a command's
program by basename (``/usr/bin/git`` is ``git``; case-sensitive), the rest is compared literally,
token by token, with the words right after the program, after quote removal. Every simple command
:func:`~pi_sandbox_plugin.bash_parser.parse_command_line` finds in the line is checked:

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_sandbox_plugin.bash_parser import (
    SimpleCommand,
    Undecidable,
    Word,
    parse_command_line,
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


def _matches(rule: Rule, command: SimpleCommand) -> bool | Word:
    """``True`` when ``command`` matches ``rule``, ``False`` when not, or the word that is not a
    literal where the rule's prefix is compared (undecidable)."""
    if command.program != rule[0]:
        return False
    words = command.words
    for k, token in enumerate(rule[1:], start=1):
        if k >= len(words):
            return False
        w = words[k]
        if w.value is None:
            return w
        if w.glob and fnmatch.fnmatchcase(token, w.value):
            return w
        if w.value != token:
            return False
    return True


def _show(command: SimpleCommand) -> str:
    return " ".join(command.argv)


@dataclass(frozen=True)
class CommandPolicy:
    """Rules and mode; :meth:`check` decides a command line.

    ``mode``: ``"deny"`` or ``"allow"``; ``deny`` / ``allow``: argv prefixes (non-empty tuples
    of non-empty strings, the first a program basename).
    """

    mode: Literal["deny", "allow"] = "deny"
    deny: tuple[Rule, ...] = ()
    allow: tuple[Rule, ...] = ()

    def check(self, command_line: str) -> Decision:
        """The :class:`Decision` for ``command_line`` (never raises)."""
        parsed = parse_command_line(command_line)
        commands = [c.argv for c in parsed.commands]
        for item in parsed.items:
            if isinstance(item, Undecidable):
                return Decision("deny", None, f"undecidable: {item.reason}", commands)
            if self.mode == "deny":
                for rule in self.deny:
                    m = _matches(rule, item)
                    if m is True:
                        return Decision(
                            "deny",
                            rule,
                            f"rule {format_rule(rule)} denies `{_show(item)}`",
                            commands,
                        )
                    if isinstance(m, Word):
                        return Decision(
                            "deny",
                            rule,
                            f"undecidable: rule {format_rule(rule)} may deny `{_show(item)}` "
                            f"({m.raw} is not a literal)",
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
        undecided: Word | None = None
        for rule in self.allow:
            m = _matches(rule, command)
            if m is True:
                return None
            if isinstance(m, Word) and undecided is None:
                undecided = m
        if undecided is not None:
            return (
                f"undecidable: `{_show(command)}` may not match an allow rule "
                f'({undecided.raw} is not a literal; mode = "allow")'
            )
        return f'`{_show(command)}` matches no allow rule (mode = "allow")'


__all__ = ["CommandPolicy", "Decision", "Rule", "format_rule"]
