"""Small trio helpers shared by the bash tool and the local bash backend."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import trio


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@contextlib.contextmanager
def unwrap_exception_group() -> Iterator[None]:
    """Re-raise what a strict trio nursery wrapped: a group holding only ``trio.Cancelled``
    becomes one ``Cancelled``; a group holding one other exception (plus any ``Cancelled``)
    becomes that exception; anything else stays a group. So callers can write
    ``except CommandTimeout`` and ``except trio.Cancelled``."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        others = [exc for exc in leaves if not isinstance(exc, trio.Cancelled)]
        if len(others) > 1 or not leaves:
            raise
        exc = others[0] if others else leaves[0]
        context = exc.__context__
        try:
            raise exc  # the group was only a wrapper: keep exc's own context
        finally:
            exc.__context__ = context


__all__ = ["unwrap_exception_group"]
