"""Retrying a rejected request as SDKs do: ``Retry-After`` honoured, jittered backoff else.

With the workload's ``retry: {max: N}`` a request the server rejected (429 or 503) is
sent again, at most N more times, inside the request's own task: the open-loop schedule
of new requests is untouched. Between attempts it waits what the server's
``Retry-After`` (or ``retry-after-ms``, as OpenAI's API sends) said; without one, an
exponential backoff from ``backoff`` doubling up to ``max_backoff``, times a jitter in
(0.75, 1] as the OpenAI SDK draws it. A wait that would pass the request's deadline
(``timeout`` from its first planned send) is not taken: the request stays rejected.

The record is one request's: ``attempts`` counts the sends, ``retry_after_s`` keeps the
last ``Retry-After`` given, ``retry_wait_s`` the time waited in all; ``sent_s`` stays the
first attempt's send (the schedule lag is the generator's, not the server's), and TTFT
and e2e still count from the first planned send.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable

import anyio

from pytest_latency.driver.outcome import UNDECIDED
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.traffic import Retry

__all__ = ("backoff_s", "parse_retry_after", "send_with_retries")

JITTER = 0.25  # the wait is its nominal value times a uniform draw in (1 - JITTER, 1]
_RETRIED = frozenset({Status.REJECTED})


def parse_retry_after(
    seconds: str, milliseconds: str = "", now: float | None = None
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``
    (which wins when both are given); None when absent or unreadable, never negative."""
    for text, scale in ((milliseconds, 1e-3), (seconds, 1.0)):
        text = text.strip()
        if not text:
            continue
        value: float | None
        try:
            value = float(text) * scale
        except ValueError:
            value = _http_date_delay(text, time.time() if now is None else now)
        if value is not None and math.isfinite(value):
            return max(0.0, value)
    return None


def _http_date_delay(text: str, now: float) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - now


def backoff_s(policy: Retry, retry: int, rng: random.Random) -> float:
    """The jittered wait before retry number ``retry`` (1, 2...) when no Retry-After came."""
    nominal = min(policy.backoff_s * 2.0 ** (retry - 1), policy.max_backoff_s)
    return nominal * (1.0 - JITTER * rng.random())


def _reset_for_retry(record: RequestRecord) -> None:
    """Forget what the rejected attempt decided; its ``sent_s`` is kept by the caller."""
    record.status, record.error, record.http_status = UNDECIDED, None, None
    record.end_s, record.server_timing = None, None


async def send_with_retries(
    record: RequestRecord,
    attempt: Callable[[], Awaitable[None]],
    policy: Retry | None,
    deadline_ns: int,
    rng: random.Random,
) -> None:
    """Run ``attempt`` once, then again while the record is rejected and retries are left."""
    await attempt()
    if policy is None:
        return
    first_sent, given = record.sent_s, record.retry_after_s
    while record.status in _RETRIED and record.attempts <= policy.max_retries:
        wait = given  # this attempt's own Retry-After, not an earlier one's
        if wait is None:
            wait = backoff_s(policy, record.attempts, rng)
        if time.perf_counter_ns() + wait * 1e9 >= deadline_ns:
            record.error = f"{record.error}; not retried: the wait of {wait:g}s passes the timeout"
            return
        await anyio.sleep(wait)
        record.retry_wait_s += wait
        _reset_for_retry(record)
        record.attempts += 1
        last, record.retry_after_s = record.retry_after_s, None
        await attempt()
        given = record.retry_after_s
        if given is None:  # the record keeps the last Retry-After the server gave
            record.retry_after_s = last
        record.sent_s = first_sent
