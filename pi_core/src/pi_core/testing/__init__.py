"""pytest plugin for plugin authors, active once ``pi-tool-core`` is installed
(entry point ``pytest11: pi_core``).

Fixtures:

* ``plugin_manager``: a fresh :class:`~pi_core._plugins.manager.PiPluginManager` per test, hookspecs
  added, no plugin loaded (entry points and ``PI_*`` variables are ignored).
* ``register_plugin(obj, name=None) -> str``: registers a module or object on that manager
  (validated like an installed plugin: a bad hook raises
  :class:`~pi_core._errors.PluginError`) and unregisters it when the test ends, pass or fail.
* ``pi_hooks``: the :class:`~pi_core.PluginHooks` of ``plugin_manager``.
* ``hook_recorder``: a :class:`HookRecorder` attached to ``plugin_manager``: every hook
  implementation call that pi makes on it (through :class:`~pi_core.PluginHooks`, hence
  ``build_session``, sessions and agents), in order, with arguments and results.

Functions:

* :func:`run_pi` ``(argv, *, plugins=(), environment_plugins=False) -> exit status``: the
  ``pi`` command run in this process (its output goes to ``sys.stdout``/``sys.stderr``, so
  ``capsys`` sees it), with pi's own plugins and the ones the test names, never another plugin
  installed in the environment unless ``environment_plugins=True``.

Example::

    from pi_core import hookimpl

    class Policy:
        @hookimpl
        def pi_before_tool_call(self, context):
            return None

    def test_policy_is_registered(plugin_manager, register_plugin):
        register_plugin(Policy(), name="policy")
        assert plugin_manager.has_plugin("policy")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pi_core._plugins.caller import HookCall

if TYPE_CHECKING:
    # Imported in the fixtures: this module loads in every pytest run of the environment.
    from pi_core._plugins.facade import PluginHooks
    from pi_core._plugins.manager import PiPluginManager

__all__ = [
    "HookCall",
    "HookRecorder",
    "RegisterPlugin",
    "hook_recorder",
    "pi_hooks",
    "plugin_manager",
    "register_plugin",
    "run_pi",
]

RegisterPlugin = Callable[..., str]
"""``register_plugin(obj, name=None) -> name``."""


@pytest.fixture
def plugin_manager() -> PiPluginManager:
    """A fresh plugin manager with pi's hookspecs and no plugins."""
    from pi_core._plugins.manager import PiPluginManager

    return PiPluginManager()


@pytest.fixture
def register_plugin(plugin_manager: PiPluginManager) -> Iterator[RegisterPlugin]:
    """``register_plugin(obj, name=None)`` registers ``obj`` on ``plugin_manager`` and returns
    its name; everything it registered is unregistered at teardown."""
    registered: list[object] = []

    def register(obj: object, name: str | None = None) -> str:
        plugin_name = plugin_manager.register(obj, name=name)
        if plugin_name is None:
            raise ValueError(f"plugin name {name!r} is blocked on this manager")
        registered.append(obj)
        return plugin_name

    try:
        yield register
    finally:
        for obj in reversed(registered):
            if plugin_manager.is_registered(obj):
                plugin_manager.unregister(obj)


@pytest.fixture
def pi_hooks(plugin_manager: PiPluginManager) -> PluginHooks:
    """The typed hooks of ``plugin_manager``."""
    from pi_core._plugins.facade import PluginHooks

    return PluginHooks(plugin_manager)


class HookRecorder:
    """Records hook implementation calls, like pytest's ``HookRecorder`` (pytester).

    Attach it to a plugin manager (:meth:`attach`, or use the ``hook_recorder`` fixture) and
    every call of a hook implementation that pi makes on that manager is kept as a
    :class:`HookCall` (``hook``, ``plugin``, ``kwargs``, ``result``, ``error``, ``duration``),
    in call order. A hook without implementations is not called, so it leaves no record.
    """

    def __init__(self) -> None:
        self._calls: list[HookCall] = []
        self._attached: list[Any] = []

    def __call__(self, call: HookCall) -> None:
        self._calls.append(call)

    def attach(self, pm: Any) -> HookRecorder:
        """Start recording the calls made on ``pm`` (a ``PiPluginManager``)."""
        pm.hook_observers.append(self)
        self._attached.append(pm)
        return self

    def detach(self) -> None:
        """Stop recording (the calls recorded so far stay)."""
        for pm in self._attached:
            if self in pm.hook_observers:
                pm.hook_observers.remove(self)
        self._attached.clear()

    def calls(self, *names: str) -> list[HookCall]:
        """The recorded calls in order; only those of the hooks ``names`` when given."""
        return [c for c in self._calls if not names or c.hook in names]

    def names(self) -> list[str]:
        """The hook name of each recorded call, in order (a hook appears once per
        implementation that ran)."""
        return [c.hook for c in self._calls]

    def results(self, name: str) -> list[Any]:
        """What each implementation of hook ``name`` returned, in call order."""
        return [c.result for c in self._calls if c.hook == name]

    def clear(self) -> None:
        """Forget the recorded calls."""
        self._calls.clear()


@pytest.fixture
def hook_recorder(plugin_manager: PiPluginManager) -> Iterator[HookRecorder]:
    """A :class:`HookRecorder` attached to ``plugin_manager`` for the test."""
    recorder = HookRecorder().attach(plugin_manager)
    try:
        yield recorder
    finally:
        recorder.detach()


def run_pi(
    argv: list[str], *, plugins: Iterable[str] = (), environment_plugins: bool = False
) -> int:
    """Run the ``pi`` command with ``argv`` (the words after ``pi``) in this process and return
    its exit status: 0 success, 1 an error result or a denial, 2 unusable input. Its output
    goes to ``sys.stdout``/``sys.stderr`` (``capsys`` sees it).

    The plugins are the test's, not the environment's: pi's own (``builtin_tools``, ``mcp``,
    ``sandbox``, when installed) and those the test names, with ``plugins=["NAME"]`` or
    ``-p NAME`` in ``argv`` (an entry-point name or a module path), load; another plugin
    installed in the environment does not. ``environment_plugins=True`` loads every installed
    plugin, as the ``pi`` command does. ``PI_PLUGINS``, ``PI_DISABLED_PLUGINS``,
    ``PI_DISABLE_PLUGIN_AUTOLOAD`` and ``--no-plugin`` apply as usual."""
    from pi_core._cli import run

    named = [word for name in plugins for word in ("-p", name)]
    return run([*named, *argv], third_party_autoload=environment_plugins)
