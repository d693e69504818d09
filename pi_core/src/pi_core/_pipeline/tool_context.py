"""The call a tool's ``execute`` runs for: :func:`current_tool_context`.

A trio-aware context variable: each tool task sees its own call, the tasks it starts inherit it,
the worker thread of a sync tool gets a copy. Why a context variable and not an argument:
``AgentTool.execute(tool_call_id, params, on_update)`` keeps its signature (every existing tool,
backend and test stays valid), a ``ToolDefinition``'s fourth argument stays the registration
context it always was, and a helper deep inside a tool reaches the call without threading a
parameter through. The pipeline binds it around ``execute``
(:func:`~pi_core._pipeline.pipeline.execute_call`); the loop gives model-issued calls a context
whose nested calls run (:mod:`pi_core._pipeline.nested`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from pi_core._pipeline.outcome import ToolCallOutcome
    from pi_core._tools.definition import AgentTool, OnUpdate
    from pi_core._wire.events import AgentEvent

NOT_AVAILABLE_TEXT = "Nested tool calls are not available in this context"
"""Error text of :meth:`ToolCallContext.execute_tool` outside a loop run (a program's
``run_tool_call``, a tool's ``execute`` called directly)."""


class NestedCalls(Protocol):
    """What runs the nested calls of a :class:`ToolCallContext`."""

    def callable_tools(self) -> list[AgentTool]: ...

    async def execute(
        self,
        caller: ToolCallContext,
        name: str,
        args: Any,
        on_update: OnUpdate | None,
        end_after: trio.Event | None = None,
        entered: trio.Event | None = None,
    ) -> ToolCallOutcome: ...


@dataclass
class ToolCallContext:
    """The call a tool's ``execute`` runs for (:func:`current_tool_context`).

    * ``tool_call_id``: this call's id (``c1``; a nested call's ``c1/2``).
    * ``parent_tool_call_id``: the calling tool's call id, ``None`` for a model-issued call.
    * ``tools``: the tools :meth:`execute_tool` can reach (empty outside a loop run).
    """

    tool_call_id: str
    parent_tool_call_id: str | None
    _runner: NestedCalls = field(repr=False)
    _scope: Any = field(default=None, repr=False)
    _send: Callable[[AgentEvent], None] | None = field(default=None, repr=False)

    @property
    def tools(self) -> list[AgentTool]:
        return list(self._runner.callable_tools())

    async def execute_tool(
        self,
        name: str,
        args: Any = None,
        *,
        on_update: OnUpdate | None = None,
        end_after: trio.Event | None = None,
        entered: trio.Event | None = None,
    ) -> ToolCallOutcome:
        """Run tool ``name`` with ``args`` (``None``: ``{}``) as a nested call of this one.

        The call gets the id ``<this id>/<n>`` and goes through the whole pipeline with every
        hook (whose contexts carry ``parent_tool_call_id``); its ``tool_execution_*`` events
        carry ``parent_tool_call_id`` too; it adds no message to the transcript. Returns the
        :class:`~pi_core.ToolCallOutcome` (``outcome.result.structured_content`` included);
        never raises for the nested call's failure (unknown tool, invalid arguments, a policy
        block, a tool error: ``outcome.is_error``). ``on_update(partial)`` receives its
        progress. Cancelled with the calling tool (an abort ends both). Outside a loop run
        the outcome is the error ``Nested tool calls are not available in this context``.

        ``end_after``: the call runs at once but ends (its ``tool_execution_end``, its outcome
        to this caller, the sequential queue it holds) only once the event is set; cancelled
        before that, it ends as aborted. A script engine passes the event it sets when the
        script waits: as on an event loop, no call the script makes ends during the turn that
        made it, whether the tool reached its result without waiting on anything or not.

        ``entered``: set once the call is inside the tool's ``execute`` (the hooks before it and
        the checkpoint's look done), waits its turn in the sequential queue, or has ended
        without entering it: what the call does before it first waits comes after that.
        """
        return await self._runner.execute(self, name, args, on_update, end_after, entered)


_CURRENT: contextvars.ContextVar[ToolCallContext] = contextvars.ContextVar("pi_tool_call")


def current_tool_context() -> ToolCallContext:
    """The :class:`ToolCallContext` of the tool call whose ``execute`` is running (in its trio
    task, the tasks it starts, and the worker thread of a sync tool, where an ``async`` method
    is called through ``trio.from_thread.run``). Raises ``RuntimeError`` anywhere else."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise RuntimeError(
            "current_tool_context() is only available while a tool's execute runs"
        ) from None


def bind_tool_context(context: ToolCallContext) -> contextvars.Token[ToolCallContext]:
    """Make ``context`` current (the pipeline does, around ``execute``)."""
    return _CURRENT.set(context)


def unbind_tool_context(token: contextvars.Token[ToolCallContext]) -> None:
    """Undo :func:`bind_tool_context`."""
    _CURRENT.reset(token)


__all__ = [
    "NOT_AVAILABLE_TEXT",
    "NestedCalls",
    "ToolCallContext",
    "bind_tool_context",
    "current_tool_context",
    "unbind_tool_context",
]
