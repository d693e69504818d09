"""The sandbox plugin's hooks return at once without ``[sandbox]``, importing nothing
(start-up, docs/explanation/performance.md, P7), and its constants are the modules' own."""

from __future__ import annotations

import subprocess
import sys

import pi_sandbox_plugin.backends.wiring
import pi_sandbox_plugin.plugin as sandbox_plugin
import pi_sandbox_plugin.settings.config


def test_the_plugin_constants_are_the_modules_constants() -> None:
    assert sandbox_plugin.SANDBOX_TABLE == pi_sandbox_plugin.settings.config.SANDBOX_TABLE
    assert sandbox_plugin.STATE_KEY == pi_sandbox_plugin.backends.wiring.STATE_KEY


CODE = """
import sys, trio
from types import SimpleNamespace
import pi_sandbox_plugin.plugin as p
context = SimpleNamespace(config={"other": {}}, cwd=".", session=None, state={"x": 1})
call = SimpleNamespace(tool=SimpleNamespace(path_arguments=("path",)), args={"path": "a"},
                       config={"other": {}}, context=None, session=SimpleNamespace(state={}))
results = [p.pi_register_tools(lambda tool: None, context), p.pi_bash_operations(context),
           p.pi_file_operations(context), p.pi_before_tool_call(call),
           p.pi_after_tool_call(call), trio.run(p.pi_session_end, context)]
loaded = sorted(m for m in sys.modules if m.startswith("pi_sandbox_plugin."))
print(results, loaded, context.state)
"""


def test_without_a_sandbox_table_the_hooks_import_nothing() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "[None, None, None, None, None, None] ['pi_sandbox_plugin.plugin'] {'x': 1}\n"
    )
