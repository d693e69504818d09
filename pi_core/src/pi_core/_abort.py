"""``Abort``: the run's abort handle, trio style.

Pi passes one ``AbortSignal`` to the provider, the hooks and every ``execute``. In pi the
cancellation itself is trio cancellation: the loop runs each provider read and each tool call in
its own :class:`trio.CancelScope` linked to the run's :class:`Abort`, and :meth:`Abort.abort`
cancels every linked scope. Code that only needs to *look* (a hook, a provider, the preflight)
reads :attr:`Abort.aborted`.

``Abort`` is used from trio code on the thread of the run; call :meth:`Abort.abort` from another
thread through ``trio.from_thread.run_sync(abort.abort)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import trio


@dataclass(frozen=True)
class AbortStatistics:
    """``aborted``; ``linked_scopes``: cancel scopes currently linked (running calls/reads)."""

    aborted: bool
    linked_scopes: int


class Abort:
    """One run's abort handle: :meth:`abort` once, every linked cancel scope is cancelled.

    * :attr:`aborted` is ``True`` from the first :meth:`abort` on (it never resets: make a new
      ``Abort`` for a new run, as :class:`~pi_core._loop.agent.Agent` does).
    * :meth:`linked_scope` opens a cancel scope that :meth:`abort` cancels; opened after the
      abort it starts out cancelled.
    * :meth:`wait` sleeps until aborted.
    """

    def __init__(self) -> None:
        self._aborted = False
        self._scopes: set[trio.CancelScope] = set()
        self._event = trio.Event()

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` was called."""
        return self._aborted

    def abort(self) -> None:
        """Abort the run: cancel every linked scope, wake :meth:`wait`. Idempotent."""
        if self._aborted:
            return
        self._aborted = True
        for scope in list(self._scopes):
            scope.cancel()
        self._event.set()

    @contextmanager
    def linked_scope(self) -> Iterator[trio.CancelScope]:
        """``with abort.linked_scope() as scope:`` a cancel scope that :meth:`abort` cancels.

        Check ``scope.cancelled_caught`` afterwards to tell an abort from a normal exit.
        """
        scope = trio.CancelScope()
        if self._aborted:
            scope.cancel()
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)

    async def wait(self) -> None:
        """Return once :meth:`abort` has been called."""
        await self._event.wait()

    def statistics(self) -> AbortStatistics:
        """Whether aborted and how many scopes are linked right now (trio's ``statistics()``)."""
        return AbortStatistics(aborted=self._aborted, linked_scopes=len(self._scopes))

    def __repr__(self) -> str:
        return f"<Abort aborted={self._aborted} linked_scopes={len(self._scopes)}>"


def linked_scope(abort: Abort | None) -> AbstractContextManager[trio.CancelScope]:
    """:meth:`Abort.linked_scope` of ``abort``, or a plain never-cancelled scope for ``None``
    (returned as they are: no wrapper on the per-call path)."""
    if abort is None:
        return trio.CancelScope()
    return abort.linked_scope()


__all__ = ["Abort", "AbortStatistics", "linked_scope"]
