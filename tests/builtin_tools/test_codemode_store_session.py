"""``store()`` writes kept in the session (issue 12, delta §3.5): a successful script's writes
become a ``codemode-store`` custom entry (``SessionContext.append_entry``), written to the
session file by ``pi run --session``; a session continued from its entries loads them. Both
engines share the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from test_loop_support import call, run, text, tool_use

from pi_builtin_tools.codemode.javascript import create_codemode_tool_definition
from pi_builtin_tools.codemode.python import create_codemode_python_tool_definition
from pi_core import AssistantMessage, SessionContext
from pi_core._tools.definition import wrap_tool_definition

PI = Path(sys.executable).parent / "pi"

STORED = [
    {"type": "custom", "customType": "codemode-store",
     "data": {"set": {"k": {"v": 1}, "gone": 1}, "delete": []}},
    {"type": "custom", "customType": "other", "data": {"set": {"x": 1}}},
    {"type": "custom", "customType": "codemode-store", "data": {"set": {}, "delete": ["gone"]}},
]  # fmt: skip


def script(call_id: str, name: str, code: str) -> AssistantMessage:
    return tool_use(call(call_id, name, {"code": code}))


async def test_a_continued_session_loads_its_entries_and_appends_new_writes(
    tmp_path: Path,
) -> None:
    session = SessionContext(cwd=str(tmp_path), entries=[dict(e) for e in STORED])
    registration = SimpleNamespace(session=session)
    tools = [
        wrap_tool_definition(create_codemode_tool_definition(), registration),
        wrap_tool_definition(create_codemode_python_tool_definition(), registration),
    ]
    messages, _, _ = await run(
        [
            script("c1", "codemode", 'return [load("k"), load("gone"), load("x")];'),
            script("c2", "codemode_python", 'store("p", [1, "é"])\nstore("k", None)\nreturn 1'),
            script("c3", "codemode", 'store("q", 1); throw new Error("dropped");'),
            script("c4", "codemode", 'return [load("k"), load("p"), load("q")];'),
            text("ok"),
        ],
        tools,
    )
    results = [m for m in messages if m.role == "toolResult"]
    assert [(m.is_error, m.content[-1].text) for m in results] == [
        (False, '[{"v":1},null,null]'),
        (False, "1"),
        (True, results[2].content[-1].text),
        (False, '[null,[1,"é"],null]'),
    ]
    assert session.entries == [
        *STORED,
        {"type": "custom", "customType": "codemode-store",
         "data": {"set": {"p": [1, "é"]}, "delete": ["k"]}},
    ]  # fmt: skip


def test_pi_run_writes_the_store_entries_to_the_session_file(tmp_path: Path) -> None:
    model = tmp_path / "model.jsonl"
    answers = [
        script("c1", "codemode", 'store("k", {v: 1}); store("gone", 1); return load("k");'),
        script("c2", "codemode", 'store("k", 2); throw new Error("dropped");'),
        script("c3", "codemode_python", 'store("gone", None)\nstore("p", [1, "x"])'),
        text("done"),
    ]
    model.write_text("".join(json.dumps(m.to_json_dict()) + "\n" for m in answers))
    out = tmp_path / "session.jsonl"
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PI_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [str(PI), "-p", "pi_builtin_tools.plugin", "run", "--tools", "codemode,codemode_python",
         "--model", f"scripted:{model}", "--session", str(out), "hi"],
        cwd=work, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    entries = [json.loads(line) for line in out.read_text().splitlines()]
    # every entry is the child of the one before
    assert [e.get("parentId") for e in entries[1:]] == [None] + [e["id"] for e in entries[1:-1]]
    shown = [
        e["customType"] + " " + json.dumps(e["data"])
        if e["type"] == "custom"
        else e["type"] + (" " + e["message"]["role"] if e["type"] == "message" else "")
        for e in entries[1:]
    ]
    assert shown == [
        "model_change",
        "message system",
        "message user",
        "message assistant",
        'codemode-store {"set": {"k": {"v": 1}, "gone": 1}, "delete": []}',
        "message toolResult",
        "message assistant",
        "message toolResult",
        "message assistant",
        'codemode-store {"set": {"p": [1, "x"]}, "delete": ["gone"]}',
        "message toolResult",
        "message assistant",
    ]
    assert list(entries[5]) == ["type", "id", "parentId", "timestamp", "customType", "data"]
