"""Asking a person about a tool call: :func:`request_approval`, for policies.

The request, its answers and the session's approver are the session's
(:mod:`pi_core._session.approval`); this module builds the request from the call's context.
"""

from __future__ import annotations

from pi_core._pipeline.contexts import BeforeToolCallContext
from pi_core._session.approval import ApprovalOutcome, ApprovalRequest, ApprovalState


def _state_of(context: BeforeToolCallContext) -> ApprovalState:
    session = context.session
    state = getattr(session, "approvals", None)
    if isinstance(state, ApprovalState):
        return state
    return ApprovalState()  # no session: nobody to ask


async def request_approval(
    context: BeforeToolCallContext,
    reason: str,
    *,
    source: str,
    key: str = "",
) -> ApprovalOutcome:
    """Ask the session's approver whether the call of ``context`` may run.

    ``reason`` is why a person must decide, ``source`` the policy asking, ``key`` what an
    ``"always"`` answer remembers (default: source and tool name). Returns the
    :class:`~pi_core._session.approval.ApprovalOutcome`; never raises (an approver's exception
    denies, with its message). The outcome is also kept on ``context.approval`` for the audit log.
    """
    request = ApprovalRequest(
        tool_name=context.tool.name,
        arguments=context.args,
        tool_call_id=context.tool_call.id,
        reason=reason,
        source=source,
        parent_tool_call_id=context.parent_tool_call_id,
        key=key,
    )
    outcome = await _state_of(context).decide(request)
    context.approval = outcome
    return outcome


__all__ = ["request_approval"]
