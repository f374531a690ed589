"""OTLP/JSON: hex ids (not protobuf's base64), both field spellings, round trip."""

from __future__ import annotations

import base64
import json

import pytest

from pytest_latency.telemetry.otlp_json import OtlpJsonError, dumps_request, loads_request
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id


def test_hex_ids_are_read_as_hex() -> None:
    tid = "5b8efff798038103d269b633813fc60c"
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": tid,
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "llm_request",
                                "kind": 2,
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "links": [{"traceId": tid, "spanId": "0102030405060708"}],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    request = loads_request(json.dumps(body).encode())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    assert span.trace_id.hex() == tid
    assert span.span_id.hex() == "eee19b7ec3c1b174"
    assert span.parent_span_id.hex() == "eee19b7ec3c1b173"
    assert span.links[0].span_id.hex() == "0102030405060708"
    assert span.start_time_unix_nano == 1544712660000000000


def test_snake_case_and_base64_ids_are_tolerated() -> None:
    raw = bytes(range(1, 17))
    body = {
        "resource_spans": [
            {"scope_spans": [{"spans": [{"trace_id": base64.b64encode(raw).decode()}]}]}
        ]
    }
    span = loads_request(json.dumps(body)).resource_spans[0].scope_spans[0].spans[0]
    assert span.trace_id == raw


def test_round_trip() -> None:
    tid = new_trace_id()
    request = make_request([make_span(tid, "llm_request", VLLM_ATTRS)], "vllm.llm_engine")
    body = dumps_request(request)
    assert tid.encode() in body  # hex on the wire
    assert loads_request(body) == request


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
        b'{"resourceSpans": "nope"}',
    ],
)
def test_malformed_bodies_raise(body: bytes) -> None:
    with pytest.raises(OtlpJsonError):
        loads_request(body)


def test_unknown_fields_are_ignored() -> None:
    request = loads_request(b'{"resourceSpans": [], "somethingNew": 1}')
    assert len(request.resource_spans) == 0
