"""The contract every :class:`~pi_core.BashOperations` backend must pass, as a
reusable pytest suite.

Use it from a test module of the backend's distribution::

    import pytest
    from pi_core.testing.bash_contract import BashOperationsContract

    class TestMyBackend(BashOperationsContract):
        @pytest.fixture
        def bash_operations(self):
            return MyBashOperations(...)

        @pytest.fixture
        def bash_workdir(self, tmp_path):      # optional: a directory as the backend sees it
            return str(tmp_path)

The tests run real commands through the backend (``sh`` syntax, a Linux ``/proc``, and
``sleep``, ``head``, ``tr``, ``setsid`` on the backend side) and check what a caller observes:
exit codes (128 + N for signal N), stdout and stderr merged in arrival order and streamed while
the command runs, raw bytes (not decoded), large output, stdin closed, environment and working
directory, timeout and cancellation killing the whole process tree (descendants that ignore
SIGTERM, left their process group or session, or were orphaned), and a background child that
keeps the output pipe open not blocking the call. Liveness is checked through the backend
itself, so remote backends are checked where their processes run. Needs pytest and pytest-trio
(``trio_mode``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import trio

from pi_core._backend_kit.operations import BashOperations
from pi_core._errors import CommandTimeout

TREE_COMMAND = (
    "sh -c 'trap \"\" TERM; echo pid:$$; exec sleep 97' & "
    "setsid sh -c 'echo pid:$$; exec sleep 96' & "
    "(sh -c 'trap \"\" TERM; echo pid:$$; exec sleep 95' &) ; "
    "sleep 0.3; echo ready; sleep 98"
)
"""A process tree that a process-group kill alone does not end: a child ignoring SIGTERM, a
child in its own session, an orphaned grandchild ignoring SIGTERM; each prints ``pid:N``."""


class Recorder:
    """An ``on_data`` callback that keeps every chunk and the trio time it arrived."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.times: list[float] = []
        self.event = trio.Event()

    def __call__(self, chunk: bytes) -> None:
        assert isinstance(chunk, bytes), f"on_data got {type(chunk).__name__}, not bytes"
        self.chunks.append(chunk)
        self.times.append(trio.current_time())
        self.event.set()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    async def wait_for(self, needle: bytes) -> None:
        while needle not in self.data:
            await self.event.wait()
            self.event = trio.Event()


def pids_in(output: bytes) -> list[int]:
    """The numbers of every ``pid:N`` in ``output``."""
    return [int(p) for p in re.findall(rb"pid:(\d+)", output)]


class BashOperationsContract:
    """The contract suite; subclass it (name starting with ``Test``) and override
    :meth:`bash_operations` (and :meth:`bash_workdir` for a backend with its own file system).
    """

    @pytest.fixture
    def bash_operations(self) -> BashOperations:
        """The backend under test; override."""
        raise NotImplementedError("override the bash_operations fixture")

    @pytest.fixture
    def bash_workdir(self, tmp_path: Any) -> str:
        """An existing directory on the backend's side; override for remote backends."""
        return str(tmp_path)

    @pytest.fixture
    def bash_env(self) -> dict[str, str] | None:
        """The ``env`` passed to plain runs (``None``: the backend's own environment)."""
        return None

    # -- helpers ----------------------------------------------------------------------------

    async def run(
        self,
        ops: BashOperations,
        command: str,
        cwd: str,
        *,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_data: Callable[[bytes], None] | None = None,
    ) -> tuple[int | None, bytes]:
        """``(exit code, output)`` of one run; fails the test if it takes over 20 s."""
        recorder = Recorder()

        def record(chunk: bytes) -> None:
            recorder(chunk)
            if on_data is not None:
                on_data(chunk)

        with trio.fail_after(20):
            code = await ops.exec(command, cwd, on_data=record, env=env, timeout=timeout)
        return code, recorder.data

    async def alive(self, ops: BashOperations, cwd: str, pids: list[int]) -> list[int]:
        """Which of ``pids`` still run (zombies count as dead), asked through the backend."""
        if not pids:
            return []
        script = (
            f"for p in {' '.join(map(str, pids))}; do "
            'if [ -r /proc/$p/stat ]; then s=$(sed "s/.*) //" /proc/$p/stat | cut -d" " -f1); '
            '[ "$s" != Z ] && echo "alive:$p"; fi; done; true'
        )
        _, out = await self.run(ops, script, cwd)
        return [int(p) for p in re.findall(rb"alive:(\d+)", out)]

    async def kill(self, ops: BashOperations, cwd: str, pids: list[int]) -> None:
        """SIGKILL ``pids`` through the backend (cleanup of tests that leave a child)."""
        if pids:
            await self.run(ops, f"kill -9 {' '.join(map(str, pids))} 2>/dev/null; true", cwd)

    async def assert_tree_gone(self, ops: BashOperations, cwd: str, recorder: Recorder) -> None:
        """The three processes of :data:`TREE_COMMAND` (pids in ``recorder``) are all gone;
        any left alive are killed after the assertion."""
        pids = pids_in(recorder.data)
        assert len(pids) == 3, recorder.data
        try:
            assert await self.alive(ops, cwd, pids) == []
        finally:
            await self.kill(ops, cwd, pids)

    # -- exit codes -------------------------------------------------------------------------

    async def test_exit_code_zero(self, bash_operations: BashOperations, bash_workdir: str) -> None:
        assert await self.run(bash_operations, "echo hello", bash_workdir) == (0, b"hello\n")

    async def test_exit_code_nonzero(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        assert await self.run(bash_operations, "echo out; exit 3", bash_workdir) == (3, b"out\n")
        assert await self.run(bash_operations, "exit 255", bash_workdir) == (255, b"")

    async def test_signal_death_is_128_plus_signal(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        assert await self.run(bash_operations, "echo x; kill -9 $$", bash_workdir) == (137, b"x\n")
        assert await self.run(bash_operations, "kill -TERM $$", bash_workdir) == (143, b"")
        assert await self.run(bash_operations, "kill -SEGV $$", bash_workdir) == (139, b"")

    # -- output -----------------------------------------------------------------------------

    async def test_stdout_and_stderr_merged_in_arrival_order(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        command = "echo a; sleep .1; echo b >&2; sleep .1; echo c; sleep .1; echo d >&2"
        assert await self.run(bash_operations, command, bash_workdir) == (0, b"a\nb\nc\nd\n")

    async def test_output_streams_while_the_command_runs(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        await self.run(
            bash_operations, "echo first; sleep 1; echo second", bash_workdir, on_data=recorder
        )
        assert recorder.data == b"first\nsecond\n"
        assert recorder.chunks[0] == b"first\n"
        assert recorder.times[-1] - recorder.times[0] >= 0.8

    async def test_raw_bytes_are_not_decoded(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        command = r"printf 'a\377\376b\000c\342'; sleep 0.1; printf '\202\254\n'"
        assert await self.run(bash_operations, command, bash_workdir) == (
            0,
            b"a\xff\xfeb\x00c\xe2\x82\xac\n",
        )

    async def test_large_output_arrives_complete(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        size = 8 * 1024 * 1024
        code, out = await self.run(
            bash_operations, f"head -c {size} /dev/zero | tr '\\0' x; echo; echo end", bash_workdir
        )
        assert code == 0
        assert len(out) == size + 5
        assert out == b"x" * size + b"\nend\n"

    async def test_stdin_is_closed(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        assert await self.run(bash_operations, "cat", bash_workdir, timeout=10) == (0, b"")
        command = 'read -r line; echo "got:[$line] $?"'
        assert await self.run(bash_operations, command, bash_workdir, timeout=10) == (
            0,
            b"got:[] 1\n",
        )

    async def test_env_is_passed(
        self, bash_operations: BashOperations, bash_workdir: str, bash_env: dict[str, str] | None
    ) -> None:
        base = dict(bash_env) if bash_env is not None else {}
        if "PATH" not in base:
            base["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        env = {**base, "PI_CONTRACT_VAR": "from env", "PI_CONTRACT_EMPTY": ""}
        command = (
            'echo "[$PI_CONTRACT_VAR] [${PI_CONTRACT_EMPTY-unset}] [${PI_CONTRACT_NONE-unset}]"'
        )
        assert await self.run(bash_operations, command, bash_workdir, env=env) == (
            0,
            b"[from env] [] [unset]\n",
        )

    async def test_cwd(self, bash_operations: BashOperations, bash_workdir: str) -> None:
        code, out = await self.run(bash_operations, "pwd -P", bash_workdir)
        _, expected = await self.run(
            bash_operations, f"cd {shlex.quote(bash_workdir)} && pwd -P", "/"
        )
        assert (code, out) == (0, expected)

    async def test_missing_cwd_is_an_error(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        missing = bash_workdir.rstrip("/") + "/does-not-exist"
        with pytest.raises(Exception) as info:
            await self.run(bash_operations, "echo never", missing)
        assert str(info.value) == (
            f"Working directory does not exist: {missing}\nCannot execute bash commands."
        )

    # -- commands of any length ---------------------------------------------------------------

    @pytest.mark.parametrize("size", [131_000, 131_071, 131_072, 1024 * 1024])
    async def test_command_of_any_length_runs(
        self, bash_operations: BashOperations, bash_workdir: str, size: int
    ) -> None:
        # one argument of a Linux argv holds at most 128 KiB (MAX_ARG_STRLEN): a longer
        # command must reach the shell another way, with the same $0, $#, stdin and exit code
        tail = '; echo "n=$# $(cat; echo eof)"; exit 7'
        command = ": '" + "x" * (size - len(tail) - 5) + "'" + tail
        assert len(command.encode()) == size - 1
        command += "\n"
        assert await self.run(bash_operations, command, bash_workdir, timeout=30) == (
            7,
            b"n=0 eof\n",
        )

    async def test_long_command_sees_the_same_shell_as_a_short_one(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        probe = 'echo "[$0] [$#] [$*]"; pwd -P'
        short = await self.run(bash_operations, probe, bash_workdir)
        padded = "#" + "y" * (300 * 1024) + "\n" + probe
        assert await self.run(bash_operations, padded, bash_workdir) == short
        assert short[0] == 0

    async def test_long_command_timeout_kills_the_whole_tree(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        command = ": '" + "z" * (200 * 1024) + "'\n" + TREE_COMMAND
        with pytest.raises(CommandTimeout):
            await self.run(bash_operations, command, bash_workdir, timeout=2, on_data=recorder)
        await self.assert_tree_gone(bash_operations, bash_workdir, recorder)

    # -- timeout, cancellation, background children -------------------------------------

    async def test_timeout_raises_and_keeps_output(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        start = trio.current_time()
        with pytest.raises(CommandTimeout) as info:
            await self.run(
                bash_operations, "echo before; sleep 30", bash_workdir, timeout=3, on_data=recorder
            )
        assert info.value.timeout == 3  # 3 s: a remote backend's connection fits in it
        assert recorder.data == b"before\n"
        assert 3 <= trio.current_time() - start < 15

    async def test_timeout_kills_the_whole_tree(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        start = trio.current_time()
        with pytest.raises(CommandTimeout):
            await self.run(bash_operations, TREE_COMMAND, bash_workdir, timeout=2, on_data=recorder)
        assert trio.current_time() - start < 12
        await self.assert_tree_gone(bash_operations, bash_workdir, recorder)

    async def test_cancellation_kills_the_whole_tree(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        finished_normally = False
        with trio.fail_after(20):
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:

                    async def run() -> None:
                        nonlocal finished_normally
                        await bash_operations.exec(TREE_COMMAND, bash_workdir, on_data=recorder)
                        finished_normally = True

                    nursery.start_soon(run)
                    await recorder.wait_for(b"ready")
                    scope.cancel()
        assert scope.cancelled_caught
        assert not finished_normally
        await self.assert_tree_gone(bash_operations, bash_workdir, recorder)

    async def test_cancelled_before_start_runs_nothing(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        recorder = Recorder()
        with trio.CancelScope() as scope:
            scope.cancel()
            await bash_operations.exec("echo should-not-run", bash_workdir, on_data=recorder)
        assert scope.cancelled_caught
        assert recorder.data == b""

    async def test_background_child_holding_the_pipe_does_not_block(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        start = trio.current_time()
        code, out = await self.run(
            bash_operations, "sleep 30 & echo pid:$!; echo started", bash_workdir
        )
        pids = pids_in(out)
        try:
            assert (code, out) == (0, f"pid:{pids[0]}\nstarted\n".encode())
            assert trio.current_time() - start < 5
            assert await self.alive(bash_operations, bash_workdir, pids) == pids
        finally:
            await self.kill(bash_operations, bash_workdir, pids)

    async def test_exception_from_on_data_propagates_and_kills_the_tree(
        self, bash_operations: BashOperations, bash_workdir: str
    ) -> None:
        seen = bytearray()

        def on_data(chunk: bytes) -> None:
            seen.extend(chunk)
            if b"ready" in seen:
                raise ValueError("consumer failed")

        with pytest.raises(ValueError, match="consumer failed"):
            with trio.fail_after(20):
                await bash_operations.exec(TREE_COMMAND, bash_workdir, on_data=on_data)
        pids = pids_in(bytes(seen))
        try:
            assert await self.alive(bash_operations, bash_workdir, pids) == []
        finally:
            await self.kill(bash_operations, bash_workdir, pids)


__all__ = ["TREE_COMMAND", "BashOperationsContract", "Recorder", "pids_in"]
