"""The documentation builds with ``mkdocs build --strict`` (issue 2, item 16), and its hook
reference covers every hook."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core import hookspecs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_docs_build_strict(tmp_path: Path, require_group) -> None:
    require_group("docs")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "site" / "reference" / "hooks" / "index.html").read_text()
    for name in hookspecs.HOOK_CALL_MODES:
        assert f'id="pi_core.hookspecs.{name}"' in page, name
    tutorial = (tmp_path / "site" / "tutorial" / "first-plugin" / "index.html").read_text()
    assert "pi_before_tool_call" in tutorial

    # Sphinx roles of the docstrings are references (docs/sphinx_roles.py), never raw text: a
    # link where the site documents the object, its name as code otherwise.
    raw = {
        f"{path.relative_to(tmp_path / 'site')}: {found}"
        for path in (tmp_path / "site").rglob("*.html")
        for found in RAW_ROLE.findall(path.read_text())
    }
    assert sorted(raw) == []
    link = (
        '<a class="autorefs autorefs-internal" title="PluginError (pi_core.PluginError)" '
        'href="../api/#pi_core.PluginError"><code>PluginError</code></a>'
    )
    assert link in page  # :class:`~pi_core._errors.PluginError` in a hook's docstring
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    assert api.count('class="autorefs autorefs-internal"') > 100


RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):(?:`|<code>)")
"""A Sphinx role as it shows when nothing renders it: ``:class:<code>X</code>``."""


# ---------------------------------------------------------------------------------------------
# The documentation's examples run, and its reference pages cover what the code has.
# ---------------------------------------------------------------------------------------------

PI = Path(sys.executable).parent / "pi"
SNIPPETS = ROOT / "docs" / "snippets"
DOCS = ROOT / "docs"


def pi(
    *args: str, cwd: Path = ROOT, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``pi`` command with no config file in reach of ``cwd`` unless one is named, and
    pi's own plugins plus those named (``-p``)."""
    env = {
        "PATH": f"{PI.parent}:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "PI_DISABLE_THIRD_PARTY_AUTOLOAD": "1",  # the examples' plugins, not the environment's
    }
    if "XDG_STATE_HOME" in os.environ:  # checkpoints go where the test session keeps them
        env["XDG_STATE_HOME"] = os.environ["XDG_STATE_HOME"]
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(PI), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


MODE_WORDS = {
    "first_non_none": "first non-None",
    "collect": "collect",
    "chain": "chain",
    "first_block": "first block",
    "notify": "notify",
}


def test_hook_page_states_every_call_mode() -> None:
    rows = {}
    for line in (DOCS / "reference" / "hooks.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`pi_"):
            rows[cells[0].strip("`")] = (cells[2], cells[3])
    expected = {
        name: (MODE_WORDS[mode], "yes" if is_async else "no")
        for name, (mode, is_async) in hookspecs.HOOK_CALL_MODES.items()
    }
    assert rows == expected


def test_cli_reference_names_every_command_and_option() -> None:
    from pi_core._cli.parser import BUILTIN_COMMANDS, build_parser

    page = (DOCS / "reference" / "cli.md").read_text()
    parser = build_parser()
    options = [o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in BUILTIN_COMMANDS:
        assert f"## `pi {name}`" in page, name
        sub = subparsers.choices[name]
        options += [o for a in sub._actions for o in a.option_strings if o not in ("-h", "--help")]
    missing = [o for o in options if f"`{o}" not in page and f"[{o}" not in page]
    assert missing == []
    assert "## `pi policy check`" in page


def test_cli_reference_version_example() -> None:
    """``pi --version`` as the reference shows it (the plugins of pi's own distributions; a
    plugin installed besides them adds its line)."""
    page = (DOCS / "reference" / "cli.md").read_text()
    block = page.split("  $ pi --version\n", 1)[1].split("```", 1)[0]
    shown = [line.strip() for line in block.splitlines() if line.strip()]
    proc = pi("--version")
    assert proc.returncode == 0, proc.stderr
    own = ("pi-builtin-tools", "pi-sandbox-plugin")
    lines = [
        line
        for line in proc.stdout.splitlines()
        if not line.startswith("plugin ") or line.split(": ", 1)[1].split(" ")[0] in own
    ]
    assert lines == shown


def test_configuration_reference_names_every_key() -> None:
    from pi_builtin_tools.shell.bash import _BACKEND_OPTION_KEYS, _OPTION_KEYS
    from pi_core._config import CoreSettings
    from pi_sandbox_plugin.settings import config as sandbox

    page = (DOCS / "reference" / "configuration.md").read_text()
    keys = [*CoreSettings.model_fields, *_OPTION_KEYS, *_BACKEND_OPTION_KEYS]
    keys += ["auto_resize_images", "supports_images", "max_image_width", "max_image_height"]
    keys += ["max_image_bytes", "jpeg_quality"]
    for model in (
        sandbox.SandboxConfig,
        sandbox.PolicyConfig,
        sandbox.PolicyTests,
        sandbox.BwrapConfig,
        sandbox.SshConfig,
        sandbox.ContainerConfig,
        sandbox.RayConfig,
        sandbox.ClaudeHooksConfig,
        sandbox.CodexRulesConfig,
        sandbox.AuditConfig,
        sandbox.NetworkConfig,
    ):
        keys += [field.alias or name for name, field in model.model_fields.items()]
    assert [k for k in keys if f"`{k}`" not in page and f".{k}]`" not in page] == []


def test_tools_reference_names_every_tool_and_parameter() -> None:
    proc = pi("tools", "--json")
    assert proc.returncode == 0, proc.stderr
    page = (DOCS / "reference" / "tools.md").read_text()
    missing = []
    for entry in json.loads(proc.stdout):
        if f"## {entry['name']}\n" not in page:
            missing.append(entry["name"])
        missing += [p for p in entry["parameters"]["properties"] if f"| `{p}` |" not in page]
    assert missing == []


def test_policy_plugin_snippet_blocks_env_writes(tmp_path: Path) -> None:
    proc = pi(
        "-p", "policy_plugin", "call", "write", '{"path": ".env", "content": "x"}',
        cwd=tmp_path, pythonpath=SNIPPETS,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1,
        ".env: .env files are read-only here\n",
        "",
    )
    assert not (tmp_path / ".env").exists()


def test_bash_backend_snippet_runs_nothing(tmp_path: Path) -> None:
    proc = pi(
        "-p", "echo_backend", "call", "bash", '{"command": "rm -rf /"}',
        cwd=tmp_path, pythonpath=SNIPPETS,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, f"would run in {tmp_path}: rm -rf /\n")


def test_provider_plugin_snippet_drives_the_loop() -> None:
    proc = pi(
        "-p", "shout_provider", "run", "what is here?", "--model", "shout:any",
        "--tools", "ls", "--cwd", "docs/examples/demo",
        pythonpath=SNIPPETS,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout.split("\n", 2)[2]  # after "model:" and "cwd:"
    listing = "README.md\nstats.py\ntest_stats.py"
    assert body.startswith(
        "\n• ls {}\n  README.md\n  stats.py\n  test_stats.py\n\n"
        f"WHAT IS HERE?\n{listing}\n\n2 turns, 1 tool call, 0 errors, "
    )


def test_unknown_provider_lists_the_registered_ones() -> None:
    proc = pi("run", "hi", "--model", "nope:x")
    assert (proc.returncode, proc.stderr) == (
        2,
        "pi: error: unknown model provider 'nope' in 'nope:x' "
        "(registered providers: anthropic, openai, scripted)\n",
    )


def test_command_plugin_snippet(tmp_path: Path) -> None:
    assert pi("-p", "hello_command", "hello", "Ada", cwd=tmp_path, pythonpath=SNIPPETS).stdout == (
        "hello, Ada!\n"
    )
    shout = pi("-p", "hello_command", "hello", "Ada", "--shout", cwd=tmp_path, pythonpath=SNIPPETS)
    assert (shout.returncode, shout.stdout) == (0, "HELLO, ADA!\n")
    (tmp_path / "pi.toml").write_text('[hello]\ngreeting = "good morning"\n')
    configured = pi("-p", "hello_command", "hello", "Ada", cwd=tmp_path, pythonpath=SNIPPETS)
    assert configured.stdout == "good morning, Ada!\n"
    missing = pi("hello", "Ada", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == (
        "pi: error: argument COMMAND: invalid choice: 'hello' "
        "(choose from 'plugins', 'tools', 'call', 'replay', 'run', 'checkpoints', 'rewind', 'config', 'export', 'policy',"
        " 'mcp')\n"
    )


def test_testing_how_to_snippet_passes() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            str(SNIPPETS / "test_policy_plugin.py"),
        ],
        cwd=ROOT,
        env={"PATH": f"{PI.parent}:/usr/bin:/bin", "PYTHONPATH": str(SNIPPETS)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


def test_session_audit_snippet_passes() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            str(SNIPPETS / "test_session_audit.py"),
        ],
        cwd=ROOT,
        env={"PATH": f"{PI.parent}:/usr/bin:/bin", "PYTHONPATH": str(SNIPPETS)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_debug_a_plugin_trace_example(tmp_path: Path) -> None:
    """The ``--trace-hooks`` console example of the testing how-to, durations aside."""
    page = (DOCS / "how-to" / "testing-plugins.md").read_text()
    block = page.split("$ PYTHONPATH=docs/snippets pi --trace-hooks", 1)[1].split("```", 1)[0]
    shown = [line for line in block.splitlines()[1:] if line]
    (tmp_path / "notes.txt").write_text("")
    proc = pi("--trace-hooks", "-p", "session_audit", "call", "ls", "{}", cwd=tmp_path,
              pythonpath=SNIPPETS)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [re.sub(r" \d+\.\d\dms ", " <ms>ms ", line) for line in shown]
    got = proc.stderr.splitlines()
    got.insert(got.index("audit: call session completed after 1 call(s)"), proc.stdout.strip())
    assert [re.sub(r" \d+\.\d\dms ", " <ms>ms ", line) for line in got] == lines


SANDBOX_SNIPPETS = sorted((SNIPPETS / "sandbox").glob("*.toml"))


@pytest.mark.parametrize("path", SANDBOX_SNIPPETS, ids=lambda p: p.name)
def test_sandbox_config_snippets_are_valid(path: Path) -> None:
    from pi_core._config import load_config
    from pi_sandbox_plugin import load_sandbox_config

    config = load_config(path)
    sandbox = load_sandbox_config(config.data, path)  # runs [sandbox.policy.tests] too
    assert sandbox is not None
    backends = {
        "deny": "local",
        "allow": "local",
        "options": "local",
        "container-exec": "container",
        "container-local": "container",
        "network": "bwrap",
    }
    assert sandbox.backend == backends.get(path.stem, path.stem)


def test_container_how_to_flags_are_the_container_tests() -> None:
    """The how-to's machine without a registry (container-local.toml) uses the flags pi's own
    container tests run with, on an image that is never pulled."""
    from container_support import PODMAN_CLI_ARGS, PODMAN_RUN_ARGS

    from pi_core._config import load_config
    from pi_sandbox_plugin import load_sandbox_config

    path = SNIPPETS / "sandbox" / "container-local.toml"
    sandbox = load_sandbox_config(load_config(path).data, path)
    assert sandbox is not None
    container = sandbox.container
    assert container.cli_args == PODMAN_CLI_ARGS
    assert container.run_args == ["--pull", "never", *PODMAN_RUN_ARGS, "--network", "none"]
    assert container.image.startswith("localhost/")


def test_sandbox_how_to_decisions(tmp_path: Path) -> None:
    deny = str(SNIPPETS / "sandbox" / "deny.toml")
    check = pi("--config", deny, "policy", "check", "cd src && git push origin main")
    assert (check.returncode, check.stdout) == (
        1,
        'decision: deny\nrule: ["git", "push"]\nreason: rule ["git", "push"] denies '
        '`git push origin main`\ncommands:\n  ["cd", "src"]\n  ["git", "push", "origin", "main"]\n',
    )
    allow = pi("--config", str(SNIPPETS / "sandbox" / "allow.toml"), "policy", "check", "git push")
    assert (allow.returncode, allow.stdout) == (
        1,
        'decision: deny\nrule: -\nreason: `git push` matches no allow rule (mode = "allow")\n'
        'commands:\n  ["git", "push"]\n',
    )
    blocked = pi(
        "--config", deny, "call", "bash", '{"command": "git push"}', "--cwd", str(tmp_path)
    )
    assert blocked.stdout == (
        'Command blocked by the sandbox command policy: rule ["git", "push"] denies `git push`\n'
    )
    (tmp_path / ".env").write_text("K=1\n")
    read = pi("--config", deny, "call", "read", '{"path": ".env"}', "--cwd", str(tmp_path))
    assert (read.returncode, read.stdout) == (
        1,
        f"Reading '{tmp_path}/.env' is denied by the sandbox path policy "
        "(deny_paths pattern '.env')\n",
    )
    # the warning of the page: with the local backend, bash is limited by the command policy alone
    cat = pi("--config", deny, "call", "bash", '{"command": "cat .env"}', "--cwd", str(tmp_path))
    assert (cat.returncode, cat.stdout) == (0, "K=1\n")


def test_sandbox_how_to_identity_and_protected_files(tmp_path: Path) -> None:
    """The hard-link example of the path policy section, and pi's own config file (here the
    ``--config`` file) refused to the write tool with the text the page lists."""
    deny = SNIPPETS / "sandbox" / "deny.toml"
    (tmp_path / ".env").write_text("K=1\n")
    (tmp_path / "innocent.txt").hardlink_to(tmp_path / ".env")
    read = pi(
        "--config", str(deny), "call", "read", '{"path": "innocent.txt"}', "--cwd", str(tmp_path)
    )
    assert (read.returncode, read.stdout) == (
        1,
        f"Reading '{tmp_path}/innocent.txt' (the same file as '{tmp_path}/.env') is denied by "
        "the sandbox path policy (deny_paths pattern '.env')\n",
    )
    target = json.dumps({"path": str(deny.absolute()), "content": "[sandbox]\n"})
    write = pi("--config", str(deny), "call", "write", target, "--cwd", str(tmp_path))
    assert (write.returncode, write.stdout) == (
        1,
        f"Writing '{deny.absolute()}' is denied: pi's own configuration is protected from the "
        "agent\n",
    )
    # the local backend cannot protect anything from bash
    cat = pi(
        "--config",
        str(deny),
        "call",
        "bash",
        '{"command": "cat innocent.txt"}',
        "--cwd",
        str(tmp_path),
    )
    assert (cat.returncode, cat.stdout) == (0, "K=1\n")


def test_sandbox_how_to_bwrap_example(tmp_path: Path, require_program) -> None:
    require_program("bwrap")
    (tmp_path / ".env").write_text("K=1\n")
    proc = pi(
        "--config", str(SNIPPETS / "sandbox" / "bwrap.toml"), "call", "bash",
        '{"command": "cat .env; touch /usr/x; echo done"}', "--cwd", str(tmp_path),
    )  # fmt: skip
    if "SandboxUnavailable" in proc.stdout or "bwrap" in proc.stdout.split("\n", 1)[0]:
        pytest.skip(f"bwrap cannot create its namespaces here: {proc.stdout}")
    assert proc.stdout == (
        "cat: .env: Permission denied\ntouch: cannot touch '/usr/x': Read-only file system\ndone\n"
    )


def test_sandbox_how_to_network_check() -> None:
    snippet = str(SNIPPETS / "sandbox" / "network.toml")
    check = pi("--config", snippet, "policy", "check", "--network", "files.pythonhosted.org")
    assert (check.returncode, check.stdout) == (
        0,
        "decision: allow\ndestination: files.pythonhosted.org:443\nprotocol: https\n"
        "rule: sandbox.network.allow '*.pythonhosted.org'\n",
    )
    page = (DOCS / "how-to" / "sandbox.md").read_text()
    assert check.stdout in page


def test_parallel_batch_snippet_orders_results_by_source(tmp_path: Path) -> None:
    def order(*extra: str) -> list[str]:
        proc = pi(
            "replay",
            "docs/snippets/parallel-batch.jsonl",
            "--events",
            "--cwd",
            str(tmp_path),
            *extra,
        )
        assert proc.returncode == 0, proc.stderr
        seen = []
        for line in proc.stdout.splitlines():
            event = json.loads(line)
            call = event.get("toolCallId") or event.get("message", {}).get("toolCallId")
            if event["type"] in ("tool_execution_end", "message_start") and call:
                seen.append(f"{event['type']} {call}")
        return seen

    assert order() == [
        "tool_execution_end fast",
        "tool_execution_end slow",
        "message_start slow",
        "message_start fast",
    ]
    assert order("--sequential") == [
        "tool_execution_end slow",
        "message_start slow",
        "tool_execution_end fast",
        "message_start fast",
    ]


def test_mutation_queue_snippet() -> None:
    proc = subprocess.run(
        [sys.executable, str(SNIPPETS / "mutation_queue_demo.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (
        0,
        "first a starts\nb starts\nb ends\nfirst a ends\nsecond a starts\nsecond a ends\n",
    )


EXAMPLE_WITH_OUTPUT = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.S)


@pytest.mark.parametrize("package", ["pi_core", "pi_builtin_tools", "pi_sandbox_plugin"])
def test_package_readme_example_prints_what_it_shows(package: str, tmp_path: Path) -> None:
    examples = EXAMPLE_WITH_OUTPUT.findall((ROOT / package / "README.md").read_text())
    assert examples, package
    for code, output in examples:
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert (proc.stdout, proc.stderr) == (output, "")


def test_verify_how_to(tmp_path: Path) -> None:
    session = tmp_path / "demo.jsonl"
    run = pi("run", "--cwd", str(tmp_path / "demo-run"), "--session", str(session))
    assert run.returncode == 0, run.stderr
    shutil.copytree(ROOT / "docs/examples/demo", tmp_path / "ws")
    full = pi("replay", str(session), "--verify", "--cwd", str(tmp_path / "ws"))
    assert (full.returncode, full.stdout) == (
        0,
        "tool  agree  total\nbash      2      2\ngrep      1      1\nread      1      1\n"
        "edit      1      1\nall       5      5\n",
    )
    (tmp_path / "empty").mkdir()
    seeded = pi(
        "replay", str(session), "--verify", "--cwd", str(tmp_path / "empty"),
        "--seed-from-reads", "--bash", "recorded", "--json",
    )  # fmt: skip
    assert [json.loads(line) for line in seeded.stdout.splitlines()] == [
        {"toolCallId": "call_2", "toolName": "grep", "agree": True, "why": "same text"},
        {"toolCallId": "call_3", "toolName": "read", "agree": True, "why": "same text"},
        {"toolCallId": "call_4", "toolName": "edit", "agree": True, "why": "same outcome"},
        {
            "summary": {
                "grep": {"agree": 1, "total": 1},
                "read": {"agree": 1, "total": 1},
                "edit": {"agree": 1, "total": 1},
            }
        },
    ]


def test_tutorial_loop_examples(tmp_path: Path) -> None:
    weather = ROOT / "docs/examples/pi_weather/src"
    script = tmp_path / "weather.jsonl"
    script.write_text(
        '{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"weather",'
        '"arguments":{"city":"Oslo"}}],"stopReason":"toolUse"}\n'
    )
    replay = pi("-p", "pi_weather.plugin", "replay", str(script), cwd=tmp_path, pythonpath=weather)
    assert (replay.returncode, replay.stdout) == (
        0,
        'weather {"city":"Oslo"}\nOslo: sunny for 1 day(s)\n',
    )
    curl = pi(
        "-p", "pi_weather.plugin", "call", "bash", '{"command": "curl https://example.com"}',
        cwd=tmp_path, pythonpath=weather,
    )  # fmt: skip
    assert (curl.returncode, curl.stdout) == (1, "network access is not allowed\n")


def console_examples(page: str, marker: str) -> list[tuple[list[str], str]]:
    """The ``$ COMMAND`` lines of the console block that starts with ``marker``, each with the
    output shown under it."""
    block = page.split(marker, 1)[1].split("```", 1)[0]
    examples: list[tuple[list[str], str]] = []
    for line in (marker + block).splitlines(keepends=True):
        if line.startswith("$ "):
            examples.append((shlex.split(line[2:]), ""))
        else:
            examples[-1] = (examples[-1][0], examples[-1][1] + line)
    return examples


def test_tutorial_typed_parameters(tmp_path: Path) -> None:
    page = (DOCS / "tutorial" / "first-plugin.md").read_text()
    examples = console_examples(page, "$ PYTHONPATH=docs/snippets pi -p typed_tool")
    assert len(examples) == 2
    for words, shown in examples:
        assert words[:2] == ["PYTHONPATH=docs/snippets", "pi"]
        proc = pi(*words[2:], cwd=tmp_path, pythonpath=SNIPPETS)
        assert proc.stdout == shown, proc.stderr
    days = json.loads(
        page.split("The parameter `days` becomes:", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    )
    tools = pi("-p", "typed_tool", "tools", "--json", cwd=tmp_path, pythonpath=SNIPPETS)
    (forecast,) = [t for t in json.loads(tools.stdout) if t["name"] == "forecast"]
    assert forecast["parameters"]["properties"]["days"] == days


def test_every_snippet_marker_is_intact() -> None:
    """A ``--8<-- "FILE"`` line (pymdownx.snippets) includes FILE; once a formatter spaces it out
    (``--8 < --"FILE"``) the page shows the file's name instead of its code, and the build still
    passes."""
    broken = [
        f"{page.relative_to(DOCS)}:{number}"
        for page in sorted(DOCS.rglob("*.md"))
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s*-+\s*8\s*<\s*-+", line) and not line.lstrip().startswith('--8<-- "')
    ]
    assert broken == []


def test_call_a_tool_from_a_tool_example(tmp_path: Path) -> None:
    page = (DOCS / "how-to/call-a-tool-from-a-tool.md").read_text(encoding="utf-8")
    shown = json.loads(page.split("--cwd /tmp/w --json\n", 1)[1].split("\n", 1)[0])
    (tmp_path / "a.txt").write_text("one two three\n")
    (tmp_path / "b.txt").write_text("one two\n")
    script = str(SNIPPETS / "largest-file.jsonl")
    out = pi(
        "-p",
        "nested_tools",
        "replay",
        script,
        "--cwd",
        str(tmp_path),
        "--json",
        pythonpath=SNIPPETS,
    )
    assert (out.returncode, out.stderr) == (0, "")
    got = json.loads(out.stdout)

    def stable(message: dict) -> dict:  # type: ignore[type-arg]
        message = json.loads(json.dumps(message))
        message.pop("timestamp")
        for entry in message["nestedCalls"]["calls"]:
            assert isinstance(entry.pop("durationMs"), int)
        return message

    assert stable(got) == stable(shown)
    # --sequential serialises the nested calls: each word_stats runs its read before the next
    events = pi(
        "-p", "nested_tools", "replay", script, "--cwd", str(tmp_path), "--events", "--sequential",
        pythonpath=SNIPPETS,
    )  # fmt: skip
    order = [
        f"{e['type'][len('tool_execution_') :]} {e['toolCallId']} {e.get('parentToolCallId', '-')}"
        for e in map(json.loads, events.stdout.splitlines())
        if e["type"].startswith("tool_execution_")
    ]
    assert order == [
        "start c1 -",
        "start c1/1 c1",
        "start c1/1/1 c1/1",
        "end c1/1/1 c1/1",
        "end c1/1 c1",
        "start c1/2 c1",
        "start c1/2/1 c1/2",
        "end c1/2/1 c1/2",
        "end c1/2 c1",
        "end c1 -",
    ]


def test_existing_policies_how_to_check_output(tmp_path: Path) -> None:
    """The ``pi policy check`` output shown on the how-to is what pi prints in its example
    project (hooks run for real, rules loaded with their examples checked)."""
    project = tmp_path / "policies"
    shutil.copytree(SNIPPETS / "policies", project)
    page = (DOCS / "how-to" / "existing-policies.md").read_text()
    block = page.split("$ pi policy check \"bash -lc 'git status && git push'\"\n", 1)[1]
    shown = block.split("```", 1)[0]
    check = pi("policy", "check", "bash -lc 'git status && git push'", cwd=project)
    assert (check.returncode, check.stderr, check.stdout) == (1, "", shown)
    # the JSON-style hook denies an edit of .env; a write outside the project needs a person
    env = pi("call", "write", json.dumps({"path": ".env", "content": "K=1"}), cwd=project)
    assert (env.returncode, env.stdout) == (1, ".env files hold secrets: edit them by hand\n")
    outside = pi(
        "call", "write", json.dumps({"path": str(tmp_path / "x"), "content": "1"}), cwd=project
    )
    assert outside.returncode == 1 and not (tmp_path / "x").exists()
    assert outside.stdout.startswith(
        "Blocked: this call needs a person's approval and there is no one to ask"
    )
    entries = [json.loads(line) for line in (project / "pi-audit.jsonl").read_text().splitlines()]
    assert [(e["tool"], e["decision"], e["source"].split(" ")[0:2]) for e in entries] == [
        ("write", "deny", ["claude", "hook"]),
        ("write", "deny", ["claude", "hook"]),
    ]
