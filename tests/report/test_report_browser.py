"""The HTML session report in a real browser (issue 28 points 1-2): headless Chromium (Debian's
``chromium``, driven by Playwright) opens the file from disk with every request refused; the
tests read what a person sees (``innerText``), click, filter, and check that hostile session
content runs nothing."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import PI, call, write_jsonl
from report_support import (
    HOSTILE,
    SessionBuilder,
    big_session,
    chromium,
    hostile_session,
    open_report,
    png_bytes,
)

from pi_core._cli import main
from pi_core._report.model import visible
from support import descendants

pytestmark = pytest.mark.xdist_group("report-browser")
"""One test process (``pytest -n``) runs this module: one Chromium (the module's ``browser``,
about 2 s of CPU to start), not one in each test process."""

REPO = Path(__file__).resolve().parents[2]
SESSIONS = next(
    (p for p in (REPO.parent / "shared" / "sessions", Path("/work/shared/sessions")) if p.is_dir()),
    Path("/work/shared/sessions"),
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def export(session: Path, out: Path, *extra: str) -> Path:
    assert main(["export", str(session), "-o", str(out), *extra]) == 0
    return out


def texts(page: Any, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.innerText)")


def visible_count(page: Any, selector: str) -> int:
    return page.eval_on_selector_all(
        selector, "els => els.filter(e => e.offsetParent !== null).length"
    )


def stats(page: Any) -> dict[str, str]:
    return dict(
        page.eval_on_selector_all(
            "#summary .stat",
            "els => els.map(e => [e.dataset.stat, e.querySelector('.n').innerText])",
        )
    )


# ---------------------------------------------------------------------------------------------
# a run of pi: the embedded demo, exported from its session file and written by --report
# ---------------------------------------------------------------------------------------------


def test_demo_run_report_shows_the_calls_the_diff_and_filters(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "demo.jsonl"
    live = tmp_path / "live.html"
    assert (
        main(
            ["run", "--session", str(session), "--report", str(live), "--cwd", str(tmp_path / "w")]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["export", str(session), "-o", str(tmp_path / "demo.html")]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'demo.html'} (5 calls, ")
    for html in (tmp_path / "demo.html", live):
        with open_report(browser, html) as r:
            page = r.page
            assert stats(page) | {"wall time": ""} == {
                "turns": "6", "calls": "5", "errors": "1", "blocked": "0", "wall time": ""
            }  # fmt: skip
            assert page.inner_text("#summary .tools") == "bash 2, edit 1, grep 1, read 1"
            assert texts(page, ".call .tool") == ["bash", "grep", "read", "edit", "bash"]
            assert texts(page, ".call .badge") == ["error", "ok", "ok", "ok", "ok"]
            assert len(page.query_selector_all(".lane")) == 5
            assert len(page.query_selector_all("section.batch")) == 5
            assert texts(page, ".diff .del") == ["- 6     return sum(values) / (len(values) - 1)"]
            assert texts(page, ".diff .add") == ["+ 6     return sum(values) / len(values)"]
            # the read output is folded after 12 lines; the button unfolds it
            read = page.query_selector(".call[data-tool='read'] pre.output")
            assert read.inner_text().count("\n") == 11
            page.click(".call[data-tool='read'] button.unfold")
            assert read.inner_text().endswith(
                "return (ordered[middle - 1] + ordered[middle]) / 2\n"
            )
            assert page.inner_text(".call[data-tool='read'] button.unfold") == "fold"
            # filter by tool, then errors only, then by text
            page.select_option("#filter-tool", "bash")
            assert visible_count(page, ".call") == 2
            assert visible_count(page, ".msg") == 0
            assert page.inner_text("#filter-count") == "2 of 5 calls"
            page.check("#filter-errors")
            assert visible_count(page, ".call") == 1
            assert page.inner_text("#filter-count") == "1 of 5 calls"
            page.select_option("#filter-tool", "")
            page.uncheck("#filter-errors")
            page.fill("#filter-text", "def mean")
            assert texts(page, ".call:not(.hidden) .tool") == ["grep", "read"]
            page.fill("#filter-text", "")
            assert visible_count(page, ".call") == 5
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert (r.requests, r.dialogs, r.errors) == ([], [], [])
    # the live report knows when each call started: its timeline bars are not estimates
    with open_report(browser, live) as r:
        assert r.page.query_selector_all(".lane .bar.est") == []
        demo = REPO / "docs" / "examples" / "demo-session.jsonl"
        assert (
            r.page.inner_text(".meta") == f"pi run · model scripted:{demo} · cwd {tmp_path / 'w'}"
        )


def test_nested_calls_show_as_a_tree_under_their_call(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A codemode script's calls (a real run, scripted model) under the codemode call, with
    their own results (--report keeps them whole) and lanes in the batch's timeline."""
    (tmp_path / "a.txt").write_text("hello\n")
    script = (
        'await tools.read({path: "a.txt"});\nawait tools.bash({command: "echo hi"});\nreturn 1;'
    )
    model = write_jsonl(
        tmp_path / "model.jsonl",
        [
            {"role": "assistant", "content": [call("c1", "codemode", code=script)], "stopReason": "toolUse"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop"},
        ],
    )  # fmt: skip
    html = tmp_path / "nested.html"
    status = main(
        ["-p", "pi_builtin_tools.plugin", "run", "ok", "--tools", "read,bash,codemode", "--model", f"scripted:{model}",
         "--cwd", str(tmp_path), "--report", str(html), "--session", str(tmp_path / "s.jsonl")]
    )  # fmt: skip
    assert status == 0, capsys.readouterr().err
    for report in (html, export(tmp_path / "s.jsonl", tmp_path / "exported.html")):
        with open_report(browser, report) as r:
            page = r.page
            assert texts(page, ".call > .chead .tool") == ["codemode", "read", "bash"]
            assert texts(page, ".children > .section-label") == ["NESTED CALLS (2)"]
            assert texts(page, ".children .call .cid") == ["c1/1", "c1/2"]
            assert stats(page)["calls"] == "3"
            if report == html:
                assert texts(page, ".children .call pre.output") == ["hello\n", "hi\n"]
                assert texts(page, ".lane .label") == ["codemode c1", "read c1/1", "bash c1/2"]
                assert len(page.query_selector_all(".lane.nested")) == 2


# ---------------------------------------------------------------------------------------------
# policy decisions, errors, images, truncation: a session and its audit log
# ---------------------------------------------------------------------------------------------


def audited_session(folder: Path) -> tuple[Path, Path]:
    s = SessionBuilder()
    s.user("clean up and show me the logo")
    s.assistant(
        "",
        [
            ("b1", "bash", {"command": "rm -rf build"}),
            ("r1", "read", {"path": "logo.png"}),
            ("b2", "bash", {"command": "seq 100000"}),
        ],
    )
    s.result("b1", "bash", "Blocked by policy: rm is not allowed", after_ms=1, is_error=True)
    s.result("r1", "read", "Read image file [image/png]", after_ms=40, images=[png_bytes(3, 2)])
    s.result(
        "b2",
        "bash",
        "99999\n100000\n\n[Showing lines 99001-100000 of 100000. Full output: /tmp/pi-bash-1.log]",
        after_ms=900,
        details={"truncation": {"truncated": True}, "fullOutputPath": "/tmp/pi-bash-1.log"},
    )
    s.advance(1000)
    s.assistant("Done.", [])
    audit = [
        {"time": "2026-12-01T10:00:00.001Z", "session": "s", "tool_call_id": "b1",
         "parent_tool_call_id": None, "tool": "bash", "arguments": {"command": "rm -rf build"},
         "phase": "before", "decision": "deny", "source": "command policy rule 3",
         "reason": "rm is not allowed", "latency_ms": 0.2},
        {"time": "2026-12-01T10:00:00.002Z", "session": "s", "tool_call_id": "r1",
         "parent_tool_call_id": None, "tool": "read", "arguments": {"path": "logo.png"},
         "phase": "before", "decision": "allow", "reason": "no policy blocked the call",
         "latency_ms": 0.1},
    ]  # fmt: skip
    audit_path = folder / "audit.jsonl"
    audit_path.write_text("".join(json.dumps(a) + "\n" for a in audit) + '{"torn": ')
    return s.write(folder / "audited.jsonl"), audit_path


def test_audit_decisions_images_and_truncation(browser: Any, tmp_path: Path) -> None:
    session, audit = audited_session(tmp_path)
    html = export(session, tmp_path / "audited.html", "--audit", str(audit))
    with open_report(browser, html) as r:
        page = r.page
        assert stats(page) | {"wall time": ""} == {
            "turns": "2", "calls": "3", "errors": "1", "blocked": "1", "wall time": ""
        }  # fmt: skip
        assert texts(page, ".call .badge") == ["blocked", "ok", "ok"]
        assert texts(page, ".call.blocked .audit") == [
            "policy · before · deny · by command policy rule 3 — rm is not allowed"
        ]
        assert texts(page, ".call[data-tool='read'] .audit") == [
            "policy · before · allow — no policy blocked the call"
        ]
        size = page.eval_on_selector(
            "img.result", "i => [i.complete, i.naturalWidth, i.naturalHeight]"
        )
        assert size == [True, 3, 2]
        assert texts(page, ".trunc") == ["output truncated — full output: /tmp/pi-bash-1.log"]
        # the timeline: one lane per call, bars from the batch start, the slowest in bold
        assert texts(page, ".lane .label") == ["bash b1", "read r1", "bash b2"]
        assert texts(page, ".lane.slowest .label") == ["bash b2"]
        assert len(page.query_selector_all(".lane .bar.blocked")) == 1
        widths = page.eval_on_selector_all(".lane .bar", "bs => bs.map(b => b.style.width)")
        assert widths == ["0.111%", "4.444%", "100%"]
        page.check("#filter-errors")
        assert texts(page, ".call:not(.hidden) .cid") == ["b1"]
        assert (r.requests, r.dialogs, r.errors) == ([], [], [])


# ---------------------------------------------------------------------------------------------
# hostile content
# ---------------------------------------------------------------------------------------------


def test_hostile_output_shows_as_text_and_runs_nothing(browser: Any, tmp_path: Path) -> None:
    html = export(hostile_session(tmp_path / "hostile.jsonl"), tmp_path / "hostile.html")
    source = html.read_text()
    assert source.count("<script") == 2  # the data (JSON) and the page's own script
    assert "\x1b" not in source
    with open_report(browser, html) as r:
        page = r.page
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert (r.dialogs, r.requests, r.errors) == ([], [], [])
        assert texts(page, ".call pre.output") == [visible(h) for h in HOSTILE]
        assert texts(page, ".call pre.output")[5] == (
            "␛[31mred␛[0m ␛]0;title␇ ␛]8;;http://example.invalid/␛\\link␛]8;;␛\\"
        )
        assert texts(page, ".msg.user pre") == [
            "show me <b>bold</b> <script>window.__pwned = 7</script>"
        ]
        assert texts(page, ".msg.assistant pre") == [
            '<img src=x onerror="window.__pwned = 8">',
            "done",
        ]
        counts = page.evaluate(
            "['script','img','iframe','a','svg','style','link','b'].map(t => document.getElementsByTagName(t).length)"
        )
        assert counts == [2, 0, 0, 0, 0, 1, 0, 0]
        # a click on everything clickable runs nothing either
        for button in page.query_selector_all("button"):
            button.click()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert (r.dialogs, r.requests, r.errors) == ([], [], [])


# ---------------------------------------------------------------------------------------------
# Pi 1.6's own session files
# ---------------------------------------------------------------------------------------------

SHARED = {
    "pi-mono_before-compaction_2025-12-08.jsonl": ("454", {"bash": 206, "edit": 125, "read": 107, "write": 16}),
    "pi-mono_compact_2025-12-24.jsonl": ("432", {"bash": 207, "read": 132, "edit": 87, "write": 6}),
    "pi-mono_session_2025-12-17.jsonl": ("189", {"bash": 115, "edit": 43, "read": 30, "write": 1}),
    "pi-mono_large-session_2025-11-20.jsonl": ("391", {"bash": 192, "edit": 146, "read": 50, "write": 3}),
    "kimchi-dev_user-agent_2026-04-27.jsonl": (
        "60", {"grep": 22, "read": 16, "bash": 9, "set_phase": 8, "ls": 3, "edit": 1, "web_search": 1}
    ),
}  # fmt: skip
"""The call counts the corpus README gives for each session."""


@pytest.mark.parametrize("name", sorted(SHARED))
def test_pi_16_sessions_render(browser: Any, tmp_path: Path, name: str) -> None:
    path = SESSIONS / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared session corpus)")
    calls, tools = SHARED[name]
    html = export(path, tmp_path / "s.html")
    with open_report(browser, html) as r:
        page = r.page
        assert stats(page)["calls"] == calls
        shown = page.inner_text("#summary .tools")
        assert shown == ", ".join(f"{t} {n}" for t, n in tools.items())
        assert page.query_selector_all(".call")  # the first page is built
        diffs = sum(1 for c in _data(html)["calls"] if c["diff"])
        assert diffs == tools.get("edit", 0) - _failed_edits(path)
        page.select_option("#filter-tool", "edit")
        page.wait_for_selector(".call[data-tool='edit'] .diff .add")
        assert (r.requests, r.dialogs, r.errors) == ([], [], [])


def _data(html: Path) -> Any:
    match = re.search(r'id="pi-data">(.*?)</script>', html.read_text(encoding="utf-8"), re.S)
    assert match is not None
    return json.loads(match.group(1))


def _failed_edits(path: Path) -> int:
    """Edits whose result has no diff (failed, or without a result)."""
    calls: set[str] = set()
    with_diff: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        message = json.loads(line).get("message") or {}
        for block in message.get("content") or []:
            if (
                isinstance(block, dict)
                and block.get("type") == "toolCall"
                and block.get("name") == "edit"
            ):
                calls.add(block["id"])
        if message.get("role") == "toolResult" and (message.get("details") or {}).get("diff"):
            with_diff.add(message["toolCallId"])
    return len(calls - with_diff)


# ---------------------------------------------------------------------------------------------
# a 50 MB session
# ---------------------------------------------------------------------------------------------


def browser_cpu_seconds() -> float:
    """CPU time (user + system) so far of every process below this one: Playwright's driver
    and the Chromium it started (``support.descendants``)."""
    ticks = 0
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def test_a_50_mb_session_exports_in_10_s_and_opens_in_3_s(browser: Any, tmp_path: Path) -> None:
    session = big_session(tmp_path / "big.jsonl", 50 * 1024 * 1024)
    assert session.stat().st_size >= 50 * 1024 * 1024
    started, cpu_before = time.monotonic(), time.process_time()
    export(session, tmp_path / "big.html")
    exported, export_cpu = time.monotonic() - started, time.process_time() - cpu_before
    # 10 s with a free core (about 2.5 s here); when ``pytest -n`` saturates the cores, the
    # export's own work, the CPU time of this process (it runs in it), must fit in the 10 s
    assert exported < 10 or export_cpu < 10, (
        f"export took {exported:.1f} s, {export_cpu:.1f} s of CPU"
    )
    started, cpu_before = time.monotonic(), browser_cpu_seconds()
    with open_report(browser, tmp_path / "big.html") as r:
        opened = time.monotonic() - started
        cpu = browser_cpu_seconds() - cpu_before
        # 3 s on a machine with a free core (about 1.4 s here, 2.3 s of the browser's CPU);
        # under ``pytest -n`` the cores are saturated and the page waits for one: then the
        # browser's own work, its CPU time, must fit in the 3 s
        assert opened < 3 or cpu < 3, f"opening took {opened:.1f} s, {cpu:.1f} s of CPU"
        page = r.page
        calls = int(stats(page)["calls"])
        assert calls > 8000
        # the page builds only what is near the screen: far fewer cards than calls
        assert 0 < len(page.query_selector_all(".call")) < 400
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_selector(f".call[data-i='{calls - 1}']", state="attached")
        page.fill("#filter-text", "needle2111")
        assert page.inner_text("#filter-count") == f"1 of {calls} calls"
        assert texts(page, ".call:not(.hidden) .cid") == ["c2111-3"]
        assert (r.requests, r.dialogs, r.errors) == ([], [], [])


def test_pi_export_refuses_bad_input_with_one_line(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "session", "version": 3}\nnot json\n')
    cases = [
        ([str(tmp_path / "missing.jsonl")], f"pi: error: cannot read {tmp_path / 'missing.jsonl'}: No such file or directory\n"),
        ([str(bad)], f"pi: error: {bad}:2: invalid JSON: Expecting value\n"),
        ([str(bad), "-o", str(tmp_path / "no" / "x.html")], f"pi: error: -o {tmp_path / 'no' / 'x.html'}: cannot write: No such file or directory\n"),
    ]  # fmt: skip
    for args, err in cases:
        done = subprocess.run(
            [str(PI), "export", *args], capture_output=True, text=True, check=False
        )
        assert (done.returncode, done.stdout, done.stderr) == (2, "", err)
    assert base64  # (used by the support module's sessions)


def test_replay_report_shows_the_audit_decisions_of_the_run(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pi replay --audit A --report R`` with a policy plugin that blocks ``rm``: the report
    puts the run's own decisions (a real audit log) beside the calls."""
    recorded = write_jsonl(
        tmp_path / "replay.jsonl",
        [
            {"role": "assistant", "stopReason": "toolUse", "content": [
                call("k1", "bash", command="echo kept"),
                call("k2", "bash", command="rm -rf build"),
            ]},
        ],
    )  # fmt: skip
    html = tmp_path / "replay.html"
    audit = tmp_path / "audit.jsonl"
    status = main(
        ["-p", "pi_builtin_tools.plugin", "-p", "block_rm_plugin", "replay", str(recorded),
         "--cwd", str(tmp_path), "--audit", str(audit), "--report", str(html), "--json"]
    )  # fmt: skip
    assert status == 0, capsys.readouterr().err
    with open_report(browser, html) as r:
        page = r.page
        assert stats(page)["blocked"] == "1"
        assert texts(page, ".call .badge") == ["ok", "blocked"]
        assert texts(page, ".call .audit") == [
            "policy · before · allow — no policy blocked the call",
            "policy · before · deny · by no-rm rule — rm is not allowed here",
        ]
        assert texts(page, ".call pre.output") == ["kept\n", "rm is not allowed here"]
        assert len(page.query_selector_all(".lane .bar.est")) == 0


def test_report_in_a_missing_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    import subprocess

    target = tmp_path / "no" / "r.html"
    done = subprocess.run(
        [str(PI), "run", "--report", str(target), "--cwd", str(tmp_path / "w")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"pi: error: --report {target}: cannot write: No such file or directory\n"
    assert not (tmp_path / "w").exists()
