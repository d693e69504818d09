"""``codemode``: JavaScript scripts (QuickJS through jsbox, in a worker process) calling tools
through the pipeline; run for real with ``pi call`` and ``pi replay``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.codemode.javascript import preview_args, to_codemode_identifier
from pi_builtin_tools.codemode.source import (
    CodemodeSource,
    CodemodeSourceError,
    json_parse_error,
    parse_codemode_source,
)

PI = Path(sys.executable).parent / "pi"

# ---------------------------------------------------------------------------------------------
# The // @options: line (delta §3.2)
# ---------------------------------------------------------------------------------------------

FIELDS = "`max_output_tokens` and `timeout_ms`"


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (
            "",
            "Expected JavaScript source text (non-empty). Provide JS only, optionally with a "
            'first line `// @options: {"max_output_tokens": 1000}`.',
        ),
        (
            " \n\t",
            "Expected JavaScript source text (non-empty). Provide JS only, optionally with a "
            'first line `// @options: {"max_output_tokens": 1000}`.',
        ),
        (
            'text(1);\n  // @options: {"timeout_ms": 5}\n',
            "The // @options: line must be the first line of the input; found one on line 2",
        ),
        (
            '// @options: {}\nx;\n\n// @options: {"timeout_ms": 5}',
            "The // @options: line must be the first line of the input; found one on line 4",
        ),
        ("// @options:\nx", f"@options must be a JSON object with supported fields {FIELDS}"),
        ("// @options:   \nx", f"@options must be a JSON object with supported fields {FIELDS}"),
        ("// @options: [1]\nx", f"@options must be a JSON object with supported fields {FIELDS}"),
        ("// @options: null\nx", f"@options must be a JSON object with supported fields {FIELDS}"),
        ("// @options: 5\nx", f"@options must be a JSON object with supported fields {FIELDS}"),
        (
            "// @options: {x}\nx",
            f"@options must be valid JSON with supported fields {FIELDS}: "
            "Expected property name or '}' in JSON at position 1",
        ),
        (
            '// @options: {"max_output_tokens": 10, "timeout_ms": abc}\nx',
            f"@options must be valid JSON with supported fields {FIELDS}: "
            'Unexpected token \'a\', ..."eout_ms": abc}" is not valid JSON',
        ),
        (
            '// @options: {"timeout_ms": 0, "bogus": 1}\nx',
            f"@options only supports {FIELDS}; got `bogus`",
        ),
        (
            '// @options: {"max_output_tokens": -1}\nx',
            "@options field `max_output_tokens` must be a non-negative safe integer",
        ),
        (
            '// @options: {"max_output_tokens": 1.5}\nx',
            "@options field `max_output_tokens` must be a non-negative safe integer",
        ),
        (
            '// @options: {"max_output_tokens": 9007199254740992}\nx',
            "@options field `max_output_tokens` must be a non-negative safe integer",
        ),
        (
            '// @options: {"max_output_tokens": "5"}\nx',
            "@options field `max_output_tokens` must be a non-negative safe integer",
        ),
        (
            '// @options: {"max_output_tokens": null}\nx',
            "@options field `max_output_tokens` must be a non-negative safe integer",
        ),
        (
            '// @options: {"timeout_ms": 0}\nx',
            "@options field `timeout_ms` must be a positive integer up to 2147483647",
        ),
        (
            '// @options: {"timeout_ms": 2147483648}\nx',
            "@options field `timeout_ms` must be a positive integer up to 2147483647",
        ),
        (
            '// @options: {"timeout_ms": true}\nx',
            "@options field `timeout_ms` must be a positive integer up to 2147483647",
        ),
        (
            '// @options: {"timeout_ms": 5}',
            "The @options line must be followed by JavaScript source on subsequent lines",
        ),
        (
            '// @options: {"timeout_ms": 5}\n  \n',
            "The @options line must be followed by JavaScript source on subsequent lines",
        ),
        (
            "// @options: {bad\n",
            "The @options line must be followed by JavaScript source on subsequent lines",
        ),
    ],
)
def test_parse_errors_have_pi_texts(source: str, error: str) -> None:
    with pytest.raises(CodemodeSourceError) as info:
        parse_codemode_source(source)
    assert str(info.value) == error


def test_options_are_split_from_the_code_which_keeps_its_line_numbers() -> None:
    assert parse_codemode_source("return 1") == CodemodeSource(code="return 1")
    assert parse_codemode_source(
        '  // @options: {"max_output_tokens": 1000.0, "timeout_ms": 5}\r\nreturn 1\n'
    ) == CodemodeSource(code="\nreturn 1\n", max_output_tokens=1000, timeout_ms=5)
    assert parse_codemode_source('// @options: {"max_output_tokens": 0}\nx') == CodemodeSource(
        code="\nx", max_output_tokens=0
    )
    # a later line that merely mentions the prefix inside code is not at the start of a line
    assert parse_codemode_source('text("// @options: x")').code == 'text("// @options: x")'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "Expected property name or '}' in JSON at position 1"),
        ("x", "Unexpected token 'x', \"x\" is not valid JSON"),
        ('{"a":1', "Expected ',' or '}' after property value in JSON at position 6"),
        ('{"a" 1}', "Expected ':' after property name in JSON at position 5"),
        ('{"a":1,"b"}', 'Unexpected token \'}\', "{"a":1,"b"}" is not valid JSON'),
        ('{"a":1,"b" 2}', "Unexpected number in JSON at position 11"),
        ("[1 2]", "Expected ',' or ']' after array element in JSON at position 3"),
        ("{} x", "Unexpected non-whitespace character after JSON at position 3"),
        ('"abc', "Unterminated string in JSON at position 4"),
        ("1.", "Unterminated fractional number in JSON at position 2"),
        ("-", "No number after minus sign in JSON at position 1"),
        ("1e+", "Exponent part is missing a number in JSON at position 3"),
        ("01", "Unexpected number in JSON at position 1"),
        ('{"a":1,}', "Expected double-quoted property name in JSON at position 7"),
        ("nul", "Unexpected end of JSON input"),
        ("[1,", "Unexpected end of JSON input"),
        ('"a\\q"', "Bad escaped character in JSON at position 3"),
        ('"a\tb"', "Bad control character in string literal in JSON at position 2"),
        ('"\\u12"', "Bad Unicode escape in JSON at position 5"),
        (
            "x2345678901234567890",
            "Unexpected token 'x', \"x2345678901234567890\" is not valid JSON",
        ),
        ("x23456789012345678901", "Unexpected token 'x', \"x234567890\"... is not valid JSON"),
        ('{"a": [1, 2.5e-3, true, null, "x\\n"]}', None),
    ],
)
def test_json_errors_are_those_of_v8(text: str, message: str | None) -> None:
    """The texts Node 20's ``JSON.parse`` throws (the reference runs on Node 20)."""
    assert json_parse_error(text) == message


def test_identifiers_and_argument_previews() -> None:
    assert to_codemode_identifier("mcp__docs__search") == "mcp__docs__search"
    assert to_codemode_identifier("my-tool") == "my_tool"
    assert to_codemode_identifier("9lives") == "_lives"
    assert to_codemode_identifier("$a9é") == "$a9_"
    assert to_codemode_identifier("") == "_"
    assert preview_args({"path": "a.txt"}) == '{"path":"a.txt"}'
    long = preview_args({"content": "x" * 300})
    assert len(long) == 200 and long.endswith("x...")
    assert preview_args(None) == ""


# ---------------------------------------------------------------------------------------------
# Scripts, run for real
# ---------------------------------------------------------------------------------------------


def pi(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PI), "-p", "builtin_tools", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PI_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )


def run_script(cwd: Path, code: str) -> dict[str, Any]:
    proc = pi(cwd, "call", "codemode", json.dumps({"code": code}), "--json")
    assert proc.stderr == ""
    message: dict[str, Any] = json.loads(proc.stdout)
    return message


def texts(message: dict[str, Any]) -> list[str]:
    """The content's text blocks, the wall time replaced by ``<s>``."""
    return [
        re.sub(r"Wall time \d+\.\d seconds", "Wall time <s> seconds", c["text"])
        for c in message["content"]
        if c["type"] == "text"
    ]


def without_durations(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "durationMs"} for c in calls]


def codemode_workers() -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if "codemode/_worker.py" in line]


COMPLETED = "Script completed\nWall time <s> seconds\nOutput:\n"
FAILED = "Script failed\nWall time <s> seconds\nOutput:\n"


def test_output_layout(tmp_path: Path) -> None:
    message = run_script(
        tmp_path,
        'text("first");\nconsole.log("log", 1, { a: 2 });\ntext({ k: [1, 2] });\n'
        'console.warn("warned");\nreturn "last";',
    )
    assert texts(message) == [
        COMPLETED,
        '==> text 1/3 <==\nfirst\n==> text 2/3 <==\n{"k":[1,2]}\n==> text 3/3 <==\nlast\n'
        '<console_output>\nlog 1 {"a":2}\nwarned\n</console_output>',
    ]
    assert message["details"] == {"calls": []}
    assert message["isError"] is False
    assert texts(run_script(tmp_path, 'text("only");\nexit();\ntext("never");')) == [
        COMPLETED,
        "only",
    ]
    assert texts(run_script(tmp_path, "return undefined;")) == [COMPLETED]


def test_calls_go_through_the_pipeline_and_scripts_receive_values(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    message = run_script(
        tmp_path,
        'const a = await tools.read({ path: "a.txt" });\n'
        'const b = await tools.bash({ command: "printf hi; exit 3" });\n'
        'try { await tools.edit({ path: "nope.txt", edits: [{ oldText: "a", newText: "b" }] }); }\n'
        "catch (e) { console.log(e.message); }\n"
        'try { await tools["read"]({}); } catch (e) { console.log(e.message); }\n'
        "return { a, code: b.exit_code, out: b.output };",
    )
    assert texts(message) == [
        COMPLETED,
        '{"a":"hello\\n","code":3,"out":"hi"}\n<console_output>\n'
        "Could not edit file: nope.txt. Error code: ENOENT.\n"
        'Validation failed for tool "read":\n  - path: missing\n\nReceived arguments:\n{}\n'
        "</console_output>",
    ]
    assert without_durations(message["details"]["calls"]) == [
        {"id": "call-1/1", "name": "read", "args": '{"path":"a.txt"}', "status": "ok"},
        {
            "id": "call-1/2",
            "name": "bash",
            "args": '{"command":"printf hi; exit 3"}',
            "status": "error",
            "error": "hi\n\nCommand exited with code 3",
        },
        {
            "id": "call-1/3",
            "name": "edit",
            "args": '{"path":"nope.txt","edits":[{"oldText":"a","newText":"b"}]}',
            "status": "error",
            "error": "Could not edit file: nope.txt. Error code: ENOENT.",
        },
        {
            "id": "call-1/4",
            "name": "read",
            "args": "{}",
            "status": "error",
            "error": 'Validation failed for tool "read":\n  - path: missing\n\nReceived arguments:\n{}',
        },
    ]


def test_lone_surrogates_become_u_fffd(tmp_path: Path) -> None:
    # As in codemode_python: a lone surrogate cannot cross to the host as UTF-8.
    message = run_script(
        tmp_path,
        'const half = "\ud83d\ude00x".slice(0, 1);\n'
        'await tools.write({ path: "s.txt", content: half });\n'
        'console.log("\ud83d\ude00x".slice(1), half);\n'
        'text("a" + half);\n'
        'return half + "b";',
    )
    assert texts(message) == [
        COMPLETED,
        "==> text 1/2 <==\na\ufffd\n==> text 2/2 <==\n\ufffdb\n"
        "<console_output>\n\ufffdx \ufffd\n</console_output>",
    ]
    assert (tmp_path / "s.txt").read_bytes() == "\ufffd".encode()
    assert without_durations(message["details"]["calls"]) == [
        {
            "id": "call-1/1",
            "name": "write",
            "args": '{"path":"s.txt","content":"\ufffd"}',
            "status": "ok",
        }
    ]
    failed = run_script(tmp_path, 'throw new Error("bad " + "\ud83d\ude00".slice(1));')
    assert texts(failed) == [
        FAILED,
        "Script error:\nError: bad \ufffd\n    at <anonymous> (codemode.js:1:60)\n\n"
        "No tool calls were made.",
    ]


def test_independent_calls_run_concurrently(tmp_path: Path) -> None:
    message = run_script(
        tmp_path,
        "const started = Date.now();\n"
        "const r = await Promise.all([1, 2, 3].map((n) => "
        "tools.bash({ command: `sleep 0.6; echo ${n}` })));\n"
        "return { out: r.map((x) => x.output), ms: Date.now() - started };",
    )
    value = json.loads(texts(message)[1])
    assert value["out"] == ["1\n", "2\n", "3\n"]
    assert value["ms"] < 1500


def test_a_missing_tool_names_close_ones(tmp_path: Path) -> None:
    message = run_script(
        tmp_path,
        "const out = [];\n"
        'for (const n of ["rea", "grepp", "codemode", "x-y"]) {\n'
        "  try { tools[n]; } catch (e) { out.push(e.name + ': ' + e.message); }\n"
        "}\n"
        'out.push("read" in tools, "nope" in tools, ALL_TOOLS.map((t) => t.name).join());\n'
        "return out;",
    )
    suffix = (
        " ALL_TOOLS lists every tool; searchTools(query) finds tools by topic. Check for a "
        'member with "{}" in tools.'
    )
    available = "Available: read, bash, edit, write, grep, find, ls."
    value = json.loads(texts(message)[1])
    names = value[-1].split(",")
    if "powershell" in names:  # registered where PowerShell is installed
        available = "Available: " + ", ".join(names) + "."
    assert value == [
        "TypeError: tools.rea does not exist. Did you mean tools.read?" + suffix.format("rea"),
        "TypeError: tools.grepp does not exist. Did you mean tools.grep?" + suffix.format("grepp"),
        f"TypeError: tools.codemode does not exist. {available}" + suffix.format("codemode"),
        f"TypeError: tools.x-y does not exist. {available}" + suffix.format("x-y"),
        True,
        False,
        value[-1],
    ]
    assert "codemode" not in names


def test_a_failing_script_keeps_its_output_and_lists_the_calls_made(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    message = run_script(
        tmp_path,
        'text("before");\nawait tools.read({ path: "a.txt" });\n'
        'console.log("logged");\n  throw new Error("boom");',
    )
    assert texts(message) == [
        FAILED,
        "before\n<console_output>\nlogged\n</console_output>\nScript error:\n"
        "Error: boom\n    at <anonymous> (codemode.js:4:13)\n\n"
        "Tool calls made before the failure (they are not undone): read (ok)",
    ]
    assert message["isError"] is True
    message = run_script(tmp_path, "const x = ;")
    assert texts(message)[1].startswith("Script error:\nSyntaxError: unexpected token")
    assert texts(message)[1].endswith("\n\nNo tool calls were made.")


def test_a_promise_that_can_never_settle_fails_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    message = run_script(tmp_path, "await new Promise(() => {});")
    assert texts(message) == [
        FAILED,
        "Script error:\nError: The script is waiting on a promise that can never settle: no tool "
        "call is pending, and timers do not exist here.\n\nNo tool calls were made.",
    ]
    assert time.monotonic() - started < 10


def test_a_script_that_loops_forever_times_out_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    before = codemode_workers()
    message = run_script(tmp_path, '// @options: {"timeout_ms": 700}\nwhile (true) {}')
    assert texts(message) == [
        FAILED,
        "Script error:\nScript timed out: Execution timed out after 700 ms\n\n"
        "No tool calls were made.",
    ]
    assert codemode_workers() == before


def test_a_timeout_cancels_the_calls_still_running(tmp_path: Path) -> None:
    message = run_script(
        tmp_path,
        '// @options: {"timeout_ms": 1500}\nawait tools.bash({ command: "sleep 30" });',
    )
    assert texts(message) == [
        FAILED,
        "Script error:\nScript timed out: Execution timed out after 1500 ms\n\n"
        "Tool calls made before the failure (they are not undone): bash (cancelled)",
    ]
    assert without_durations(message["details"]["calls"]) == [
        {"id": "call-1/?", "name": "bash", "args": '{"command":"sleep 30"}', "status": "cancelled"}
    ]


def test_tool_arguments_over_the_limit_get_an_error_naming_it(tmp_path: Path) -> None:
    # 8 Mi "é" are 16 MiB in UTF-8, plus the 31 bytes of {"path":"big.txt","content":""}: over
    # by the bytes, though under by the characters; 8 Mi - 16 "é" pass
    code = (
        'try { await tools.write({ path: "big.txt", content: "\u00e9".repeat(8 * 1024 * 1024) }); }'
        " catch (e) { text(String(e)); }\n"
        'await tools.write({ path: "ok.txt", content: "\u00e9".repeat(8 * 1024 * 1024 - 16) });'
    )
    message = run_script(tmp_path, code)
    assert texts(message)[1:] == [
        "RangeError: tools.write() arguments are 16777247 bytes of JSON, more than the limit of "
        "16777216 bytes (16 MiB) one call can pass. Pass less per call."
    ]
    assert message["isError"] is False
    assert (tmp_path / "ok.txt").stat().st_size == 2 * (8 * 1024 * 1024 - 16)
    assert not (tmp_path / "big.txt").exists()


def test_a_script_allocating_without_bound_ends_with_the_memory_error(tmp_path: Path) -> None:
    message = run_script(tmp_path, "const a = [];\nwhile (true) a.push({ n: a.length });")
    assert texts(message) == [
        FAILED,
        "Script error:\nInternalError: out of memory\n\nNo tool calls were made.",
    ]


def test_the_engine_reaches_no_file_network_timer_or_process(tmp_path: Path) -> None:
    """Tools are a script's only reach: no Node or QuickJS host API, no module loading."""
    (tmp_path / "secret.txt").write_text("secret\n")
    globals_ = [
        "require", "process", "fetch", "XMLHttpRequest", "WebSocket", "setTimeout",
        "setInterval", "std", "os", "Deno", "Bun", "scriptArgs", "print", "module",
    ]  # fmt: skip
    modules = ["std", "os", "fs", "node:fs", "child_process", "./secret.txt", "/etc/passwd"]
    message = run_script(
        tmp_path,
        f"const globals = {json.dumps(globals_)};\n"
        f"const modules = {json.dumps(modules)};\n"
        "const r = { globals: {}, modules: {} };\n"
        "for (const g of globals) r.globals[g] = typeof globalThis[g];\n"
        "for (const m of modules) {\n"
        "  try { await import(m); r.modules[m] = 'imported'; }\n"
        "  catch (e) { r.modules[m] = e.name + ': ' + e.message; }\n"
        "}\n"
        "r.eval = eval('typeof require');\n"
        "return r;",
    )
    assert json.loads(texts(message)[1]) == {
        "globals": dict.fromkeys(globals_, "undefined"),
        "modules": {m: f"Error: module not found: {m}" for m in modules},
        "eval": "undefined",
    }
    assert message["details"] == {"calls": []}


def test_store_values_persist_across_the_scripts_of_a_session(tmp_path: Path) -> None:
    def call(n: int, code: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": f"cm{n}",
                    "name": "codemode",
                    "arguments": {"code": code},
                }
            ],
            "stopReason": "toolUse",
        }

    messages = [
        call(1, 'store("k", { v: 1 }); store("gone", 1); return load("k");'),
        call(2, 'store("k", 2); throw new Error("dropped");'),
        call(3, 'store("gone", undefined); return [load("k"), load("gone")];'),
        call(4, 'return [load("k"), load("gone")];'),
    ]
    replay = tmp_path / "in.jsonl"
    replay.write_text("".join(json.dumps(m) + "\n" for m in messages))
    proc = pi(tmp_path, "replay", str(replay), "--codemode", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    results = [m for m in lines if m.get("role") == "toolResult"]
    assert [texts(m)[1:] for m in results] == [
        ['{"v":1}'],
        [
            "Script error:\nError: dropped\n    at <anonymous> (codemode.js:1:54)\n\n"
            "No tool calls were made."
        ],
        ['[{"v":1},null]'],
        ['[{"v":1},null]'],
    ]


def test_discovery_globals(tmp_path: Path) -> None:
    """``ALL_TOOLS``, ``searchTools``, ``describeTool`` and ``describeNamespace`` show Pi's
    declarations of the callable tools."""
    message = run_script(
        tmp_path,
        "const r = {};\n"
        'r.all = ALL_TOOLS.find((t) => t.name === "ls").description;\n'
        'r.search = (await searchTools("list directory entries", { limit: 2 })).map((t) => t.name);\n'
        'r.describe = (await describeTool("ls")) === r.all;\n'
        'r.none = [await describeTool("nope"), await describeNamespace("nope")];\n'
        "r.errors = [];\n"
        "for (const f of [() => searchTools(1), () => searchTools('x', { limit: 0 }),\n"
        "  () => searchTools('x', { namespace: 3 }), () => describeTool(),\n"
        "  () => describeNamespace(null)]) {\n"
        "  try { await f(); } catch (e) { r.errors.push(e.message); }\n"
        "}\n"
        "return r;",
    )
    value = json.loads(texts(message)[1])
    assert value["all"].endswith(
        "\n\ncodemode tool declaration:\n```ts\ndeclare const tools: { ls(args: {\n"
        "  // Maximum number of entries to return (default: 500)\n  limit?: number;\n"
        "  // Directory to list (default: current directory)\n  path?: string;\n"
        "}): Promise<string>; };\n```"
    )
    assert value["search"][0] == "ls"
    assert value["describe"] is True
    assert value["none"] == [None, None]
    assert value["errors"] == [
        "searchTools() expects a query string",
        "searchTools() limit must be a positive integer",
        "searchTools() namespace must be a string",
        "describeTool() expects a tool name",
        "describeNamespace() expects a namespace name",
    ]
    assert message["details"] == {"calls": []}


PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_images_output_budget_and_store_limits(tmp_path: Path) -> None:
    message = run_script(
        tmp_path,
        f'text("see");\nimage("data:image/png;base64,{PNG_1X1}");\n'
        'try { image("https://x/y.png"); } catch (e) { console.log(e.message); }\n'
        'try { store("big", "x".repeat(300000)); } catch (e) { console.log(e.name, e.message); }',
    )
    blocks = message["content"]
    assert [b["type"] for b in blocks] == ["text", "text", "image", "text"]
    saved = re.fullmatch(
        r"see\n\[Image saved to (/\S+/pi-codemode-[0-9a-f]{16}\.png) \(image/png, 70B\)\]",
        blocks[1]["text"],
    )
    assert saved is not None
    assert Path(saved.group(1)).read_bytes()[:4] == b"\x89PNG"
    assert (os.stat(saved.group(1)).st_mode & 0o777) == 0o600
    assert blocks[2] == {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
    assert blocks[3]["text"] == (
        "<console_output>\nremote image URLs are not supported in tool outputs. Pass a base64 "
        'data URI instead\nRangeError store("big") value has 300002 characters of JSON, more '
        "than the limit of 262144. store() is for small state such as IDs or summaries. Show "
        "images with image(), keep large data in variables, or write it to a file with a tool.\n"
        "</console_output>"
    )
    os.unlink(saved.group(1))

    message = run_script(
        tmp_path,
        '// @options: {"max_output_tokens": 5}\nfor (let i = 0; i < 10; i++) text("line " + i);',
    )
    text = texts(message)[1]
    found = re.fullmatch(
        r"Warning: truncated output \(original token count: 63\)\nTotal output lines: 20\n\n"
        r"==> text 1…58 tokens truncated…<==\nline 9\n\n"
        r"\[Full output: (/\S+/pi-codemode-[0-9a-f]{16}\.txt) \(read with offset/limit\)\]",
        text,
    )
    assert found is not None, text
    assert message["details"]["fullOutputPath"] == found.group(1)
    assert Path(found.group(1)).read_text().startswith("==> text 1/10 <==\nline 0\n==> text 2/10")
    os.unlink(found.group(1))


async def test_cancelling_the_call_kills_the_worker() -> None:
    """An abort (the call's cancellation) ends a running script: its worker process is gone
    when the cancellation returns."""
    import trio

    from pi_builtin_tools.codemode.javascript import execute_codemode

    before = codemode_workers()
    with trio.move_on_after(1.5) as scope:
        await execute_codemode("c1", {"code": "while (true) {}"}, None, None)
    assert scope.cancelled_caught
    assert codemode_workers() == before


def test_an_input_error_is_a_plain_error_result(tmp_path: Path) -> None:
    message = run_script(tmp_path, '// @options: {"timeout": 5}\nx')
    assert (message["content"], message["details"], message["isError"]) == (
        [
            {
                "type": "text",
                "text": "@options only supports `max_output_tokens` and `timeout_ms`; got `timeout`",
            }
        ],
        {},
        True,
    )


@pytest.mark.slow
def test_a_busy_script_runs_until_its_own_deadline_past_ten_seconds(tmp_path: Path) -> None:
    """The worker outlives the host thread that spawned it (trio retires idle threads after 10
    s): only the script's own ``timeout_ms`` ends a busy script."""
    message = run_script(tmp_path, '// @options: {"timeout_ms": 11500}\nwhile (true) {}')
    assert texts(message) == [
        FAILED,
        "Script error:\nScript timed out: Execution timed out after 11500 ms\n\n"
        "No tool calls were made.",
    ]
    header = re.fullmatch(
        r"Script failed\nWall time (\d+\.\d) seconds\nOutput:\n", message["content"][0]["text"]
    )
    assert header is not None, message["content"][0]["text"]
    # It ran to its own deadline (not trio's ten seconds); the host adds start-up under load.
    assert 11.5 <= float(header.group(1)) < 13.0


def _workers_of(pid: int) -> list[int]:
    """Live codemode workers started by the process ``pid`` (they name it in their environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        marker = f"PI_CODEMODE_PARENT_PID={pid}".encode()
        if b"codemode/_worker.py" in cmdline and marker in environ and state != "Z":
            found.append(int(entry))
    return found


def test_a_killed_pi_leaves_no_busy_worker(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [str(PI), "-p", "builtin_tools", "call", "codemode", json.dumps({"code": "while(true){}"})],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PI_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while not _workers_of(proc.pid):
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 3
        while _workers_of(proc.pid):
            assert time.monotonic() < deadline, f"workers left: {_workers_of(proc.pid)}"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()


def test_progress_details_are_snapshots_of_the_rows() -> None:
    """``ScriptRun.details()`` (each progress update's ``details``) copies the list of rows the
    rows keep up to date: a snapshot keeps what it showed while later calls start, finish, fail
    or are cancelled, and the last one equals the rows built afresh."""
    from pi_builtin_tools.codemode.common import ScriptRun

    run = ScriptRun("c1")
    first = run.start_call("read", {"path": "a.txt"})
    before = run.details()
    second = run.start_call("bash", {"command": "ls"})
    ScriptRun.finish_call(first, "c1/1", "ok", None)
    middle = run.details()
    ScriptRun.finish_call(second, "c1/2", "error", "boom")
    second.duration_ms = 7
    first.args = '{"path":"b.txt"}'
    after = run.details()
    assert before == {
        "calls": [{"id": "c1/?", "name": "read", "args": '{"path":"a.txt"}', "status": "running"}]
    }
    assert [row["status"] for row in middle["calls"]] == ["ok", "running"]
    assert after["calls"][1] == {
        "id": "c1/2",
        "name": "bash",
        "args": '{"command":"ls"}',
        "status": "error",
        "durationMs": 7,
        "error": "boom",
    }
    assert after["calls"][0]["args"] == '{"path":"b.txt"}'
    assert after == {"calls": [row.to_json() for row in run.calls]}
