"""The ``codemode`` tool (Pi 1.6.0's ``extensions/codemode``): the model sends JavaScript that
calls other tools; each call is a nested tool call through the whole pipeline.

The script is the body of an async function, run in QuickJS (the ``jsbox`` package) inside a
worker process (:mod:`pi_builtin_tools.codemode._worker`) that this module starts per script and
kills when the script ends, at its deadline or on abort: scripts have no file system, network,
timers or process of their own (``docs/explanation/codemode-engine.md`` says why this engine).
The worker runs Pi's own prelude (``prelude.js``): ``tools.<id>(args)``, ``ALL_TOOLS``,
``text``, ``image``, ``console.*``, ``exit``, ``store``/``load`` and their texts and limits.

This module is the host side (Pi's ``execute.js``): it runs each ``tools.x(args)`` with
:meth:`pi_core.ToolCallContext.execute_tool`, keeps ``details.calls`` and reports progress,
waits for a free worker (:data:`DEFAULT_MAX_WORKERS`, ``PI_CODEMODE_MAX_WORKERS``), enforces
``timeout_ms``, and lays out the result (:func:`format_result`).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from pi_builtin_tools.catalog.definitions import (
    CODEMODE_DESCRIPTION,
    CODEMODE_DESCRIPTION_GLOBALS,
    CODEMODE_DESCRIPTION_INTRO,
    CODEMODE_PARAMETERS,
    CODEMODE_PROMPT_GUIDELINES,
    CODEMODE_PROMPT_SNIPPET,
    CODEMODE_TOOL_NAME,
    create_codemode_tool_definition,
)
from pi_builtin_tools.catalog.tool_search import (
    DEFAULT_TOOL_SEARCH_LIMIT,
    Bm25Ranker,
    search_document,
)
from pi_builtin_tools.codemode.common import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    WORKER_WAIT_SECONDS,
    NoWorkerFree,
    OutputItem,
    ScriptError,
    ScriptRun,
    codemode_worker_slot,
    commit_store,
    run_call_turn,
    script_result,
    script_timeout_ms,
    session_store,
)
from pi_builtin_tools.codemode.declarations import (
    create_codemode_description,
    describe_script_call,
    render_tool_sample,
    to_codemode_identifier,
)
from pi_builtin_tools.codemode.source import CODEMODE_SOURCE_GRAMMAR as CODEMODE_SOURCE_GRAMMAR
from pi_builtin_tools.codemode.source import CodemodeSourceError, parse_codemode_source
from pi_core import (
    AgentToolResult,
    LoadoutChanges,
    TextContent,
    ToolError,
    ToolLoadout,
    current_tool_context,
    dump_json,
)

DESCRIPTION_INTRO = CODEMODE_DESCRIPTION_INTRO
DESCRIPTION_GLOBALS = CODEMODE_DESCRIPTION_GLOBALS
PROMPT_SNIPPET = CODEMODE_PROMPT_SNIPPET
PROMPT_GUIDELINES = CODEMODE_PROMPT_GUIDELINES
"""The definition's texts live in :mod:`pi_builtin_tools.catalog.definitions` (registering the tool
does not import this module); these are the same objects."""

CODEMODE_STORE_STATE_KEY = "codemode"
"""``SessionContext.state`` entry: ``{"store": {key: json text}}``, the ``store()`` writes of the
session's successful scripts (Pi keeps them as ``codemode-store`` session entries)."""

MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
"""Heap limit of the QuickJS VM; overruns throw ``InternalError: out of memory``."""
ARGS_PREVIEW_CHARS = 200
ERROR_PREVIEW_CHARS = 500
WORKER_EXITED_TEXT = "The codemode worker exited without a result (exit code {code})"

DISCOVERY_GLOBALS = ("searchTools", "describeTool", "describeNamespace")
"""Globals answered by the host: ranked search and lookup over the script's tools."""

WORKER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")


# ---------------------------------------------------------------------------------------------
# Identifiers, previews, UTF-16 lengths
# ---------------------------------------------------------------------------------------------


def _u16len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def slice_head(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text``, never splitting a surrogate pair."""
    return text.encode("utf-16-le")[: 2 * max(units, 0)].decode("utf-16-le", "ignore")


def _truncate_text(text: str, max_chars: int) -> str:
    return f"{slice_head(text, max_chars - 3)}..." if _u16len(text) > max_chars else text


def _js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept."""
    return dump_json(value)


def preview_args(args: Any) -> str:
    """``details.calls[].args``: compact JSON, at most 200 characters (``...`` suffix)."""
    if args is None:
        return ""
    return _truncate_text(_js_json(args), ARGS_PREVIEW_CHARS)


# ---------------------------------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------------------------------


def well_formed(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate of its strings, keys included, replaced
    by U+FFFD, as JavaScript's ``toWellFormed()`` does. QuickJS's ``JSON.stringify`` writes a
    lone surrogate as a ``\\ud83d`` escape, which no tool call, result text or console line can
    carry as UTF-8; codemode_python's interpreter turns them into U+FFFD the same way."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, list):
        return [well_formed(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(k): well_formed(v) for k, v in value.items()}
    return value


def _loads(text: str) -> Any:
    """``json.loads(text)``, :func:`well_formed` when ``text`` has a surrogate escape."""
    value = json.loads(text)
    return well_formed(value) if "\\ud" in text or "\\uD" in text else value


def _value_text(value_json: str) -> str:
    """Like ``text()``: strings as is, other values as compact JSON (the worker's ``value`` is
    ``JSON.stringify`` of the returned value)."""
    value = _loads(value_json)
    return value if isinstance(value, str) else value_json


def _clean_stack(stack: str) -> str:
    """QuickJS frames of the script read ``codemode.js:<line>:<column>`` as in Pi; the frame
    of the host's top-level call is dropped."""
    lines = [line for line in stack.split("\n") if "at <eval> (eval_script:" not in line]
    return "\n".join(lines).replace("eval_script:", "codemode.js:")


class _Lines:
    """JSON lines from a trio receive stream."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def next(self) -> dict[str, Any] | None:
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return json.loads(line)
            chunk = await self.stream.receive_some(1 << 16)
            if not chunk:
                return None
            self.buffer += chunk

    def next_ends_turn(self) -> bool:
        """Whether the next message, already received, is the script's ``waiting`` or ``done``
        (no other call of this turn follows)."""
        end = self.buffer.find(b"\n")
        if end < 0 or end > 64:
            return False
        return json.loads(bytes(self.buffer[:end])).get("type") in ("waiting", "done")


def _kill(process: trio.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# One script
# ---------------------------------------------------------------------------------------------


class _Script:
    """The host side of one running script: its :class:`ScriptRun` (output items, call rows)
    and how the worker ended it (``done`` message, or ``error``)."""

    def __init__(self, run: ScriptRun, tools: dict[str, Any], publish: Callable[[], None]) -> None:
        self.run = run
        self.tools = tools
        self.publish = publish
        self.gate = trio.Event()  # set when the script waits: the calls made since may end
        self.done: dict[str, Any] | None = None
        self.error: ScriptError | None = None
        self.samples = {name: render_tool_sample(tool) for name, tool in tools.items()}

    def add_output(self, item: dict[str, Any]) -> None:
        """An item the prelude already checked against the output limits."""
        if item.get("type") == "image":
            self.run.output.append(
                OutputItem("image", data=str(item["data"]), mime_type=str(item["mimeType"]))
            )
        else:
            kind = "console" if item.get("console") else "text"
            self.run.output.append(OutputItem(kind, text=str(item.get("text", ""))))

    async def call(
        self,
        message: dict[str, Any],
        reply: Callable[[dict[str, Any]], Awaitable[None]],
        entered: trio.Event,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``tools.<id>(args)`` as a nested tool call and answer the worker with what the
        script receives (Pi's ``toScriptValue``).

        Started with ``nursery.start``: ``started()`` comes just before the nested call, whose
        id, record and ``tool_execution_start`` are made before its first checkpoint, so calls
        get their rows, ids and events in the order the script made them, as in Pi (trio
        may run newly started tasks in any order). The call then runs at once
        (:func:`run_call_turn`) and ends once the script waits (``self.gate``)."""
        call_id, name = message["id"], message["name"]
        if message.get("target") == "global":
            entered.set()
            task_status.started()
            await reply({"type": "result", "id": call_id, **self.call_global(message)})
            return
        tool = self.tools.get(name)
        if tool is None:
            entered.set()
            task_status.started()
            unknown = f'Unknown tool "{name}"'
            await reply({"type": "result", "id": call_id, "ok": False, "payload": unknown})
            return
        raw_args = message.get("args")
        args = _loads(raw_args) if isinstance(raw_args, str) else None
        row = self.run.start_call(name, args)
        row.args = preview_args(args)
        self.publish()
        task_status.started()
        outcome = await current_tool_context().execute_tool(
            name, args, end_after=self.gate, entered=entered
        )
        if trio.current_effective_deadline() == -math.inf:
            # The script is ending (done, timeout, abort): as in Pi, whose script returns without
            # waiting for it, the row keeps its "/?" id and becomes "cancelled".
            await trio.lowlevel.checkpoint()
        result = outcome.result
        text = "\n".join(b.text for b in result.content or [] if isinstance(b, TextContent))
        error = (text or f'Tool "{name}" failed') if outcome.is_error else None
        ScriptRun.finish_call(row, outcome.tool_call.id, "error" if error else "ok", None)
        if error is not None:
            row.error = _truncate_text(error, ERROR_PREVIEW_CHARS)
        self.publish()
        if tool.output_schema and result.structured_content is not None:
            answer = {"ok": True, "payload": _js_json(result.structured_content)}
        elif error is not None:
            answer = {"ok": False, "payload": error}
        else:
            answer = {"ok": True, "payload": _js_json(text)}
        await reply({"type": "result", "id": call_id, **answer})

    def call_global(self, message: dict[str, Any]) -> dict[str, Any]:
        """``searchTools``, ``describeTool``, ``describeNamespace`` (Pi's discovery globals):
        the answer to the worker, ``{"ok", "payload"}``."""
        raw_args = message.get("args")
        args = _loads(raw_args) if isinstance(raw_args, str) else []
        handlers: dict[str, Callable[..., Any]] = {
            "searchTools": self.search_tools,
            "describeTool": self.describe_tool,
            "describeNamespace": self.describe_namespace,
        }
        handler = handlers.get(message["name"])
        if handler is None:
            return {"ok": False, "payload": f'Unknown global "{message["name"]}"'}
        try:
            value = handler(*(args if isinstance(args, list) else []))
        except ValueError as e:
            return {"ok": False, "payload": str(e)}
        return {"ok": True, "payload": None if value is None else _js_json(value)}

    def _entry(self, tool: Any) -> dict[str, str]:
        return {"name": to_codemode_identifier(tool.name), "description": self.samples[tool.name]}

    def search_tools(self, query: Any = None, options: Any = None) -> list[dict[str, str]]:
        if not isinstance(query, str):
            raise ValueError("searchTools() expects a query string")
        options = options if isinstance(options, dict) else {}
        limit = options.get("limit")
        limit = DEFAULT_TOOL_SEARCH_LIMIT if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0:
            raise ValueError("searchTools() limit must be a positive integer")
        if isinstance(limit, float) and not limit.is_integer():
            raise ValueError("searchTools() limit must be a positive integer")
        namespace = options.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise ValueError("searchTools() namespace must be a string")
        documents = []
        for tool in self.tools.values():
            tool_namespace = getattr(tool, "namespace", None)
            if namespace and (
                tool_namespace is None or not _is_namespace_name(tool_namespace, namespace)
            ):
                continue
            documents.append(search_document(tool, tool_namespace))
        ranked = Bm25Ranker().rank(query, documents, int(limit))
        return [self._entry(self.tools[name]) for name, _ in ranked]

    def describe_tool(self, name: Any = None) -> str | None:
        if not isinstance(name, str):
            raise ValueError("describeTool() expects a tool name")
        for tool in self.tools.values():
            if name in (tool.name, to_codemode_identifier(tool.name)):
                return self.samples[tool.name]
        return None

    def describe_namespace(self, name: Any = None) -> dict[str, Any] | None:
        if not isinstance(name, str):
            raise ValueError("describeNamespace() expects a namespace name")
        found: Any = None
        names: list[str] = []
        for tool in self.tools.values():
            tool_namespace = getattr(tool, "namespace", None)
            if tool_namespace is None or not _is_namespace_name(tool_namespace, name):
                continue
            found = found or tool_namespace
            names.append(to_codemode_identifier(tool.name))
        if found is None:
            return None
        out: dict[str, Any] = {"name": found.name}
        if found.description:
            out["description"] = found.description
        if found.instructions:
            out["instructions"] = found.instructions
        out["tools"] = names
        return out

    async def drive(self, process: trio.Process, start: dict[str, Any]) -> None:
        """Feed the worker ``start``, run the calls it makes, until ``done`` or its end."""
        assert process.stdin is not None and process.stdout is not None
        stdin = process.stdin
        lock = trio.Lock()

        async def send(message: dict[str, Any]) -> None:
            data = dump_json(message) + "\n"
            async with lock:
                try:
                    await stdin.send_all(data.encode("utf-8", "surrogatepass"))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass  # the worker is gone; its exit ends the script

        lines = _Lines(process.stdout)
        async with trio.open_nursery() as nursery:
            await send(start)
            while True:
                message = await lines.next()
                if message is None:
                    code = await process.wait()
                    self.error = ScriptError("sandbox", WORKER_EXITED_TEXT.format(code=code))
                    break
                kind = message.get("type")
                if kind == "output":
                    self.add_output(message["item"])
                elif kind == "call":
                    entered = trio.Event()
                    await nursery.start(self.call, message, send, entered)
                    # a script awaiting each call: nothing else of its turn to order
                    if not lines.next_ends_turn():
                        await run_call_turn(entered)
                elif kind == "waiting":  # the script waits: the calls made since may end
                    self.gate.set()
                    self.gate = trio.Event()
                elif kind == "done":
                    self.done = message
                    if not message.get("ok"):
                        self.error = _script_error(str(message.get("error")))
                    break
                elif kind == "crash":
                    self.error = ScriptError("sandbox", str(message.get("message")))
                    break
            nursery.cancel_scope.cancel()  # calls still running are cancelled with the script


def _is_namespace_name(namespace: Any, query: str) -> bool:
    """Whether ``query`` names the namespace: its name or an alias, as written or as the same
    script identifier."""
    query_id = to_codemode_identifier(query)
    names = [namespace.name, *(getattr(namespace, "aliases", ()) or ())]
    return any(n == query or to_codemode_identifier(n) == query_id for n in names)


def _script_error(error_json: str) -> ScriptError:
    """A ``script`` error from the prelude's description: the stack (``Name: message`` and
    the script's frames), else ``Name: message``."""
    parsed = _loads(error_json)
    stack = parsed.get("stack")
    if isinstance(stack, str):
        return ScriptError("script", _clean_stack(stack))
    return ScriptError("script", f"{parsed.get('name') or 'Error'}: {parsed.get('message', '')}")


def _store_writes(writes_json: Any) -> dict[str, str | None]:
    """The prelude's ``[[key, json] | [key], ...]`` as ``{key: json | None}``."""
    writes: dict[str, str | None] = {}
    for entry in json.loads(writes_json) if isinstance(writes_json, str) else []:
        writes[entry[0]] = entry[1] if len(entry) > 1 else None
    return writes


async def _run_worker(script: _Script, start: dict[str, Any]) -> None:
    """One worker process for the script; killed (its whole process group) when the script
    ends, however it ends."""
    # the lifeline: the worker ends when its write end closes (this process died)
    lifeline_read, lifeline_write = os.pipe()
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-I", WORKER_PATH],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=(lifeline_read,),
            env={
                **os.environ,
                "PI_CODEMODE_PARENT_PID": str(os.getpid()),
                "PI_CODEMODE_LIFELINE": str(lifeline_read),
            },
        )
    except BaseException:
        os.close(lifeline_write)
        raise
    finally:
        os.close(lifeline_read)
    try:
        await script.drive(process, start)
    finally:
        with trio.CancelScope(shield=True):
            _kill(process)
            await process.wait()
            os.close(lifeline_write)


async def execute_codemode(
    tool_call_id: str, params: Any, on_update: Any, ctx: Any
) -> AgentToolResult:
    """Run one script (the ``codemode`` tool's ``execute``)."""
    started = time.monotonic()
    code = params.get("code") if isinstance(params, dict) else None
    try:
        source = parse_codemode_source(code if isinstance(code, str) else "")
    except CodemodeSourceError as e:
        raise ToolError(str(e)) from None
    try:
        callable_tools = [t for t in current_tool_context().tools if t.name != CODEMODE_TOOL_NAME]
    except RuntimeError:  # called outside a pipeline call: no tools to reach
        callable_tools = []
    run = ScriptRun(tool_call_id)

    def publish() -> None:
        if on_update is not None:
            on_update(AgentToolResult(content=[], details=run.details()))

    script = _Script(run, {t.name: t for t in callable_tools}, publish)
    publish()
    store = session_store(getattr(ctx, "session", None))
    start = {
        "code": source.code,
        "tools": [
            {
                "name": t.name,
                "jsName": to_codemode_identifier(t.name),
                "description": script.samples[t.name],
            }
            for t in callable_tools
        ],
        "globals": [{"name": name, "spread": True} for name in DISCOVERY_GLOBALS],
        "store": dict(store),
        "memoryLimitBytes": MEMORY_LIMIT_BYTES,
    }
    timeout_ms, hint = script_timeout_ms(source.timeout_ms, getattr(ctx, "session", None))
    deadline = math.inf if timeout_ms is None else timeout_ms / 1000
    error: ScriptError | None = None
    with trio.move_on_after(deadline) as timeout_scope:
        try:
            async with codemode_worker_slot(min(deadline, WORKER_WAIT_SECONDS)):
                await _run_worker(script, start)
        except NoWorkerFree as e:
            error = ScriptError(
                "not_started",
                f"Script timed out: Execution timed out after {timeout_ms} ms while "
                f"waiting for a free codemode worker{hint}"
                if deadline <= WORKER_WAIT_SECONDS
                else str(e),
            )
    if error is None and timeout_scope.cancelled_caught:
        error = ScriptError("timeout", f"Execution timed out after {timeout_ms} ms{hint}")
    elif error is None:
        error = script.error
    done = script.done
    value: str | None = None
    if error is None and done is not None:
        commit_store(store, _store_writes(done.get("writes")), getattr(ctx, "session", None))
        if isinstance(done.get("value"), str):
            value = _value_text(done["value"])
    return script_result(
        run,
        started=started,
        error=error,
        value=value,
        max_output_tokens=(
            DEFAULT_MAX_OUTPUT_TOKENS
            if source.max_output_tokens is None
            else source.max_output_tokens
        ),
    )


def prepare_codemode_loadout(loadout: ToolLoadout) -> LoadoutChanges:
    """Pi's ``prepareCodemodeLoadout`` (mode ``on``): each declared tool a script can call gets
    a ``Codemode:`` line saying what ``tools.<id>(args)`` resolves to, and the codemode tool's
    description lists the callable tools that are not declared directly (``codemode``
    exposure; ``deferred`` ones never), within the inline budget."""
    callable_tools = [t for t in loadout.callable if t.name != CODEMODE_TOOL_NAME]
    names = {t.name for t in callable_tools}
    descriptions = {t.name: describe_script_call(t) for t in loadout.declared if t.name in names}
    listed = [t for t in callable_tools if loadout.get_exposure(t.name) != "direct"]
    namespaces = {t.name: ns for t in listed if (ns := loadout.get_namespace(t.name)) is not None}
    descriptions[CODEMODE_TOOL_NAME] = create_codemode_description(
        CODEMODE_DESCRIPTION,
        listed,
        namespaces=namespaces,
        guidelines={t.name: loadout.get_prompt_guidelines(t.name) for t in listed},
        deferred={t.name for t in listed if loadout.get_exposure(t.name) == "deferred"},
    )
    return LoadoutChanges(descriptions=descriptions)


__all__ = [
    "CODEMODE_DESCRIPTION",
    "CODEMODE_PARAMETERS",
    "CODEMODE_TOOL_NAME",
    "MEMORY_LIMIT_BYTES",
    "create_codemode_tool_definition",
    "execute_codemode",
    "preview_args",
    "to_codemode_identifier",
]
