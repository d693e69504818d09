"""Issue 23 point 7: ``pi.toml`` is found from the session's working directory (``--cwd``), not
from the directory pi was started in, so a client that starts ``pi`` elsewhere still gets the
project's configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

BAD = "[pi]\nmax_parallel_tools = 0\n"


def _bad(path: Path) -> str:
    return (
        f"pi: error: {path}: pi.max_parallel_tools: Input should be greater than or equal to 1 "
        "(got 0)\n"
    )


@pytest.fixture
def project(plugin_env: Path) -> Path:
    """A project folder beside the working directory (pi is started in ``plugin_env``)."""
    folder = plugin_env.parent / "project"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    "command",
    [
        ("tools",),
        ("call", "echo", '{"value": "x"}'),
        ("replay", "../project/session.jsonl"),
        ("run", "--model", "scripted:none.json", "hi"),
    ],
    ids=["tools", "call", "replay", "run"],
)
def test_the_project_config_is_found_from_cwd(pi, project: Path, command) -> None:
    (project / "pi.toml").write_text(BAD)
    (project / "session.jsonl").write_text("")
    out = pi("-p", "cli_plugin", command[0], "--cwd", str(project), *command[1:])
    assert (out.status, out.out, out.err) == (2, "", _bad(project / "pi.toml"))


def test_a_parent_of_cwd_holds_the_config(pi, project: Path) -> None:
    (project / "pi.toml").write_text(BAD)
    (project / "src").mkdir()
    out = pi("-p", "cli_plugin", "tools", "--cwd", str(project / "src"))
    assert (out.status, out.err) == (2, _bad(project / "pi.toml"))


def test_the_start_directory_config_does_not_apply_to_another_cwd(
    pi, plugin_env: Path, project: Path
) -> None:
    (plugin_env / "pi.toml").write_text(BAD)
    out = pi("-p", "cli_plugin", "call", "--cwd", str(project), "echo", '{"value": "x"}')
    assert (out.status, out.err) == (0, "")
    assert out.out == "x\n"


def test_config_option_wins_over_cwd(pi, plugin_env: Path, project: Path) -> None:
    (project / "pi.toml").write_text(BAD)
    (plugin_env / "ok.toml").write_text("[pi]\nmax_parallel_tools = 2\n")
    out = pi("-p", "cli_plugin", "--config", "ok.toml", "tools", "--cwd", str(project))
    assert (out.status, out.err) == (0, "")


def test_without_cwd_the_start_directory_is_used(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text(BAD)
    out = pi("-p", "cli_plugin", "tools")
    assert (out.status, out.err) == (2, _bad(plugin_env / "pi.toml"))


def test_a_plugin_command_gets_the_config_of_its_cwd(pi, plugin_env: Path, project: Path) -> None:
    (plugin_env / "pi.toml").write_text(BAD)
    (project / "pi.toml").write_text("[pi]\nmax_parallel_tools = 2\n")
    out = pi("-p", "command_plugin", "greet", "you", "--cwd", str(project))
    assert (out.status, out.err) == (0, "")
    assert out.out == f"hello you\nconfig: {project / 'pi.toml'}\n"
