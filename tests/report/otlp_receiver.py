"""An OTLP/HTTP trace receiver on loopback for the telemetry tests.

It answers ``POST /v1/traces`` as the OpenTelemetry Collector's ``otlp`` receiver does for
HTTP/protobuf: the body is an ``ExportTraceServiceRequest`` (decoded with the
``opentelemetry-proto`` messages, the protocol's published definitions), the answer an empty
``ExportTraceServiceResponse`` (``application/x-protobuf``). Every span is kept as a
:class:`Span` (hex ids, attributes and event attributes as plain values).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any] = field(default_factory=dict)


class Receiver:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self.lock = threading.Lock()
        self.url = ""

    def add(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.requests += 1
            for rs in request.resource_spans:
                resource = _attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            Span(
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_id=s.parent_span_id.hex(),
                                attributes=_attributes(s.attributes),
                                events=[(e.name, _attributes(e.attributes)) for e in s.events],
                                status_code=s.status.code,
                                status_message=s.status.message,
                                resource=resource,
                            )
                        )


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if (
                self.path != "/v1/traces"
                or self.headers.get("Content-Type") != "application/x-protobuf"
            ):
                self.send_response(404)
                self.end_headers()
                return
            receiver.add(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
