"""Baseline and candidate servers compared in one job, interleaved in ABBA blocks.

The strong form of a relative objective: both servers run the same offered load in
alternating blocks (A B B A ...), so drift on a shared, noisy machine hits both alike.
Each group of four blocks gives one paired ratio, ``sqrt(B2 * B3) / sqrt(A1 * A4)``: a
linear drift adds as much to the B blocks (middle) as to the A blocks (ends), so it
cancels within the group. Every block has its own seed, derived from the session's,
so no two blocks share a prompt (a prefix cache cannot favour one side). The verdict
comes from the distribution-free bounds on the median of the group ratios; every
block's generator health is enforced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_latency.analysis.paired_blocks import abba_groups, abba_order, compare_blocks
from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, percentile
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.verdict import ObjectiveResult
from pytest_latency.spec.model import ServerSpec, Workload, objective

RunBlock = Callable[[Workload, ServerSpec, str], LatencyResult]
Gate = Callable[[LatencyResult, Sequence[ObjectiveResult]], None]


@dataclass(slots=True)
class PairedComparison:
    """Block runs of a baseline (A) and a candidate (B) server, in ABBA order."""

    test: str
    order: list[str]
    blocks: list[LatencyResult]
    confidence: float = DEFAULT_CONFIDENCE
    results: list[ObjectiveResult] = field(default_factory=list)
    gate: Gate | None = None  # the pytest side's verdict enforcement

    def block_statistics(self, metric: str, p: float, phase: str | None = None) -> list[float]:
        """Each block's percentile of ``metric`` (failed requests count as unbounded)."""
        return [
            percentile(metric_samples(block.phase_records(phase), metric), p)
            for block in self.blocks
        ]

    def decide(
        self, metric: str, *, p: float, max_regression: str, phase: str | None = None
    ) -> ObjectiveResult:
        """The verdict on ``metric`` at ``p`` over the ABBA groups, without raising on FAIL."""
        goal = objective(metric, p=p, max_regression=max_regression, phase=phase)
        assert goal.max_regression is not None
        pairs = abba_groups(self.block_statistics(metric, p, phase))
        ratio = compare_blocks(pairs, goal.max_regression, confidence=self.confidence)
        result = ObjectiveResult(
            goal, ratio.verdict, ratio.ratio_estimate, ratio.ratio_lower, ratio.ratio_upper,
            len(pairs), self.confidence,
            f"{len(pairs)} ABBA groups of {len(self.blocks)} blocks: {ratio.reason}",
        )  # fmt: skip
        self.results.append(result)
        return result

    def assert_no_regression(
        self, metric: str, *, p: float, max_regression: str, phase: str | None = None
    ) -> ObjectiveResult:
        """Fail when the candidate is slower than baseline by more than ``max_regression``."""
        __tracebackhide__ = True
        result = self.decide(metric, p=p, max_regression=max_regression, phase=phase)
        if self.gate is None:
            if result.verdict.value == "fail":
                raise AssertionError(f"{result.objective.label}: {result.reason}")
            return result
        for block in self.blocks:  # a block whose generator fell behind invalidates all
            self.gate(dataclasses.replace(block, test=self.test), [])
        # Evidence (slowest requests, diagnosis) comes from the candidate's last block.
        candidate = self.blocks[max(i for i, side in enumerate(self.order) if side == "B")]
        self.gate(dataclasses.replace(candidate, test=self.test), [result])
        return result


def block_seed(seed: int, block: int) -> int:
    """Block ``block``'s seed, derived from the session's: distinct for every block."""
    return int(np.random.SeedSequence([seed & 0xFFFFFFFF, block]).generate_state(1)[0])


def run_paired(
    workload: Workload,
    baseline: ServerSpec,
    candidate: ServerSpec,
    *,
    blocks: int,
    test: str,
    run_block: RunBlock,
) -> PairedComparison:
    """Run ``blocks`` blocks in ABBA order, each with its own seed derived from the workload's."""
    order = abba_order(blocks)
    results = []
    for index, side in enumerate(order):
        seeded = dataclasses.replace(workload, seed=block_seed(workload.seed, index))
        server = baseline if side == "A" else candidate
        results.append(run_block(seeded, server, f"{test}[{side}{index + 1}]"))
    return PairedComparison(test=test, order=order, blocks=results)
