"""``pi plugins install`` / ``uninstall`` change the environment pi runs in with the installer pi
was installed with, and ``pi plugins new`` writes a plugin whose tests pass as written (issue 31,
item 3).

Each test makes a fresh virtual environment holding ``pi-tool-core`` from this clone (``uv sync
--frozen --offline`` of the lock, so nothing is downloaded) and runs its ``pi`` script: one
environment made by uv (pi then installs with ``uv pip``), one by ``python -m venv`` (pi then
installs with pip; ``PIP_NO_INDEX`` and no build isolation keep it off the network).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import locked_environment

ROOT = Path(__file__).resolve().parents[2]
WEATHER = ROOT / "docs" / "examples" / "pi_weather"
pytestmark = pytest.mark.slow


def offline_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no ``uv run`` around pi, no ``PI_*`` variable, and
    installers that never leave the machine."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PI_", "UV", "VIRTUAL_ENV", "PIP_"))
    }
    return {**env, "UV_OFFLINE": "1", "PIP_NO_INDEX": "1", **extra}


def make_environment(uv: str, path: Path, *, created_by: str) -> Path:
    """A virtual environment at ``path`` made by ``uv`` or ``pip`` (``python -m venv``) with
    pi-tool-core (editable, from this clone), pytest and hatchling (pi-tool-core's group
    ``plugin-tests``) installed from ``uv.lock``; returns it. (``uv pip install pytest``
    offline needs the index's page for pytest in uv's cache, which ``uv sync`` of a lock never
    fetches: on a fresh machine it failed.)"""
    if created_by == "pip":
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    locked_environment(
        uv, path, "--package", "pi-tool-core", "--inexact", "--group", "plugin-tests"
    )
    return path


def pi(environment: Path, *args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(environment / "bin" / "pi"), *args],
        cwd=cwd,
        env=offline_env(**extra),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def shown_in_tutorial(command: str) -> str:
    """The output the tutorial shows under the console line ``command``."""
    page = (ROOT / "docs" / "tutorial" / "first-plugin.md").read_text()
    return page.split(command, 1)[1].split("```", 1)[0].split("$ ", 1)[0]


def plugin_names(environment: Path, cwd: Path) -> list[str]:
    proc = pi(environment, "plugins", "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [plugin["name"] for plugin in json.loads(proc.stdout)]


def test_new_plugin_installs_with_uv_passes_its_tests_and_uninstalls(
    uv: str, tmp_path: Path
) -> None:
    # the tutorial's layout: a project whose environment is its .venv
    work = tmp_path / "work"
    work.mkdir()
    environment = make_environment(uv, work / ".venv", created_by="uv")
    python = environment / "bin" / "python"

    new = pi(environment, "plugins", "new", "hello", cwd=work)
    assert new.returncode == 0, new.stderr
    assert new.stdout == shown_in_tutorial("$ pi plugins new hello\n")

    install = pi(environment, "plugins", "install", "-e", "pi-hello", cwd=work)
    assert (install.returncode, install.stdout) == (
        0,
        "installed plugin hello (pi-hello 0.1.0)\n",
    ), install.stderr
    found = shutil.which("uv")  # what pi finds on PATH
    command = f"pi: {found} pip install --python {python} --editable pi-hello\n"
    assert install.stderr.startswith(command)
    assert plugin_names(environment, work) == ["hello"]
    assert pi(environment, "call", "hello", '{"name": "Ada"}', cwd=work).stdout == "Hello, Ada!\n"

    tests = subprocess.run(  # as the hint says: ../.venv/bin/python -m pytest
        ["../.venv/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=work / "pi-hello",
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout

    # A plugin that breaks (it is installed editable: its source is the live one) stops every
    # command but --version and the ways out that its error names.
    plugin = work / "pi-hello" / "src" / "pi_hello" / "plugin.py"
    future = "from __future__ import annotations\n"
    plugin.write_text(
        plugin.read_text().replace(future, future + "import not_installed_anywhere\n")
    )
    broken = pi(environment, "tools", cwd=work)
    assert (broken.returncode, broken.stderr) == (
        2,
        "pi: error: plugin 'hello' (distribution pi-hello 0.1.0) failed to load: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'; disable it with "
        "--no-plugin hello or PI_DISABLED_PLUGINS=hello, or uninstall it with "
        "pi plugins uninstall hello\n",
    )
    assert pi(environment, "--no-plugin", "hello", "tools", cwd=work).returncode == 0
    assert pi(environment, "tools", cwd=work, PI_DISABLED_PLUGINS="hello").returncode == 0
    version = pi(environment, "--version", cwd=work)
    assert version.returncode == 0
    assert version.stdout.endswith(
        "pi-sandbox-plugin not installed\nplugin hello: pi-hello 0.1.0\n"
    )

    uninstall = pi(environment, "plugins", "uninstall", "hello", cwd=work)
    assert (uninstall.returncode, uninstall.stdout) == (
        0,
        "uninstalled plugin hello (pi-hello 0.1.0)\n",
    ), uninstall.stderr
    assert uninstall.stderr.startswith(f"pi: {found} pip uninstall --python {python} pi-hello\n")
    assert plugin_names(environment, work) == []
    assert pi(environment, "tools", cwd=work).returncode == 0


def test_install_with_pip_where_pip_made_the_environment(uv: str, tmp_path: Path) -> None:
    environment = make_environment(uv, tmp_path / "env", created_by="pip")
    python = environment / "bin" / "python"
    # pip builds pi-weather with the hatchling of the environment (no download)
    install = pi(
        environment,
        "plugins",
        "install",
        str(WEATHER),
        cwd=tmp_path,
        PIP_NO_BUILD_ISOLATION="0",
    )
    assert (install.returncode, install.stdout) == (
        0,
        shown_in_tutorial("$ uv run pi plugins install ./docs/examples/pi_weather\n"),
    ), install.stderr
    assert install.stderr.startswith(f"pi: {python} -m pip install {WEATHER}\n")
    assert plugin_names(environment, tmp_path) == ["weather"]
    call = pi(environment, "call", "weather", '{"city": "Oslo", "days": 2}', cwd=tmp_path)
    assert (call.returncode, call.stdout) == (0, "Oslo: sunny for 2 day(s)\n")

    again = pi(
        environment, "plugins", "install", str(WEATHER), cwd=tmp_path, PIP_NO_BUILD_ISOLATION="0"
    )
    assert (again.returncode, again.stdout) == (0, ""), again.stderr
    assert again.stderr.endswith("pi: no plugin was installed or changed\n")

    uninstall = pi(environment, "plugins", "uninstall", "weather", cwd=tmp_path)
    assert (uninstall.returncode, uninstall.stdout) == (
        0,
        shown_in_tutorial("$ uv run pi plugins uninstall weather\n"),
    ), uninstall.stderr
    assert uninstall.stderr.startswith(f"pi: {python} -m pip uninstall -y pi-weather\n")
    assert plugin_names(environment, tmp_path) == []


def test_a_failing_installer_is_exit_2(uv: str, tmp_path: Path) -> None:
    """A folder that is there but is no project: the installer runs, fails, and pi says so (a
    path that is not there is refused before: tests/core/cli/test_cli_plugins_admin.py)."""
    environment = make_environment(uv, tmp_path / "env", created_by="uv")
    (tmp_path / "no-project").mkdir()
    proc = pi(environment, "plugins", "install", str(tmp_path / "no-project"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"pi: {uv} pip install --python ")
    assert proc.stderr.endswith("pi: error: the installer failed (exit status 1)\n")
