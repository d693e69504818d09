"""Without ``[mcp]`` (and without Pi's user ``mcp.json``) the MCP plugin's hooks return at once,
importing nothing: start-up time (docs/explanation/performance.md, P7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pi_builtin_tools.mcp.client_tools
import pi_builtin_tools.mcp.plugin as mcp_plugin

CODE = """
import sys
from types import SimpleNamespace
import pi_builtin_tools.mcp.plugin as p
context = SimpleNamespace(config={"other": {}}, cwd=".", session=None, state={"x": 1})
results = [p.pi_register_tools(lambda tool: None, context), p.pi_session_start(context),
           p.pi_session_end(context)]
loaded = sorted(m for m in sys.modules if m.startswith(("pi_builtin_tools.mcp.", "mcp")))
print(results, loaded, context.state)
"""


def test_without_mcp_config_the_hooks_import_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[None, None, None] ['pi_builtin_tools.mcp.plugin'] {'x': 1}\n"


def test_the_plugin_state_key_is_the_client_tools_key() -> None:
    assert mcp_plugin.STATE_KEY == pi_builtin_tools.mcp.client_tools.STATE_KEY
