"""Levers on a 6-minute capacity search of a 4-slot server, in virtual time.

    python benchmarks/sim_capacity_levers.py [SEEDS]   # default 20; about a minute

Each row: how many seeded searches bracket the flip within 1.5x, and how many hold it
(the table in docs/capacity.md, "What was tried for the 4-slot server"). The search is
the one ``tests/unit/analysis/test_capacity_slots.py`` runs; the rows change the
dependence estimate (benchmarks/sim_dependence_variants.py) or the search's constants.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pytest_latency.analysis.capacity as capacity  # noqa: E402
import pytest_latency.analysis.capacity_steps as capacity_steps  # noqa: E402
from benchmarks.sim_dependence_variants import variant  # noqa: E402
from pytest_latency.analysis import attainment, percentiles  # noqa: E402
from pytest_latency.spec.model import objective  # noqa: E402
from tests.helpers.virtual_capacity import VirtualProbes  # noqa: E402
from tests.unit.analysis.test_capacity_slots import flip_rate, slots  # noqa: E402

ORIGINAL = percentiles.quantile_dependence
LIMIT_S = 3.0


def searches(seeds: int, truth: float, **options: object) -> tuple[int, int]:
    server = slots(4)
    within = holds = 0
    for seed in range(seeds):
        goals = [objective("ttft", p=90, max=f"{LIMIT_S:g}s")]
        probes = VirtualProbes(
            server.records, goals, warmup_s=6.0, probe_s=60.0, seed=1000 * seed, drain_s=6.0
        )
        c = server.throughput_rps
        result = capacity.search_capacity(
            probes, (0.15 * c, 4.5 * c), probe_cost_s=72.0, budget_s=360.0,
            shortest_probe_s=36.0, **options,  # type: ignore[arg-type]
        )  # fmt: skip
        passed, failed = result.passed_rps, result.failed_rps
        width = math.inf if passed is None or failed is None else failed / passed
        within += width <= 1.5
        holds += passed is not None and failed is not None and passed <= truth <= failed
    return within, holds


def estimate(name: str) -> None:
    chosen = ORIGINAL if name == "now" else variant(name)
    percentiles.quantile_dependence = chosen  # type: ignore[assignment]
    attainment.quantile_dependence = chosen  # type: ignore[attr-defined]


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    truth = flip_rate(slots(4), LIMIT_S)
    shares = capacity.repeat_shares
    rows: list[tuple[str, str, Callable[[], None], dict[str, object]]] = [
        ("as shipped", "now", lambda: None, {}),
        ("indicator only", "indicator", lambda: None, {}),
        ("indicators at the quantile and the median", "median", lambda: None, {}),
    ]
    weightings = (("equal", (1, 1, 1, 1)), ("linear", (1, 2, 3, 4)), ("cubes", (1, 8, 27, 64)))
    for label, weights in weightings:

        def patch(weights: tuple[int, ...] = weights) -> None:
            capacity.repeat_shares = lambda retries=4: [w / sum(weights) for w in weights]  # type: ignore[assignment]

        rows.append((f"indicator only, {label} shares", "indicator", patch, {}))
    rows.append(("indicator only, one look", "indicator", lambda: None, {"looks": (1.0,)}))
    for lean in (0.3, 1.2):

        def leaning(lean: float = lean) -> None:
            capacity_steps.LEAN_TO_REPEAT = lean

        rows.append((f"indicator only, repeat at lean {lean}", "indicator", leaning, {}))
    for confidence in (0.95, 0.8, 0.5):
        rows.append(
            (f"indicator only, confidence {confidence}", "indicator", lambda: None,
             {"confidence": confidence})
        )  # fmt: skip
    lean_default = capacity_steps.LEAN_TO_REPEAT
    for label, name, patch, options in rows:
        capacity.repeat_shares, capacity_steps.LEAN_TO_REPEAT = shares, lean_default  # type: ignore[assignment]
        estimate(name)
        patch()
        within, holds = searches(seeds, truth, **options)
        print(f"{within:3d} / {holds:3d} of {seeds}  {label}", flush=True)
    print(f"(flip {truth:.2f}/s)")


if __name__ == "__main__":
    main()
