"""The bubblewrap backend against the real ``bwrap``: the BashOperations contract suite, the file
operations, and what the sandbox must guarantee (read-only outside the workspace, private /tmp,
no network, denied paths masked, unavailable sandbox never falls back, nothing survives a
timeout)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from pi_builtin_tools.files.write import write_file
from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._errors import CommandTimeout, ToolError
from pi_core.testing.bash_contract import BashOperationsContract, Recorder, pids_in
from pi_core.testing.file_contract import FileOperationsContract
from pi_sandbox_plugin.backends.bwrap import BwrapBackend, SandboxUnavailable

_probed: list[str] = []


@pytest.fixture(autouse=True)
def bwrap_works(require_program: Callable[[str], str], tmp_path: Path) -> None:
    """Skip (fail under CI) unless bwrap is installed and can create its namespaces here."""
    require_program("bwrap")
    if _probed:
        return
    probe = [*BwrapBackend(str(tmp_path)).sandbox_args(), "--", "/bin/bash", "-c", ":"]
    result = subprocess.run(probe, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = f"bwrap cannot create its sandbox here: {result.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must be able to run bwrap)")
        pytest.skip(reason)
    _probed.append("ok")


def sandboxed_processes(root: int) -> dict[int, tuple[int, str]]:
    """``{host pid: (pid in its sandbox, cmdline)}`` of the living processes below a ``bwrap``
    process that descends from ``root`` (every sandbox a test started)."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[list[str], str, str, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = Path(f"/proc/{name}/status").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        children.setdefault(int(fields["PPid"]), []).append(int(name))
        info[int(name)] = (
            fields["NSpid"].split(),
            fields["State"][0],
            fields["Name"].strip(),
            cmdline.strip(),
        )
    found: dict[int, tuple[int, str]] = {}
    queue = [(root, False)]
    while queue:
        parent, inside = queue.pop()
        for child in children.get(parent, []):
            ns_pids, state, name, cmdline = info[child]
            if inside and state not in "ZX":
                found[child] = (int(ns_pids[-1]), cmdline)
            queue.append((child, inside or name == "bwrap"))
    return found


class TestBwrapContract(BashOperationsContract):
    """The contract, with liveness checked on the host: each command has its own PID
    namespace, so a pid printed by one command means nothing to the next one."""

    @pytest.fixture
    def bash_operations(self, tmp_path: Path) -> BashOperations:
        return BwrapBackend(str(tmp_path))

    async def alive(self, ops: BashOperations, cwd: str, pids: list[int]) -> list[int]:
        await trio.sleep(0.1)
        living = sandboxed_processes(os.getpid())
        return sorted({ns for ns, _ in living.values() if ns in pids})

    async def kill(self, ops: BashOperations, cwd: str, pids: list[int]) -> None:
        for host_pid, (ns_pid, _) in sandboxed_processes(os.getpid()).items():
            if ns_pid in pids:
                os.kill(host_pid, 9)

    async def test_background_child_holding_the_pipe_does_not_block(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        """Deviation from the local backend (documented in the module): the call returns when
        the shell exits, and the background child ends with its sandbox."""
        start = trio.current_time()
        code, out = await self.run(
            bash_operations, "sleep 3021 & echo pid:$!; echo started", bash_workdir
        )
        pids = pids_in(out)
        assert (code, out) == (0, f"pid:{pids[0]}\nstarted\n".encode())
        assert trio.current_time() - start < 5
        living = sandboxed_processes(os.getpid()).values()
        assert [cmd for _, cmd in living if "3021" in cmd] == []


class TestBwrapFileContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self, tmp_path: Path) -> FileOperations:
        return BwrapBackend(str(tmp_path))

    @pytest.fixture
    def file_root(self, tmp_path: Path) -> str:
        (tmp_path / "root").mkdir()
        return str(tmp_path / "root")


async def run(
    ops: BwrapBackend, command: str, cwd: str, **kwargs: object
) -> tuple[int | None, bytes]:
    recorder = Recorder()
    with trio.fail_after(20):
        code = await ops.exec(command, cwd, on_data=recorder, **kwargs)  # type: ignore[arg-type]
    return code, recorder.data


async def test_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    ops = BwrapBackend(str(tmp_path))
    assert await run(ops, "echo x > /etc/pi-bwrap-test; echo $?", str(tmp_path)) == (
        0,
        b"/bin/bash: line 1: /etc/pi-bwrap-test: Read-only file system\n1\n",
    )
    with pytest.raises(ToolError) as info:
        await write_file("/etc/pi-bwrap-test", "x", str(tmp_path), ops)
    assert str(info.value) == "EROFS: read-only file system, open '/etc/pi-bwrap-test'"
    assert not await trio.Path("/etc/pi-bwrap-test").exists()
    result = await write_file("inside.txt", "ok", str(tmp_path), ops)
    assert result.content[0].text == "Successfully wrote to inside.txt"  # type: ignore[union-attr]
    assert (tmp_path / "inside.txt").read_bytes() == b"ok"


async def test_tmp_is_private(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "host-secret").write_text("secret")
    ops = BwrapBackend(str(workspace))
    secret = str(tmp_path / "host-secret")
    assert await run(ops, f"cat {secret}; echo made > /tmp/own; cat /tmp/own", str(workspace)) == (
        0,
        f"cat: {secret}: No such file or directory\nmade\n".encode(),
    )
    own = trio.Path("/tmp/own")
    assert not await own.exists() or await own.read_text() != "made\n"
    with pytest.raises(FileNotFoundError):
        await ops.read_bytes(secret)
    with pytest.raises(ToolError) as info:
        await run(ops, "true", str(tmp_path))
    assert str(info.value) == (
        f"Working directory does not exist: {tmp_path}\nCannot execute bash commands."
    )


async def test_no_network_unless_configured(tmp_path: Path) -> None:
    received: list[bytes] = []
    got = trio.Event()
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]

    async def serve(stream: trio.SocketStream) -> None:
        received.append(await stream.receive_some(100))
        got.set()
        await stream.aclose()

    command = f"echo hello > /dev/tcp/127.0.0.1/{port}"
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, serve, listeners)
        assert await run(BwrapBackend(str(tmp_path)), command, str(tmp_path)) == (
            1,
            b"/bin/bash: connect: Connection refused\n"
            + f"/bin/bash: line 1: /dev/tcp/127.0.0.1/{port}: Connection refused\n".encode(),
        )
        assert received == []
        ops = BwrapBackend(str(tmp_path), network=True)
        assert await run(ops, command, str(tmp_path)) == (0, b"")
        with trio.fail_after(5):
            await got.wait()
        assert received == [b"hello\n"]
        nursery.cancel_scope.cancel()


async def test_denied_paths_are_masked(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("TOKEN=private\n")
    (tmp_path / "src.txt").write_text("TOKEN=public\n")
    ops = BwrapBackend(
        str(tmp_path), deny_paths=[str(tmp_path / ".env"), str(tmp_path / "keys"), "/nope/x"]
    )
    assert await run(
        ops, "cat .env; ls -A keys; echo x > keys/new; echo x > .env; cat src.txt", str(tmp_path)
    ) == (
        0,
        b"cat: .env: Permission denied\n"
        b"/bin/bash: line 1: keys/new: Read-only file system\n"
        b"/bin/bash: line 1: .env: Permission denied\n"
        b"TOKEN=public\n",
    )
    assert (tmp_path / ".env").read_text() == "TOKEN=abc\n"
    assert not (tmp_path / "keys" / "new").exists()
    with pytest.raises(PermissionError):
        await ops.read_bytes(str(tmp_path / ".env"))
    assert await ops.list_dir(str(tmp_path / "keys")) == []
    found = await ops.run_rg(["--hidden", "--no-heading", "TOKEN", "."], str(tmp_path))
    assert (found.stdout, found.stderr) == (
        b"./src.txt:TOKEN=public\n",
        b"rg: ./.env: Permission denied (os error 13)\n",
    )
    with pytest.raises(ToolError):
        await run(ops, "true", str(tmp_path / "keys"))


async def test_no_process_survives_a_timeout(tmp_path: Path) -> None:
    ops = BwrapBackend(str(tmp_path))
    command = (
        "sleep 3031 & setsid sleep 3032 & (trap '' TERM; sleep 3033 &) ; "
        "nohup sleep 3034 >/dev/null 2>&1 & echo ready; sleep 3035"
    )
    recorder = Recorder()
    with pytest.raises(CommandTimeout):
        with trio.fail_after(20):
            await ops.exec(command, str(tmp_path), on_data=recorder, timeout=1)
    assert recorder.data == b"ready\n"
    living = sandboxed_processes(os.getpid()).values()
    assert [cmd for _, cmd in living if "sleep 303" in cmd] == []


async def test_no_process_survives_cancellation(tmp_path: Path) -> None:
    ops = BwrapBackend(str(tmp_path))
    recorder = Recorder()
    with trio.move_on_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: ops.exec(
                    "nohup setsid sleep 3041 >/dev/null 2>&1 & echo ready; sleep 3042",
                    str(tmp_path),
                    on_data=recorder,
                )
            )
            await recorder.wait_for(b"ready")
            nursery.cancel_scope.cancel()
    living = sandboxed_processes(os.getpid()).values()
    assert [cmd for _, cmd in living if "sleep 304" in cmd] == []


def living_with(marker: str) -> list[int]:
    """The pids of the living processes whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline.replace(b"\0", b" ") and state not in "ZX":
            found.append(int(name))
    return found


@pytest.mark.parametrize("end", ["cancel", "timeout"])
async def test_the_sandbox_ends_even_before_its_death_signal_is_set(
    tmp_path: Path, end: str
) -> None:
    """bwrap's ``--die-with-parent`` takes hold only once the sandbox's init has left bwrap's
    process group (``--new-session``) and set its death signal: bwrap killed in between left the
    whole sandbox running (a client that went away as its call started, under load). A bwrap
    that never sets it stands for that moment here: the sandbox must still end."""
    real = shutil.which("bwrap")
    wrapper = tmp_path / "bin" / "bwrap"
    wrapper.parent.mkdir()
    wrapper.write_text(
        '#!/bin/bash\nargs=()\nfor a in "$@"; do\n'
        '  [ "$a" = --die-with-parent ] || args+=("$a")\ndone\n'
        f'exec {real} "${{args[@]}}"\n'
    )
    wrapper.chmod(0o755)
    workspace = tmp_path / "work"
    workspace.mkdir()
    ops = BwrapBackend(str(workspace), bwrap=str(wrapper))
    marker = f"sleep 305{len(end)}.5"
    recorder = Recorder()
    try:
        with trio.move_on_after(20):
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    with contextlib.suppress(CommandTimeout):
                        await ops.exec(
                            f"echo ready; {marker}",
                            str(workspace),
                            on_data=recorder,
                            timeout=1 if end == "timeout" else None,
                        )

                nursery.start_soon(call)
                await recorder.wait_for(b"ready")
                if end == "cancel":
                    nursery.cancel_scope.cancel()
        with trio.move_on_after(5):
            while living_with(marker):  # noqa: ASYNC110 (polls /proc)
                await trio.sleep(0.05)
        assert living_with(marker) == []
    finally:
        for pid in living_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


async def test_missing_bwrap_fails_every_call(tmp_path: Path) -> None:
    ops = BwrapBackend(str(tmp_path), bwrap="/nonexistent/bwrap")
    expected = "bubblewrap (/nonexistent/bwrap) is not installed: the bwrap sandbox cannot run"
    with pytest.raises(SandboxUnavailable) as info:
        await run(ops, "touch ran", str(tmp_path))
    assert str(info.value) == expected
    with pytest.raises(SandboxUnavailable) as info:
        await ops.read_bytes(str(tmp_path / "x"))
    assert str(info.value) == expected
    with pytest.raises(SandboxUnavailable):
        await ops.write_bytes(str(tmp_path / "x"), b"x")
    assert not (tmp_path / "ran").exists()
    assert not (tmp_path / "x").exists()


async def test_namespaces_refused_fails_every_call(tmp_path: Path) -> None:
    """A bwrap that cannot create namespaces (simulated: namespaces cannot be refused to root
    here) prints its reason; every call fails with it, nothing runs."""
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the "
        "kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ops = BwrapBackend(str(tmp_path), bwrap=str(fake))
    expected = (
        "bubblewrap cannot create the sandbox: bwrap: No permissions to creating new namespace, "
        "likely because the kernel does not allow non-privileged user namespaces."
    )
    for call in (
        run(ops, "touch ran", str(tmp_path)),
        ops.stat(str(tmp_path)),
        ops.run_rg(["x"], str(tmp_path)),
    ):
        with pytest.raises(SandboxUnavailable) as info:
            await call
        assert str(info.value) == expected
    assert not (tmp_path / "ran").exists()


def test_sandbox_arguments(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    ops = BwrapBackend(
        str(tmp_path),
        deny_paths=[str(tmp_path / "d"), str(tmp_path / "f"), "/missing"],
        rg="/usr/bin/rg",  # not under /tmp, wherever this checkout lives
    )
    ws = str(tmp_path)
    assert ops.sandbox_args() == [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/tmp", "--bind", ws, ws,
        "--tmpfs", f"{ws}/d", "--remount-ro", f"{ws}/d",
        "--ro-bind", "/dev/null", f"{ws}/f",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
    ]  # fmt: skip
    assert "--unshare-net" not in BwrapBackend(ws, network=True, rg="rg").sandbox_args()


def test_rg_under_the_hosts_tmp_stays_visible(tmp_path: Path) -> None:
    """A venv under /tmp (a clone there): the private /tmp would hide its rg from the file
    tools, so that one binary is bound read-only at its own path."""
    rg = tmp_path / "venv" / "bin" / "rg"
    rg.parent.mkdir(parents=True)
    rg.write_bytes(b"")
    args = BwrapBackend(str(tmp_path / "ws"), rg=str(rg)).sandbox_args()
    assert args[10:17] == [
        "--bind",
        str(tmp_path / "ws"),
        str(tmp_path / "ws"),
        "--ro-bind",
        str(rg),
        str(rg),
        "--unshare-pid",
    ]
    assert (
        "--ro-bind" not in BwrapBackend(str(tmp_path / "ws"), rg="/usr/bin/rg").sandbox_args()[3:]
    )


def test_backend_satisfies_both_protocols(tmp_path: Path) -> None:
    ops = BwrapBackend(str(tmp_path))
    assert isinstance(ops, BashOperations)
    assert isinstance(ops, FileOperations)
