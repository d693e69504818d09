"""``pi mcp``: ``serve`` (pi's tools as an MCP server), ``list`` (the configured MCP servers,
their state and tools) and ``logout NAME`` (forget a server's OAuth tokens). Added to the ``pi`` command line through ``pi_register_commands``."""

from __future__ import annotations

import argparse

from pi_core import CommandInvocation, PluginCommand


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the session's tools over MCP (stdio, or streamable HTTP with --http)",
        description="Serve the session's callable tools to any MCP client. Every tools/call "
        "is a pi tool call: policies, hooks, backends and the audit log apply.",
    )
    from pi_builtin_tools.mcp.server import configure_serve

    configure_serve(serve)
    listing = actions.add_parser(
        "list",
        help="list the configured MCP servers, their state and tools",
        description="Start each enabled MCP server of the config, list its tools, stop it.",
    )
    # its options here: the client's modules (config reader, connections) are imported when
    # ``pi mcp list`` runs, not for every ``pi mcp`` command line (``serve`` starts faster)
    listing.add_argument(
        "--cwd", metavar="DIR", help="the session's working directory (default: the current one)"
    )
    listing.add_argument("--json", action="store_true", help="print the servers as JSON")
    logout = actions.add_parser(
        "logout",
        help='forget the OAuth tokens of an MCP server (auth = "oauth")',
        description="Remove the stored OAuth tokens and client registration of the server "
        "NAME; its next connection asks for authorization again.",
    )
    logout.add_argument("name", metavar="NAME", help="the server's name in [mcp.servers]")


def _run(invocation: CommandInvocation) -> int:
    if invocation.args.mcp_action == "logout":
        from pi_builtin_tools.mcp.oauth import logout

        name = invocation.args.name
        try:
            forgot = logout(name)
        except OSError as e:
            print(f"pi: error: {e}", file=invocation.stderr)
            return 2
        said = "forgot the OAuth tokens of" if forgot else "no OAuth tokens are stored for"
        print(f'pi: {said} MCP server "{name}"', file=invocation.stderr)
        return 0
    if invocation.args.mcp_action == "serve":
        from pi_builtin_tools.mcp.server import run_serve

        return run_serve(invocation)
    from pi_builtin_tools.mcp.client_tools import run_list

    return run_list(invocation)


MCP_COMMAND = PluginCommand(
    name="mcp",
    help="the Model Context Protocol: serve pi's tools, list the configured MCP servers",
    configure=_configure,
    run=_run,
)

__all__ = ["MCP_COMMAND"]
