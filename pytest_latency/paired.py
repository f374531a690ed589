"""Baseline and candidate servers compared in one job, interleaved in ABBA blocks.

The strong form of a relative objective: both servers run the same offered load in
alternating blocks (A B B A ...), so drift on a shared, noisy machine hits both alike;
each adjacent A/B pair uses the same seed (identical arrivals and prompts), and the
verdict comes from the distribution-free bounds on the median of the paired ratios.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_latency.analysis.compare import abba_order, abba_pairs, compare_blocks
from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, percentile
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.verdict import ObjectiveResult
from pytest_latency.result import LatencyResult
from pytest_latency.spec import ServerSpec, Workload, objective

RunBlock = Callable[[Workload, ServerSpec, str], LatencyResult]


@dataclass(slots=True)
class PairedComparison:
    """Block runs of a baseline (A) and a candidate (B) server, in ABBA order."""

    test: str
    order: list[str]
    blocks: list[LatencyResult]
    confidence: float = DEFAULT_CONFIDENCE
    results: list[ObjectiveResult] = field(default_factory=list)

    def block_statistics(self, metric: str, p: float, phase: str | None = None) -> list[float]:
        """Each block's percentile of ``metric`` (failed requests count as unbounded)."""
        return [
            percentile(metric_samples(block.phase_records(phase), metric), p)
            for block in self.blocks
        ]

    def decide(
        self, metric: str, *, p: float, max_regression: str | float, phase: str | None = None
    ) -> ObjectiveResult:
        goal = objective(metric, p=p, max_regression=max_regression, phase=phase)
        assert goal.max_regression is not None
        pairs = abba_pairs(self.block_statistics(metric, p, phase))
        ratio = compare_blocks(pairs, goal.max_regression, confidence=self.confidence)
        result = ObjectiveResult(
            goal, ratio.verdict, ratio.ratio_estimate, ratio.ratio_lower, ratio.ratio_upper,
            len(pairs), self.confidence, f"{len(pairs)} paired blocks: {ratio.reason}",
        )  # fmt: skip
        self.results.append(result)
        return result

    def assert_no_regression(
        self, metric: str, *, p: float, max_regression: str | float, phase: str | None = None
    ) -> ObjectiveResult:
        """Fail when the candidate is slower than baseline by more than ``max_regression``."""
        from pytest_latency.gate import enforce  # pytest-facing; keep this module importable

        __tracebackhide__ = True
        result = self.decide(metric, p=p, max_regression=max_regression, phase=phase)
        # Evidence (slowest requests, diagnosis) comes from the candidate's last block.
        candidate = self.blocks[max(i for i, side in enumerate(self.order) if side == "B")]
        enforce(dataclasses.replace(candidate, test=self.test), [result])
        return result


def run_paired(
    workload: Workload,
    baseline: ServerSpec,
    candidate: ServerSpec,
    *,
    blocks: int,
    test: str,
    run_block: RunBlock,
) -> PairedComparison:
    """Run ``blocks`` blocks in ABBA order; pair ``k`` (blocks 2k, 2k+1) shares one seed."""
    order = abba_order(blocks)
    results = []
    for index, side in enumerate(order):
        seeded = dataclasses.replace(workload, seed=workload.seed + index // 2)
        server = baseline if side == "A" else candidate
        results.append(run_block(seeded, server, f"{test}[{side}{index + 1}]"))
    return PairedComparison(test=test, order=order, blocks=results)
