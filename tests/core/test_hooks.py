"""Every hook of ``pi_core.hookspecs`` through the typed facade (``pi_core._plugins.facade``) and pi's own
caller (``pi_core._plugins.caller``): one test at least named after each spec, exact values, pluggy
order (later-registered first, ``tryfirst``/``trylast``), sync and async implementations where
the call mode allows them (DESIGN §2; STYLE items 2, 7).

Plugins are registered with the ``register_plugin`` fixture of ``pi_core.testing``.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import inspect
import pathlib
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import trio

from pi_core import (
    AfterToolCallResult,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallResult,
    TextContent,
    ToolCall,
    ToolDefinition,
    build_session,
    hookimpl,
    hookspecs,
    tool,
)
from pi_core._backend_kit.operations import CommandOutput, FileStat
from pi_core._errors import PluginError
from pi_core._loop.config import LoopConfig
from pi_core._pipeline.contexts import (
    AfterToolCallContext,
    BeforeToolCallContext,
    apply_after_tool_call_result,
)
from pi_core._plugins import caller as hook_caller
from pi_core._plugins.contexts import (
    BackendContext,
    BashSpawnContext,
    PluginCommand,
    RegisterToolsContext,
)
from pi_core._plugins.facade import PluginHooks
from pi_core._plugins.manager import PiPluginManager
from pi_core._session.context import SessionContext
from pi_core._wire.events import AgentEndEvent, AgentStartEvent, TurnStartEvent

Register = Callable[..., str]


def plugin(**impls: Callable[..., Any]) -> type:
    """A plugin class whose methods are the given functions (already ``@hookimpl``-marked)."""
    return type("Plugin", (), {name: staticmethod(fn) for name, fn in impls.items()})


async def _echo_execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=f"echoed: {params['value']}")])


ECHO = AgentTool(
    name="echo",
    description="Echo a value.",
    parameters={"type": "object", "properties": {"value": {"type": "string"}}},
    execute=_echo_execute,
)


def before_context(args: Any = None) -> BeforeToolCallContext:
    call = ToolCall(id="call-1", name="echo", arguments={"value": 5})
    return BeforeToolCallContext(
        tool_call=call,
        args={"value": "5"} if args is None else args,
        tool=ECHO,
        assistant_message=AssistantMessage(content=[call], stop_reason="toolUse"),
    )


def after_context(result: AgentToolResult, is_error: bool = False) -> AfterToolCallContext:
    before = before_context()
    return AfterToolCallContext(
        tool_call=before.tool_call,
        args=before.args,
        tool=before.tool,
        assistant_message=before.assistant_message,
        result=result,
        is_error=is_error,
    )


class LocalBash:
    """A BashOperations that only says who it is."""

    def __init__(self, label: str) -> None:
        self.label = label

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Any,
        env: Any = None,
        timeout: Any = None,
    ) -> int:
        on_data(self.label.encode())
        return 0


class LocalFiles:
    """A FileOperations that only says who it is."""

    def __init__(self, label: str) -> None:
        self.label = label

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        return self.label.encode()

    async def write_bytes(self, path: str, data: bytes) -> None:
        return None

    async def stat(self, path: str) -> FileStat:
        return FileStat(kind="file", size=0, mode=0o644, mtime=0.0)

    async def realpath(self, path: str) -> str:
        return path

    async def list_dir(self, path: str) -> list[str]:
        return []

    async def mkdir(self, path: str) -> None:
        return None

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        return CommandOutput(exit_code=0, stdout=b"", stderr=b"")


# ---------------------------------------------------------------------------------------------
# pi_register_tools (collect, sync)
# ---------------------------------------------------------------------------------------------


def make_definition(name: str) -> ToolDefinition:
    async def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=f"{name} in {ctx.cwd}")])

    return ToolDefinition(
        name=name, description=f"The {name} tool.", parameters={"type": "object"}, execute=execute
    )


@tool
def shout(text: str) -> str:
    """Shout a text."""
    return text.upper()


async def test_pi_register_tools_collects_every_kind_in_pluggy_order(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    seen: list[tuple[str, RegisterToolsContext]] = []

    @hookimpl
    def first_registered(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
        seen.append(("a", context))
        register(ECHO)

    @hookimpl
    def second_registered(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
        seen.append(("b", context))
        register(make_definition("defn"))
        register(shout)

    @hookimpl(trylast=True)
    def last(register: Callable[[Any], None]) -> None:
        seen.append(("c", None))  # type: ignore[arg-type]
        register(make_definition("late"))

    @hookimpl(tryfirst=True)
    def first(register: Callable[[Any], None]) -> None:
        seen.append(("d", None))  # type: ignore[arg-type]

    register_plugin(plugin(pi_register_tools=last), name="c")
    register_plugin(plugin(pi_register_tools=first_registered), name="a")
    register_plugin(plugin(pi_register_tools=first), name="d")
    register_plugin(plugin(pi_register_tools=second_registered), name="b")

    context = RegisterToolsContext(cwd="/work/project", config={"k": 1})
    tools = pi_hooks.register_tools(context)

    assert [name for name, _ in seen] == ["d", "b", "a", "c"]
    assert [ctx for name, ctx in seen if name in "ab"] == [context, context]
    assert [t.name for t in tools] == ["defn", "shout", "echo", "late"]
    assert all(isinstance(t, AgentTool) for t in tools)
    assert tools[2] is ECHO
    # A ToolDefinition is wrapped with the register context as its execute's ctx.
    result = await tools[0].execute("call-1", {}, None)
    assert result.content == [TextContent(text="defn in /work/project")]
    shouted = await tools[1].execute("call-2", {"text": "hi"}, None)
    assert shouted.content == [TextContent(text="HI")]


def test_pi_register_tools_with_no_plugins_gives_no_tools(pi_hooks: PluginHooks) -> None:
    assert pi_hooks.register_tools(RegisterToolsContext(cwd="/")) == []


def test_pi_register_tools_duplicate_name_is_an_error_naming_both_plugins(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def pi_register_tools(register: Callable[[Any], None]) -> None:
        register(ECHO)

    register_plugin(plugin(pi_register_tools=pi_register_tools), name="first_echo")
    register_plugin(plugin(pi_register_tools=pi_register_tools), name="second_echo")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_tools(RegisterToolsContext(cwd="/"))
    # second_echo registered later, so it is called first and owns the name.
    assert str(info.value) == (
        "tool 'echo' is registered by plugin 'second_echo' and by plugin 'first_echo'"
    )


def test_pi_register_tools_same_name_twice_by_one_plugin(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def pi_register_tools(register: Callable[[Any], None]) -> None:
        register(ECHO)
        register(make_definition("echo"))

    register_plugin(plugin(pi_register_tools=pi_register_tools), name="twice")
    with pytest.raises(PluginError, match=r"^tool 'echo' is registered twice by plugin 'twice'$"):
        pi_hooks.register_tools(RegisterToolsContext(cwd="/"))


def test_pi_register_tools_rejects_a_non_tool_naming_the_plugin(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    def not_decorated(text: str) -> str:
        return text

    @hookimpl
    def pi_register_tools(register: Callable[[Any], None]) -> None:
        register(not_decorated)

    register_plugin(plugin(pi_register_tools=pi_register_tools), name="sloppy")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_tools(RegisterToolsContext(cwd="/"))
    assert str(info.value) == (
        f"plugin 'sloppy' registered {not_decorated!r}, which is not a tool: expected an "
        "AgentTool, a ToolDefinition or a function decorated with @tool"
    )


def test_pi_register_tools_register_after_the_hook_returned_is_an_error(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    kept: list[Callable[[Any], None]] = []

    @hookimpl
    def pi_register_tools(register: Callable[[Any], None]) -> None:
        kept.append(register)

    register_plugin(plugin(pi_register_tools=pi_register_tools), name="late")
    assert pi_hooks.register_tools(RegisterToolsContext(cwd="/")) == []
    with pytest.raises(
        PluginError, match=r"^plugin 'late' called register after pi_register_tools returned$"
    ):
        kept[0](ECHO)


def test_pi_register_tools_async_implementation_is_refused_when_it_registers(
    plugin_manager: PiPluginManager, register_plugin: Register
) -> None:
    @hookimpl
    async def pi_register_tools(register: Callable[[Any], None]) -> None:
        register(ECHO)

    with pytest.raises(PluginError) as info:
        register_plugin(plugin(pi_register_tools=pi_register_tools), name="eager")
    assert str(info.value) == (
        "plugin 'eager' implements pi_register_tools with async def, but pi_register_tools "
        "takes sync implementations only"
    )
    assert not plugin_manager.has_plugin("eager")


def test_pi_register_tools_exception_propagates_and_stops_the_rest(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []

    @hookimpl
    def quiet(register: Callable[[Any], None]) -> None:
        called.append("quiet")

    @hookimpl
    def broken(register: Callable[[Any], None]) -> None:
        raise RuntimeError("no tools today")

    register_plugin(plugin(pi_register_tools=quiet), name="quiet")
    register_plugin(plugin(pi_register_tools=broken), name="broken")
    with pytest.raises(RuntimeError, match=r"^no tools today$"):
        pi_hooks.register_tools(RegisterToolsContext(cwd="/"))
    assert called == []


# ---------------------------------------------------------------------------------------------
# pi_register_providers (collect, sync)
# ---------------------------------------------------------------------------------------------


class FakeProvider:
    def __init__(self, name: str) -> None:
        self.name = name

    def create(self, model: str, options: dict[str, Any]) -> Any:
        return (self.name, model)


def test_pi_register_providers_collects_by_name_in_pluggy_order(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    openai, scripted, local = (
        FakeProvider("openai"),
        FakeProvider("scripted"),
        FakeProvider("local"),
    )

    @hookimpl(trylast=True)
    def fallback(register: Callable[[Any], None]) -> None:
        register(local)

    @hookimpl
    def two(register: Callable[[Any], None]) -> None:
        register(openai)
        register(scripted)

    register_plugin(plugin(pi_register_providers=two), name="two")
    register_plugin(plugin(pi_register_providers=fallback), name="fallback")
    providers = pi_hooks.register_providers()
    assert list(providers.items()) == [("openai", openai), ("scripted", scripted), ("local", local)]


def _command(name: str) -> PluginCommand:
    return PluginCommand(
        name=name, help=f"the {name} command", configure=lambda p: None, run=lambda i: 0
    )


def test_pi_register_commands_collects_by_name_in_pluggy_order(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    first, second, last = _command("first"), _command("second"), _command("last")

    @hookimpl(trylast=True)
    def fallback(register: Callable[[Any], None]) -> None:
        register(last)

    @hookimpl
    def two(register: Callable[[Any], None]) -> None:
        register(first)
        register(second)

    register_plugin(plugin(pi_register_commands=fallback), name="fallback")
    register_plugin(plugin(pi_register_commands=two), name="two")
    commands = pi_hooks.register_commands()
    assert list(commands.items()) == [("first", first), ("second", second), ("last", last)]


def test_pi_register_commands_duplicates_builtins_and_non_commands_are_errors(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def one(register: Callable[[Any], None]) -> None:
        register(_command("policy"))

    register_plugin(plugin(pi_register_commands=one), name="p1")
    name = register_plugin(plugin(pi_register_commands=one), name="p2")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_commands()
    assert str(info.value) == "command 'policy' is registered by plugin 'p2' and by plugin 'p1'"
    pi_hooks.pm.unregister(name=name)

    with pytest.raises(PluginError) as info:
        pi_hooks.register_commands(reserved=["policy"])
    assert str(info.value) == (
        "plugin 'p1' registered the command 'policy', which is a built-in command of pi"
    )

    @hookimpl
    def wrong(register: Callable[[Any], None]) -> None:
        register("policy")

    register_plugin(plugin(pi_register_commands=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_commands()
    assert str(info.value) == "plugin 'wrong' registered 'policy', which is not a PluginCommand"


def test_pi_register_providers_duplicate_and_nameless_are_errors(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def one(register: Callable[[Any], None]) -> None:
        register(FakeProvider("openai"))

    register_plugin(plugin(pi_register_providers=one), name="p1")
    name = register_plugin(plugin(pi_register_providers=one), name="p2")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_providers()
    assert str(info.value) == "provider 'openai' is registered by plugin 'p2' and by plugin 'p1'"

    pi_hooks.pm.unregister(name=name)

    @hookimpl
    def nameless(register: Callable[[Any], None]) -> None:
        register(object)

    register_plugin(plugin(pi_register_providers=nameless), name="nameless")
    with pytest.raises(PluginError) as info:
        pi_hooks.register_providers()
    assert str(info.value) == (
        f"plugin 'nameless' registered {object!r}, which is not a provider: expected an object "
        "with a name and create(model, options)"
    )


# ---------------------------------------------------------------------------------------------
# pi_bash_operations / pi_file_operations (first non-None, sync)
# ---------------------------------------------------------------------------------------------


def test_pi_bash_operations_first_non_none_and_trylast_local_backend(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    calls: list[str] = []
    ssh = LocalBash("ssh")

    @hookimpl(trylast=True)
    def local(context: BackendContext) -> LocalBash:
        calls.append(f"local {context.cwd}")
        return LocalBash("local")

    @hookimpl
    def passing(context: BackendContext) -> None:
        calls.append("passing")

    @hookimpl
    def remote(context: BackendContext) -> LocalBash | None:
        calls.append("remote")
        return ssh if context.config.get("ssh") else None

    register_plugin(plugin(pi_bash_operations=local), name="builtin")
    register_plugin(plugin(pi_bash_operations=remote), name="remote")
    register_plugin(plugin(pi_bash_operations=passing), name="passing")

    chosen = pi_hooks.bash_operations(BackendContext(cwd="/w", config={}))
    assert isinstance(chosen, LocalBash) and chosen.label == "local"
    assert calls == ["passing", "remote", "local /w"]

    calls.clear()
    assert pi_hooks.bash_operations(BackendContext(cwd="/w", config={"ssh": True})) is ssh
    assert calls == ["passing", "remote"]


def test_pi_bash_operations_none_without_plugins(pi_hooks: PluginHooks) -> None:
    assert pi_hooks.bash_operations(BackendContext(cwd="/")) is None


def test_pi_bash_operations_wrong_type_and_async_are_plugin_errors(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def wrong(context: BackendContext) -> str:
        return "bash"

    register_plugin(plugin(pi_bash_operations=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        pi_hooks.bash_operations(BackendContext(cwd="/"))
    assert str(info.value) == (
        "plugin 'wrong' returned 'bash' from pi_bash_operations; expected a BashOperations or None"
    )

    @hookimpl
    async def eager(context: BackendContext) -> LocalBash:
        return LocalBash("eager")

    with pytest.raises(
        PluginError, match=r"^plugin 'eager' implements pi_bash_operations with async def"
    ):
        register_plugin(plugin(pi_bash_operations=eager), name="eager")


def test_pi_bash_operations_sync_impl_returning_a_coroutine_is_refused(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    async def make() -> LocalBash:
        return LocalBash("never")

    @hookimpl
    def sneaky(context: BackendContext) -> Any:
        return make()

    register_plugin(plugin(pi_bash_operations=sneaky), name="sneaky")
    with pytest.raises(PluginError) as info:
        pi_hooks.bash_operations(BackendContext(cwd="/"))
    assert str(info.value) == (
        "plugin 'sneaky' returned an awaitable from pi_bash_operations, which takes sync "
        "implementations only"
    )


def test_pi_file_operations_first_non_none_and_trylast_local_backend(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    calls: list[str] = []
    remote_files = LocalFiles("remote")

    @hookimpl(trylast=True)
    def local(context: BackendContext) -> LocalFiles:
        calls.append("local")
        return LocalFiles("local")

    @hookimpl(tryfirst=True)
    def remote(context: BackendContext) -> LocalFiles:
        calls.append("remote")
        return remote_files

    @hookimpl
    def never(context: BackendContext) -> LocalFiles:
        calls.append("never")
        return LocalFiles("never")

    register_plugin(plugin(pi_file_operations=remote), name="remote")
    register_plugin(plugin(pi_file_operations=never), name="never")
    register_plugin(plugin(pi_file_operations=local), name="builtin")
    assert pi_hooks.file_operations(BackendContext(cwd="/")) is remote_files
    assert calls == ["remote"]


def test_pi_file_operations_wrong_type_is_a_plugin_error(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def wrong(context: BackendContext) -> LocalBash:
        return LocalBash("not files")

    register_plugin(plugin(pi_file_operations=wrong), name="wrong")
    with pytest.raises(
        PluginError,
        match=r"^plugin 'wrong' returned <.*LocalBash object at .*> from pi_file_operations; expected a FileOperations or None$",
    ):
        pi_hooks.file_operations(BackendContext(cwd="/"))


# ---------------------------------------------------------------------------------------------
# pi_bash_spawn_context (chain, sync)
# ---------------------------------------------------------------------------------------------


def test_pi_bash_spawn_context_chain_each_sees_the_previous(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    seen: list[str] = []

    @hookimpl(tryfirst=True)
    def prefix(context: BashSpawnContext) -> BashSpawnContext:
        seen.append(context.command)
        return BashSpawnContext(
            command=f"set -e; {context.command}", cwd=context.cwd, env=context.env
        )

    @hookimpl
    def unchanged(context: BashSpawnContext) -> None:
        seen.append(context.command)

    @hookimpl
    def env(context: BashSpawnContext) -> BashSpawnContext:
        seen.append(context.command)
        return BashSpawnContext(
            command=context.command, cwd="/sandbox", env={**context.env, "PI": "1"}
        )

    register_plugin(plugin(pi_bash_spawn_context=env), name="env")
    register_plugin(plugin(pi_bash_spawn_context=unchanged), name="unchanged")
    register_plugin(plugin(pi_bash_spawn_context=prefix), name="prefix")

    original = BashSpawnContext(command="ls", cwd="/w", env={"HOME": "/root"})
    final = pi_hooks.bash_spawn_context(original)
    assert seen == ["ls", "set -e; ls", "set -e; ls"]
    assert final == BashSpawnContext(
        command="set -e; ls", cwd="/sandbox", env={"HOME": "/root", "PI": "1"}
    )
    assert original == BashSpawnContext(command="ls", cwd="/w", env={"HOME": "/root"})


def test_pi_bash_spawn_context_unchanged_is_the_same_object(pi_hooks: PluginHooks) -> None:
    original = BashSpawnContext(command="ls", cwd="/w")
    assert pi_hooks.bash_spawn_context(original) is original


def test_pi_bash_spawn_context_wrong_type_and_async(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def wrong(context: BashSpawnContext) -> dict[str, str]:
        return {"command": "ls"}

    register_plugin(plugin(pi_bash_spawn_context=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        pi_hooks.bash_spawn_context(BashSpawnContext(command="ls", cwd="/"))
    assert str(info.value) == (
        "plugin 'wrong' returned {'command': 'ls'} from pi_bash_spawn_context; expected a "
        "BashSpawnContext or None"
    )

    @hookimpl
    async def eager(context: BashSpawnContext) -> None:
        return None

    with pytest.raises(PluginError, match=r"with async def, but pi_bash_spawn_context takes sync"):
        register_plugin(plugin(pi_bash_spawn_context=eager), name="eager")


# ---------------------------------------------------------------------------------------------
# pi_prepare_arguments (chain, sync or async)
# ---------------------------------------------------------------------------------------------


async def test_pi_prepare_arguments_chain_sync_and_async_in_pluggy_order(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    seen: list[tuple[str, Any]] = []

    @hookimpl
    def rename(tool_name: str, arguments: Any) -> Any:
        seen.append(("rename", dict(arguments)))
        if tool_name == "read" and "file_path" in arguments:
            arguments = dict(arguments)
            arguments["path"] = arguments.pop("file_path")
            return arguments
        return None

    @hookimpl(trylast=True)
    async def default_offset(arguments: Any) -> Any:
        await trio.lowlevel.checkpoint()
        seen.append(("offset", dict(arguments)))
        return {"offset": 1, **arguments}

    @hookimpl(tryfirst=True)
    async def observe(tool_name: str) -> None:
        seen.append(("observe", tool_name))

    register_plugin(plugin(pi_prepare_arguments=default_offset), name="offset")
    register_plugin(plugin(pi_prepare_arguments=rename), name="rename")
    register_plugin(plugin(pi_prepare_arguments=observe), name="observe")

    raw = {"file_path": "a.txt"}
    prepared = await pi_hooks.prepare_arguments("read", raw)
    assert prepared == {"offset": 1, "path": "a.txt"}
    assert raw == {"file_path": "a.txt"}
    assert seen == [
        ("observe", "read"),
        ("rename", {"file_path": "a.txt"}),
        ("offset", {"path": "a.txt"}),
    ]


async def test_pi_prepare_arguments_unchanged_is_the_same_object(pi_hooks: PluginHooks) -> None:
    raw = {"path": "a.txt"}
    assert await pi_hooks.prepare_arguments("read", raw) is raw


async def test_pi_prepare_arguments_exception_propagates_and_stops_the_chain(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []

    @hookimpl
    async def later(arguments: Any) -> Any:
        called.append("later")
        return arguments

    @hookimpl
    def broken(arguments: Any) -> Any:
        raise ValueError("bad arguments")

    register_plugin(plugin(pi_prepare_arguments=later), name="later")
    register_plugin(plugin(pi_prepare_arguments=broken), name="broken")
    with pytest.raises(ValueError, match=r"^bad arguments$"):
        await pi_hooks.prepare_arguments("read", {})
    assert called == []


# ---------------------------------------------------------------------------------------------
# pi_before_tool_call (first block, sync or async)
# ---------------------------------------------------------------------------------------------


async def test_pi_before_tool_call_first_block_sync_and_async(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []
    block = BeforeToolCallResult(block=True, reason="no network")

    @hookimpl(tryfirst=True)
    def allow(context: BeforeToolCallContext) -> BeforeToolCallResult:
        called.append("allow")
        # Does not block: counts as None, so the next policy is still asked.
        return BeforeToolCallResult(block=False, reason="fine by me")

    @hookimpl
    async def passing(context: BeforeToolCallContext) -> None:
        await trio.lowlevel.checkpoint()
        called.append(f"passing {context.args['value']}")

    @hookimpl
    async def policy(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        called.append("policy")
        return block if context.tool_call.name == "echo" else None

    @hookimpl(trylast=True)
    def never(context: BeforeToolCallContext) -> BeforeToolCallResult:
        called.append("never")
        return BeforeToolCallResult(block=True, reason="too late")

    register_plugin(plugin(pi_before_tool_call=never), name="never")
    register_plugin(plugin(pi_before_tool_call=policy), name="policy")
    register_plugin(plugin(pi_before_tool_call=passing), name="passing")
    register_plugin(plugin(pi_before_tool_call=allow), name="allow")

    assert await pi_hooks.before_tool_call(before_context()) is block
    assert called == ["allow", "passing 5", "policy"]


async def test_pi_before_tool_call_none_when_nothing_blocks(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def allow(context: BeforeToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=False)

    assert await pi_hooks.before_tool_call(before_context()) is None
    register_plugin(plugin(pi_before_tool_call=allow), name="allow")
    assert await pi_hooks.before_tool_call(before_context()) is None


async def test_pi_before_tool_call_mutating_args_and_errors(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def mutate(context: BeforeToolCallContext) -> None:
        context.args["value"] = 123

    register_plugin(plugin(pi_before_tool_call=mutate), name="mutate")
    ctx = before_context()
    assert await pi_hooks.before_tool_call(ctx) is None
    assert ctx.args == {"value": 123}

    @hookimpl
    async def failing(context: BeforeToolCallContext) -> None:
        raise RuntimeError("hookfail")

    name = register_plugin(plugin(pi_before_tool_call=failing), name="failing")
    with pytest.raises(RuntimeError, match=r"^hookfail$"):
        await pi_hooks.before_tool_call(before_context())
    pi_hooks.pm.unregister(name=name)

    @hookimpl
    def wrong(context: BeforeToolCallContext) -> dict[str, bool]:
        return {"block": True}

    register_plugin(plugin(pi_before_tool_call=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        await pi_hooks.before_tool_call(before_context())
    assert str(info.value) == (
        "plugin 'wrong' returned {'block': True} from pi_before_tool_call; expected a "
        "BeforeToolCallResult or None"
    )


# ---------------------------------------------------------------------------------------------
# pi_approve_tool_call (first non-None, sync or async)
# ---------------------------------------------------------------------------------------------


async def test_pi_approve_tool_call_asks_the_session_approver(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []

    @hookimpl
    def blocker(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        called.append("blocker")
        return BeforeToolCallResult(block=True) if context.args == {"value": "blocked"} else None

    @hookimpl
    async def asker(context: BeforeToolCallContext) -> str | None:
        called.append("asker")
        return "it writes outside the project" if context.args != {"value": "quiet"} else None

    register_plugin(plugin(pi_before_tool_call=blocker), name="blocker")
    register_plugin(plugin(pi_approve_tool_call=asker), name="asker")

    # no session, so no approver: the call is blocked with the reason
    context = before_context()
    assert await pi_hooks.before_tool_call(context) == BeforeToolCallResult(
        block=True,
        reason="Blocked: this call needs a person's approval and there is no one to ask (no "
        "terminal, no approval callback). asker: it writes outside the project",
        source="asker",
    )
    assert context.approval is not None and context.approval.answer == "none"
    # a blocked call never asks; a call no plugin asks about runs
    called.clear()
    assert (await pi_hooks.before_tool_call(before_context({"value": "blocked"}))).block
    assert called == ["blocker"]
    assert await pi_hooks.before_tool_call(before_context({"value": "quiet"})) is None

    session = SessionContext(cwd="/")
    pi_hooks.session = session
    answers = iter(["deny", "allow", "always"])
    asked: list[tuple[str, str, str, Any]] = []

    async def approver(request: Any) -> str:
        asked.append((request.source, request.reason, request.tool_name, request.arguments))
        return next(answers)

    session.set_approver(approver)
    denied = await pi_hooks.before_tool_call(before_context())
    assert denied is not None and denied.reason == (
        "Blocked: the user denied this call. asker: it writes outside the project"
    )
    assert await pi_hooks.before_tool_call(before_context()) is None  # allow
    assert await pi_hooks.before_tool_call(before_context()) is None  # always
    remembered = before_context()
    assert await pi_hooks.before_tool_call(remembered) is None  # not asked again
    assert remembered.approval is not None and remembered.approval.answer == "remembered"
    assert asked == [("asker", "it writes outside the project", "echo", {"value": "5"})] * 3
    # a plugin's default approver never replaces the host's
    assert session.set_approver(lambda request: "deny", replace=False) is False

    @hookimpl(tryfirst=True)
    def wrong(context: BeforeToolCallContext) -> Any:
        return True

    register_plugin(plugin(pi_approve_tool_call=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        await pi_hooks.before_tool_call(before_context())
    assert str(info.value) == (
        "plugin 'wrong' returned True from pi_approve_tool_call; expected a str or None"
    )


async def test_pi_approve_tool_call_approver_failures_deny(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def asker(context: BeforeToolCallContext) -> str:
        return "needs a look"

    register_plugin(plugin(pi_approve_tool_call=asker), name="asker")
    session = SessionContext(cwd="/")
    pi_hooks.session = session

    def broken(request: Any) -> str:
        raise OSError("no tty")

    session.set_approver(broken)
    result = await pi_hooks.before_tool_call(before_context())
    assert result is not None and result.reason == (
        "Blocked: the approval failed (no tty). asker: needs a look"
    )
    session.set_approver(lambda request: "yes please")
    result = await pi_hooks.before_tool_call(before_context())
    assert result is not None and result.reason == (
        "Blocked: the approval failed (the approver answered 'yes please', not 'allow', 'deny' "
        "or 'always'). asker: needs a look"
    )
    session.set_approver(lambda request: True)
    assert await pi_hooks.before_tool_call(before_context()) is None


# ---------------------------------------------------------------------------------------------
# pi_after_tool_call (chain, sync or async)
# ---------------------------------------------------------------------------------------------


def text(value: str) -> TextContent:
    return TextContent(text=value)


async def test_pi_after_tool_call_chain_each_sees_the_result_so_far(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    seen: list[tuple[str, list[str], Any, Any, bool]] = []

    def record(who: str, context: AfterToolCallContext) -> None:
        assert context.result is not None
        seen.append(
            (
                who,
                [b.text for b in context.result.content if isinstance(b, TextContent)],
                context.result.details,
                context.result.structured_content,
                context.is_error,
            )
        )

    @hookimpl(tryfirst=True)
    def redact(context: AfterToolCallContext) -> AfterToolCallResult:
        record("redact", context)
        return AfterToolCallResult(content=[text("[redacted]")])

    @hookimpl
    async def flag(context: AfterToolCallContext) -> AfterToolCallResult:
        await trio.lowlevel.checkpoint()
        record("flag", context)
        return AfterToolCallResult(is_error=True, details={"policy": "redact"})

    @hookimpl
    def nothing(context: AfterToolCallContext) -> None:
        record("nothing", context)

    @hookimpl(trylast=True)
    async def structure(context: AfterToolCallContext) -> AfterToolCallResult:
        record("structure", context)
        return AfterToolCallResult(structured_content={"ok": False}, terminate=True)

    register_plugin(plugin(pi_after_tool_call=structure), name="structure")
    register_plugin(plugin(pi_after_tool_call=nothing), name="nothing")
    register_plugin(plugin(pi_after_tool_call=flag), name="flag")
    register_plugin(plugin(pi_after_tool_call=redact), name="redact")

    original = AgentToolResult(
        content=[text("secret")], details={"value": "x"}, structured_content={"ok": True}
    )
    ctx = after_context(original)
    combined = await pi_hooks.after_tool_call(ctx)

    assert seen == [
        ("redact", ["secret"], {"value": "x"}, {"ok": True}, False),
        ("flag", ["[redacted]"], {"value": "x"}, None, False),
        ("nothing", ["[redacted]"], {"policy": "redact"}, None, True),
        ("structure", ["[redacted]"], {"policy": "redact"}, None, True),
    ]
    assert combined == AfterToolCallResult(
        content=[text("[redacted]")],
        details={"policy": "redact"},
        is_error=True,
        terminate=True,
        structured_content={"ok": False},
    )
    # The caller's context is untouched; one application of the combined result to the
    # original gives the chain's outcome, and applying it again changes nothing.
    assert ctx.result is original and ctx.is_error is False
    final, is_error = apply_after_tool_call_result(original, False, combined)
    assert final.to_json_dict() == {
        "content": [{"type": "text", "text": "[redacted]"}],
        "details": {"policy": "redact"},
        "terminate": True,
        "structuredContent": {"ok": False},
    }
    assert is_error is True
    assert apply_after_tool_call_result(final, is_error, combined) == (final, True)


async def test_pi_after_tool_call_content_replaced_last_clears_structured_content(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl(tryfirst=True)
    def structure(context: AfterToolCallContext) -> AfterToolCallResult:
        return AfterToolCallResult(structured_content={"ok": False})

    @hookimpl
    def replace(context: AfterToolCallContext) -> AfterToolCallResult:
        return AfterToolCallResult(content=[text("B")])

    register_plugin(plugin(pi_after_tool_call=replace), name="replace")
    register_plugin(plugin(pi_after_tool_call=structure), name="structure")
    original = AgentToolResult(content=[text("A")], structured_content={"ok": True})
    combined = await pi_hooks.after_tool_call(after_context(original))
    assert combined == AfterToolCallResult(content=[text("B")], structured_content=None)
    final, is_error = apply_after_tool_call_result(original, False, combined)
    assert final.to_json_dict() == {"content": [{"type": "text", "text": "B"}]}
    assert is_error is False


async def test_pi_after_tool_call_none_when_nothing_changes(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    async def nothing(context: AfterToolCallContext) -> AfterToolCallResult:
        return AfterToolCallResult()

    original = AgentToolResult(content=[text("A")])
    assert await pi_hooks.after_tool_call(after_context(original)) is None
    register_plugin(plugin(pi_after_tool_call=nothing), name="nothing")
    assert await pi_hooks.after_tool_call(after_context(original)) is None


async def test_pi_after_tool_call_details_none_keeps_details(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def flag(context: AfterToolCallContext) -> AfterToolCallResult:
        return AfterToolCallResult(is_error=True, details=None)

    register_plugin(plugin(pi_after_tool_call=flag), name="flag")
    original = AgentToolResult(content=[text("echoed: x")], details={"value": "x"})
    combined = await pi_hooks.after_tool_call(after_context(original))
    assert combined == AfterToolCallResult(is_error=True)
    assert apply_after_tool_call_result(original, False, combined) == (original, True)


async def test_pi_after_tool_call_exception_and_wrong_type(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []

    @hookimpl
    def later(context: AfterToolCallContext) -> None:
        called.append("later")

    @hookimpl
    async def failing(context: AfterToolCallContext) -> None:
        raise RuntimeError("afterfail")

    register_plugin(plugin(pi_after_tool_call=later), name="later")
    name = register_plugin(plugin(pi_after_tool_call=failing), name="failing")
    with pytest.raises(RuntimeError, match=r"^afterfail$"):
        await pi_hooks.after_tool_call(after_context(AgentToolResult()))
    assert called == []
    pi_hooks.pm.unregister(name=name)

    @hookimpl
    def wrong(context: AfterToolCallContext) -> str:
        return "replaced"

    register_plugin(plugin(pi_after_tool_call=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        await pi_hooks.after_tool_call(after_context(AgentToolResult()))
    assert str(info.value) == (
        "plugin 'wrong' returned 'replaced' from pi_after_tool_call; expected an "
        "AfterToolCallResult or None"
    )


# ---------------------------------------------------------------------------------------------
# pi_on_event (notify, sync or async)
# ---------------------------------------------------------------------------------------------


async def test_pi_on_event_notify_reports_exceptions_and_stops_nothing(
    pi_hooks: PluginHooks, register_plugin: Register, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, str]] = []

    @hookimpl(tryfirst=True)
    async def audit(event: Any) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(("audit", event.type))

    @hookimpl
    def broken(event: Any) -> None:
        raise ValueError(f"cannot log {event.type}")

    @hookimpl
    async def broken_async(event: Any) -> str:
        await trio.lowlevel.checkpoint()
        raise KeyError("telemetry")

    @hookimpl(trylast=True)
    def log(event: Any) -> str:
        seen.append(("log", event.type))
        return "ignored"

    register_plugin(plugin(pi_on_event=log), name="log")
    register_plugin(plugin(pi_on_event=broken_async), name="telemetry")
    register_plugin(plugin(pi_on_event=broken), name="broken")
    register_plugin(plugin(pi_on_event=audit), name="audit")

    for event in (AgentStartEvent(), TurnStartEvent(), AgentEndEvent()):
        await pi_hooks.on_event(event)

    assert seen == [
        ("audit", "agent_start"),
        ("log", "agent_start"),
        ("audit", "turn_start"),
        ("log", "turn_start"),
        ("audit", "agent_end"),
        ("log", "agent_end"),
    ]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "pi: plugin 'broken' failed in pi_on_event: ValueError: cannot log agent_start\n"
        "pi: plugin 'telemetry' failed in pi_on_event: KeyError: 'telemetry'\n"
        "pi: plugin 'broken' failed in pi_on_event: ValueError: cannot log turn_start\n"
        "pi: plugin 'telemetry' failed in pi_on_event: KeyError: 'telemetry'\n"
        "pi: plugin 'broken' failed in pi_on_event: ValueError: cannot log agent_end\n"
        "pi: plugin 'telemetry' failed in pi_on_event: KeyError: 'telemetry'\n"
    )


async def test_pi_on_event_cancellation_propagates(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    called: list[str] = []

    @hookimpl
    def after(event: Any) -> None:
        called.append("after")

    @hookimpl
    async def slow(event: Any) -> None:
        await trio.sleep_forever()

    register_plugin(plugin(pi_on_event=after), name="after")
    register_plugin(plugin(pi_on_event=slow), name="slow")
    with trio.move_on_after(0.01) as scope:
        await pi_hooks.on_event(AgentStartEvent())
    assert scope.cancelled_caught
    assert called == []


# ---------------------------------------------------------------------------------------------
# pi_session_start / pi_session_end (notify, sync or async)
# ---------------------------------------------------------------------------------------------


async def test_pi_session_start_notifies_sync_and_async_and_reports_exceptions(
    pi_hooks: PluginHooks, register_plugin: Register, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, str, str]] = []

    @hookimpl
    async def open_async(context: SessionContext) -> None:
        await trio.lowlevel.checkpoint()
        context.state["async"] = "opened"
        seen.append(("async", context.host, context.cwd))

    @hookimpl
    def broken(context: SessionContext) -> None:
        raise RuntimeError("no licence")

    @hookimpl
    def open_sync(context: SessionContext) -> str:
        context.state["sync"] = context.session_id
        seen.append(("sync", context.host, context.cwd))
        return "ignored"

    register_plugin(plugin(pi_session_start=open_sync), name="sync")
    register_plugin(plugin(pi_session_start=broken), name="broken")
    register_plugin(plugin(pi_session_start=open_async), name="async")
    context = SessionContext(cwd="/w", config={"a": 1}, host="call")

    assert await pi_hooks.session_start(context) is None

    assert seen == [("async", "call", "/w"), ("sync", "call", "/w")]
    assert context.state == {"async": "opened", "sync": context.session_id}
    assert re.fullmatch(r"[0-9a-f]{32}", context.session_id)
    assert context.session_id != SessionContext(cwd="/w").session_id
    assert context.reason is None
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "pi: plugin 'broken' failed in pi_session_start: RuntimeError: no licence\n",
    )


async def test_pi_session_end_runs_every_implementation_shielded(
    pi_hooks: PluginHooks, register_plugin: Register, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, str | None]] = []

    @hookimpl
    async def release(context: SessionContext) -> None:
        await trio.sleep(0.01)  # completes although the caller's scope is cancelled
        seen.append(("release", context.reason))

    @hookimpl
    async def broken(context: SessionContext) -> None:
        raise OSError("socket gone")

    @hookimpl(trylast=True)
    def last(context: SessionContext) -> None:
        seen.append(("last", context.reason))

    register_plugin(plugin(pi_session_end=last), name="last")
    register_plugin(plugin(pi_session_end=broken), name="broken")
    register_plugin(plugin(pi_session_end=release), name="release")
    context = SessionContext(cwd="/w", reason="aborted")
    with trio.CancelScope() as scope:
        scope.cancel()
        await pi_hooks.session_end(context)
    assert seen == [("release", "aborted"), ("last", "aborted")]
    assert capsys.readouterr().err == (
        "pi: plugin 'broken' failed in pi_session_end: OSError: socket gone\n"
    )


# ---------------------------------------------------------------------------------------------
# The caller itself: arguments by name, wrappers, no un-awaited coroutine
# ---------------------------------------------------------------------------------------------


async def test_each_implementation_gets_only_the_arguments_it_names(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    got: list[tuple[str, ...]] = []

    class Policy:
        @hookimpl
        def pi_prepare_arguments(self, arguments: Any) -> None:
            got.append(("arguments",))

        @hookimpl
        def pi_before_tool_call(self) -> None:
            got.append(())

    @hookimpl
    def by_name(tool_name: str) -> None:
        got.append((tool_name,))

    register_plugin(Policy(), name="policy")
    register_plugin(plugin(pi_prepare_arguments=by_name), name="by_name")
    assert await pi_hooks.prepare_arguments("grep", {}) == {}
    assert await pi_hooks.before_tool_call(before_context()) is None
    assert got == [("grep",), ("arguments",), ()]


def test_hook_wrappers_are_refused_when_a_plugin_registers(register_plugin: Register) -> None:
    @hookimpl(wrapper=True)
    def wrapping(event: Any) -> Any:
        return (yield)

    with pytest.raises(PluginError) as info:
        register_plugin(plugin(pi_on_event=wrapping), name="wrapping")
    assert str(info.value) == (
        "plugin 'wrapping' implements pi_on_event as a hook wrapper; pi calls hooks through "
        "its own caller and does not support hook wrappers"
    )

    @hookimpl(hookwrapper=True)
    def old_style(event: Any) -> Any:
        yield

    with pytest.raises(
        PluginError, match=r"^plugin 'old_style' implements pi_on_event as a hook wrapper"
    ):
        register_plugin(plugin(pi_on_event=old_style), name="old_style")


def test_sync_caller_refuses_awaitables_of_any_hook(
    plugin_manager: PiPluginManager, register_plugin: Register
) -> None:
    class Later:
        def __await__(self) -> Any:
            yield

    @hookimpl
    def later(event: Any) -> Later:
        return Later()

    register_plugin(plugin(pi_on_event=later), name="later")
    with pytest.raises(
        PluginError, match=r"^plugin 'later' returned an awaitable from pi_on_event"
    ):
        hook_caller.call_collect(plugin_manager.hook.pi_on_event, {"event": None})
    # notify reports it instead.
    reported: list[str] = []
    hook_caller.call_notify(
        plugin_manager.hook.pi_on_event,
        {"event": None},
        lambda impl, hook, exc: reported.append(f"{impl.plugin_name} {hook} {exc}"),
    )
    assert reported == [
        "later pi_on_event plugin 'later' returned an awaitable from pi_on_event, which takes "
        "sync implementations only"
    ]


def unawaited_coroutine_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    gc.collect()
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, RuntimeWarning) and "never awaited" in str(w.message)
    ]


def test_unawaited_coroutine_detection_works() -> None:
    """Control for the test below: the same mechanism does see an un-awaited coroutine."""

    async def forgotten() -> None:
        return None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forgotten()  # type: ignore[unused-coroutine]
        messages = unawaited_coroutine_warnings(caught)
    assert len(messages) == 1
    assert re.fullmatch(r"coroutine '.*forgotten' was never awaited", messages[0])


async def test_no_path_leaves_a_coroutine_unawaited(
    pi_hooks: PluginHooks, register_plugin: Register, capsys: pytest.CaptureFixture[str]
) -> None:
    async def backend() -> LocalBash:
        return LocalBash("coroutine")

    @hookimpl
    def sneaky_bash(context: BackendContext) -> Any:
        return backend()

    @hookimpl
    def sneaky_spawn(context: BashSpawnContext) -> Any:
        return backend()

    @hookimpl
    def sneaky_register(register: Callable[[Any], None]) -> Any:
        return backend()

    @hookimpl
    async def async_after_block(context: BeforeToolCallContext) -> None:
        raise AssertionError("never called: an earlier policy blocked")

    @hookimpl
    async def blocking(context: BeforeToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True)

    @hookimpl
    async def async_after_error(arguments: Any) -> None:
        raise AssertionError("never called: an earlier implementation raised")

    @hookimpl
    async def raising(arguments: Any) -> None:
        raise ValueError("boom")

    @hookimpl
    async def async_observer(event: Any) -> None:
        raise ValueError("observer")

    @hookimpl
    async def async_bash(context: BackendContext) -> LocalBash:
        return LocalBash("async")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        register_plugin(plugin(pi_bash_operations=sneaky_bash), name="sneaky_bash")
        register_plugin(plugin(pi_bash_spawn_context=sneaky_spawn), name="sneaky_spawn")
        register_plugin(plugin(pi_register_tools=sneaky_register), name="sneaky_register")
        register_plugin(plugin(pi_before_tool_call=async_after_block), name="after_block")
        register_plugin(plugin(pi_before_tool_call=blocking), name="blocking")
        register_plugin(plugin(pi_prepare_arguments=async_after_error), name="after_error")
        register_plugin(plugin(pi_prepare_arguments=raising), name="raising")
        register_plugin(plugin(pi_on_event=async_observer), name="observer")
        with pytest.raises(PluginError):
            register_plugin(plugin(pi_bash_operations=async_bash), name="async_bash")

        with pytest.raises(PluginError):
            pi_hooks.bash_operations(BackendContext(cwd="/"))
        with pytest.raises(PluginError):
            pi_hooks.bash_spawn_context(BashSpawnContext(command="ls", cwd="/"))
        with pytest.raises(PluginError):
            pi_hooks.register_tools(RegisterToolsContext(cwd="/"))
        assert await pi_hooks.before_tool_call(before_context()) == BeforeToolCallResult(block=True)
        with pytest.raises(ValueError, match="boom"):
            await pi_hooks.prepare_arguments("read", {})
        await pi_hooks.on_event(AgentStartEvent())
        # pluggy's own __call__ is what the caller avoids: it would leave coroutines behind.
        messages = unawaited_coroutine_warnings(caught)
    assert messages == []
    assert capsys.readouterr().err == (
        "pi: plugin 'observer' failed in pi_on_event: ValueError: observer\n"
    )


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


def test_pi_checkpoint_exclude_collects_patterns_and_they_are_never_recorded(
    pi_hooks: PluginHooks, register_plugin: Register, tmp_path: pathlib.Path
) -> None:
    seen: list[str] = []

    @hookimpl
    def secrets(context: SessionContext) -> list[str]:
        seen.append(context.host)
        return ["*.key", "build/out"]

    @hookimpl
    def nothing(context: SessionContext) -> None:
        return None

    register_plugin(plugin(pi_checkpoint_exclude=nothing), name="nothing")
    register_plugin(plugin(pi_checkpoint_exclude=secrets), name="secrets")
    context = SessionContext(cwd=str(tmp_path), host="call")
    assert pi_hooks.checkpoint_exclude(context) == ["*.key", "build/out"]
    assert seen == ["call"]

    session = build_session(pi_hooks.pm, tmp_path, {}, host="call")
    assert session.checkpoints is not None
    tree = session.checkpoints.recorder.tree
    assert [tree.excludes(p) for p in ("a.key", "d/b.key", "build/out/x", "build/x", ".git/HEAD")] == [
        True, True, True, False, True,
    ]  # fmt: skip

    @hookimpl
    def wrong(context: SessionContext) -> str:
        return "*.key"

    register_plugin(plugin(pi_checkpoint_exclude=wrong), name="wrong")
    with pytest.raises(PluginError) as info:
        pi_hooks.checkpoint_exclude(context)
    assert str(info.value) == (
        "plugin 'wrong' returned '*.key' from pi_checkpoint_exclude; expected a list of path"
        " patterns or None"
    )


async def test_pi_before_rewind_first_reason_refuses_the_rewind(
    pi_hooks: PluginHooks, register_plugin: Register, tmp_path: pathlib.Path
) -> None:
    from pi_core import RewindContext, RewindRefused, rewind

    seen: list[tuple[str, str]] = []

    @hookimpl
    async def veto(context: RewindContext) -> str | None:
        seen.append(("veto", context.target))
        return "a release is being cut" if context.changes else None

    @hookimpl(tryfirst=True)
    def look(context: RewindContext) -> None:
        seen.append(("look", ",".join(c.label() for c in context.changes)))

    register_plugin(plugin(pi_before_rewind=veto), name="veto")
    register_plugin(plugin(pi_before_rewind=look), name="look")

    session = build_session(pi_hooks.pm, tmp_path, {}, host="agent", checkpoints=True)
    assert session.checkpoints is not None
    tool_call = ToolCall(id="w1", name="touch", arguments={})
    recorder = session.checkpoints.recorder
    async with session:
        record = recorder.open_call(tool_call.id, "touch", None, "workspace")
        assert record is not None
        await recorder.before_call(record)
        (tmp_path / "made.txt").write_text("made")
        await recorder.after_call(record)
    with pytest.raises(RewindRefused) as info:
        await rewind(tmp_path, to="w1", before_rewind=pi_hooks.before_rewind)
    assert (str(info.value), info.value.source) == ("a release is being cut", "veto")
    assert seen == [("look", "-made.txt"), ("veto", "before call w1")]
    assert (tmp_path / "made.txt").exists()

    @hookimpl(tryfirst=True)
    def wrong(context: RewindContext) -> int:
        return 1

    register_plugin(plugin(pi_before_rewind=wrong), name="wrong")
    with pytest.raises(PluginError, match="plugin 'wrong' returned 1 from pi_before_rewind"):
        await rewind(tmp_path, to="w1", before_rewind=pi_hooks.before_rewind)


# ---------------------------------------------------------------------------------------------
# Composition into LoopConfig
# ---------------------------------------------------------------------------------------------


async def test_apply_to_sets_the_loop_callbacks(
    pi_hooks: PluginHooks, register_plugin: Register
) -> None:
    @hookimpl
    def prepare(arguments: Any) -> Any:
        return {**arguments, "prepared": True}

    @hookimpl
    async def before(context: BeforeToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="denied")

    @hookimpl
    def after(context: AfterToolCallContext) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    register_plugin(
        plugin(pi_prepare_arguments=prepare, pi_before_tool_call=before, pi_after_tool_call=after),
        name="all",
    )
    config = LoopConfig(tool_execution="sequential")
    assert pi_hooks.apply_to(config) is config
    assert config.tool_execution == "sequential"
    assert sorted(pi_hooks.loop_callbacks()) == [
        "after_tool_call",
        "before_tool_call",
        "prepare_arguments",
    ]
    assert config.prepare_arguments is not None
    assert config.before_tool_call is not None
    assert config.after_tool_call is not None
    assert await config.prepare_arguments("read", {"path": "a"}) == {"path": "a", "prepared": True}
    assert await config.before_tool_call(before_context()) == BeforeToolCallResult(
        block=True, reason="denied"
    )
    assert await config.after_tool_call(after_context(AgentToolResult())) == AfterToolCallResult(
        terminate=True
    )


@pytest.mark.parametrize(
    "module", ["pi_core._pipeline.config", "pi_core._loop.config", "pi_core._loop.loop"]
)
def test_loop_modules_do_not_import_pluggy(module: str) -> None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        pytest.skip(f"{module} does not exist yet")
    tree = ast.parse(pathlib.Path(spec.origin).read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {
        name
        for name in imported
        if name.split(".")[0] == "pluggy"
        or name
        in ("pi_core._plugins.facade", "pi_core._plugins.manager", "pi_core._plugins.caller")
    }


# ---------------------------------------------------------------------------------------------
# Meta-tests (datasette style)
# ---------------------------------------------------------------------------------------------


SPEC_NAMES = sorted(
    name for name, obj in vars(hookspecs).items() if name.startswith("pi_") and callable(obj)
)


def test_hookspecs_are_the_design_hooks_and_have_call_modes() -> None:
    assert SPEC_NAMES == sorted(
        [
            "pi_register_tools",
            "pi_prepare_arguments",
            "pi_before_tool_call",
            "pi_approve_tool_call",
            "pi_after_tool_call",
            "pi_bash_operations",
            "pi_file_operations",
            "pi_bash_spawn_context",
            "pi_register_providers",
            "pi_register_commands",
            "pi_on_event",
            "pi_session_start",
            "pi_session_end",
            "pi_checkpoint_exclude",
            "pi_before_rewind",
        ]
    )
    assert sorted(hookspecs.HOOK_CALL_MODES) == SPEC_NAMES
    assert {mode for mode, _ in hookspecs.HOOK_CALL_MODES.values()} == {
        "collect",
        "first_non_none",
        "chain",
        "first_block",
        "notify",
    }


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_hookspec_documents_when_mode_params_and_returns(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    for section in ("**When**", "**Call mode**", "**Params**", "**Returns**"):
        assert section in doc, f"{name} lacks {section}"
    mode, allows_async = hookspecs.HOOK_CALL_MODES[name]
    assert ("sync or async" in doc) is allows_async, name
    assert mode.replace("_", " ").replace("non none", "non-None") in doc, name


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_hookspec_has_a_test_named_after_it(name: str) -> None:
    tests = [n for n in globals() if n.startswith("test_") and name in n]
    assert tests, f"no test named after {name}"


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_hookspec_has_a_facade_method_matching_its_mode(name: str) -> None:
    method = getattr(PluginHooks, name.removeprefix("pi_"))
    _, allows_async = hookspecs.HOOK_CALL_MODES[name]
    assert inspect.iscoroutinefunction(method) is allows_async
