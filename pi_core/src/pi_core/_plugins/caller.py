"""pi's own hook caller: the call modes of :mod:`pi_core.hookspecs`.

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

Observation: every function takes ``observe``, called after each implementation call with a
:class:`HookCall` (hook, plugin, arguments, result or exception, duration). This is the one place
hook calls are traced (``PI_DEBUG_HOOKS=1`` / ``pi --trace-hooks``: :class:`StderrTracer`) and
recorded (``pi_core.testing.HookRecorder``).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from pluggy import HookCaller, HookImpl

from pi_core._errors import PluginError

Kwargs = Mapping[str, Any]
Accept = Callable[[HookImpl, Any], bool]
Step = Callable[[HookImpl, Any, Any], Any]
Report = Callable[[HookImpl, str, Exception], None]


@dataclass(frozen=True)
class HookCall:
    """One call of one hook implementation: ``hook`` (its name), ``plugin`` (the plugin's name),
    ``kwargs`` (the hook's arguments by name, as this implementation was offered them),
    ``result`` (what it returned, awaited; ``None`` when it raised), ``error`` (the exception it
    raised, else ``None``) and ``duration`` in seconds (including the await)."""

    hook: str
    plugin: str
    kwargs: Mapping[str, Any]
    result: Any = None
    error: BaseException | None = None
    duration: float = 0.0

    @property
    def raised(self) -> bool:
        """Whether the implementation raised."""
        return self.error is not None

    def result_kind(self) -> str:
        """A short description of the outcome: ``raised ValueError``, ``None``, ``list[3]``,
        ``dict[2]``, ``str[5]``, a dataclass as its name and the fields that are set
        (``BeforeToolCallResult(block,reason)``), anything else as its type name."""
        if self.error is not None:
            return f"raised {type(self.error).__name__}"
        return describe_result(self.result)

    def trace_line(self) -> str:
        """The ``PI_DEBUG_HOOKS`` line:
        ``pi: hook HOOK plugin=PLUGIN 0.12ms -> KIND`` (see :meth:`result_kind`)."""
        return (
            f"pi: hook {self.hook} plugin={self.plugin} {self.duration * 1000:.2f}ms "
            f"-> {self.result_kind()}"
        )


def describe_result(value: Any) -> str:
    """The result kind of :meth:`HookCall.result_kind` for a value that was returned."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list | tuple | dict | set | frozenset | str | bytes):
        return f"{type(value).__name__}[{len(value)}]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        set_fields = [
            f.name
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None and getattr(value, f.name) is not False
        ]
        return f"{type(value).__name__}({','.join(set_fields)})"
    return type(value).__name__


Observe = Callable[[HookCall], None]
"""Called with each :class:`HookCall` once the implementation returned or raised."""


class StderrTracer:
    """An observer that prints :meth:`HookCall.trace_line` for every implementation call to
    ``stream`` (default: ``sys.stderr`` at the time of the call), flushed."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream

    def __call__(self, call: HookCall) -> None:
        print(call.trace_line(), file=self.stream or sys.stderr, flush=True)


def _observed(
    observe: Observe | None,
    hook_name: str,
    impl: HookImpl,
    kwargs: Kwargs,
    started: float,
    result: Any = None,
    error: BaseException | None = None,
) -> None:
    if observe is not None:
        observe(
            HookCall(
                hook=hook_name,
                plugin=impl.plugin_name,
                kwargs=dict(kwargs),
                result=result,
                error=error,
                duration=time.perf_counter() - started,
            )
        )


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


def _drive_sync(hook_name: str, mode: _Mode, observe: Observe | None = None) -> Any:
    try:
        impl, kwargs = next(mode)
        while True:
            started = time.perf_counter()
            try:
                value = impl.function(**impl_kwargs(impl, kwargs))
                if inspect.isawaitable(value):
                    _refuse_awaitable(impl, hook_name, value)
            except Exception as exc:
                _observed(observe, hook_name, impl, kwargs, started, error=exc)
                impl, kwargs = mode.throw(exc)
            except BaseException as exc:
                _observed(observe, hook_name, impl, kwargs, started, error=exc)
                raise
            else:
                _observed(observe, hook_name, impl, kwargs, started, result=value)
                impl, kwargs = mode.send(value)
    except StopIteration as stop:
        return stop.value
    finally:
        mode.close()


async def _drive_async(hook_name: str, mode: _Mode, observe: Observe | None = None) -> Any:
    try:
        impl, kwargs = next(mode)
        while True:
            started = time.perf_counter()
            try:
                value = impl.function(**impl_kwargs(impl, kwargs))
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                _observed(observe, hook_name, impl, kwargs, started, error=exc)
                impl, kwargs = mode.throw(exc)
            except BaseException as exc:  # trio.Cancelled, KeyboardInterrupt: traced, re-raised
                _observed(observe, hook_name, impl, kwargs, started, error=exc)
                raise
            else:
                _observed(observe, hook_name, impl, kwargs, started, result=value)
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
    hook: HookCaller,
    kwargs: Kwargs,
    *,
    extra: Callable[[HookImpl], Kwargs] | None = None,
    observe: Observe | None = None,
) -> list[Any]:
    """collect: call every implementation; return the non-``None`` returns in call order.
    ``extra(impl)`` adds per-implementation arguments (e.g. a ``register`` bound to it)."""
    return _drive_sync(hook.name, _collect(hook, kwargs, extra), observe)


def call_first(
    hook: HookCaller, kwargs: Kwargs, accept: Accept, *, observe: Observe | None = None
) -> tuple[str | None, Any]:
    """first: ``(plugin_name, value)`` of the first implementation whose value ``accept``s, or
    ``(None, None)``; later implementations are not called."""
    return _drive_sync(hook.name, _first(hook, kwargs, accept), observe)


def call_first_non_none(hook: HookCaller, kwargs: Kwargs, *, observe: Observe | None = None) -> Any:
    """first non-None: the first value that is not ``None``, or ``None``."""
    return call_first(hook, kwargs, not_none, observe=observe)[1]


def call_first_block(hook: HookCaller, kwargs: Kwargs, *, observe: Observe | None = None) -> Any:
    """first block: the first result with ``block`` true, or ``None``."""
    return call_first(hook, kwargs, blocks, observe=observe)[1]


def call_chain(
    hook: HookCaller,
    kwargs: Kwargs,
    key: str,
    step: Step = _default_step,
    *,
    observe: Observe | None = None,
) -> Any:
    """chain: each implementation gets ``kwargs[key]`` as left by the previous one; returns the
    last value (with the default ``step``, a ``None`` return leaves the value unchanged)."""
    return _drive_sync(hook.name, _chain(hook, kwargs, key, step), observe)


def call_notify(
    hook: HookCaller,
    kwargs: Kwargs,
    report: Report = report_to_stderr,
    *,
    observe: Observe | None = None,
) -> None:
    """notify: call every implementation; ``report(impl, hook_name, exc)`` each exception."""
    _drive_sync(hook.name, _notify(hook, kwargs, report), observe)


# --- async variants (hooks that allow async def) ----------------------------------------------


async def acall_collect(
    hook: HookCaller,
    kwargs: Kwargs,
    *,
    extra: Callable[[HookImpl], Kwargs] | None = None,
    observe: Observe | None = None,
) -> list[Any]:
    """Async :func:`call_collect`: awaitable returns are awaited, one implementation at a time."""
    return await _drive_async(hook.name, _collect(hook, kwargs, extra), observe)


async def acall_first(
    hook: HookCaller, kwargs: Kwargs, accept: Accept, *, observe: Observe | None = None
) -> tuple[str | None, Any]:
    """Async :func:`call_first`."""
    if not hook.get_hookimpls():  # what the mode returns without implementations, at once
        return None, None
    return await _drive_async(hook.name, _first(hook, kwargs, accept), observe)


async def acall_first_non_none(
    hook: HookCaller, kwargs: Kwargs, *, observe: Observe | None = None
) -> Any:
    """Async :func:`call_first_non_none`."""
    return (await acall_first(hook, kwargs, not_none, observe=observe))[1]


async def acall_first_block(
    hook: HookCaller, kwargs: Kwargs, *, observe: Observe | None = None
) -> Any:
    """Async :func:`call_first_block`."""
    return (await acall_first(hook, kwargs, blocks, observe=observe))[1]


async def acall_chain(
    hook: HookCaller,
    kwargs: Kwargs,
    key: str,
    step: Step = _default_step,
    *,
    observe: Observe | None = None,
) -> Any:
    """Async :func:`call_chain`."""
    if not hook.get_hookimpls():  # what the mode returns without implementations, at once
        return kwargs[key]
    return await _drive_async(hook.name, _chain(hook, kwargs, key, step), observe)


async def acall_notify(
    hook: HookCaller,
    kwargs: Kwargs,
    report: Report = report_to_stderr,
    *,
    observe: Observe | None = None,
) -> None:
    """Async :func:`call_notify`: ``trio.Cancelled`` (a ``BaseException``) still propagates."""
    if not hook.get_hookimpls():  # nothing to notify (the common case: a per-event hook)
        return
    await _drive_async(hook.name, _notify(hook, kwargs, report), observe)


__all__ = [
    "HookCall",
    "Observe",
    "StderrTracer",
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
    "describe_result",
    "hook_impls",
    "impl_kwargs",
    "not_none",
    "report_to_stderr",
]
