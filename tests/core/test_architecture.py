"""The house rules of the code base, checked on the source: one public door, layering, no cycles.

Each rule is a function over a static import graph, so the tests that guard the real tree can be
shown to fail on a small tree that breaks the rule. None of these tests skips.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE_SRC = ROOT / "pi_core" / "src"
PLUGIN_SOURCES = {
    "pi_builtin_tools": ROOT / "pi_builtin_tools" / "src" / "pi_builtin_tools",
    "pi_sandbox_plugin": ROOT / "pi_sandbox_plugin" / "src" / "pi_sandbox_plugin",
    "docs/examples": ROOT / "docs" / "examples",
    "docs/snippets": ROOT / "docs" / "snippets",
}
PUBLIC_MODULES = (
    "pi_core",
    "pi_core.backends",
    "pi_core.providers",
    "pi_core.hookspecs",
    "pi_core.testing",
    "pi_core.testing.bash_contract",
    "pi_core.testing.file_contract",
)
#: Layers whose modules must never reach pluggy, even through other modules of the core.
PLUGGY_FREE = ("pi_core._wire", "pi_core._tools", "pi_core._pipeline", "pi_core._loop")
#: Top layers: the command line, and the testing plugin that may run it.
ABOVE_CLI = ("pi_core._cli", "pi_core.testing", "_pi_entry")


@dataclass(frozen=True)
class Import:
    importer: str
    module: str
    names: tuple[str, ...]
    line: int
    path: Path


def _in_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> list[Import]:
    """Every import in ``path`` (at any depth, outside ``if TYPE_CHECKING``), resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if _in_type_checking(node, parents):
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module, alias.name, (), node.lineno, path))
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, target] if target else base)
            names = tuple(alias.name for alias in node.names)
            found.append(Import(module, target, names, node.lineno, path))
    return found


def graph_of(src: Path) -> dict[str, list[Import]]:
    """Module name → its imports, for every module under ``src``."""
    return {
        _module_name(path, src): imports_of(path, _module_name(path, src))
        for path in sorted(src.rglob("*.py"))
    }


def _edges(graph: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Module → modules of the same tree it imports (``from pkg import mod`` names ``pkg.mod``)."""
    edges: dict[str, set[str]] = {name: set() for name in graph}
    for name, found in graph.items():
        for imp in found:
            if imp.module in graph:
                edges[name].add(imp.module)
            for member in imp.names:
                if f"{imp.module}.{member}" in graph:
                    edges[name].add(f"{imp.module}.{member}")
    return edges


def find_cycles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """Import cycles between modules (each as the list of modules around it)."""
    edges = _edges(graph)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


def reaches(graph: dict[str, list[Import]], start: str, external: str) -> list[str] | None:
    """The chain of modules by which ``start`` imports the ``external`` package, if any.

    Package ``__init__`` modules on the way are not followed: importing ``pi_core._loop.loop``
    runs ``pi_core/__init__.py``, but what the layering forbids is a module's own dependency.
    """
    edges = _edges(graph)
    seen = {start}
    queue: list[list[str]] = [[start]]
    while queue:
        chain = queue.pop(0)
        for imp in graph[chain[-1]]:
            if imp.module == external or imp.module.startswith(external + "."):
                return [*chain, external]
        for nxt in sorted(edges[chain[-1]]):
            if nxt not in seen and not _is_door(nxt, graph):
                seen.add(nxt)
                queue.append([*chain, nxt])
    return None


def _is_door(name: str, graph: dict[str, list[Import]]) -> bool:
    """A public re-export module (the root package and the public sub-modules)."""
    return name in PUBLIC_MODULES and name != "pi_core.hookspecs"


def private_imports(paths: dict[str, Path]) -> list[str]:
    """Imports of ``pi_core`` in plugin code that are not public: a private module, a module
    that is not a door, or a name missing from the door's ``__all__``."""
    problems: list[str] = []
    for label, folder in paths.items():
        for path in sorted(folder.rglob("*.py")):
            for imp in imports_of(path, path.stem):
                if imp.module != "pi_core" and not imp.module.startswith("pi_core."):
                    continue
                where = f"{label}/{path.relative_to(folder)}:{imp.line}"
                if imp.module not in PUBLIC_MODULES:
                    problems.append(f"{where}: imports the private module {imp.module}")
                    continue
                exported = set(getattr(importlib.import_module(imp.module), "__all__", ()))
                for member in imp.names:
                    if member not in exported and f"{imp.module}.{member}" not in PUBLIC_MODULES:
                        problems.append(f"{where}: {member} is not in {imp.module}.__all__")
    return problems


def cross_imports(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    """Imports in ``folder`` of any package in ``forbidden``."""
    problems = []
    for path in sorted(folder.rglob("*.py")):
        for imp in imports_of(path, path.stem):
            if imp.module.split(".")[0] in forbidden:
                problems.append(f"{path.relative_to(folder)}:{imp.line}: imports {imp.module}")
    return problems


def cli_importers(graph: dict[str, list[Import]]) -> list[str]:
    """Modules below the command line that import it."""
    found = []
    for name, imports in graph.items():
        if name.startswith(ABOVE_CLI):
            continue
        for imp in imports:
            if imp.module.startswith("pi_core._cli"):
                found.append(f"{name}:{imp.line}: imports {imp.module}")
    return found


BUILTIN_TOOL_NAMES = frozenset({"bash", "read", "edit", "write", "grep", "find", "ls"})
"""The built-in tools: shared code reads what a tool declares, it never names one."""


def tool_name_literals(paths: list[Path], root: Path) -> list[str]:
    """Every string literal in ``paths`` (files, or folders of ``.py`` files) that is exactly
    the name of a built-in tool (a docstring that mentions one is not such a literal)."""
    found = []
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in BUILTIN_TOOL_NAMES:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


# -- the real tree ---------------------------------------------------------------------------

CORE_GRAPH = graph_of(CORE_SRC)


def test_the_core_has_no_import_cycle() -> None:
    assert find_cycles(CORE_GRAPH) == []


@pytest.mark.parametrize("layer", PLUGGY_FREE)
def test_pipeline_loop_tools_and_wire_do_not_reach_pluggy(layer: str) -> None:
    modules = [name for name in CORE_GRAPH if name == layer or name.startswith(layer + ".")]
    assert modules
    assert {name: reaches(CORE_GRAPH, name, "pluggy") for name in modules} == dict.fromkeys(modules)


def test_nothing_below_the_cli_imports_it() -> None:
    assert cli_importers(CORE_GRAPH) == []


def test_the_core_imports_no_plugin() -> None:
    core = CORE_SRC / "pi_core"
    assert cross_imports(core, ("pi_builtin_tools", "pi_sandbox_plugin")) == []


def test_the_sandbox_does_not_import_the_builtin_tools() -> None:
    sandbox = PLUGIN_SOURCES["pi_sandbox_plugin"]
    assert cross_imports(sandbox, ("pi_builtin_tools",)) == []


def test_the_builtin_tools_do_not_import_the_sandbox() -> None:
    builtin = PLUGIN_SOURCES["pi_builtin_tools"]
    assert cross_imports(builtin, ("pi_sandbox_plugin",)) == []


def test_plugins_and_examples_import_only_public_names() -> None:
    assert private_imports(PLUGIN_SOURCES) == []


def test_no_shared_module_names_a_builtin_tool() -> None:
    """How a tool renders, how ``replay --verify`` compares it, which arguments are paths and
    which runs shell commands live on the tool (its declarations), never in ``if name ==
    "bash"`` in the core or in the sandbox's policy hooks."""
    sandbox = PLUGIN_SOURCES["pi_sandbox_plugin"]
    shared = [CORE_SRC / "pi_core", sandbox / "plugin.py", sandbox / "policies" / "path_policy.py"]
    assert tool_name_literals(shared, ROOT) == []


def test_implementation_lives_in_private_sub_packages() -> None:
    public = {name for name in CORE_GRAPH if not any(p.startswith("_") for p in name.split("."))}
    assert public == set(PUBLIC_MODULES)


def test_every_public_module_declares_all_and_it_resolves() -> None:
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        exported = module.__all__
        assert [n for n in exported if not hasattr(module, n)] == [], name


# -- the rules catch what they guard ---------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_cycle_is_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "def f():\n    from pkg import a\n",
        },
    )
    assert find_cycles(graph_of(src)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_type_checking_imports_make_no_cycle(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import y\n",
        },
    )
    assert find_cycles(graph_of(src)) == []


def test_pluggy_reached_through_another_module_is_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pi_core/__init__.py": "import pluggy\n",
            "pi_core/_loop/__init__.py": "",
            "pi_core/_loop/loop.py": "from pi_core._plugins.facade import PluginHooks\n",
            "pi_core/_plugins/__init__.py": "",
            "pi_core/_plugins/facade.py": "import pluggy\n",
        },
    )
    chain = reaches(graph_of(src), "pi_core._loop.loop", "pluggy")
    assert chain == ["pi_core._loop.loop", "pi_core._plugins.facade", "pluggy"]


def test_a_module_below_the_cli_importing_it_is_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pi_core/__init__.py": "",
            "pi_core/_cli/__init__.py": "",
            "pi_core/_loop/agent.py": "from pi_core._cli.render import RunView\n",
        },
    )
    assert cli_importers(graph_of(src)) == ["pi_core._loop.agent:1: imports pi_core._cli.render"]


def test_private_and_unexported_imports_are_found(tmp_path: Path) -> None:
    folder = _tree(
        tmp_path,
        {
            "plug/a.py": "from pi_core._wire.messages import TextContent\n",
            "plug/b.py": "from pi_core import tool, apply_after_tool_call_result\n",
            "plug/c.py": "import pi_core._loop.loop\n",
            "plug/d.py": "from pi_core.backends import LocalFileOperations\n",
        },
    )
    assert private_imports({"plug": folder / "plug"}) == [
        "plug/a.py:1: imports the private module pi_core._wire.messages",
        "plug/b.py:1: apply_after_tool_call_result is not in pi_core.__all__",
        "plug/c.py:1: imports the private module pi_core._loop.loop",
    ]


def test_a_sandbox_import_of_the_builtins_is_found(tmp_path: Path) -> None:
    folder = _tree(tmp_path, {"s/m.py": "from pi_builtin_tools.read import read_file\n"})
    assert cross_imports(folder / "s", ("pi_builtin_tools",)) == [
        "m.py:1: imports pi_builtin_tools.read"
    ]


def test_a_builtin_tool_name_in_shared_code_is_found(tmp_path: Path) -> None:
    folder = _tree(
        tmp_path,
        {
            "core/render.py": (
                '"""Shows ``bash`` calls."""\n'
                'def summary(name):\n    return "$" if name == "bash" else name\n'
            ),
            "core/ok.py": 'KINDS = ("reads", "bash_like", "a read")\n',
        },
    )
    assert tool_name_literals([folder / "core"], folder) == ["core/render.py:3: 'bash'"]
