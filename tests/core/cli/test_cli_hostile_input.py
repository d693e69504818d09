"""Input a careless user or an attacker gives the ``pi`` command: each gets one line on stderr and
exit 2, never a traceback, and nothing the user had is overwritten."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import PI

DEEP = "[" * 5000 + "]" * 5000


def pi(*argv: str, cwd: Path, stdout: object = subprocess.PIPE) -> tuple[int, str, str]:
    proc = subprocess.run(
        [str(PI), *argv],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout or "", proc.stderr


def test_deeply_nested_args_json_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(DEEP)
    assert pi("call", "read", "@deep.json", cwd=tmp_path) == (
        2,
        "",
        "pi: error: ARGS_JSON @deep.json is nested too deeply to parse\n",
    )
    assert pi("call", "read", DEEP, cwd=tmp_path) == (
        2,
        "",
        "pi: error: ARGS_JSON is nested too deeply to parse\n",
    )


def test_deeply_nested_session_line_is_a_usage_error(tmp_path: Path) -> None:
    ok = {"role": "assistant", "content": [], "stopReason": "stop"}
    (tmp_path / "s.jsonl").write_text(json.dumps(ok) + "\n" + DEEP + "\n")
    assert pi("replay", "s.jsonl", cwd=tmp_path) == (
        2,
        "",
        "pi: error: s.jsonl:2: nested too deeply to parse\n",
    )


def test_deeply_nested_config_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "deep.toml").write_text("x = " + "[" * 100_000)
    status, out, err = pi("--config", "deep.toml", "tools", cwd=tmp_path)
    assert (status, out, err) == (
        2,
        "",
        f"pi: error: {tmp_path / 'deep.toml'}: nested too deeply to parse\n",
    )


def test_a_config_that_never_ends_is_refused(tmp_path: Path) -> None:
    assert pi("--config", "/dev/zero", "tools", cwd=tmp_path) == (
        2,
        "",
        "pi: error: /dev/zero: larger than 4 MiB\n",
    )


def test_an_empty_config_name_is_refused(tmp_path: Path) -> None:
    assert pi("--config", "", "tools", cwd=tmp_path) == (
        2,
        "",
        "pi: error: --config: the file name is empty\n",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "read", '{"path": "a.txt"}'],
        ["tools", "--json"],
        ["replay", "calls.jsonl", "--json"],
    ],
)
def test_a_full_disk_on_stdout_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    (tmp_path / "calls.jsonl").write_text(json.dumps(message) + "\n")
    with open("/dev/full", "w") as full:
        status, _, err = pi(*argv, cwd=tmp_path, stdout=full)
    assert (status, err) == (2, "pi: error: cannot write output: No space left on device\n")


def test_an_existing_session_file_is_never_overwritten(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = tmp_path / "precious.jsonl"
    session.write_text("precious\n")
    status, out, err = pi("run", "--cwd", str(workspace), "--session", str(session), cwd=tmp_path)
    assert (status, out, err) == (
        2,
        "",
        f"pi: error: --session {session}: already exists; pi writes a new session file and "
        "never overwrites one\n",
    )
    assert session.read_text() == "precious\n"
    assert list(workspace.iterdir()) == []


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://", ""])
def test_a_base_url_that_is_no_http_url_is_a_usage_error(tmp_path: Path, url: str) -> None:
    status, out, err = pi("run", "hi", "--model", "openai:x", "--base-url", url, cwd=tmp_path)
    assert (status, out, err) == (
        2,
        "",
        f"pi: error: --base-url {url}: expected an http:// or https:// URL\n",
    )


HUGE = "9" * 5000
"""An integer of 5,000 digits: valid JSON, over CPython's limit of 4,300 digits for ``int``."""


def test_a_huge_integer_in_args_json_is_read_as_javascript_reads_it(tmp_path: Path) -> None:
    """JSON.parse takes it as Infinity, which is no JSON number to validation: Pi 1.6.0's exact
    answer (it used to be an internal error with a traceback). In a key the tool ignores, it
    changes nothing."""
    (tmp_path / "two.txt").write_text("a\nb\n")
    args = f'{{"path": "two.txt", "offset": {HUGE}}}'
    assert pi("call", "read", args, cwd=tmp_path) == (
        1,
        'Validation failed for tool "read":\n  - offset: expected number, got Infinity\n\n'
        'Received arguments:\n{\n  "path": "two.txt",\n  "offset": null\n}\n',
        "",
    )


@pytest.mark.parametrize(
    ("tool", "args", "key"),
    [
        ("read", '{"path": "two.txt", "limit": 1e400}', "limit"),
        ("ls", '{"path": ".", "limit": 1e400}', "limit"),
        ("grep", '{"pattern": "a", "limit": -1e400}', "limit"),
        ("find", '{"pattern": "*", "limit": 1e400}', "limit"),
    ],
)
def test_a_number_beyond_a_double_is_no_number(
    tmp_path: Path, tool: str, args: str, key: str
) -> None:
    """``1e400`` is valid JSON and Infinity to JSON.parse; Pi 1.6.0's validation refuses it
    (``got Infinity``, the value shown as ``null``); the tool used to say ``got Infinity`` in its
    own words, as if the model had sent Infinity."""
    (tmp_path / "two.txt").write_text("a\nb\n")
    sent = json.loads(args)
    shown = json.dumps({k: (None if k == key else v) for k, v in sent.items()}, indent=2)
    got = "-Infinity" if "-1e400" in args else "Infinity"
    assert pi("call", tool, args, cwd=tmp_path) == (
        1,
        f'Validation failed for tool "{tool}":\n  - {key}: expected number, got {got}\n\n'
        f"Received arguments:\n{shown}\n",
        "",
    )
    (tmp_path / "args.json").write_text(f'{{"path": "two.txt", "unused": -{HUGE}}}')
    assert pi("call", "read", "@args.json", cwd=tmp_path) == (0, "a\nb\n", "")


def test_a_huge_integer_in_a_session_line_is_read(tmp_path: Path) -> None:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "two.txt"}}
    line = json.dumps({"role": "assistant", "content": [call], "stopReason": "toolUse"})
    (tmp_path / "two.txt").write_text("a\nb\n")
    (tmp_path / "s.jsonl").write_text(line[:-1] + f', "extra": {HUGE}}}\n')
    status, out, err = pi("replay", "s.jsonl", "--json", cwd=tmp_path)
    assert (status, err) == (0, "")
    assert json.loads(out)["content"] == [{"type": "text", "text": "a\nb\n"}]


def test_nan_and_infinity_in_args_json_are_not_json(tmp_path: Path) -> None:
    """JSON has no NaN or Infinity (JSON.parse refuses them); Python's json took them."""
    (tmp_path / "two.txt").write_text("a\nb\n")
    assert pi("call", "read", '{"path":"two.txt","limit":NaN}', cwd=tmp_path) == (
        2,
        "",
        "pi: error: ARGS_JSON is not valid JSON: Expecting value (line 1, column 27)\n",
    )
    (tmp_path / "args.json").write_text('{"path": "two.txt",\n "offset": -Infinity}')
    assert pi("call", "read", "@args.json", cwd=tmp_path) == (
        2,
        "",
        "pi: error: ARGS_JSON @args.json is not valid JSON: Expecting value (line 2, column 12)\n",
    )


def test_nan_in_a_replayed_message_is_not_json(tmp_path: Path) -> None:
    """Pi 1.6.0 cannot read such a line either (JSON.parse: ``Unexpected token 'N'``)."""
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "two.txt"}}
    line = json.dumps({"role": "assistant", "content": [call], "stopReason": "toolUse"})
    (tmp_path / "two.txt").write_text("a\nb\n")
    (tmp_path / "s.jsonl").write_text(line.replace('"two.txt"', '"two.txt", "limit": NaN') + "\n")
    assert pi("replay", "s.jsonl", "--json", cwd=tmp_path) == (
        2,
        "",
        "pi: error: s.jsonl:1: invalid JSON: Expecting value (column 126)\n",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["tools"],
        ["config"],
        ["call", "read", '{"path": "a"}'],
        ["replay", "s.jsonl"],
        ["replay", "--parallel", "1", "s.jsonl"],
        ["replay", "s.jsonl", "--verify"],
        ["run", "hi", "--model", "scripted:s.jsonl"],
        ["checkpoints"],
        ["checkpoints", "prune"],
        ["policy", "check", "ls"],
        ["mcp", "list"],
        ["mcp", "serve"],
    ],
)
def test_a_missing_cwd_is_refused_and_not_made(tmp_path: Path, argv: list[str]) -> None:
    """Only the embedded demo (``pi run`` without ``--model``) makes its ``--cwd``."""
    stop = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "stopReason": "stop"}
    (tmp_path / "s.jsonl").write_text(json.dumps(stop) + "\n")
    assert pi(*argv, "--cwd", "nx/sub", cwd=tmp_path) == (
        2,
        "",
        "pi: error: --cwd nx/sub: no such directory\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_the_demo_makes_a_missing_cwd(tmp_path: Path) -> None:
    """Documented: the demo copies its project into ``--cwd``, made if missing."""
    status, _, err = pi("run", "--cwd", "nx/sub", cwd=tmp_path)
    assert (status, err) == (0, "")
    names = {p.name for p in (tmp_path / "nx/sub").iterdir()} - {"__pycache__"}
    assert sorted(names) == [
        "README.md",
        "stats.py",
        "test_stats.py",
    ]


def test_a_session_of_an_unknown_version_is_refused(tmp_path: Path) -> None:
    """Pi 1.6.0 writes version 3; a later version could mean its entries differently."""
    header = {"type": "session", "version": 99, "id": "s", "timestamp": "t", "cwd": "/w"}
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    entry = {"type": "message", "id": "1", "parentId": None, "timestamp": "t", "message": message}
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "s.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    message_text = "s.jsonl:1: session version 99 is not supported (pi reads versions 1 to 3)"
    for argv in (["replay", "s.jsonl"], ["replay", "s.jsonl", "--verify"]):
        assert pi(*argv, cwd=tmp_path) == (2, "", f"pi: error: {message_text}\n"), argv


def test_export_reads_a_session_line_with_a_huge_integer(tmp_path: Path) -> None:
    """The report reads what ``pi replay`` would refuse, but a 5,000-digit integer was a
    traceback (``json.loads``'s ``ValueError``)."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/w"}
    line = json.dumps(header)[:-1] + f', "extra": {HUGE}}}\n'
    (tmp_path / "s.jsonl").write_text(line)
    status, out, err = pi("export", "s.jsonl", cwd=tmp_path)
    assert (status, err) == (0, "")
    assert out.startswith("wrote s.html (")
