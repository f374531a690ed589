"""A loopback OTLP/HTTP collector for tests: decodes what it receives with opentelemetry-proto.

``POST /v1/traces`` and ``POST /v1/metrics`` (protobuf, as the SDK's exporters send)
are parsed into ``ExportTraceServiceRequest`` and ``ExportMetricsServiceRequest``; the
spans and histogram data points are kept for the test to read. 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import HistogramDataPoint, Metric
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``KeyValue``s as a dict of plain values."""
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        kind = pair.value.WhichOneof("value")
        found[pair.key] = getattr(pair.value, kind) if kind else None
    return found


@dataclass
class Collected:
    spans: list[Span] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    posts: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def histogram_points(self, name: str) -> list[HistogramDataPoint]:
        with self.lock:
            return [
                point
                for metric in self.metrics
                if metric.name == name
                for point in metric.histogram.data_points
            ]

    def histogram_count(self, name: str) -> int:
        return sum(point.count for point in self.histogram_points(name))


@contextmanager
def otlp_collector() -> Iterator[tuple[str, Collected]]:
    """Yields (base URL, what it collected); the traces URL is ``base + /v1/traces``."""
    collected = Collected()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            with collected.lock:
                collected.posts.append(self.path)
                if self.path == "/v1/traces":
                    traces = ExportTraceServiceRequest.FromString(body)
                    for resource in traces.resource_spans:
                        for scope in resource.scope_spans:
                            collected.spans.extend(scope.spans)
                elif self.path == "/v1/metrics":
                    sent = ExportMetricsServiceRequest.FromString(body)
                    for resource in sent.resource_metrics:
                        for scope in resource.scope_metrics:
                            collected.metrics.extend(scope.metrics)
            self.send_response(200 if self.path in ("/v1/traces", "/v1/metrics") else 404)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", collected
    finally:
        server.shutdown()
        server.server_close()
