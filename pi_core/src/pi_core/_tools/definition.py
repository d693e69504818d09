"""Tools: ``AgentTool`` (what the loop runs), ``ToolDefinition`` (the product layer) and ``@tool``.

Seed §三 (the tool protocol) and spec §1.4. An ``AgentTool`` has ``name``, ``label``,
``description``, ``parameters`` (a JSON Schema object), optional ``prepare_arguments``,
``execution_mode`` (``"parallel"`` or ``"sequential"``) and an async
``execute(tool_call_id, params, on_update=None) -> AgentToolResult``. Cancellation is trio
cancellation: there is no signal argument.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

import pydantic
import trio

from pi_core._wire.messages import AgentToolResult, ImageContent, TextContent

ExecutionMode = Literal["parallel", "sequential"]
OnUpdate = Callable[[AgentToolResult], None]
"""``on_update(partial_result)``: report progress; emits ``tool_execution_update``."""

ExecuteFn = Callable[[str, Any, "OnUpdate | None"], Awaitable[AgentToolResult]]
DefinitionExecuteFn = Callable[[str, Any, "OnUpdate | None", Any], Awaitable[AgentToolResult]]


@dataclass(eq=False)
class AgentTool:
    """A tool as the loop runs it (spec §1.4).

    ``execute(tool_call_id, params, on_update)`` is awaited with the validated arguments; it
    returns an :class:`AgentToolResult`, or raises (the message becomes an error result), or
    raises :class:`~pi_core._errors.ToolAborted` when cancelled with something to report.
    ``prepare_arguments(raw_args) -> args`` runs before validation (legacy argument shims).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ExecuteFn
    label: str = ""
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: ExecutionMode = "parallel"
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
    (``ctx`` is ``None`` when the host has none). ``prompt_snippet`` and ``prompt_guidelines``
    go into the system prompt; ``render_call(args) -> str`` and ``render_result(result) -> str``
    let a terminal show the call its own way.
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

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.name


def wrap_tool_definition(definition: ToolDefinition, context: Any = None) -> AgentTool:
    """The ``AgentTool`` of ``definition``: same name, label, description, parameters,
    ``prepare_arguments`` and ``execution_mode``; its ``execute`` passes ``context`` as the
    definition's fourth argument. Prompt and rendering fields are not part of the AgentTool
    (spec §1.4); the definition itself stays reachable as ``AgentTool.definition``.
    """

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None
    ) -> AgentToolResult:
        return await definition.execute(tool_call_id, params, on_update, context)

    return AgentTool(
        name=definition.name,
        label=definition.label,
        description=definition.description,
        parameters=definition.parameters,
        prepare_arguments=definition.prepare_arguments,
        execution_mode=definition.execution_mode,
        execute=execute,
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
) -> Any:
    """Turn a typed function (sync or ``async def``) into a tool.

    The JSON Schema comes from the signature (pydantic; parameters without a default are
    required, no extra properties allowed), the description from the docstring (an ``Args:``
    section gives parameter descriptions). A returned ``str`` becomes one text block; an
    ``AgentToolResult`` is returned as is. A sync function runs in a worker thread so it never
    blocks the batch. Usable bare (``@tool``) or with options (``@tool(name="x")``).
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

        async def execute(
            tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
        ) -> AgentToolResult:
            values = model.model_validate(params)
            kwargs = {k: getattr(values, k) for k in fields}
            if is_async:
                value = await fn(**kwargs)
            else:
                value = await trio.to_thread.run_sync(functools.partial(fn, **kwargs))
            return result_from_value(value)

        definition = FunctionTool(
            name=name or fn.__name__,
            description=description if description is not None else doc_description,
            parameters=schema,
            execute=execute,
            execution_mode=execution_mode,
            prompt_snippet=prompt_snippet,
            prompt_guidelines=list(prompt_guidelines or []),
        )
        definition.func = fn
        definition.arguments_model = model
        functools.update_wrapper(definition, fn, updated=())
        return definition

    if func is not None:
        return build(func)
    return build


__all__ = [
    "AgentTool",
    "ExecutionMode",
    "FunctionTool",
    "OnUpdate",
    "ToolDefinition",
    "result_from_value",
    "to_agent_tool",
    "tool",
    "wrap_tool_definition",
]
