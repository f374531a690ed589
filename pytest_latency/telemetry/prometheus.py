"""Scrape a model server's Prometheus ``/metrics`` during a run into time series.

Boundary: the values are the server's own gauges (waiting and running requests, KV
cache use) as the server rendered them; the instants are the client's monotonic clock
(``time.perf_counter_ns``, the driver's clock) at the midpoint of each scrape, in
seconds from the run's time zero. A gauge is a sample of a state, not a per-request
measurement: it can miss a short queue entirely between two scrapes.

Scraping runs in its own thread with its own ``httpx.Client``, never on the driver's
event loop, and only the few known gauge lines are handed to the parser
(``prometheus_client``), so a large exposition costs the driver little. Failures
(connection refused, no ``/metrics``, a body that does not parse) are counted, never
raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType

import httpx

__all__ = (
    "KINDS",
    "METRIC_NAMES",
    "MetricsScraper",
    "MetricsSeries",
    "detect_kind",
    "not_prometheus",
    "parse_exposition",
)

from pytest_latency.driver.bounded_read import ACCEPT_ENCODING, AnswerUnreadable, read_bounded
from pytest_latency.telemetry.exposition import (
    KINDS,
    METRIC_NAMES,
    check_kind,
    detect_kind,
    detected_kind,
    extra_keys,
    known_sums,
    not_prometheus,
    parse_exposition,
    values_of_kind,
)

DEFAULT_MAX_SAMPLES = 100_000
MAX_BODY_BYTES = 16 * 1024 * 1024
_ACCEPT = "text/plain; version=0.0.4"  # the text format, not OpenMetrics
BOUNDARY = (
    "server /metrics gauges as the server rendered them; t_s on the client's monotonic "
    "clock at the scrape midpoint, seconds from run start"
)


@dataclass(frozen=True, slots=True)
class MetricsSeries:
    """Server gauges over a run, one entry per successful scrape.

    ``kind`` is the given or detected server kind (``"unknown"`` when ``auto`` never
    recognised a scrape). ``t_s`` are seconds from the run's time zero on the client's
    monotonic clock (negative: before the run started). ``scrapes`` counts successful
    scrapes (one sample each), ``failures`` the others.
    """

    kind: str
    t_s: list[float]
    waiting: list[float | None]
    running: list[float | None]
    extra: dict[str, list[float | None]]
    scrapes: int
    failures: int
    last_error: str | None
    interval_s: float = 1.0

    def to_json(self) -> dict[str, object]:
        names = METRIC_NAMES.get(self.kind, {})
        return {
            "kind": self.kind,
            "boundary": BOUNDARY,
            "interval_s": self.interval_s,
            "names": {key: list(value) for key, value in names.items()},
            "t_s": [round(t, 6) for t in self.t_s],
            "waiting": list(self.waiting),
            "running": list(self.running),
            "extra": {key: list(values) for key, values in self.extra.items()},
            "scrapes": self.scrapes,
            "failures": self.failures,
            "last_error": self.last_error,
        }


class _ScrapeError(Exception):
    """A scrape that produced no sample; the message becomes ``last_error``."""


@dataclass(slots=True)
class _Samples:
    kind: str | None
    at_ns: list[int] = field(default_factory=list)
    waiting: list[float | None] = field(default_factory=list)
    running: list[float | None] = field(default_factory=list)
    extra: dict[str, list[float | None]] = field(default_factory=dict)
    scrapes: int = 0
    failures: int = 0
    last_error: str | None = None


class MetricsScraper:
    """Scrape ``metrics_url`` every ``interval_s`` in a background thread.

    ``time_zero_ns`` is the run's time zero as a ``time.perf_counter_ns()`` reading
    (the driver's); it defaults to the moment of :meth:`start` and can be set later,
    any time before :meth:`stop`. The first scrape happens at once; then on a fixed
    schedule (overrunning scrapes skip ticks). At most ``max_samples`` scrape
    attempts are made. Use as a context manager or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self, metrics_url: str, kind: str = "auto", interval_s: float = 1.0, *,
        time_zero_ns: int | None = None, timeout_s: float = 2.0,
        max_samples: int = DEFAULT_MAX_SAMPLES,
    ) -> None:  # fmt: skip
        check_kind(kind)
        if not interval_s > 0 or not timeout_s > 0:
            raise ValueError("interval_s and timeout_s must be > 0 seconds")
        if max_samples < 1:
            raise ValueError(f"max_samples must be >= 1, got {max_samples!r}")
        self.metrics_url = metrics_url
        self.kind = kind
        self.interval_s = float(interval_s)
        self.timeout_s = float(timeout_s)
        self.max_samples = max_samples
        self.time_zero_ns = time_zero_ns
        self._data = _Samples(kind=None if kind == "auto" else kind)
        if kind != "auto":
            self._data.extra = {key: [] for key in extra_keys(kind)}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._final = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> MetricsScraper:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the scraper is already started")
        if self.time_zero_ns is None:
            self.time_zero_ns = time.perf_counter_ns()
        self._thread = threading.Thread(
            target=self._run, name="pytest-latency-metrics", daemon=True
        )
        self._thread.start()

    def stop(self, *, final_scrape: bool = False) -> MetricsSeries:
        """Stop scraping (optionally after one last scrape) and return the series.

        Prompt: the thread sleeps on an event; an in-flight scrape is bounded by
        ``timeout_s``. Nothing is recorded after this returns.
        """
        thread = self._thread
        if thread is not None:
            self._final = final_scrape
            self._stop.set()
            thread.join(self.timeout_s * (2 if final_scrape else 1) + 1.0)
        with self._lock:
            self._closed = True
            return self._series_locked()

    def series(self) -> MetricsSeries:
        """A copy of what was scraped so far (the scraper keeps running)."""
        with self._lock:
            return self._series_locked()

    def _series_locked(self) -> MetricsSeries:
        data = self._data
        zero = self.time_zero_ns if self.time_zero_ns is not None else time.perf_counter_ns()
        return MetricsSeries(
            kind=data.kind or "unknown",
            t_s=[(at - zero) / 1e9 for at in data.at_ns],
            waiting=list(data.waiting),
            running=list(data.running),
            extra={key: list(values) for key, values in data.extra.items()},
            scrapes=data.scrapes,
            failures=data.failures,
            last_error=data.last_error,
            interval_s=self.interval_s,
        )

    def _run(self) -> None:
        headers = {"Accept": _ACCEPT, "Accept-Encoding": ACCEPT_ENCODING}
        with httpx.Client(trust_env=False, timeout=self.timeout_s, headers=headers) as client:
            interval_ns = int(self.interval_s * 1e9)
            next_ns = time.perf_counter_ns()
            for _ in range(self.max_samples):  # bounded; normally ended by stop()
                self._scrape_once(client)
                now = time.perf_counter_ns()
                next_ns += interval_ns * max(1, -(-(now - next_ns) // interval_ns))
                if self._stop.wait(max(0.0, (next_ns - now) / 1e9)):
                    if self._final:
                        self._scrape_once(client)
                    return

    def _scrape_once(self, client: httpx.Client) -> None:
        sent_ns = time.perf_counter_ns()
        try:
            text = self._fetch(client, sent_ns + int(self.timeout_s * 1e9))
            at_ns = (sent_ns + time.perf_counter_ns()) // 2
            if (reason := not_prometheus(text)) is not None:
                raise _ScrapeError(f"metrics unavailable: /metrics answered {reason}")
            sums = known_sums(text)
            kind = self._data.kind or detected_kind(sums)
            if kind is None:
                raise _ScrapeError("no known server gauges in /metrics (kind unrecognised)")
            values = values_of_kind(sums, kind)
            if "waiting" not in values and "running" not in values:
                raise _ScrapeError(f"no {kind} waiting/running gauges in /metrics")
        except Exception as exc:  # counted, never raised: scraping must not break a run
            message = str(exc) if isinstance(exc, _ScrapeError) else f"{type(exc).__name__}: {exc}"
            with self._lock:
                if not self._closed:
                    self._data.failures += 1
                    self._data.last_error = message[:500]
            return
        with self._lock:
            if not self._closed:
                self._record(kind, at_ns, values)

    def _record(self, kind: str, at_ns: int, values: Mapping[str, float]) -> None:
        data = self._data
        if data.kind is None:
            data.kind = kind
            data.extra = {key: [] for key in extra_keys(kind)}
        data.scrapes += 1
        data.at_ns.append(at_ns)
        data.waiting.append(values.get("waiting"))
        data.running.append(values.get("running"))
        for key, series in data.extra.items():
            series.append(values.get(key))

    def _fetch(self, client: httpx.Client, deadline_ns: int) -> str:
        """The body of ``GET metrics_url`` (200 only), bounded in size (raw and decoded,
        decoded in bounded steps) and total time."""
        deadline = time.monotonic() + max(0.0, (deadline_ns - time.perf_counter_ns()) / 1e9)
        with client.stream("GET", self.metrics_url) as response:
            if response.status_code != 200:
                raise _ScrapeError(f"HTTP {response.status_code} from /metrics")
            try:
                body = read_bounded(response, deadline, MAX_BODY_BYTES)
            except AnswerUnreadable as error:
                raise _ScrapeError(f"/metrics: {error}") from None
        return body.decode("utf-8", errors="replace")
