"""The plugin distributions' rooms (issue 24): the top level of each holds only its public door,
its plugin module and ``py.typed`` beside the rooms, every import path documented before the
rooms still imports the same objects, and every path the documentation names resolves."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pi_builtin_tools
import pi_sandbox_plugin

ROOT = Path(__file__).resolve().parents[2]

DOCUMENTED_BEFORE_THE_ROOMS = {
    # pi_builtin_tools/README.md, "Public names"
    "pi_builtin_tools.read": (
        "pi_builtin_tools.files.read",
        ["create_read_tool_definition", "ReadToolOptions", "read_file"],
    ),
    "pi_builtin_tools.bash": (
        "pi_builtin_tools.shell.bash",
        ["create_bash_tool_definition", "BashToolOptions", "strip_ansi"],
    ),
    "pi_builtin_tools.edit": (
        "pi_builtin_tools.files.edit",
        ["create_edit_tool_definition", "edit_file"],
    ),
    "pi_builtin_tools.write": (
        "pi_builtin_tools.files.write",
        ["create_write_tool_definition", "write_file"],
    ),
    "pi_builtin_tools.grep": (
        "pi_builtin_tools.search.grep",
        ["create_grep_tool_definition", "grep_files"],
    ),
    "pi_builtin_tools.find": (
        "pi_builtin_tools.search.find",
        ["create_find_tool_definition", "find_files"],
    ),
    "pi_builtin_tools.ls": (
        "pi_builtin_tools.search.ls",
        ["create_ls_tool_definition", "list_directory"],
    ),
    "pi_builtin_tools.local_bash": (
        "pi_builtin_tools.shell.local",
        ["LocalBashOperations", "resolve_shell"],
    ),
    "pi_builtin_tools.local_files": ("pi_builtin_tools.files.local", ["LocalFileOperations"]),
    "pi_builtin_tools.truncate": (
        "pi_builtin_tools.files.truncate",
        [
            "truncate_head",
            "truncate_tail",
            "truncate_line",
            "format_size",
            "DEFAULT_MAX_LINES",
            "DEFAULT_MAX_BYTES",
        ],
    ),
    # docs/reference/tools.md, "powershell"
    "pi_builtin_tools.powershell": (
        "pi_builtin_tools.shell.powershell",
        ["PowerShellLocator", "create_powershell_tool_definition"],
    ),
    # docs/how-to/sandbox.md, "Program grammars"
    "pi_sandbox_plugin.command_policy": (
        "pi_sandbox_plugin.policies.command_policy",
        ["CommandPolicy"],
    ),
    "pi_sandbox_plugin.grammars": (
        "pi_sandbox_plugin.policies.grammars",
        ["ProgramGrammar", "merged", "BUILTIN_GRAMMARS"],
    ),
}
"""Old path → (its room, the names documented at the old path)."""


@pytest.mark.parametrize("old", sorted(DOCUMENTED_BEFORE_THE_ROOMS))
def test_a_documented_old_path_imports_the_same_objects(old: str) -> None:
    new, names = DOCUMENTED_BEFORE_THE_ROOMS[old]
    namespace: dict[str, Any] = {}
    exec(f"from {old} import {', '.join(names)}", namespace)
    module = importlib.import_module(new)
    assert importlib.import_module(old) is module
    assert {name: namespace[name] for name in names} == {
        name: getattr(module, name) for name in names
    }
    for name in names:
        assert namespace[name] is getattr(module, name)


def test_the_builtin_door_gives_every_documented_name() -> None:
    """The README's names and the script tools' factories, from ``pi_builtin_tools`` itself."""
    documented = {
        name: new
        for old, (new, names) in DOCUMENTED_BEFORE_THE_ROOMS.items()
        if old.startswith("pi_builtin_tools.")
        for name in names
    }
    factories = [
        "create_codemode_python_tool_definition",
        "create_codemode_tool_definition",
        "create_tool_search_tool_definition",
    ]
    assert sorted(pi_builtin_tools.__all__) == sorted([*documented, *factories])
    definitions = importlib.import_module("pi_builtin_tools.catalog.definitions")
    expected = {
        **{name: getattr(importlib.import_module(new), name) for name, new in documented.items()},
        **{name: getattr(definitions, name) for name in factories},
    }
    assert {name: getattr(pi_builtin_tools, name) for name in pi_builtin_tools.__all__} == expected


@pytest.mark.parametrize("door", [pi_builtin_tools, pi_sandbox_plugin])
def test_every_former_flat_module_is_its_room_module(door: ModuleType) -> None:
    moved: dict[str, str] = door._MOVED
    assert {old: importlib.import_module(f"{door.__name__}.{old}") for old in moved} == {
        old: importlib.import_module(f"{door.__name__}.{new}") for old, new in moved.items()
    }


def test_the_doors_import_no_room() -> None:
    """Importing both doors (as loading the plugins does) imports none of their modules, and an
    old path imports its room's module only."""
    probe = (
        "import json, sys\n"
        "import pi_builtin_tools, pi_sandbox_plugin\n"
        "mine = lambda: sorted(m for m in sys.modules if m.startswith(('pi_builtin', 'pi_sandbox')))\n"
        "before = mine()\n"
        "import pi_sandbox_plugin.grammars\n"
        "print(json.dumps([before, mine()]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == [
        ["pi_builtin_tools", "pi_sandbox_plugin"],
        [
            "pi_builtin_tools",
            "pi_sandbox_plugin",
            "pi_sandbox_plugin.grammars",
            "pi_sandbox_plugin.policies",
            "pi_sandbox_plugin.policies.grammars",
        ],
    ]


def top_level(package: ModuleType) -> list[str]:
    folder = Path(package.__file__ or "").parent
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")


def test_the_top_levels_hold_only_the_door_the_plugin_and_the_rooms() -> None:
    assert top_level(pi_builtin_tools) == [
        "__init__.py",
        "catalog",
        "codemode",
        "files",
        "mcp",
        "plugin.py",
        "py.typed",
        "search",
        "shell",
    ]
    assert top_level(pi_sandbox_plugin) == [
        "__init__.py",
        "backends",
        "cli",
        "interop",
        "network",
        "plugin.py",
        "policies",
        "py.typed",
        "settings",
    ]


DOTTED = re.compile(r"\b(pi_builtin_tools|pi_sandbox_plugin)((?:\.[A-Za-z_]\w*)+)")


def documented_paths() -> list[str]:
    pages = [*ROOT.glob("README*.md"), *ROOT.glob("pi_*/README.md"), *ROOT.glob("docs/**/*.md")]
    pages.append(ROOT / "mkdocs.yml")
    return sorted({m.group(0) for page in pages for m in DOTTED.finditer(page.read_text())})


def resolves(path: str) -> bool:
    """``path`` is a module, or a module and attributes of it."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_path_the_documentation_names_resolves() -> None:
    paths = documented_paths()
    assert "pi_builtin_tools.files.read" in paths
    assert [path for path in paths if not resolves(path)] == []
