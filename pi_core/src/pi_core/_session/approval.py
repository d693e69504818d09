"""Asking a person: the approval of a tool call that a policy will neither allow nor deny.

A policy that needs a person (a Claude Code hook answering ``ask``, a Codex rule deciding
``prompt``, a plugin's ``pi_approve_tool_call``) calls :func:`request_approval` with the call's
context and a reason. The answer comes from the session's **approver**, set by its host:

* ``pi run`` and ``pi call`` with a terminal on stdin: a prompt on the terminal showing the call
  and the reason (``y`` yes, ``n`` no, ``a`` always: yes, and remembered for the session);
* :class:`~pi_core.Agent` (``approval=``) and :meth:`~pi_core.Session.agent`: the program's
  callback;
* a plugin, at session set-up, when the host set none (the sandbox's ``[sandbox] ask``).

Without an approver the call is denied, with the reason. An approver is any callable, sync or
async, taking an :class:`ApprovalRequest` and answering ``"allow"``, ``"deny"`` or ``"always"``
(``True`` and ``False`` mean allow and deny), or a pair ``(answer, answered_by)`` naming who
answered (``"MCP client NAME VERSION"``: the audit log records it); an exception or another
answer denies. Requests are
answered one at a time per session (a batch's parallel calls never prompt at once), and an
``"always"`` answer allows every later request with the same :attr:`ApprovalRequest.key` in that
session without asking again.

This module holds what a session keeps (:class:`ApprovalState`, on
:attr:`~pi_core._session.context.SessionContext.approvals`) and how it answers a request
(:meth:`ApprovalState.decide`); :func:`~pi_core._pipeline.approval.request_approval` builds the
request from a tool call's context.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import trio

Answer = Literal["allow", "deny", "always"]
Approver = Callable[["ApprovalRequest"], "Answer | bool | Awaitable[Answer | bool]"]
"""What a session's approver is: ``approver(request)`` returns (or awaits to) an answer."""

NO_APPROVER_TEXT = (
    "Blocked: this call needs a person's approval and there is no one to ask "
    "(no terminal, no approval callback). {source}: {reason}"
)
"""The error result of a call that needed approval in a session without an approver."""

DENIED_TEXT = "Blocked: the user denied this call. {source}: {reason}"
"""The error result of a call the approver answered ``deny``."""

APPROVER_FAILED_TEXT = "Blocked: the approval failed ({error}). {source}: {reason}"
"""The error result of a call whose approver raised or gave an answer that is not one."""


@dataclass(frozen=True)
class ApprovalRequest:
    """One call waiting for a person.

    * ``tool_name``, ``arguments`` (validated), ``tool_call_id``, ``parent_tool_call_id`` (a
      nested call's caller; ``None`` for the model's calls);
    * ``reason``: why a person must decide (one line, from the policy);
    * ``source``: which policy asks (``codex rule .codex/rules/default.rules:3``, ``claude hook
      ./check.sh``, a plugin's name);
    * ``key``: what an ``"always"`` answer remembers (default: ``source`` and ``tool_name``).
    """

    tool_name: str
    arguments: Any
    tool_call_id: str
    reason: str
    source: str
    parent_tool_call_id: str | None = None
    key: str = ""

    def remembered_as(self) -> str:
        """The key an ``"always"`` answer is remembered under."""
        return self.key or json.dumps([self.source, self.tool_name])

    def describe(self) -> str:
        """The call as one line for a prompt: ``tool {json arguments}`` (arguments over 400
        characters are cut, with ``…``)."""
        try:
            text = json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            text = repr(self.arguments)
        if len(text) > 400:
            text = text[:400] + "…"
        return f"{self.tool_name} {text}"


@dataclass(frozen=True)
class ApprovalOutcome:
    """What :func:`request_approval` decided: ``allowed``; ``answer`` (``"allow"``, ``"deny"``,
    ``"always"``, ``"remembered"`` for an earlier ``always``, ``"none"`` without an approver,
    ``"error"`` when the approver failed); ``block_reason``: the error text for the model when
    not allowed (``""`` when allowed); ``request``: what was asked; ``answered_by``: who
    answered, when the approver said (``""`` otherwise)."""

    allowed: bool
    answer: str
    block_reason: str
    request: ApprovalRequest
    answered_by: str = ""

    def to_json_dict(self) -> dict[str, Any]:
        """``{"answer", "allowed", "source", "reason"}`` and ``"answered_by"`` when known (for
        the audit log)."""
        data: dict[str, Any] = {
            "answer": self.answer,
            "allowed": self.allowed,
            "source": self.request.source,
            "reason": self.request.reason,
        }
        if self.answered_by:
            data["answered_by"] = self.answered_by
        return data


@dataclass
class ApprovalState:
    """A session's approvals: the ``approver`` (``None``: nobody to ask), the keys answered
    ``"always"`` and the lock that keeps prompts one at a time."""

    approver: Approver | None = None
    always: set[str] = field(default_factory=set)
    lock: trio.Lock | None = None

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        """The answer to ``request``: remembered (an earlier ``"always"``), denied without an
        approver, else the approver's (one request at a time). Never raises: an approver's
        exception or an answer that is not one denies, with its message."""
        remembered = request.remembered_as()
        if remembered in self.always:
            return ApprovalOutcome(True, "remembered", "", request)
        if self.approver is None:
            text = NO_APPROVER_TEXT.format(source=request.source, reason=request.reason)
            return ApprovalOutcome(False, "none", text, request)
        if self.lock is None:
            self.lock = trio.Lock()
        async with self.lock:
            if remembered in self.always:  # answered while this request waited
                return ApprovalOutcome(True, "remembered", "", request)
            try:
                answer: Any = self.approver(request)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
                error = str(exc) or type(exc).__name__
                text = APPROVER_FAILED_TEXT.format(
                    error=error, source=request.source, reason=request.reason
                )
                return ApprovalOutcome(False, "error", text, request)
        by = ""
        if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], str):
            answer, by = answer
        if answer is True:
            answer = "allow"
        elif answer is False:
            answer = "deny"
        if answer == "always":
            self.always.add(remembered)
            return ApprovalOutcome(True, "always", "", request, by)
        if answer == "allow":
            return ApprovalOutcome(True, "allow", "", request, by)
        if answer == "deny":
            text = DENIED_TEXT.format(source=request.source, reason=request.reason)
            return ApprovalOutcome(False, "deny", text, request, by)
        text = APPROVER_FAILED_TEXT.format(
            error=f"the approver answered {answer!r}, not 'allow', 'deny' or 'always'",
            source=request.source,
            reason=request.reason,
        )
        return ApprovalOutcome(False, "error", text, request)


__all__ = [
    "APPROVER_FAILED_TEXT",
    "DENIED_TEXT",
    "NO_APPROVER_TEXT",
    "Answer",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalState",
    "Approver",
]
