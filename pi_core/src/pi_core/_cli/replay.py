"""``pi replay FILE``: run recorded tool calls through the agent loop, as the model asked for them.

What it does, step by step (the same as ``../conformance/ref/replay.mjs`` does with the npm
reference):

1. FILE is read with :mod:`pi_core._wire.session_files` (message JSONL, Pi session v1 or the active
   branch of a v3 tree); its assistant messages are the script. Each is replayed with its
   ``content`` and ``stopReason`` (``toolUse`` when the line has none) and ``errorMessage``;
   recorded provider metadata (``api``, ``usage``, ...) and timestamps are not replayed.
2. :func:`~pi_core._loop.loop.run_agent_loop` runs with the prompt ``replay`` (a user message), a
   :class:`~pi_core._providers.base.ScriptedProvider` answering with those messages in order and then
   with an assistant text ``done`` (``stopReason: "stop"``), the session's tools and hooks, and
   the ``[pi]`` settings (``--sequential`` forces ``tool_execution = "sequential"``).
3. A message that ends a loop run (``stopReason`` ``error``/``aborted``, or no tool calls) ends
   its run there; the messages after it are replayed in a new run on the same context (prompt
   ``replay`` again), so every recorded call of a session file is executed once, in order. A
   file whose messages all carry tool calls (what ``../conformance`` and ``../cases`` write) is
   one run, exactly like the reference's.

Output: each ToolResultMessage when the loop emits its ``message_end`` (source order within a
batch), as one compact JSON line with ``--json`` (real timestamps) or rendered. ``--events``
prints every agent event as a JSON line instead, from the first ``tool_execution_start`` on,
``message_update`` left out. Each line is flushed as it is written. Exit status 0 whatever the
tool results; 130 when interrupted (the first Ctrl-C aborts the run, whose aborted results are
still printed; a second one cancels it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import run_interruptible
from pi_core._cli.output import write_json_line
from pi_core._pipeline.config import AgentContext
from pi_core._wire.messages import AssistantMessage, TextContent, UserMessage
from pi_core._wire.session_files import read_session_file

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._plugins.facade import PluginHooks

REPLAY_PROMPT = "replay"
"""Text of the user message each replay run starts with."""

DONE_TEXT = "done"
"""Text of the final assistant message (``stopReason: "stop"``) after the recorded ones."""


def replay_message(recorded: AssistantMessage) -> AssistantMessage:
    """The message the scripted model answers for ``recorded``: its content, its stopReason
    (``toolUse`` when the line had none) and its errorMessage."""
    stop_reason = recorded.stop_reason if "stop_reason" in recorded.model_fields_set else "toolUse"
    message = AssistantMessage(content=list(recorded.content), stop_reason=stop_reason)
    if recorded.error_message is not None:
        message.error_message = recorded.error_message
    return message


def ends_run(message: AssistantMessage) -> bool:
    """Whether the loop stops after ``message``: a provider failure or no tool calls."""
    return message.stop_reason in ("error", "aborted") or not message.tool_calls


def plan_runs(recorded: list[AssistantMessage]) -> list[list[AssistantMessage]]:
    """The scripted answers of each loop run (see the module docstring). The last run ends
    with the ``done`` message unless its last recorded message already ends it; an empty file
    gives one run answering ``done``."""
    runs: list[list[AssistantMessage]] = []
    current: list[AssistantMessage] = []
    for message in (replay_message(m) for m in recorded):
        current.append(message)
        if ends_run(message):
            runs.append(current)
            current = []
    if current or not runs:
        current.append(AssistantMessage(content=[TextContent(text=DONE_TEXT)], stop_reason="stop"))
        runs.append(current)
    return runs


def cmd_replay(ctx: CommandContext) -> int:
    """``pi replay FILE [--cwd DIR] [--json] [--events] [--sequential]``."""
    from pi_core._cli.parser import UsageError
    from pi_core._loop.loop import run_agent_loop
    from pi_core._providers.base import ScriptedProvider
    from pi_core._wire.session_files import SessionFileError

    try:
        recorded = read_session_file(ctx.args.file).assistant_messages
    except SessionFileError as e:
        raise UsageError(str(e)) from None
    cwd = ctx.cwd()
    session = ctx.session(cwd)
    config = ctx.loop_config(session)
    if ctx.args.sequential:
        config.tool_execution = "sequential"
    runs = plan_runs(recorded)
    sink = _Sink(ctx, session.hooks)

    async def replay(abort: Abort) -> None:
        context = AgentContext(tools=list(session.tools))
        for answers in runs:
            config.provider = ScriptedProvider(answers, when_exhausted="stop")
            prompt = UserMessage(content=[TextContent(text=REPLAY_PROMPT)])
            new = await run_agent_loop([prompt], context, config, sink.emit, abort=abort)
            context.messages.extend(new)
            if abort.aborted:
                break

    interrupted = run_interruptible(replay)
    return 130 if interrupted else 0


class _Sink:
    """The loop's event sink: prints what ``pi replay`` shows, then notifies ``pi_on_event``."""

    def __init__(self, ctx: CommandContext, hooks: PluginHooks) -> None:
        self.ctx = ctx
        self.hooks = hooks
        self.events = bool(ctx.args.events)
        self.json = bool(ctx.args.json)
        self.started = False
        self.arguments: dict[str, Any] = {}

    async def emit(self, event: Any) -> None:
        kind = event.type
        if kind == "tool_execution_start":
            self.started = True
        if self.events:
            if self.started and kind != "message_update":
                write_json_line(self.ctx.stdout, event.to_json_dict())
        elif kind == "message_end":
            message = event.message
            role = getattr(message, "role", None)
            if role == "assistant":
                self.arguments = {call.id: call.arguments for call in message.tool_calls}
            elif role == "toolResult":
                if self.json:
                    write_json_line(self.ctx.stdout, message.to_json_dict())
                else:
                    self.ctx.renderer.tool_result(message, self.arguments.get(message.tool_call_id))
        await self.hooks.on_event(event)


__all__ = ["DONE_TEXT", "REPLAY_PROMPT", "cmd_replay", "ends_run", "plan_runs", "replay_message"]
