"""Holes a new user found in ``pi``: the demo overwriting files, unusable file paths giving
tracebacks, Ctrl-C during start-up, a second Ctrl-C, plugin commands missing from the help,
huge arguments echoed, an empty ``--tools``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import PI, Result, start_waiting, write_jsonl

from pi_core._cli.render import Renderer, call_summary, shorten_arguments
from pi_core._wire.messages import TextContent, ToolResultMessage

BUILTINS = ("-p", "pi_builtin_tools.plugin")
DEMO_FILES = ["README.md", "stats.py", "test_stats.py"]


# -- 1. the demo never overwrites a file -------------------------------------------------------


@pytest.mark.parametrize("existing", DEMO_FILES)
def test_the_demo_refuses_a_cwd_holding_one_of_its_files(
    pi: Callable[..., Result], plugin_env: Path, existing: str
) -> None:
    ws = plugin_env / "ws"
    ws.mkdir()
    (ws / existing).write_text("# mine\n")
    r = pi(*BUILTINS, "run", "--cwd", "ws")
    assert (r.status, r.out) == (2, "")
    assert r.err == (
        f"pi: error: --cwd ws: {existing} already exists; the demo does not overwrite files "
        "(use an empty or new folder)\n"
    )
    assert [p.name for p in ws.iterdir()] == [existing]
    assert (ws / existing).read_text() == "# mine\n"


def test_the_demo_keeps_other_files_of_cwd(pi: Callable[..., Result], plugin_env: Path) -> None:
    ws = plugin_env / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("mine\n")
    r = pi(*BUILTINS, "run", "--cwd", "ws")
    assert (r.status, r.err) == (0, "")
    names = sorted(p.name for p in ws.iterdir() if p.name != "__pycache__")
    assert names == ["README.md", "notes.txt", "stats.py", "test_stats.py"]
    assert (ws / "notes.txt").read_text() == "mine\n"


# -- 2. file paths pi cannot use: one line, exit 2, nothing written ----------------------------


@pytest.mark.parametrize(
    ("session", "reason"),
    [
        ("missing/s.jsonl", "No such file or directory"),
        (".", "Is a directory"),
        ("afile/s.jsonl", "Not a directory"),
    ],
)
def test_unwritable_session_is_exit_2_before_the_demo_is_copied(
    pi: Callable[..., Result], plugin_env: Path, session: str, reason: str
) -> None:
    (plugin_env / "afile").write_text("x")
    r = pi(*BUILTINS, "run", "--cwd", "ws", "--session", session)
    assert (r.status, r.out) == (2, "")
    assert r.err == f"pi: error: --session {session}: cannot write: {reason}\n"
    assert sorted(p.name for p in plugin_env.iterdir()) == ["afile"]


def test_unwritable_session_with_a_model_runs_nothing(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    script = write_jsonl(plugin_env / "s.jsonl", [])
    r = pi(*BUILTINS, "run", "x", "--model", f"scripted:{script}", "--session", "no/s.jsonl")
    assert (r.status, r.out) == (2, "")
    assert r.err == "pi: error: --session no/s.jsonl: cannot write: No such file or directory\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--cwd", "afile"], "--cwd afile: not a directory"),
        (["run", "--cwd", "afile/sub"], "--cwd afile/sub: cannot copy the demo: Not a directory"),
        (["run", "x", "--model", "scripted:s.jsonl", "--cwd", "afile"],
         "--cwd afile: not a directory"),
        (["tools", "--cwd", "afile"], "--cwd afile: not a directory"),
        (["call", "read", "{}", "--cwd", "afile"], "--cwd afile: not a directory"),
        (["replay", ".", "--json"], "cannot read .: Is a directory"),
        (["replay", "s.jsonl", "--cwd", "afile"], "--cwd afile: not a directory"),
        (["--config", ".", "tools"], "cannot read config file {work}: Is a directory"),
    ],
)  # fmt: skip
def test_unusable_paths_are_exit_2_with_one_line(
    pi: Callable[..., Result], plugin_env: Path, args: list[str], message: str
) -> None:
    (plugin_env / "afile").write_text("x")
    write_jsonl(plugin_env / "s.jsonl", [])
    r = pi(*BUILTINS, *args)
    expected = message.format(work=plugin_env)
    assert (r.status, r.out, r.err) == (2, "", f"pi: error: {expected}\n")
    assert sorted(p.name for p in plugin_env.iterdir()) == ["afile", "s.jsonl"]


SESSION_LINE = {
    "role": "assistant",
    "content": [{"type": "text", "text": "hi"}],
    "stopReason": "stop",
}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "s.jsonl", "-o", "s.jsonl"], "-o s.jsonl: is the session file"),
        (["export", "s.jsonl", "-o", "link.html"], "-o link.html: is the session file"),
        (["export", "s.html"], "-o s.html: is the session file"),
        (["export", "s.jsonl", "--audit", "a.jsonl", "-o", "./a.jsonl"], "-o ./a.jsonl: is --audit"),
        (["replay", "s.jsonl", "--report", "s.jsonl"], "--report s.jsonl: is the session file"),
        (["replay", "s.jsonl", "--audit", "a.jsonl", "--report", "a.jsonl"],
         "--report a.jsonl: is --audit"),
        (["run", "x", "--model", "scripted:s.jsonl", "--session", "a.jsonl", "--report", "a.jsonl"],
         "--report a.jsonl: is --session"),
        (["run", "x", "--model", "scripted:s.jsonl", "--session", "new.jsonl", "--report",
          "new.jsonl"], "--report new.jsonl: is --session"),
        (["run", "x", "--model", "scripted:s.jsonl", "--audit", "a.jsonl", "--report", "a.jsonl"],
         "--report a.jsonl: is --audit"),
    ],
)  # fmt: skip
def test_a_report_never_replaces_the_session_or_audit_log_it_comes_from(
    pi: Callable[..., Result], plugin_env: Path, args: list[str], message: str
) -> None:
    files = {"s.jsonl": SESSION_LINE, "s.html": SESSION_LINE, "a.jsonl": {"decision": "allow"}}
    for name, line in files.items():
        write_jsonl(plugin_env / name, [line])
    (plugin_env / "link.html").symlink_to("s.jsonl")
    before = {name: (plugin_env / name).read_bytes() for name in files}
    r = pi(*BUILTINS, *args)
    assert (r.status, r.out) == (2, "")
    assert r.err == f"pi: error: {message}, which the page would replace\n"
    assert {name: (plugin_env / name).read_bytes() for name in files} == before
    assert not (plugin_env / "new.jsonl").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--session", "new.jsonl", "--audit", "new.jsonl"],
        ["--session", "ws/new.jsonl", "--audit", "new.jsonl", "--cwd", "ws"],
    ],
)
def test_run_refuses_one_file_as_session_and_audit_log(
    pi: Callable[..., Result], plugin_env: Path, args: list[str]
) -> None:
    # the session file is written at its own offset: every decision of the audit log was lost
    (plugin_env / "ws").mkdir()
    write_jsonl(plugin_env / "s.jsonl", [SESSION_LINE])
    r = pi(*BUILTINS, "run", "x", "--model", "scripted:s.jsonl", *args)
    assert (r.status, r.out) == (2, "")
    assert r.err == f"pi: error: --session {args[1]}: is --audit, which the session would replace\n"
    assert not (plugin_env / "new.jsonl").exists() and not (plugin_env / "ws/new.jsonl").exists()


def test_a_report_is_refused_over_the_audit_log_of_cwd(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    # a relative --audit FILE is written in --cwd DIR
    (plugin_env / "ws").mkdir()
    write_jsonl(plugin_env / "s.jsonl", [SESSION_LINE])
    args = ["s.jsonl", "--cwd", "ws", "--audit", "a.jsonl", "--report", "ws/a.jsonl"]
    r = pi(*BUILTINS, "replay", *args)
    assert (r.status, r.out) == (2, "")
    assert r.err == "pi: error: --report ws/a.jsonl: is --audit, which the page would replace\n"


# -- 3. Ctrl-C while pi is still importing -----------------------------------------------------


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_ctrl_c_while_importing_exits_130_silently(plugin_env: Path) -> None:
    # pydantic_core's extension is loaded while pi_core is imported, well after the console
    # script's first line ran and well before the CLI is ready: SIGINT lands in the imports
    proc = subprocess.Popen(
        [str(PI), "tools"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while "_pydantic_core" not in _maps(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out, err) == (130, "", "")


def pythons_own_start_up(status: int, err: str) -> bool:
    """Whether a Ctrl-C was handled by the interpreter, before pi's first line ran
    (``_pi_entry.main``, see its docstring): killed by SIGINT (``-2``), its start-up failed
    (``1``: ``Fatal Python error: init_import_site``, ``init_sys_streams``...) or it dropped the
    interrupt with a warning and pi ran on (``0``: ``Exception ignored in ...``). What it printed
    is Python's own: each traceback frame is a frozen module of the interpreter's start-up or the
    installer's launcher (``from _pi_entry import main``), never a file of pi's."""
    frames = re.findall(r'^  File "([^"]+)", line', err, re.MULTILINE)
    pythons = all(f.startswith("<frozen ") or f == str(PI) for f in frames)
    return pythons and (status in (-signal.SIGINT, 1) or (status == 0 and err != ""))


def start_stubborn(**options: Any) -> subprocess.Popen[str]:
    """``pi call stubborn`` (marker ``m``, 0.5 s that ignore the abort), text pipes, no stdin."""
    return subprocess.Popen(
        [str(PI), "-p", "run_plugin", "call", "stubborn", '{"marker":"m","seconds":0.5}'],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.1, 0.3])
def test_ctrl_c_soon_after_start_never_shows_a_traceback_in_pi(
    plugin_env: Path, delay: float
) -> None:
    """From pi's first line on, a Ctrl-C exits 130 without a word, during the imports and after
    them (the CLI's handling; the stubborn tool ignores the abort); before it, in the
    interpreter's own start-up (longer on a loaded machine), Python's handling applies."""
    proc = start_stubborn()
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    pis = (proc.returncode, err) == (130, "")
    assert pis or pythons_own_start_up(proc.returncode, err), (proc.returncode, err)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3])
def test_a_sigint_ignored_from_the_start_stays_ignored(plugin_env: Path, delay: float) -> None:
    """Started with SIGINT ignored (a background job of a shell script, whose Ctrl-C reaches the
    whole process group), pi leaves it ignored, as the shell and Python do: Ctrl-Cs during the
    imports and during the call change nothing, the call ends with its result."""
    proc = start_stubborn(preexec_fn=_ignore_sigint)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out, err) == (0, "slept\n", "")


# -- 4. a second Ctrl-C on pi call -------------------------------------------------------------


def test_a_second_ctrl_c_on_call_exits_130_printing_nothing(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    arguments = json.dumps({"marker": str(marker), "seconds": 60})
    proc = start_waiting(["-p", "run_plugin", "call", "stubborn", arguments], marker)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    assert proc.poll() is None  # the tool ignores the abort
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 5
    assert (proc.returncode, out, err) == (130, "", "")


# -- 5. plugin commands in the help and the no-command message ---------------------------------


def test_no_command_lists_plugin_commands(pi: Callable[..., Result]) -> None:
    r = pi("-p", "command_plugin")
    assert (r.status, r.out) == (2, "")
    assert (
        r.err
        == "pi: error: a command is required: plugins, tools, call, replay, run, checkpoints, rewind, config, export or greet\n"
    )


def test_no_command_without_plugin_commands(pi: Callable[..., Result]) -> None:
    r = pi()
    assert (r.status, r.out, r.err) == (
        2,
        "",
        "pi: error: a command is required: plugins, tools, call, replay, run, checkpoints, rewind, config or export\n",
    )


def test_no_command_when_plugins_fail_to_load_lists_the_builtins(
    pi: Callable[..., Result],
) -> None:
    r = pi("-p", "no_such_module_xyz")
    assert (r.status, r.out, r.err) == (
        2,
        "",
        "pi: error: a command is required: plugins, tools, call, replay, run, checkpoints, rewind, config or export\n",
    )


def test_help_lists_plugin_commands(pi: Callable[..., Result]) -> None:
    r = pi("-p", "command_plugin", "--help")
    assert (r.status, r.err) == (0, "")
    lines = r.out.splitlines()
    commands = [line.split()[0] for line in lines if line.startswith("    ") and line[4] != " "]
    assert commands == [
        "plugins",
        "tools",
        "call",
        "replay",
        "run",
        "checkpoints",
        "rewind",
        "config",
        "export",
        "greet",
    ]
    assert "    greet           say hello" in lines
    assert pi("-p", "command_plugin", "greet", "you").out == "hello you\n"


def test_help_when_plugins_fail_to_load(pi: Callable[..., Result]) -> None:
    r = pi("-p", "no_such_module_xyz", "--help")
    assert (r.status, r.err) == (0, "")
    assert "    plugins         list the loaded plugins; install, uninstall or create a\n" in r.out


# -- 6. long arguments are shortened in the human rendering ------------------------------------


def test_shorten_arguments() -> None:
    value = {"path": "a.txt", "content": "x" * 201, "list": ["y" * 300, 3], "n": None}
    assert shorten_arguments(value) == {
        "path": "a.txt",
        "content": "x" * 200 + "… (201 chars)",
        "list": ["y" * 200 + "… (300 chars)", 3],
        "n": None,
    }
    assert shorten_arguments("z" * 200) == "z" * 200
    assert value["content"] == "x" * 201  # not mutated


def test_replay_rendering_shortens_a_long_write_content(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    content = "0123456789" * 50_000
    script = write_jsonl(
        plugin_env / "r.jsonl",
        [{"role": "assistant", "content": [{"type": "toolCall", "id": "w1", "name": "write",
          "arguments": {"path": "big.txt", "content": content}}]}],
    )  # fmt: skip
    r = pi(*BUILTINS, "replay", str(script))
    assert (r.status, r.err) == (0, "")
    shown = "0123456789" * 20 + "… (500000 chars)"
    assert r.out == (
        f'write {{"path":"big.txt","content":"{shown}"}}\nSuccessfully wrote to big.txt\n'
    )
    (plugin_env / "big.txt").unlink()
    r = pi(*BUILTINS, "replay", str(script), "--json")
    assert r.status == 0
    r = pi(*BUILTINS, "replay", str(script), "--events")
    start = [e for e in r.json_lines() if e["type"] == "tool_execution_start"]
    assert start[0]["args"]["content"] == content  # JSON output stays complete


def builtin_session_tools() -> list[Any]:
    import pi_builtin_tools.plugin
    from pi_core import build_session, make_plugin_manager

    pm = make_plugin_manager(autoload=False)
    pm.register(pi_builtin_tools.plugin, name="builtin_tools")
    return list(build_session(pm, ".", {}).tools)


def test_call_header_and_run_summary_shorten_long_arguments() -> None:
    import io

    out = io.StringIO()
    message = ToolResultMessage(
        tool_call_id="c1", tool_name="write", content=[TextContent(text="ok")], is_error=False
    )
    Renderer(out, styled=False).tool_result(message, {"path": "p", "content": "c" * 250})
    assert out.getvalue() == 'write {"path":"p","content":"' + "c" * 200 + '… (250 chars)"}\nok\n'
    bash = next(t for t in builtin_session_tools() if t.name == "bash")
    assert call_summary("bash", {"command": "e" * 201}, bash) == (
        "bash $ " + "e" * 200 + "… (201 chars)"
    )
    assert call_summary("grep", {"pattern": "g" * 201}) == (
        'grep {"pattern":"' + "g" * 200 + '… (201 chars)"}'
    )


# -- 7. an empty --tools -----------------------------------------------------------------------


@pytest.mark.parametrize("tools", ["", " , ,"])
def test_empty_tools_is_a_usage_error(
    pi: Callable[..., Result], plugin_env: Path, tools: str
) -> None:
    r = pi(*BUILTINS, "run", "--cwd", "ws", "--tools", tools)
    assert (r.status, r.out) == (2, "")
    assert r.err == "pi: error: --tools: no tool named (leave the option out to use all tools)\n"
    assert not (plugin_env / "ws").exists()
    assert os.listdir(plugin_env) == []
