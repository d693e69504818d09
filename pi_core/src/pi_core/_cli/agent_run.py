"""``pi run [PROMPT] [--model PROVIDER:MODEL] [--tools a,b] [--max-turns N] [--cwd DIR] [--json]
[--session FILE] [--base-url URL] [--strict-tools]``: the full agent loop against a model.

* The model comes from the providers plugins register (``pi_register_providers``; built in:
  ``scripted:FILE``, ``openai:MODEL``, ``anthropic:MODEL``); ``--base-url`` is passed to the
  provider as its ``base_url`` option, ``--strict-tools`` as ``strict_tools: true`` (the
  endpoint supports strict tools: :mod:`pi_core._providers.constrained_sampling`). Without ``--model`` the embedded demo runs
  (:mod:`pi_core._cli.demo`): its scripted session in a copy of its project, in a new temporary
  folder or in ``--cwd``; PROMPT may then be left out.
* The tools are the session's active tools (every registered tool whose exposure is ``direct``
  or ``model-only`` and that is active by default: see ``[tools.NAME] exposure``), or those
  named by ``--tools`` (in that order, any registered tool that is not ``hidden``: ``--tools
  read,tool_search``; an unknown name is a usage error). Tools ``tool_search`` loads are
  declared with a system message before the next request. The system prompt is built from their ``prompt_snippet`` and
  ``prompt_guidelines`` (:mod:`pi_core._cli.system_prompt`).
* ``--max-turns N`` stops the loop after N turns (a notice says so).
* Output: the live view of :class:`~pi_core._cli.render.RunView`; with ``--json`` Pi's json mode
  instead: the session header, then every agent event as one JSON line.
* ``--session FILE`` writes a Pi v3 session file (:mod:`pi_core._cli.session_writer`) that
  ``pi replay`` reads back.
* Ctrl-C aborts the run: running tools are cancelled, their results recorded, the turn
  completes and the loop ends; a second Ctrl-C exits at once. Exit status 130 then.

Exit status: 0 when the run ends normally, 1 when it ends with a failed model call
(``stopReason: "error"``), 2 for unusable input, 130 after Ctrl-C.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from pi_core._cli.context import CommandContext
from pi_core._cli.export import audit_file, check_report_path, same_file, write_report_file
from pi_core._cli.interrupt import run_in_session
from pi_core._cli.output import write_json_line
from pi_core._cli.parser import UsageError
from pi_core._cli.session_writer import SessionWriter, open_session_file
from pi_core._cli.system_prompt import build_system_prompt
from pi_core._loop.config import TurnInfo
from pi_core._pipeline.config import AgentContext
from pi_core._report.recorder import ReportRecorder
from pi_core._session.context import SESSION_FILE
from pi_core._wire.messages import TextContent, UserMessage

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._providers.base import ModelProvider
    from pi_core._tools.definition import AgentTool


def select_tools(tools: list[AgentTool], names: str | None) -> list[AgentTool]:
    """``--tools a,b``: those tools in that order (all of ``tools`` when ``names`` is None).
    An unknown name is a :class:`UsageError` listing the registered ones."""
    if names is None:
        return list(tools)
    by_name = {t.name: t for t in tools}
    chosen: list[AgentTool] = []
    for name in (part.strip() for part in names.split(",")):
        if not name:
            continue
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise UsageError(f"--tools: unknown tool {name!r} (registered tools: {known})")
        if by_name[name] not in chosen:
            chosen.append(by_name[name])
    return chosen


def resolve_provider(ctx: CommandContext, spec: str) -> ModelProvider:
    """The provider of ``--model`` from the plugins' ``pi_register_providers`` (the built-in
    providers are registered first when no plugin did)."""
    from pi_core._plugins import builtin_providers
    from pi_core._plugins.builtin_providers import resolve_model
    from pi_core._plugins.facade import PluginHooks

    pm = ctx.plugin_manager
    if not pm.is_registered(builtin_providers):
        pm.register(builtin_providers, name=builtin_providers.__name__)
    name, _, model = spec.partition(":")
    if name == "scripted" and model and not os.path.isabs(os.path.expanduser(model)):
        spec = f"scripted:{os.path.abspath(model)}"  # relative to where pi was started
    options: dict[str, Any] = {}
    if ctx.args.base_url is not None:
        scheme, _, rest = ctx.args.base_url.partition("://")
        if scheme.lower() not in ("http", "https") or not rest:
            raise UsageError(f"--base-url {ctx.args.base_url}: expected an http:// or https:// URL")
        options["base_url"] = ctx.args.base_url
    if getattr(ctx.args, "strict_tools", False):
        options["strict_tools"] = True
    return resolve_model(PluginHooks(pm), spec, options)


def cmd_run(ctx: CommandContext) -> int:
    """``pi run``: see the module docstring."""
    from pi_core._cli.demo import DEMO_PROMPT, demo_files, demo_target, prepare_workspace
    from pi_core._cli.render import RunView
    from pi_core._loop.loop import run_agent_loop

    args = ctx.args
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError(f"--max-turns must be at least 1 (got {args.max_turns})")
    if args.tools is not None and not [n for n in args.tools.split(",") if n.strip()]:
        raise UsageError("--tools: no tool named (leave the option out to use all tools)")
    # everything that can refuse the command line is checked before anything is written
    if args.model is None:
        session_file, project = demo_files()
        target = demo_target(project, args.cwd)
        spec = f"scripted:{session_file}"
        note: str | None = "a copy of docs/examples/demo"
        prompt_text = args.prompt if args.prompt is not None else DEMO_PROMPT
    else:
        if args.prompt is None:
            raise UsageError("a PROMPT is required with --model")
        spec, note, prompt_text = args.model, None, args.prompt
        cwd = ctx.cwd()
    audit = audit_file(args.audit, cwd if args.model is not None else target)
    if args.report is not None:
        check_report_path(args.report, inputs=[("--session", args.session), ("--audit", audit)])
    if args.session is not None and audit is not None and same_file(args.session, audit):
        # the session file is written at its own offset: the audit log's lines would be lost
        raise UsageError(f"--session {args.session}: is --audit, which the session would replace")
    session_out = open_session_file(args.session) if args.session is not None else None
    try:
        if args.model is None:
            cwd = prepare_workspace(project, target)
        provider = resolve_provider(ctx, spec)
        session = ctx.session(cwd, "run")
        config = ctx.loop_config(session)
        assert session.tool_set is not None
        if args.tools is None:
            tools = session.tool_set.active
        else:
            tools = select_tools(session.tools, args.tools)
            session.tool_set.replace_active([t.name for t in tools])
            tools = session.tool_set.active
    except BaseException:
        if session_out is not None:
            session_out.close()
        raise
    writer = SessionWriter(None, cwd, file=session_out)
    if session_out is not None:
        session.session_context.entry_sink = writer.custom
        session.session_context.protect(os.path.abspath(args.session), SESSION_FILE)
    config.provider = provider
    provider_name, _, model_id = spec.partition(":")
    writer.model_change(provider_name, model_id)
    view = None if args.json else RunView(ctx.stdout, tools=tools)
    if args.json:
        write_json_line(ctx.stdout, writer.header)
    else:
        assert view is not None
        view.intro(spec, cwd, note)

    turns = 0
    stopped_by_limit = False
    recorder = (
        ReportRecorder("pi run", "pi run", cwd=cwd, model=spec) if args.report is not None else None
    )

    async def should_stop(info: TurnInfo) -> bool:
        nonlocal turns, stopped_by_limit
        turns += 1
        if args.max_turns is not None and turns >= args.max_turns and info.tool_results:
            stopped_by_limit = True
            return True
        return False

    config.should_stop_after_turn = should_stop
    last_stop: list[str] = []

    async def emit(event: Any) -> None:
        if recorder is not None:
            recorder.observe(event)
        if args.json:
            write_json_line(ctx.stdout, event.to_json_dict())
        else:
            assert view is not None
            view.event(event)
        if event.type == "message_end":
            writer.message(event.message)
            if getattr(event.message, "role", None) == "assistant":
                last_stop[:] = [event.message.stop_reason]
        await session.hooks.on_event(event)

    context = AgentContext(system_prompt=build_system_prompt(tools, cwd), tools=tools)
    prompt = UserMessage(content=[TextContent(text=prompt_text)])

    async def run(abort: Abort) -> None:
        await run_agent_loop([prompt], context, config, emit, abort=abort)
        if last_stop == ["error"]:
            session.outcome = "error"
        elif last_stop == ["aborted"]:
            session.outcome = "aborted"

    started = time.monotonic()
    try:
        interrupted = run_in_session(session, run)
    finally:
        writer.close()
        if recorder is not None:
            report = recorder.report(
                audit=args.audit, session_id=session.session_context.session_id
            )
            write_report_file(report, args.report, "--report")
    if view is not None:
        if stopped_by_limit:
            view.notice(f"stopped after {_turns(turns)} (--max-turns {args.max_turns})")
        view.closing(time.monotonic() - started, interrupted=interrupted)
    if interrupted:
        return 130
    return 1 if last_stop == ["error"] else 0


def _turns(n: int) -> str:
    return f"{n} turn" if n == 1 else f"{n} turns"


__all__ = ["cmd_run", "resolve_provider", "select_tools"]
