"""OpenTelemetry spans of every tool call (issue 28 points 3-4), checked at a real OTLP/HTTP
receiver on loopback that decodes the protobuf requests: a real ``pi run`` (scripted model) of
a batch with a bash call, a codemode call whose script calls ``read`` (a nested call) and a
bash call a policy plugin blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import PI, call, write_jsonl
from otlp_receiver import Span, otlp_receiver

from pi_core._cli import main

REPO = Path(__file__).resolve().parents[2]
SCRIPT = 'const r = await tools.read({path: "a.txt"});\nreturn r;'


def scripted(folder: Path) -> Path:
    (folder / "a.txt").write_text("hello\n")
    return write_jsonl(
        folder / "model.jsonl",
        [
            {"role": "assistant", "stopReason": "toolUse", "content": [
                call("c1", "bash", command="echo $TRACEPARENT"),
                call("c2", "codemode", code=SCRIPT),
                call("c3", "bash", command="rm -rf build"),
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop"},
        ],
    )  # fmt: skip


def run_pi(folder: Path, *extra: str) -> int:
    model = scripted(folder)
    return main(
        ["-p", "pi_builtin_tools.plugin", "-p", "block_rm_plugin", "run", "go",
         "--tools", "read,bash,codemode", "--model", f"scripted:{model}", "--cwd", str(folder),
         "--session", str(folder / "s.jsonl"), *extra]
    )  # fmt: skip


def by_name(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s.name == name]


def one(spans: list[Span], name: str, **attributes: str) -> Span:
    found = [
        s
        for s in by_name(spans, name)
        if all(s.attributes.get(k) == v for k, v in attributes.items())
    ]
    assert len(found) == 1, (name, attributes, [(s.name, s.attributes) for s in spans])
    return found[0]


def test_span_tree_of_a_batch_with_a_nested_and_a_blocked_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "pi-under-test")
        assert run_pi(tmp_path) == 0, capsys.readouterr().err
    spans = receiver.spans
    assert sorted(s.name for s in spans) == [
        "batch 1", "execute_tool bash", "execute_tool bash", "execute_tool codemode",
        "execute_tool read", "invoke_agent pi", "turn 1", "turn 2",
    ]  # fmt: skip
    assert len({s.trace_id for s in spans}) == 1
    assert {s.resource["service.name"] for s in spans} == {"pi-under-test"}
    session = one(spans, "invoke_agent pi")
    assert session.parent_id == ""
    assert session.attributes | {"pi.session.id": ""} == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "pi", "pi.host": "run",
        "pi.session.id": "",
    }  # fmt: skip
    turn1 = one(spans, "turn 1")
    assert turn1.parent_id == session.span_id
    assert one(spans, "turn 2").parent_id == session.span_id
    batch = one(spans, "batch 1")
    assert (batch.parent_id, batch.attributes) == (
        turn1.span_id,
        {"pi.batch.index": 1, "pi.batch.size": 3},
    )
    echo = one(spans, "execute_tool bash", **{"gen_ai.tool.call.id": "c1"})
    assert echo.parent_id == batch.span_id
    assert echo.attributes == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash",
        "gen_ai.tool.call.id": "c1", "gen_ai.tool.type": "function",
    }  # fmt: skip
    assert echo.status_code == 0  # unset: no error
    codemode = one(spans, "execute_tool codemode")
    assert codemode.parent_id == batch.span_id
    nested = one(spans, "execute_tool read")
    assert nested.parent_id == codemode.span_id
    assert nested.attributes["gen_ai.tool.call.id"] == "c2/1"
    blocked = one(spans, "execute_tool bash", **{"gen_ai.tool.call.id": "c3"})
    assert blocked.parent_id == batch.span_id
    assert blocked.attributes["error.type"] == "blocked"
    assert (blocked.status_code, blocked.status_message) == (2, "rm is not allowed here")
    assert ("pi.policy.decision", {
        "pi.policy.decision": "deny", "pi.policy.source": "no-rm rule",
        "pi.policy.reason": "rm is not allowed here",
    }) in blocked.events  # fmt: skip
    hooks = [e for e in blocked.events if e[0] == "pi.hook"]
    assert [(h["pi.hook.name"], h["pi.hook.plugin"], h["pi.hook.outcome"]) for _, h in hooks] == [
        ("pi_before_tool_call", "block_rm_plugin", "BeforeToolCallResult(block,reason,source)")
    ]
    assert all(isinstance(h["pi.hook.duration_ms"], float) for _, h in hooks)
    # no content without record_content
    assert not any("gen_ai.tool.call.arguments" in s.attributes for s in spans)
    # the bash command saw the trace context of its own call span
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    echo_out = next(
        x["message"]["content"][0]["text"]
        for x in lines
        if x.get("message", {}).get("toolCallId") == "c1"
    )
    version, trace_id, span_id, flags = echo_out.strip().split("-")
    assert (version, trace_id, span_id) == ("00", echo.trace_id, echo.span_id)
    assert int(flags, 16) & 1 == 1  # sampled


def test_record_content_and_the_telemetry_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    with otlp_receiver() as receiver:
        # the how-to's example, pointed at the receiver and recording content
        example = (REPO / "docs" / "examples" / "telemetry" / "pi.toml").read_text()
        assert 'otlp_endpoint = "http://127.0.0.1:4318"' in example
        assert "record_content = false" in example
        (tmp_path / "pi.toml").write_text(
            example.replace("http://127.0.0.1:4318", receiver.url).replace(
                "record_content = false", "record_content = true"
            )
        )
        assert run_pi(tmp_path) == 0, capsys.readouterr().err
    nested = one(receiver.spans, "execute_tool read")
    assert nested.attributes["gen_ai.tool.call.arguments"] == '{"path": "a.txt"}'
    assert nested.attributes["gen_ai.tool.call.result"] == "hello\n"


def test_a_bad_telemetry_table_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text("[telemetry]\nrecord_content = 1\n")
    done = subprocess.run(
        [str(PI), "call", "read", '{"path": "x"}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"pi: error: {tmp_path / 'pi.toml'}: [telemetry] record_content: must be true or false\n"
    )  # fmt: skip


def test_telemetry_off_imports_nothing_of_opentelemetry(tmp_path: Path) -> None:
    """P7: ``pi call read`` with telemetry off (no table, no OTEL_* variable) loads no module
    of OpenTelemetry (``-X importtime`` lists every module imported)."""
    (tmp_path / "a.txt").write_text("x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(PI), "call", "read", '{"path": "a.txt"}'],
        cwd=tmp_path, capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "pi_core._cli" in imported  # the listing is real
    assert [m for m in imported if m.startswith(("opentelemetry", "google.protobuf"))] == []
    assert [m for m in imported if m.startswith("pi_core._report")] == []


def test_pi_call_has_a_span_and_its_command_the_trace_context(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        done = subprocess.run(
            [str(PI), "call", "bash", '{"command": "echo $TRACEPARENT"}', "--json"],
            cwd=tmp_path, capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
    spans = receiver.spans
    assert sorted(s.name for s in spans) == ["execute_tool bash", "invoke_agent pi"]
    session, bash = one(spans, "invoke_agent pi"), one(spans, "execute_tool bash")
    assert bash.parent_id == session.span_id
    assert session.attributes["pi.host"] == "call"
    text = json.loads(done.stdout)["content"][0]["text"]
    assert text.startswith(f"00-{bash.trace_id}-{bash.span_id}-")
