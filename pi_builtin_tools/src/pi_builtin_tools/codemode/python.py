"""The ``codemode_python`` tool: Pi's ``codemode`` contract (delta §3) with scripts in Python,
run by ``pydantic-monty`` (Monty, a Rust interpreter for AI-written Python, in a worker process).

Driving the script from trio. Monty's synchronous start/resume API runs a script until it needs
the host: a tool call, a global (``text``, ``store``...), an undefined name, an OS call, or a
moment where every script task waits on a pending call. Each step (``feed_start``, ``resume``)
runs in a worker thread. A tool call (``tools.read(path="x")``) starts a nested call
(:meth:`pi_core.ToolCallContext.execute_tool`: the whole pipeline, every hook, events with
``parent_tool_call_id``) in a task of this call's nursery and answers the script with a pending
future, so ``await asyncio.gather(...)`` runs calls concurrently on pi's loop. When every script
task waits, the driver waits until a call finishes and resumes the script with the finished ones.

Ending. A cancelled call (abort, ``timeout_ms``) cancels the nested calls (they are tasks of the
call's nursery) and kills the worker process (SIGKILL, then the pool is closed), so nothing is
left running. Limits: Monty's heap limit (256 MiB, ``MemoryError``), Pi's output and store
limits, and the process's codemode workers (``codemode_worker_slot``).

Reach. Monty has no ``subprocess``, ``socket`` or host modules, and surfaces every filesystem
and environment call (``open``, ``os.listdir``, ``os.getenv``, ``Path.read_text``...) to the host,
which refuses it: tools are a script's only reach.

Start-up: ``pydantic_monty`` (which imports asyncio) is imported by the functions that drive a
script, not with this module, so a session that never runs a script does not pay for it.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import trio

from pi_builtin_tools.catalog.definitions import (
    CODEMODE_PYTHON_DESCRIPTION,
    CODEMODE_PYTHON_PARAMETERS,
    CODEMODE_PYTHON_SOURCE_GRAMMAR,
    CODEMODE_PYTHON_TOOL_NAME,
    create_codemode_python_tool_definition,
)
from pi_builtin_tools.catalog.tool_search import Bm25Ranker, search_document
from pi_builtin_tools.codemode.common import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    VM_MEMORY_BYTES,
    NoWorkerFree,
    OutputItem,
    ScriptError,
    ScriptFailure,
    ScriptRun,
    Store,
    codemode_worker_slot,
    commit_store,
    image_data,
    js_value,
    parse_options_line,
    run_call_turn,
    script_result,
    script_timeout_ms,
    session_store,
    text_of,
)
from pi_builtin_tools.codemode.declarations import create_codemode_description
from pi_core import (
    AgentToolResult,
    LoadoutChanges,
    TextContent,
    ToolError,
    ToolLoadout,
    current_tool_context,
)

DESCRIPTION = CODEMODE_PYTHON_DESCRIPTION
PARAMETERS = CODEMODE_PYTHON_PARAMETERS
"""The definition's texts live in :mod:`pi_builtin_tools.catalog.definitions` (registering the tool
does not import this module); these are the same objects."""

SCRIPT_TOOL_NAMES = frozenset({"codemode", CODEMODE_PYTHON_TOOL_NAME})
"""Tools a script cannot call (scripts cannot start scripts; both are ``model-only``)."""

OPTIONS_PREFIX = "# @options:"
FIRST_LINE_HINT = (
    'Python only, optionally with a first line `# @options: {"max_output_tokens": 1000}`.'
)
NO_OS_TEXT = (
    "codemode_python scripts have no filesystem, network or processes; call a tool instead "
    "(tools.read, tools.bash, ...)"
)
NO_TIMERS_TEXT = (
    "codemode_python scripts have no timers: time.sleep and asyncio.sleep do not exist here"
)
SLEEP_FUNCTIONS = frozenset({"system.sleep", "system.async_sleep"})
SEARCH_LIMIT = 8
CLOSE_WAIT_SECONDS = 10.0

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str) -> str:
    """A tool's attribute on ``tools``: every character not valid in a Python identifier
    replaced by ``_`` (a leading digit too; empty: ``_``)."""
    ident = _NOT_IDENT.sub("_", name)
    if not ident:
        return "_"
    return "_" + ident[1:] if ident[0].isdigit() else ident


def parse_source(code: str) -> tuple[str, dict[str, int]]:
    """``(code, options)`` of the tool's input (``# @options:`` first line); ``ToolError``."""
    try:
        return parse_options_line(
            code, prefix=OPTIONS_PREFIX, language="Python", first_line_hint=FIRST_LINE_HINT
        )
    except ValueError as exc:
        raise ToolError(str(exc)) from None


class Tools:
    """The script's ``tools``: attribute reads and method calls are answered by the host."""


def _comparable(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def missing_tool_text(attr: str, names: list[str]) -> str:
    """Pi's text for a member of ``tools`` that does not exist, in Python terms."""
    wanted = _comparable(attr)
    close = [n for n in names if _comparable(n) == wanted] or [
        n for n in names if wanted and (wanted in _comparable(n) or _comparable(n) in wanted)
    ]
    message = f"tools.{attr} does not exist."
    if close:
        message += " Did you mean " + ", ".join(f"tools.{n}" for n in close[:5]) + "?"
    elif len(names) <= 20:
        message += " Available: " + ", ".join(names) + "."
    message += " ALL_TOOLS lists every tool; search_tools(query) finds tools by topic."
    return message + f' Check for a member with hasattr(tools, "{attr}").'


_PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "object": "dict",
    "array": "list",
    "null": "None",
}


def python_type(schema: Any) -> str:
    """The Python type of a JSON Schema, for declarations (``Any`` when it says nothing)."""
    if not isinstance(schema, dict):
        return "Any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            types = list(dict.fromkeys(python_type(s) for s in schema[key]))
            return "Any" if "Any" in types else " | ".join(types)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(_PY_TYPES.get(k, "Any") for k in kind))
    if "const" in schema and isinstance(schema["const"], str | int | bool):
        return f"Literal[{schema['const']!r}]"
    if isinstance(schema.get("enum"), list):
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    return _PY_TYPES.get(kind, "Any") if isinstance(kind, str) else "Any"


def declaration(tool: Any) -> str:
    """The tool as a Python ``async def`` with keyword-only parameters: it returns its output
    schema's type, ``str`` (its text) without one."""
    schema = tool.parameters or {}
    required = set(schema.get("required", []))
    params = []
    for pname, prop in (schema.get("properties") or {}).items():
        kind = python_type(prop)
        params.append(f"{pname}: {kind}" if pname in required else f"{pname}: {kind} | None = None")
    signature = ", ".join(["*", *params]) if params else ""
    returns = python_type(tool.output_schema) if tool.output_schema else "str"
    return f"async def {identifier(tool.name)}({signature}) -> {returns}: ..."


def tool_sample(tool: Any, guidelines: list[str] | None = None) -> str:
    """What ``describe_tool``, ``ALL_TOOLS`` and ``search_tools`` give for a tool, and its
    section in the description: its description (and guidelines), then its declaration."""
    description = (tool.description or "").strip()
    bullets = [f"- {g.strip()}" for g in guidelines or [] if g.strip()]
    if bullets:
        description = description + "\n\n" + "\n".join(bullets)
    return (
        f"{description}\n\ncodemode_python tool declaration:\n```python\n{declaration(tool)}\n```"
    )


def tool_section(tool: Any, guidelines: list[str]) -> str:
    """``### `id``` (``(`raw name`)`` when they differ), then the tool's sample."""
    ident = identifier(tool.name)
    heading = f"### `{ident}`" if ident == tool.name else f"### `{ident}` (`{tool.name}`)"
    return f"{heading}\n{tool_sample(tool, guidelines).strip()}"


def prepare_codemode_python_loadout(loadout: ToolLoadout) -> LoadoutChanges:
    """The description lists the tools a script can call that the model does not see declared
    (``codemode`` exposure; ``deferred`` ones never), within the inline budget, as
    ``codemode``'s does (the descriptions of the declared tools are left to ``codemode``)."""
    listed = [
        t
        for t in loadout.callable
        if t.name not in SCRIPT_TOOL_NAMES and loadout.get_exposure(t.name) != "direct"
    ]
    namespaces = {t.name: ns for t in listed if (ns := loadout.get_namespace(t.name)) is not None}
    description = create_codemode_description(
        DESCRIPTION,
        listed,
        namespaces=namespaces,
        guidelines={t.name: loadout.get_prompt_guidelines(t.name) for t in listed},
        deferred={t.name for t in listed if loadout.get_exposure(t.name) == "deferred"},
        render_section=tool_section,
    )
    return LoadoutChanges(descriptions={CODEMODE_PYTHON_TOOL_NAME: description})


_EXC_TYPES = {"RangeError": "ValueError", "TypeError": "TypeError"}


class _ScriptDriver:
    """One script run: the Monty session, its globals and its nested calls."""

    def __init__(self, run: ScriptRun, tools: list[Any], store: Store, on_update: Any) -> None:
        self.run = run
        self.tools = tools
        self.by_name: dict[str, Any] = {}  # identifiers first (the first tool wins), raw names
        for tool in tools:
            self.by_name.setdefault(identifier(tool.name), tool)
        for tool in tools:
            self.by_name.setdefault(tool.name, tool)
        self.ids = list(dict.fromkeys(identifier(t.name) for t in tools))
        self.store = store
        self.on_update = on_update
        self.results: dict[int, dict[str, Any]] = {}
        self.finished = trio.Event()
        self.gate = trio.Event()  # set when the script waits: the calls made since may end
        self.pid: int | None = None
        self.exited = False
        self.failure: ScriptFailure | None = None
        self.idle = threading.Event()  # no step of the sandbox is running in a thread
        self.idle.set()
        self._steps = trio.CapacityLimiter(1)  # one step at a time
        self._line = ""

    # -- output ---------------------------------------------------------------------------

    def print_callback(self, stream: str, text: str) -> None:
        """``print()`` output: each complete line a console item."""
        self._line += text
        *lines, self._line = self._line.split("\n")
        for line in lines:
            self._output(OutputItem("console", line), raise_failure=False)

    def flush_console(self) -> None:
        if self._line:
            line, self._line = self._line, ""
            self._output(OutputItem("console", line), raise_failure=False)

    def _output(self, item: OutputItem, *, raise_failure: bool = True) -> None:
        """Add an output item. Past the output limits the script ends (the driver stops at
        its next step), whether or not it catches the error."""
        if self.failure is not None:
            return
        try:
            self.run.add(item)
        except ScriptFailure as exc:
            self.failure = exc
            if raise_failure:
                raise

    def progress(self) -> None:
        if self.on_update is not None:
            self.on_update(AgentToolResult(content=[], details=self.run.details()))

    # -- globals --------------------------------------------------------------------------

    def globals(self) -> dict[str, Callable[..., Any]]:
        def text(value: Any) -> None:
            self._output(OutputItem("text", text_of(value)))

        def image(value: Any) -> None:
            data, mime_type = image_data(value)
            self._output(OutputItem("image", data=data, mime_type=mime_type))

        def exit() -> None:
            self.exited = True
            raise SystemExit()

        def search_tools(query: Any, limit: Any = SEARCH_LIMIT, namespace: Any = None) -> Any:
            if not isinstance(query, str):
                raise ScriptFailure("TypeError", "search_tools() expects a query string")
            if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
                raise ScriptFailure("ValueError", "search_tools() limit must be a positive integer")
            if namespace is not None and not isinstance(namespace, str):
                raise ScriptFailure("TypeError", "search_tools() namespace must be a string")
            documents = []
            for tool in self.tools:
                space = getattr(tool, "namespace", None)
                if namespace and not _in_namespace(space, namespace):
                    continue
                documents.append(search_document(tool, space))
            return [
                {"name": identifier(name), "description": tool_sample(self.by_name[name])}
                for name, _ in Bm25Ranker().rank(query, documents, limit)
            ]

        def describe_tool(name: Any) -> str | None:
            if not isinstance(name, str):
                raise ScriptFailure("TypeError", "describe_tool() expects a tool name")
            for tool in self.tools:
                if name in (tool.name, identifier(tool.name)):
                    return tool_sample(tool)
            return None

        return {
            "text": text,
            "image": image,
            "exit": exit,
            "store": self.store.set,
            "load": self.store.get,
            "search_tools": search_tools,
            "describe_tool": describe_tool,
        }

    def all_tools(self) -> list[dict[str, str]]:
        first = {identifier(t.name): t for t in reversed(self.tools)}
        return [{"name": i, "description": tool_sample(first[i])} for i in self.ids]

    # -- tool calls -----------------------------------------------------------------------

    async def call_tool(
        self,
        call_id: int,
        tool: Any,
        kwargs: dict[str, Any],
        entered: trio.Event,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One nested call; its answer to the script goes to ``results[call_id]``.

        Started with ``nursery.start``: the row, the progress update and the nested call's id
        and ``tool_execution_start`` come in the order the script made the calls (as the
        JavaScript engine's, and Pi's)."""
        row = self.run.start_call(tool.name, kwargs)
        self.progress()
        task_status.started()
        # registered (id, tool_execution_start) and run now (run_call_turn), ended once the
        # script waits, as a JavaScript script's calls are
        outcome = await current_tool_context().execute_tool(
            tool.name, kwargs, end_after=self.gate, entered=entered
        )
        result = outcome.result
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        error = (text or f'Tool "{tool.name}" failed') if outcome.is_error else None
        ScriptRun.finish_call(row, outcome.tool_call.id, "error" if error else "ok", error)
        if tool.output_schema and result.structured_content is not None:
            self.results[call_id] = {"return_value": result.structured_content}
        elif error is not None:
            self.results[call_id] = {"exc_type": "RuntimeError", "message": error}
        else:
            self.results[call_id] = {"return_value": text}
        self.progress()
        self.finished.set()

    # -- the driver -----------------------------------------------------------------------

    async def drive(self, code: str, nursery: trio.Nursery) -> Any:
        """Run the script to its end; returns the value of its last expression. Raises
        ``monty.MontyError`` when the script fails."""
        import pydantic_monty as monty

        pool = monty.Monty(min_processes=1, max_processes=1)
        session: Any = None
        try:
            try:
                await self._in_thread(pool.__enter__)
                session = pool.checkout(limits={"max_memory": VM_MEMORY_BYTES})
                await self._in_thread(session.__enter__)
            except monty.MontyError:
                raise
            except Exception as exc:  # no worker binary, spawn failure
                raise SandboxStartError(str(exc)) from exc
            self.pid = session.worker_pid
            tools = monty.ClassInstance(Tools(), allowed_methods="all")
            snap = await self._in_thread(
                lambda: session.feed_start(
                    code, inputs={"tools": tools}, print_callback=self.print_callback
                )
            )
            host = self.globals()
            while not isinstance(snap, monty.MontyComplete):
                if self.failure is not None:  # over the output limits: the script ends
                    return None
                snap = await self._answer(snap, host, nursery)
            return None if self.failure is not None else snap.output
        finally:
            with trio.CancelScope(shield=True):
                self.kill()
                # a step abandoned by a cancel returns once its worker is dead: close the pool
                # only then, so that it does not outlive the pool (or start a replacement)
                await trio.to_thread.run_sync(self.idle.wait, CLOSE_WAIT_SECONDS)
                self.kill()
                await trio.to_thread.run_sync(lambda: _close(session, pool))

    async def _answer(self, snap: Any, host: dict[str, Any], nursery: trio.Nursery) -> Any:
        """Answer one suspension; returns the next one."""
        import pydantic_monty as monty

        if isinstance(snap, monty.NameLookupSnapshot):
            name = snap.variable_name
            if snap.object_id is not None:  # tools.<name> read as a value, getattr(tools, ...)
                if name in self.by_name:
                    return await self._resume(snap.resume, value=_tool_function(name))
                return await self._resume(snap.resume)  # AttributeError: hasattr() is False
            if name in host:
                return await self._resume(snap.resume, value=host[name])
            if name == "ALL_TOOLS":
                return await self._resume(snap.resume, value=self.all_tools())
            return await self._resume(snap.resume)  # NameError
        if isinstance(snap, monty.FunctionSnapshot):
            name = snap.function_name
            if snap.is_os_function:
                if name == "import":  # a module Monty does not have
                    return await self._resume(snap.resume_not_handled)
                if name in SLEEP_FUNCTIONS:
                    no_timers = {"exc_type": "NotImplementedError", "message": NO_TIMERS_TEXT}
                    return await self._resume(snap.resume, no_timers)
                refusal = {"exc_type": "PermissionError", "message": NO_OS_TEXT}
                return await self._resume(snap.resume, refusal)
            if snap.object_id is not None or name.startswith("tools."):  # a tool call
                attr = name.removeprefix("tools.") if snap.object_id is None else name
                tool = self.by_name.get(attr)
                if tool is None:
                    missing = missing_tool_text(attr, self.ids)
                    return await self._resume(
                        snap.resume, {"exc_type": "AttributeError", "message": missing}
                    )
                if snap.args:
                    message = f"tools.{attr}() takes keyword arguments only"
                    return await self._resume(
                        snap.resume, {"exc_type": "TypeError", "message": message}
                    )
                kwargs = js_value(dict(snap.kwargs))
                entered = trio.Event()
                await nursery.start(self.call_tool, snap.call_id, tool, kwargs, entered)
                await run_call_turn(entered)
                return await self._resume(snap.resume, {"future": ...})
            return await self._call_global(snap, host.get(name))
        # a FutureSnapshot: every script task waits on tool calls; those made since the last
        # wait may end now
        self.gate.set()
        self.gate = trio.Event()
        pending = list(snap.pending_call_ids)
        while not any(i in self.results for i in pending):
            self.finished = trio.Event()
            await self.finished.wait()
        ready = {i: self.results.pop(i) for i in pending if i in self.results}
        return await self._resume(snap.resume, ready)

    async def _call_global(self, snap: Any, fn: Callable[..., Any] | None) -> Any:
        try:
            if fn is None:
                raise ScriptFailure("NameError", f"name '{snap.function_name}' is not defined")
            value = fn(*js_value(tuple(snap.args)), **js_value(dict(snap.kwargs)))
        except SystemExit:
            return await self._resume(snap.resume, {"exception": SystemExit()})
        except ScriptFailure as exc:
            kind = _EXC_TYPES.get(exc.kind, exc.kind)
            return await self._resume(snap.resume, {"exc_type": kind, "message": exc.message})
        except TypeError as exc:  # wrong arguments to a global
            return await self._resume(snap.resume, {"exc_type": "TypeError", "message": str(exc)})
        return await self._resume(snap.resume, {"return_value": value})

    async def _in_thread(self, fn: Callable[[], Any]) -> Any:
        """One blocking step of the sandbox in a worker thread; a cancel abandons the thread
        (the finally of :meth:`drive` kills the worker, which ends the step)."""

        def step() -> Any:
            try:
                return fn()
            finally:
                self.idle.set()

        # the step's thread always starts once idle is cleared: no cancel point is left between
        # this check and the start (the driver's own limiter never makes it wait)
        await trio.lowlevel.checkpoint_if_cancelled()
        self.idle.clear()
        return await trio.to_thread.run_sync(step, abandon_on_cancel=True, limiter=self._steps)

    async def _resume(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._in_thread(lambda: method(*args, **kwargs))

    def kill(self) -> None:
        """Kill the worker process (end of the run, cancel, timeout)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _in_namespace(space: Any, query: str) -> bool:
    if space is None:
        return False
    names = [space.name, *getattr(space, "aliases", ())]
    return any(n == query or identifier(n) == identifier(query) for n in names)


def _tool_function(name: str) -> Callable[..., None]:
    """A host function the script can hold (``f = tools.read``); calling it arrives as
    ``tools.<name>``."""

    def call(**kwargs: Any) -> None:  # never run: the driver answers the call
        return None

    call.__name__ = call.__qualname__ = f"tools.{name}"
    return call


def _close(session: Any, pool: Any) -> None:
    for part in (session, pool):
        if part is None:
            continue
        try:
            part.__exit__(None, None, None)
        except Exception:  # a killed worker: nothing left to close
            pass


class SandboxStartError(Exception):
    """The Monty worker could not be started (``Script sandbox failed: <message>``)."""


def _script_error(exc: Exception) -> ScriptError:
    import pydantic_monty as monty

    if isinstance(exc, monty.MontyRuntimeError | monty.MontySyntaxError):
        return ScriptError("script", exc.display("traceback"))
    if isinstance(exc, monty.MontyCrashedError | SandboxStartError):
        return ScriptError("sandbox", str(exc))
    return ScriptError("script", f"{type(exc).__name__}: {exc}")


STORE_STATE_KEY = "codemode"
"""``SessionContext.state`` entry shared with the JavaScript ``codemode``: ``{"store": {key:
JSON text}}``, so a value one language's script stores the other's can load."""


def _session_store(ctx: Any) -> dict[str, str]:
    return session_store(getattr(ctx, "session", None))


async def execute_codemode_python(
    tool_call_id: str, params: Any, on_update: Any, ctx: Any
) -> AgentToolResult:
    """Run one script (the ``codemode_python`` tool's ``execute``)."""
    import pydantic_monty as monty

    started = time.monotonic()
    code, options = parse_source(params.get("code", ""))
    context = current_tool_context()
    tools = [t for t in context.tools if t.name not in SCRIPT_TOOL_NAMES]
    session_store = _session_store(ctx)
    run = ScriptRun(codemode_id=tool_call_id)
    driver = _ScriptDriver(run, tools, Store(session_store), on_update)
    driver.progress()
    timeout_ms, hint = script_timeout_ms(options.get("timeout_ms"), getattr(ctx, "session", None))
    error: ScriptError | None = None
    value: Any = None
    failure: monty.MontyError | SandboxStartError | None = None
    with trio.move_on_after(timeout_ms / 1000 if timeout_ms else float("inf")) as deadline:
        try:
            async with codemode_worker_slot():
                async with trio.open_nursery() as nursery:
                    try:
                        value = await driver.drive(code, nursery)
                    except (monty.MontyError, SandboxStartError) as exc:
                        failure = exc
                    nursery.cancel_scope.cancel()  # calls the script no longer waits for
        except NoWorkerFree as exc:
            error = ScriptError("not_started", str(exc))
        if failure is not None:
            inner = failure.exception() if isinstance(failure, monty.MontyRuntimeError) else None
            if not (driver.exited and isinstance(inner, SystemExit)):
                error = _script_error(failure)
            value = None
    if deadline.cancelled_caught:
        error = ScriptError("timeout", f"Execution timed out after {timeout_ms} ms{hint}")
    driver.flush_console()
    if error is None and driver.failure is not None:  # output over the limits
        error = ScriptError("script", f"ValueError: {driver.failure.message}")
    if error is None:
        commit_store(session_store, driver.store.writes(), getattr(ctx, "session", None))
    return script_result(
        run,
        started=started,
        error=error,
        value=value,
        max_output_tokens=options.get("max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS),
    )


__all__ = [
    "CODEMODE_PYTHON_SOURCE_GRAMMAR",
    "CODEMODE_PYTHON_TOOL_NAME",
    "DESCRIPTION",
    "Tools",
    "create_codemode_python_tool_definition",
    "declaration",
    "execute_codemode_python",
    "identifier",
    "missing_tool_text",
    "parse_source",
    "prepare_codemode_python_loadout",
    "python_type",
    "tool_sample",
]
