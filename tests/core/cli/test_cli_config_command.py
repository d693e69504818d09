"""``pi config``: which files are in effect for a session (issue 23 point 7): the config file
found from ``--cwd`` (or none), every file pi loaded for the session with what it is, and where
checkpoints go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def state(plugin_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = plugin_env.parent / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder / "pi" / "checkpoints"


def test_no_file_means_the_defaults(pi, plugin_env: Path, state: Path) -> None:
    out = pi("config")
    assert (out.status, out.err) == (0, "")
    assert out.out == (
        f"cwd: {plugin_env}\n"
        "config: none (the defaults)\n"
        f"checkpoints: on, in {state}\n"
        "files pi loaded: (none)\n"
    )


def test_the_project_config_of_cwd(pi, plugin_env: Path, state: Path) -> None:
    project = plugin_env.parent / "project"
    (project / "src").mkdir(parents=True)
    (project / "pi.toml").write_text("[checkpoints]\nenabled = false\n")
    out = pi("config", "--cwd", str(project / "src"))
    assert (out.status, out.err) == (0, "")
    assert out.out == (
        f"cwd: {project / 'src'}\n"
        f"config: {project / 'pi.toml'}\n"
        "checkpoints: off ([checkpoints] enabled = false)\n"
        "files pi loaded:\n"
        f"  {project / 'pi.toml'}: pi's own configuration\n"
    )


def test_json_lists_every_file_with_what_it_is(pi, plugin_env: Path, state: Path) -> None:
    (plugin_env / "pi.toml").write_text("[pi]\nmax_parallel_tools = 2\n")
    out = pi("config", "--json")
    assert (out.status, out.err) == (0, "")
    assert json.loads(out.out) == {
        "cwd": str(plugin_env),
        "config": str(plugin_env / "pi.toml"),
        "checkpoints": {"enabled": True, "dir": str(state)},
        "files": [
            {
                "path": str(plugin_env / "pi.toml"),
                "what": "pi's own configuration",
                "hidden": False,
            },
        ],
    }


def test_a_bad_config_is_the_usual_error(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text("[pi]\nspeed = 1\n")
    out = pi("config")
    assert (out.status, out.out, out.err) == (
        2,
        "",
        f"pi: error: {plugin_env}/pi.toml: pi.speed: unknown key\n",
    )
