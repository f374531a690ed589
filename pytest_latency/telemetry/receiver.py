"""A small OTLP/HTTP trace receiver: servers export spans here, the run joins them by trace id.

``POST /v1/traces`` with ``application/x-protobuf`` or ``application/json`` (OTLP/JSON,
hex ids), optionally ``Content-Encoding: gzip`` (or ``deflate``). A good export gets
``200`` and an empty ``ExportTraceServiceResponse`` in the request's encoding, so the
exporter does not retry; an undecodable body gets ``400`` (logged, counted); another
path ``404``; another method on the path ``405``; an unknown content type or encoding
``415``; a body over the size limit ``413``. Only OTLP/HTTP: a gRPC exporter cannot
talk to this (see ``docs/tracing.md``).

**In its own process.** Reading, decompressing and parsing exports holds a GIL, and in
the test process it was the driving loop's: a flood of spans (two 15 MiB exports, 71,000
spans) took the overshoot of a 1 ms sleep on that loop from p99 0.2 ms to p99 3.9 ms,
max 10 ms, and its p50 to the 0.67 ms switch interval. In its own process, the p50
during a flood is the quiet one, and the p99 rises 0.9-2.6 ms over the quiet windows of
the same run where the in-thread engine's rose 3.1-7.4 ms, on a shared two-core machine
(``benchmarks/bench_receiver_stall.py``, docs/tracing.md "Limits"). So this class binds
the listening socket here (the port is known, and a bind error raised, at
:meth:`OtlpReceiver.start`) and hands it to a receiving process
(:mod:`.receiver_process`) that serves, parses and stores; this process keeps no span
and does no work while exports arrive. It asks for the compact timings of its trace ids
when the run joins them (:meth:`timings`), and for the counters when read. The receiving
process ends with this one (stopped, killed, or crashed: see :mod:`.receiver_link`).
Servers, containers on the host network and a loopback-only namespace post to the same
URL as before: the socket is the one bound here.

It keeps only the parsed :class:`ServerTimings` per trace id, never spans, in a bounded
store. It binds ``127.0.0.1`` unless told otherwise.

A sender cannot cost the run its memory or its timing (docs/tracing.md, "Limits"): at
most ``max_concurrent_posts`` exports are read at once (``503`` with ``Retry-After``
past it), each at most ``max_body_bytes`` decompressed (``413``); the store keeps the
run's own trace ids (``trace_prefix``) apart from any other, so outside spans cannot
evict them; and with a ``token`` every post must carry ``Authorization: Bearer TOKEN``
(``401``). The engine is :class:`~pytest_latency.telemetry.receiver_thread.ThreadReceiver`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from typing import Self

from pytest_latency.secret import Secret
from pytest_latency.telemetry.listener import ListeningReceiver, bind_listener
from pytest_latency.telemetry.packed import unpack
from pytest_latency.telemetry.receiver_link import (
    ClearRequest,
    ReceiverConfig,
    ReceiverLink,
    ReceiverStats,
    StatsRequest,
    TimingsRequest,
    UnknownRequest,
)
from pytest_latency.telemetry.settings import (
    DEFAULT_GRACE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT_POSTS,
    TRACES_PATH,
    parse_listen_address,
)
from pytest_latency.telemetry.store import DEFAULT_MAX_TRACES, DEFAULT_SETTLE_S
from pytest_latency.telemetry.timings import ServerTimings

__all__ = (
    "DEFAULT_GRACE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "TRACES_PATH",
    "OtlpReceiver",
    "parse_listen_address",
)

logger = logging.getLogger(__name__)

_ASK_S = 10.0  # a request that does not wait for spans is answered within this
_STOP_S = 2.0


class OtlpReceiver(ListeningReceiver):
    """OTLP/HTTP trace receiver in its own process. A context manager, or start/stop.

    >>> with OtlpReceiver() as receiver:                         # doctest: +SKIP
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
        self._max_traces = max_traces
        self._max_concurrent_posts = max_concurrent_posts
        self._trace_prefix = trace_prefix
        self._link: ReceiverLink | None = None
        self._stats = ReceiverStats()  # the last counters read (kept after stop)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Bind here, then serve in the receiving process. Raises ``OSError`` when the bind
        (or starting the process) fails. Returns at once: exports that arrive while the
        process starts wait in the socket's backlog (:meth:`wait_ready` waits for it)."""
        if self._link is not None:
            raise RuntimeError("OtlpReceiver already started")
        listener = bind_listener(self._host, self._port)
        self._port = listener.getsockname()[1]
        config = ReceiverConfig(
            max_traces=self._max_traces, max_body_bytes=self.max_body_bytes,
            max_concurrent_posts=self._max_concurrent_posts, token=self.token,
            trace_prefix=self._trace_prefix, log_level=logger.getEffectiveLevel(),
            parent_pid=os.getpid(),
        )  # fmt: skip
        self._link = ReceiverLink(listener, config)  # closes listener once handed over
        logger.debug("OTLP receiver listening on %s (pid %d)", self.traces_url, self.pid)
        return self

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Whether the receiving process serves, waiting for it at most ``timeout_s``."""
        link = self._link
        return link is not None and link.wait_ready(timeout_s)

    def stop(self, timeout_s: float = _STOP_S) -> None:
        """Stop serving, close open connections and the port; the process ends. Keeps the
        final counters. Idempotent, bounded (the process is killed past ``timeout_s``)."""
        link, self._link = self._link, None
        if link is None:
            return
        if link.wait_ready(0):
            self._stats = link.stop(timeout_s) or self._stats
        else:  # not serving yet (or gone): nothing to keep
            link.kill()
        link.close(timeout_s)

    @property
    def running(self) -> bool:
        return self._link is not None

    @property
    def pid(self) -> int | None:
        """The receiving process's pid while started."""
        link = self._link
        return None if link is None else link.process.pid

    # -- data ------------------------------------------------------------------------

    def timings(
        self,
        trace_ids: Collection[str],
        grace_s: float = DEFAULT_GRACE_S,
        settle_s: float = DEFAULT_SETTLE_S,
    ) -> dict[str, ServerTimings]:
        """Timings for ``trace_ids``: waits until all arrived (then ``settle_s`` of quiet
        for late spans of the same traces) or ``grace_s`` passed; returns what is there
        (nothing when the receiver is not running)."""
        link = self._link
        if link is None or not trace_ids:
            return {}
        request = TimingsRequest(link.next_id(), list(trace_ids), grace_s, settle_s)
        found = link.ask(request, max(0.0, grace_s) + max(0.0, settle_s) + _ASK_S)
        if not isinstance(found, dict):
            return {}
        return {trace_id: unpack(trace_id, data) for trace_id, data in found.items()}

    def unknown_trace_ids(self, known: Collection[str]) -> int:
        """Traces received whose id is not in ``known`` (spans from outside the run)."""
        link = self._link
        if link is None:
            return 0
        count = link.ask(UnknownRequest(link.next_id(), list(known)), _ASK_S)
        return count if isinstance(count, int) else 0

    def clear(self) -> None:
        """Forget stored timings (between runs sharing one receiver); counters stay."""
        link = self._link
        if link is not None:
            link.ask(ClearRequest(link.next_id()), _ASK_S)

    # -- counters --------------------------------------------------------------------

    def stats(self) -> ReceiverStats:
        """The counters now (the last ones read, once stopped or when the process is gone)."""
        link = self._link
        if link is not None:
            found = link.ask(StatsRequest(link.next_id()), _ASK_S)
            if isinstance(found, ReceiverStats):
                self._stats = found
        return self._stats

    @property
    def spans_received(self) -> int:
        return self.stats().spans

    @property
    def spans_ignored(self) -> int:
        """Spans that carried no timings we recognise."""
        return self.stats().ignored

    @property
    def exports(self) -> int:
        """Export requests accepted (answered 200)."""
        return self.stats().exports

    @property
    def bad_requests(self) -> int:
        """Requests answered 400/411/413: undecodable, unframed or oversized bodies
        (429 and 503, posts past the concurrency cap, are in :attr:`rejections`)."""
        rejections = self.stats().rejections
        return sum(n for status, n in rejections.items() if status in (400, 411, 413))

    @property
    def rejections(self) -> dict[int, int]:
        """Every non-200 answer, by status code."""
        return dict(self.stats().rejections)

    @property
    def traces_dropped(self) -> int:
        """New trace ids not stored because the store was full."""
        return self.stats().traces_dropped
