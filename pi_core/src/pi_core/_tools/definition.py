"""Tools: ``AgentTool`` (what the loop runs), ``ToolDefinition`` (the product layer) and ``@tool``.

Pi's tool protocol. An ``AgentTool`` has ``name``, ``label``,
``description``, ``parameters`` (a JSON Schema object), optional ``prepare_arguments``,
``execution_mode`` (``"parallel"`` or ``"sequential"``) and an async
``execute(tool_call_id, params, on_update=None) -> AgentToolResult``. Cancellation is trio
cancellation: there is no signal argument.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_args, get_type_hints

import pydantic
import trio
from typing_extensions import is_typeddict

from pi_core._wire.messages import AgentToolResult, ImageContent, TextContent

ExecutionMode = Literal["parallel", "sequential"]
OnUpdate = Callable[[AgentToolResult], None]
"""``on_update(partial_result)``: report progress; emits ``tool_execution_update``."""

ExecuteFn = Callable[[str, Any, "OnUpdate | None"], Awaitable[AgentToolResult]]
DefinitionExecuteFn = Callable[[str, Any, "OnUpdate | None", Any], Awaitable[AgentToolResult]]

ReplayPolicy = Literal["never", "safe"]
"""Pi's ``AgentTool.replay``: may a recorded call be run again? ``"safe"``: re-running is
harmless (reads, searches); ``"never"``: it is not (it changes files or runs commands)."""


class JsonSchemaSampling(TypedDict):
    """``{"type": "json_schema", "strict": "prefer" | "require"}``: sample the arguments under
    the parameters' JSON Schema (the provider's strict tools). ``prefer``: strict when the
    provider supports it and the schema converts, else sent non-strict silently; ``require``:
    the request fails instead."""

    type: Literal["json_schema"]
    strict: Literal["prefer", "require"]


class GrammarVariants(TypedDict, total=False):
    """Grammar definitions by provider dialect: ``openai_lark`` (preferred), ``openai_regex``."""

    openai_lark: str
    openai_regex: str


class GrammarSampling(TypedDict):
    """``{"type": "grammar", "variants": {...}}``: the tool's single required string argument is
    sampled under a grammar (only by providers with OpenAI grammar tools)."""

    type: Literal["grammar"]
    variants: GrammarVariants


ConstrainedSampling = Literal[False] | JsonSchemaSampling | GrammarSampling
"""Pi's ``constrainedSampling`` (``False``: none), part of the tool declaration the providers
send: see :mod:`pi_core._providers.constrained_sampling`."""

VerifyMode = Literal["text", "outcome", "is_error"]
"""How ``pi replay --verify`` compares a replayed result with the recorded one: ``"text"`` the
normalised result text and ``isError``; ``"outcome"`` only ``isError`` (success texts that
differ between versions); ``"is_error"`` (the default) only ``isError``."""


Mutates = Literal["paths", "workspace"]
"""What a tool may change in the workspace, for checkpoints: ``"paths"``, the files its
``write`` path arguments name (changed through the file mutation queue, which records each
file's prior state at its turn); ``"workspace"``, anything under the working directory (a
shell: the tree is compared before and after the call). ``None`` (the default): nothing."""

ToolExposure = Literal["direct", "model-only", "codemode", "deferred", "hidden"]
"""Where a tool is exposed: see the table of :mod:`pi_core._tools.exposure`."""

EXPOSURE_LEVELS: tuple[str, ...] = get_args(ToolExposure)


@dataclass(frozen=True)
class ToolNamespace:
    """A group of tools (Pi's ``ToolNamespace``), e.g. the tools of one MCP server
    (``mcp__docs``): ``name``, ``aliases``, ``description`` and ``instructions``. ``tool_search``
    ranks the namespace's words (name, description, instructions) as a weak field."""

    name: str
    aliases: tuple[str, ...] = ()
    description: str | None = None
    instructions: str | None = None


@dataclass(frozen=True)
class ToolLoadout:
    """What a tool's ``prepare_loadout(loadout)`` sees when the active set changes:
    ``declared`` (the active tools), ``callable``, ``registered`` and lookups of a tool's
    exposure, namespace and prompt guidelines by name."""

    declared: list[AgentTool]
    callable: list[AgentTool]
    registered: list[AgentTool]
    get_exposure: Callable[[str], ToolExposure]
    get_namespace: Callable[[str], ToolNamespace | None]
    get_prompt_guidelines: Callable[[str], list[str]]


@dataclass
class LoadoutChanges:
    """What ``prepare_loadout`` returns: ``descriptions`` (tool name → the description the
    model sees instead) and ``hidden_declarations`` (active, callable tools whose declaration
    every request leaves out)."""

    descriptions: dict[str, str] = field(default_factory=dict)
    hidden_declarations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PathArgument:
    """A declared path argument of a tool: the argument ``name``, whether the tool reads
    (``read``) and/or writes (``write``) the file or directory it names, and the ``default``
    path the tool uses when the argument is absent (``"."``: the working directory; ``None``:
    none then).

    Policies read these declarations (the sandbox's path policy checks each declared path
    before the call runs, with the same texts for every tool); the model never sees them.
    """

    name: str
    read: bool = False
    write: bool = False
    default: str | None = None

    def __post_init__(self) -> None:
        if not (self.read or self.write):
            raise ValueError(f"path argument {self.name!r}: declare read=True and/or write=True")


SeedFileFn = Callable[[Any, AgentToolResult], "tuple[str, str] | None"]
"""``seed_file(args, recorded_result) -> (path, text) | None``: the file a recorded call shows
in full (``pi replay --verify --seed-from-reads`` creates it when it is missing)."""


@dataclass(eq=False)
class AgentTool:
    """A tool as the loop runs it.

    ``execute(tool_call_id, params, on_update)`` is awaited with the validated arguments; it
    returns an :class:`AgentToolResult`, or raises (the message becomes an error result), or
    raises :class:`~pi_core._errors.ToolAborted` when cancelled with something to report.
    ``prepare_arguments(raw_args) -> args`` runs before validation (legacy argument shims).

    Declarations that hosts and policies read (the loop ignores them; see
    :class:`ToolDefinition` for each): ``render_call``, ``render_result``, ``streaming``,
    ``verify``, ``path_arguments``, ``command_argument``, ``seed_file``, ``output_schema``,
    ``replay``, ``mutates``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ExecuteFn
    label: str = ""
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: ExecutionMode = "parallel"
    render_call: Callable[[Any], str] | None = field(default=None, repr=False)
    render_result: Callable[[AgentToolResult], str] | None = field(default=None, repr=False)
    streaming: bool = False
    verify: VerifyMode = "is_error"
    path_arguments: tuple[PathArgument, ...] = ()
    command_argument: str | None = None
    seed_file: SeedFileFn | None = field(default=None, repr=False)
    output_schema: dict[str, Any] | None = None
    """JSON Schema of ``structured_content`` in successful results (``None``: not declared)."""
    replay: ReplayPolicy | None = None
    """``"safe"`` (re-running is harmless) or ``"never"``: ``pi replay
    --respect-replay-policy`` reports a ``never`` tool's recorded result instead of running it;
    ``None`` (undeclared) is treated as ``"safe"``."""
    mutates: Mutates | None = None
    """What the tool may change in the workspace (:data:`Mutates`): ``"paths"``, ``"workspace"``
    or ``None`` (nothing); checkpoints record the calls that declare it."""
    constrained_sampling: ConstrainedSampling = False
    """How providers constrain the sampling of this tool's arguments
    (:data:`ConstrainedSampling`); ``False``: not at all."""
    coerce_arguments: bool = True
    """Whether the arguments are coerced as Pi 1.6 coerces them before they are checked
    (numeric strings to numbers, an optional ``null`` dropped, ...; see
    :mod:`pi_core._tools.validation`); ``False``: checked against ``parameters`` as they are."""
    exposure: ToolExposure = "direct"
    """Where the tool is exposed (:data:`ToolExposure`): ``direct``
    (declared and callable while active), ``model-only`` (declared while active, never
    callable by nested calls), ``codemode``/``deferred`` (not active at the start, always
    callable; ``tool_search`` loads deferred ones), ``hidden`` (never declared or callable)."""
    default_active: bool = True
    """Whether a ``direct``/``model-only`` tool is active when the session starts
    (``tool_search`` is registered inactive)."""
    namespace: ToolNamespace | None = None
    """The group the tool belongs to (an MCP server's tools), for ``tool_search``."""
    prepare_loadout: Callable[[ToolLoadout], LoadoutChanges | None] | None = field(
        default=None, repr=False
    )
    """``prepare_loadout(loadout) -> LoadoutChanges | None``: called for each active tool
    whenever the active set changes; may replace the model-facing descriptions of declared
    tools and hide declarations (see :class:`~pi_core._tools.exposure.ToolSet`)."""
    definition: ToolDefinition | None = field(default=None, repr=False)
    """The :class:`ToolDefinition` this tool was wrapped from (``None`` for a plain
    ``AgentTool``): hosts read its ``prompt_snippet``/``prompt_guidelines`` for the system
    prompt (``pi run``) and its renderers; the loop never uses it."""

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.name


@dataclass(eq=False)
class ToolDefinition:
    """A product-layer tool: an ``AgentTool`` plus prompt text and terminal renderers.

    Its ``execute(tool_call_id, params, on_update, ctx)`` also receives the session context
    (``ctx`` is ``None`` when the host has none). A plain ``def`` ``execute`` runs in a worker
    thread that an abort abandons (as for a sync ``@tool``; ``on_update`` may be called from
    it). ``prompt_snippet`` and ``prompt_guidelines``
    go into the system prompt; ``render_call(args) -> str`` and ``render_result(result) -> str``
    let a terminal show the call its own way.

    Declarations that shared code (the CLI, ``pi replay --verify``, policies) reads instead of
    knowing tools by name; ``wrap_tool_definition`` carries each onto the ``AgentTool``:

    * ``render_call(args) -> str``: the one-line header of a call (``pi run``, ``pi call``,
      ``pi replay``); default ``NAME {compact JSON arguments}``.
    * ``render_result(result) -> str``: the text shown for a result (``pi run`` shows it whole);
      default: the result's text, its first lines in ``pi run``.
    * ``streaming``: ``on_update`` reports the output so far (bash); ``pi run`` shows it live,
      whole, and then only what the final result adds.
    * ``verify``: how ``pi replay --verify`` compares a replayed result (:data:`VerifyMode`).
    * ``path_arguments``: the arguments that name files read or written
      (:class:`PathArgument`); a path policy checks them before the call, and
      ``pi replay --verify`` never runs a call that writes outside the workspace.
    * ``command_argument``: the argument holding a shell command the tool runs (bash syntax):
      command policies check it, ``pi replay --verify`` maps the recorded cwd inside it and
      ``--bash recorded`` answers such calls from the recording.
    * ``seed_file(args, result) -> (path, text) | None``: the file a recorded result shows in
      full (``pi replay --verify --seed-from-reads``).
    * ``output_schema``: the JSON Schema of ``structured_content`` in successful results (Pi's
      ``outputSchema``); a tool that declares it sets ``structured_content`` on every success.
      Programs and tools calling this tool read it; the model never sees it.
    * ``replay``: :data:`ReplayPolicy`, ``"safe"`` when re-running the call is harmless,
      ``"never"`` when it is not (``pi replay --respect-replay-policy`` then reports the
      recorded result instead of running the call).
    * ``mutates``: :data:`Mutates`, what the tool may change in the workspace: ``"paths"`` (the
      files its ``write`` path arguments name, changed through the file mutation queue),
      ``"workspace"`` (anything: a shell) or ``None``; checkpoints record each call that
      declares it, so ``pi rewind`` can take it back.
    * ``constrained_sampling``: :data:`ConstrainedSampling`, part of the declaration sent to
      the model (Pi's ``constrainedSampling``): ``{"type": "json_schema", "strict": "prefer"}``
      asks a provider with strict tools to sample the arguments under the schema.
    * ``coerce_arguments``: ``True`` (the default) coerces the model's arguments as Pi 1.6 does
      before they are checked (``"5"`` → 5 for a number, an optional ``null`` dropped, ``123``
      → ``"123"`` for a string); ``False`` checks them as they are, for a tool that wants to
      tell ``"5"`` from 5.
    * ``exposure``, ``default_active``, ``namespace``, ``prepare_loadout``: where the tool is
      exposed and how the session's :class:`~pi_core.ToolSet` treats it (see the fields of
      :class:`AgentTool` and ``docs/explanation/exposure.md``).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: DefinitionExecuteFn
    label: str = ""
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: ExecutionMode = "parallel"
    prompt_snippet: str | None = None
    prompt_guidelines: list[str] = field(default_factory=list)
    render_call: Callable[[Any], str] | None = None
    render_result: Callable[[AgentToolResult], str] | None = None
    prompt_guidelines_for: Callable[[list[str]], list[str]] | None = None
    streaming: bool = False
    verify: VerifyMode = "is_error"
    path_arguments: tuple[PathArgument, ...] = ()
    command_argument: str | None = None
    seed_file: SeedFileFn | None = None
    output_schema: dict[str, Any] | None = None
    replay: ReplayPolicy | None = None
    mutates: Mutates | None = None
    constrained_sampling: ConstrainedSampling = False
    coerce_arguments: bool = True
    exposure: ToolExposure = "direct"
    default_active: bool = True
    namespace: ToolNamespace | None = None
    prepare_loadout: Callable[[ToolLoadout], LoadoutChanges | None] | None = None

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.name


def _is_async_callable(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or (
        callable(fn) and inspect.iscoroutinefunction(type(fn).__call__)
    )


async def run_sync_abandonable(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker thread that cancellation abandons.

    The first cancel (an abort) ends the wait at once; the thread keeps running to its end and
    its result (or exception) is discarded. A returned awaitable (a sync function handing back
    a coroutine) is awaited here, in trio."""

    def call() -> list[Any]:
        return [fn(*args)]  # boxed: trio refuses a coroutine coming back from a thread

    (value,) = await trio.to_thread.run_sync(call, abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


def _thread_update(on_update: OnUpdate | None) -> OnUpdate | None:
    """``on_update`` callable from a worker thread: it runs on trio's thread; once the run is
    over (an abandoned thread reporting late) it does nothing."""
    if on_update is None:
        return None
    token = trio.lowlevel.current_trio_token()
    report = on_update

    def update(partial: AgentToolResult) -> None:
        try:
            trio.from_thread.run_sync(report, partial, trio_token=token)
        except trio.RunFinishedError:
            pass

    return update


def wrap_tool_definition(definition: ToolDefinition, context: Any = None) -> AgentTool:
    """The ``AgentTool`` of ``definition``: same name, label, description, parameters,
    ``prepare_arguments``, ``execution_mode`` and declarations (renderers, ``streaming``,
    ``verify``, ``path_arguments``, ``command_argument``, ``seed_file``, ``output_schema``,
    ``replay``, ``mutates``); its ``execute`` passes
    ``context`` as the definition's fourth argument. The prompt fields are not part of the
    AgentTool; the definition itself stays reachable as ``AgentTool.definition``.
    """

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None
    ) -> AgentToolResult:
        run = definition.execute
        if _is_async_callable(run):
            return await run(tool_call_id, params, on_update, context)
        result: AgentToolResult = await run_sync_abandonable(
            run, tool_call_id, params, _thread_update(on_update), context
        )
        return result

    return AgentTool(
        name=definition.name,
        label=definition.label,
        description=definition.description,
        parameters=definition.parameters,
        prepare_arguments=definition.prepare_arguments,
        execution_mode=definition.execution_mode,
        execute=execute,
        render_call=definition.render_call,
        render_result=definition.render_result,
        streaming=definition.streaming,
        verify=definition.verify,
        path_arguments=tuple(definition.path_arguments),
        command_argument=definition.command_argument,
        seed_file=definition.seed_file,
        output_schema=definition.output_schema,
        replay=definition.replay,
        mutates=definition.mutates,
        constrained_sampling=definition.constrained_sampling,
        coerce_arguments=definition.coerce_arguments,
        exposure=definition.exposure,
        default_active=definition.default_active,
        namespace=definition.namespace,
        prepare_loadout=definition.prepare_loadout,
        definition=definition,
    )


def to_agent_tool(obj: Any, context: Any = None) -> AgentTool:
    """Accept what ``register(...)`` accepts: an AgentTool, a ToolDefinition (wrapped with
    ``context``) or a ``@tool`` function; raise ``TypeError`` for anything else."""
    if isinstance(obj, AgentTool):
        return obj
    if isinstance(obj, ToolDefinition):
        return wrap_tool_definition(obj, context)
    raise TypeError(
        f"cannot register {obj!r} as a tool: expected an AgentTool, a ToolDefinition "
        "or a function decorated with @tool"
    )


def result_from_value(value: Any) -> AgentToolResult:
    """What a ``@tool`` function returned, as a result: a ``str`` becomes one text block; an
    ``AgentToolResult`` is kept; text/image blocks become the content; ``None`` gives no
    content; anything else is written as JSON text."""
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult(content=[TextContent(text=value)])
    if isinstance(value, TextContent | ImageContent):
        return AgentToolResult(content=[value])
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, TextContent | ImageContent) for v in value)
    ):
        return AgentToolResult(content=list(value))
    if value is None:
        return AgentToolResult(content=[])
    if isinstance(value, pydantic.BaseModel):
        text = value.model_dump_json()
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return AgentToolResult(content=[TextContent(text=text)])


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and the ``Args:`` section's parameter texts."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                current = None
                continue
            if (
                line[:1].isspace()
                and ":" in stripped
                and not (current and line.startswith("        "))
            ):
                name, _, text = stripped.partition(":")
                name = name.split("(")[0].strip()
                params[name] = text.strip()
                current = name
            elif current:
                params[current] = (params[current] + " " + stripped).strip()
            else:
                in_args = False
                description.append(line)
            continue
        description.append(line)
    return "\n".join(description).strip(), params


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` keys so the model sees a plain JSON Schema."""
    if isinstance(schema, dict):
        return {
            k: _clean_schema(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [_clean_schema(v) for v in schema]
    return schema


def _structured_return_adapter(annotation: Any) -> pydantic.TypeAdapter[Any] | None:
    """A ``TypeAdapter`` for a return annotation that is a pydantic model or a ``TypedDict``
    (what ``@tool`` turns into ``output_schema`` and ``structured_content``); else ``None``."""
    if isinstance(annotation, type) and (
        issubclass(annotation, pydantic.BaseModel) or is_typeddict(annotation)
    ):
        try:
            return pydantic.TypeAdapter(annotation)
        except pydantic.PydanticUserError as exc:  # typing.TypedDict before Python 3.12
            raise TypeError(f"@tool: return annotation {annotation.__name__}: {exc}") from None
    return None


class FunctionTool(ToolDefinition):
    """A ``ToolDefinition`` made by ``@tool`` from a typed function; calling it calls the function."""

    func: Callable[..., Any]
    arguments_model: type[pydantic.BaseModel]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    execution_mode: ExecutionMode = "parallel",
    prompt_snippet: str | None = None,
    prompt_guidelines: list[str] | None = None,
    render_call: Callable[[Any], str] | None = None,
    render_result: Callable[[AgentToolResult], str] | None = None,
    verify: VerifyMode = "is_error",
    path_arguments: Sequence[PathArgument] = (),
    command_argument: str | None = None,
    output_schema: dict[str, Any] | None = None,
    replay: ReplayPolicy | None = None,
    constrained_sampling: ConstrainedSampling = False,
    coerce_arguments: bool = True,
    exposure: ToolExposure = "direct",
    default_active: bool = True,
    namespace: ToolNamespace | None = None,
    mutates: Mutates | None = None,
) -> Any:
    """Turn a typed function (sync or ``async def``) into a tool.

    The JSON Schema comes from the signature (pydantic; parameters without a default are
    required, no extra properties allowed), the description from the docstring (an ``Args:``
    section gives parameter descriptions). A returned ``str`` becomes one text block; an
    ``AgentToolResult`` is returned as is. A sync function runs in a worker thread so it never
    blocks the batch; an abort ends the call at once with ``Operation aborted`` and abandons the
    thread, which runs on to its end with its result discarded (Python cannot stop a thread:
    check a deadline in long loops). Usable bare (``@tool``) or with options (``@tool(name="x")``); the
    options ``render_call``, ``render_result``, ``verify``, ``path_arguments`` and
    ``command_argument``, ``output_schema``, ``replay``, ``constrained_sampling``,
    ``coerce_arguments``, ``exposure``, ``default_active``, ``namespace`` and ``mutates`` are the
    :class:`ToolDefinition` declarations of the same names (``coerce_arguments=False``: the
    model's arguments are checked against the signature's schema as they are, not coerced).

    Structured results: when the return annotation is a pydantic model or a ``TypedDict``, the
    tool declares its JSON Schema as ``output_schema`` (unless given explicitly) and each
    returned value becomes ``structured_content`` too (``model_dump(mode="json")``), next to the
    JSON text the model sees. Other return annotations declare nothing.
    """

    def build(fn: Callable[..., Any]) -> FunctionTool:
        doc_description, param_docs = _docstring_parts(fn.__doc__)
        hints = get_type_hints(fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool {fn.__name__}: *args and **kwargs are not supported")
            annotation = hints.get(pname, Any)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (
                annotation,
                pydantic.Field(default=default, description=param_docs.get(pname)),
            )
        model = pydantic.create_model(
            f"{fn.__name__}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid"),
            **fields,
        )
        schema = _clean_schema(model.model_json_schema())
        schema.setdefault("properties", {})
        is_async = inspect.iscoroutinefunction(fn)
        output_adapter = _structured_return_adapter(hints.get("return"))
        declared_output = output_schema
        if declared_output is None and output_adapter is not None:
            declared_output = _clean_schema(output_adapter.json_schema())

        async def execute(
            tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
        ) -> AgentToolResult:
            values = model.model_validate(params)
            kwargs = {k: getattr(values, k) for k in fields}
            if is_async:
                value = await fn(**kwargs)
            else:
                value = await run_sync_abandonable(functools.partial(fn, **kwargs))
            result = result_from_value(value)
            if output_adapter is not None and not isinstance(value, AgentToolResult):
                result.structured_content = output_adapter.dump_python(value, mode="json")
            return result

        definition = FunctionTool(
            name=name or fn.__name__,
            description=description if description is not None else doc_description,
            parameters=schema,
            execute=execute,
            execution_mode=execution_mode,
            prompt_snippet=prompt_snippet,
            prompt_guidelines=list(prompt_guidelines or []),
            render_call=render_call,
            render_result=render_result,
            verify=verify,
            path_arguments=tuple(path_arguments),
            command_argument=command_argument,
            output_schema=declared_output,
            replay=replay,
            mutates=mutates,
            constrained_sampling=constrained_sampling,
            coerce_arguments=coerce_arguments,
            exposure=exposure,
            default_active=default_active,
            namespace=namespace,
        )
        definition.func = fn
        definition.arguments_model = model
        functools.update_wrapper(definition, fn, updated=())
        return definition

    if func is not None:
        return build(func)
    return build


__all__ = [
    "EXPOSURE_LEVELS",
    "AgentTool",
    "ConstrainedSampling",
    "ExecutionMode",
    "FunctionTool",
    "GrammarSampling",
    "GrammarVariants",
    "JsonSchemaSampling",
    "LoadoutChanges",
    "Mutates",
    "OnUpdate",
    "PathArgument",
    "ReplayPolicy",
    "SeedFileFn",
    "ToolDefinition",
    "ToolExposure",
    "ToolLoadout",
    "ToolNamespace",
    "VerifyMode",
    "result_from_value",
    "to_agent_tool",
    "tool",
    "wrap_tool_definition",
]
