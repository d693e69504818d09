"""The pluggy markers of project ``pi``: ``@hookimpl`` for plugins, ``@hookspec`` for specs."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "pi"
"""The pluggy project name, which is also the entry-point group plugins declare."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]
