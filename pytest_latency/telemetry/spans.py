"""Pure parsers: OTLP trace spans (``opentelemetry.proto.trace.v1``) to :class:`ServerTimings`.

What each server exports, read from its sources (see ``docs/tracing.md``):

- **vLLM** — one span per finished request, name ``llm_request``, attributes in seconds
  ``gen_ai.latency.time_in_queue``, ``.time_to_first_token``, ``.e2e``,
  ``.time_in_model_prefill``, ``.time_in_model_decode``, ``.time_in_model_inference``
  and ``gen_ai.usage.prompt_tokens`` / ``.completion_tokens``. Recognised by those
  attributes (any span carrying ``gen_ai.latency.*`` is parsed the same way; the name
  ``llm_request`` or a ``vllm`` instrumentation scope only labels the source).
- **TGI** — the request span (``generate``, ``generate_stream``, ``completions``,
  ``chat_completions``) records fields ``total_time``, ``validation_time``,
  ``queue_time``, ``inference_time``, ``time_per_token`` as Rust ``Debug`` durations
  (``"12.345ms"``). ``queue_time`` is queue wait; ``inference_time`` is prefill and
  decode together and TGI does not split it, so it goes to ``inference_s`` and
  ``prefill_s``/``decode_s`` stay ``None``; ``total_time`` is the router's own
  end-to-end. ``time_per_token`` is ``inference_time / generated_tokens`` (it includes
  prefill), so it is not used as a decode figure.
- **SGLang** — tracer scope ``sglang server``; per-request "slice" spans whose own
  duration is the stage: ``prefill_waiting`` (queue wait, SGLang's own
  ``queue_time``) and ``prefill_forward`` (scheduled until prefill finished). Newer
  versions also put ``gen_ai.latency.*`` on the request's root span, but compute
  ``time_in_model_prefill`` and ``time_in_model_inference`` from the tokenizer's
  dispatch time, so they include the scheduler's queue wait: for SGLang those two are
  dropped, the slice spans are used instead.

Unknown spans are ignored and counted. Several spans of one trace are merged: the
first value seen for a field wins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from pytest_latency.driver.genai_conventions import (
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    TOKEN_ATTRIBUTE_ALIASES,
)
from pytest_latency.telemetry.timings import ServerTimings

__all__ = (
    "SGLANG_SCOPE",
    "VLLM_SPAN_NAME",
    "SpanBatch",
    "parse_export_request",
    "parse_rust_duration",
    "parse_span",
    "trace_id_hex",
)

VLLM_SPAN_NAME = "llm_request"
SGLANG_SCOPE = "sglang server"
_GEN_AI_LATENCY = "gen_ai.latency."

_GEN_AI_DURATIONS: Mapping[str, str] = {
    "gen_ai.latency.time_in_queue": "queue_wait_s",
    "gen_ai.latency.time_to_first_token": "server_ttft_s",
    "gen_ai.latency.e2e": "server_e2e_s",
    "gen_ai.latency.time_in_model_prefill": "prefill_s",
    "gen_ai.latency.time_in_model_decode": "decode_s",
    "gen_ai.latency.time_in_model_inference": "inference_s",
}
# Current and former names of each token count (the one adapter: driver/genai_conventions).
_GEN_AI_TOKENS: Mapping[str, str] = {
    name: field
    for current, field in (
        (GEN_AI_USAGE_INPUT_TOKENS, "prompt_tokens"),
        (GEN_AI_USAGE_OUTPUT_TOKENS, "completion_tokens"),
    )
    for name in (current, *TOKEN_ATTRIBUTE_ALIASES[current])
}
# SGLang derives these from the tokenizer's dispatch time: they contain queue wait.
_SGLANG_UNATTRIBUTABLE = frozenset({"prefill_s", "inference_s"})
_TGI_FIELDS: Mapping[str, str] = {
    "queue_time": "queue_wait_s",
    "inference_time": "inference_s",
    "total_time": "server_e2e_s",
}
_SGLANG_SLICES: Mapping[str, str] = {
    "prefill_waiting": "queue_wait_s",
    "prefill_forward": "prefill_s",
}

# Rust prints the micro sign U+00B5; U+03BC (Greek mu, what NFKC makes of it) and "us" too.
_RUST_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ns|\u00b5s|\u03bcs|us|ms|s)$")
_UNIT_SECONDS: Mapping[str, float] = {
    "ns": 1e-9,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
}


@dataclass(frozen=True, slots=True)
class SpanBatch:
    """The parsed content of one export request."""

    timings: dict[str, ServerTimings] = field(default_factory=dict)
    spans: int = 0
    ignored: int = 0


def trace_id_hex(raw: bytes) -> str | None:
    """32 lowercase hex digits for a 16-byte, non-zero trace id; else ``None``."""
    if len(raw) != 16 or not any(raw):
        return None
    return raw.hex()


def parse_rust_duration(text: str) -> float | None:
    """Seconds from Rust's ``Debug`` format of ``std::time::Duration``.

    ``"1.2s"``, ``"12.345ms"``, ``"850µs"``, ``"15ns"`` (``us`` and a Greek mu are
    accepted too). Surrounding whitespace and double quotes are ignored. ``None`` for
    anything else.
    """
    match = _RUST_DURATION.match(text.strip().strip('"').strip())
    if match is None:
        return None
    value = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return value if math.isfinite(value) else None


def parse_span(span: Span, scope_name: str = "") -> ServerTimings | None:
    """Timings from one span, or ``None`` when the span carries none we recognise."""
    trace_id = trace_id_hex(span.trace_id)
    if trace_id is None:
        return None
    attrs = {kv.key: kv.value for kv in span.attributes}
    sglang = scope_name == SGLANG_SCOPE or _string(attrs.get("module")).startswith("sglang::")
    values: dict[str, Any]
    if any(key.startswith(_GEN_AI_LATENCY) for key in attrs):
        values = _gen_ai_values(attrs, drop=_SGLANG_UNATTRIBUTABLE if sglang else frozenset())
        source = _gen_ai_source(span.name, scope_name, sglang)
    elif any(key in attrs for key in _TGI_FIELDS):
        values = _tgi_values(attrs)
        source = "otlp:tgi"
    elif span.name in _SGLANG_SLICES:
        values = _slice_values(span)
        source = "otlp:sglang"
    else:
        return None
    timings = ServerTimings(trace_id=trace_id, source=source, **values)
    return None if timings.is_empty else timings


def parse_export_request(request: ExportTraceServiceRequest) -> SpanBatch:
    """Every span of one export request, merged per trace id."""
    merged: dict[str, ServerTimings] = {}
    total = ignored = 0
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for span in scope_spans.spans:
                total += 1
                timings = parse_span(span, scope_name)
                if timings is None:
                    ignored += 1
                    continue
                _merge_into(merged, timings)
    return SpanBatch(timings=merged, spans=total, ignored=ignored)


def merge_all(items: Iterable[ServerTimings]) -> dict[str, ServerTimings]:
    """Merge timings per trace id, first value per field winning."""
    merged: dict[str, ServerTimings] = {}
    for timings in items:
        _merge_into(merged, timings)
    return merged


def _merge_into(merged: dict[str, ServerTimings], timings: ServerTimings) -> None:
    known = merged.get(timings.trace_id)
    merged[timings.trace_id] = timings if known is None else known.merged(timings)


def _gen_ai_source(name: str, scope_name: str, sglang: bool) -> str:
    if sglang:
        return "otlp:sglang"
    if name == VLLM_SPAN_NAME or scope_name.startswith("vllm"):
        return "otlp:vllm"
    return "otlp:gen_ai"


def _gen_ai_values(attrs: Mapping[str, AnyValue], drop: frozenset[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, name in _GEN_AI_DURATIONS.items():
        if name not in drop and key in attrs:
            seconds = _seconds(attrs[key])
            if seconds is not None:
                values[name] = seconds
    for key, name in _GEN_AI_TOKENS.items():
        if name not in values and key in attrs:
            count = _count(attrs[key])
            if count is not None:
                values[name] = count
    return values


def _tgi_values(attrs: Mapping[str, AnyValue]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, name in _TGI_FIELDS.items():
        seconds = parse_rust_duration(_string(attrs.get(key)))
        if seconds is not None:
            values[name] = seconds
    return values


def _slice_values(span: Span) -> dict[str, Any]:
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if start <= 0 or end < start:
        return {}
    return {_SGLANG_SLICES[span.name]: (end - start) / 1e9}


def _string(value: AnyValue | None) -> str:
    if value is None or value.WhichOneof("value") != "string_value":
        return ""
    return value.string_value


def _seconds(value: AnyValue) -> float | None:
    kind = value.WhichOneof("value")
    number: float
    if kind == "double_value":
        number = value.double_value
    elif kind == "int_value":
        number = float(value.int_value)
    elif kind == "string_value":
        try:
            number = float(value.string_value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _count(value: AnyValue) -> int | None:
    kind = value.WhichOneof("value")
    if kind == "int_value":
        return value.int_value if value.int_value >= 0 else None
    if kind == "double_value":
        number = value.double_value
        ok = math.isfinite(number) and number >= 0 and number.is_integer()
        return int(number) if ok else None
    if kind == "string_value" and value.string_value.strip().isdigit():
        return int(value.string_value.strip())
    return None
