"""``pi_core.lazy_door``: a package's public names imported on first use, and its moved modules
importable under their old dotted names as the same module object."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

DOOR = """
from pi_core import lazy_door

__getattr__, __dir__ = lazy_door(
    __name__,
    {"Policy": "rooms.policy", "LIMIT": "rooms.policy"},
    moved={"policy": "rooms.policy", "old_helpers": "rooms.helpers", "kept": "rooms.policy"},
)
__all__ = ["LIMIT", "Policy"]
"""

FILES = {
    "__init__.py": DOOR,
    "rooms/__init__.py": "",
    "rooms/policy.py": "LIMIT = 3\n\nclass Policy:\n    pass\n",
    "rooms/helpers.py": "def helper():\n    return 'help'\n",
    "kept.py": "WHERE = 'the real module at the old path'\n",
}


@pytest.fixture
def package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Callable[[], str]]:
    """A fresh package with a lazy door (its name is the test's), on ``sys.path``."""
    name = f"door_{request.node.name}"
    for rel, text in FILES.items():
        path = tmp_path / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda: name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def loaded(name: str) -> list[str]:
    return sorted(m for m in sys.modules if m == name or m.startswith(name + "."))


def test_public_names_are_imported_on_first_access(package: Callable[[], str]) -> None:
    name = package()
    door = importlib.import_module(name)
    assert loaded(name) == [name]
    assert [n for n in dir(door) if not n.startswith("_")] == ["LIMIT", "Policy", "lazy_door"]
    assert door.LIMIT == 3
    assert loaded(name) == [name, f"{name}.rooms", f"{name}.rooms.policy"]
    assert door.Policy is sys.modules[f"{name}.rooms.policy"].Policy
    assert "Policy" in vars(door)  # cached: the next access does not call __getattr__


def test_an_unknown_name_is_an_attribute_error(package: Callable[[], str]) -> None:
    name = package()
    door = importlib.import_module(name)
    with pytest.raises(AttributeError) as caught:
        door.Nothing  # noqa: B018
    assert str(caught.value) == f"module '{name}' has no attribute 'Nothing'"


def test_a_moved_module_is_the_same_object_under_its_old_name(
    package: Callable[[], str],
) -> None:
    name = package()
    importlib.import_module(name)
    assert loaded(name) == [name]
    old = importlib.import_module(f"{name}.old_helpers")
    new = sys.modules[f"{name}.rooms.helpers"]
    assert old is new
    assert sys.modules[f"{name}.old_helpers"] is new
    assert sys.modules[name].old_helpers is new
    assert (new.__name__, new.__spec__.name, new.__spec__.origin) == (
        f"{name}.rooms.helpers",
        f"{name}.rooms.helpers",
        str(Path(new.__file__)),
    )
    assert old.helper() == "help"
    assert importlib.reload(old) is new  # reloads the module from its own file


def test_from_an_old_path_import_gives_the_new_objects(package: Callable[[], str]) -> None:
    name = package()
    namespace: dict[str, object] = {}
    exec(f"from {name}.policy import Policy, LIMIT", namespace)
    policy: ModuleType = importlib.import_module(f"{name}.rooms.policy")
    assert namespace["Policy"] is policy.Policy
    assert namespace["LIMIT"] == 3


def test_a_module_at_the_old_path_wins(package: Callable[[], str]) -> None:
    name = package()
    kept = importlib.import_module(f"{name}.kept")
    assert kept.WHERE == "the real module at the old path"
    assert f"{name}.rooms.policy" not in sys.modules


def test_an_old_name_not_moved_is_not_found(package: Callable[[], str]) -> None:
    name = package()
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module(f"{name}.helpers")
    assert str(caught.value) == f"No module named '{name}.helpers'"
