"""Plugin loading, selection, validation and listing (``pi_core._plugins.manager``), and session set-up
from plugins (``pi_core._plugins.session``): DESIGN §2, STYLE item 3.

The installed ``builtin_tools`` and ``sandbox`` entry points are used as they are; broken plugins
are modules written to ``tmp_path`` and loaded by module path (the CLI's ``-p``) or through a
distribution written to ``tmp_path`` (``*.dist-info`` with an ``entry_points.txt``).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

import pi_builtin_tools.mcp.plugin
import pi_builtin_tools.plugin
import pi_sandbox_plugin.plugin
from pi_core import hookimpl
from pi_core._errors import PluginError
from pi_core._plugins.manager import (
    PiPluginManager,
    PluginInfo,
    check_pending,
    installed_plugins,
    list_plugins,
    make_plugin_manager,
)
from pi_core._plugins.session import Session, build_session

BUILTINS = ["builtin_tools", "mcp", "sandbox"]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PI_DISABLE_PLUGIN_AUTOLOAD", "PI_PLUGINS", "PI_DISABLED_PLUGINS"):
        monkeypatch.delenv(name, raising=False)


WritePlugin = Callable[[str, str], str]


@pytest.fixture
def write_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WritePlugin]:
    """``write_plugin(module_name, source)`` writes an importable module; it is forgotten after
    the test (``sys.modules``), so each test imports its own."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)


def write_distribution(root: Path, name: str, version: str, entry_points: dict[str, str]) -> None:
    """A minimal installed distribution on ``root`` declaring ``pi`` entry points."""
    dist_info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    lines = "".join(f"{ep} = {module}\n" for ep, module in entry_points.items())
    (dist_info / "entry_points.txt").write_text(f"[pi]\n{lines}")


def names(pm: pluggy.PluginManager) -> list[str]:
    return [info.name for info in list_plugins(pm)]


def installed() -> list[str]:
    """Every installed plugin's name, in name order (autoloading's order): pi's own, the
    environment's third-party ones, and those a test wrote."""
    return [name for name, _, _ in installed_plugins()]


def implemented_hooks(module: Any) -> list[str]:
    """The hooks a plugin module marks with ``@hookimpl`` (pluggy's ``pi_impl`` attribute)."""
    return sorted(name for name in dir(module) if hasattr(getattr(module, name), "pi_impl"))


# ---------------------------------------------------------------------------------------------
# Loading the installed entry points and listing them
# ---------------------------------------------------------------------------------------------


def test_builtins_load_as_entry_points_and_are_listed() -> None:
    pm = make_plugin_manager()
    assert [info.to_json_dict() for info in list_plugins(pm)] == [
        {
            "name": "builtin_tools",
            "distribution": "pi-builtin-tools",
            "version": importlib.metadata.version("pi-builtin-tools"),
            "module": "pi_builtin_tools.plugin",
            "hooks": implemented_hooks(pi_builtin_tools.plugin),
        },
        {
            "name": "mcp",
            "distribution": "pi-builtin-tools",
            "version": importlib.metadata.version("pi-builtin-tools"),
            "module": "pi_builtin_tools.mcp.plugin",
            "hooks": implemented_hooks(pi_builtin_tools.mcp.plugin),
        },
        {
            "name": "sandbox",
            "distribution": "pi-sandbox-plugin",
            "version": importlib.metadata.version("pi-sandbox-plugin"),
            "module": "pi_sandbox_plugin.plugin",
            "hooks": implemented_hooks(pi_sandbox_plugin.plugin),
        },
    ]
    assert pm.get_plugin("builtin_tools") is pi_builtin_tools.plugin
    assert pm.get_plugin("sandbox") is pi_sandbox_plugin.plugin
    assert pm.get_plugin("mcp") is pi_builtin_tools.mcp.plugin


def test_list_plugins_json_shape_and_plugins_without_hooks(
    plugin_manager: PiPluginManager, register_plugin: Callable[..., str]
) -> None:
    class Quiet:
        pass

    class Policy:
        @hookimpl
        def pi_on_event(self, event: Any) -> None:
            return None

        @hookimpl
        def pi_before_tool_call(self, context: Any) -> None:
            return None

    register_plugin(Quiet(), name="quiet")
    register_plugin(Policy(), name="policy")
    listed = [info.to_json_dict() for info in list_plugins(plugin_manager)]
    assert json.loads(json.dumps(listed)) == [
        {
            "name": "quiet",
            "distribution": None,
            "version": None,
            "module": __name__,
            "hooks": [],
        },
        {
            "name": "policy",
            "distribution": None,
            "version": None,
            "module": __name__,
            "hooks": ["pi_before_tool_call", "pi_on_event"],
        },
    ]
    assert list_plugins(PiPluginManager()) == []


def test_no_import_time_manager_and_fresh_managers() -> None:
    code = textwrap.dedent(
        """
        import gc, pluggy
        import pi_core, pi_core._plugins.manager, pi_core._plugins.facade, pi_core._plugins.caller
        import pi_core._plugins.session, pi_core.testing, pi_core.hookspecs
        managers = [o for o in gc.get_objects() if isinstance(o, pluggy.PluginManager)]
        print(len(managers))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out == "0\n"
    first, second = make_plugin_manager(), make_plugin_manager()
    assert first is not second
    first.unregister(name="sandbox")
    assert names(first) == ["builtin_tools", "mcp"]
    assert names(second) == BUILTINS


# ---------------------------------------------------------------------------------------------
# Selecting plugins: autoload, PI_PLUGINS, PI_DISABLED_PLUGINS, block, explicit plugins
# ---------------------------------------------------------------------------------------------


def test_autoload_off_loads_no_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    assert names(make_plugin_manager(autoload=False)) == []
    monkeypatch.setenv("PI_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert names(make_plugin_manager()) == []
    monkeypatch.setenv("PI_DISABLE_PLUGIN_AUTOLOAD", "")
    assert names(make_plugin_manager()) == BUILTINS


def test_autoload_off_still_loads_explicitly_named_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    pm = make_plugin_manager(autoload=False, plugins=["sandbox"])
    assert [info.to_json_dict() for info in list_plugins(pm)] == [
        {
            "name": "sandbox",
            "distribution": "pi-sandbox-plugin",
            "version": importlib.metadata.version("pi-sandbox-plugin"),
            "module": "pi_sandbox_plugin.plugin",
            "hooks": implemented_hooks(pi_sandbox_plugin.plugin),
        }
    ]
    monkeypatch.setenv("PI_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PI_PLUGINS", "builtin_tools")
    assert names(make_plugin_manager()) == ["builtin_tools"]
    assert names(make_plugin_manager(plugins=["sandbox"])) == ["builtin_tools", "sandbox"]


def test_pi_plugins_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_PLUGINS", "sandbox")
    assert names(make_plugin_manager()) == ["sandbox"]
    monkeypatch.setenv("PI_PLUGINS", " sandbox , builtin_tools,")
    assert names(make_plugin_manager()) == ["builtin_tools", "sandbox"]
    # An explicitly named plugin loads whatever the allow list says.
    monkeypatch.setenv("PI_PLUGINS", "sandbox")
    assert names(make_plugin_manager(plugins=["builtin_tools"])) == ["sandbox", "builtin_tools"]


def test_pi_plugins_naming_an_uninstalled_plugin_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = sorted({ep.name for ep in importlib.metadata.entry_points(group="pi")})
    monkeypatch.setenv("PI_PLUGINS", "sandbox,sandbx")
    with pytest.raises(PluginError) as info:
        make_plugin_manager()
    assert str(info.value) == "PI_PLUGINS: no plugin named 'sandbx' (did you mean 'sandbox'?)"
    monkeypatch.setenv("PI_PLUGINS", "zzz,sandbx")
    with pytest.raises(PluginError) as info:
        make_plugin_manager()
    assert str(info.value) == (
        f"PI_PLUGINS: no plugin named 'zzz' (installed: {', '.join(installed)})"
    )


@pytest.mark.parametrize(
    ("block", "disabled", "message"),
    [
        (["sandbx"], "", "--no-plugin sandbx: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
        (["sandbox", "builtin-tools"], "",
         "--no-plugin builtin-tools: no plugin named 'builtin-tools' "
         "(did you mean 'builtin_tools'?)"),
        ([], "sandbox, sandbx",
         "PI_DISABLED_PLUGINS: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
        (["sandbx"], "sandbx",
         "--no-plugin sandbx: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
    ],
)  # fmt: skip
def test_blocking_an_unknown_name_is_an_error_with_a_suggestion(
    monkeypatch: pytest.MonkeyPatch, block: list[str], disabled: str, message: str
) -> None:
    monkeypatch.setenv("PI_DISABLED_PLUGINS", disabled)
    with pytest.raises(PluginError) as info:
        make_plugin_manager(block=block)
    assert str(info.value) == message


def test_blocking_an_unknown_name_without_a_close_one_lists_the_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = sorted({ep.name for ep in importlib.metadata.entry_points(group="pi")})
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, block=["qqqq"])
    assert str(info.value) == (
        f"--no-plugin qqqq: no plugin named 'qqqq' (installed: {', '.join(installed)})"
    )


def test_names_that_may_be_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    # installed entry points (with autoload on or off), the core's internal plugins, the
    # names given explicitly (-p) and the names of PI_PLUGINS
    monkeypatch.setenv("PI_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert names(make_plugin_manager(block=["sandbox"])) == []
    assert make_plugin_manager(block=["builtin_providers"]).get_plugin("builtin_providers") is None
    assert names(make_plugin_manager(block=["json"], plugins=["json"])) == []
    monkeypatch.setenv("PI_PLUGINS", "json")
    monkeypatch.setenv("PI_DISABLED_PLUGINS", "json")
    assert names(make_plugin_manager()) == []


def test_disabled_plugins_and_block_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_DISABLED_PLUGINS", "sandbox,mcp")
    pm = make_plugin_manager()
    assert names(pm) == ["builtin_tools"]
    assert pm.is_blocked("sandbox")
    assert names(make_plugin_manager(block=["builtin_tools"])) == []
    monkeypatch.delenv("PI_DISABLED_PLUGINS")
    assert names(make_plugin_manager(block=["builtin_tools", "mcp"])) == ["sandbox"]
    # Blocked beats the allow list and explicit names; a blocked name in PI_PLUGINS is no error.
    monkeypatch.setenv("PI_PLUGINS", "builtin_tools,sandbox")
    pm = make_plugin_manager(block=["sandbox"], plugins=["sandbox"])
    assert names(pm) == ["builtin_tools"]
    monkeypatch.setenv("PI_PLUGINS", "nothing_like_it")
    assert names(make_plugin_manager(block=["nothing_like_it"])) == []
    # A blocked name cannot be registered later either.
    assert pm.register(object(), name="sandbox") is None


def test_explicit_module_plugins_load_in_order_after_entry_points(
    write_plugin: WritePlugin,
) -> None:
    write_plugin(
        "pi_test_audit",
        """
        from pi_core import hookimpl

        @hookimpl
        def pi_on_event(event):
            pass
        """,
    )
    write_plugin("pi_test_empty", "")
    pm = make_plugin_manager(plugins=["pi_test_empty", "pi_test_audit", "pi_test_empty"])
    assert [info.to_json_dict() for info in list_plugins(pm)][len(BUILTINS) :] == [
        {
            "name": "pi_test_empty",
            "distribution": None,
            "version": None,
            "module": "pi_test_empty",
            "hooks": [],
        },
        {
            "name": "pi_test_audit",
            "distribution": None,
            "version": None,
            "module": "pi_test_audit",
            "hooks": ["pi_on_event"],
        },
    ]
    assert names(pm)[: len(BUILTINS)] == BUILTINS
    # The module of an already loaded entry point is not registered twice.
    assert names(make_plugin_manager(plugins=["pi_builtin_tools.plugin"])) == BUILTINS
    assert (
        names(
            make_plugin_manager(autoload=False, block=["pi_test_audit"], plugins=["pi_test_audit"])
        )
        == []
    )


def test_entry_point_of_a_third_party_distribution(
    tmp_path: Path, write_plugin: WritePlugin
) -> None:
    write_plugin(
        "pi_test_weather",
        """
        from pi_core import hookimpl, tool

        @tool
        def weather(city: str) -> str:
            "Forecast for a city."
            return city

        @hookimpl
        def pi_register_tools(register):
            register(weather)
        """,
    )
    write_distribution(tmp_path, "pi-test-weather", "2.5.1", {"weather": "pi_test_weather"})
    weather = PluginInfo(
        name="weather",
        distribution="pi-test-weather",
        version="2.5.1",
        module="pi_test_weather",
        hooks=["pi_register_tools"],
    )
    # autoloaded, in name order with every other installed plugin
    pm = make_plugin_manager(third_party_autoload=True)
    assert names(pm) == installed()
    assert "weather" in installed()
    assert list_plugins(pm)[installed().index("weather")] == weather
    assert "weather" not in names(make_plugin_manager(third_party_autoload=True, block=["weather"]))
    # without third-party autoloading (pi's suite, run_pi): loaded when named
    assert names(make_plugin_manager()) == BUILTINS
    pm = make_plugin_manager(plugins=["weather"])
    assert names(pm) == [*BUILTINS, "weather"]
    assert list_plugins(pm)[-1] == weather


# ---------------------------------------------------------------------------------------------
# Plugins that cannot load: one PluginError naming the plugin
# ---------------------------------------------------------------------------------------------


def test_plugin_that_fails_to_import_names_plugin_and_distribution(
    tmp_path: Path, write_plugin: WritePlugin
) -> None:
    write_plugin("pi_test_broken", "import not_installed_anywhere\n")
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_broken"])
    assert str(info.value) == (
        "plugin 'pi_test_broken' failed to load: ModuleNotFoundError: "
        "No module named 'not_installed_anywhere'"
    )
    assert isinstance(info.value.__cause__, ModuleNotFoundError)

    write_distribution(tmp_path, "pi-test-broken", "0.3", {"broken": "pi_test_broken"})
    for how in ({"third_party_autoload": True}, {"plugins": ["broken"]}):
        with pytest.raises(PluginError) as info:
            make_plugin_manager(**how)  # type: ignore[arg-type]
        assert str(info.value) == (
            "plugin 'broken' (distribution pi-test-broken 0.3) failed to load: "
            "ModuleNotFoundError: No module named 'not_installed_anywhere'; disable it with "
            "--no-plugin broken or PI_DISABLED_PLUGINS=broken, or uninstall it with "
            "pi plugins uninstall broken"
        )
    # Blocking a broken plugin is the way around it; it never breaks an isolated session.
    blocked = make_plugin_manager(third_party_autoload=True, block=["broken"])
    assert names(blocked) == [name for name in installed() if name != "broken"]
    assert names(make_plugin_manager()) == BUILTINS


def test_plugin_raising_at_import_and_unknown_module(write_plugin: WritePlugin) -> None:
    write_plugin("pi_test_raises", "raise RuntimeError('needs configuration')\n")
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_raises"])
    assert str(info.value) == (
        "plugin 'pi_test_raises' failed to load: RuntimeError: needs configuration"
    )
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_no_such_module"])
    assert str(info.value) == (
        "plugin 'pi_test_no_such_module' failed to load: ModuleNotFoundError: "
        "No module named 'pi_test_no_such_module'"
    )


def test_misspelled_hook_names_plugin_and_hook(tmp_path: Path, write_plugin: WritePlugin) -> None:
    write_plugin(
        "pi_test_typo",
        """
        from pi_core import hookimpl

        @hookimpl
        def pi_register_tool(register):
            pass
        """,
    )
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_typo"])
    assert str(info.value) == (
        "plugin 'pi_test_typo' implements unknown hook 'pi_register_tool' "
        "(did you mean 'pi_register_tools'?)"
    )
    write_distribution(tmp_path, "pi-test-typo", "1.0", {"typo": "pi_test_typo"})
    with pytest.raises(PluginError) as info:
        make_plugin_manager(third_party_autoload=True)
    assert str(info.value) == (
        "plugin 'typo' (distribution pi-test-typo 1.0) implements unknown hook "
        "'pi_register_tool' (did you mean 'pi_register_tools'?); disable it with "
        "--no-plugin typo or PI_DISABLED_PLUGINS=typo, or uninstall it with "
        "pi plugins uninstall typo"
    )


def test_unknown_hook_without_a_near_name_and_optional_hooks(
    write_plugin: WritePlugin,
) -> None:
    write_plugin(
        "pi_test_alien",
        """
        from pi_core import hookimpl

        @hookimpl
        def frobnicate():
            pass
        """,
    )
    with pytest.raises(
        PluginError, match=r"^plugin 'pi_test_alien' implements unknown hook 'frobnicate'$"
    ):
        make_plugin_manager(autoload=False, plugins=["pi_test_alien"])
    write_plugin(
        "pi_test_optional",
        """
        from pi_core import hookimpl

        @hookimpl(optionalhook=True)
        def pi_future_hook():
            pass
        """,
    )
    pm = make_plugin_manager(autoload=False, plugins=["pi_test_optional"])
    assert list_plugins(pm)[0].hooks == ["pi_future_hook"]


def test_async_implementation_of_a_sync_only_hook_fails_at_load(
    write_plugin: WritePlugin,
) -> None:
    write_plugin(
        "pi_test_async_backend",
        """
        from pi_core import hookimpl

        @hookimpl
        async def pi_file_operations(context):
            return None
        """,
    )
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_async_backend"])
    assert str(info.value) == (
        "plugin 'pi_test_async_backend' implements pi_file_operations with async def, but "
        "pi_file_operations takes sync implementations only"
    )


def test_implementation_with_an_argument_the_hook_lacks(write_plugin: WritePlugin) -> None:
    write_plugin(
        "pi_test_bad_args",
        """
        from pi_core import hookimpl

        @hookimpl
        def pi_before_tool_call(ctx):
            pass
        """,
    )
    with pytest.raises(PluginError) as info:
        make_plugin_manager(autoload=False, plugins=["pi_test_bad_args"])
    assert str(info.value) == (
        "plugin 'pi_test_bad_args' has an invalid implementation of pi_before_tool_call: "
        "Argument(s) {'ctx'} are declared in the hookimpl but can not be found in the hookspec"
    )


def test_failed_registration_leaves_the_manager_unchanged(
    plugin_manager: PiPluginManager,
) -> None:
    class Wrong:
        @hookimpl
        def pi_on_event(self, event: Any) -> None:
            return None

        @hookimpl
        async def pi_register_tools(self, register: Any) -> None:
            return None

    with pytest.raises(PluginError):
        plugin_manager.register(Wrong(), name="wrong")
    assert not plugin_manager.has_plugin("wrong")
    assert plugin_manager.hook.pi_on_event.get_hookimpls() == []
    with pytest.raises(PluginError) as info:
        quiet = object()
        plugin_manager.register(quiet, name="quiet")
        plugin_manager.register(quiet, name="again")
    assert str(info.value).startswith(
        "plugin 'again' cannot be registered: Plugin already registered under a different name"
    )


def test_check_pending_names_plugin_and_hook(plugin_manager: PiPluginManager) -> None:
    class Late:
        @hookimpl
        def pi_on_evnt(self, event: Any) -> None:
            return None

    # Bypass pi's validation, as a plugin registered by plain pluggy code would.
    pluggy.PluginManager.register(plugin_manager, Late(), name="late")
    with pytest.raises(PluginError) as info:
        check_pending(plugin_manager)
    assert str(info.value) == (
        "plugin 'late' implements unknown hook 'pi_on_evnt' (did you mean 'pi_on_event'?)"
    )


# ---------------------------------------------------------------------------------------------
# Session set-up (pi_core._plugins.session)
# ---------------------------------------------------------------------------------------------


BACKEND_PLUGIN = """
    from pi_core import hookimpl, tool
    from pi_core._backend_kit.operations import CommandOutput, FileStat

    class Bash:
        async def exec(self, command, cwd, *, on_data, env=None, timeout=None):
            return 0

    class Files:
        async def read_bytes(self, path, offset=0, length=None): return b""
        async def write_bytes(self, path, data): pass
        async def stat(self, path): return FileStat("file", 0, 0, 0.0)
        async def realpath(self, path): return path
        async def list_dir(self, path): return []
        async def mkdir(self, path): pass
        async def run_rg(self, args, cwd): return CommandOutput(0, b"", b"")

    BASH, FILES = Bash(), Files()

    @hookimpl(trylast=True)
    def pi_bash_operations(context):
        return BASH

    @hookimpl(trylast=True)
    def pi_file_operations(context):
        return FILES
    """

TOOL_PLUGIN = """
    from pi_core import hookimpl, tool

    SEEN = []

    @tool
    def where() -> str:
        "Where the session runs."
        return "here"

    @hookimpl
    def pi_register_tools(register, context):
        SEEN.append(context)
        register(where)
    """


def test_build_session_picks_backends_then_registers_tools(
    tmp_path: Path, write_plugin: WritePlugin
) -> None:
    write_plugin("pi_test_backends", BACKEND_PLUGIN)
    write_plugin("pi_test_tools", TOOL_PLUGIN)
    pm = make_plugin_manager(autoload=False, plugins=["pi_test_backends", "pi_test_tools"])
    backends = sys.modules["pi_test_backends"]
    tools_module = sys.modules["pi_test_tools"]

    session = build_session(pm, tmp_path / "project", {"sandbox": {"mode": "off"}})
    assert isinstance(session, Session)
    assert session.cwd == str(tmp_path / "project")
    assert session.config == {"sandbox": {"mode": "off"}}
    assert session.bash_operations is backends.BASH
    assert session.file_operations is backends.FILES
    assert [t.name for t in session.tools] == ["where"]
    assert session.tools_by_name == {"where": session.tools[0]}
    assert session.hooks.pm is pm
    [context] = tools_module.SEEN
    assert context.cwd == str(tmp_path / "project")
    assert context.config == {"sandbox": {"mode": "off"}}
    assert context.bash_operations is backends.BASH
    assert context.file_operations is backends.FILES
    config = session.loop_config(tool_execution="sequential")
    assert config.tool_execution == "sequential"
    assert config.before_tool_call is not None


def test_build_session_with_zero_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    session = build_session(make_plugin_manager(autoload=False), ".")
    assert session.cwd == str(tmp_path)
    assert session.config == {}
    assert session.bash_operations is None
    assert session.file_operations is None
    assert session.tools == []
    assert session.tools_by_name == {}


def test_build_session_duplicate_tool_across_plugins_names_both(
    tmp_path: Path, write_plugin: WritePlugin
) -> None:
    write_plugin("pi_test_tools_a", TOOL_PLUGIN)
    write_plugin("pi_test_tools_b", TOOL_PLUGIN)
    pm = make_plugin_manager(autoload=False, plugins=["pi_test_tools_a", "pi_test_tools_b"])
    with pytest.raises(PluginError) as info:
        build_session(pm, tmp_path)
    assert str(info.value) == (
        "tool 'where' is registered by plugin 'pi_test_tools_b' and by plugin 'pi_test_tools_a'"
    )
