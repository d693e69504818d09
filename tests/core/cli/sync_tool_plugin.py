"""A plugin for the CLI cancellation tests (``pi -p sync_tool_plugin``).

Tool ``nap``: a sync ``@tool`` that creates ``marker``, then blocks its worker thread in
``time.sleep(seconds)`` (nothing in Python can interrupt it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pi_core import hookimpl, tool


@tool
def nap(marker: str, seconds: float) -> str:
    """Create the file ``marker``, then sleep in the worker thread."""
    Path(marker).write_text("started")
    time.sleep(seconds)
    return "slept"


@hookimpl
def pi_register_tools(register: Any, context: Any) -> None:
    register(nap)
