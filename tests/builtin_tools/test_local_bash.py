"""The local bash backend: the BashOperations contract suite, plus what only the local backend
does (shell resolution, spawn errors, the supervisor's exact environment, /dev/null stdin)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import trio

from pi_builtin_tools.shell.local import SUPERVISOR, LocalBashOperations, resolve_shell
from pi_core._backend_kit.operations import BashOperations
from pi_core._errors import CommandTimeout, ToolError
from pi_core.testing.bash_contract import BashOperationsContract, Recorder, pids_in


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


class TestLocalBashContract(BashOperationsContract):
    @pytest.fixture
    def bash_operations(self) -> BashOperations:
        return LocalBashOperations(kill_grace=0.5)


async def run(ops: LocalBashOperations, command: str, cwd: str, **kwargs: object):
    recorder = Recorder()
    with trio.fail_after(20):
        code = await ops.exec(command, cwd, on_data=recorder, **kwargs)  # type: ignore[arg-type]
    return code, recorder.data


def test_local_operations_satisfy_the_protocol() -> None:
    assert isinstance(LocalBashOperations(), BashOperations)


def test_shell_resolution() -> None:
    assert resolve_shell() == "/bin/bash"
    assert resolve_shell("/bin/sh") == "/bin/sh"
    with pytest.raises(ToolError) as info:
        resolve_shell("/custom/bash")
    assert str(info.value) == "Custom shell path not found: /custom/bash"


async def test_custom_shell_path_missing(tmp_path) -> None:
    ops = LocalBashOperations(shell_path="/custom/bash")
    with pytest.raises(ToolError) as info:
        await run(ops, "echo x", str(tmp_path))
    assert str(info.value) == "Custom shell path not found: /custom/bash"


async def test_custom_shell_path_is_used(tmp_path) -> None:
    ops = LocalBashOperations(shell_path="/bin/sh")
    code, out = await run(ops, 'echo "$0"', str(tmp_path))
    assert (code, out) == (0, b"/bin/sh\n")


async def test_shell_that_cannot_be_executed_is_a_spawn_error(tmp_path) -> None:
    not_executable = tmp_path / "shell"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(ToolError) as info:
        await run(LocalBashOperations(shell_path=str(not_executable)), "true", str(tmp_path))
    assert str(info.value) == f"spawn {not_executable} EACCES"


async def test_missing_cwd_text(tmp_path) -> None:
    missing = str(tmp_path / "gone")
    with pytest.raises(ToolError) as info:
        await run(LocalBashOperations(), "true", missing)
    assert str(info.value) == (
        f"Working directory does not exist: {missing}\nCannot execute bash commands."
    )


async def test_stdin_is_dev_null(tmp_path) -> None:
    code, out = await run(LocalBashOperations(), "readlink /proc/self/fd/0", str(tmp_path))
    assert (code, out) == (0, b"/dev/null\n")


async def test_stdout_and_stderr_are_one_pipe(tmp_path) -> None:
    command = 'test "$(readlink /proc/$$/fd/1)" = "$(readlink /proc/$$/fd/2)" && echo same'
    assert await run(LocalBashOperations(), command, str(tmp_path)) == (0, b"same\n")


async def test_environment_is_passed_byte_for_byte(tmp_path) -> None:
    env = {"PATH": os.environ["PATH"], "LC_ALL": "C", "ODD": "a=b\tc é"}
    code, out = await run(LocalBashOperations(), "env | sort", str(tmp_path), env=env)
    lines = out.decode().splitlines()
    assert code == 0
    assert [line for line in lines if not line.startswith(("PWD=", "SHLVL=", "_="))] == [
        "LC_ALL=C",
        "ODD=a=b\tc é",
        f"PATH={os.environ['PATH']}",
    ]


async def test_python_ignored_signals_are_reset(tmp_path) -> None:
    # Python ignores SIGPIPE; a command must get the default (death by SIGPIPE, 141).
    code, out = await run(
        LocalBashOperations(), "yes | head -n 2; echo ${PIPESTATUS[0]}", str(tmp_path)
    )
    assert (code, out) == (0, b"y\ny\n141\n")


async def test_command_runs_in_its_own_session(tmp_path) -> None:
    code, out = await run(
        LocalBashOperations(), "ps -o sid= -p $$; ps -o sid= -p $PPID", str(tmp_path)
    )
    shell_sid, supervisor_sid = out.split()
    assert code == 0
    assert shell_sid == supervisor_sid
    assert int(shell_sid) != os.getsid(0)


async def test_default_grace_then_sigkill_for_term_ignoring_child(tmp_path) -> None:
    """c18-bash-timeout-kills-term-ignoring-tree: 2 s timeout, 1 s default grace."""
    recorder = Recorder()
    start = trio.current_time()
    command = "sh -c 'trap \"\" TERM; echo pid:$$; exec sleep 97' & sleep 98"
    with pytest.raises(CommandTimeout):
        await LocalBashOperations().exec(command, str(tmp_path), on_data=recorder, timeout=2)
    elapsed = trio.current_time() - start
    assert 2 <= elapsed < 4.5
    (pid,) = pids_in(recorder.data)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_killed_tree_is_reaped_before_exec_returns(tmp_path) -> None:
    """Every killed descendant is reaped by the supervisor before it exits: none is left even
    as a zombie (a zombie re-parented to pi would still answer ``kill(pid, 0)``). Many
    processes that need SIGKILL, some with children of their own, make the moment each one
    dies vary."""
    recorder = Recorder()
    command = (
        "for i in $(seq 1 12); do "
        'sh -c \'trap "" TERM; echo pid:$$; sh -c "echo pid:\\$\\$; exec sleep 95" & '
        "exec sleep 97' & "
        "sh -c 'echo pid:$$; exec sleep 96' & done; sleep 98"
    )
    with pytest.raises(CommandTimeout):
        await LocalBashOperations(kill_grace=0.1).exec(
            command, str(tmp_path), on_data=recorder, timeout=1
        )
    pids = pids_in(recorder.data)
    assert len(pids) == 36
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    assert alive == []


async def test_commands_that_exit_on_sigterm_end_without_waiting_for_the_grace(tmp_path) -> None:
    start = trio.current_time()
    with pytest.raises(CommandTimeout):
        await LocalBashOperations(kill_grace=5).exec(
            "sleep 30 & sleep 31", str(tmp_path), on_data=lambda b: None, timeout=0.5
        )
    assert trio.current_time() - start < 2


async def test_daemon_that_forked_twice_and_left_the_session_is_killed(tmp_path) -> None:
    command = (
        'python3 -c "import os, sys, time\n'
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('pid:%d' % os.getpid(), flush=True)\n"
        'time.sleep(60)"; echo ready; sleep 60'
    )
    recorder = Recorder()
    with trio.move_on_after(10):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: LocalBashOperations(kill_grace=0.3).exec(
                        command, str(tmp_path), on_data=recorder
                    )
                )
                # "ready" may come before the daemon's pid: the daemon's parent exits first
                await recorder.wait_for(b"ready")
                await recorder.wait_for(b"pid:")
                scope.cancel()
    (pid,) = pids_in(recorder.data)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_supervisor_killed_from_outside_reports_signal(tmp_path) -> None:
    """The supervisor dies of SIGKILL: the backend reports 128 + 9, never success."""
    recorder = Recorder()

    async def kill_supervisor() -> None:
        await recorder.wait_for(b"pid:")
        (shell_pid,) = pids_in(recorder.data)
        os.kill(parent_of(shell_pid), signal.SIGKILL)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(kill_supervisor)
        code = await LocalBashOperations().exec(
            "echo pid:$$; sleep 0.5; echo done", str(tmp_path), on_data=recorder
        )
    assert code == 137


def test_supervisor_kills_tree_when_pi_dies(tmp_path) -> None:
    """The lifeline: when the process that started the supervisor dies, the tree is killed."""
    pid_file = tmp_path / "pids"
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            SUPERVISOR,
            "0.2",
            str(read_end),
            "/bin/bash",
            f"sh -c 'trap \"\" TERM; echo $$ > {pid_file}; exec sleep 97' & wait",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=(read_end,),
        start_new_session=True,
    )
    os.close(read_end)
    try:
        for _ in range(200):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        os.close(write_end)  # what happens when pi dies
        assert proc.wait(timeout=10) == 128 + signal.SIGHUP
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_orphans_stay_descendants_of_the_test_session() -> None:
    """The session-wide leak check (tests/conftest.py) can see orphans: pytest is a subreaper."""
    out = subprocess.run(
        ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    pid = int(out)
    try:
        assert parent_of(pid) == os.getpid()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)  # pytest is its parent now: reap it
