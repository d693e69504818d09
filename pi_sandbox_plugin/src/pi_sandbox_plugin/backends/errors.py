"""Errors of the sandbox backends."""

from __future__ import annotations

from pi_core import ToolError


class SandboxUnavailable(ToolError):
    """The sandbox cannot run anything: its program is missing, it cannot create its namespaces,
    or its container cannot be reached. The message says why. A :class:`~pi_core._errors.ToolError`,
    so a tool call ends with the message as its error result; nothing ever runs unsandboxed."""


__all__ = ["SandboxUnavailable"]
