"""The example plugin distribution of the docs, installed with pip into a fresh virtual
environment next to the three distributions, is seen by ``pi plugins``, ``pi tools`` and
``pi call`` (issue 2, item 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pip = [
        str(path / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    subprocess.run(
        [
            *pip,
            str(ROOT / "pi_core"),
            str(ROOT / "pi_builtin_tools"),
            str(ROOT / "pi_sandbox_plugin"),
            str(ROOT / "docs" / "examples" / "pi_weather"),
        ],
        check=True,
    )
    return path


def run_pi(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    return subprocess.run(
        [str(venv / "bin" / "pi"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_example_plugin_is_listed(venv: Path) -> None:
    proc = run_pi(venv, "plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["weather"] == {
        "name": "weather",
        "distribution": "pi-weather",
        "version": "0.1.0",
        "module": "pi_weather.plugin",
        "hooks": ["pi_before_tool_call", "pi_register_tools"],
    }
    assert plugins["sandbox"]["distribution"] == "pi-sandbox-plugin"
    assert plugins["builtin_tools"]["distribution"] == "pi-builtin-tools"


def test_example_tool_is_registered_with_its_schema(venv: Path) -> None:
    proc = run_pi(venv, "tools", "--json")
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in json.loads(proc.stdout)}
    assert tools["weather"]["description"] == "Forecast for a city."
    assert tools["weather"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Name of the city."},
            "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_pi_call_runs_the_example_tool(venv: Path, tmp_path: Path) -> None:
    proc = run_pi(
        venv,
        "call",
        "weather",
        '{"city": "Oslo", "days": "2"}',
        "--json",
        "--id",
        "w1",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    del result["timestamp"]
    assert result == {
        "role": "toolResult",
        "toolCallId": "w1",
        "toolName": "weather",
        "content": [{"type": "text", "text": "Oslo: sunny for 2 day(s)"}],
        "isError": False,
    }


def test_pi_call_validation_error_exits_1(venv: Path, tmp_path: Path) -> None:
    proc = run_pi(venv, "call", "weather", "{}", "--json", cwd=tmp_path)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["content"] == [
        {
            "type": "text",
            "text": 'Validation failed for tool "weather":\n'
            "  - city: missing\n\nReceived arguments:\n{}",
        }
    ]


def test_core_alone_has_no_plugins(tmp_path: Path) -> None:
    path = tmp_path / "core-only"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    subprocess.run(
        [
            str(path / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(ROOT / "pi_core"),
        ],
        check=True,
    )
    proc = run_pi(path, "plugins", "--json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])
    proc = run_pi(path, "call", "read", '{"path": "x"}', "--json", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "Tool read not found"}]
