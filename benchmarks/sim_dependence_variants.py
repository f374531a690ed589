"""Which series the send-order design effect of a quantile bound is estimated from.

    python benchmarks/sim_dependence_variants.py [REPLICATES] [VARIANT]   # 400, "now"

VARIANT: ``now`` (the larger of the indicator at the sample quantile and the latencies'
normal scores), ``indicator`` (the indicator alone, as Bahadur's representation
suggests) or ``median`` (the indicators at the sample quantile and at the sample median).
Prints the wrong-FAIL / wrong-PASS rates at the truth, and the power, of the scenarios
in docs/statistics.md ("Why the normal scores stay"); about a minute per variant.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_latency.analysis import attainment, percentiles  # noqa: E402
from pytest_latency.analysis.dependence import Dependence, count_dependence  # noqa: E402
from pytest_latency.analysis.percentiles import order_statistics  # noqa: E402
from tests.helpers.queues import mm1_sojourns, mm1_truth  # noqa: E402
from tests.unit.analysis import test_attainment as A  # noqa: E402
from tests.unit.analysis import test_correlated_verdicts as V  # noqa: E402


def variant(name: str):  # type: ignore[no-untyped-def]
    """A replacement for ``quantile_dependence`` charging the series ``name`` says."""

    def dependence(
        values: np.ndarray,
        q: float,
        episodes: np.ndarray | None = None,
        phases: np.ndarray | None = None,
    ) -> Dependence:
        n = int(values.size)
        rank = min(n - 1, max(0, math.ceil(q * n) - 1))
        level = order_statistics(values, [rank])[rank]
        second = None
        if name == "median":  # a 0/1 series' normal scores are the series, rescaled
            median = order_statistics(values, [n // 2])[n // 2]
            second = (values <= median).astype(np.float64)
        return count_dependence(values <= level, episodes, second, phases)

    return dependence


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    name = sys.argv[2] if len(sys.argv) > 2 else "now"
    if name != "now":
        percentiles.quantile_dependence = variant(name)  # type: ignore[assignment]
        attainment.quantile_dependence = variant(name)  # type: ignore[attr-defined]
    started = time.perf_counter()

    def out(label: str, rates: tuple[float, float]) -> None:
        print(f"{rates[0]:6.1%} / {rates[1]:6.1%}  {label}", flush=True)

    t95, t7, t9 = V.lognormal_truth(0.95), mm1_truth(0.95, 0.7), mm1_truth(0.95, 0.9)
    iid = np.random.default_rng(1).lognormal(0.0, 0.5, size=(reps, 400))
    out("independent n=400 p95 at truth", V.quantile_rates(iid, 0.95, t95))
    out("same, limit 1.4x", V.quantile_rates(iid, 0.95, 1.4 * t95))
    queue = mm1_sojourns(2, reps, 2000, 0.7)
    out("M/M/1 0.7 n=2000 p95 at truth", V.quantile_rates(queue, 0.95, t7))
    out("same, limit 1.4x", V.quantile_rates(queue, 0.95, 1.4 * t7))
    busy = mm1_sojourns(30, reps, 2000, 0.9)
    out("M/M/1 0.9 n=2000 p95 at truth", V.quantile_rates(busy, 0.95, t9))
    out("M/M/1 0.9 n=2000 p50 at truth", V.quantile_rates(busy, 0.5, mm1_truth(0.5, 0.9)))
    phased = mm1_sojourns(12, reps, 1000, 0.9)
    out("M/M/1 0.9 n=1000 in 20 phases of 50, p95", V.phase_rates(phased, 50, 0.95, t9))
    short = mm1_sojourns(15, reps, 50, 0.9)
    out("M/M/1 0.9 50 requests p50", V.quantile_rates(short, 0.5, mm1_truth(0.5, 0.9)))
    out("M/M/1 0.9 100 requests p95", V.quantile_rates(mm1_sojourns(31, reps, 100, 0.9), 0.95, t9))
    out("ITL p50 per request n=400", V.itl_rates(3, 400, 1.0, reps))
    bursts = V.burst_episodes(10, reps, 20, 100)
    out("20 repeated bursts p95", V.episode_rates(bursts, 20, 0.95, V.burst_truth(0.95, 100)))
    clear = mm1_sojourns(16, reps, 2000, 0.7)
    out("M/M/1 0.7 n=2000, limit 0.5x", V.quantile_rates(clear, 0.95, 0.5 * t7))
    out("M/M/1 0.7 n=2000, limit 2x", V.quantile_rates(clear, 0.95, 2.0 * t7))
    burst = V.burst_over_its_limit(reps)
    out("one burst of 100 over 700 ms", (V._share(burst, V.Verdict.FAIL), 0.0))
    out("attainment M/M/1 0.9 n=1000", A.queue_rates(21, reps, 1000, 0.9, 1.0))
    out("attainment M/M/1 0.7 n=300", A.queue_rates(21, reps, 300, 0.7, 1.0))
    out("attainment, independent misses n=1000", A.verdict_rates(11, 1000, 0.05, 0.95, 1.0))
    out("attainment, outages of 5, n=2000", A.verdict_rates(11, 2000, 0.05, 0.95, 5.0))
    print(f"({reps} replicates, variant {name}, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
