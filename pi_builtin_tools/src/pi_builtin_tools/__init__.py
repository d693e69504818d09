"""pi's built-in tools: read, write, edit, bash, grep, find, ls, and their local backends.

Loaded like any third-party plugin, through the ``pi`` entry point ``builtin_tools``.
"""

from __future__ import annotations

__all__: list[str] = []
