"""``pi --version``, ``pi plugins install|uninstall|new`` (their refusals: the installs
themselves are in ``tests/e2e/test_plugin_install.py``) and the error of a broken installed
plugin (issue 31, items 3 and 5)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import PI

from pi_core._plugins.manager import installed_plugins
from support import install_plugin

OWN = ("pi-tool-core", "pi-builtin-tools", "pi-sandbox-plugin")


def run(*args: str, site: Path) -> subprocess.CompletedProcess[str]:
    """The ``pi`` script with ``site`` on ``PYTHONPATH`` and every installed plugin autoloaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [str(PI), *args],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


# -- pi --version --------------------------------------------------------------------------------


def test_version_names_pi_s_distributions_and_every_installed_plugin(pi) -> None:
    out = pi("--version")
    versions = [f"{dist} {importlib.metadata.version(dist)}" for dist in OWN]
    plugins = [f"plugin {name}: {dist} {version}" for name, dist, version in installed_plugins()]
    assert (out.status, out.out, out.err) == (
        0,
        "".join(f"{line}\n" for line in versions + plugins),
        "",
    )
    core = importlib.metadata.version("pi-tool-core")
    assert out.out.startswith(f"pi-tool-core {core}\npi-builtin-tools ")
    assert (
        f"plugin sandbox: pi-sandbox-plugin {importlib.metadata.version('pi-sandbox-plugin')}\n"
        in out.out
    )


def test_a_broken_installed_plugin_stops_every_command_but_says_the_way_out(
    tmp_path: Path,
) -> None:
    install_plugin(tmp_path, "broken", "pi_test_broken", "import not_installed_anywhere\n")
    for command in (["tools"], ["call", "ls", "{}"], ["plugins"]):
        proc = run(*command, site=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            2,
            "",
            "pi: error: plugin 'broken' (distribution pi-broken 1.0) failed to load: "
            "ModuleNotFoundError: No module named 'not_installed_anywhere'; disable it with "
            "--no-plugin broken or PI_DISABLED_PLUGINS=broken, or uninstall it with "
            "pi plugins uninstall broken\n",
        )
    assert run("--no-plugin", "broken", "tools", site=tmp_path).returncode == 0
    version = run("--version", site=tmp_path)
    assert version.returncode == 0
    assert "plugin broken: pi-broken 1.0\n" in version.stdout


# -- pi plugins uninstall / install: what is refused before any installer runs --------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["uninstall", "sandbox"],
            "pi plugins uninstall: sandbox is part of pi (pi-sandbox-plugin); disable it with "
            "--no-plugin sandbox or PI_DISABLED_PLUGINS=sandbox",
        ),
        (
            ["uninstall", "pi-builtin-tools"],
            "pi plugins uninstall: pi-builtin-tools is part of pi; disable its plugins with "
            "--no-plugin NAME or PI_DISABLED_PLUGINS=NAME,... (builtin_tools, mcp)",
        ),
        (
            ["uninstall", "sandbx"],
            "pi plugins uninstall: no plugin named 'sandbx' (did you mean 'sandbox'?)",
        ),
        (["install"], "pi plugins install: give at least one SPEC or -e PATH"),
        (
            ["install", "pi-x", "/nonexistent/pi-plugin"],
            "pi plugins install: /nonexistent/pi-plugin: no such file or directory",
        ),
        (
            ["install", "./missing.whl"],
            "pi plugins install: ./missing.whl: no such file or directory",
        ),
        (
            ["install", "-e", "missing", "pi-x"],
            "pi plugins install: -e missing: no such file or directory",
        ),
        (
            ["install", "-e", "/dev/null"],
            "pi plugins install: -e /dev/null: not a directory (an editable install takes a "
            "project's folder)",
        ),
        (
            ["install", "--json", "x"],
            "unrecognized arguments: --json",
        ),
        (
            ["--json", "install", "x"],
            "pi plugins install: --json lists the plugins; it takes no action",
        ),
    ],
)
def test_refused_install_and_uninstall(pi, args: list[str], message: str) -> None:
    out = pi("plugins", *args)
    assert (out.status, out.out, out.err) == (2, "", f"pi: error: {message}\n")


# -- pi plugins new ------------------------------------------------------------------------------


def test_new_writes_a_plugin_distribution(pi, tmp_path: Path) -> None:
    out = pi("plugins", "new", "hello_world", "--dir", str(tmp_path))
    root = tmp_path / "pi-hello-world"
    files = [
        "pyproject.toml",
        "README.md",
        "src/pi_hello_world/__init__.py",
        "src/pi_hello_world/plugin.py",
        "src/pi_hello_world/py.typed",
        "tests/test_plugin.py",
    ]
    assert (out.status, out.err) == (0, "")
    assert out.out == (
        f"created {root} (plugin hello_world, distribution pi-hello-world):\n"
        + "".join(f"  {root}/{name}\n" for name in files)
        + f"next:\n  pi plugins install -e {root}\n  cd {root} && {sys.executable} -m pytest\n"
    )
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == sorted(files)
    pyproject = (root / "pyproject.toml").read_text()
    assert '[project.entry-points.pi]\nhello_world = "pi_hello_world.plugin"\n' in pyproject
    assert (
        f'dependencies = ["pi-tool-core>={importlib.metadata.version("pi-tool-core")}"]'
        in pyproject
    )
    plugin = (root / "src/pi_hello_world/plugin.py").read_text()
    assert "@tool\ndef hello_world(\n" in plugin
    assert "register(hello_world)" in plugin
    assert "$" not in plugin + pyproject  # every placeholder was filled in


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["Hello"],
            "pi plugins new: 'Hello' cannot name a plugin: use lower case letters, digits and "
            "_, starting with a letter (not a Python keyword or one of annotations, hookimpl, "
            "json, plugin, tool)",
        ),
        (
            ["class"],
            "pi plugins new: 'class' cannot name a plugin: use lower case letters, digits and "
            "_, starting with a letter (not a Python keyword or one of annotations, hookimpl, "
            "json, plugin, tool)",
        ),
        (["sandbox"], "pi plugins new: a plugin named 'sandbox' is already installed"),
        (["x", "--dir", "missing"], "--dir missing: no such directory"),
    ],
)
def test_new_refuses(pi, args: list[str], message: str) -> None:
    out = pi("plugins", "new", *args)
    assert (out.status, out.out, out.err) == (2, "", f"pi: error: {message}\n")


def test_new_never_overwrites(pi, tmp_path: Path) -> None:
    (tmp_path / "pi-hello").mkdir()
    out = pi("plugins", "new", "hello", "--dir", str(tmp_path))
    assert (out.status, out.err) == (
        2,
        f"pi: error: pi plugins new: {tmp_path}/pi-hello already exists\n",
    )
    assert list((tmp_path / "pi-hello").iterdir()) == []
