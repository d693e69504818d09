"""Plugin loading and listing.

A plugin is a module (or any object) holding ``@hookimpl`` functions. Installed plugins declare
``[project.entry-points.pi] NAME = "package.module"``; the entry-point name is the plugin's name
everywhere (``--no-plugin NAME``, ``PI_PLUGINS``, ``pi plugins``). The built-ins
(``builtin_tools``, ``sandbox``) load through the same door.

There is no module-global manager and importing this module does nothing: every manager comes
from :func:`make_plugin_manager`. Loading is validated up front, so a broken plugin fails when it
loads, with one :class:`~pi_core._errors.PluginError` naming the plugin, never later in the middle
of a tool call:

* a plugin that fails to import (the message names the plugin, its distribution and the error);
* an implementation of a hook that does not exist (a misspelling: ``did you mean ...?``);
* an implementation taking an argument the hook does not have;
* an ``async def`` implementation of a hook that takes sync implementations only
  (:data:`~pi_core.hookspecs.HOOK_CALL_MODES`);
* a hook wrapper (``wrapper=True`` / ``hookwrapper=True``): pi's own caller
  (:mod:`pi_core._plugins.caller`) calls implementations one by one and awaits them, which pluggy's
  wrappers cannot follow, so they are refused rather than silently skipped.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import IO, Any

import pluggy

import pi_core._entry_scan as entry_scan
import pi_core.hookspecs as hookspecs
from pi_core._errors import PluginError
from pi_core._plugins.caller import Observe, StderrTracer
from pi_core._plugins.markers import PROJECT_NAME

ENTRY_POINT_GROUP = PROJECT_NAME
"""The entry-point group installed plugins declare: ``[project.entry-points.pi]``."""

ENV_DISABLE_AUTOLOAD = "PI_DISABLE_PLUGIN_AUTOLOAD"
"""Any non-empty value switches entry-point autoloading off (like ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``)."""

ENV_DISABLE_THIRD_PARTY_AUTOLOAD = "PI_DISABLE_THIRD_PARTY_AUTOLOAD"
"""Any non-empty value: autoloading loads only the plugins of pi's own distributions
(:data:`PI_DISTRIBUTIONS`); other installed plugins load only when named (``-p NAME``,
``PI_PLUGINS``). pi's own test suite sets it, so installed third-party plugins change nothing
it checks."""

ENV_ALLOW = "PI_PLUGINS"
"""Comma-separated entry-point names: the only installed plugins that load."""

ENV_BLOCK = "PI_DISABLED_PLUGINS"
"""Comma-separated plugin names that never load (like ``--no-plugin NAME``)."""

ENV_DEBUG_HOOKS = "PI_DEBUG_HOOKS"
"""A value other than empty or ``0`` prints every hook implementation call to stderr (like
``pi --trace-hooks``): ``pi: hook HOOK plugin=NAME 0.12ms -> KIND``."""


@dataclass(frozen=True)
class PluginOrigin:
    """Where a loaded plugin came from: its ``distribution`` name and ``version`` (``None`` for
    a plugin that was not installed through an entry point) and its ``module`` path."""

    distribution: str | None = None
    version: str | None = None
    module: str | None = None

    def describe(self, name: str) -> str:
        """``plugin 'NAME'``, followed by `` (distribution DIST VERSION)`` when installed."""
        if self.distribution is None:
            return f"plugin {name!r}"
        return f"plugin {name!r} (distribution {self.distribution} {self.version})"


@dataclass(frozen=True)
class PluginInfo:
    """One line of ``pi plugins``: ``name`` (the entry-point name, or the module path of a
    ``-p`` plugin), ``distribution``, ``version``, ``module`` and ``hooks`` (sorted names of the
    hooks it implements; ``[]`` when none)."""

    name: str
    distribution: str | None
    version: str | None
    module: str | None
    hooks: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"name", "distribution", "version", "module", "hooks"}`` for ``pi plugins --json``."""
        return asdict(self)


class PiPluginManager(pluggy.PluginManager):
    """A pluggy manager for project ``pi`` with the specs of :mod:`pi_core.hookspecs` added.

    :meth:`register` validates each plugin as it registers (see the module docstring) and
    raises :class:`~pi_core._errors.PluginError`, leaving the manager as it was. ``origins`` maps
    plugin names to their :class:`PluginOrigin` (for :func:`list_plugins`).
    """

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.origins: dict[str, PluginOrigin] = {}
        self.hook_observers: list[Observe] = []
        """Called with every hook implementation call
        (:class:`~pi_core._plugins.caller.HookCall`) that :class:`~pi_core.PluginHooks` makes
        on this manager: the ``PI_DEBUG_HOOKS`` tracer, ``pi_core.testing``'s recorder."""

    def trace_hooks(self, stream: IO[str] | None = None) -> None:
        """Print one line per hook implementation call to ``stream`` (default: stderr)."""
        self.hook_observers.append(StderrTracer(stream))

    def describe(self, name: str) -> str:
        """``plugin 'NAME'`` plus its distribution when it is known (for error messages)."""
        return self.origins.get(name, PluginOrigin()).describe(name)

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register and validate ``plugin``; return its name (``None`` when the name is blocked).

        Raises :class:`~pi_core._errors.PluginError` when the plugin is already registered, when
        its name is taken, or when one of its implementations is invalid; the manager is then
        unchanged.
        """
        plugin_name = name or self.get_canonical_name(plugin)
        try:
            registered = super().register(plugin, name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(_validation_message(self.describe(plugin_name), exc)) from exc
        except ValueError as exc:
            raise PluginError(
                f"{self.describe(plugin_name)} cannot be registered: " + str(exc).split("\n", 1)[0]
            ) from exc
        if registered is None:
            return None
        try:
            _validate_plugin(self, plugin, registered)
        except PluginError:
            self.unregister(plugin)
            raise
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        """Unregister a plugin by object or name (pluggy's semantics); forgets its origin."""
        if name is None and plugin is not None:
            name = self.get_name(plugin)
        removed = super().unregister(plugin, name)
        if name is not None:
            self.origins.pop(name, None)
        return removed


def _validation_message(described: str, exc: pluggy.PluginValidationError) -> str:
    """pluggy's multi-line validation message as one line: the plugin, the hook, the problem."""
    text = str(exc)
    hook = re.search(r"hook '(\w+)'", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    detail = lines[-1] if lines else "invalid hook implementation"
    where = f" of {hook.group(1)}" if hook else ""
    return f"{described} has an invalid implementation{where}: {detail}"


def _is_async(function: Callable[..., Any]) -> bool:
    """True for ``async def`` functions and async generators (also behind decorators)."""
    function = inspect.unwrap(function)
    call = function if inspect.isroutine(function) else getattr(function, "__call__", function)  # noqa: B004
    return inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)


def _validate_plugin(pm: PiPluginManager, plugin: object, name: str) -> None:
    """Check every implementation of a just-registered plugin (unknown hooks, hook wrappers,
    async implementations of sync-only hooks)."""
    for hook in pm.get_hookcallers(plugin) or []:
        for impl in hook.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if not hook.has_spec():
                if impl.optionalhook:
                    continue
                raise PluginError(_unknown_hook_message(pm.describe(name), hook.name))
            if impl.wrapper or impl.hookwrapper:
                raise PluginError(
                    f"{pm.describe(name)} implements {hook.name} as a hook wrapper; pi calls hooks "
                    "through its own caller and does not support hook wrappers"
                )
            mode = hookspecs.HOOK_CALL_MODES.get(hook.name)
            if mode is not None and not mode[1] and _is_async(impl.function):
                raise PluginError(
                    f"{pm.describe(name)} implements {hook.name} with async def, but {hook.name} "
                    "takes sync implementations only"
                )


def _unknown_hook_message(described: str, hook_name: str) -> str:
    import difflib  # only for an error message (start-up)

    known = sorted(hookspecs.HOOK_CALL_MODES)
    message = f"{described} implements unknown hook {hook_name!r}"
    close = difflib.get_close_matches(hook_name, known, n=1)
    if close:
        message += f" (did you mean {close[0]!r}?)"
    return message


def check_pending(pm: pluggy.PluginManager) -> None:
    """pluggy's ``check_pending`` with a :class:`~pi_core._errors.PluginError` naming the
    plugin and the unknown hook."""
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin) or repr(exc.plugin)
        described = pm.describe(name) if isinstance(pm, PiPluginManager) else f"plugin {name!r}"
        for hook_name in vars(pm.hook):
            hook = getattr(pm.hook, hook_name)
            if hook_name.startswith("_") or hook.has_spec():
                continue
            if any(impl.plugin is exc.plugin for impl in hook.get_hookimpls()):
                raise PluginError(_unknown_hook_message(described, hook_name)) from exc
        raise PluginError(f"{described}: {exc}") from exc


def unknown_plugin(where: str, name: str, available: Iterable[str]) -> str:
    """``WHERE: no plugin named 'NAME' (did you mean 'CLOSE'?)``, or ``(installed: a, b)``
    when no installed name is close."""
    import difflib  # only for an error message (start-up)

    installed = list(available)
    close = difflib.get_close_matches(name, installed, n=1)
    hint = (
        f"did you mean {close[0]!r}?" if close else f"installed: {', '.join(installed) or 'none'}"
    )
    return f"{where}: no plugin named {name!r} ({hint})"


def _names(value: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """Installed ``pi`` entry points by name, sorted by name (the first of duplicates wins)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in installed_entry_points():
        found.setdefault(ep.name, ep)
    return dict(sorted(found.items()))


def installed_entry_points() -> list[importlib.metadata.EntryPoint]:
    """``importlib.metadata.entry_points(group="pi")``: the same entry points, in the same
    order, each with its ``dist``.

    ``importlib.metadata`` builds a distribution object and reads ``entry_points.txt`` through
    ``pathlib`` for every installed distribution (80 of them in pi's own environment), which was
    a tenth of ``pi``'s start-up. :func:`~pi_core._entry_scan.scan_entry_points` finds
    the distributions the same way with plain ``os`` calls (the scan made before pi's first
    model is built, when ``sys.path`` is unchanged since) and hands only the ones whose
    ``entry_points.txt`` has a ``[pi]`` section to ``importlib.metadata``; where its rules could
    differ it gives up and ``importlib.metadata`` does the whole search."""
    scanned = entry_scan.take_scanned(ENTRY_POINT_GROUP)
    if scanned is None:
        scanned = _scan_entry_points()
    if scanned is not None:
        return scanned
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _scan_entry_points() -> list[importlib.metadata.EntryPoint] | None:
    """A new scan of the ``pi`` group (:func:`~pi_core._entry_scan.scan_entry_points`)."""
    scanned = entry_scan.scan_entry_points((ENTRY_POINT_GROUP,))
    return None if scanned is None else scanned[ENTRY_POINT_GROUP]


class _EntryPointOrigin(PluginOrigin):
    """The :class:`PluginOrigin` of a plugin loaded through an entry point. Its
    ``distribution`` and ``version`` are read from the installed metadata when first asked for
    (``pi plugins``, an error message naming the plugin), not when the plugin loads: parsing a
    distribution's ``METADATA`` (the ``email`` parser) was a noticeable part of start-up."""

    _entry_point: importlib.metadata.EntryPoint

    def __init__(self, ep: importlib.metadata.EntryPoint) -> None:
        object.__setattr__(self, "module", ep.value)
        object.__setattr__(self, "_entry_point", ep)

    @property
    def distribution(self) -> str | None:
        return self._metadata()[0]

    @property
    def version(self) -> str | None:
        return self._metadata()[1]

    def _metadata(self) -> tuple[str | None, str | None]:
        found: tuple[str | None, str | None] | None = self.__dict__.get("_found")
        if found is None:
            dist = self._entry_point.dist
            found = (dist.name, dist.version) if dist is not None else (None, None)
            object.__setattr__(self, "_found", found)
        return found


def disable_hint(name: str, *, uninstall: bool = True) -> str:
    """The ways out of a broken installed plugin ``name``, appended to its load error:
    ``disable it with --no-plugin NAME or PI_DISABLED_PLUGINS=NAME, or uninstall it with pi
    plugins uninstall NAME`` (without the last part when not ``uninstall``)."""
    hint = f"disable it with --no-plugin {name} or {ENV_BLOCK}={name}"
    return f"{hint}, or uninstall it with pi plugins uninstall {name}" if uninstall else hint


def _load_entry_point(pm: PiPluginManager, ep: importlib.metadata.EntryPoint) -> None:
    origin = _EntryPointOrigin(ep)
    try:
        plugin = ep.load()
    except Exception as exc:
        raise PluginError(
            f"{origin.describe(ep.name)} failed to load: {type(exc).__name__}: {exc}; "
            f"{disable_hint(ep.name)}"
        ) from exc
    if pm.is_registered(plugin):
        return
    pm.origins[ep.name] = origin
    try:
        pm.register(plugin, name=ep.name)
    except PluginError as exc:
        pm.origins.pop(ep.name, None)
        raise PluginError(f"{exc}; {disable_hint(ep.name)}") from exc


def _load_module(pm: PiPluginManager, module_path: str) -> None:
    try:
        module = importlib.import_module(module_path)
    except Exception as exc:
        raise PluginError(
            f"plugin {module_path!r} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if pm.is_registered(module):
        return
    pm.origins[module_path] = PluginOrigin(module=module.__name__)
    try:
        pm.register(module, name=module_path)
    except PluginError:
        pm.origins.pop(module_path, None)
        raise


def make_plugin_manager(
    autoload: bool = True,
    block: Iterable[str] = (),
    plugins: Iterable[str] = (),
    *,
    third_party_autoload: bool | None = None,
    trace_hooks: bool = False,
    trace_stream: IO[str] | None = None,
) -> PiPluginManager:
    """A new plugin manager with pi's hookspecs and the plugins this environment asks for.

    * Installed plugins (entry-point group ``pi``) load in name order when ``autoload`` is true
      and ``PI_DISABLE_PLUGIN_AUTOLOAD`` is unset or empty; ``PI_PLUGINS=a,b`` limits them to
      those names (an unknown name there is an error).
    * ``plugins``: plugins named explicitly (the CLI's ``-p NAME``, like pytest's ``-p``), loaded
      after the autoloaded ones, in the given order, even with autoload off. A name is an
      entry-point name or else a module import path (registered under that path).
      With autoload off, the names in ``PI_PLUGINS`` are explicit names too.
    * ``third_party_autoload`` false (``pi_core.testing.run_pi``; ``None``: false when
      ``PI_DISABLE_THIRD_PARTY_AUTOLOAD`` is set and not empty): autoloading loads only the
      plugins of pi's own distributions (:data:`PI_DISTRIBUTIONS`: ``builtin_tools``, ``mcp``,
      ``sandbox``); another installed plugin loads only when named (``plugins``,
      ``PI_PLUGINS``), so a test sees the same plugins whatever else the environment holds.
    * ``block`` (the CLI's ``--no-plugin NAME``) and ``PI_DISABLED_PLUGINS=a,b`` block names:
      a blocked plugin never loads, whatever else names it. A blocked name must be one pi knows
      (an installed entry point, a core plugin, a name in ``plugins`` or ``PI_PLUGINS``): a
      misspelt one is an error, ``--no-plugin sandbx: no plugin named 'sandbx' (did you mean
      'sandbox'?)`` (the closest installed name, else the list of installed ones).
    * ``trace_hooks`` (the CLI's ``--trace-hooks``) or ``PI_DEBUG_HOOKS=1``: every hook
      implementation call is printed to ``trace_stream`` (default: stderr), one line each
      (:meth:`PiPluginManager.trace_hooks`).

    Then :func:`check_pending` runs. Raises :class:`~pi_core._errors.PluginError` naming the
    plugin (and its distribution) for a plugin that fails to import, implements an unknown hook
    or an invalid implementation, or for an unknown name in ``PI_PLUGINS``, ``plugins``,
    ``block`` or ``PI_DISABLED_PLUGINS``.
    Environment variables are read when this is called, never at import.
    """
    pm = PiPluginManager()
    if trace_hooks or os.environ.get(ENV_DEBUG_HOOKS, "") not in ("", "0"):
        pm.trace_hooks(trace_stream)
    _register_internal_plugins(pm)
    block = list(block)
    plugins = list(plugins)
    env_block = _names(os.environ.get(ENV_BLOCK))
    blocked = {*block, *env_block}
    autoload = autoload and not os.environ.get(ENV_DISABLE_AUTOLOAD)
    if third_party_autoload is None:
        third_party_autoload = not os.environ.get(ENV_DISABLE_THIRD_PARTY_AUTOLOAD)
    allow = _names(os.environ.get(ENV_ALLOW))
    available = _entry_points()

    known = {*available, *INTERNAL_PLUGINS, *plugins, *allow}
    for source, names in ((None, block), (ENV_BLOCK, env_block)):
        for name in names:
            if name not in known:
                where = source or f"--no-plugin {name}"
                raise PluginError(unknown_plugin(where, name, available))
    for name in allow:
        if name not in available and name not in blocked:
            raise PluginError(unknown_plugin(ENV_ALLOW, name, available))
    for name in sorted(blocked):
        pm.set_blocked(name)

    if autoload:
        for name, ep in available.items():
            if allow and name not in allow:
                continue
            if not third_party_autoload and not _is_pi_distribution(ep):
                continue
            if not pm.is_blocked(name) and not pm.has_plugin(name):
                _load_entry_point(pm, ep)

    explicit = list(plugins) if autoload and third_party_autoload else [*allow, *plugins]
    for name in explicit:
        if pm.is_blocked(name) or pm.has_plugin(name):
            continue
        if name in available:
            _load_entry_point(pm, available[name])
        else:
            _load_module(pm, name)

    check_pending(pm)
    return pm


PI_DISTRIBUTIONS = ("pi-tool-core", "pi-builtin-tools", "pi-sandbox-plugin")
"""pi's own distributions: ``pi --version`` names them, ``pi plugins uninstall`` keeps them, and
without third-party autoloading only their plugins autoload."""


_PI_NORMALIZED = frozenset(entry_scan.normalize(name) for name in PI_DISTRIBUTIONS)


def _is_pi_distribution(ep: importlib.metadata.EntryPoint) -> bool:
    """Whether ``ep`` belongs to one of :data:`PI_DISTRIBUTIONS`, told by the normalised name
    of its ``.dist-info`` folder (importlib's own ``_normalized_name``): reading the metadata's
    ``Name`` would import the ``email`` parser at start-up."""
    if ep.dist is None:
        return False
    name = getattr(ep.dist, "_normalized_name", None) or ep.dist.name
    return entry_scan.normalize(name) in _PI_NORMALIZED


def installed_plugins() -> list[tuple[str, str | None, str | None]]:
    """``(name, distribution, version)`` of each installed plugin (entry point of group
    ``pi``), sorted by name, read from the metadata without importing any plugin."""
    return [
        (name, ep.dist.name, ep.dist.version) if ep.dist is not None else (name, None, None)
        for name, ep in _entry_points().items()
    ]


def version_lines() -> list[str]:
    """What ``pi --version`` prints: ``DISTRIBUTION VERSION`` for each of pi's distributions
    (``not installed`` when missing), then ``plugin NAME: DISTRIBUTION VERSION`` for each
    installed plugin (nothing imported)."""
    lines = []
    for own in PI_DISTRIBUTIONS:
        try:
            lines.append(f"{own} {importlib.metadata.version(own)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{own} not installed")
    for name, dist, version in installed_plugins():
        lines.append(f"plugin {name}: {dist or '?'} {version or '?'}")
    return lines


INTERNAL_PLUGINS: dict[str, str] = {"builtin_providers": "pi_core._plugins.builtin_providers"}
"""The core's own plugins (name → module), registered first by every manager and, like
pytest's internal plugins, not listed by :func:`list_plugins`: the core's model providers."""


def _register_internal_plugins(pm: PiPluginManager) -> None:
    for name, module in INTERNAL_PLUGINS.items():
        pm.register(importlib.import_module(module), name=name)


def list_plugins(pm: pluggy.PluginManager) -> list[PluginInfo]:
    """Every plugin registered on ``pm``, in registration order (the last one is called first),
    without the core's internal plugins (:data:`INTERNAL_PLUGINS`).

    ``hooks`` are the sorted names of the hooks each implements (``[]`` for none). Works for any
    pluggy manager; distributions are known for plugins loaded by :func:`make_plugin_manager`.
    """
    origins = pm.origins if isinstance(pm, PiPluginManager) else {}
    infos = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None or name in INTERNAL_PLUGINS:  # a blocked name, or the core's own
            continue
        origin = origins.get(name) or PluginOrigin(module=_module_of(plugin))
        hooks = sorted({hook.name for hook in pm.get_hookcallers(plugin) or []})
        infos.append(
            PluginInfo(
                name=name,
                distribution=origin.distribution,
                version=origin.version,
                module=origin.module,
                hooks=hooks,
            )
        )
    return infos


def _module_of(plugin: object) -> str | None:
    if isinstance(plugin, ModuleType):
        return plugin.__name__
    return getattr(type(plugin), "__module__", None)


__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_ALLOW",
    "ENV_BLOCK",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_DISABLE_THIRD_PARTY_AUTOLOAD",
    "PI_DISTRIBUTIONS",
    "PiPluginManager",
    "PluginInfo",
    "PluginOrigin",
    "check_pending",
    "disable_hint",
    "installed_plugins",
    "list_plugins",
    "make_plugin_manager",
    "unknown_plugin",
    "version_lines",
]
