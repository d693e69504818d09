"""The house rules of the code base, checked on the source: one public door, layering, no cycles.

Each rule is a function over a static import graph, so the tests that guard the real tree can be
shown to fail on a small tree that breaks the rule. None of these tests skips.

The graph holds every import of a module: at the top, inside a function (deferred, to keep start-up
cheap) and under ``if TYPE_CHECKING:`` (for annotations). A deferred or type-only import hides a
dependency from the interpreter; it does not remove it, so the rules count it like any other.
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
#: Top layers: the command line, and the testing plugin that may run it.
ABOVE_CLI = ("pi_core._cli", "pi_core.testing", "_pi_entry")

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "pi_core._wire",
        "pi_core._errors",
        "pi_core._abort",
        "pi_core._lazy_door",
        "pi_core._entry_scan",
    ),
    ("pi_core._config",),
    ("pi_core._backend_kit",),
    ("pi_core._tools",),
    ("pi_core._session",),
    ("pi_core._checkpoints",),
    ("pi_core._pipeline",),
    ("pi_core._providers",),
    ("pi_core._loop",),
    ("pi_core._plugins", "pi_core.hookspecs"),
    ("pi_core._report",),
    ("pi_core._cli",),
    ("pi_core", "pi_core.backends", "pi_core.providers", "pi_core.testing", "_pi_entry"),
)
"""The floors of ``pi_core``, lowest first: a module imports only modules of its own floor or of
a floor below (and its own floor without a cycle). Each entry names a module or a package of
``pi_core``; a module is on the floor of the longest entry that names it or a package holding it.
A top-level name (``pi_core``, ``_pi_entry``) names that module alone, so a new sub-package is on
no floor (and fails the test) until it is given one here.

0. the vocabulary: wire types (messages, events, session files), the errors, the abort signal,
   ``_lazy_door`` (lazy public names and moved-module aliases for any package's door) and
   ``_entry_scan`` (the installed entry points of pi's plugins and pydantic's, found before the
   first model is built);
1. ``_config``: reading ``pi.toml`` (the ``[pi]`` table and the error format plugins share);
2. ``_backend_kit``: what backends are made of (operation protocols, local files, atomic writes,
   the mutation queue, process streams);
3. ``_tools``: what a tool is (``AgentTool``, ``@tool``, exposure and loadout types), a
   session's tool sets (``ToolSet``) and argument validation;
4. ``_session``: one session's state (``SessionContext``), its approvals and its audit log;
4b. ``_checkpoints``: every change a session makes to its workspace and the way back (the
   recorder the pipeline drives, the store, listing and rewinding);
5. ``_pipeline``: one tool call (hook contexts, prepare, execute, finalize), nested calls and
   the callbacks a call reads (``AgentContext``, ``PipelineConfig``);
6. ``_providers``: the models (the ``ModelProvider`` protocol, HTTP, OpenAI, Anthropic);
7. ``_loop``: turns and batches (``LoopConfig``, ``run_agent_loop``, ``Agent``);
8. ``_plugins`` and ``hookspecs``: pluggy: the manager, the typed facade that turns hook
   implementations into the loop's plain callbacks, ``build_session``, the built-in providers
   plugin;
9. ``_report``: what a session did, for a person: the HTML session report and the
   OpenTelemetry spans of the tool calls (observes hook calls, so above ``_plugins``);
10. ``_cli``: the ``pi`` command;
11. the public doors (``pi_core``, ``pi_core.backends``, ``pi_core.providers``), the testing
    plugin (which runs ``pi``) and the console script.
"""

_PLUGIN_FLOOR = next(n for n, floor in enumerate(LAYERS) if "pi_core._plugins" in floor)
PLUGGY_FREE = tuple(entry for floor in LAYERS[:_PLUGIN_FLOOR] for entry in floor)
"""The floors below the plugin layer: their modules never reach pluggy, even through other
modules of the core (the plugin layer hands the loop plain callbacks)."""


@dataclass(frozen=True)
class Import:
    importer: str
    module: str
    names: tuple[str, ...]
    line: int
    path: Path
    kind: str = "top-level"
    """``top-level``, ``deferred`` (inside a function) or ``type-only`` (``if TYPE_CHECKING``)."""


def _kind(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    kind = "top-level"
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return "type-only"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind = "deferred"
    return kind


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> list[Import]:
    """Every import in ``path`` (at any depth, ``if TYPE_CHECKING`` included), resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(
                    Import(module, alias.name, (), node.lineno, path, _kind(node, parents))
                )
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, target] if target else base)
            names = tuple(alias.name for alias in node.names)
            found.append(Import(module, target, names, node.lineno, path, _kind(node, parents)))
    return found


def graph_of(src: Path) -> dict[str, list[Import]]:
    """Module name → its imports, for every module under ``src``."""
    return {
        _module_name(path, src): imports_of(path, _module_name(path, src))
        for path in sorted(src.rglob("*.py"))
    }


def _targets(imp: Import, graph: dict[str, list[Import]]) -> list[str]:
    """The modules of the tree ``imp`` names (``from pkg import mod`` names ``pkg.mod``)."""
    found = [imp.module] if imp.module in graph else []
    found += [f"{imp.module}.{m}" for m in imp.names if f"{imp.module}.{m}" in graph]
    return found


def _edges(graph: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Module → modules of the same tree it imports."""
    return {
        name: {t for imp in found for t in _targets(imp, graph)} for name, found in graph.items()
    }


def import_cycles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """The import cycles, as the strongly connected components of the graph that hold a cycle
    (two modules or more, or a module importing itself), each sorted, in sorted order."""
    edges = _edges(graph)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges[node]:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(cycles)


def floor_of(module: str, layers: tuple[tuple[str, ...], ...]) -> int | None:
    """The floor (index in ``layers``) of the longest entry naming ``module`` or a package
    holding it (a top-level name only names itself); ``None`` when no entry does."""
    best: tuple[int, int] | None = None
    for number, floor in enumerate(layers):
        for entry in floor:
            if module == entry or ("." in entry and module.startswith(entry + ".")):
                if best is None or len(entry) > best[1]:
                    best = (number, len(entry))
    return None if best is None else best[0]


def upward_imports(
    graph: dict[str, list[Import]], layers: tuple[tuple[str, ...], ...] = LAYERS
) -> list[str]:
    """Imports from a module to a module of a higher floor, and modules on no floor."""
    problems = []
    for name in sorted(graph):
        here = floor_of(name, layers)
        if here is None:
            problems.append(f"{name}: on no floor of the layer order")
            continue
        for imp in sorted(graph[name], key=lambda i: i.line):
            for target in _targets(imp, graph):
                there = floor_of(target, layers)
                if there is not None and there > here:
                    problems.append(
                        f"{name}:{imp.line}: {imp.kind} import of {target} "
                        f"(floor {there} above floor {here})"
                    )
    return problems


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


@functools.cache
def core_graph() -> dict[str, list[Import]]:
    """The import graph of ``pi_core``, built once per test process and only where a test of
    the real tree runs (not when every worker collects this module)."""
    return graph_of(CORE_SRC)


def test_the_core_has_no_import_cycle() -> None:
    """Deferred and type-only imports included."""
    assert import_cycles(core_graph()) == []


def test_no_core_module_imports_a_higher_floor() -> None:
    """Every module of ``pi_core`` is on a floor of :data:`LAYERS` and imports nothing above it
    (deferred and type-only imports included)."""
    assert upward_imports(core_graph()) == []


@pytest.mark.parametrize("layer", PLUGGY_FREE)
def test_no_floor_below_the_plugins_reaches_pluggy(layer: str) -> None:
    modules = [name for name in core_graph() if name == layer or name.startswith(layer + ".")]
    assert modules
    assert {name: reaches(core_graph(), name, "pluggy") for name in modules} == dict.fromkeys(
        modules
    )


def test_nothing_below_the_cli_imports_it() -> None:
    assert cli_importers(core_graph()) == []


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
    public = {name for name in core_graph() if not any(p.startswith("_") for p in name.split("."))}
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


def test_a_cycle_is_found_through_deferred_and_type_only_imports(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "def f():\n    from pkg import a\n",
            "pkg/c.py": "from pkg import d\n",
            "pkg/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import y\n",
            "pkg/e.py": "import pkg.e\n",
            "pkg/f.py": "from pkg.a import x\n",
        },
    )
    graph = graph_of(src)
    kinds = [i.kind for i in graph["pkg.b"] + graph["pkg.d"]]
    assert kinds == ["deferred", "top-level", "type-only"]
    assert import_cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e"]]


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pi_core/__init__.py": "from pi_core._loop.loop import run\n",
            "pi_core/_wire/__init__.py": "",
            "pi_core/_wire/messages.py": "",
            "pi_core/_pipeline/__init__.py": "",
            "pi_core/_pipeline/config.py": (
                "from typing import TYPE_CHECKING\n"
                "from pi_core._wire import messages\n"
                "if TYPE_CHECKING:\n"
                "    from pi_core._loop.loop import Provider\n"
            ),
            "pi_core/_pipeline/pipeline.py": "from pi_core._pipeline.config import A\n",
            "pi_core/_loop/__init__.py": "",
            "pi_core/_loop/loop.py": "def run():\n    from pi_core import door\n",
            "pi_core/_loop/special.py": "from pi_core._loop.loop import run\n",
            "pi_core/_extra.py": "",
        },
    )
    layers = (
        ("pi_core._wire",),
        ("pi_core._pipeline", "pi_core._loop.special"),
        ("pi_core._loop",),
        ("pi_core",),
    )
    assert [floor_of(m, layers) for m in ("pi_core", "pi_core._loop.special", "x")] == [3, 1, None]
    assert upward_imports(graph_of(src), layers) == [
        "pi_core._extra: on no floor of the layer order",
        "pi_core._loop.loop:2: deferred import of pi_core (floor 3 above floor 2)",
        "pi_core._loop.special:1: top-level import of pi_core._loop.loop (floor 2 above floor 1)",
        "pi_core._pipeline.config:4: type-only import of pi_core._loop.loop (floor 2 above floor 1)",
    ]


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
