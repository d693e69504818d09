"""``pi replay FILE``: run recorded tool calls through the agent loop, as the model asked for them.

What it does, step by step (the same as ``../conformance/ref/replay.mjs`` does with the npm
reference):

1. FILE is read with :mod:`pi_core._wire.session_files` (message JSONL, Pi session v1 or the active
   branch of a v3 tree); its assistant messages are the script. Each is replayed with its
   ``content`` and ``stopReason`` (``toolUse`` when the line has none) and ``errorMessage``;
   recorded provider metadata (``api``, ``usage``, ...) and timestamps are not replayed.
2. :func:`~pi_core._loop.loop.run_agent_loop` runs with the prompt ``replay`` (a user message), a
   :class:`~pi_core._providers.base.ScriptedProvider` answering with those messages in order and then
   with an assistant text ``done`` (``stopReason: "stop"``), the session's tools (every
   registered ``direct`` tool active, also one registered inactive) and hooks, and
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

Every recorded call is executed again, whatever the tool. With ``--respect-replay-policy`` a
tool declared ``replay="never"`` (bash, write, edit: re-running them is not harmless) is not:
its call reports the result recorded in FILE (a Pi session file or a JSONL that holds the
ToolResultMessages), and stderr says so, one line per call:
``pi replay: c1: bash not re-executed (replay policy "never"): recorded result reported`` (or
``...: no recorded result``, the call's result then being the error
:data:`NO_RECORDED_RESULT_TEXT`). The JSON output keeps its shape: the reported result is the
recorded one with a new timestamp. Nested calls of a ``never`` tool have no recorded result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import run_in_session
from pi_core._cli.output import write_json_line
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.pipeline import maybe_await
from pi_core._tools.definition import AgentTool
from pi_core._tools.exposure import ToolSet
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    current_tools,
)
from pi_core._wire.session_files import read_session_file

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._plugins.facade import PluginHooks
    from pi_core._plugins.session import Session

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


TOOL_SEARCH_TOOL = "tool_search"
"""The tool ``--tool-search`` activates."""

CODEMODE_TOOL = "codemode"
"""The tool ``--codemode`` activates."""

CODEMODE_PYTHON_TOOL = "codemode_python"
"""The tool ``--codemode-python`` activates (pi's own: Pi 1.6 has no such flag, so
``--codemode`` alone keeps the tool set of Pi's replays)."""


def apply_tool_flags(ctx: CommandContext, session: Session) -> None:
    """``--exposure NAME=LEVEL,...`` (overrides, then the default active set again: ``direct``
    and ``model-only`` tools), ``--tool-search``, ``--codemode`` and ``--codemode-python``
    (activate that tool).
    Unknown names and levels are usage errors."""
    from pi_core._cli.parser import UsageError
    from pi_core._tools.exposure import parse_exposure_list

    tool_set = session.tool_set
    assert tool_set is not None
    exposures: dict[str, Any] = {}
    for text in ctx.args.exposure:
        try:
            exposures.update(parse_exposure_list(text))
        except ValueError as e:
            raise UsageError(f"--exposure: {e}") from None
    for name in exposures:
        if tool_set.get(name) is None:
            known = ", ".join(t.name for t in tool_set.registered)
            raise UsageError(f"--exposure: unknown tool {name!r} (registered tools: {known})")
    extra: list[str] = []
    if ctx.args.codemode:
        if tool_set.get(CODEMODE_TOOL) is None:
            raise UsageError("--codemode: no plugin registers the codemode tool")
        extra.append(CODEMODE_TOOL)
    if ctx.args.codemode_python:
        if tool_set.get(CODEMODE_PYTHON_TOOL) is None:
            raise UsageError("--codemode-python: no plugin registers the codemode_python tool")
        extra.append(CODEMODE_PYTHON_TOOL)
    if ctx.args.tool_search:
        if tool_set.get(TOOL_SEARCH_TOOL) is None:
            raise UsageError("--tool-search: no plugin registers the tool_search tool")
        extra.append(TOOL_SEARCH_TOOL)
    if exposures:
        tool_set.set_exposures(exposures)
    # A transcript may call any tool its session could have enabled (Pi's reference replays
    # with every registered tool active): direct tools registered inactive are active in a
    # replay too, in registration order; model-only, codemode and deferred ones only through
    # their flags.
    active = set(tool_set.active_names)
    tool_set.replace_active(
        t.name
        for t in tool_set.registered
        if t.name in active or tool_set.exposure(t.name) == "direct"
    )
    if extra:
        tool_set.activate(extra)


NOT_REEXECUTED_NOTICE = '{id}: {name} not re-executed (replay policy "never"): {what}'
"""The stderr line (after ``pi replay: ``) for each call ``--respect-replay-policy`` answers;
``what`` is ``recorded result reported`` or ``no recorded result``."""

NO_RECORDED_RESULT_TEXT = (
    'Tool {name} was not re-executed (replay policy "never") and the replay input holds no '
    "recorded result for call {id}"
)
"""Error result of a ``never`` call the replay input has no result for."""


def recorded_results(messages: list[Any]) -> dict[str, ToolResultMessage]:
    """The recorded ToolResultMessages of a replay input by ``toolCallId`` (the last wins)."""
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}


def respect_replay_policy(
    tools: Sequence[AgentTool],
    recorded: dict[str, ToolResultMessage],
    notify: Callable[[str], None],
) -> None:
    """``--respect-replay-policy``: each of the session's tools declared ``replay="never"``
    keeps its name, schema and declarations (hooks and validation run as usual) but its
    ``execute`` is replaced (on this session's own ``AgentTool`` objects) by one that reports
    the recorded result of the call instead of running it (``content``, ``details``,
    ``isError``, ``usage`` of the recorded ToolResultMessage), or the error
    :data:`NO_RECORDED_RESULT_TEXT` when the input holds none; ``notify`` gets the notice."""
    for tool in tools:
        if tool.replay != "never":
            continue

        async def execute(
            tool_call_id: str, params: Any, on_update: Any = None, *, name: str = tool.name
        ) -> AgentToolResult:
            message = recorded.get(tool_call_id)
            if message is None:
                notify(
                    NOT_REEXECUTED_NOTICE.format(
                        id=tool_call_id, name=name, what="no recorded result"
                    )
                )
                missing = AgentToolResult.error(
                    NO_RECORDED_RESULT_TEXT.format(name=name, id=tool_call_id)
                )
                missing.is_error = True
                return missing
            notify(
                NOT_REEXECUTED_NOTICE.format(
                    id=tool_call_id, name=name, what="recorded result reported"
                )
            )
            return AgentToolResult(
                content=list(message.content),
                details=message.details,
                usage=message.usage,
                is_error=message.is_error,
            )

        tool.execute = execute


def cmd_replay(ctx: CommandContext) -> int:
    """``pi replay FILE [--cwd DIR] [--json] [--events] [--sequential] [--exposure N=L,...]
    [--tool-search] [--codemode] [--codemode-python] [--respect-replay-policy]``."""
    report_path = getattr(ctx.args, "report", None)
    if report_path is None:
        session, replay = prepare_replay(ctx, ctx.args.file, lambda hooks: _Sink(ctx, hooks).emit)
        interrupted = run_in_session(session, replay)
        return 130 if interrupted else 0
    from pi_core._cli.export import audit_file, check_report_path, write_report_file
    from pi_core._report.recorder import ReportRecorder

    check_report_path(
        report_path,
        inputs=[
            ("the session file", ctx.args.file),
            ("--audit", audit_file(getattr(ctx.args, "audit", None), ctx.cwd())),
        ],
    )
    recorder = ReportRecorder(ctx.args.file, "pi replay", cwd=ctx.cwd())

    def make_emit(hooks: PluginHooks) -> Callable[[Any], Awaitable[None]]:
        sink = _Sink(ctx, hooks)

        async def emit(event: Any) -> None:
            recorder.observe(event)
            await sink.emit(event)

        return emit

    session, replay = prepare_replay(ctx, ctx.args.file, make_emit)
    try:
        interrupted = run_in_session(session, replay)
    finally:
        report = recorder.report(
            audit=ctx.args.audit, session_id=session.session_context.session_id
        )
        write_report_file(report, report_path, "--report")
    return 130 if interrupted else 0


def prepare_replay(
    ctx: CommandContext,
    file: str,
    make_emit: Callable[[PluginHooks], Callable[[Any], Awaitable[None]]],
) -> tuple[Session, Callable[[Abort], Awaitable[None]]]:
    """The session of one ``pi replay`` of ``file`` (in ``--cwd``, with the command's flags)
    and the function that replays it (``await replay(abort)`` inside ``async with session``);
    ``make_emit(session.hooks)`` gives the loop's event sink. A file that cannot be read is a
    usage error."""
    from pi_core._cli.parser import UsageError
    from pi_core._loop.loop import run_agent_loop
    from pi_core._providers.base import ScriptedProvider
    from pi_core._wire.session_files import SessionFileError

    try:
        parsed = read_session_file(file)
        recorded = parsed.assistant_messages
    except SessionFileError as e:
        raise UsageError(str(e)) from None
    cwd = ctx.cwd()
    session = ctx.session(cwd, "replay")
    config = ctx.loop_config(session)
    if ctx.args.sequential:
        config.tool_execution = "sequential"
    apply_tool_flags(ctx, session)
    if ctx.args.respect_replay_policy:
        respect_replay_policy(
            session.tool_set.registered if session.tool_set else session.tools,
            recorded_results(parsed.messages),
            lambda text: print(f"pi replay: {text}", file=ctx.stderr, flush=True),
        )
    runs = plan_runs(recorded)
    emit = make_emit(session.hooks)
    plan = recorded_tool_plan(parsed.messages)
    transcript = None
    if plan is not None and session.tool_set is not None:
        transcript = _TranscriptTools(plan, session.tool_set, emit)
        emit = transcript.emit
        config.prepare_next_turn = transcript.prepare_next_turn(config.prepare_next_turn)

    async def replay(abort: Abort) -> None:
        context = AgentContext(tools=session.tool_set.active if session.tool_set else [])
        for answers in runs:
            if transcript is not None:
                transcript.apply()
            config.provider = ScriptedProvider(answers, when_exhausted="stop")
            prompt = UserMessage(content=[TextContent(text=REPLAY_PROMPT)])
            new = await run_agent_loop([prompt], context, config, emit, abort=abort)
            context.messages.extend(new)
            if abort.aborted:
                break

    return session, replay


def recorded_tool_plan(messages: Sequence[Any]) -> list[list[str]] | None:
    """The tools the model had for each recorded assistant message: the names the recorded
    system messages before it declare (:func:`~pi_core._wire.messages.current_tools`), one
    list per assistant message; ``None`` when no system message declares tools (message
    JSONL, sessions written before Pi 1.6)."""
    if not any(
        getattr(m, "role", None) == "system"
        and (getattr(m, "tools_added", None) or getattr(m, "tools_removed", None))
        for m in messages
    ):
        return None
    plan: list[list[str]] = []
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            plan.append([t["name"] for t in current_tools(messages[:index])])
    return plan


class _TranscriptTools:
    """``pi replay`` of a transcript with declared tools: before each model request the
    session's active tools are the ones the recording's system messages declared for the
    answer about to be played (so ``Tool X not found`` and the system messages come out as
    in the recorded session); tools not registered here are left out."""

    def __init__(
        self, plan: list[list[str]], tool_set: ToolSet, emit: Callable[[Any], Awaitable[None]]
    ) -> None:
        self.plan = plan
        self.tool_set = tool_set
        self.answered = 0
        self._emit = emit

    def apply(self) -> None:
        if self.answered < len(self.plan):
            self.tool_set.replace_active(self.plan[self.answered])

    async def emit(self, event: Any) -> None:
        if event.type == "message_end" and getattr(event.message, "role", None) == "assistant":
            self.answered += 1
        await self._emit(event)

    def prepare_next_turn(self, then: Any) -> Callable[[Any], Awaitable[Any]]:
        async def prepare(info: Any) -> Any:
            self.apply()
            return await maybe_await(then(info)) if then is not None else None

        return prepare


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


__all__ = [
    "DONE_TEXT",
    "REPLAY_PROMPT",
    "cmd_replay",
    "ends_run",
    "plan_runs",
    "prepare_replay",
    "replay_message",
]
