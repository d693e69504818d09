"""Pi 1.6's MCP rules as pi applies them, without a server: names, exposure, result mapping,
the 20 KB limit, the config (``[mcp.servers.NAME]``, Pi's ``mcp.json``) and ``${VAR}``/``!command``
values. Expected values are written out (the hash suffixes were computed with node's
``crypto.createHash("sha256")``, not with the code under test)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.mcp.mcp_config import ValueResolutionError, load_mcp_servers, resolve_value
from pi_builtin_tools.mcp.naming import (
    assign_tool_names,
    configured_exposure,
    mcp_namespace,
    mcp_tool_name,
    to_tool_exposure,
)
from pi_builtin_tools.mcp.results import convert_call_result, limit_content, mcp_result_schema
from pi_core import ConfigError, ImageContent, TextContent, load_config


def test_tool_names_namespaces_and_the_64_character_rule() -> None:
    assert mcp_tool_name("my-server", "read.file") == "mcp__my_server__read_file"
    assert mcp_namespace("my-server") == "mcp__my_server"
    long = "a_tool_with_a_really_long_name_that_goes_past_the_provider_limit"
    assert (
        mcp_tool_name("t", long)
        == "mcp__t__a_tool_with_a_really_long_name_that_goes_past_t_7943e873"
    )
    assert len(mcp_tool_name("t", long)) == 64
    assert mcp_tool_name("t", "x" * 56) == "mcp__t__" + "x" * 56  # exactly 64: kept
    assert assign_tool_names("t", ["a-b", "a_b", "c"], {}) == {
        "a-b": "mcp__t__a_b_cf6af05a",
        "a_b": "mcp__t__a_b_4e5d5071",
        "c": "mcp__t__c",
    }
    # a name another server's tool holds is taken too
    owners = {"mcp__t__c": "u\0c"}
    assert assign_tool_names("t", ["c"], owners)["c"].startswith("mcp__t__c_")


def test_exposure_exact_names_beat_patterns_and_codemode_is_deferred() -> None:
    overrides = {"read_*": "direct", "read_secret": "hidden", "*": "deferred"}
    assert configured_exposure("codemode", overrides, "read_secret") == "hidden"
    assert configured_exposure("codemode", overrides, "read_file") == "direct"
    assert configured_exposure("codemode", overrides, "write") == "deferred"
    assert configured_exposure(None, {}, "x") == "codemode"
    assert [to_tool_exposure(e) for e in ("codemode", "deferred", "direct", "hidden")] == [
        "deferred",
        "deferred",
        "direct",
        "hidden",
    ]


def test_the_20_kb_limit_cuts_at_character_boundaries() -> None:
    text = "€" * 10000  # 3 bytes each: 30 000 bytes
    content, path = limit_content(
        [TextContent(text=text), ImageContent(data="AA", mime_type="image/png")]
    )
    assert path is not None
    assert Path(path).read_text() == text
    os.unlink(path)
    # head: 10 240 bytes cut back to 10 239 (3 413 chars); tail from 19 761 (3 413 chars)
    assert content == [
        TextContent(
            text="Warning: truncated output (original token count: 7500)\nTotal output lines: 1\n\n"
            + "€" * 3413
            + "…3174 chars truncated…"
            + "€" * 3413
            + f"\n\n[Full output: {path} (read it with offset/limit)]"
        ),
        ImageContent(data="AA", mime_type="image/png"),
    ]
    fits = [TextContent(text="x" * 20480)]
    assert limit_content(fits) == (fits, None)


def convert(result: dict[str, Any], readable: bool = False) -> tuple[list[Any], Any, Any, Any]:
    out = convert_call_result("srv", "tool", result, readable)
    return (
        [b.text if isinstance(b, TextContent) else (b.mime_type, b.data) for b in out.content],
        out.details,
        out.structured_content,
        out.is_error,
    )


def test_content_blocks_map_as_pi_1_6() -> None:
    blob = base64.b64encode(b"\x00\x01binary").decode()
    text_blob = base64.b64encode("héllo".encode()).decode()
    result = {
        "content": [
            {"type": "text", "text": "t"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "x://a", "text": "embedded"}},
            {
                "type": "resource",
                "resource": {"uri": "x://b", "mimeType": "text/plain", "blob": text_blob},
            },
            {
                "type": "resource",
                "resource": {"uri": "x://i", "mimeType": "image/gif", "blob": "R0lG"},
            },
            {
                "type": "resource_link",
                "uri": "x://l",
                "name": "l",
                "mimeType": "text/csv",
                "size": 2048,
            },
            {
                "type": "resource_link",
                "uri": "x://m",
                "name": "m",
                "title": "M",
                "description": "d",
            },
            {"type": "widget"},
        ],
        "_meta": {"k": 1},
    }
    texts, details, structured, is_error = convert(result, readable=True)
    assert texts == [
        "t",
        ("image/png", "AAAA"),
        "[audio audio/wav omitted]",
        "embedded",
        "héllo",
        ("image/gif", "R0lG"),
        '[Resource x://l "l" (text/csv, 2.0KB). Read it with read_mcp_resource (server "srv")]',
        '[Resource x://m "M": d. Read it with read_mcp_resource (server "srv")]',
        "[unsupported MCP content widget]",
    ]
    assert details == {"server": "srv", "tool": "tool"}
    assert structured == {k: v for k, v in result.items() if k != "_meta"}
    assert is_error is None
    texts, *_ = convert(
        {
            "content": [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "x://dir/f.bin",
                        "mimeType": "application/zip",
                        "blob": blob,
                    },
                }
            ]
        }
    )
    prefix = "[Binary resource x://dir/f.bin (application/zip, 8B) saved to "
    assert texts[0].startswith(prefix) and texts[0].endswith(".bin]")
    saved = texts[0][len(prefix) : -1]
    assert Path(saved).read_bytes() == b"\x00\x01binary"
    os.unlink(saved)
    assert convert({"content": [{"type": "resource_link", "uri": "x://l", "name": "l"}]})[0] == [
        '[Resource x://l "l"]'
    ]


def test_errors_and_structured_content_without_blocks() -> None:
    assert convert({"content": [], "isError": True}) == (
        ["MCP tool srv/tool returned an error"],
        {"server": "srv", "tool": "tool"},
        {"content": [], "isError": True},
        True,
    )
    assert convert({"content": [{"type": "text", "text": "bad"}], "isError": True})[0] == ["bad"]
    assert convert({"content": [], "structuredContent": {"a": [1, 2.5], "b": "é"}})[0] == [
        '{\n  "a": [\n    1,\n    2.5\n  ],\n  "b": "é"\n}'
    ]


def test_the_output_schema_wraps_the_tool_s_own() -> None:
    schema = mcp_result_schema(
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}
    )
    assert schema["required"] == ["content"]
    assert schema["properties"]["structuredContent"]["properties"]["a"] == {
        "$ref": "#/properties/structuredContent/$defs/A"
    }
    assert mcp_result_schema(None)["properties"]["structuredContent"] == {}


# -- the config ---------------------------------------------------------------------------------


def load(tmp_path: Path, toml: str) -> Any:
    path = tmp_path / "pi.toml"
    path.write_text(toml)
    return load_mcp_servers(load_config(path).data, str(tmp_path))


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[mcp.servers.x]\ncommand = "a"\ncomand = "b"\n', "mcp.servers.x.comand: unknown key"),
        ("[mcp]\nservres = {}\n", "mcp.servres: unknown key"),
        (
            '[mcp.servers."a b"]\ncommand = "a"\n',
            'mcp.servers: invalid server name "a b" (use letters, digits, "_" and "-")',
        ),
        (
            "[mcp.servers.x]\nargs = []\n",
            'mcp.servers.x: needs either "command" (stdio) or "url" (streamable HTTP)',
        ),
        (
            '[mcp.servers.x]\ncommand = "a"\nexposure = "everywhere"\n',
            "mcp.servers.x.exposure: Input should be",
        ),
        (
            '[mcp.servers.x]\nurl = "ftp://h"\n',
            "mcp.servers.x.url: url must be an http or https URL",
        ),
        (
            '[mcp.servers.x]\ncommand = "a"\nauth = "oauth"\n',
            'mcp.servers.x: auth = "oauth" is for a server with a "url"',
        ),
        (
            '[mcp.servers.x]\nurl = "https://h/mcp"\nauth = "basic"\n',
            "mcp.servers.x.auth: Input should be 'oauth'",
        ),
        (
            '[mcp.servers.x]\ncommand = "a"\ntimeout = 0\n',
            "mcp.servers.x.timeout: Input should be greater than 0",
        ),
        (
            '[mcp.servers.a-b]\ncommand = "a"\n[mcp.servers.a_b]\ncommand = "b"\n',
            'mcp.servers.a_b: conflicts with "a-b" (same namespace)',
        ),
    ],
)
def test_an_invalid_mcp_table_is_a_config_error_naming_file_and_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, toml)
    assert str(info.value).startswith(f"{tmp_path / 'pi.toml'}: {message}")
    assert "\n" not in str(info.value)


def test_pi_toml_servers(tmp_path: Path) -> None:
    servers = load(
        tmp_path,
        '[mcp.servers.fs]\ncommand = "npx"\nargs = ["-y", "srv"]\nexposure = "codemode-deferred"\n'
        '[mcp.servers.docs]\nurl = "https://example.com/mcp"\nheaders = { A = "${T}" }\n'
        "timeout = 5\nenabled = false\n",
    )
    fs, docs = servers.servers
    assert (fs.transport, fs.launch, fs.exposure, fs.timeout, fs.scope) == (
        "stdio",
        "npx -y srv",
        "codemode",
        60.0,
        "pi.toml",
    )
    assert (docs.transport, docs.launch, docs.enabled, docs.timeout, dict(docs.headers)) == (
        "http",
        "https://example.com/mcp",
        False,
        5.0,
        {"A": "${T}"},
    )


def test_mcp_json_files_follow_pi_s_rules(tmp_path: Path, agent_dir: Path) -> None:
    (agent_dir / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {"command": "a", "env": {"K": "v"}},
                    "b": {"url": "https://b.example/mcp"},
                    "old": {"type": "sse", "url": "https://x/sse"},
                    "bad name": {"command": "x"},
                    "n": {"command": 1},
                }
            }
        )
    )
    project = tmp_path / ".pi"
    project.mkdir()
    (project / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {"enabled": False, "exposure": "direct"},
                    "b": {"headers": {"X": "y"}},
                    "c": {"enabled": False},
                    "d": {"command": "d", "toolExposure": {"x": "sometimes"}},
                }
            }
        )
    )
    user, proj = agent_dir / "mcp.json", project / "mcp.json"
    servers = load(tmp_path, "[mcp]\nproject_mcp_json = true\n")
    assert [(s.name, s.enabled, s.exposure, s.scope, s.override) for s in servers.servers] == [
        ("a", False, "direct", "user", str(proj)),
        ("b", True, "codemode", "user", None),
    ]
    assert servers.servers[0].env == {"K": "v"}  # kept from the user entry
    assert servers.errors == [
        f'{user}: server "old": legacy SSE transport is not supported; use the streamable HTTP URL',
        f'{user}: invalid server name "bad name" (use letters, digits, "_" and "-")',
        f'{user}: server "n" needs either "command" (stdio) or "url" (streamable HTTP)',
        f'{proj}: server "b": an override can only set enabled, exposure, toolExposure',
        f'{proj}: server "c" needs "command" or "url", or a global server to override',
        f'{proj}: server "d": toolExposure "x" must be one of "codemode", "deferred", "direct", "hidden"',
    ]
    # without project_mcp_json the project file is not read; pi.toml replaces a user entry
    servers = load(tmp_path, '[mcp.servers.a]\ncommand = "mine"\n')
    assert [(s.name, s.launch, s.scope, s.enabled) for s in servers.servers] == [
        ("a", "mine", "pi.toml", True),
        ("b", "https://b.example/mcp", "user", True),
    ]


def test_values_interpolate_variables_and_run_commands_only_when_allowed() -> None:
    env = {"A": "1", "B": "two"}
    assert (
        resolve_value("x-${A}-$B-$$-$!-${not a var}", "v", False, env) == "x-1-two-$-!-${not a var}"
    )
    with pytest.raises(ValueResolutionError) as info:
        resolve_value("${A}${C}${D}", 'MCP server "s" env "K"', False, env)
    assert (
        str(info.value)
        == 'Failed to resolve MCP server "s" env "K" from environment variables: C, D'
    )
    with pytest.raises(ValueResolutionError) as info:
        resolve_value("!echo secret", 'MCP server "s" header "H"', False, env)
    assert str(info.value) == (
        'MCP server "s" header "H" is a shell command (!echo secret); pi runs such values only '
        "with [mcp] allow_command_values = true"
    )
    assert resolve_value("!echo secret", "v", True, env) == "secret"
    with pytest.raises(ValueResolutionError) as info:
        resolve_value("!exit 1", "v", True, env)
    assert str(info.value) == "Failed to resolve v from shell command: exit 1"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"command": "x", "timeout": float("inf")}, "timeout: Input should be a finite number"),
        (
            {"command": "x", "timeout": 1e300},
            "timeout: Input should be less than or equal to 86400",
        ),
        ({"command": ""}, "command: String should have at least 1 character"),
    ],
)
def test_server_tables_refuse_endless_timeouts_and_empty_commands(
    entry: dict[str, object], problem: str, tmp_path: Path
) -> None:
    from pi_builtin_tools.mcp.mcp_config import load_mcp_servers
    from pi_core import ConfigError

    with pytest.raises(ConfigError) as info:
        load_mcp_servers({"mcp": {"servers": {"s": entry}}}, str(tmp_path))
    assert f"mcp.servers.s.{problem}" in str(info.value)
