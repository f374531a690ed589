"""Content-Encoding of a streamed body: identity, or gzip/deflate decoded incrementally.

The driver asks for ``accept-encoding: identity``; a server that compresses anyway gets
gzip and deflate decoded (both transports), anything else is a ``protocol_error``
rather than garbage fed to the SSE decoder. Decoded output is bounded per response, so a
small compressed body cannot expand without limit, and it is decoded in bounded steps
(:class:`~pytest_latency.inflate.BoundedInflater`): a gzip bomb fails its request with
no large buffer left alive by the failure.
"""

from __future__ import annotations

import zlib

from pytest_latency.driver.limits import size_text
from pytest_latency.driver.transport import ProtocolFailure
from pytest_latency.inflate import BoundedInflater, InflateLimitError

_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}  # zlib's framing for each coding


def _codings(header: str) -> list[str]:
    return [c for c in (part.strip().lower() for part in header.split(",")) if c != "identity"]


def encoding_problem(header: str) -> str | None:
    """Why a ``Content-Encoding`` value cannot be read, or None when it can."""
    codings = [c for c in _codings(header) if c]
    unsupported = [c for c in codings if c not in _WBITS]
    if unsupported:
        return f"unsupported Content-Encoding {unsupported[0]!r} (the client asked for identity)"
    if len(codings) > 1:
        return f"stacked Content-Encoding {header.strip()!r} is not supported"
    return None


class BodyDecoder:
    """Decompresses one response body piece by piece, at most ``max_bytes`` in all."""

    __slots__ = ("_coding", "_inflater")

    def __init__(self, coding: str, max_bytes: int) -> None:
        self._coding = coding
        self._inflater = BoundedInflater(_WBITS[coding], max_bytes)

    @classmethod
    def for_header(cls, header: str, max_bytes: int) -> BodyDecoder | None:
        """A decoder when the body is compressed in a way we read; else None (identity, or
        an unsupported coding the driver refuses before reading)."""
        codings = [c for c in _codings(header) if c]
        if len(codings) == 1 and codings[0] in _WBITS:
            return cls(codings[0], max_bytes)
        return None

    def decode(self, data: bytes) -> list[bytes]:
        """The decoded pieces of ``data``; :class:`ProtocolFailure` past the limit."""
        try:
            return self._inflater.feed(data)
        except InflateLimitError:
            raise ProtocolFailure(self._over()) from None
        except zlib.error as exc:
            raise ProtocolFailure(f"malformed {self._coding} body: {exc}") from None

    def flush(self) -> list[bytes]:
        try:
            return self._inflater.finish()
        except InflateLimitError:
            raise ProtocolFailure(self._over()) from None
        except zlib.error as exc:
            raise ProtocolFailure(f"malformed {self._coding} body: {exc}") from None

    def _over(self) -> str:
        return f"decoded body over {size_text(self._inflater.max_bytes)}"
