"""``[telemetry]`` and the ``OTEL_*`` variables: whether telemetry is on, decided at every
session start, so this module imports nothing but ``os`` (the cold start of ``pi call`` pays
for it)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

TRUE = ("1", "true", "yes", "on")


class TelemetryConfigError(ValueError):
    """A ``[telemetry]`` table pi cannot use; the message names the key."""


class TelemetrySettings:
    """``endpoint``: the ``[telemetry] otlp_endpoint`` (``None``: the OTEL_* variables say);
    ``record_content``: record arguments and results."""

    __slots__ = ("endpoint", "record_content")

    def __init__(self, endpoint: str | None, record_content: bool) -> None:
        self.endpoint = endpoint
        self.record_content = record_content


def telemetry_settings(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> TelemetrySettings | None:
    """The settings when telemetry is on, else ``None`` (imports nothing of OpenTelemetry)."""
    env = os.environ if environ is None else environ
    table = config.get("telemetry", {})
    if not isinstance(table, dict):
        raise TelemetryConfigError("[telemetry] must be a table")
    for key in table:
        if key not in ("otlp_endpoint", "record_content"):
            raise TelemetryConfigError(
                f"[telemetry] {key}: unknown key (known: otlp_endpoint, record_content)"
            )
    endpoint = table.get("otlp_endpoint")
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint.strip()):
        raise TelemetryConfigError("[telemetry] otlp_endpoint: must be a URL string")
    record = table.get("record_content", False)
    if not isinstance(record, bool):
        raise TelemetryConfigError("[telemetry] record_content: must be true or false")
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in TRUE:
        return None
    from_env = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if endpoint is None and not from_env:
        return None
    return TelemetrySettings(endpoint=endpoint, record_content=record)


__all__ = ["TelemetryConfigError", "TelemetrySettings", "telemetry_settings"]
