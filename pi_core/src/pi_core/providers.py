"""The model-provider protocol, for plugins that add a model through ``pi_register_providers``.

A provider is any object with ``stream(request, abort)`` returning an async iterator of provider
events (pi-ai's assistant message event protocol): :class:`StreamStart`, then
:class:`StreamDelta` events, then :class:`StreamDone` (the final assistant message) or
:class:`StreamError`. :class:`ScriptedProvider` plays back fixed assistant messages, for tests;
:func:`stream_events` turns one message into that event sequence and :func:`error_message`
builds the assistant message of a failed request. A provider with strict tools uses
:func:`resolve_strict_sampling` (does a tool go strict?), :func:`make_strict_json_schema` (its
parameters in the strict subset; :class:`UnsupportedStrictSchema` when they do not convert) and
:func:`omit_added_nulls` (the calls that come back) for the tools' ``constrained_sampling``.
"""

from __future__ import annotations

from pi_core._providers.base import (
    ABORTED_ERROR_MESSAGE,
    EMPTY_USAGE,
    ModelProvider,
    ModelRequest,
    ProviderEvent,
    ScriptedProvider,
    StreamDelta,
    StreamDone,
    StreamError,
    StreamStart,
    error_message,
    stream_events,
)
from pi_core._providers.constrained_sampling import (
    UnsupportedStrictSchema,
    make_strict_json_schema,
    omit_added_nulls,
    resolve_strict_sampling,
)

__all__ = [
    "ABORTED_ERROR_MESSAGE",
    "EMPTY_USAGE",
    "ModelProvider",
    "ModelRequest",
    "ProviderEvent",
    "ScriptedProvider",
    "StreamDelta",
    "StreamDone",
    "StreamError",
    "StreamStart",
    "UnsupportedStrictSchema",
    "error_message",
    "make_strict_json_schema",
    "omit_added_nulls",
    "resolve_strict_sampling",
    "stream_events",
]
