"""``pi policy check "COMMAND" [--cwd DIR] [--json]``: the sandbox plugin's subcommand,
added to the ``pi`` command line through ``pi_register_commands``."""

from __future__ import annotations

import argparse
import os

from pi_core import CommandInvocation, PiError, PluginCommand, make_plugin_manager


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="policy_action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="decide a bash call of a command line as pi call would, under every policy",
        description="Ask every policy (the sandbox's sources and every plugin's hooks) about a "
        "bash call running COMMAND, as pi call would, without running it. Print the decision, "
        "who decided, the rule and the simple commands the parser found; exit 0 for allow, 1 "
        "for deny, 4 for ask.",
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
    check.add_argument(
        "--cwd",
        metavar="DIR",
        help="the session's working directory, where its pi.toml is found (default: .)",
    )


def _run(invocation: CommandInvocation) -> int:
    # the policy modules and the pydantic models of [sandbox], only when the command runs:
    # registering it happens whenever ``pi`` builds its whole command line (``pi mcp serve``)
    from pi_sandbox_plugin.cli.policy_check import run_policy_check

    args = invocation.args
    if (args.policy_command is None) == (args.policy_network is None):
        raise PiError("policy check: give either COMMAND or --network HOST[:PORT]")
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
            raise PiError(f"--network: {error}") from None
        invocation.stdout.write(text)
        return status
    cwd = args.cwd
    if cwd is not None and not os.path.isdir(cwd):
        reason = "not a directory" if os.path.exists(cwd) else "no such directory"
        raise PiError(f"--cwd {cwd}: {reason}")
    plugins = make_plugin_manager(
        block=getattr(args, "no_plugin", ()) or (),
        plugins=getattr(args, "plugins", ()) or (),
        trace_hooks=bool(getattr(args, "trace_hooks", False)),
        trace_stream=invocation.stderr,
    )
    status, text = run_policy_check(
        args.policy_command,
        invocation.config,
        json_output=args.policy_json,
        config_path=invocation.config_path,
        cwd=cwd,
        plugin_manager=plugins,
    )
    invocation.stdout.write(text if text.endswith("\n") else text + "\n")
    return status


POLICY_COMMAND = PluginCommand(
    name="policy",
    help="check command lines against every policy, as pi call would decide them",
    configure=_configure,
    run=_run,
)

__all__ = ["POLICY_COMMAND"]
