"""A package's lazy public door: its public names imported on first use, and the modules it moved
still importable under their old dotted names (:func:`lazy_door`)."""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The last finder on ``sys.meta_path``: an old dotted name → the module at its new name.

    Last, so a real module always wins and other imports never reach it. The loader hands the
    import system the module object already imported under the new name (one module, two names
    in ``sys.modules``); the import system sets ``__spec__`` on it, and :meth:`exec_module`
    gives the module its own spec back."""

    def __init__(self) -> None:
        self.moved: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.moved[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__
        assert alias is not None  # set by the import system before it calls exec_module
        module.__spec__ = alias.loader_state


_MOVED = _MovedModules()


def lazy_door(
    package: str, names: Mapping[str, str], moved: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``'s ``__init__`` (PEP 562): each public
    name of ``names`` (name → the module that defines it, relative to ``package``) is imported at
    its first access, so importing the package imports none of them.

    ``moved`` (old module → new module, both relative to ``package``) keeps the paths of modules
    that moved inside the package working: ``import package.OLD`` (or ``from package.OLD import
    x``) imports ``package.NEW`` and binds that same module object under the old name too; until
    then nothing is imported. Only modules, not packages, can be moved this way, and a module
    that exists at the old path wins::

        from pi_core import lazy_door

        __getattr__, __dir__ = lazy_door(
            __name__, {"CommandPolicy": "policies.command_policy"},
            moved={"command_policy": "policies.command_policy"},
        )
        __all__ = ["CommandPolicy"]
    """
    for old, new in (moved or {}).items():
        _MOVED.moved[f"{package}.{old}"] = f"{package}.{new}"
    if moved and _MOVED not in sys.meta_path:
        sys.meta_path.append(_MOVED)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
