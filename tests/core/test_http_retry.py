"""Retry policy of the HTTP providers (issue 5 item 1): backoff, ``retry-after``, statuses."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from pi_core._providers.http import RetryPolicy, retry_after_seconds, should_retry


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3)
    assert [policy.backoff(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_after_forms() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "x", "retry-after": "1.5"})) == 1.5
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = retry_after_seconds(httpx.Headers({"retry-after": date}))
    assert seconds is not None and 28 <= seconds <= 30


def test_delay_honours_retry_after_within_the_limit() -> None:
    policy = RetryPolicy(base_delay=1, max_delay=8, max_retry_after=60)
    assert policy.delay(0, httpx.Headers({"retry-after": "7"})) == 7.0
    assert policy.delay(2, httpx.Headers({"retry-after": "600"})) == 4.0  # too long: backoff
    assert policy.delay(1, httpx.Headers({"retry-after": "-1"})) == 2.0
    assert policy.delay(3, None) == 8.0


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, {}, True),
        (500, {}, True),
        (503, {}, True),
        (529, {}, True),
        (408, {}, True),
        (409, {}, True),
        (400, {}, False),
        (401, {}, False),
        (404, {}, False),
        (400, {"x-should-retry": "true"}, True),
        (503, {"x-should-retry": "false"}, False),
    ],
)
def test_should_retry(status: int, headers: dict[str, str], expected: bool) -> None:
    assert should_retry(httpx.Response(status, headers=headers)) is expected
