"""The local file backend, re-exported from :mod:`pi_core.backends` (helpers both plugin
distributions need live in ``pi_core``): :class:`LocalFileOperations` and :func:`find_rg`."""

from __future__ import annotations

from pi_core.backends import LocalFileOperations, find_rg

__all__ = ["LocalFileOperations", "find_rg"]
