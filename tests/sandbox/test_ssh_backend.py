"""The SSH backend against a real ``sshd`` on 127.0.0.1 (issue 6 items 6 and 8).

The bash and file contract suites run through :class:`SshBashOperations` and
:class:`SshFileOperations`; then what only a remote backend has: the control master reused,
path mapping between the session cwd and ``remote_cwd``, the remote environment, a dropped or
frozen connection, and the remote process tree killed on timeout (checked with a remote ``ps``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from sshd_support import SshServer, descendants

from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._errors import CommandTimeout, ToolError
from pi_core.testing.bash_contract import BashOperationsContract, Recorder, pids_in
from pi_core.testing.file_contract import FileOperationsContract, FileShell
from pi_sandbox_plugin.backends.ssh import (
    RemotePathMap,
    SshBashOperations,
    SshConnection,
    SshConnectionError,
    SshFileOperations,
)

pytestmark = pytest.mark.slow  # a real sshd


@pytest.fixture
def ssh_connection(ssh_server: SshServer) -> Iterator[SshConnection]:
    connection = ssh_server.connection()
    try:
        yield connection
    finally:
        connection.close()


async def remote_sh(ops: BashOperations, script: str, cwd: str = "/") -> bytes:
    """Output of ``script`` run through the backend; a non-zero exit fails the test."""
    recorder = Recorder()
    with trio.fail_after(30):
        code = await ops.exec(script, cwd, on_data=recorder)
    assert code == 0, (script, recorder.data)
    return recorder.data


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs on this machine (the remote here); zombies count as dead."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


async def wait_dead(pids: list[int], within: float) -> list[int]:
    """Poll until none of ``pids`` is alive or ``within`` seconds passed; the living ones."""
    deadline = trio.current_time() + within
    while True:
        alive = [pid for pid in pids if pid_alive(pid)]
        if not alive or trio.current_time() > deadline:
            return alive
        await trio.sleep(0.1)


def kill_quietly(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# -- the contract suites -------------------------------------------------------------------


class TestSshBashContract(BashOperationsContract):
    @pytest.fixture
    def bash_operations(self, ssh_connection: SshConnection) -> BashOperations:
        return SshBashOperations(ssh_connection)


class TestSshFileContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self, ssh_connection: SshConnection) -> FileOperations:
        return SshFileOperations(ssh_connection)

    @pytest.fixture
    def file_shell(self, ssh_connection: SshConnection) -> FileShell:
        bash = SshBashOperations(ssh_connection)

        async def run(script: str, cwd: str) -> bytes:
            return await remote_sh(bash, script, cwd)

        return run


# -- connection ----------------------------------------------------------------------------


def test_ssh_argv_puts_batch_mode_and_control_first(tmp_path: Path) -> None:
    connection = SshConnection(
        host="h.example",
        port=2222,
        user="dev",
        identity_file="~/.ssh/id_ed25519",
        options=["StrictHostKeyChecking=accept-new", "BatchMode=no"],
    )
    try:
        argv = connection.ssh_argv()
        control = connection.control_path
        assert argv == [
            "ssh",
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ControlPath={control}",
            "-o",
            "ControlMaster=no",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            "BatchMode=no",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "LogLevel=ERROR",
            "-p",
            "2222",
            "-i",
            os.path.expanduser("~/.ssh/id_ed25519"),
            "-o",
            "IdentitiesOnly=yes",
            "--",
            "dev@h.example",
        ]
        directory = os.path.dirname(control)
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    finally:
        connection.close()
    assert not os.path.exists(directory)


async def test_one_master_connection_is_reused(fresh_ssh_server: SshServer) -> None:
    connection = fresh_ssh_server.connection()
    try:
        bash = SshBashOperations(connection)
        files = SshFileOperations(connection)
        async with trio.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(remote_sh, bash, f"echo {i}")
        await files.list_dir("/")
        # the listener has one child per TCP connection (its privilege-separation monitor)
        listener_children = [
            pid
            for pid in descendants(fresh_ssh_server.process.pid)
            if _ppid(pid) == fresh_ssh_server.process.pid and pid_alive(pid)
        ]
        assert len(listener_children) == 1
        master = connection.control_path
        assert stat.S_ISSOCK(os.stat(master).st_mode)
        await connection.aclose()
        assert not await trio.Path(master).exists()
        assert await wait_dead(listener_children, 5) == []
    finally:
        connection.close()


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError):
        return -1


async def test_unreachable_host_is_an_error(ssh_server: SshServer, tmp_path: Path) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        unused_port = sock.getsockname()[1]
    connection = ssh_server.connection(port=unused_port)
    try:
        with trio.fail_after(20):
            with pytest.raises(ToolError) as info:
                await SshBashOperations(connection).exec("echo x", "/", on_data=lambda _: None)
        assert str(info.value).startswith("cannot connect to 127.0.0.1: ")
        assert "Connection refused" in str(info.value)
        with trio.fail_after(20):
            with pytest.raises(SshConnectionError) as file_info:
                await SshFileOperations(connection).read_bytes(str(tmp_path))
        assert "Connection refused" in str(file_info.value)
    finally:
        connection.close()


async def test_unknown_host_key_fails_in_batch_mode(ssh_server: SshServer, tmp_path: Path):
    empty_known_hosts = tmp_path / "known_hosts"
    empty_known_hosts.write_text("")
    connection = ssh_server.connection(
        options=[f"UserKnownHostsFile={empty_known_hosts}", "StrictHostKeyChecking=yes"]
    )
    try:
        with trio.fail_after(20), pytest.raises(ToolError) as info:
            await SshBashOperations(connection).exec("echo x", "/", on_data=lambda _: None)
        assert "Host key verification failed" in str(info.value)
    finally:
        connection.close()


# -- environment and shell -----------------------------------------------------------------


async def test_remote_values_of_home_and_path_win(
    ssh_connection: SshConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's environment is never sent: its unchanged ``HOME`` and ``PATH`` (here
    made local-only) leave the remote ones alone; a variable pi adds reaches the command."""
    monkeypatch.setenv("HOME", "/pi-local-only/home")
    monkeypatch.setenv("PATH", "/pi-local-only/bin:" + os.environ["PATH"])
    bash = SshBashOperations(ssh_connection)
    home = await remote_sh(bash, 'echo "$HOME"')
    path = await remote_sh(bash, 'echo "$PATH"')
    assert home.startswith(b"/") and b"/pi-local-only" not in home + path
    recorder = Recorder()
    env = {**os.environ, "GIVEN": "a b 'c' $d"}
    code = await bash.exec(
        'echo "$HOME"; echo "$PATH"; echo "$GIVEN"', "/", on_data=recorder, env=env
    )
    assert (code, recorder.data) == (0, home + path + b"a b 'c' $d\n")


async def test_commands_run_in_bash_when_present(ssh_connection: SshConnection) -> None:
    bash = SshBashOperations(ssh_connection)
    assert await remote_sh(bash, "[[ -n x ]] && echo $((6 * 7))") == b"42\n"


async def test_sessions_run_in_parallel(ssh_connection: SshConnection, tmp_path: Path) -> None:
    """Five commands meet at a barrier: each waits until all five have started, so commands
    run one after another never get past it (however long a loaded machine takes to start
    them, which a wall-clock bound measured too)."""
    bash = SshBashOperations(ssh_connection)
    results: dict[int, bytes] = {}

    async def one(i: int) -> None:
        results[i] = await remote_sh(
            bash, f"touch {i}; until [ -e 0 ] && [ -e 1 ] && [ -e 2 ] && [ -e 3 ] && [ -e 4 ]; "
            f"do sleep 0.05; done; echo {i}", str(tmp_path),
        )  # fmt: skip

    async with trio.open_nursery() as nursery:
        for i in range(5):
            nursery.start_soon(one, i)
    assert results == {i: f"{i}\n".encode() for i in range(5)}


# -- path mapping --------------------------------------------------------------------------


def test_remote_path_map() -> None:
    paths = RemotePathMap("/home/me/proj", "/srv/work")
    assert paths.to_remote("/home/me/proj") == "/srv/work"
    assert paths.to_remote("/home/me/proj/") == "/srv/work/"
    assert paths.to_remote("/home/me/proj/a/b.txt") == "/srv/work/a/b.txt"
    assert paths.to_remote("/home/me/project2/x") == "/home/me/project2/x"
    assert paths.to_remote("/etc/hosts") == "/etc/hosts"
    assert paths.to_local("/srv/work/a") == "/home/me/proj/a"
    assert paths.to_local("/srv/workshop") == "/srv/workshop"
    assert RemotePathMap("/", "/srv/work").to_remote("/a") == "/srv/work/a"
    assert RemotePathMap("/home/me/proj", "/").to_remote("/home/me/proj/a") == "/a"
    assert RemotePathMap(None, "/srv").to_remote("/a") == "/a"


async def test_session_paths_map_to_remote_cwd(ssh_server: SshServer, tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    local_root = "/pi-session/project"
    connection = ssh_server.connection(remote_cwd=str(remote))
    try:
        files = SshFileOperations(connection, local_root=local_root)
        bash = SshBashOperations(connection, local_root=local_root)
        await files.mkdir(f"{local_root}/src")
        await files.write_bytes(f"{local_root}/src/a.txt", b"needle here\n")
        assert (remote / "src" / "a.txt").read_bytes() == b"needle here\n"
        assert await files.read_bytes(f"{local_root}/src/a.txt", 7) == b"here\n"
        assert await files.list_dir(local_root) == ["src"]
        assert (await files.stat(f"{local_root}/src")).kind == "directory"
        assert await files.realpath(f"{local_root}/src/../src/a.txt") == f"{local_root}/src/a.txt"
        (remote / "link").symlink_to(remote / "src")
        assert await files.realpath(f"{local_root}/link/a.txt") == f"{local_root}/src/a.txt"
        assert await remote_sh(bash, "pwd; cat src/a.txt", local_root) == (
            f"{remote}\nneedle here\n".encode()
        )
        with pytest.raises(FileNotFoundError) as info:
            await files.read_bytes(f"{local_root}/missing")
        assert info.value.filename == f"{local_root}/missing"
        with pytest.raises(ToolError) as bash_info:
            await bash.exec("true", f"{local_root}/nope", on_data=lambda _: None)
        assert str(bash_info.value) == (
            f"Working directory does not exist: {remote}/nope\nCannot execute bash commands."
        )

        listing = await files.run_rg(
            ["--files", "--null", "--", f"{local_root}/src"], f"{local_root}/src"
        )
        assert listing.stdout == f"{local_root}/src/a.txt\0".encode()
        found = await files.run_rg(["--json", "--", "needle", local_root], local_root)
        paths = [
            event["data"]["path"]["text"]
            for event in map(json.loads, found.stdout.splitlines())
            if event["type"] in ("begin", "match", "end")
        ]
        assert paths == [f"{local_root}/src/a.txt"] * 3
        plain = await files.run_rg(["-n", "needle", local_root], local_root)
        assert plain.stdout == f"{local_root}/src/a.txt:1:needle here\n".encode()
    finally:
        connection.close()


# -- killing the remote tree ---------------------------------------------------------------

UNIQUE = "pi-ssh-tree-test"

REMOTE_PS = pytest.mark.xdist_group("ssh-remote-ps")
"""The tests that look for their leftovers with ``ps`` on the remote side (this machine) run in
one test process (``pytest -n``): each would see the others' processes."""


async def remote_processes_matching(bash: BashOperations, needle: str) -> bytes:
    """Remote ``ps`` lines whose command line contains ``needle`` (the ps itself excluded)."""
    script = f"ps -eo pid=,stat=,args= | grep -F -- {needle} | grep -v -e grep -e ' Z' || true"
    return await remote_sh(bash, script)


@REMOTE_PS
async def test_timeout_kills_the_remote_tree_seen_by_remote_ps(
    ssh_connection: SshConnection,
) -> None:
    bash = SshBashOperations(ssh_connection)
    command = (
        f"(exec -a {UNIQUE}-1 sleep 91 &); "
        f"setsid bash -c 'exec -a {UNIQUE}-2 sleep 92' & "
        f"bash -c 'trap \"\" TERM; exec -a {UNIQUE}-3 sleep 93' & "
        "sleep 0.3; echo ready; sleep 99"
    )
    recorder = Recorder()
    with trio.fail_after(20), pytest.raises(CommandTimeout):
        await bash.exec(command, "/", on_data=recorder, timeout=1.5)
    assert recorder.data == b"ready\n"
    assert await remote_processes_matching(bash, UNIQUE) == b""


async def test_dropped_connection_is_an_error_not_a_hang(fresh_ssh_server: SshServer) -> None:
    connection = fresh_ssh_server.connection(server_alive_interval=1, server_alive_count_max=2)
    try:
        bash = SshBashOperations(connection)
        recorder = Recorder()
        start = 0.0

        async def kill_sshd() -> None:
            nonlocal start
            await recorder.wait_for(b"started")
            start = trio.current_time()
            kill_quietly(fresh_ssh_server.sshd_processes())

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_sshd)
                with pytest.raises(ToolError) as info:
                    await bash.exec(
                        "sleep 40 & echo pid:$!; echo started; sleep 50",
                        "/",
                        on_data=recorder,
                        timeout=20,
                    )
        assert str(info.value) == (
            f"ssh: lost the connection to {connection.destination} (ssh exit code 255)"
        )
        assert trio.current_time() - start < 10
        pids = pids_in(recorder.data)
        try:
            # sshd closed the session: the supervisor saw its lifeline end and killed the tree
            assert await wait_dead(pids, 10) == []
        finally:
            kill_quietly(pids)
    finally:
        connection.close()


async def test_frozen_connection_ends_within_the_timeout(fresh_ssh_server: SshServer) -> None:
    connection = fresh_ssh_server.connection(
        server_alive_interval=30, connect_timeout=2, server_alive_count_max=3
    )
    frozen: list[int] = []
    pids: list[int] = []
    try:
        bash = SshBashOperations(connection, kill_timeout=2)
        recorder = Recorder()

        async def freeze_sshd() -> None:
            await recorder.wait_for(b"started")
            frozen.extend(fresh_ssh_server.sshd_processes())
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)

        start = trio.current_time()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(freeze_sshd)
                with pytest.raises(CommandTimeout):
                    await bash.exec(
                        "echo pid:$$; echo started; sleep 60", "/", on_data=recorder, timeout=3
                    )
        elapsed = trio.current_time() - start
        assert 3 <= elapsed < 3 + 2 * 2 + 4
        pids = pids_in(recorder.data)
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        # once sshd runs again it closes the abandoned session, and the tree is killed
        assert await wait_dead(pids, 15) == []
    finally:
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        kill_quietly(pids)
        connection.close()


@REMOTE_PS
async def test_cancelled_rg_is_killed_remotely(ssh_connection: SshConnection, tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    files = SshFileOperations(ssh_connection)
    bash = SshBashOperations(ssh_connection)
    marker = f"{UNIQUE}-rg-pattern"
    with trio.move_on_after(2) as scope:
        # rg blocks reading the FIFO, which no one writes
        await files.run_rg([marker, str(fifo)], str(tmp_path))
    assert scope.cancelled_caught
    assert await remote_processes_matching(bash, marker) == b""


async def test_on_timeout_output_before_it_is_kept_exactly(ssh_connection: SshConnection):
    bash = SshBashOperations(ssh_connection)
    recorder = Recorder()
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout) as info:
        await bash.exec(
            "printf 'a\\377'; sleep 0.2; printf b >&2; sleep 30", "/", on_data=recorder, timeout=1
        )
    assert str(info.value) == "timeout:1"
    assert recorder.data == b"a\xffb"
    assert time.monotonic() - t0 < 8


def slow_ssh(tmp_path: Path, delay: float) -> str:
    """An ``ssh`` that takes ``delay`` seconds to open a session (a slow link or a loaded
    machine); the control master (``-N``) starts at once."""
    script = tmp_path / "slow-ssh"
    script.write_text(
        f"#!{sys.executable} -I\nimport os, sys, time\n"
        f"time.sleep(0 if '-N' in sys.argv else {delay})\n"
        "os.execvp('ssh', ['ssh', *sys.argv[1:]])\n"
    )
    script.chmod(0o755)
    return str(script)


async def test_the_timeout_counts_from_the_commands_start_not_the_sessions(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    """Opening the session (here a client that takes 1.5 s to start) is not the command's
    time: a command with a 1 s timeout still runs for 1 s."""
    connection = ssh_server.connection(ssh_binary=slow_ssh(tmp_path, 1.5))
    try:
        await connection.ensure_master()
        recorder = Recorder()
        with trio.fail_after(30), pytest.raises(CommandTimeout) as info:
            await SshBashOperations(connection).exec(
                "printf a; sleep 0.2; printf b; sleep 30", "/", on_data=recorder, timeout=1
            )
        assert (str(info.value), recorder.data) == ("timeout:1", b"ab")
    finally:
        connection.close()


async def test_a_session_that_never_starts_ends_at_connect_timeout_plus_timeout(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    connection = ssh_server.connection(ssh_binary=slow_ssh(tmp_path, 60), connect_timeout=1)
    try:
        await connection.ensure_master()
        start = trio.current_time()
        with trio.fail_after(30), pytest.raises(CommandTimeout) as info:
            await SshBashOperations(connection, kill_timeout=1).exec(
                "echo never", "/", on_data=Recorder(), timeout=1
            )
        assert str(info.value) == "timeout:1"
        assert 2 <= trio.current_time() - start < 10
    finally:
        connection.close()


async def test_on_timeout_output_still_in_flight_is_kept(ssh_connection: SshConnection):
    """What the command wrote before the timeout but pi had not read yet (held in sshd, the
    connection or the control master) is output too: the control master is frozen from before
    ``b`` is written until after the timeout, so ``b`` arrives only once pi has timed out."""
    bash = SshBashOperations(ssh_connection)
    recorder = Recorder()
    await ssh_connection.ensure_master()
    master = ssh_connection._master
    assert master is not None

    async def freeze_master_across_the_timeout() -> None:
        await recorder.wait_for(b"a")
        os.kill(master.pid, signal.SIGSTOP)
        try:
            await trio.sleep(1.5)  # `b` is written 0.3 s after `a`; the timeout is 1 s
        finally:
            os.kill(master.pid, signal.SIGCONT)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(freeze_master_across_the_timeout)
            with pytest.raises(CommandTimeout):
                await bash.exec(
                    "printf a; sleep 0.3; printf b; sleep 30", "/", on_data=recorder, timeout=1
                )
    assert recorder.data == b"ab"


# -- the file tools give the same results as on the local backend ------------------------


async def _tool_session(ops: FileOperations, cwd: str) -> list[str]:
    """A recorded session of read, write, edit, ls, find and grep calls: each call's text (or
    error text) with ``cwd`` replaced by ``<cwd>``."""
    from pi_builtin_tools.files.edit import edit_file
    from pi_builtin_tools.files.read import read_file
    from pi_builtin_tools.files.write import write_file
    from pi_builtin_tools.search.find import find_files
    from pi_builtin_tools.search.grep import grep_files
    from pi_builtin_tools.search.ls import list_directory

    calls = [
        lambda: write_file("src/app.py", "import os\n\ndef main():\n    return 1\n", cwd, ops),
        lambda: write_file("notes/todo.md", "- needle one\n- two\n- needle three\n", cwd, ops),
        lambda: write_file(".hidden/x.txt", "needle hidden\n", cwd, ops),
        lambda: read_file("src/app.py", cwd, ops),
        lambda: read_file("notes/todo.md", cwd, ops, offset=2, limit=1),
        lambda: read_file("missing.txt", cwd, ops),
        lambda: read_file("src", cwd, ops),
        lambda: edit_file(ops, cwd, "src/app.py", [{"oldText": "return 1", "newText": "return 2"}]),
        lambda: edit_file(ops, cwd, "src/app.py", [{"oldText": "absent", "newText": "x"}]),
        lambda: read_file("src/app.py", cwd, ops),
        lambda: list_directory(ops, cwd, None, None),
        lambda: list_directory(ops, cwd, "src/app.py", None),
        lambda: list_directory(ops, cwd, "nope", None),
        lambda: find_files(ops, cwd, "*.md", None, None),
        lambda: find_files(ops, cwd, "**/*", None, None),
        lambda: grep_files(ops, cwd, "needle"),
        lambda: grep_files(ops, cwd, "needle", path="notes", context=1),
        lambda: grep_files(ops, cwd, "NEEDLE", ignore_case=True, glob="*.md"),
        lambda: grep_files(ops, cwd, "no such text"),
        lambda: grep_files(ops, cwd, "(", path="src"),
    ]
    texts = []
    for call in calls:
        try:
            result = await call()
            text = "".join(getattr(block, "text", "") for block in result.content)
        except ToolError as error:
            text = f"error: {error}"
        texts.append(text.replace(cwd, "<cwd>"))
    return texts


async def test_file_tools_give_the_local_results(
    ssh_server: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_builtin_tools.files.local import LocalFileOperations
    from pi_core._backend_kit import local_files

    # grep passes on the error text of the ripgrep that runs: the local side runs the rg the
    # remote's login shell finds (not this environment's wheel, first on the tests' PATH)
    remote_rg = shutil.which("rg", path="/usr/local/bin:/usr/bin:/bin")
    assert remote_rg is not None
    monkeypatch.setattr(local_files, "find_rg", lambda: remote_rg)
    local = tmp_path / "local"
    remote = tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    expected = await _tool_session(LocalFileOperations(), str(local))
    session_root = "/pi-session/project"
    connection = ssh_server.connection(remote_cwd=str(remote))
    try:
        ssh_files = SshFileOperations(connection, local_root=session_root)
        assert await _tool_session(ssh_files, session_root) == expected
    finally:
        connection.close()
    assert (remote / "src" / "app.py").read_bytes() == (local / "src" / "app.py").read_bytes()


# -- file operations and broken connections ------------------------------------------------


async def test_incomplete_upload_never_replaces_the_file(
    ssh_connection: SshConnection, tmp_path: Path
) -> None:
    """The remote side checks the size it received before the rename (what a connection that
    drops mid-upload produces: end of input too early)."""
    from pi_sandbox_plugin.backends import ssh as ssh_backend

    target = tmp_path / "f.txt"
    target.write_bytes(b"original")
    files = SshFileOperations(ssh_connection)
    with pytest.raises(OSError) as info:
        await files._call(ssh_backend._WRITE_SCRIPT, str(target), "1000", stdin=b"partial")
    assert info.value.errno == errno.EIO
    assert info.value.strerror == "incomplete write: 7 of 1000 bytes arrived"
    assert target.read_bytes() == b"original"
    assert os.listdir(tmp_path) == ["f.txt"]


async def test_file_operations_fail_fast_on_a_dead_connection(
    fresh_ssh_server: SshServer, tmp_path: Path
) -> None:
    connection = fresh_ssh_server.connection(connect_timeout=2)
    try:
        files = SshFileOperations(connection)
        assert await files.list_dir(str(tmp_path)) == []
        kill_quietly(fresh_ssh_server.sshd_processes())
        with trio.fail_after(15):
            with pytest.raises(SshConnectionError) as info:
                await files.stat(str(tmp_path))
        # our prefix, then what the OpenSSH client said (it varies with the moment sshd died:
        # a master that already ended is restarted, and that new connection is refused)
        assert info.value.errno == errno.EIO
        assert re.fullmatch(
            rf"(ssh: lost the connection to {re.escape(connection.destination)}"
            r"|cannot connect to 127\.0\.0\.1): "
            r"(?s:.*)(Connection refused|Connection reset by peer)",
            info.value.strerror or "",
        ), info.value.strerror
    finally:
        connection.close()


async def test_file_operation_on_a_frozen_connection_times_out(
    fresh_ssh_server: SshServer, tmp_path: Path
) -> None:
    connection = fresh_ssh_server.connection(connect_timeout=2)
    frozen: list[int] = []
    try:
        files = SshFileOperations(connection, op_timeout=2)
        assert await files.list_dir(str(tmp_path)) == []
        frozen = fresh_ssh_server.sshd_processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        start = trio.current_time()
        with trio.fail_after(15):
            with pytest.raises(SshConnectionError) as info:
                await files.stat(str(tmp_path))
        assert info.value.errno == errno.ETIMEDOUT
        assert 2 <= trio.current_time() - start < 10
    finally:
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        connection.close()


async def test_long_command_and_environment(ssh_connection: SshConnection) -> None:
    """Command and environment travel on stdin, so together they may exceed what one remote
    argument can hold (each alone stays below Linux's 128 KiB, as for a local ``execve``)."""
    bash = SshBashOperations(ssh_connection)
    body = "x" * 100_000
    command = f"cat <<'EOF' | wc -c\n{body}\nEOF\nprintf %s \"$BIG\" | wc -c"
    recorder = Recorder()
    with trio.fail_after(30):
        code = await bash.exec(command, "/", on_data=recorder, env={"BIG": "y\n'\"" * 25_000})
    assert (code, recorder.data.split()) == (0, [b"100001", b"100000"])


async def test_missing_ssh_client_is_an_error() -> None:
    connection = SshConnection(host="127.0.0.1", ssh_binary="/nonexistent/ssh")
    try:
        with pytest.raises(ToolError) as info:
            await SshBashOperations(connection).exec("true", "/", on_data=lambda _: None)
        assert str(info.value) == (
            "cannot connect to 127.0.0.1: the OpenSSH client '/nonexistent/ssh' is not installed"
        )
        with pytest.raises(SshConnectionError) as file_info:
            await SshFileOperations(connection).stat("/")
        assert file_info.value.errno == errno.ENOENT
    finally:
        connection.close()


# -- failing truthfully and cleaning up (issue 10 item 5) ----------------------------------


def _tools(cwd: str, connection: SshConnection) -> dict[str, Any]:
    from pi_builtin_tools.files.edit import create_edit_tool_definition
    from pi_builtin_tools.files.read import create_read_tool_definition
    from pi_builtin_tools.files.write import create_write_tool_definition
    from pi_builtin_tools.search.find import create_find_tool_definition
    from pi_builtin_tools.search.grep import create_grep_tool_definition
    from pi_builtin_tools.search.ls import create_ls_tool_definition
    from pi_builtin_tools.shell.bash import create_bash_tool_definition

    files = SshFileOperations(connection, local_root=cwd)
    bash = SshBashOperations(connection, local_root=cwd)
    return {
        "read": create_read_tool_definition(cwd, files),
        "write": create_write_tool_definition(cwd, files),
        "edit": create_edit_tool_definition(cwd, files),
        "ls": create_ls_tool_definition(cwd, files),
        "find": create_find_tool_definition(cwd, files),
        "grep": create_grep_tool_definition(cwd, files),
        "bash": create_bash_tool_definition(cwd, bash),
    }


TOOL_CALLS = {
    "read": {"path": "a.txt"},
    "write": {"path": "sub/a.txt", "content": "x"},
    "edit": {"path": "a.txt", "edits": [{"oldText": "a", "newText": "b"}]},
    "ls": {},
    "find": {"pattern": "*.txt"},
    "grep": {"pattern": "x"},
    "bash": {"command": "true"},
}


async def _error_texts(tools: dict[str, Any]) -> dict[str, str]:
    """Each tool's error text for its call in :data:`TOOL_CALLS`."""
    texts = {}
    for name, args in TOOL_CALLS.items():
        with trio.fail_after(30):
            try:
                result = await tools[name].execute(f"call-{name}", dict(args), None, None)
            except ToolError as error:
                texts[name] = str(error)
            else:
                texts[name] = f"no error: {result.content}"
    return texts


@pytest.fixture
def stranger_key(tmp_path: Path) -> Path:
    """A private key the test sshd does not accept."""
    key = tmp_path / "stranger_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return key


async def test_wrong_identity_reads_cannot_connect_in_every_tool(
    ssh_server: SshServer, tmp_path: Path, stranger_key: Path
) -> None:
    stranger = stranger_key
    connection = ssh_server.connection(identity_file=str(stranger), remote_cwd=str(tmp_path))
    user = connection.user
    try:
        texts = await _error_texts(_tools("/pi-session", connection))
    finally:
        connection.close()
    reason = f"{user}@127.0.0.1: Permission denied (publickey)."
    assert texts == dict.fromkeys(TOOL_CALLS, f"cannot connect to 127.0.0.1: {reason}")


async def test_missing_remote_cwd_is_named_and_never_created(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    remote = tmp_path / "remote-missing"
    connection = ssh_server.connection(remote_cwd=str(remote))
    try:
        texts = await _error_texts(_tools("/pi-session", connection))
    finally:
        connection.close()
    missing = f"Remote working directory does not exist on 127.0.0.1: {remote}"
    assert texts == {
        **dict.fromkeys(TOOL_CALLS, missing),
        "bash": f"{missing}\nCannot execute bash commands.",
    }
    assert not remote.exists()


ESCAPERS = (
    "env -i setsid sleep 101 & "  # cleared environment, own session
    "( ( env -i sleep 102 & ) & ) ; "  # double fork, cleared environment
    "(setsid env -i sh -c 'sleep 103 & sleep 104' &) ; "
    "sleep 0.3; echo ready; sleep 99"
)


@REMOTE_PS
async def test_timeout_kills_processes_that_left_the_session_and_cleared_their_environment(
    ssh_connection: SshConnection,
) -> None:
    bash = SshBashOperations(ssh_connection)
    recorder = Recorder()
    ready_at = 0.0

    async def note_ready() -> None:
        nonlocal ready_at
        await recorder.wait_for(b"ready\n")
        ready_at = time.monotonic()

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(note_ready)
            with pytest.raises(CommandTimeout):
                # the timeout counts from the command's start, 0.3 s before `ready`
                await bash.exec(ESCAPERS, "/", on_data=recorder, timeout=2)
    elapsed = time.monotonic() - ready_at
    assert recorder.data == b"ready\n"
    assert elapsed < 4, elapsed
    left = await remote_sh(bash, "ps -eo args= | grep -E '^sleep 10[1-4]$' || true")
    assert left == b""


# Twelve shells, each waiting on the next in the foreground (``; :`` keeps bash from exec'ing
# its last command): a shell whose child dies of SIGTERM while it still lives reports it
# ("Terminated") on the shared output.
def _nested(depth: int) -> str:
    command = "sleep 98; :"
    for _ in range(depth):
        command = f"bash -c {shlex.quote(command)}; :"
    return command


NESTED = "echo ready; " + _nested(12)


@REMOTE_PS
async def test_a_timeout_kill_makes_no_shell_report_a_killed_child(
    ssh_connection: SshConnection,
) -> None:
    """The kill stops the whole tree (SIGSTOP) before it sends SIGTERM, then SIGCONT: no shell
    can run between its child's death and its own, whatever order the pids are listed in."""
    bash = SshBashOperations(ssh_connection)
    for _ in range(3):
        recorder = Recorder()
        with trio.fail_after(20), pytest.raises(CommandTimeout):
            await bash.exec(NESTED, "/", on_data=recorder, timeout=1)
        assert recorder.data == b"ready\n"


@REMOTE_PS
async def test_abort_kills_processes_that_cleared_their_environment(
    ssh_connection: SshConnection,
) -> None:
    bash = SshBashOperations(ssh_connection)
    await remote_sh(bash, "true")
    recorder = Recorder()
    aborted_at = 0.0

    async def abort_when_ready(scope: trio.CancelScope) -> None:
        nonlocal aborted_at
        while recorder.data != b"ready\n":  # noqa: ASYNC110 (polls the recorder)
            await trio.sleep(0.02)
        aborted_at = time.monotonic()
        scope.cancel()

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(abort_when_ready, nursery.cancel_scope)
            await bash.exec(ESCAPERS, "/", on_data=recorder)
    assert time.monotonic() - aborted_at < 2
    left = await remote_sh(bash, "ps -eo args= | grep -E '^sleep 10[1-4]$' || true")
    assert (recorder.data, left) == (b"ready\n", b"")


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _ssh_masters(control_path: str) -> list[int]:
    """Local processes whose command line names ``control_path``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if control_path.encode() in f.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


def test_killed_pi_leaves_no_ssh_master(ssh_server: SshServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    connection = ssh_server.connection()
    options = ", ".join(json.dumps(option) for option in connection.options)
    (tmp_path / "pi.toml").write_text(
        "[sandbox]\n"
        'backend = "ssh"\n'
        "[sandbox.ssh]\n"
        f'host = "127.0.0.1"\nport = {ssh_server.port}\nuser = "{connection.user}"\n'
        f'identity_file = "{ssh_server.user_key}"\nremote_cwd = "{workspace}"\n'
        f"options = [{options}]\n"
    )
    connection.close()
    process = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "pi"), "--config", str(tmp_path / "pi.toml"), "call", "bash",
         json.dumps({"command": "echo started > started.txt; sleep 60"})],
        cwd=str(workspace),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (workspace / "started.txt").exists():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        masters = [pid for pid in descendants(process.pid) if b"ControlMaster=yes" in _cmdline(pid)]
        assert len(masters) == 1
        (option,) = [w for w in _cmdline(masters[0]).split(b"\0") if w.startswith(b"ControlPath=")]
        control = Path(option.removeprefix(b"ControlPath=").decode())
        assert control.exists()
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 5
    while (_ssh_masters(str(control)) or control.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (_ssh_masters(str(control)), control.exists()) == ([], False)
