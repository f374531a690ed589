"""What a capacity search's budget buys against slot servers, in virtual time.

    python benchmarks/sim_capacity_budget.py searches [BUDGETS_MIN] [SLOTS] [LIMITS_S] [--before]
    python benchmarks/sim_capacity_budget.py evidence
    python benchmarks/sim_capacity_budget.py placements

``searches``: 20 seeded searches per row, as ``tests/unit/analysis/test_capacity_slots.py``
runs them (60 s probes after a 6 s warm-up, rates 0.15x to 4.5x the capacity, 99%
confidence, TTFT p90 within the limit); prints how many bracket within 1.5x, how many
hold the flip, and how many found a bracket that misses it (wrong). Defaults: budgets
6,12,18,24 minutes, slots 4,8,16, limit 3 s.
``--before`` plans as the search did before budgets bought repeats (every probe the
budget holds reserves a rate's alpha, four probes a rate).

``placements``: the 6-minute search of 4 and 16 slots at the 3 s limit with its range
placed elsewhere around the capacity (its first probe at 0.82x, 0.95x, 0.45x, 1.10x).
``evidence``: how often one probe of T seconds at a load decides a pass on the 4-slot
server at the 3 s limit, tested once at confidence 99% and 99.8% (20 seeds): an oracle
search that knew the capacity and spent all its alpha on one test. docs/capacity.md
("Why six minutes hardly bracket a 4-slot server") has both tables.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pytest_latency.analysis.capacity as capacity  # noqa: E402
import tests.unit.analysis.test_capacity_slots as slot_tests  # noqa: E402
from pytest_latency.analysis.capacity_probe import as_proportion  # noqa: E402
from pytest_latency.analysis.objectives import decide_objectives  # noqa: E402
from pytest_latency.spec.model import objective  # noqa: E402


def searches(budgets: list[float], counts: list[int], limits: list[float]) -> None:
    for minutes in budgets:
        slot_tests.BUDGET_S = 60.0 * minutes
        for count in counts:
            server = slot_tests.slots(count)
            for limit in limits:
                truth, widths, holds = slot_tests.replicates(server, limit)
                within = sum(width <= 1.5 for width in widths)
                wrong = sum(math.isfinite(width) for width in widths) - holds
                print(
                    f"{minutes:g} min, {count} slots, L {limit:g}s (flip"
                    f" {truth / server.throughput_rps:.2f}x capacity): within 1.5x"
                    f" {within}/20, held {holds}/20, wrong {wrong}/20,"
                    f" median {np.median(widths):.2f}x",
                    flush=True,
                )


def placements() -> None:
    """The 6-minute search at `L` 3 s with its range placed elsewhere around the
    capacity (its first probe at the geometric middle of the range)."""
    for low, high in ((0.15, 4.5), (0.3, 3.0), (0.1, 2.0), (0.2, 6.0)):
        for count in (4, 16):
            _, widths, holds = slot_tests.replicates(slot_tests.slots(count), 3.0, span=(low, high))
            within = sum(width <= 1.5 for width in widths)
            wrong = sum(math.isfinite(width) for width in widths) - holds
            print(
                f"rates {low:g}x..{high:g}x (first {math.sqrt(low * high):.2f}x), {count}"
                f" slots: within 1.5x {within}/20, held {holds}/20, wrong {wrong}/20",
                flush=True,
            )


def evidence() -> None:
    server = slot_tests.slots(4)
    goal = as_proportion(objective("ttft", p=90, max="3s"))
    for load in (0.77, 0.8, 0.82):
        for seconds in (300, 420, 600):
            passes = {0.99: 0, 0.998: 0}
            effective = []
            for seed in range(20):
                rate = load * server.throughput_rps
                records = server.records(
                    [("warmup", rate, 6.0), ("probe", rate, seconds)], 7000 + seed
                )
                probe = [r for r in records if r.phase == "probe"]
                for confidence in passes:
                    result = decide_objectives([goal], probe, confidence=confidence)[0]
                    passes[confidence] += result.verdict.value == "pass"
                effective.append(result.n_effective or math.nan)
            shown = ", ".join(f"{count}/20 pass at {c:.1%}" for c, count in passes.items())
            print(
                f"{load:.2f}x capacity, {seconds} s:"
                f" effective n {np.median(effective):.0f}; {shown}",
                flush=True,
            )


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--before"]
    if "--before" in sys.argv:
        capacity.search_plan = lambda rates, probes, target: (max(1, probes), 4)  # type: ignore[assignment]
    if args and args[0] == "evidence":
        evidence()
        return
    if args and args[0] == "placements":
        placements()
        return

    def numbers(index: int, default: str) -> list[float]:
        return [float(x) for x in (args[index] if len(args) > index else default).split(",")]

    budgets, counts, limits = numbers(1, "6,12,18,24"), numbers(2, "4,8,16"), numbers(3, "3")
    searches(budgets, [int(count) for count in counts], limits)


if __name__ == "__main__":
    main()
