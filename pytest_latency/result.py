"""The result of one run: records, per-phase summaries, percentiles and objective checks."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_latency.analysis.cohorts import in_range, output_length
from pytest_latency.analysis.columns import Columns
from pytest_latency.analysis.diagnosis import Finding, diagnose
from pytest_latency.analysis.health import GeneratorHealth
from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, percentile
from pytest_latency.analysis.relative import decide_relative
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.summary import PhaseSummary, summarise_phase
from pytest_latency.analysis.verdict import (
    ObjectiveResult,
    Verdict,
    decide,
    objective_confidence,
)
from pytest_latency.records import RequestRecord
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec import Objective, SpecError, Workload
from pytest_latency.telemetry.join import JoinReport
from pytest_latency.telemetry.prometheus import MetricsSeries


@dataclass(slots=True)
class LatencyResult:
    """Everything one run measured. ``records`` holds exactly one row per offered request."""

    test: str
    server: ServerInfo
    workload: Workload
    records: list[RequestRecord]
    started_at_unix: float
    elapsed_s: float
    confidence: float = DEFAULT_CONFIDENCE
    inconclusive_policy: str = "warn"
    trace_url_template: str | None = None
    server_join: JoinReport | None = None  # how server durations were joined, if at all
    server_metrics: MetricsSeries | None = None  # /metrics scraped during the run
    health: GeneratorHealth | None = None  # None: not checked
    # The server died during the run: how (exit code, last log lines); None if it ran on.
    server_exit: str | None = None
    # The same test's requests from --latency-baseline, for relative objectives.
    baseline_records: list[RequestRecord] | None = None
    objective_results: list[ObjectiveResult] = field(default_factory=list)

    @property
    def offered(self) -> int:
        return len(self.records)

    def phase_records(self, phase: str | None = None) -> list[RequestRecord]:
        """Records of one phase (all phases when None); unknown names are an error."""
        if phase is None:
            return list(self.records)
        if phase not in {p.name for p in self.workload.phases}:
            known = ", ".join(p.name for p in self.workload.phases)
            raise SpecError(f"unknown phase {phase!r}; this run has: {known}")
        return [record for record in self.records if record.phase == phase]

    def scoped(self, objective: Objective) -> list[RequestRecord]:
        """The requests an objective is about: its phase and token-length cohort."""
        if objective.input_tokens is None and objective.output_tokens is None:
            return self.phase_records(objective.phase)
        return [
            record
            for record in self.phase_records(objective.phase)
            if in_range(record.input_tokens, objective.input_tokens)
            and in_range(output_length(record), objective.output_tokens)
        ]

    def percentile(self, metric: str, p: float, phase: str | None = None) -> float:
        """Point estimate of ``metric`` at percentile ``p`` over completed requests, in s."""
        ok = [record for record in self.phase_records(phase) if record.ok]
        return percentile(metric_samples(ok, metric), p)

    def summaries(self) -> list[PhaseSummary]:
        columns = Columns.from_records(self.records, [phase.name for phase in self.workload.phases])
        return [
            summarise_phase(phase, self.workload.phase_start_s(phase.name), columns)
            for phase in self.workload.phases
        ]

    def diagnosis(self) -> list[Finding]:
        """Bottleneck hypotheses with their evidence and the check to run next."""
        return diagnose(self.records, self.workload, self.server_metrics)

    def evaluate(self, objectives: Sequence[Objective]) -> list[ObjectiveResult]:
        """Decide ``objectives`` together (their confidence shared) and keep the results."""
        confidence = objective_confidence(len(objectives), self.confidence)
        results = [self._decide(objective, confidence) for objective in objectives]
        if self.health is not None and not self.health.valid:
            reason = "; ".join(self.health.reasons)
            results = [
                dataclasses.replace(result, verdict=Verdict.INVALID, reason=reason)
                for result in results
            ]
        self.objective_results.extend(results)
        return results

    def _decide(self, objective: Objective, confidence: float) -> ObjectiveResult:
        if not objective.relative:
            return decide(objective, self.scoped(objective), confidence)
        baseline = None
        if self.baseline_records is not None:
            baseline = [
                record
                for record in self.baseline_records
                if (objective.phase is None or record.phase == objective.phase)
                and in_range(record.input_tokens, objective.input_tokens)
                and in_range(output_length(record), objective.output_tokens)
            ]
        return decide_relative(objective, self.scoped(objective), baseline, confidence)

    def assert_slo(self, *objectives: Objective) -> list[ObjectiveResult]:
        """Decide ``objectives``; raise AssertionError naming every failed one with evidence.

        Inconclusive objectives follow the session's ``--latency-inconclusive`` setting.
        """
        from pytest_latency.gate import enforce  # the gate is pytest-facing; keep analysis pure

        __tracebackhide__ = True
        results = self.evaluate(objectives)
        enforce(self, results)
        return results
