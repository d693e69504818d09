"""``pi_core.testing``, the pytest plugin for plugin authors (STYLE item 7), run as an installed
plugin: pytester starts a pytest session that loads it through its ``pytest11`` entry point."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_fixtures_come_from_the_installed_entry_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_uses_them(plugin_manager, register_plugin, pi_hooks):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    disabled = pytester.runpytest("-p", "no:pi_core")
    disabled.assert_outcomes(errors=1)
    disabled.stdout.fnmatch_lines(["*fixture 'plugin_manager' not found*"])


def test_plugin_manager_is_fresh_and_ignores_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_PLUGINS", "builtin_tools,sandbox")
    pytester.makepyfile(
        """
        from pi_core.hookspecs import HOOK_CALL_MODES
        from pi_core._plugins.manager import PiPluginManager

        managers = []

        def test_first(plugin_manager):
            managers.append(plugin_manager)
            assert isinstance(plugin_manager, PiPluginManager)
            assert plugin_manager.project_name == "pi"
            assert plugin_manager.list_name_plugin() == []
            for name in HOOK_CALL_MODES:
                assert getattr(plugin_manager.hook, name).has_spec()

        def test_second(plugin_manager):
            assert plugin_manager is not managers[0]
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_register_plugin_unregisters_even_when_the_test_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pi_core import hookimpl

        seen = []

        class Policy:
            @hookimpl
            def pi_on_event(self, event):
                pass

        def test_registers_then_fails(plugin_manager, register_plugin):
            seen.append(plugin_manager)
            assert register_plugin(Policy(), name="policy") == "policy"
            unnamed = register_plugin(Policy())
            assert plugin_manager.get_name(plugin_manager.get_plugin(unnamed)) == unnamed
            assert plugin_manager.has_plugin("policy")
            assert len(plugin_manager.list_name_plugin()) == 2
            assert False, "on purpose"

        def test_it_was_unregistered():
            assert seen[0].list_name_plugin() == []
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: on purpose*"])


def test_register_plugin_validates_like_an_installed_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pi_core import hookimpl
        from pi_core._errors import PluginError

        class Typo:
            @hookimpl
            def pi_before_toolcall(self, context):
                pass

        def test_typo(register_plugin, plugin_manager):
            with pytest.raises(PluginError) as info:
                register_plugin(Typo(), name="typo")
            assert str(info.value) == (
                "plugin 'typo' implements unknown hook 'pi_before_toolcall' "
                "(did you mean 'pi_before_tool_call'?)"
            )
            assert not plugin_manager.has_plugin("typo")
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_pi_hooks_calls_the_registered_plugins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pi_core import hookimpl, tool
        from pi_core._plugins.contexts import RegisterToolsContext

        @tool
        def weather(city: str) -> str:
            "Forecast for a city."
            return f"{city}: sunny"

        class WeatherPlugin:
            @hookimpl
            def pi_register_tools(self, register):
                register(weather)

        def test_tools(register_plugin, pi_hooks, plugin_manager):
            register_plugin(WeatherPlugin(), name="weather")
            assert pi_hooks.pm is plugin_manager
            tools = pi_hooks.register_tools(RegisterToolsContext(cwd="/"))
            assert [t.name for t in tools] == ["weather"]
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
