"""The ``builtin_tools`` plugin: registers the built-in tools and the local backends."""

from __future__ import annotations
