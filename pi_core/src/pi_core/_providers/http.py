"""HTTP for the model providers: retries with backoff, and one SSE stream driver.

* :class:`RetryPolicy`: how often and how long to wait. A request is retried when the server
  answers 408, 409, 429 or any 5xx (or sends ``x-should-retry: true``; ``false`` forbids it) and
  when the connection fails, up to ``max_retries`` times, as the OpenAI and Anthropic SDKs Pi
  uses do. The wait before retry ``n`` (0-based) is the server's ``retry-after-ms`` /
  ``retry-after`` (seconds or an HTTP date) when it is between 0 and ``max_retry_after`` seconds,
  else ``min(base_delay * 2**n, max_delay)`` seconds.
* :func:`send_with_retry`: send one request, retrying as above; returns the open streaming
  response of the first success, raises :class:`~pi_core._errors.ProviderError` with the
  provider's error text after the last failure.
* :func:`stream_sse_response`: the provider event stream of one streamed call: connect (with
  retries), yield ``start``, feed each server-sent event to a :class:`SSEHandler`, finish. Every
  failure (HTTP status, network, a bad event) ends the stream with an ``error`` event whose
  message has ``stopReason: "error"`` and ``errorMessage`` the failure's text; an abort (the
  run's :class:`~pi_core._abort.Abort`) cancels the request or the read in progress and ends it
  with ``stopReason: "aborted"``, ``errorMessage`` ``Operation aborted``. HTTP runs on httpx's
  ``AsyncClient``, which runs on trio through anyio; one client per call.
"""

from __future__ import annotations

import email.utils
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import httpx
import httpx_sse
import trio

from pi_core._abort import linked_scope
from pi_core._errors import ProviderError
from pi_core._providers.assembly import MessageAssembler
from pi_core._providers.base import ABORTED_ERROR_MESSAGE
from pi_core._wire.json_parse import parse_json

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._providers.base import ModelRequest, ProviderEvent

RETRY_STATUSES = frozenset({408, 409, 429})
"""Statuses retried besides every 5xx."""


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` (retries after the first attempt), ``base_delay``/``max_delay`` (seconds
    of exponential backoff: ``min(base_delay * 2**n, max_delay)``), ``max_retry_after`` (the
    longest server-requested wait, in seconds, that is honoured)."""

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def backoff(self, attempt: int) -> float:
        """The computed wait before retry ``attempt`` (0-based), in seconds."""
        return float(min(self.base_delay * 2**attempt, self.max_delay))

    def delay(self, attempt: int, headers: httpx.Headers | None) -> float:
        """The wait before retry ``attempt``: the server's request when acceptable, else
        :meth:`backoff`."""
        requested = retry_after_seconds(headers) if headers is not None else None
        if requested is not None and 0 <= requested <= self.max_retry_after:
            return requested
        return self.backoff(attempt)


@dataclass(frozen=True)
class HttpSettings:
    """``timeout``: seconds httpx waits to connect and between two reads; ``retry``."""

    timeout: float = 600.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds, or an HTTP date), in
    seconds; ``None`` when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return float(raw_ms) / 1000
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def should_retry(response: httpx.Response) -> bool:
    """Whether a failed response is worth another attempt (``x-should-retry`` wins)."""
    explicit = response.headers.get("x-should-retry")
    if explicit == "true":
        return True
    if explicit == "false":
        return False
    return response.status_code in RETRY_STATUSES or response.status_code >= 500


ErrorText = Callable[[int, bytes], str]
"""``(status, body) -> errorMessage`` for a failed HTTP response (provider-specific)."""


async def send_with_retry(
    client: httpx.AsyncClient,
    request: httpx.Request,
    policy: RetryPolicy,
    error_text: ErrorText,
) -> httpx.Response:
    """Send ``request`` (streaming) until a 2xx answer; return that open response (the caller
    closes it).

    Raises :class:`~pi_core._errors.ProviderError`: ``error_text(status, body)`` for a status
    that is not retried or after the last retry; ``Connection error: ...`` /
    ``Request timed out: ...`` when the connection kept failing.
    """
    attempt = 0
    while True:
        headers: httpx.Headers | None = None
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            failure = f"Request timed out: {_describe(exc)}"
        except httpx.TransportError as exc:
            failure = f"Connection error: {_describe(exc)}"
        else:
            if response.is_success:
                return response
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            failure = error_text(response.status_code, body)
            if not should_retry(response):
                raise ProviderError(failure)
            headers = response.headers
        if attempt >= policy.max_retries:
            raise ProviderError(failure)
        await trio.sleep(policy.delay(attempt, headers))
        attempt += 1


def error_body_text(status: int, body: bytes, detail: Callable[[Any], str | None]) -> str:
    """A provider's text for a failed response (its SDK's wording): ``STATUS {detail}`` when the
    body is JSON and ``detail(parsed body)`` gives a text, else ``STATUS {body text, stripped}``,
    else ``STATUS status code (no body)``. ``body`` is decoded as UTF-8 (bad bytes replaced)."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = parse_json(text)
    except ValueError:
        pass
    else:
        found = detail(parsed)
        if found is not None:
            return f"{status} {found}"
    if text.strip():
        return f"{status} {text.strip()}"
    return f"{status} status code (no body)"


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class SSEHandler(Protocol):
    """One provider's reading of its event stream.

    ``handle(event)`` returns the provider events one server-sent event produces and raises
    :class:`~pi_core._errors.ProviderError` (or any exception) when the stream reports a
    failure; ``finish()`` returns the last events (closing blocks, then ``done`` or
    ``error``) once the stream ended.
    """

    def handle(self, event: httpx_sse.ServerSentEvent) -> Iterable[ProviderEvent]: ...

    def finish(self) -> Iterable[ProviderEvent]: ...


class SSEHandlerType(Protocol):
    """What makes an :class:`SSEHandler` reading into an assembler (the handler's class)."""

    def __call__(self, assembler: MessageAssembler) -> SSEHandler: ...


async def stream_sse_response(
    *,
    assembler: MessageAssembler,
    handler: SSEHandler,
    abort: Abort | None,
    settings: HttpSettings,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    error_text: ErrorText,
) -> AsyncIterator[ProviderEvent]:
    """The provider events of one streamed POST of ``body`` (JSON) to ``url``.

    ``start`` is yielded once the server accepted the request (after any retries), as Pi does;
    a call that fails before has only the ``error`` event, with empty ``content``. Reads run in
    cancel scopes linked to ``abort`` and never span a ``yield``.
    """
    if abort is not None and abort.aborted:
        yield assembler.error(ABORTED_ERROR_MESSAGE, aborted=True)
        return
    request_headers = {
        "accept": "text/event-stream",
        "content-type": "application/json",
        **headers,
    }
    async with httpx.AsyncClient(timeout=httpx.Timeout(settings.timeout)) as client:
        request = client.build_request("POST", url, json=body, headers=request_headers)
        response: httpx.Response | None = None
        failure: str | None = None
        with linked_scope(abort) as scope:
            try:
                response = await send_with_retry(client, request, settings.retry, error_text)
            except Exception as exc:
                failure = _describe(exc)
        if scope.cancelled_caught or response is None:
            yield assembler.error(failure or ABORTED_ERROR_MESSAGE, aborted=scope.cancelled_caught)
            return
        events = httpx_sse.EventSource(response).aiter_sse()
        try:
            yield assembler.start()
            while True:
                sse: httpx_sse.ServerSentEvent | None = None
                failure = None
                with linked_scope(abort) as scope:
                    try:
                        sse = await anext(events)
                    except StopAsyncIteration:
                        sse = None
                    except Exception as exc:
                        failure = _describe(exc)
                if scope.cancelled_caught:
                    yield assembler.error(ABORTED_ERROR_MESSAGE, aborted=True)
                    return
                if failure is not None:
                    yield assembler.error(failure)
                    return
                try:
                    produced = list(handler.finish() if sse is None else handler.handle(sse))
                except Exception as exc:
                    yield assembler.error(_describe(exc))
                    return
                for event in produced:
                    yield event
                if sse is None:
                    return
        finally:
            with trio.CancelScope(shield=True):
                await _close_stream(response, events)


class SSEProvider(ABC):
    """What the HTTP providers (OpenAI-compatible, Anthropic) share: :meth:`stream` posts
    :meth:`build_request_body` to :attr:`url` with :meth:`request_headers` and reads the answer
    with :attr:`handler_type` through :func:`stream_sse_response` (retries, abort, errors).

    A subclass sets ``api_name`` (the ``api`` of its messages), ``model``, ``provider_name`` and
    ``settings``, and implements the protocol-specific members.
    """

    api_name: ClassVar[str]
    model: str
    provider_name: str
    """The ``provider`` written into each assistant message."""
    settings: HttpSettings
    handler_type: ClassVar[SSEHandlerType]
    """Makes the reader of this protocol's server-sent events into an assembler."""
    http_error_text: ErrorText
    """The error message of a failed HTTP response, as the provider's SDK words it (a
    ``staticmethod``)."""

    @property
    @abstractmethod
    def url(self) -> str:
        """Where the request is posted."""

    @abstractmethod
    def request_headers(self) -> dict[str, str]:
        """The protocol's headers (authentication, version) plus the configured ones."""

    @abstractmethod
    def build_request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""

    def stream(
        self, request: ModelRequest, abort: Abort | None = None
    ) -> AsyncIterator[ProviderEvent]:
        """The provider events of one streamed model response (see :func:`stream_sse_response`).
        A :class:`~pi_core._errors.ProviderError` raised by :meth:`build_request_body` (a tool
        that requires what the provider cannot do) ends the stream with that error."""
        assembler = MessageAssembler(
            api=self.api_name, provider=self.provider_name, model=self.model
        )
        try:
            body = self.build_request_body(request)
            strict = self.strict_tool_parameters(request)
        except ProviderError as exc:
            return _single_event(assembler.error(str(exc)))
        events = stream_sse_response(
            assembler=assembler,
            handler=self.handler_type(assembler),
            abort=abort,
            settings=self.settings,
            url=self.url,
            headers=self.request_headers(),
            body=body,
            error_text=self.http_error_text,
        )
        return _omit_added_nulls(events, strict) if strict else events

    def strict_tool_parameters(self, request: ModelRequest) -> dict[str, dict[str, Any]]:
        """The tools of ``request`` that :meth:`build_request_body` sends strict, by name, with
        their (unconverted) parameters: their calls come back without the ``null`` values
        the strict conversion allowed
        (:func:`~pi_core._providers.constrained_sampling.omit_added_nulls`). None by default."""
        return {}


async def _single_event(event: ProviderEvent) -> AsyncIterator[ProviderEvent]:
    yield event


async def _omit_added_nulls(
    events: AsyncIterator[ProviderEvent], strict: dict[str, dict[str, Any]]
) -> AsyncIterator[ProviderEvent]:
    """``events`` with the arguments of each finished call of a strict tool cleaned."""
    from pi_core._providers.constrained_sampling import omit_added_nulls
    from pi_core._wire.messages import ToolCall

    def clean(call: ToolCall | None) -> None:
        if call is not None and call.name in strict:
            call.arguments = omit_added_nulls(strict[call.name], call.arguments)

    async with aclosing(cast("AsyncGenerator[ProviderEvent, None]", events)) as source:
        async for event in source:
            if event.type == "toolcall_end":
                clean(event.tool_call)
            message = (
                event.message
                if event.type == "done"
                else event.error
                if event.type == "error"
                else None
            )
            if message is not None:
                for block in message.content:
                    if isinstance(block, ToolCall):
                        clean(block)
            yield event


async def _close_stream(response: httpx.Response, events: AsyncIterator[Any]) -> None:
    """Close ``response`` and run ``events`` to its end.

    httpx reads a response through a chain of async generators; one left suspended is
    garbage collected unfinished, which trio reports as a ``ResourceWarning`` (encode/httpx
    #3686). Once the response is closed, the next read fails or ends, which finishes every
    generator of the chain; a bounded wait guards against a read that would not return.
    """
    await response.aclose()
    with trio.move_on_after(_CLOSE_GRACE):
        while True:
            try:
                await anext(events)
            except StopAsyncIteration:
                break
            except Exception:
                break


_CLOSE_GRACE = 1.0
"""Seconds :func:`_close_stream` waits for the closed stream to finish."""


__all__ = [
    "RETRY_STATUSES",
    "ErrorText",
    "HttpSettings",
    "RetryPolicy",
    "SSEHandler",
    "SSEHandlerType",
    "SSEProvider",
    "error_body_text",
    "retry_after_seconds",
    "send_with_retry",
    "should_retry",
    "stream_sse_response",
]
