"""Built-in tools registered in every session but rarely called are defined without their code
(docs/explanation/performance.md, P7): ``codemode``, ``codemode_python`` and ``tool_search`` come
from :mod:`pi_builtin_tools.catalog.definitions`, and ``edit`` imports its matching and diff module
(:mod:`pi_builtin_tools.files.edit_diff`) at its first call. Registering imports none of those
modules; the first call (or loadout) imports what it runs, and the implementation modules still
give the same objects under their old names. Each import check runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pi_builtin_tools.catalog.definitions as definitions
import pi_builtin_tools.catalog.tool_search as tool_search
import pi_builtin_tools.codemode.javascript as codemode
import pi_builtin_tools.codemode.python as codemode_python
import pi_builtin_tools.codemode.source as codemode_source
import pi_builtin_tools.files.edit as edit
import pi_builtin_tools.files.edit_diff as edit_diff

LAZY = (
    "pi_builtin_tools.codemode.javascript",
    "pi_builtin_tools.codemode.python",
    "pi_builtin_tools.codemode.common",
    "pi_builtin_tools.codemode.declarations",
    "pi_builtin_tools.codemode.source",
    "pi_builtin_tools.catalog.tool_search",
    "pi_builtin_tools.files.edit_diff",
)


def run_probe(code: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"LAZY = {LAZY!r}\n{code}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_registering_the_builtin_tools_imports_no_implementation_of_these_tools() -> None:
    lines = run_probe(
        "import sys\n"
        "import pi_builtin_tools.plugin\n"
        "from pi_builtin_tools.catalog.definitions import (\n"
        "    create_codemode_python_tool_definition,\n"
        "    create_codemode_tool_definition,\n"
        "    create_tool_search_tool_definition,\n"
        ")\n"
        "from pi_builtin_tools.files.edit import create_edit_tool_definition\n"
        "from pi_builtin_tools.files.local import LocalFileOperations\n"
        "tools = [create_codemode_tool_definition(), create_codemode_python_tool_definition(),\n"
        "    create_tool_search_tool_definition(), create_edit_tool_definition('.', LocalFileOperations())]\n"
        "print([t.name for t in tools])\n"
        "print(sorted(m for m in LAZY if m in sys.modules))\n"
    )
    assert lines == ["['codemode', 'codemode_python', 'tool_search', 'edit']", "[]"]


def test_the_first_call_imports_the_tool_module() -> None:
    lines = run_probe(
        "import sys, trio\n"
        "from pi_builtin_tools.catalog.definitions import create_tool_search_tool_definition\n"
        "from pi_core import ToolError, wrap_tool_definition\n"
        "search = wrap_tool_definition(create_tool_search_tool_definition(), None)\n"
        "print(sorted(m for m in LAZY if m in sys.modules))\n"
        "async def main():\n"
        "    try:\n"
        "        await search.execute('c1', {'query': ' '})\n"
        "    except ToolError as error:\n"
        "        print(error)\n"
        "    result = await search.execute('c2', {'query': 'files'})\n"
        "    print(result.content[0].text, result.details)\n"
        "trio.run(main)\n"
        "print(sorted(m for m in LAZY if m in sys.modules))\n"
    )
    assert lines == [
        "[]",
        "query must not be empty",
        "No matching tools found. {'loaded': []}",
        "['pi_builtin_tools.catalog.tool_search']",
    ]


def test_the_first_edit_imports_edit_diff(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    lines = run_probe(
        f"cwd = {str(tmp_path)!r}\n"
        "import sys, trio\n"
        "from pi_builtin_tools.files.edit import create_edit_tool_definition\n"
        "from pi_builtin_tools.files.local import LocalFileOperations\n"
        "from pi_core import wrap_tool_definition\n"
        "tool = wrap_tool_definition(create_edit_tool_definition(cwd, LocalFileOperations()), None)\n"
        "print(sorted(m for m in LAZY if m in sys.modules))\n"
        "edits = {'path': 'a.txt', 'edits': [{'oldText': 'two', 'newText': 'three'}]}\n"
        "result = trio.run(tool.execute, 'c1', edits)\n"
        "print(result.content[0].text)\n"
        "print(sorted(m for m in LAZY if m in sys.modules))\n"
    )
    assert lines == [
        "[]",
        "Successfully replaced 1 block(s) in a.txt.",
        "['pi_builtin_tools.files.edit_diff']",
    ]


def test_the_implementation_modules_give_the_same_objects() -> None:
    assert codemode.create_codemode_tool_definition is definitions.create_codemode_tool_definition
    assert codemode.CODEMODE_DESCRIPTION is definitions.CODEMODE_DESCRIPTION
    assert codemode.DESCRIPTION_INTRO is definitions.CODEMODE_DESCRIPTION_INTRO
    assert codemode.PROMPT_GUIDELINES is definitions.CODEMODE_PROMPT_GUIDELINES
    assert codemode_source.CODEMODE_SOURCE_GRAMMAR is definitions.CODEMODE_SOURCE_GRAMMAR
    assert (
        codemode_python.create_codemode_python_tool_definition
        is definitions.create_codemode_python_tool_definition
    )
    assert codemode_python.DESCRIPTION is definitions.CODEMODE_PYTHON_DESCRIPTION
    assert codemode_python.PARAMETERS is definitions.CODEMODE_PYTHON_PARAMETERS
    assert (
        tool_search.create_tool_search_tool_definition
        is definitions.create_tool_search_tool_definition
    )
    assert tool_search.TOOL_SEARCH_PARAMETERS is definitions.TOOL_SEARCH_PARAMETERS
    assert edit.EditError is edit_diff.EditError
    assert edit.apply_edits is edit_diff.apply_edits
    assert edit._duplicate_error is edit_diff._duplicate_error


def test_an_unknown_name_of_edit_is_an_attribute_error() -> None:
    try:
        edit.no_such_name  # noqa: B018
    except AttributeError as error:
        assert str(error) == "module 'pi_builtin_tools.files.edit' has no attribute 'no_such_name'"
    else:
        raise AssertionError("no AttributeError")
