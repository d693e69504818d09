"""Supervisor of one bash command; run by :class:`~pi_builtin_tools.shell.local.LocalBashOperations`
as ``python -I -S _supervisor.py GRACE LIFELINE_FD SHELL COMMAND`` (standard library only).

Process layout::

    pi (trio) ── supervisor (own session, child subreaper) ── SHELL -c COMMAND ── command's processes

* The supervisor marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every
  orphaned descendant of the command (a background job whose shell exited, a daemon that forked
  twice, a process that called ``setsid``) is re-parented to it instead of to init, and can always
  be found by walking ``/proc`` from the supervisor.
* The shell inherits stdin (``/dev/null``), stdout and stderr (one pipe) and the environment the
  supervisor was started with (read back from ``/proc/self/environ``, byte for byte), with every
  signal disposition reset to default.
* When the shell exits, the supervisor exits at once with the shell's exit code, or 128 + N when
  the shell died of signal N. Background descendants are left running (a server started with
  ``&`` outlives the command, as in Pi).
* On SIGTERM, SIGINT or SIGHUP, or when the lifeline pipe from pi closes (pi died), it kills the
  whole tree: SIGTERM (and SIGCONT) to every descendant, up to GRACE seconds for them to exit,
  then SIGKILL until no descendant is left; it reaps every killed descendant (they are its
  children once their parents died), so none is left even as a zombie; then it exits with
  128 + the signal number.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """``{pid: (ppid, session id, state)}`` of every process visible in ``/proc``."""
    table: dict[int, tuple[int, int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        try:
            table[int(name)] = (int(fields[1]), int(fields[3]), fields[0].decode())
        except (IndexError, ValueError):
            continue
    return table


def _descendants() -> tuple[list[int], list[int]]:
    """``(living, zombies)``: the living descendants of this process, parents before children,
    plus living processes of this session (in case the subreaper flag could not be set); and
    the descendants that exited but are not reaped yet (a zombie's parent is this process or a
    living descendant, so killing the living ones brings every zombie here to be reaped)."""
    me = os.getpid()
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    order: list[int] = []
    seen = {me}
    queue = [me]
    while queue:
        for child in children.get(queue.pop(0), []):
            if child not in seen:
                seen.add(child)
                order.append(child)
                queue.append(child)
    zombies = [pid for pid in order if table[pid][2] in ("Z", "X")]
    my_sid = os.getsid(0)
    order += [pid for pid, (_p, sid, _s) in table.items() if sid == my_sid and pid not in seen]
    living = [pid for pid in order if table[pid][2] not in ("Z", "X")]
    return living, zombies


def _reap(shell_pid: int) -> int | None:
    """Reap every exited child; the shell's wait status if it was among them."""
    status = None
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == shell_pid:
            status = st


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _kill_tree(shell_pid: int, grace: float) -> None:
    """SIGTERM every descendant, wait up to ``grace`` seconds, then SIGKILL until none is left.

    Returns only when every descendant is dead and reaped: a killed process that is still a
    zombie when the supervisor exits would be re-parented (to pi, or to init) and still exist
    for a moment after the command was reported killed."""
    living, _zombies = _descendants()
    _signal_all(living, signal.SIGTERM)
    _signal_all(living, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while True:
        _reap(shell_pid)
        living, zombies = _descendants()
        if not living and not zombies:
            return
        if living and time.monotonic() >= deadline:
            break
        time.sleep(0.01 if living else 0.002)
    while True:
        _signal_all(living, signal.SIGKILL)
        time.sleep(0.005)
        _reap(shell_pid)
        living, zombies = _descendants()
        if not living and not zombies:
            return


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main() -> None:
    grace = float(sys.argv[1])
    lifeline = int(sys.argv[2])
    shell = os.fsencode(sys.argv[3])
    command = os.fsencode(sys.argv[4])
    os.set_inheritable(lifeline, False)

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    for sig in (*TERMINATING_SIGNALS, signal.SIGCHLD):
        signal.signal(sig, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    with open("/proc/self/environ", "rb") as f:
        env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    try:
        shell_pid = os.posix_spawn(
            shell,
            [shell, b"-c", command],
            env,
            setsigmask=(),
            setsigdef=(
                *TERMINATING_SIGNALS,
                signal.SIGCHLD,
                signal.SIGPIPE,
                signal.SIGXFSZ,
            ),
        )
    except OSError as error:
        sys.stderr.write(f"spawn {sys.argv[3]} failed: {error.strerror}\n")
        sys.stderr.flush()
        os._exit(127)

    # Only the shell and its descendants hold the output pipe from now on.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)

    while True:
        try:
            ready, _, _ = select.select([wake_r, lifeline], [], [])
        except InterruptedError:
            continue
        terminate = 0
        if lifeline in ready:
            try:
                data = os.read(lifeline, 64)
            except OSError:
                data = b""
            if not data:
                terminate = signal.SIGHUP
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                for signum in os.read(wake_r, 512):
                    if signum in TERMINATING_SIGNALS:
                        terminate = signum
        if terminate:
            _kill_tree(shell_pid, grace)
            os._exit(128 + terminate)
        status = _reap(shell_pid)
        if status is not None:
            os._exit(_exit_code(status))


if __name__ == "__main__":
    main()
