"""``--report FILE``: what a live run (``pi run``, ``pi replay``) records for its report.

A :class:`ReportRecorder` sees every agent event of the run: the messages (``message_end``),
when each tool call started and ended (``tool_execution_start``/``_end``, the wall clock in
epoch milliseconds, so that the timeline shows real starts, waits and overlaps) and the full
results of nested calls (which a session file keeps only as the bounded ``nestedCalls``
record). :meth:`ReportRecorder.report` builds the report data, with the run's decisions from
the audit log when there is one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pi_core._report.model import CallTiming, RawSession, RunRecord, build_report, read_audit
from pi_core._wire.session_files import SessionFileError


class ReportRecorder:
    """Collects a run's messages and call timings (see the module docstring)."""

    def __init__(self, source: str, kind: str, *, cwd: str = "", model: str = "") -> None:
        self.source = source
        self.kind = kind
        provider, _, model_id = model.partition(":")
        self.header: dict[str, Any] = {"cwd": cwd}
        if model:
            self.header.update(provider=provider, modelId=model_id)
        self.messages: list[dict[str, Any]] = []
        self.run = RunRecord()

    def observe(self, event: Any) -> None:
        """Record ``event`` (an agent event of :mod:`pi_core._wire.events`)."""
        kind = event.type
        if kind == "tool_execution_start":
            self.run.timings[event.tool_call_id] = CallTiming(start=time.time() * 1000)
        elif kind == "tool_execution_end":
            timing = self.run.timings.get(event.tool_call_id)
            if timing is not None:
                timing.end = time.time() * 1000
            if event.parent_tool_call_id is not None:
                result = event.result.to_json_dict()
                result["isError"] = event.is_error
                self.run.nested[event.tool_call_id] = result
        elif kind == "message_end":
            self.messages.append(event.message.to_json_dict())

    def report(self, *, audit: str | None = None, session_id: str | None = None) -> dict[str, Any]:
        """The report data; ``audit``: the run's audit log, of which only ``session_id``'s
        lines count (one log may hold many sessions)."""
        decisions: list[dict[str, Any]] = []
        if audit is not None and Path(audit).is_file():
            try:
                decisions = read_audit(audit)
            except SessionFileError:
                decisions = []
            if session_id is not None:
                decisions = [d for d in decisions if d.get("session") in (session_id, None)]
        session = RawSession(self.source, self.kind, None, self.header, [], self.messages)
        return build_report(session, audit=decisions, run=self.run)


__all__ = ["ReportRecorder"]
