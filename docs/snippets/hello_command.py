"""A plugin command: ``pi hello NAME [--shout]``, with a greeting from ``[hello]`` in pi.toml."""

from __future__ import annotations

from pi_core import PluginCommand, hookimpl


def configure(parser):
    parser.add_argument("hello_name", metavar="NAME", help="who to greet")
    parser.add_argument("--shout", action="store_true", help="in capitals")


def run(invocation):
    greeting = invocation.config.get("hello", {}).get("greeting", "hello")
    text = f"{greeting}, {invocation.args.hello_name}!"
    invocation.stdout.write((text.upper() if invocation.args.shout else text) + "\n")
    return 0


@hookimpl
def pi_register_commands(register):
    register(PluginCommand(name="hello", help="greet someone", configure=configure, run=run))
