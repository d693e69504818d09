"""The example plugin distribution of the docs, installed into a fresh virtual environment next
to the three distributions (each a wheel built from its directory), is seen by ``pi plugins``,
``pi tools`` and ``pi call`` (issue 2, item 14).

The environments are made by uv from the lock (``uv sync --frozen --offline --no-editable``: the
pinned versions from uv's cache, about 2 s of CPU) rather than by ``python -m venv`` and ``pip
install`` (ensurepip, four isolated builds, a resolution against the package indexes: about 40
s). Installing with pip is what ``tests/e2e/test_plugin_install.py`` tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import locked_environment

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("example-plugin-venv")]
"""One test process (``pytest -n``) runs this module: the virtual environment is built once."""


def fresh_environment(uv: str, path: Path, *sync: str) -> Path:
    """A new virtual environment at ``path`` (``uv venv`` of this Python) holding what ``uv sync
    --no-editable SYNC...`` of the lock installs: wheels built from the distributions'
    directories, and their pinned dependencies."""
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(path)], check=True)
    return locked_environment(uv, path, "--no-editable", *sync)


@pytest.fixture(scope="module")
def venv(uv: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = fresh_environment(uv, tmp_path_factory.mktemp("venv") / "env", "--all-packages")
    python = str(path / "bin" / "python")
    example = str(ROOT / "docs" / "examples" / "pi_weather")
    subprocess.run(
        [uv, "pip", "install", "-q", "--offline", "--python", python, example], check=True
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


def test_pi_plugins_new_works_from_an_installed_wheel(venv: Path, tmp_path: Path) -> None:
    """The templates of ``pi plugins new`` are part of the pi-tool-core wheel."""
    proc = run_pi(venv, "plugins", "new", "hello", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        (tmp_path / "pi-hello" / "src" / "pi_hello" / "plugin.py")
        .read_text()
        .startswith('"""The hello plugin: the ``hello`` tool and a policy on every tool call."""\n')
    )


def test_core_alone_has_no_plugins(uv: str, tmp_path: Path) -> None:
    path = fresh_environment(uv, tmp_path / "core-only", "--package", "pi-tool-core")
    proc = run_pi(path, "plugins", "--json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])
    proc = run_pi(path, "call", "read", '{"path": "x"}', "--json", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "Tool read not found"}]


# -- issue 12 item 3: the pip-installed policy blocks a script's nested call -----------------

WALL = re.compile(r"Wall time \d+\.\d seconds")


def call_script(venv: Path, tool: str, code: str, cwd: Path) -> tuple[int, str]:
    """``pi call TOOL {"code": CODE}``: the exit status and the result's text (wall time
    replaced by ``X``)."""
    proc = run_pi(venv, "call", tool, json.dumps({"code": code}), "--json", cwd=cwd)
    assert proc.stderr == ""
    text = "".join(b["text"] for b in json.loads(proc.stdout)["content"])
    return proc.returncode, WALL.sub("Wall time X seconds", text)


def test_the_policy_blocks_a_call_inside_a_javascript_script(venv: Path, tmp_path: Path) -> None:
    """pi-weather's ``pi_before_tool_call`` refuses ``curl`` in bash: inside a ``codemode``
    script the call is refused with the plugin's reason, which the script sees as the error
    (caught, then uncaught)."""
    caught = (
        'try { await tools.bash({command: "curl http://example.com"}); }\n'
        'catch (e) { return "blocked: " + e.message; }'
    )
    assert call_script(venv, "codemode", caught, tmp_path) == (
        0,
        "Script completed\nWall time X seconds\nOutput:\nblocked: network access is not allowed",
    )
    uncaught = 'await tools.bash({command: "curl http://example.com"});'
    assert call_script(venv, "codemode", uncaught, tmp_path) == (
        1,
        "Script failed\nWall time X seconds\nOutput:\nScript error:\n"
        "Error: network access is not allowed\n\n"
        "Tool calls made before the failure (they are not undone): bash (error)",
    )


def test_the_policy_blocks_a_call_inside_a_python_script(venv: Path, tmp_path: Path) -> None:
    """The same policy inside a ``codemode_python`` script: the awaited call raises
    ``RuntimeError`` with the plugin's reason."""
    caught = (
        "try:\n"
        '    await tools.bash(command="curl http://example.com")\n'
        "except RuntimeError as e:\n"
        '    print("blocked:", e)\n'
    )
    assert call_script(venv, "codemode_python", caught, tmp_path) == (
        0,
        "Script completed\nWall time X seconds\nOutput:\n"
        "<console_output>\nblocked: network access is not allowed\n</console_output>",
    )
    uncaught = 'await tools.bash(command="curl http://example.com")'
    assert call_script(venv, "codemode_python", uncaught, tmp_path) == (
        1,
        "Script failed\nWall time X seconds\nOutput:\nScript error:\n"
        "Traceback (most recent call last):\n"
        '  File "<python-input-0>", line 1, in <module>\n'
        '    await tools.bash(command="curl http://example.com")\n'
        "    " + "~" * 51 + "\n"
        "RuntimeError: network access is not allowed\n\n"
        "Tool calls made before the failure (they are not undone): bash (error)",
    )
