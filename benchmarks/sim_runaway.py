"""The runaway trend test against known truth: false calls, power, the issue's rows.

Run once (about 3-4 minutes on one core): ``python benchmarks/sim_runaway.py [reps]``.
Prints the tables of docs/statistics.md ("A queue that ran away") and docs/capacity.md
(the probe's queue check). Queues are M/G/c in virtual time (tests/helpers/mgc_queue.py),
from an empty queue, at 6.67 req/s of capacity unless said otherwise.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.runaway import RUNAWAY_REASON, runaway_phases
from pytest_latency.spec.model import Phase, Workload, objective
from tests.helpers.mgc_queue import MGcQueue
from tests.unit.analysis.test_runaway_probe import _called

ALPHA = 0.005  # the runaway check's share at 99% beside one waiting objective


def steady(rate: float, seconds: float) -> Workload:
    return Workload(phases=(Phase("steady", rate=rate, duration_s=seconds),))


def false_calls(reps: int) -> None:
    print("verdict rule, false runaway calls (nominal 0.5%)")
    for slots in (1, 4):
        for kind in ("lognormal", "hyperexponential"):
            for load in (0.9, 0.95):
                cells = []
                for seconds in (60.0, 120.0):
                    queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind=kind)
                    called = sum(
                        bool(
                            runaway_phases(
                                queue.records(load, seconds, seed),
                                steady(1.0, seconds),
                                set(),
                                ALPHA,
                            )
                        )
                        for seed in range(reps)
                    )
                    cells.append(f"{seconds:g}s {100 * called / reps:.2f}%")
                print(f"  M/G/{slots} {kind} CV 2 at {load}: " + ", ".join(cells), flush=True)


def power(reps: int) -> None:
    print("verdict rule, phases called runaway")
    cases = [
        ("M/M/1 2 req/s offered, 120 s", MGcQueue(1, 2.0 / 1.1), 120.0, 2.0 / 1.1),
        ("M/M/1 5/s capacity, 120 s", MGcQueue(1, 5.0), 120.0, 5.0),
        ("M/D/1 5/s capacity, 120 s", MGcQueue(1, 5.0, cv=0.0), 120.0, 5.0),
        ("M/D/4 6.67/s capacity, 60 s", MGcQueue(4, 6.67, cv=0.0), 60.0, 6.67),
        ("M/G/4 lognormal CV 2, 60 s", MGcQueue(4, 6.67, cv=2.0, kind="lognormal"), 60.0, 6.67),
    ]
    for label, queue, seconds, capacity in cases:
        cells = []
        for load in (1.1, 1.25, 1.5, 2.0):
            workload = steady(load * capacity, seconds)
            found = sum(
                bool(runaway_phases(queue.records(load, seconds, seed), workload, set(), ALPHA))
                for seed in range(reps)
            )
            cells.append(f"{load}x {100 * found / reps:.0f}%")
        print(f"  {label}: " + ", ".join(cells), flush=True)


def row(reps: int) -> None:
    """The issue's row: M/M/1 at 1.1x (2 req/s) for 120 s, TTFT p95 <= 1 s."""
    queue = MGcQueue(1, 2.0 / 1.1)
    goal = objective("ttft", p=95, max="1s")
    counts: collections.Counter[str] = collections.Counter()
    by_trend = 0
    for seed in range(reps):
        records = queue.records(1.1, 120.0, seed)
        (result,) = decide_objectives(
            [goal], records, confidence=0.995, workload=steady(2.0, 120.0)
        )
        counts[result.verdict.value] += 1
        by_trend += result.reason.startswith(RUNAWAY_REASON)
    shares = ", ".join(f"{verdict} {100 * n / reps:.0f}%" for verdict, n in sorted(counts.items()))
    print(
        f"M/M/1 1.1x 120 s, TTFT p95 <= 1 s: {shares} (by the trend: {100 * by_trend / reps:.0f}%)"
    )


def probes(reps: int) -> None:
    print("probe queue check (60 s probes after a 6 s warm-up, probe alpha 0.2%), false calls")
    for slots in (1, 4):
        for kind in ("lognormal", "hyperexponential"):
            cells = []
            for load in (0.9, 0.95):
                queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind=kind)
                called = sum(_called(queue, load, 5000 + seed) is not None for seed in range(reps))
                cells.append(f"{load} {100 * called / reps:.2f}%")
            print(f"  M/G/{slots} {kind} CV 2: " + ", ".join(cells), flush=True)
    print("probe queue check, found (median seconds into the probe)")
    for slots in (4, 16):
        queue = MGcQueue(slots=slots, capacity_rps=slots / 0.6, cv=0.0)
        cells = []
        for load in (1.1, 1.25, 1.5, 2.0):
            spans = [_called(queue, load, seed) for seed in range(reps // 4)]
            found = sorted(span for span in spans if span is not None)
            median = f"{found[len(found) // 2]:g}s" if found else "-"
            cells.append(f"{load}x {100 * len(found) / len(spans):.0f}% ({median})")
        print(f"  {slots} slots, fixed 0.6 s: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    false_calls(count)
    power(count // 2)
    row(count // 2)
    probes(count)
