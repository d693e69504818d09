"""Start-up cost of the ``pi`` command: what a session that calls no model must not import.

httpx (which imports rich and click for its own command line) is the heaviest import of the
model providers: the built-in providers plugin imports them only when a factory is asked for
(``--model``), so ``pi replay`` / ``pi call`` start without it (docs/explanation/performance.md,
P7). Each check runs in a fresh interpreter, as the console script does.

The same holds for what only some sessions need: jsonschema and referencing (arguments of flat
schemas are checked by hand; jsonschema writes the lines of invalid arguments), the sandbox
plugin's policy modules (imported by the first hook that finds a ``[sandbox]`` table), the Monty
interpreter of ``codemode_python`` (and asyncio, which it imports), the TOML parser (only when a
``pi.toml`` is found), the ``email`` parser of distribution metadata (read for ``pi plugins``
and error messages, not to load a plugin), and the code of built-in tools the call does not run:
``edit``'s matching and diff (``edit_diff``), ``find``'s glob compiler (``fd_glob``), and the
script tools and ``tool_search`` (registered from ``tool_definitions``, their modules imported by
their first call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HEAVY = ("httpx", "httpx_sse", "rich", "click", "PIL")

ONLY_WHEN_NEEDED = (
    "jsonschema",
    "referencing",
    "pi_core._tools.schema_validation",
    "pi_sandbox_plugin.settings.config",
    "pi_sandbox_plugin.backends.wiring",
    "pi_sandbox_plugin.policies.bash_parser",
    "pi_sandbox_plugin.policies.path_policy",
    "pi_sandbox_plugin.policies.command_policy",
    "tree_sitter",
    "pathspec",
    "pydantic_monty",
    "asyncio",
    "tomllib",
    "email.parser",
    "pi_builtin_tools.files.edit_diff",
    "pi_builtin_tools.search.fd_glob",
    "pi_builtin_tools.codemode.javascript",
    "pi_builtin_tools.codemode.python",
    "pi_builtin_tools.codemode.common",
    "pi_builtin_tools.codemode.declarations",
    "pi_builtin_tools.codemode.source",
    "pi_builtin_tools.catalog.tool_search",
)
"""Not imported by a plain ``pi replay`` of a valid ``read`` call without ``pi.toml``."""

PROBE = """
import sys
from pi_core._cli import main
sys.argv = ["pi", *sys.argv[1:]]
try:
    status = main()
finally:
    print(sorted(name for name in {heavy!r} if name in sys.modules), file=sys.stderr)
sys.exit(status)
"""


def test_replay_of_a_read_imports_no_provider_and_no_terminal_library(tmp_path: Path) -> None:
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "six.txt"}}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    script = tmp_path / "messages.jsonl"
    script.write_text(json.dumps(message) + "\n")
    argv = ["replay", str(script), "--cwd", str(tmp_path), "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["content"] == [{"type": "text", "text": "hello\n"}]
    assert proc.stderr.splitlines()[-1] == "[]"


def replay_read(tmp_path: Path, arguments: dict[str, object], modules: tuple[str, ...]) -> Any:
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": arguments}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    script = tmp_path / "messages.jsonl"
    script.write_text(json.dumps(message) + "\n")
    argv = ["replay", str(script), "--cwd", str(tmp_path), "--json"]
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=modules), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_replay_of_a_read_imports_only_what_the_call_needs(tmp_path: Path) -> None:
    proc = replay_read(tmp_path, {"path": "six.txt"}, ONLY_WHEN_NEEDED)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "hello\n"}]
    assert proc.stderr.splitlines()[-1] == "[]"


def test_invalid_arguments_import_jsonschema_for_the_error_lines(tmp_path: Path) -> None:
    proc = replay_read(tmp_path, {"path": [6]}, ("jsonschema", "pi_core._tools.schema_validation"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        'Validation failed for tool "read":\n  - path: expected string, got array\n'
    )
    assert proc.stderr.splitlines()[-1] == "['jsonschema', 'pi_core._tools.schema_validation']"


def test_a_sandbox_table_imports_the_policy_modules(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text('[sandbox.policy]\ndeny = [["rm"]]\n')
    modules = ("pi_sandbox_plugin.policies.path_policy", "tomllib")
    proc = replay_read(tmp_path, {"path": "six.txt"}, modules)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "hello\n"}]
    assert proc.stderr.splitlines()[-1] == "['pi_sandbox_plugin.policies.path_policy', 'tomllib']"


def test_the_providers_are_imported_when_a_model_is_resolved() -> None:
    code = (
        "import sys\n"
        "from pi_core._plugins.builtin_providers import builtin_provider_factories, resolve_model\n"
        "assert 'httpx' not in sys.modules\n"
        "provider = resolve_model(builtin_provider_factories(), 'openai:m', "
        "{'base_url': 'http://127.0.0.1:9/v1', 'api_key': 'k'})\n"
        "print(type(provider).__name__, 'httpx' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "OpenAIProvider True\n"


def test_wire_models_have_no_builtin_default_factory() -> None:
    """pydantic reads the signature of every default factory when it builds a model; a builtin
    with a text signature (``list``) is parsed with ``tokenize`` (17 million instructions for
    five fields at start-up), so the wire models use ``empty_list``."""
    import pydantic

    from pi_core._providers import base as provider_events
    from pi_core._wire import events, messages
    from pi_core._wire.base import empty_list

    factories = {
        f"{model.__name__}.{name}": field.default_factory
        for module in (messages, events, provider_events)
        for model in vars(module).values()
        if isinstance(model, type) and issubclass(model, pydantic.BaseModel)
        for name, field in model.model_fields.items()
        if field.default_factory is not None
    }
    parsed = {name for name, f in factories.items() if getattr(f, "__text_signature__", None)}
    assert parsed == set()  # ``dict`` has none: its signature fails at once
    assert factories["AssistantMessage.content"] is empty_list
    first, second = messages.AgentToolResult(), messages.AgentToolResult()
    assert first.content == [] and first.content is not second.content


DEFERRED_PROBE = """
import sys
from pi_core._cli import main
sys.argv = ["pi", *sys.argv[1:]]
try:
    status = main()
finally:
    from pi_core._providers import base
    from pi_core._tools import exposure
    models = (base.StreamStart, base.StreamDelta, base.StreamDone, base.StreamError,
              exposure._Exposure)
    print(sorted(m.__name__ for m in models if m.__pydantic_complete__), file=sys.stderr)
sys.exit(status)
"""


def test_a_replay_builds_no_validator_of_the_stream_events_or_tool_exposure(
    tmp_path: Path,
) -> None:
    """The provider stream events and the ``[tools.NAME]`` exposure model are ``defer_build``:
    a command that calls no model and has no ``[tools]`` table never builds their validators
    (``docs/explanation/performance.md``, P7); the first use builds them."""
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "six.txt"}}
    script = tmp_path / "messages.jsonl"
    script.write_text(json.dumps({"role": "assistant", "content": [call]}) + "\n")
    argv = ["replay", str(script), "--cwd", str(tmp_path), "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", DEFERRED_PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    # the replayed script is a model whose turns end with a ``StreamDone``: built by its use
    assert proc.stderr.splitlines()[-1] == "['StreamDone']"
    from pi_core._providers.base import StreamDone
    from pi_core._tools.exposure import exposures_from_config

    assert StreamDone.model_validate({"message": {"role": "assistant"}}).reason == "stop"
    assert exposures_from_config({"tools": {"read": {"exposure": "hidden"}}}) == {"read": "hidden"}


ENTRY_PROBE = """
import atexit, gc, sys
def report():
    print("collector on:", gc.isenabled(), "frozen:", gc.get_freeze_count() > 50_000, file=sys.stderr)
atexit.register(report)
sys.argv = ["pi", *sys.argv[1:]]
import _pi_entry
_pi_entry.main()
"""


def test_the_console_script_imports_the_cli_with_the_collector_off_then_freezes_it(
    tmp_path: Path,
) -> None:
    """``_pi_entry`` turns the cyclic collector off for the import of the CLI, then freezes what
    the import made and turns the collector on again: the command runs, and exits, with it on."""
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "six.txt"}}
    script = tmp_path / "messages.jsonl"
    script.write_text(json.dumps({"role": "assistant", "content": [call]}) + "\n")
    argv = ["replay", str(script), "--cwd", str(tmp_path), "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY_PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "hello\n"}]
    assert proc.stderr.splitlines()[-1] == "collector on: True frozen: True"


FAULT_PROBE = """
import random, resource, sys
tune = sys.argv[1] == "tuned"
if tune:
    import _pi_entry
    assert _pi_entry._tune_malloc()
random.seed(7)
view = memoryview(bytearray(1 << 20))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
kept = None
for _ in range(1500):  # chunks of a large output, as process_stream copies them out
    kept = bytes(view[: random.randint(300_000, 1 << 20)])
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_the_console_script_keeps_the_heap_for_output_chunks() -> None:
    """Under glibc, ``_pi_entry`` fixes malloc's thresholds: copying out a GiB of output chunks
    of changing sizes reuses the heap's pages instead of faulting fresh ones in."""
    try:
        os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        pytest.skip("the C library is not glibc")
    faults = {}
    for mode in ("default", "tuned"):
        proc = subprocess.run(
            [sys.executable, "-c", FAULT_PROBE, mode], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        faults[mode] = int(proc.stdout)
    assert faults["tuned"] < 2_000, faults
    assert faults["default"] > 3 * faults["tuned"], faults


DENY_LIST = (
    # terminal and HTTP libraries: only a model provider (``--model``) needs them
    "rich",
    "click",
    "httpx",
    "httpx_sse",
    "httpx2",
    # argument validation beyond flat schemas: the read tool's schema is flat
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    # the MCP client and server, and what they run on
    "mcp",
    "mcp_types",
    "anyio",
    "starlette",
    "uvicorn",
    # tracing, browsers, clusters, images, interpreters, parsers: other tools' and plugins'
    "opentelemetry",
    "playwright",
    "ray",
    "PIL",
    "pydantic_monty",
    "tree_sitter",
    "tree_sitter_bash",
    "pathspec",
    "yaml",
    "asyncio",
)
"""Top-level packages that ``pi call read`` of a small file must not import: none of them is
needed to read a file, and each costs start-up (docs/explanation/performance.md, P7)."""

DENY_PROBE = """
import sys
deny = set(sys.argv.pop(1).split(","))
sys.argv = ["pi", *sys.argv[1:]]
import _pi_entry
try:
    _pi_entry.main()
finally:
    offending = sorted(m for m in list(sys.modules) if m.partition(".")[0] in deny)
    print("OFFENDING", offending, file=sys.stderr)
"""


def test_call_read_imports_nothing_on_the_deny_list(tmp_path: Path) -> None:
    """The import guard: ``pi call read`` (through the console script's entry point, as a user
    runs it) imports no module of a package on :data:`DENY_LIST`; a failure names every module
    that was imported."""
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    argv = ["call", "read", '{"path": "six.txt"}', "--cwd", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-c", DENY_PROBE, ",".join(DENY_LIST), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    report = [line for line in proc.stderr.splitlines() if line.startswith("OFFENDING ")]
    offending = report[-1].removeprefix("OFFENDING ")
    assert offending == "[]", f"pi call read imported modules on the deny list: {offending}"


def test_the_whole_command_line_imports_no_policy_module(tmp_path: Path) -> None:
    """A plugin command (``pi mcp serve``) makes ``pi`` build its whole command line, ``pi
    policy`` included: the sandbox's policy modules and ``[sandbox]`` models are imported when
    ``pi policy check`` runs, not when it is registered."""
    modules = (
        "pi_sandbox_plugin.cli.policy_check",
        "pi_sandbox_plugin.settings.config",
        "pi_sandbox_plugin.interop.policy_sources",
    )
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=modules), "mcp", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: pi mcp serve")
    assert proc.stderr.splitlines()[-1] == "[]"
