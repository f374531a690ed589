"""Diagnosis building blocks: findings, per-request columns, thresholds, and the two rules
that read the run's timeline (queueing by phase, cold start after idle).

Every column holds one value per request (NaN where absent). Thresholds and minimum
sample sizes are module constants so the docs and tests can name them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import spearmanr

from pytest_latency.telemetry.prometheus import MetricsSeries

Floats = npt.NDArray[np.float64]

# 1. queueing: the phase with the highest p95 against the phase with the lowest.
QUEUE_MIN_PHASE_N = 20  # ok requests per compared phase, each with the metric and an ITL
QUEUE_RATIO = 3.0  # the high phase's p95 is at least this many times the low phase's
QUEUE_MIN_S = 0.25  # and at least this long
ITL_FLAT = 0.15  # while median ITL moved by less than this fraction
INPUT_MIX_RATIO = 1.25  # client proxy only: the two phases' median input lengths this close
# 2. cold_start
IDLE_GAP_S = 5.0
COLD_FACTOR = 3.0
COLD_MIN_OTHERS = 20
COLD_OTHERS_SHARE = 0.1  # at most this share of the other requests may be as slow
COLD_MIN_EXCESS_S = 0.01  # and the slowest cold request this much over their median
# 3. long_context
CONTEXT_MIN_N = 30
CONTEXT_SPREAD = 2.0  # longest-quarter median input >= 2x the shortest quarter's
CONTEXT_RHO = 0.5
CONTEXT_RATIO = 1.5
# 4. batching
BATCH_MIN_N = 30
BATCH_RHO = 0.5
BATCH_RATIO = 1.3
# 5. long_outputs
OUTPUT_MIN_N = 20
OUTPUT_SHARE = 0.8
OUTPUT_MIN_TOKENS = 256
# 6. delivery
DELIVERY_MIN_N = 20
DELIVERY_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Finding:
    """A bottleneck hypothesis, the numbers it rests on, and the check to run next.

    ``strength`` in [0, 1] orders findings: how direct the evidence is (server-reported
    beats a client proxy) times how far past its threshold it lies. It is not a
    probability, and a finding is a hypothesis, not a cause.
    """

    rule: str
    hypothesis: str
    evidence: str
    check: str
    strength: float


@dataclass(frozen=True, slots=True)
class Columns:
    """One entry per request (NaN where absent); instants in seconds from run start."""

    phases: tuple[str, ...]  # names, indexed by ``phase``
    phase: npt.NDArray[np.int64]  # int index into ``phases``
    ok: npt.NDArray[np.bool_]  # bool: status ok, with a first token and an end
    start: Floats  # sent_s, else intended_s
    intended: Floats
    first: Floats
    end: Floats
    input_tokens: Floats
    output_tokens: Floats
    queue: Floats
    prefill: Floats
    decode: Floats
    itl_median: Floats  # each request's own median inter-token gap

    @property
    def ttft(self) -> Floats:
        return self.first - self.intended

    @property
    def e2e(self) -> Floats:
        return self.end - self.intended


def fmt_s(seconds: float) -> str:
    """Compact humanised duration: 0.1 -> '100ms', 2.8 -> '2.8s', 0.0305 -> '30.5ms'."""
    if not math.isfinite(seconds):
        return str(seconds)
    if abs(seconds) >= 1.0:
        return f"{seconds:.3g}s"
    if abs(seconds) >= 1e-3 or seconds == 0:
        return f"{seconds * 1e3:.3g}ms"
    return f"{seconds * 1e6:.3g}µs"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.3g}x" if math.isfinite(ratio) else "up from 0"


def strength_margin(value: float, threshold: float, full: float) -> float:
    """0.5 at the threshold, rising linearly to 1.0 at ``full`` (clamped)."""
    if not math.isfinite(value):
        return 1.0
    return float(min(1.0, max(0.5, 0.5 + 0.5 * (value - threshold) / (full - threshold))))


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation; NaN when either side is constant or n < 3."""
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def quartile_medians(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """Medians of x and y in the lowest-x and highest-x quarter: (x_lo, x_hi, y_lo, y_hi)."""
    order = np.argsort(x, kind="stable")
    k = max(1, x.size // 4)
    low, high = order[:k], order[-k:]
    return (
        float(np.median(x[low])),
        float(np.median(x[high])),
        float(np.median(y[low])),
        float(np.median(y[high])),
    )


@dataclass(frozen=True, slots=True)
class _PhaseStat:
    name: str
    n: int  # ok requests with the compared metric and an ITL
    p95: float  # of the compared metric (queue wait or TTFT)
    itl: float  # median over requests of each request's median ITL
    median_input: float


def _phase_stats(c: Columns, metric: np.ndarray) -> list[_PhaseStat]:
    usable = c.ok & np.isfinite(metric) & np.isfinite(c.itl_median)
    stats = []
    for index, name in enumerate(c.phases):
        mask = usable & (c.phase == index)
        n = int(mask.sum())
        if n >= QUEUE_MIN_PHASE_N:
            stats.append(
                _PhaseStat(
                    name=name,
                    n=n,
                    p95=float(np.percentile(metric[mask], 95)),
                    itl=float(np.median(c.itl_median[mask])),
                    median_input=float(np.median(c.input_tokens[mask])),
                )
            )
    return stats


def _rise(stats: list[_PhaseStat]) -> tuple[_PhaseStat, _PhaseStat, float] | None:
    """(high, low, ratio) when the highest p95 rose enough over the lowest, ITL flat."""
    if len(stats) < 2:
        return None
    high = max(stats, key=lambda s: s.p95)
    low = min((s for s in stats if s is not high), key=lambda s: s.p95)
    ratio = high.p95 / low.p95 if low.p95 > 0 else math.inf
    if ratio < QUEUE_RATIO or high.p95 < QUEUE_MIN_S or low.itl <= 0:
        return None
    if abs(high.itl - low.itl) / low.itl >= ITL_FLAT:
        return None
    return high, low, ratio


def _itl_text(high: _PhaseStat, low: _PhaseStat) -> str:
    change = (high.itl - low.itl) / low.itl
    return f"median ITL {fmt_s(high.itl)} vs {fmt_s(low.itl)} ({change:+.0%})"


def _gauge_max(series: MetricsSeries, window: tuple[float, float]) -> tuple[float, int] | None:
    """(max waiting, scrapes) of the server's waiting gauge inside ``window``."""
    t = np.asarray(series.t_s, dtype=np.float64)
    waiting = np.array(series.waiting, dtype=np.float64)  # None becomes NaN
    inside = (t >= window[0]) & (t < window[1]) & np.isfinite(waiting)
    count = int(inside.sum())
    return (float(waiting[inside].max()), count) if count else None


_QUEUE_HYPOTHESIS = (
    "Insufficient ready capacity or scheduling delay before generation: requests waited "
    "longer during {phase} while token cadence barely changed."
)
_QUEUE_CHECK = (
    "add ready capacity or scale earlier (new replicas must be ready before the burst); "
    "recheck cost and successful throughput under the same offered load, and inspect slow "
    "traces and readiness events for counterexamples"
)


def _queue_finding(phase: str, evidence: str, strength: float) -> Finding:
    hypothesis = _QUEUE_HYPOTHESIS.format(phase=phase)
    return Finding("queueing", hypothesis, evidence, _QUEUE_CHECK, round(strength, 3))


def queueing(
    c: Columns, windows: dict[str, tuple[float, float]], metrics: MetricsSeries | None
) -> Finding | None:
    """Queue wait (server-reported, else TTFT as a labelled client proxy) rises, ITL flat."""
    server = _phase_stats(c, c.queue)
    if len(server) >= 2:  # the server's own queue wait decides; the proxy may not overrule it
        found = _rise(server)
        if found is None:
            return None
        high, low, ratio = found
        evidence = (
            f"p95 queue wait {fmt_s(high.p95)} in {high.name} vs {fmt_s(low.p95)} in "
            f"{low.name} ({fmt_ratio(ratio)}, server-reported, n={high.n}/{low.n}); "
            f"{_itl_text(high, low)}"
        )
        return _queue_finding(high.name, evidence, 0.9 * strength_margin(ratio, QUEUE_RATIO, 10))
    found = _rise(_phase_stats(c, c.ttft))
    if found is None:
        return None
    high, low, ratio = found
    inputs = sorted((high.median_input, low.median_input))
    if inputs[1] > INPUT_MIX_RATIO * max(1.0, inputs[0]):
        return None  # a changed input mix could explain the TTFT rise as well: stay silent
    evidence = (
        f"queue wait not reported; TTFT rose while ITL stayed flat: p95 TTFT {fmt_s(high.p95)} "
        f"in {high.name} vs {fmt_s(low.p95)} in {low.name} ({fmt_ratio(ratio)}, client, from "
        f"planned send, n={high.n}/{low.n}); {_itl_text(high, low)}"
    )
    quality = 0.6
    if metrics is not None and high.name in windows:
        peak = _gauge_max(metrics, windows[high.name])
        base = _gauge_max(metrics, windows[low.name]) if low.name in windows else None
        if peak is not None:
            versus = f" vs {base[0]:.0f} in {low.name}" if base is not None else ""
            evidence += (
                f"; server waiting gauge max {peak[0]:.0f} in {high.name}{versus} "
                f"({peak[1]} scrapes)"
            )
            if peak[0] > 0 and (base is None or peak[0] > base[0]):
                quality = 0.75
            else:
                evidence += ", no queue seen there: seek delay outside the server's queue"
                quality = 0.4
    return _queue_finding(high.name, evidence, quality * strength_margin(ratio, QUEUE_RATIO, 10))


def _idle_gaps(c: Columns) -> np.ndarray:
    """Per request: time since nothing was in flight, if it started such a gap (else <= 0).

    The run's first request gets ``inf``. A request counts as in flight from its start
    until its end (else its first token, else its start).
    """
    n = c.start.size
    order = np.argsort(c.start, kind="stable")
    last = np.where(np.isfinite(c.first), c.first, c.start)
    busy = np.maximum.accumulate(np.where(np.isfinite(c.end), c.end, last)[order])
    sorted_gaps = np.full(n, math.inf)
    sorted_gaps[1:] = c.start[order][1:] - busy[:-1]
    gaps = np.empty(n)
    gaps[order] = sorted_gaps
    return gaps


def cold_start(c: Columns, warmed_up: bool) -> Finding | None:
    """Requests first after >= IDLE_GAP_S with nothing in flight (or first of an unwarmed run)."""
    if c.start.size == 0:
        return None
    gaps = _idle_gaps(c)
    # Warmup requests ran before time zero: then the run's first request is not cold.
    is_cold = (gaps >= IDLE_GAP_S) & ~(warmed_up & np.isinf(gaps))
    ttft = c.ttft
    usable = c.ok & np.isfinite(ttft)
    cold, others = usable & is_cold, usable & ~is_cold
    n_cold, n_others = int(cold.sum()), int(others.sum())
    if n_cold == 0 or n_others < COLD_MIN_OTHERS:
        return None
    median = float(np.median(ttft[others]))
    if median <= 0:
        return None
    slow_cold = ttft[cold] >= COLD_FACTOR * median
    share_cold = float(slow_cold.mean())
    share_others = float((ttft[others] >= COLD_FACTOR * median).mean())
    # Counterexample check: slowness must be specific to idle, not common everywhere
    # (31% of the others as slow is a stall or a queue, not a cold replica).
    if share_cold < 0.5 or share_others >= min(share_cold / 2, COLD_OTHERS_SHARE):
        return None
    worst = float(ttft[cold].max())
    if worst - median < COLD_MIN_EXCESS_S:  # a connection set up, not a replica warmed
        return None
    cold_gaps = gaps[cold & np.isfinite(gaps)]
    where = []
    if n_cold > cold_gaps.size:
        where.append("the run's first request, no warmup")
    if cold_gaps.size:
        where.append(f"idle gaps up to {fmt_s(float(cold_gaps.max()))}")
    evidence = (
        f"{int(slow_cold.sum())}/{n_cold} requests after idle ({'; '.join(where)}) had TTFT "
        f"≥ {COLD_FACTOR:g}x the median: worst {fmt_s(worst)} vs median {fmt_s(median)} of "
        f"{n_others} others ({fmt_ratio(worst / median)}); {share_others:.0%} of others as slow"
    )
    quality = 0.75 if cold_gaps.size else 0.5  # a lone first request may be connection setup
    typical = float(np.median(ttft[cold])) / median
    return Finding(
        "cold_start",
        "Delay follows an idle period: capacity was not warm when traffic resumed.",
        evidence,
        "maintain warm capacity (minimum ready replicas, keep-alive); recheck startup "
        "latency and idle spend",
        round(quality * strength_margin(typical, COLD_FACTOR, 10.0), 3),
    )
