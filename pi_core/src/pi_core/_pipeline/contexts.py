"""What the pipeline's before and after callbacks receive and return.

``pi_before_tool_call`` and ``pi_after_tool_call`` implementations get these objects; a program
that sets :class:`~pi_core._loop.config.LoopConfig` callbacks directly gets the same. Add fields
freely: implementations read only what they use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_core._session.approval import ApprovalOutcome
    from pi_core._session.context import SessionContext
    from pi_core._tools.definition import AgentTool
    from pi_core._wire.messages import AgentToolResult, AssistantMessage, ToolCall


@dataclass
class BeforeToolCallResult:
    """Returned by ``pi_before_tool_call``: ``block=True`` stops the call; ``reason`` becomes the
    error result's text (``Tool execution was blocked`` when empty); ``terminate=True`` also marks
    the blocked result as terminating.

    For the audit log (``[sandbox.audit]``, ``--audit``): ``source`` names what decided (a rule
    file and line, a hook command; default: the plugin's name) and ``detail`` holds JSON-ready
    facts about it. A result that does not block but names a ``source`` records who allowed the
    call (the next plugin is still asked)."""

    block: bool = False
    reason: str | None = None
    terminate: bool | None = None
    source: str | None = None
    detail: dict[str, Any] | None = None


@dataclass
class AfterToolCallResult:
    """Returned by ``pi_after_tool_call``: each field that is not ``None`` replaces the result's
    field. Replacing ``content`` without ``structured_content`` clears the old
    ``structured_content``."""

    content: list[Any] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None
    usage: dict[str, Any] | None = None
    structured_content: Any = None
    source: str | None = None
    """For the audit log: what decided this change (a hook command, a rule); a result with a
    ``source`` is recorded as a decision of the after phase, with ``reason`` and ``detail``."""
    reason: str | None = None
    detail: dict[str, Any] | None = None


AUDIT_FIELDS = ("source", "reason", "detail")
"""The fields of the results that only inform the audit log (they change no result)."""


@dataclass
class BeforeToolCallContext:
    """What ``pi_before_tool_call`` gets: the original ``tool_call`` (raw arguments), ``args``
    (validated and coerced; mutating it in place changes what ``execute`` receives), the
    ``tool``, the ``assistant_message`` that asked for the call, the loop ``context`` and the
    session ``config``."""

    tool_call: ToolCall
    args: Any
    tool: AgentTool
    assistant_message: AssistantMessage
    context: Any = None
    config: dict[str, Any] = field(default_factory=dict)
    """The session's loaded config (the TOML dict, ``{}`` when unknown): filled by
    :class:`~pi_core._plugins.facade.PluginHooks` built with a config (``build_session`` does), so a
    policy plugin reads its own table per session."""
    session: SessionContext | None = None
    """The session the call belongs to (its ``state`` holds the plugins' per-session state):
    filled by :class:`~pi_core._plugins.facade.PluginHooks` of a session (``build_session``);
    ``None`` when the callbacks are used without one."""
    parent_tool_call_id: str | None = None
    """For a nested call (a tool calling a tool through ``execute_tool``): the id of the calling
    tool's call (``tool_call.id`` is then ``<parent id>/<n>``); ``None`` for a call the model
    issued."""
    approval: ApprovalOutcome | None = None
    """Set by :func:`~pi_core.request_approval` when a policy asked a person about this call."""

    def replace_args(self, arguments: Any) -> Any:
        """Replace the call's arguments (what ``execute`` receives) by ``arguments`` validated
        against the tool's schema, as the model's arguments are; returns the validated copy.
        Raises :class:`~pi_core.ToolError` (its message is the one an invalid model call gets)
        and keeps the old arguments when they do not validate."""
        from pi_core._tools.validation import validate_tool_arguments

        validated = validate_tool_arguments(self.tool, arguments)
        self.args = validated
        return validated


@dataclass
class AfterToolCallContext(BeforeToolCallContext):
    """What ``pi_after_tool_call`` gets: the above plus ``result`` and ``is_error``."""

    result: AgentToolResult | None = None
    is_error: bool = False


def apply_after_tool_call_result(
    result: AgentToolResult, is_error: bool, override: AfterToolCallResult | None
) -> tuple[AgentToolResult, bool]:
    """Rebuild ``result`` field by field from an after-hook's ``override``.

    ``None`` means "not provided" for every field (so ``details=None`` keeps the old details).
    Replacing ``content`` without ``structured_content`` clears ``structured_content``. Other
    fields of ``result`` are kept. Returns ``(new_result, new_is_error)``; ``result`` is not
    mutated.
    """
    if override is None:
        return result, is_error
    update: dict[str, Any] = {}
    if override.content is not None:
        update["content"] = list(override.content)
    if override.details is not None:
        update["details"] = override.details
    if override.usage is not None:
        update["usage"] = override.usage
    if override.terminate is not None:
        update["terminate"] = override.terminate
    if override.structured_content is not None:
        update["structured_content"] = override.structured_content
    elif override.content is not None:
        update["structured_content"] = None
    new_result = result.model_copy(update=update)
    if "structured_content" in update and update["structured_content"] is None:
        new_result.__pydantic_fields_set__.discard("structured_content")
    new_is_error = override.is_error if override.is_error is not None else is_error
    return new_result, new_is_error


__all__ = [
    "AUDIT_FIELDS",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "apply_after_tool_call_result",
]
