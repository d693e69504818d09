"""``pi policy check "COMMAND" [--json]``: the sandbox plugin's subcommand,
added to the ``pi`` command line through ``pi_register_commands``."""

from __future__ import annotations

import argparse

from pi_core import CommandInvocation, PluginCommand
from pi_sandbox_plugin.cli.policy_check import run_policy_check


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="policy_action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="decide a command line under the configured command policy",
        description="Print the decision, the rule and the simple commands the parser found; "
        "exit 0 for allow, 1 for deny.",
    )
    check.add_argument(
        "policy_command", metavar="COMMAND", nargs="?", help="the command line to check"
    )
    check.add_argument(
        "--network",
        metavar="HOST[:PORT]",
        dest="policy_network",
        help="check a connection under the network policy instead (default port 443)",
    )
    check.add_argument(
        "--protocol",
        choices=["https", "http", "socks5_tcp"],
        default="https",
        dest="policy_protocol",
        help="with --network: a CONNECT tunnel (https, the default), a plain-HTTP request or SOCKS5",
    )
    check.add_argument(
        "--json",
        action="store_true",
        dest="policy_json",
        help='print {"decision", "rule", "reason", "commands"}',
    )


def _run(invocation: CommandInvocation) -> int:
    args = invocation.args
    if (args.policy_command is None) == (args.policy_network is None):
        invocation.stderr.write("pi policy check: give either COMMAND or --network HOST[:PORT]\n")
        return 2
    if args.policy_network is not None:
        from pi_sandbox_plugin.cli.network_check import run_network_check

        try:
            status, text = run_network_check(
                args.policy_network,
                args.policy_protocol,
                invocation.config,
                json_output=args.policy_json,
                config_path=invocation.config_path,
            )
        except ValueError as error:
            invocation.stderr.write(f"pi policy check: --network: {error}\n")
            return 2
        invocation.stdout.write(text)
        return status
    status, text = run_policy_check(
        args.policy_command,
        invocation.config,
        json_output=args.policy_json,
        config_path=invocation.config_path,
    )
    invocation.stdout.write(text if text.endswith("\n") else text + "\n")
    return status


POLICY_COMMAND = PluginCommand(
    name="policy",
    help="check command lines against the sandbox's command policy",
    configure=_configure,
    run=_run,
)

__all__ = ["POLICY_COMMAND"]
