"""OpenTelemetry spans of a session's tool calls, over OTLP (HTTP/protobuf).

On when ``[telemetry] otlp_endpoint`` is set in ``pi.toml`` or the standard variables
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` are (and
``OTEL_SDK_DISABLED`` is not ``true``); :func:`telemetry_settings` decides that without importing
anything of OpenTelemetry, so with telemetry off nothing of it is loaded. The rest of the
``OTEL_*`` variables (headers, timeout, service name, resource attributes) are the SDK's.

The span tree of a session (names and attributes follow the GenAI semantic conventions for
tool execution)::

    invoke_agent pi                 gen_ai.operation.name=invoke_agent, gen_ai.agent.name=pi,
    │                               pi.host, pi.session.id
    └─ turn N                       pi.turn.index
       └─ batch N                   pi.batch.index, pi.batch.size
          └─ execute_tool NAME      gen_ai.operation.name=execute_tool, gen_ai.tool.name,
             │                      gen_ai.tool.call.id, gen_ai.tool.type=function;
             │                      error.type (tool_error | blocked) and status ERROR on failure
             └─ execute_tool NAME   a nested call, child of the call that made it

Every hook implementation a call ran is an event ``pi.hook`` of its span (``pi.hook.name``,
``pi.hook.plugin``, ``pi.hook.duration_ms``, ``pi.hook.outcome``); a policy decision that
blocked the call is an event ``pi.policy.decision`` (``pi.policy.decision=deny``,
``pi.policy.source``, ``pi.policy.reason``). Arguments and results are recorded
(``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) only with
``[telemetry] record_content = true``. Every bash command gets the call span's context as
``TRACEPARENT`` (W3C trace context) in its environment.

Telemetry is a plugin (:class:`TelemetryPlugin`, registered by the host when on) implementing
``pi_session_start``, ``pi_on_event``, ``pi_bash_spawn_context`` and ``pi_session_end``, plus an
observer of hook implementation calls.
"""

from __future__ import annotations

import os
import time
from typing import Any

from pi_core._plugins.caller import HookCall
from pi_core._plugins.contexts import BashSpawnContext
from pi_core._plugins.markers import hookimpl
from pi_core._report.settings import TelemetrySettings

PLUGIN_NAME = "pi-telemetry"


def _now_ns() -> int:
    return time.time_ns()


def _text(result: Any) -> str:
    return "\n".join(
        getattr(b, "text", "") for b in getattr(result, "content", None) or [] if hasattr(b, "text")
    )


class TelemetryPlugin:
    """The spans of one session (see the module docstring)."""

    def __init__(self, settings: TelemetrySettings, host: str) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.settings = settings
        self.host = host
        if settings.endpoint is not None:
            exporter = OTLPSpanExporter(endpoint=settings.endpoint.rstrip("/") + "/v1/traces")
        else:
            exporter = OTLPSpanExporter()
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "pi")})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("pi_core")
        self.session_span: Any = None
        self.turn_span: Any = None
        self.turns = 0
        self.batches = 0
        self.batch_span: Any = None
        self.batch_open: set[str] = set()
        self.calls: dict[str, Any] = {}
        self.pending: dict[str, list[tuple[str, dict[str, Any], int]]] = {}
        self.blocked: set[str] = set()

    # -- spans ---------------------------------------------------------------------------------

    def _context(self, span: Any) -> Any:
        from opentelemetry import trace

        return trace.set_span_in_context(span) if span is not None else None

    def _start(self, name: str, parent: Any, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(
            name, context=self._context(parent), attributes=attributes, start_time=_now_ns()
        )

    def _end(self, span: Any) -> None:
        if span is not None:
            span.end(end_time=_now_ns())

    def _event(self, call_id: str, name: str, attributes: dict[str, Any]) -> None:
        span = self.calls.get(call_id)
        if span is None:  # the start event has not reached the sink yet
            self.pending.setdefault(call_id, []).append((name, attributes, _now_ns()))
        else:
            span.add_event(name, attributes, timestamp=_now_ns())

    # -- hooks ---------------------------------------------------------------------------------

    @hookimpl
    def pi_session_start(self, context: Any) -> None:
        self.session_span = self._start(
            "invoke_agent pi",
            None,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "pi",
                "pi.host": self.host,
                "pi.session.id": context.session_id,
            },
        )

    @hookimpl
    def pi_on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "turn_start":
            self._end_turn()
            self.turns += 1
            self.turn_span = self._start(
                f"turn {self.turns}", self.session_span, {"pi.turn.index": self.turns}
            )
        elif kind == "turn_end":
            self._end_turn()
        elif kind == "message_end" and getattr(event.message, "role", None) == "assistant":
            calls = list(getattr(event.message, "tool_calls", []) or [])
            if calls:
                self._end(self.batch_span)
                self.batches += 1
                self.batch_span = self._start(
                    f"batch {self.batches}",
                    self.turn_span or self.session_span,
                    {"pi.batch.index": self.batches, "pi.batch.size": len(calls)},
                )
                self.batch_open = {c.id for c in calls}
        elif kind == "tool_execution_start":
            self._start_call(event)
        elif kind == "tool_execution_end":
            self._end_call(event)

    def _start_call(self, event: Any) -> None:
        parent_id = event.parent_tool_call_id
        parent = self.calls.get(parent_id) if parent_id is not None else None
        if parent is None:
            parent = self.batch_span or self.turn_span or self.session_span
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.call.id": event.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if self.settings.record_content:
            import json

            attributes["gen_ai.tool.call.arguments"] = json.dumps(
                event.args, ensure_ascii=False, default=repr
            )
        span = self._start(f"execute_tool {event.tool_name}", parent, attributes)
        self.calls[event.tool_call_id] = span
        for name, attrs, stamp in self.pending.pop(event.tool_call_id, []):
            span.add_event(name, attrs, timestamp=stamp)

    def _end_call(self, event: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.calls.pop(event.tool_call_id, None)
        if span is None:
            return
        if self.settings.record_content:
            span.set_attribute("gen_ai.tool.call.result", _text(event.result))
        if event.is_error:
            blocked = event.tool_call_id in self.blocked
            span.set_attribute("error.type", "blocked" if blocked else "tool_error")
            span.set_status(Status(StatusCode.ERROR, _text(event.result)[:1024]))
        self._end(span)
        self.batch_open.discard(event.tool_call_id)
        if not self.batch_open and self.batch_span is not None:
            self._end(self.batch_span)
            self.batch_span = None

    def _end_turn(self) -> None:
        self._end(self.batch_span)
        self.batch_span = None
        self._end(self.turn_span)
        self.turn_span = None

    @hookimpl
    def pi_bash_spawn_context(self, context: BashSpawnContext) -> BashSpawnContext | None:
        from pi_core._pipeline.tool_context import current_tool_context

        try:
            call_id = current_tool_context().tool_call_id
        except RuntimeError:
            return None
        span = self.calls.get(call_id)
        if span is None:
            return None
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, context=self._context(span))
        if "traceparent" not in carrier:
            return None
        context.env = {**context.env, "TRACEPARENT": carrier["traceparent"]}
        return context

    @hookimpl
    def pi_session_end(self, context: Any) -> None:
        for span in list(self.calls.values()):
            self._end(span)
        self.calls.clear()
        self._end_turn()
        self._end(self.session_span)
        self.session_span = None
        self.provider.force_flush()
        self.provider.shutdown()

    # -- hook calls ----------------------------------------------------------------------------

    def observe(self, call: HookCall) -> None:
        """The observer of hook implementation calls: an event of the call's span."""
        if call.plugin == PLUGIN_NAME:
            return
        context = call.kwargs.get("context")
        tool_call = getattr(context, "tool_call", None)
        call_id = getattr(tool_call, "id", None)
        if not isinstance(call_id, str):
            return
        self._event(
            call_id,
            "pi.hook",
            {
                "pi.hook.name": call.hook,
                "pi.hook.plugin": call.plugin,
                "pi.hook.duration_ms": round(call.duration * 1000, 3),
                "pi.hook.outcome": call.result_kind(),
            },
        )
        result = call.result
        if call.hook == "pi_before_tool_call" and getattr(result, "block", False):
            self.blocked.add(call_id)
            self._event(
                call_id,
                "pi.policy.decision",
                {
                    "pi.policy.decision": "deny",
                    "pi.policy.source": str(getattr(result, "source", None) or call.plugin),
                    "pi.policy.reason": str(getattr(result, "reason", None) or ""),
                },
            )


def enable_telemetry(pm: Any, settings: TelemetrySettings, host: str) -> TelemetryPlugin:
    """Register a :class:`TelemetryPlugin` for ``host`` in the plugin manager ``pm``."""
    plugin = TelemetryPlugin(settings, host)
    pm.register(plugin, name=PLUGIN_NAME)
    pm.hook_observers.append(plugin.observe)
    return plugin


__all__ = ["PLUGIN_NAME", "TelemetryPlugin", "enable_telemetry"]
