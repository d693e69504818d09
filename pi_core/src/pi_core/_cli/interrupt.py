"""Ctrl-C for ``pi call``, ``pi replay`` and ``pi run``: the first SIGINT aborts the run through
its :class:`~pi_core._abort.Abort` (tools stop, the aborted results are still reported); a second
one cancels everything, and if that has not ended the run within :data:`EXIT_GRACE` seconds (a
tool that shields itself from cancellation, a blocking thread) the process exits at once
(``os._exit(130)``). Either way the command exits with status 130, without a traceback, and after a second Ctrl-C
nothing more is printed (what was printed stays: ``pi call`` with its one call unfinished prints
nothing)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import trio

from pi_core._abort import Abort

if TYPE_CHECKING:
    from pi_core._plugins.session import Session

T = TypeVar("T")

EXIT_GRACE = 1.0
"""Seconds the cancellation after a second Ctrl-C may take before the process exits anyway."""


def exit_now() -> None:
    """Flush stdout as far as it goes and end the process with status 130 (no cleanup)."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(130)


def run_interruptible(work: Callable[[Abort], Awaitable[T]]) -> bool:
    """``trio.run`` of ``work(abort)``; returns whether SIGINT arrived (then the caller exits
    130). Outside the main thread (no signal handling there), or with SIGINT ignored (from the
    process's start: a background job of a shell script), ``work`` just runs."""
    interrupted = False
    watchdog: list[threading.Timer] = []

    async def main() -> None:
        nonlocal interrupted
        abort = Abort()
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        ):
            await work(abort)
            return
        with trio.CancelScope() as everything:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT) as signals:
                        async for _ in signals:
                            if interrupted:
                                everything.cancel()
                                timer = threading.Timer(EXIT_GRACE, exit_now)
                                timer.daemon = True
                                timer.start()
                                watchdog.append(timer)
                                return
                            interrupted = True
                            abort.abort()

                nursery.start_soon(watch)
                await work(abort)
                nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    finally:
        for timer in watchdog:
            timer.cancel()
    return interrupted


def run_in_session(session: Session, work: Callable[[Abort], Awaitable[None]]) -> bool:
    """:func:`run_interruptible` of ``work`` inside ``async with session:`` (``pi_session_start``
    before it, ``pi_session_end`` after it on every exit path); a Ctrl-C makes the session's
    end reason ``"interrupted"``. Returns whether SIGINT arrived."""

    async def in_session(abort: Abort) -> None:
        async with session:
            try:
                await work(abort)
            finally:
                if abort.aborted:
                    session.outcome = "interrupted"

    return run_interruptible(in_session)


__all__ = ["run_in_session", "run_interruptible"]
