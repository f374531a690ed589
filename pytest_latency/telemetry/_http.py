"""The HTTP side of the OTLP receiver: framing, decompression, decoding, answers.

Order of the checks, cheapest first: the path, the bearer token (``401``), a free slot
among the concurrent posts (``503`` with ``Retry-After``), the content type and
encoding (``415``), the declared and the decompressed size (``413``); only then parsing.
"""

from __future__ import annotations

import hmac
import logging
import threading
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Protocol

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from pytest_latency.inflate import (
    GZIP_WBITS,
    RAW_DEFLATE_WBITS,
    ZLIB_WBITS,
    BoundedInflater,
    InflateLimitError,
)
from pytest_latency.secret import Secret
from pytest_latency.shown_text import shown
from pytest_latency.telemetry.otlp_json import OtlpJsonError, loads_request
from pytest_latency.telemetry.settings import TRACES_PATH

logger = logging.getLogger("pytest_latency.telemetry.receiver")

#: OTLP/JSON is parsed whole by ``json.loads`` (about 5 ms of GIL per MiB): kept small.
MAX_JSON_BODY_BYTES = 1024 * 1024
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON_TYPE = "application/json"
_IDENTITY = frozenset({"", "identity"})
_GZIP = frozenset({"gzip", "x-gzip"})
_DEFLATE = "deflate"


class ExportSink(Protocol):
    """What the handler needs from the receiver it serves (the receiver imports this
    module, so the handler names the receiver's shape, not its class)."""

    @property
    def max_body_bytes(self) -> int: ...
    @property
    def token(self) -> Secret | None: ...
    @property
    def post_slots(self) -> threading.BoundedSemaphore: ...
    def ingest(self, request: ExportTraceServiceRequest) -> None: ...
    def ingest_body(self, body: bytes | bytearray) -> None: ...
    def record_rejection(self, status: int, reason: str) -> None: ...


class _HasReceiver(Protocol):
    receiver: ExportSink


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...
    def readline(self, size: int = ..., /) -> bytes: ...


class Rejection(Exception):
    """A request answered with an error status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class OtlpHandler(BaseHTTPRequestHandler):
    """``POST /v1/traces`` only. HTTP/1.1 with keep-alive; idle connections time out."""

    protocol_version = "HTTP/1.1"
    timeout = 30.0  # idle keep-alive and slow-body limit, per connection
    server_version = "pytest-latency-otlp"
    sys_version = ""

    @property
    def _receiver(self) -> ExportSink:
        server: _HasReceiver = self.server  # type: ignore[assignment]
        return server.receiver

    def do_POST(self) -> None:
        if self._path() != TRACES_PATH:
            self._reject(Rejection(404, f"no such path {self._path()!r}"))
            return
        if not self._authorised():
            self._reject(Rejection(401, "missing or wrong bearer token"))
            return
        slots = self._receiver.post_slots
        if not slots.acquire(blocking=False):
            self._reject(Rejection(503, "too many concurrent exports; retry later"))
            return
        try:
            self._export()
        finally:
            slots.release()

    def _export(self) -> None:
        try:
            is_json = _content_kind(self.headers.get("Content-Type"))
            encoding = _content_encoding(self.headers.get("Content-Encoding"))
            limit = self._receiver.max_body_bytes
            body = _decompress(self._read_body(limit), encoding, limit)
            if is_json:
                if len(body) > MAX_JSON_BODY_BYTES:  # parsed whole, holding the GIL
                    raise Rejection(413, f"OTLP/JSON body over {MAX_JSON_BODY_BYTES} bytes")
                self._receiver.ingest(_decode_json(body))
            else:
                self._receiver.ingest_body(body)
        except Rejection as rejection:
            self._reject(rejection)
            return
        except DecodeError as exc:
            self._reject(Rejection(400, f"undecodable protobuf body: {exc}"))
            return
        except OSError as exc:  # the client went away or stalled past the timeout
            logger.debug("OTLP receiver: connection error while reading: %s", exc)
            self.close_connection = True
            return
        except Exception:  # a parser bug must not make exporters retry forever
            logger.exception("OTLP receiver: could not process an export")
            self._reject(Rejection(400, "could not process the export"))
            return
        self._answer_ok(is_json)

    def _authorised(self) -> bool:
        token = self._receiver.token
        if token is None:
            return True
        given = (self.headers.get("Authorization") or "").encode("utf-8", "replace")
        return hmac.compare_digest(given, f"Bearer {token.reveal()}".encode())

    def do_GET(self) -> None:
        self._not_post()

    def do_PUT(self) -> None:
        self._not_post()

    def do_DELETE(self) -> None:
        self._not_post()

    def do_PATCH(self) -> None:
        self._not_post()

    def log_message(self, format: str, *args: object) -> None:
        # The request line is the sender's text: escaped before it reaches a log.
        safe = [shown(arg) if isinstance(arg, str) else arg for arg in args]
        logger.debug("OTLP receiver %s: " + format, self.address_string(), *safe)

    def _not_post(self) -> None:
        if self._path() == TRACES_PATH:
            self._reject(Rejection(405, f"{self.command} not allowed on {TRACES_PATH}"))
        else:
            self._reject(Rejection(404, f"no such path {self._path()!r}"))

    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _read_body(self, limit: int) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return read_chunked(self.rfile, limit)
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise Rejection(411, "Content-Length required")
        try:
            length = int(length_text)
        except ValueError:
            raise Rejection(400, f"bad Content-Length {length_text!r}") from None
        if length < 0:
            raise Rejection(400, f"bad Content-Length {length_text!r}")
        if length > limit:
            raise Rejection(413, f"body of {length} bytes exceeds {limit}")
        data = self.rfile.read(length)
        if len(data) != length:
            raise Rejection(400, "body shorter than Content-Length")
        return data

    def _reject(self, rejection: Rejection) -> None:
        self._receiver.record_rejection(rejection.status, rejection.reason)
        payload = (rejection.reason + "\n").encode("utf-8", "replace")
        self.close_connection = True  # the body may be unread: do not reuse the stream
        self._send(rejection.status, "text/plain; charset=utf-8", payload, close=True)

    def _answer_ok(self, is_json: bool) -> None:
        if is_json:
            self._send(200, _JSON_TYPE, b"{}")
        else:
            body = ExportTraceServiceResponse().SerializeToString()
            self._send(200, "application/x-protobuf", body)

    def _send(self, status: int, content_type: str, body: bytes, close: bool = False) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if status in (429, 503):
                self.send_header("Retry-After", "1")
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except OSError as exc:
            logger.debug("OTLP receiver: could not answer: %s", exc)
            self.close_connection = True


def _content_kind(content_type: str | None) -> bool:
    """True for OTLP/JSON, False for protobuf; 415 for anything else."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in _PROTOBUF_TYPES:
        return False
    if media == _JSON_TYPE:
        return True
    raise Rejection(415, f"unsupported Content-Type {content_type!r}")


def _content_encoding(value: str | None) -> str:
    encoding = (value or "").strip().lower()
    if encoding in _IDENTITY or encoding in _GZIP or encoding == _DEFLATE:
        return encoding
    raise Rejection(415, f"unsupported Content-Encoding {value!r}")


def _decompress(data: bytes, encoding: str, limit: int) -> bytes | bytearray:
    if encoding in _IDENTITY:
        return data
    if encoding in _GZIP:
        return _inflate(data, GZIP_WBITS, limit)
    try:
        return _inflate(data, ZLIB_WBITS, limit)  # zlib-wrapped, as HTTP means it
    except Rejection as first:
        if first.status != 400:
            raise
        return _inflate(data, RAW_DEFLATE_WBITS, limit)  # raw deflate, as some send it


def _inflate(data: bytes, wbits: int, limit: int) -> bytearray:
    """Decompressed in bounded steps (zlib lets the GIL go meanwhile), at most ``limit``;
    gathered step by step, never in one copy of the whole body that holds the GIL."""
    inflater = BoundedInflater(wbits, limit)
    out = bytearray()
    try:
        for piece in inflater.feed(data):
            out += piece
        for piece in inflater.finish():
            out += piece
    except InflateLimitError:
        raise Rejection(413, f"decompressed body exceeds {limit} bytes") from None
    except zlib.error as exc:
        raise Rejection(400, f"undecodable compressed body: {exc}") from None
    if not inflater.eof:
        raise Rejection(400, "truncated compressed body")
    return out


def _decode_json(body: bytes | bytearray) -> ExportTraceServiceRequest:
    try:
        return loads_request(body)
    except OtlpJsonError as exc:
        raise Rejection(400, str(exc)) from None
    except RecursionError:  # nested thousands deep: answered, and counted, as bad
        raise Rejection(400, "not JSON: nested too deep") from None


def read_chunked(rfile: _Readable, limit: int) -> bytes:
    """A ``Transfer-Encoding: chunked`` body, at most ``limit`` bytes."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(1024)
        if not line.endswith(b"\n"):
            raise Rejection(400, "bad chunk header")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Rejection(400, "bad chunk size") from None
        if size == 0:
            while rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        total += size
        if size < 0 or total > limit:
            raise Rejection(413, f"body exceeds {limit} bytes")
        chunk = rfile.read(size)
        if len(chunk) != size:
            raise Rejection(400, "truncated chunk")
        rfile.readline(8)  # the CRLF after the chunk
        parts.append(chunk)
