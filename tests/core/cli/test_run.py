"""``pi run`` (issue 5 items 2 and 6): the embedded demo, ``--json``, ``--session``,
``--tools``, ``--max-turns``, the system prompt, providers from plugins and Ctrl-C."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import PI, Result, write_jsonl

from pi_core._cli.system_prompt import build_system_prompt
from pi_core._plugins.manager import make_plugin_manager
from pi_core._plugins.session import build_session

ROOT = Path(__file__).resolve().parents[3]
DEMO_SESSION = ROOT / "docs" / "examples" / "demo-session.jsonl"
BUILTINS = ("-p", "pi_builtin_tools.plugin")
CLOSING = re.compile(r"(\d+ turns?, \d+ tool calls?, \d+ errors?), \d+\.\ds\n\Z")

DEMO_OUTPUT = """\
model: scripted:{session}
cwd: {cwd} (a copy of docs/examples/demo)

I'll run the tests first to see what fails.
• bash $ python3 test_stats.py
  FAIL  mean([1, 2, 3]): got 3.0, want 2
  FAIL  mean([4]): got 'ZeroDivisionError: division by zero', want 4
  ok    median([3, 1, 2]) == 2
  ok    median([4, 1, 3, 2]) == 2.5
  2 passed, 2 failed
  Command exited with code 1

`mean` is wrong for every input. Let me find it.
• grep {{"pattern":"def mean","path":"."}}
  stats.py:4: def mean(values):

• read stats.py
  \"\"\"Small statistics helpers.\"\"\"


  def mean(values):
      \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"
      return sum(values) / (len(values) - 1)


  … 8 more lines

`mean` divides by `len(values) - 1`; the mean divides by the count itself.
• edit stats.py
  Successfully replaced 1 block(s) in stats.py.
      ...
    2
    3
    4 def mean(values):
    5     \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"
  - 6     return sum(values) / (len(values) - 1)
  + 6     return sum(values) / len(values)
    7
    8
    9 def median(values):
   10     \"\"\"The middle value of a non-empty list of numbers (the mean of the two middle ones for an
      ...

Now the tests again.
• bash $ python3 test_stats.py
  ok    mean([1, 2, 3]) == 2
  ok    mean([4]) == 4
  ok    median([3, 1, 2]) == 2
  ok    median([4, 1, 3, 2]) == 2.5
  4 passed, 0 failed

Fixed: `mean` in stats.py divided by `len(values) - 1` instead of `len(values)`. \
All 4 checks in test_stats.py pass now.

"""


def split_closing(out: str) -> tuple[str, str]:
    """``(output before the closing line, the closing line without its time)``."""
    match = CLOSING.search(out)
    assert match, out
    return out[: match.start()], match.group(1)


def test_the_demo_runs_with_no_flags_in_a_fresh_temporary_workspace(
    pi_process: Callable[..., Result],
) -> None:
    r = pi_process(*BUILTINS, "run")
    assert (r.status, r.err) == (0, "")
    cwd = re.search(r"^cwd: (\S+) ", r.out, re.M)
    assert cwd is not None
    workspace = Path(cwd.group(1))
    try:
        assert workspace.name.startswith("pi-demo-")
        body, closing = split_closing(r.out)
        assert body == DEMO_OUTPUT.format(session=DEMO_SESSION, cwd=workspace)
        assert closing == "6 turns, 5 tool calls, 1 error"
        assert "return sum(values) / len(values)\n" in (workspace / "stats.py").read_text()
    finally:
        import shutil

        shutil.rmtree(workspace)


def test_the_demo_copies_its_project_into_cwd(pi: Callable[..., Result], plugin_env: Path) -> None:
    r = pi(*BUILTINS, "run", "--cwd", "ws")
    assert r.status == 0
    body, _ = split_closing(r.out)
    assert body == DEMO_OUTPUT.format(session=DEMO_SESSION, cwd=plugin_env / "ws")
    names = {p.name for p in (plugin_env / "ws").iterdir()} - {"__pycache__"}
    assert sorted(names) == ["README.md", "stats.py", "test_stats.py"]


def test_json_prints_the_session_header_then_every_event(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    r = pi(*BUILTINS, "run", "--cwd", "ws", "--json")
    assert (r.status, r.err) == (0, "")
    lines = r.json_lines()
    header = lines[0]
    assert set(header) == {"type", "version", "id", "timestamp", "cwd"}
    assert (header["type"], header["version"], header["cwd"]) == (
        "session",
        3,
        str(plugin_env / "ws"),
    )
    types = [line["type"] for line in lines[1:]]
    assert types[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert types[-1] == "agent_end"
    assert types.count("turn_end") == 6
    assert types.count("tool_execution_start") == types.count("tool_execution_end") == 5
    assert types.count("message_update") == 3 * 5 + 3 * 5  # 5 texts, 5 calls: start, delta, end
    ends = [line for line in lines if line["type"] == "tool_execution_end"]
    assert [(e["toolName"], e["isError"]) for e in ends] == [
        ("bash", True),
        ("grep", False),
        ("read", False),
        ("edit", False),
        ("bash", False),
    ]


def test_session_file_is_a_pi_v3_tree_that_replay_verifies(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    r = pi(*BUILTINS, "run", "--cwd", "ws", "--session", "run.jsonl")
    assert r.status == 0
    entries = [json.loads(line) for line in (plugin_env / "run.jsonl").read_text().splitlines()]
    assert entries[0]["type"] == "session" and entries[0]["version"] == 3
    assert entries[0]["cwd"] == str(plugin_env / "ws")
    assert {k: entries[1][k] for k in ("type", "parentId", "provider", "modelId")} == {
        "type": "model_change",
        "parentId": None,
        "provider": "scripted",
        "modelId": str(DEMO_SESSION),
    }
    for parent, child in itertools.pairwise(entries[1:]):
        assert child["parentId"] == parent["id"]
        assert re.fullmatch(r"[0-9a-f]{8}", child["id"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", child["timestamp"])
    roles = [e["message"]["role"] for e in entries[2:]]
    assert roles == ["system", "user", *["assistant", "toolResult"] * 5, "assistant"]
    declared = [t["name"] for t in entries[2]["message"]["toolsAdded"]]
    assert declared == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert entries[3]["message"]["content"] == [
        {"type": "text", "text": "Fix the failing test in this project."}
    ]
    # replayed in a fresh copy of the demo project, every call gives the same result again
    fresh = pi(*BUILTINS, "run", "--cwd", "fresh", "--max-turns", "1", "--json")
    assert fresh.status == 0
    verify = pi(*BUILTINS, "replay", "run.jsonl", "--verify", "--json", "--cwd", "fresh")
    assert verify.json_lines()[-1] == {
        "summary": {
            "bash": {"agree": 2, "total": 2},
            "grep": {"agree": 1, "total": 1},
            "read": {"agree": 1, "total": 1},
            "edit": {"agree": 1, "total": 1},
        }
    }


def test_tools_selects_a_subset_and_max_turns_stops_the_loop(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    r = pi(*BUILTINS, "run", "--cwd", "ws", "--tools", "read,grep", "--max-turns", "2")
    assert r.status == 0
    body, closing = split_closing(r.out)
    assert body.split("\n", 3)[3] == (
        "I'll run the tests first to see what fails.\n"
        # bash is not among the run's tools: nothing says how its calls look
        '• bash {"command":"python3 test_stats.py"}\n'
        "  Tool bash not found\n"
        "\n"
        "`mean` is wrong for every input. Let me find it.\n"
        '• grep {"pattern":"def mean","path":"."}\n'
        "  stats.py:4: def mean(values):\n"
        "stopped after 2 turns (--max-turns 2)\n"
        "\n"
    )
    assert closing == "2 turns, 2 tool calls, 1 error"


def test_system_prompt_from_the_tools_prompt_snippets_and_guidelines(plugin_env: Path) -> None:
    pm = make_plugin_manager(plugins=["pi_builtin_tools.plugin"])
    tools = build_session(pm, "/w").tool_set.active  # tool_search is registered inactive
    prompt = build_system_prompt(tools, "/w", date=datetime.date(2026, 11, 30))
    assert [t.name for t in tools] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert prompt == (
        "You are an expert coding assistant operating inside pi, a coding agent harness. "
        "You help users by reading files, executing commands, editing code, and writing new "
        "files.\n"
        "\n"
        "Available tools:\n"
        "- read: Read file contents\n"
        "- bash: Execute bash commands (ls, grep, find, etc.)\n"
        "- edit: Make precise file edits with exact text replacement, including multiple "
        "disjoint edits in one call\n"
        "- write: Create or overwrite files\n"
        "- grep: Search file contents for patterns (respects .gitignore)\n"
        "- find: Find files by glob pattern (respects .gitignore)\n"
        "- ls: List directory contents\n"
        "\n"
        "In addition to the tools above, you may have access to other custom tools depending "
        "on the project.\n"
        "\n"
        "Guidelines:\n"
        "- Use read to examine files instead of cat or sed.\n"
        "- You can inspect PI_* environment variables for current model and session details.\n"
        "- Use edit for precise changes (edits[].oldText must match exactly)\n"
        "- When changing multiple separate locations in one file, use one edit call with "
        "multiple entries in edits[] instead of multiple edit calls\n"
        "- Each edits[].oldText is matched against the original file, not after earlier edits "
        "are applied. Do not emit overlapping or nested edits. Merge nearby changes into one "
        "edit.\n"
        "- Keep edits[].oldText as small as possible while still being unique in the file. Do "
        "not pad with large unchanged regions.\n"
        "- Use write only for new files or complete rewrites.\n"
        "- Be concise in your responses\n"
        "- Show file paths clearly when working with files\n"
        "\n"
        "Current date: 2026-11-30\n"
        "Current working directory: /w"
    )
    bash_only = build_system_prompt(
        [t for t in tools if t.name in ("bash", "read")], "/w", date=datetime.date(2026, 1, 2)
    )
    assert "Guidelines:\n- Use bash for file operations like ls, rg, find\n" in bash_only
    assert "Available tools:\n- read: Read file contents\n- bash: " in bash_only


def test_a_plugin_provider_gets_the_system_prompt_tools_and_base_url(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    capture = plugin_env / "capture.jsonl"
    r = pi(*BUILTINS, "-p", "run_plugin", "run", "hello", "--model", f"capture:{capture}",
           "--tools", "ls,read", "--base-url", "http://127.0.0.1:9/v1")  # fmt: skip
    assert r.status == 0
    body, closing = split_closing(r.out)
    assert body == f"model: capture:{capture}\ncwd: {plugin_env}\n\ncaptured\n\n"
    assert closing == "1 turn, 0 tool calls, 0 errors"
    (request,) = [json.loads(line) for line in capture.read_text().splitlines()]
    assert request["tools"] == ["ls", "read"]
    assert request["options"] == {"base_url": "http://127.0.0.1:9/v1"}
    assert request["messages"] == ["user"]
    assert request["system_prompt"].startswith(
        "You are an expert coding assistant operating inside pi, a coding agent harness."
    )
    assert (
        "Available tools:\n- ls: List directory contents\n- read: Read file contents\n\n"
        in (request["system_prompt"])
    )
    assert request["system_prompt"].endswith(f"\nCurrent working directory: {plugin_env}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "x", "--tools", "read,nope"],
         "--tools: unknown tool 'nope' (registered tools: read, bash, powershell, edit, write, "
         "grep, find, ls, tool_search, codemode, codemode_python)"),
        (["run", "--model", "scripted:s.jsonl"], "a PROMPT is required with --model"),
        (["run", "x", "--model", "nope:m"],
         "unknown model provider 'nope' in 'nope:m' (registered providers: anthropic, openai, "
         "scripted)"),
        (["run", "x", "--max-turns", "0"], "--max-turns must be at least 1 (got 0)"),
    ],
)  # fmt: skip
def test_unusable_input_is_exit_2_with_one_line(
    pi: Callable[..., Result], args: list[str], message: str
) -> None:
    r = pi(*BUILTINS, *args)
    assert (r.status, r.out, r.err) == (2, "", f"pi: error: {message}\n")


def test_a_failed_model_call_is_shown_in_red_text_and_exit_1(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    script = write_jsonl(
        plugin_env / "s.jsonl",
        [{"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "HTTP 500"}],
    )
    r = pi(*BUILTINS, "run", "x", "--model", f"scripted:{script.name}")
    assert r.status == 1
    body, closing = split_closing(r.out)
    assert body.split("\n", 3)[3] == "error: HTTP 500\n\n"
    assert closing == "1 turn, 0 tool calls, 1 error"


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(PI), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_ctrl_c_aborts_the_running_tool_and_completes_the_turn(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    script = write_jsonl(
        plugin_env / "s.jsonl",
        [
            {"role": "assistant", "stopReason": "toolUse", "content": [
                {"type": "toolCall", "id": "b1", "name": "bash",
                 "arguments": {"command": f"touch {marker}; sleep 60"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "never"}]},
        ],
    )  # fmt: skip
    proc = _start([*BUILTINS, "run", "x", "--model", f"scripted:{script}", "--session", "s3"],
                  plugin_env)  # fmt: skip
    _wait_for(marker, proc)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (130, "")
    body, closing = split_closing(out.replace("interrupted: ", "", 1))
    assert body.split("\n", 3)[3] == (
        f"• bash $ touch {marker}; sleep 60\n  Command aborted\n\naborted\n\n"
    )
    assert closing == "2 turns, 1 tool call, 1 error"
    assert "\ninterrupted: 2 turns" in out
    # the aborted result and the aborted turn are recorded in the session file
    messages = [
        json.loads(line).get("message") for line in (plugin_env / "s3").read_text().splitlines()
    ]
    assert [(m["role"], m.get("stopReason"), m.get("isError")) for m in messages if m] == [
        ("system", None, None),
        ("user", None, None),
        ("assistant", "toolUse", None),
        ("toolResult", None, True),
        ("assistant", "aborted", None),
    ]


def test_a_second_ctrl_c_exits_at_once_even_if_a_tool_ignores_the_abort(
    plugin_env: Path,
) -> None:
    marker = plugin_env / "started"
    script = write_jsonl(
        plugin_env / "s.jsonl",
        [{"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "s1", "name": "stubborn",
             "arguments": {"marker": str(marker), "seconds": 60}}]}],
    )  # fmt: skip
    proc = _start(["-p", "run_plugin", "run", "x", "--model", f"scripted:{script}"], plugin_env)
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    assert proc.poll() is None  # the first Ctrl-C only asked the tool to stop
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert time.monotonic() - started < 5
    assert out.endswith(f'• stubborn {{"marker":"{marker}","seconds":60}}\n')
    assert err == ""
    assert os.environ.get("PI_DISABLE_PLUGIN_AUTOLOAD") == "1"
