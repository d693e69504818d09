"""A griffe extension of the documentation build (``mkdocs.yml``: mkdocstrings' ``extensions``):
the Sphinx roles of pi's docstrings (``:class:`~pi_core._errors.PluginError```, ``:func:`run_pi```,
``:data:`HOOK_CALL_MODES```...) become cross-references instead of raw text.

Each role is resolved in the scope of the object whose docstring holds it (a short name through
the module's imports, as Sphinx would), and an object a public door re-exports
(``pi_core._errors.PluginError`` is ``pi_core.PluginError``) is linked where the API page shows
it. The reference is an optional autoref: mkdocs-autorefs links it when the page set documents
the object, and leaves the name as code otherwise (a standard-library or private object), so a
reference never breaks ``mkdocs build --strict``. Sphinx's rendering is kept: ``~`` shows only the
last part of the name, functions and methods get ``()``.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?P<role>class|func|meth|mod|data|attr|exc|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`"
)
"""A Sphinx role of the Python domain: ``:class:`~a.b.C```."""

DOORS = ("pi_core", "pi_core.backends", "pi_core.providers", "pi_core.testing", "pi_core.hookspecs")
"""The public modules: an object they re-export is documented under their name."""

CALLED = ("func", "meth")
"""Roles shown with ``()``, as Sphinx shows them."""


def _public_names(pkg: griffe.Module) -> dict[str, str]:
    """Canonical path → the public path a door exports it under."""
    public: dict[str, str] = {}
    for door_path in DOORS:
        try:
            door = pkg if door_path == pkg.path else pkg.get_member(door_path.partition(".")[2])
        except (KeyError, ValueError):
            continue
        for name, member in door.members.items():
            if member.is_alias and not name.startswith("_"):
                public.setdefault(member.target_path, f"{door.path}.{name}")
    return public


def _resolve(scope: griffe.Object, target: str) -> str:
    """The full path ``target`` names in ``scope`` (a module, class, function or attribute),
    ``target`` itself when griffe cannot resolve it."""
    head, _, rest = target.partition(".")
    for where in (scope, *_parents(scope)):
        try:
            resolved = where.resolve(head)
        except (griffe.NameResolutionError, AttributeError, KeyError, ValueError):
            continue
        return f"{resolved}.{rest}" if rest else resolved
    return target


def _parents(obj: griffe.Object) -> list[griffe.Object]:
    parents = []
    parent = obj.parent
    while parent is not None:
        parents.append(parent)
        parent = parent.parent
    return parents


def _canonical(path: str, scope: griffe.Object) -> str:
    """The path of the object ``path`` names, through aliases (a name a module re-exports)."""
    try:
        obj = scope.modules_collection.get_member(path)
        return obj.final_target.path if obj.is_alias else obj.path
    except Exception:  # not loaded, or an alias that does not resolve: keep the name
        return path


def _public(path: str, public: dict[str, str]) -> str:
    """``path`` under the public name of its longest re-exported prefix."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in public:
            return ".".join([public[prefix], *parts[end:]])
    return path


def convert(text: str, scope: griffe.Object, public: dict[str, str]) -> str:
    """``text`` with each Sphinx role replaced by an optional autoref."""

    def replace(match: re.Match[str]) -> str:
        target = match["target"].strip()
        if target.startswith("."):  # Sphinx's "search from the current module" form
            target = target[1:]
        title = target.rsplit(".", 1)[-1] if match["tilde"] else target
        if match["role"] in CALLED:
            title += "()"
        identifier = _public(_canonical(_resolve(scope, target), scope), public)
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(replace, text)


def _walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring of a loaded package (see the module)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        public = _public_names(pkg)
        for obj in _walk(pkg):
            if obj.docstring is not None and ":`" in obj.docstring.value:
                obj.docstring.value = convert(obj.docstring.value, obj, public)
