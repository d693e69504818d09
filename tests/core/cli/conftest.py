"""Fixtures of the CLI tests: a clean environment, the test plugin, running ``pi``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import PI, Result

from pi_core._cli import main

HERE = Path(__file__).resolve().parent


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No autoloaded plugins, ``cli_plugin`` importable (in process and in subprocesses), the
    working directory an empty temporary folder (no ``pi.toml`` above it). Returns that folder."""
    for name in ("PI_PLUGINS", "PI_DISABLED_PLUGINS", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PI_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    )
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    import cli_plugin

    cli_plugin.SEEN.clear()
    return work


@pytest.fixture
def pi(plugin_env: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``pi(*args)``: run ``main(args)`` in this process and capture its output."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        status = main(list(args))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture
def pi_process(plugin_env: Path) -> Callable[..., Result]:
    """``pi_process(*args, stdin=...)``: run the installed ``pi`` script as a subprocess."""

    def run(*args: str, timeout: float = 60) -> Result:
        proc = subprocess.run(
            [str(PI), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run
