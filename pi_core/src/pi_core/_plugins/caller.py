"""pi's own hook caller: the call modes of :mod:`pi_core.hookspecs` (STYLE item 2).

pluggy's ``hook(...)`` is synchronous: given an ``async def`` implementation it returns an
un-awaited coroutine, and ``firstresult`` would stop at it. So the core never calls hooks that
may be async through pluggy. This module walks ``reversed(hook.get_hookimpls())`` itself (that is
pluggy's call order: later-registered first, ``tryfirst``/``trylast`` honoured), passes each
implementation only the arguments it names (``impl.argnames``) and awaits what is awaitable.

Each mode exists twice: ``call_*`` (sync, for the sync-only hooks: no trio needed) and
``acall_*`` (async, for hooks that allow ``async def``). The sync variants refuse an
implementation that returns an awaitable: a coroutine is closed first, so no "coroutine was never
awaited" warning ever appears, and :class:`~pi_core._errors.PluginError` names plugin and hook.

Modes (``kwargs`` are the hook's arguments by name):

* **collect**: call all; return the non-``None`` returns in call order.
* **first**: call in order until ``accept(impl, value)`` is true; return ``(plugin_name, value)``
  or ``(None, None)``. ``first non-None`` and ``first block`` are its two predicates.
* **chain**: call in order; ``kwargs[key]`` is the current value, and
  ``step(impl, current, returned)`` gives the next one (default: ``returned`` unless ``None``).
* **notify**: call all; an ``Exception`` is reported on stderr with the plugin name and stops
  nothing.

In every mode but notify, an exception from an implementation propagates unchanged and the rest
are not called (the loop turns it into the call's error result). Hook wrappers are refused when a
plugin loads (:mod:`pi_core._plugins.manager`), so they never reach these functions.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Generator, Mapping
from typing import Any

from pluggy import HookCaller, HookImpl

from pi_core._errors import PluginError

Kwargs = Mapping[str, Any]
Accept = Callable[[HookImpl, Any], bool]
Step = Callable[[HookImpl, Any, Any], Any]
Report = Callable[[HookImpl, str, Exception], None]

# A mode is a generator: it yields (implementation, its arguments), receives what the
# implementation returned (or has its exception thrown in) and returns the mode's result.
# ``_drive_sync`` and ``_drive_async`` run the same mode with and without awaiting.
_Mode = Generator[tuple[HookImpl, Kwargs], Any, Any]


def hook_impls(hook: HookCaller) -> list[HookImpl]:
    """The implementations of ``hook`` in call order (pluggy's: ``reversed(get_hookimpls())``)."""
    return list(reversed(hook.get_hookimpls()))


def impl_kwargs(impl: HookImpl, kwargs: Kwargs) -> dict[str, Any]:
    """The arguments ``impl`` names, taken from ``kwargs``; ``TypeError`` when one is missing."""
    try:
        return {name: kwargs[name] for name in impl.argnames}
    except KeyError as exc:
        raise TypeError(
            f"hook implementation of plugin {impl.plugin_name!r} needs argument {exc.args[0]!r}, "
            f"which the caller did not pass (passed: {', '.join(kwargs)})"
        ) from None


def _refuse_awaitable(impl: HookImpl, hook_name: str, value: Any) -> None:
    if inspect.iscoroutine(value):
        value.close()
    raise PluginError(
        f"plugin {impl.plugin_name!r} returned an awaitable from {hook_name}, which takes sync "
        "implementations only"
    )


def _drive_sync(hook_name: str, mode: _Mode) -> Any:
    try:
        impl, kwargs = next(mode)
        while True:
            try:
                value = impl.function(**impl_kwargs(impl, kwargs))
                if inspect.isawaitable(value):
                    _refuse_awaitable(impl, hook_name, value)
            except Exception as exc:
                impl, kwargs = mode.throw(exc)
            else:
                impl, kwargs = mode.send(value)
    except StopIteration as stop:
        return stop.value
    finally:
        mode.close()


async def _drive_async(mode: _Mode) -> Any:
    try:
        impl, kwargs = next(mode)
        while True:
            try:
                value = impl.function(**impl_kwargs(impl, kwargs))
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                impl, kwargs = mode.throw(exc)
            else:
                impl, kwargs = mode.send(value)
    except StopIteration as stop:
        return stop.value
    finally:
        mode.close()


# --- the modes --------------------------------------------------------------------------------


def _collect(hook: HookCaller, kwargs: Kwargs, extra: Callable[[HookImpl], Kwargs] | None) -> _Mode:
    results = []
    for impl in hook_impls(hook):
        value = yield impl, ({**kwargs, **extra(impl)} if extra else kwargs)
        if value is not None:
            results.append(value)
    return results


def _first(hook: HookCaller, kwargs: Kwargs, accept: Accept) -> _Mode:
    for impl in hook_impls(hook):
        value = yield impl, kwargs
        if accept(impl, value):
            return impl.plugin_name, value
    return None, None


def _default_step(impl: HookImpl, current: Any, returned: Any) -> Any:
    return current if returned is None else returned


def _chain(hook: HookCaller, kwargs: Kwargs, key: str, step: Step) -> _Mode:
    current = kwargs[key]
    for impl in hook_impls(hook):
        returned = yield impl, {**kwargs, key: current}
        current = step(impl, current, returned)
    return current


def report_to_stderr(impl: HookImpl, hook_name: str, exc: Exception) -> None:
    """notify's default report: ``pi: plugin 'NAME' failed in HOOK: Type: message`` on stderr."""
    print(
        f"pi: plugin {impl.plugin_name!r} failed in {hook_name}: {type(exc).__name__}: {exc}",
        file=sys.stderr,
    )


def _notify(hook: HookCaller, kwargs: Kwargs, report: Report) -> _Mode:
    for impl in hook_impls(hook):
        try:
            yield impl, kwargs
        except Exception as exc:
            report(impl, hook.name, exc)
    return None


def not_none(impl: HookImpl, value: Any) -> bool:
    """The ``first non-None`` predicate."""
    return value is not None


def blocks(impl: HookImpl, value: Any) -> bool:
    """The ``first block`` predicate: a result whose ``block`` is true (others count as None)."""
    return value is not None and bool(getattr(value, "block", False))


# --- sync variants (sync-only hooks) ----------------------------------------------------------


def call_collect(
    hook: HookCaller, kwargs: Kwargs, *, extra: Callable[[HookImpl], Kwargs] | None = None
) -> list[Any]:
    """collect: call every implementation; return the non-``None`` returns in call order.
    ``extra(impl)`` adds per-implementation arguments (e.g. a ``register`` bound to it)."""
    return _drive_sync(hook.name, _collect(hook, kwargs, extra))


def call_first(hook: HookCaller, kwargs: Kwargs, accept: Accept) -> tuple[str | None, Any]:
    """first: ``(plugin_name, value)`` of the first implementation whose value ``accept``s, or
    ``(None, None)``; later implementations are not called."""
    return _drive_sync(hook.name, _first(hook, kwargs, accept))


def call_first_non_none(hook: HookCaller, kwargs: Kwargs) -> Any:
    """first non-None: the first value that is not ``None``, or ``None``."""
    return call_first(hook, kwargs, not_none)[1]


def call_first_block(hook: HookCaller, kwargs: Kwargs) -> Any:
    """first block: the first result with ``block`` true, or ``None``."""
    return call_first(hook, kwargs, blocks)[1]


def call_chain(hook: HookCaller, kwargs: Kwargs, key: str, step: Step = _default_step) -> Any:
    """chain: each implementation gets ``kwargs[key]`` as left by the previous one; returns the
    last value (with the default ``step``, a ``None`` return leaves the value unchanged)."""
    return _drive_sync(hook.name, _chain(hook, kwargs, key, step))


def call_notify(hook: HookCaller, kwargs: Kwargs, report: Report = report_to_stderr) -> None:
    """notify: call every implementation; ``report(impl, hook_name, exc)`` each exception."""
    _drive_sync(hook.name, _notify(hook, kwargs, report))


# --- async variants (hooks that allow async def) ----------------------------------------------


async def acall_collect(
    hook: HookCaller, kwargs: Kwargs, *, extra: Callable[[HookImpl], Kwargs] | None = None
) -> list[Any]:
    """Async :func:`call_collect`: awaitable returns are awaited, one implementation at a time."""
    return await _drive_async(_collect(hook, kwargs, extra))


async def acall_first(hook: HookCaller, kwargs: Kwargs, accept: Accept) -> tuple[str | None, Any]:
    """Async :func:`call_first`."""
    return await _drive_async(_first(hook, kwargs, accept))


async def acall_first_non_none(hook: HookCaller, kwargs: Kwargs) -> Any:
    """Async :func:`call_first_non_none`."""
    return (await acall_first(hook, kwargs, not_none))[1]


async def acall_first_block(hook: HookCaller, kwargs: Kwargs) -> Any:
    """Async :func:`call_first_block`."""
    return (await acall_first(hook, kwargs, blocks))[1]


async def acall_chain(
    hook: HookCaller, kwargs: Kwargs, key: str, step: Step = _default_step
) -> Any:
    """Async :func:`call_chain`."""
    return await _drive_async(_chain(hook, kwargs, key, step))


async def acall_notify(hook: HookCaller, kwargs: Kwargs, report: Report = report_to_stderr) -> None:
    """Async :func:`call_notify`: ``trio.Cancelled`` (a ``BaseException``) still propagates."""
    await _drive_async(_notify(hook, kwargs, report))


__all__ = [
    "acall_chain",
    "acall_collect",
    "acall_first",
    "acall_first_block",
    "acall_first_non_none",
    "acall_notify",
    "blocks",
    "call_chain",
    "call_collect",
    "call_first",
    "call_first_block",
    "call_first_non_none",
    "call_notify",
    "hook_impls",
    "impl_kwargs",
    "not_none",
    "report_to_stderr",
]
