"""A test plugin adding the command ``pi greet NAME`` through ``pi_register_commands``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_core import hookimpl
from pi_core._plugins.contexts import CommandInvocation, PluginCommand


def _configure(parser: Any) -> None:
    parser.add_argument("who", metavar="NAME")
    parser.add_argument("--cwd", metavar="DIR")


def _run(invocation: CommandInvocation) -> int:
    print(f"hello {invocation.args.who}", file=invocation.stdout)
    if invocation.args.cwd is not None:
        print(f"config: {invocation.config_path}", file=invocation.stdout)
    return 0


@hookimpl
def pi_register_commands(register: Callable[[Any], None]) -> None:
    register(PluginCommand(name="greet", help="say hello", configure=_configure, run=_run))
