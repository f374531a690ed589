"""OTLP/JSON encoding of trace export requests.

OTLP/JSON is protobuf's canonical JSON mapping with one deliberate difference: trace
and span ids are **hex** strings, not base64 (OTLP specification, "JSON Protobuf
Encoding"). ``google.protobuf.json_format`` knows only base64 for ``bytes``, so ids are
converted before parsing and after printing.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

__all__ = ("OtlpJsonError", "dumps_request", "loads_request")

# id field -> its length in bytes; both spellings protobuf's JSON parser accepts
_ID_FIELDS = {
    "traceId": 16,
    "trace_id": 16,
    "spanId": 8,
    "span_id": 8,
    "parentSpanId": 8,
    "parent_span_id": 8,
}
_RESOURCE_SPANS = ("resourceSpans", "resource_spans")
_SCOPE_SPANS = ("scopeSpans", "scope_spans")


class OtlpJsonError(ValueError):
    """The body is not an OTLP/JSON trace export request."""


def loads_request(body: bytes | bytearray | str) -> ExportTraceServiceRequest:
    """Parse an OTLP/JSON ``ExportTraceServiceRequest`` (hex ids); unknown fields ignored."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise OtlpJsonError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise OtlpJsonError("not a JSON object")
    _convert_ids(document, _hex_to_base64)
    message = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise OtlpJsonError(f"not an OTLP trace request: {exc}") from None
    return message


def dumps_request(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON bytes for ``request``, with hex ids (what an OTLP/JSON exporter sends)."""
    document = json_format.MessageToDict(request)
    _convert_ids(document, _base64_to_hex)
    return json.dumps(document, separators=(",", ":")).encode()


def _convert_ids(document: dict[str, Any], convert: Callable[[str, int], str]) -> None:
    for resource_spans in _items(document, _RESOURCE_SPANS):
        for scope_spans in _items(resource_spans, _SCOPE_SPANS):
            for span in _items(scope_spans, ("spans",)):
                _convert_fields(span, convert)
                for link in _items(span, ("links",)):
                    _convert_fields(link, convert)


def _items(container: object, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    if not isinstance(container, dict):
        return []
    for key in keys:
        value = container.get(key)
        if isinstance(value, list):
            return [item for item in value if isinstance(item, dict)]
    return []


def _convert_fields(obj: dict[str, Any], convert: Callable[[str, int], str]) -> None:
    for key, size in _ID_FIELDS.items():
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = convert(value, size)


def _hex_to_base64(value: str, size: int) -> str:
    """Hex ids become base64 for protobuf. Base64 of the right length (sent by some older,
    non-conforming exporters) passes through; anything else is an error."""
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    try:
        if len(base64.b64decode(value, validate=True)) == size:
            return value
    except (binascii.Error, ValueError):
        pass
    raise OtlpJsonError(f"bad id {value[:40]!r}: expected {2 * size} hex digits")


def _base64_to_hex(value: str, size: int) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    return raw.hex() if len(raw) == size else value
