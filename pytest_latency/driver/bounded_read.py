"""Reading a server's answer with a byte cap, a decoded-size cap and a deadline.

Every answer the plugin reads outside the run's streams goes through here: the
readiness check, the version probe and model discovery (``servers``), and the
``/metrics`` and queue-depth scrapes (``telemetry``).

httpx's ``response.read()``, ``.json()`` and ``iter_lines()`` read whatever the server
sends: an endless ``/v1/models``, a 1 MiB gzip that expands to 1 GiB, or a byte a second
with no newline each held the readiness check (and its memory) without bound. Here the
raw bytes are counted, compressed bodies are decoded in bounded steps
(:class:`~pytest_latency.inflate.BoundedInflater`), and the wall clock is checked after
every read: a silent server is stopped by the client's read timeout, a trickling one by
the deadline.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator

import httpx

from pytest_latency.driver.limits import size_text
from pytest_latency.inflate import GZIP_WBITS, ZLIB_WBITS, BoundedInflater, InflateLimitError

MAX_ANSWER_BYTES = 1024 * 1024  # a model list or a version: small documents
_WBITS = {"gzip": GZIP_WBITS, "x-gzip": GZIP_WBITS, "deflate": ZLIB_WBITS}
#: What the readiness requests accept: codings decoded here, in bounded steps.
ACCEPT_ENCODING = "gzip, deflate"


class AnswerUnreadable(Exception):
    """The answer passed a cap or the deadline, or could not be decoded; the message says."""


def _inflater(header: str, max_bytes: int) -> BoundedInflater | None:
    codings = [c for c in (part.strip().lower() for part in header.split(",")) if c]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in _WBITS:
        raise AnswerUnreadable(f"unsupported Content-Encoding {header.strip()!r}")
    return BoundedInflater(_WBITS[codings[0]], max_bytes)


def bounded_chunks(
    response: httpx.Response, deadline: float, max_bytes: int = MAX_ANSWER_BYTES
) -> Iterator[bytes]:
    """The decoded body of ``response`` piece by piece; :class:`AnswerUnreadable` when it
    passes ``max_bytes`` (raw or decoded) or the monotonic ``deadline``."""
    inflater = _inflater(response.headers.get("content-encoding", ""), max_bytes)
    raw = 0
    try:
        # No chunk size: httpx would hold reads back until one was full, and a trickling
        # server would never reach the deadline check.
        for chunk in response.iter_raw():
            raw += len(chunk)
            if raw > max_bytes:
                raise AnswerUnreadable(f"body over {size_text(max_bytes)}")
            yield from [chunk] if inflater is None else inflater.feed(chunk)
            if time.monotonic() > deadline:
                raise AnswerUnreadable("body not complete within the timeout")
        if inflater is not None:
            yield from inflater.finish()
    except InflateLimitError:
        raise AnswerUnreadable(f"decoded body over {size_text(max_bytes)}") from None
    except zlib.error as exc:
        raise AnswerUnreadable(f"malformed compressed body: {exc}") from None


def read_bounded(
    response: httpx.Response,
    deadline: float,
    max_bytes: int = MAX_ANSWER_BYTES,
    *,
    truncate: bool = False,
) -> bytes:
    """The whole decoded body (see :func:`bounded_chunks`). ``truncate``: what was read
    before a cap or the deadline instead of failing (an error body, read for its text)."""
    parts: list[bytes] = []
    try:
        parts.extend(bounded_chunks(response, deadline, max_bytes))
    except AnswerUnreadable:
        if not truncate:
            parts.clear()  # drop before raising: the traceback keeps this frame
            raise
    return b"".join(parts)[:max_bytes]
