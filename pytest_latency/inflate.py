"""Decompression in bounded steps: a small compressed body never becomes a large buffer.

``zlib.decompressobj().decompress(data)`` expands all of ``data`` at once: 1 MiB of
gzip can become 1 GiB in one call. :class:`BoundedInflater` asks zlib for at most
``step`` bytes at a time (``max_length``, the rest stays in ``unconsumed_tail``) and
stops as soon as the total passes ``max_bytes``, dropping what it had decoded before it
raises, so nothing large stays alive in the traceback.
"""

from __future__ import annotations

import zlib

DEFAULT_STEP = 256 * 1024
GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_WBITS = zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS


class InflateLimitError(ValueError):
    """The decoded data passed the limit (``limit`` bytes)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"decoded data over {limit} bytes")
        self.limit = limit


class BoundedInflater:
    """One zlib stream, decoded at most ``max_bytes`` in all, ``step`` bytes per call.

    :meth:`feed` and :meth:`finish` raise :class:`InflateLimitError` past the limit and
    ``zlib.error`` on malformed data.
    """

    __slots__ = ("_left", "_step", "_zlib", "max_bytes")

    def __init__(self, wbits: int, max_bytes: int, step: int = DEFAULT_STEP) -> None:
        self._zlib = zlib.decompressobj(wbits)
        self.max_bytes = max_bytes
        self._left = max_bytes
        self._step = step

    @property
    def eof(self) -> bool:
        """The compressed stream ended (trailing bytes, if any, are not read)."""
        return self._zlib.eof

    @property
    def unused_data(self) -> bytes:
        """Bytes after the end of the compressed stream."""
        return self._zlib.unused_data

    def feed(self, data: bytes) -> list[bytes]:
        """The decoded pieces of ``data`` (each at most ``step`` bytes)."""
        pieces: list[bytes] = []
        pending = data
        while not self._zlib.eof:
            out = self._zlib.decompress(pending, self._step)
            self._left -= len(out)
            if self._left < 0:
                pieces.clear()  # drop before raising: the traceback keeps this frame
                del out
                raise InflateLimitError(self.max_bytes)
            if out:
                pieces.append(out)
            pending = self._zlib.unconsumed_tail
            if not pending and len(out) < self._step:
                break  # input used up and zlib had no more output waiting
        return pieces

    def finish(self) -> list[bytes]:
        """What zlib still holds at the end of the input."""
        pieces = self.feed(b"")
        tail = self._zlib.flush(self._step)
        self._left -= len(tail)
        if self._left < 0:
            pieces.clear()
            del tail
            raise InflateLimitError(self.max_bytes)
        if tail:
            pieces.append(tail)
        return pieces
