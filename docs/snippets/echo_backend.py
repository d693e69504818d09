"""A bash backend: instead of running a command, print it back (a dry run)."""

from __future__ import annotations

from pi_core import hookimpl


class DryRunOperations:
    """A ``BashOperations``: streams bytes to ``on_data`` and returns the exit code."""

    async def exec(self, command, cwd, *, on_data, env=None, timeout=None):
        on_data(f"would run in {cwd}: {command}\n".encode())
        return 0


@hookimpl
def pi_bash_operations(context):
    return DryRunOperations()
