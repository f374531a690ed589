"""The OTLP/HTTP receiver's engine: serving, parsing and storing in threads of one process.

:class:`ThreadReceiver` is what the receiving process runs (:mod:`.receiver_process`);
the test process itself uses :class:`~pytest_latency.telemetry.receiver.OtlpReceiver`,
which keeps this out of its interpreter (see that module for the protocol, the answers
and the limits). Tests that want the engine in-process (to look at raw spans, or at the
store's cost to the garbage collector) use this class directly: it has the same API.

At most ``max_concurrent_posts`` exports are read at once (``503`` with ``Retry-After``
past it), each at most ``max_body_bytes`` decompressed (``413``), decompressed in
bounded steps; one export is parsed at a time, span by span (:mod:`.otlp_wire`); the
store keeps the run's own trace ids (``trace_prefix``) apart from any other, so outside
spans cannot evict them; and with a ``token`` every post must carry
``Authorization: Bearer TOKEN`` (``401``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Collection, Iterable
from http.server import ThreadingHTTPServer
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from pytest_latency.secret import Secret
from pytest_latency.shown_text import shown
from pytest_latency.telemetry._http import OtlpHandler
from pytest_latency.telemetry.listener import ListeningReceiver, bind_listener
from pytest_latency.telemetry.otlp_wire import body_spans, message_spans
from pytest_latency.telemetry.settings import (
    DEFAULT_GRACE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT_POSTS,
)
from pytest_latency.telemetry.spans import merge_all, parse_span
from pytest_latency.telemetry.store import DEFAULT_MAX_TRACES, DEFAULT_SETTLE_S, TimingStore
from pytest_latency.telemetry.timings import ServerTimings

__all__ = ("DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_CONCURRENT_POSTS", "ThreadReceiver")

logger = logging.getLogger(__name__)

_STORE_BATCH = 1024  # spans parsed before their timings go to the store
_POLL_S = 0.05
_LOUD_REJECTIONS = 5  # rejections logged at WARNING; later ones at DEBUG


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, listener: socket.socket, receiver: ThreadReceiver) -> None:
        """Serve on ``listener``, already bound and listening."""
        self.address_family = listener.family
        self.receiver = receiver
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(listener.getsockname()[:2], OtlpHandler, bind_and_activate=False)
        self.socket.close()  # the one the base class made: serve on the listener instead
        self.socket = listener

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # connection resets and the like: not worth a traceback on stderr
        logger.debug("OTLP receiver: error on connection from %s", client_address, exc_info=True)

    def close_connections(self) -> None:
        """Shut down open (keep-alive) connections so their threads end now."""
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class ThreadReceiver(ListeningReceiver):
    """OTLP/HTTP trace receiver in a thread of this process; start/stop or a context manager.

    >>> with ThreadReceiver() as receiver:                       # doctest: +SKIP
    ...     server_env = {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    ...     url = receiver.traces_url                            # http://127.0.0.1:PORT/v1/traces
    ...     joined = receiver.timings(trace_ids, grace_s=10)
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_traces: int = DEFAULT_MAX_TRACES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_concurrent_posts: int = DEFAULT_MAX_CONCURRENT_POSTS,
        token: Secret | None = None,
        trace_prefix: str | None = None,
    ) -> None:
        super().__init__(host, port)
        self.max_body_bytes = max_body_bytes
        self.token = token
        self.post_slots = threading.BoundedSemaphore(max_concurrent_posts)
        self._parsing = threading.Lock()  # one export parsed at a time
        self._store = TimingStore(max_traces, own_prefix=trace_prefix)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._spans = 0
        self._ignored = 0
        self._exports = 0
        self._rejections: dict[int, int] = {}

    # -- lifecycle -------------------------------------------------------------------

    def start(self, listener: socket.socket | None = None) -> Self:
        """Bind and serve in a daemon thread (or serve on ``listener``, bound and listening,
        which it then owns). Raises ``OSError`` when the bind fails."""
        if self._server is not None:
            raise RuntimeError("ThreadReceiver already started")
        if listener is None:
            listener = bind_listener(self._host, self._port)
        server = _Server(listener, self)
        self._port = listener.getsockname()[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_S},
            name=f"pytest-latency-otlp-{self._port}",
            daemon=True,
        )
        self._thread.start()
        logger.debug("OTLP receiver listening on %s", self.traces_url)
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop serving, close open connections and the port. Idempotent, bounded."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()  # returns within one poll interval
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- data ------------------------------------------------------------------------

    def ingest(self, request: ExportTraceServiceRequest) -> None:
        """Parse and store one parsed export request (OTLP/JSON arrives so)."""
        self._ingest_spans(message_spans(request))

    def ingest_body(self, body: bytes | bytearray) -> None:
        """Parse and store one OTLP/protobuf export body, span by span (what ``POST
        /v1/traces`` does); DecodeError when it is malformed."""
        self._ingest_spans(body_spans(body))

    def _ingest_spans(self, spans: Iterable[tuple[str, Span | None]]) -> None:
        total = ignored = 0
        batch: list[ServerTimings] = []
        with self._parsing:
            for scope_name, span in spans:
                total += 1
                timings = None if span is None else parse_span(span, scope_name)
                if timings is None:
                    ignored += 1
                    continue
                batch.append(timings)
                if len(batch) >= _STORE_BATCH:  # the store's caps apply as we go
                    self._store.add(merge_all(batch).values())
                    batch.clear()
            self._store.add(merge_all(batch).values())
        with self._lock:
            self._spans += total
            self._ignored += ignored
            self._exports += 1

    def timings(
        self,
        trace_ids: Collection[str],
        grace_s: float = DEFAULT_GRACE_S,
        settle_s: float = DEFAULT_SETTLE_S,
    ) -> dict[str, ServerTimings]:
        """Timings for ``trace_ids``: waits until all arrived (then ``settle_s`` of quiet
        for late spans of the same traces) or ``grace_s`` passed; returns what is there."""
        return self._store.wait_for(trace_ids, grace_s, settle_s)

    def unknown_trace_ids(self, known: Collection[str]) -> int:
        """Traces received whose id is not in ``known`` (spans from outside the run)."""
        return self._store.unknown_trace_ids(known)

    def clear(self) -> None:
        """Forget stored timings (between runs sharing one receiver); counters stay."""
        self._store.clear()

    # -- counters --------------------------------------------------------------------

    @property
    def spans_received(self) -> int:
        with self._lock:
            return self._spans

    @property
    def spans_ignored(self) -> int:
        """Spans that carried no timings we recognise."""
        with self._lock:
            return self._ignored

    @property
    def exports(self) -> int:
        """Export requests accepted (answered 200)."""
        with self._lock:
            return self._exports

    @property
    def bad_requests(self) -> int:
        """Requests answered 400/411/413: undecodable, unframed or oversized bodies
        (429 and 503, posts past the concurrency cap, are in :attr:`rejections`)."""
        with self._lock:
            return sum(n for status, n in self._rejections.items() if status in (400, 411, 413))

    @property
    def rejections(self) -> dict[int, int]:
        """Every non-200 answer, by status code."""
        with self._lock:
            return dict(self._rejections)

    @property
    def traces_dropped(self) -> int:
        """New trace ids not stored because the store was full."""
        return self._store.traces_dropped

    def record_rejection(self, status: int, reason: str) -> None:
        """Count (and log) one rejected request. Called by the HTTP handler."""
        with self._lock:
            self._rejections[status] = self._rejections.get(status, 0) + 1
            total = sum(self._rejections.values())
        level = logging.WARNING if total <= _LOUD_REJECTIONS and status != 404 else logging.DEBUG
        logger.log(level, "OTLP receiver answered %d: %s", status, shown(reason, 300))
