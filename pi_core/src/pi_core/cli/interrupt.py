"""Ctrl-C for ``pi call`` and ``pi replay``: the first SIGINT aborts the run through its
:class:`~pi_core.abort.Abort` (tools stop, the aborted results are still reported); a second
one cancels everything. Either way the command exits with status 130, without a traceback."""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from pi_core.abort import Abort

T = TypeVar("T")


def run_interruptible(work: Callable[[Abort], Awaitable[T]]) -> bool:
    """``trio.run`` of ``work(abort)``; returns whether SIGINT arrived (then the caller exits
    130). Outside the main thread (no signal handling there) ``work`` just runs."""
    interrupted = False

    async def main() -> None:
        nonlocal interrupted
        abort = Abort()
        if threading.current_thread() is not threading.main_thread():
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
                                return
                            interrupted = True
                            abort.abort()

                nursery.start_soon(watch)
                await work(abort)
                nursery.cancel_scope.cancel()

    trio.run(main)
    return interrupted


__all__ = ["run_interruptible"]
