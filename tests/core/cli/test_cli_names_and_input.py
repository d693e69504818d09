"""The small holes: a misspelt plugin name in ``--no-plugin``, ``PI_DISABLED_PLUGINS`` or
``PI_PLUGINS`` is an error with a suggestion; config errors name the file actually used
(``--config other.toml``) and the table holding the bad key; ``pi call`` takes ARGS_JSON from
stdin (``-``) or a file (``@FILE``). Exact stderr lines and exit codes, real ``pi`` processes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import PI, Result

BUILTINS = ("-p", "builtin_tools")


def run_pi(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Result:
    proc = subprocess.run(
        [str(PI), *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


# -- misspelt plugin names -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (["--no-plugin", "sandbx", "plugins"], {},
         "--no-plugin sandbx: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
        (["--no-plugin", "buitin_tools", "tools"], {},
         "--no-plugin buitin_tools: no plugin named 'buitin_tools' "
         "(did you mean 'builtin_tools'?)"),
        (["plugins"], {"PI_DISABLED_PLUGINS": "sandbox,sandbx"},
         "PI_DISABLED_PLUGINS: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
        (["plugins"], {"PI_PLUGINS": "sandbx"},
         "PI_PLUGINS: no plugin named 'sandbx' (did you mean 'sandbox'?)"),
    ],
)  # fmt: skip
def test_a_misspelt_plugin_name_is_exit_2_with_a_suggestion(
    plugin_env: Path, args: list[str], env: dict[str, str], line: str
) -> None:
    r = run_pi(*args, env=env)
    assert (r.status, r.out, r.err) == (2, "", f"pi: error: {line}\n")


def test_an_unknown_plugin_name_without_a_close_one_lists_the_installed(
    plugin_env: Path,
) -> None:
    import importlib.metadata

    installed = ", ".join(sorted({ep.name for ep in importlib.metadata.entry_points(group="pi")}))
    r = run_pi("--no-plugin", "zzzz", "plugins")
    assert (r.status, r.out, r.err) == (
        2,
        "",
        f"pi: error: --no-plugin zzzz: no plugin named 'zzzz' (installed: {installed})\n",
    )


def test_blocking_a_plugin_given_with_p_is_no_error(plugin_env: Path) -> None:
    r = run_pi("--no-plugin", "cli_plugin", "-p", "cli_plugin", "plugins")
    assert (r.status, r.out, r.err) == (0, "no plugins loaded\n", "")


# -- config errors name the file used ------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key_and_reason"),
    [
        ("[tools.bash]\ncomand_prefix = 'x'\n", "tools.bash.comand_prefix: unknown key"),
        ("[tools.bash]\ncommand_prefix = 3\n", "tools.bash.command_prefix: must be a string"),
        ("[tools]\nbash = 3\n", "tools.bash: must be a table ([tools.bash])"),
        ("[tools.read]\nfoo = 1\n", "tools.read.foo: unknown key"),
        ("[sandbox]\nbackend = 'bwrapp'\n",
         "sandbox.backend: Input should be 'local', 'bwrap', 'ssh', 'container' or 'ray'"),
        ("[pi]\nmax_parallel_tools = 0\n",
         "pi.max_parallel_tools: Input should be greater than or equal to 1 (got 0)"),
    ],
)  # fmt: skip
def test_config_errors_name_the_file_given_with_config(
    plugin_env: Path, toml: str, key_and_reason: str
) -> None:
    (plugin_env / "other.toml").write_text(toml)
    (plugin_env / "pi.toml").write_text("")  # a pi.toml nearby must not be named
    r = run_pi(
        "--config", "other.toml", *BUILTINS, "-p", "sandbox", "call", "bash", '{"command":"true"}'
    )
    assert (r.status, r.out) == (2, "")
    assert r.err == f"pi: error: {plugin_env / 'other.toml'}: {key_and_reason}\n"


def test_config_errors_name_the_pi_toml_found_above(plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text("[tools.bash]\ncomand_prefix = 'x'\n")
    (plugin_env / "sub").mkdir()
    proc = subprocess.run(
        [str(PI), *BUILTINS, "call", "bash", '{"command":"true"}'],
        cwd=plugin_env / "sub",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2,
        "",
        f"pi: error: {plugin_env / 'pi.toml'}: tools.bash.comand_prefix: unknown key\n",
    )


# -- ARGS_JSON from stdin or a file --------------------------------------------------------


def test_args_json_dash_reads_stdin(plugin_env: Path) -> None:
    r = run_pi("-p", "cli_plugin", "call", "echo", "-", "--json", stdin=b'{"value": "piped"}')
    assert (r.status, r.err) == (0, "")
    assert json.loads(r.out)["content"] == [{"type": "text", "text": "piped"}]


def test_after_reading_args_from_stdin_the_tool_sees_no_stdin(plugin_env: Path) -> None:
    r = run_pi("-p", "cli_plugin", "call", "stdin", "-", "--json", stdin=b"{}\n")
    assert (r.status, r.err) == (0, "")
    assert json.loads(r.out)["content"] == [{"type": "text", "text": "''"}]


def test_args_json_at_file_reads_the_file(plugin_env: Path) -> None:
    (plugin_env / "args.json").write_text('{"value": "from a file"}')
    r = run_pi("-p", "cli_plugin", "call", "echo", "@args.json", "--json")
    assert (r.status, r.err) == (0, "")
    assert json.loads(r.out)["content"] == [{"type": "text", "text": "from a file"}]


def test_a_one_mib_bash_command_through_args_file(plugin_env: Path) -> None:
    command = ": '" + "x" * (1024 * 1024) + "'; echo ok"
    (plugin_env / "big.json").write_text(json.dumps({"command": command}))
    r = run_pi(*BUILTINS, "call", "bash", "@big.json", "--json")
    assert (r.status, r.err) == (0, "")
    assert json.loads(r.out)["content"] == [{"type": "text", "text": "ok\n"}]
    piped = json.dumps({"command": command}).encode()
    r = run_pi(*BUILTINS, "call", "bash", "-", "--json", stdin=piped)
    assert (r.status, r.err) == (0, "")
    assert json.loads(r.out)["content"] == [{"type": "text", "text": "ok\n"}]


@pytest.mark.parametrize(
    ("argument", "stdin", "line"),
    [
        ("@missing.json", None, "ARGS_JSON @missing.json: cannot read: No such file or directory"),
        ("@.", None, "ARGS_JSON @.: cannot read: Is a directory"),
        ("@", None, "ARGS_JSON @: a file name must follow '@'"),
        ("@bad.json", None,
         "ARGS_JSON @bad.json is not valid JSON: Expecting value (line 1, column 1)"),
        ("@latin1.json", None, "ARGS_JSON @latin1.json is not valid UTF-8"),
        ("-", b"{", "ARGS_JSON - (stdin) is not valid JSON: "
         "Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("-", b"", "ARGS_JSON - (stdin) is not valid JSON: Expecting value (line 1, column 1)"),
        ("{", None, "ARGS_JSON is not valid JSON: "
         "Expecting property name enclosed in double quotes (line 1, column 2)"),
    ],
)  # fmt: skip
def test_unusable_args_json_is_exit_2_with_one_line(
    plugin_env: Path, argument: str, stdin: bytes | None, line: str
) -> None:
    (plugin_env / "bad.json").write_text("nope")
    (plugin_env / "latin1.json").write_bytes(b'{"value": "caf\xe9"}')
    r = run_pi("-p", "cli_plugin", "call", "echo", argument, stdin=stdin)
    assert (r.status, r.out, r.err) == (2, "", f"pi: error: {line}\n")


def test_args_json_file_is_bounded(plugin_env: Path, pi: Callable[..., Result]) -> None:
    r = pi("-p", "cli_plugin", "call", "echo", "@/dev/zero")
    assert (r.status, r.out, r.err) == (
        2,
        "",
        "pi: error: ARGS_JSON @/dev/zero: larger than 64 MiB\n",
    )
