"""An OTLP/protobuf export body taken apart span by span, never parsed whole.

``ExportTraceServiceRequest.FromString`` parses a whole body in one C call that holds the
GIL: 59 MiB of spans stalled the driving loop 208 ms, inflating client-side TTFT with
someone else's spans. Here the outer messages (resource spans, scope spans) are walked
in Python, on their wire format, which lets the interpreter hand the GIL to the driving
loop between steps (every 0.5 ms during a drive, :mod:`pytest_latency.driver.loop`),
and only single spans, each at most :data:`MAX_SPAN_BYTES`, are parsed in C.

Wire format (protobuf encoding): a field is a varint key ``number << 3 | type``; type 2
is a varint length then that many bytes; 0 a varint; 1 eight bytes; 5 four bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import Span

#: A span larger than this is skipped (counted as ignored): servers' spans are ~1-2 KiB.
MAX_SPAN_BYTES = 256 * 1024
_RESOURCE_SPANS = 1  # ExportTraceServiceRequest.resource_spans
_SCOPE_SPANS = 2  # ResourceSpans.scope_spans
_SCOPE = 1  # ScopeSpans.scope
_SPANS = 2  # ScopeSpans.spans
_FIXED = {1: 8, 5: 4}


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DecodeError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def length_delimited(data: memoryview) -> Iterator[tuple[int, memoryview]]:
    """``(field number, bytes)`` of each length-delimited field of one message; fields of
    other types are skipped. DecodeError when the message is malformed."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, kind = key >> 3, key & 7
        if kind == 2:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise DecodeError("a field runs past the end of its message")
            yield number, data[pos : pos + length]
            pos += length
        elif kind == 0:
            _, pos = _varint(data, pos)
        elif kind in _FIXED:
            pos += _FIXED[kind]
        else:
            raise DecodeError(f"unsupported wire type {kind}")
    if pos != end:
        raise DecodeError("a fixed-size field runs past the end of its message")


def body_spans(body: bytes | bytearray) -> Iterator[tuple[str, Span | None]]:
    """``(scope name, span)`` for every span of an export body; the span is None when it
    is over :data:`MAX_SPAN_BYTES`. DecodeError when the body is malformed."""
    for number, resource in length_delimited(memoryview(body)):
        if number != _RESOURCE_SPANS:
            continue
        for number, scope_spans in length_delimited(resource):
            if number == _SCOPE_SPANS:
                yield from _scope_spans(scope_spans)


def _scope_spans(data: memoryview) -> Iterator[tuple[str, Span | None]]:
    scope_name = ""
    spans: list[memoryview] = []  # views, no copies; the scope may come after its spans
    for number, part in length_delimited(data):
        if number == _SCOPE:
            scope_name = InstrumentationScope.FromString(bytes(part)).name
        elif number == _SPANS:
            spans.append(part)
    for part in spans:
        yield scope_name, Span.FromString(bytes(part)) if len(part) <= MAX_SPAN_BYTES else None


def message_spans(request: ExportTraceServiceRequest) -> Iterator[tuple[str, Span | None]]:
    """``(scope name, span)`` for every span of an already parsed request (OTLP/JSON)."""
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield scope_spans.scope.name, span
