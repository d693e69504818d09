"""pi's MCP plugin: the Model Context Protocol both ways.

* :mod:`pi_builtin_tools.mcp.server`: ``pi mcp serve``, an MCP server offering the session's tools;
  every ``tools/call`` is a pi tool call through the whole pipeline.
* :mod:`pi_builtin_tools.mcp.client_tools`: the MCP servers of ``[mcp.servers.NAME]`` (and Pi's
  ``.pi/mcp.json``) as pi tools, named, described and mapped as Pi 1.6 does.

Loaded through the ``pi`` entry point ``mcp`` (:mod:`pi_builtin_tools.mcp.plugin`).
"""
