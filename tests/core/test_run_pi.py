"""``pi_core.testing.run_pi`` loads pi's own plugins and the ones a test names, never the other
plugins installed in the environment unless the test asks (issue 31, item 2).

The environment here is a plugin author's: ``PI_DISABLE_THIRD_PARTY_AUTOLOAD`` (which pi's own
suite sets) is unset, and third-party distributions are written to ``tmp_path`` on ``sys.path``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_core._plugins.manager import installed_plugins
from pi_core.testing import run_pi
from support import install_plugin

PI_PLUGINS = ["builtin_tools", "mcp", "sandbox"]

THIRD_PARTY = '''
from pi_core import hookimpl, tool

@tool
def third(x: int) -> str:
    """A third-party tool."""
    return str(x)

@hookimpl
def pi_register_tools(register):
    register(third)
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for third-party distributions; no ``PI_*`` variable set."""
    for name in (
        "PI_DISABLE_THIRD_PARTY_AUTOLOAD",
        "PI_DISABLE_PLUGIN_AUTOLOAD",
        "PI_PLUGINS",
        "PI_DISABLED_PLUGINS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for module in ("pi_test_third", "pi_test_broken"):
        sys.modules.pop(module, None)


def plugin_names(capsys: pytest.CaptureFixture[str], status: int) -> list[str]:
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return [plugin["name"] for plugin in json.loads(captured.out)]


def test_run_pi_loads_pi_s_plugins_and_the_named_ones(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "third", "pi_test_third", THIRD_PARTY)
    assert plugin_names(capsys, run_pi(["plugins", "--json"])) == PI_PLUGINS
    named = run_pi(["plugins", "--json"], plugins=["third"])
    assert plugin_names(capsys, named) == [*PI_PLUGINS, "third"]
    assert plugin_names(capsys, run_pi(["-p", "third", "plugins", "--json"])) == [
        *PI_PLUGINS,
        "third",
    ]
    assert run_pi(["call", "third", '{"x": 7}'], plugins=["third"]) == 0
    assert capsys.readouterr().out == "7\n"


def test_run_pi_loads_the_environment_s_plugins_when_asked(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "third", "pi_test_third", THIRD_PARTY)
    everything = [name for name, _, _ in installed_plugins()]
    assert "third" in everything
    status = run_pi(["plugins", "--json"], environment_plugins=True)
    assert plugin_names(capsys, status) == everything


def test_a_broken_installed_plugin_does_not_break_run_pi(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "broken", "pi_test_broken", "import not_installed_anywhere\n")
    assert run_pi(["call", "ls", "{}"]) == 0
    capsys.readouterr()
    assert run_pi(["call", "ls", "{}"], environment_plugins=True) == 2
    assert capsys.readouterr().err == (
        "pi: error: plugin 'broken' (distribution pi-broken 1.0) failed to load: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'; disable it with "
        "--no-plugin broken or PI_DISABLED_PLUGINS=broken, or uninstall it with "
        "pi plugins uninstall broken\n"
    )
    assert run_pi(["--no-plugin", "broken", "call", "ls", "{}"], environment_plugins=True) == 0
