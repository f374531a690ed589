"""The result of one run: records, per-phase summaries, percentiles and objective checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.analysis.columns import Columns
from pytest_latency.analysis.diagnosis import Finding, diagnose
from pytest_latency.analysis.health import GeneratorHealth
from pytest_latency.analysis.infrastructure import InfrastructureFailure, classify
from pytest_latency.analysis.looks import UntilDecided
from pytest_latency.analysis.objectives import (
    decide_objectives,
    in_scope,
    spent_confidence,
)
from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, percentile
from pytest_latency.analysis.runaway import counted_tests
from pytest_latency.analysis.samples import LATENCY_METRICS, metric_samples
from pytest_latency.analysis.summary import (
    SUMMARY_METRICS,
    SUMMARY_PERCENTILES,
    PhaseSummary,
    shown_metrics,
    summarise_phase,
)
from pytest_latency.analysis.throughput import phase_throughput
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, objective_confidence
from pytest_latency.records import RequestRecord
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec import checks as check
from pytest_latency.spec.capacity import CapacitySpec
from pytest_latency.spec.model import Objective, SpecError, Workload
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
    inconclusive_policy: str = "fail"
    # The run saves a first baseline (no --latency-baseline): its relative objectives
    # have nothing to compare with, which is expected, not a doubt to fail on.
    establishing_baseline: bool = False
    trace_url_template: str | None = None
    server_join: JoinReport | None = None  # how server durations were joined, if at all
    server_metrics: MetricsSeries | None = None  # /metrics scraped during the run
    health: GeneratorHealth | None = None  # None: not checked
    # The server died during the run: how (exit code, last log lines); None if it ran on.
    server_exit: str | None = None
    # The same test's stored runs from --latency-baseline (oldest first), for relative
    # objectives; several runs of one build let verdicts see between-run noise.
    baseline_runs: list[list[RequestRecord]] | None = None
    objective_results: list[ObjectiveResult] = field(default_factory=list)
    # Set by the pytest side: turns results into a test outcome (the gate). Analysis
    # never imports pytest; without a gate, failures raise a plain AssertionError.
    gate: Callable[[LatencyResult, Sequence[ObjectiveResult]], None] | None = None
    # "session": the error budget spans every objective of the session (see
    # analysis/objectives.py); the counter is shared by the session's runs.
    error_budget: SessionBudget | None = None
    interrupted: str | None = None  # why the run was cut short, if it was
    # Why --latency-baseline cannot serve this run (no entry, another workload), if so.
    baseline_problem: str | None = None
    # Set by the pytest side: raises when the plan could never decide the objectives
    # (UndecidablePlan), before assert_slo judges them.
    plan_check: Callable[[Sequence[Objective]], object] | None = None
    # The key this run is stored and looked up under in baselines (pytest_latency.keys).
    baseline_key: str = ""
    # A capacity search (docs/capacity.md): its bracket and probes, and what it was given.
    capacity: CapacityResult | None = None
    capacity_spec: CapacitySpec | None = None
    # A run extended until decided (analysis/looks.py): its looks and budget. Its
    # objectives are judged at the last look's share of the error budget, as it was.
    until_decided: UntilDecided | None = None
    # The summary's percentiles (--latency-percentiles); each objective's own is added.
    summary_percentiles: tuple[float, ...] = SUMMARY_PERCENTILES

    @property
    def offered(self) -> int:
        """How many requests the run offered (sent or not): one record each."""
        return len(self.records)

    def phase_records(self, phase: str | None = None) -> list[RequestRecord]:
        """Records of one phase (all phases when None); unknown names are an error."""
        if phase is None:
            return list(self.records)
        if phase not in {p.name for p in self.workload.phases}:
            known = ", ".join(p.name for p in self.workload.phases)
            raise SpecError(
                f"unknown phase {phase!r}; this run has: {known}"
                + check.did_you_mean(phase, [p.name for p in self.workload.phases])
                + " (give the objectives to latency.run(..., objectives=...) to check them"
                " before the load)"
            )
        return [record for record in self.records if record.phase == phase]

    def scoped(self, objective: Objective) -> list[RequestRecord]:
        """The requests an objective is about: its phase and planned token-length cohort."""
        self.phase_records(objective.phase)  # an unknown phase is an error
        return in_scope(self.records, objective)

    def percentile(self, metric: str, p: float, phase: str | None = None) -> float:
        """``metric`` at percentile ``p`` (95, not 0.95; 1 < p < 100), in seconds.

        Counted as verdicts count it: failed requests are unbounded (``inf``) and ITL is
        each request's median gap, so this is the estimate a verdict on the same scope
        prints. NaN when the scope has no value. A bad ``metric``, ``p`` or ``phase`` is
        a SpecError saying what to write instead.
        """
        check.choice("metric", metric, LATENCY_METRICS, what="percentile metric")
        check.percentile("p", p, what="percentile p")
        return percentile(metric_samples(self.phase_records(phase), metric), p)

    def summaries(self) -> list[PhaseSummary]:
        """One summary per phase, in order: counts, rates and percentiles of each metric."""
        columns = Columns.from_records(self.records, [phase.name for phase in self.workload.phases])
        summaries = []
        beyond = self.shown_metrics[len(SUMMARY_METRICS) :]  # objectives' own metrics
        for phase in self.workload.phases:
            windows = self.workload.phase_windows(phase.name)
            records = self.phase_records(phase.name)
            throughput = phase_throughput(records, windows)
            more = {metric: metric_samples(records, metric) for metric in beyond}
            summaries.append(
                summarise_phase(phase, windows, columns, throughput, self.shown_percentiles, more)
            )
        return summaries

    @property
    def shown_metrics(self) -> tuple[str, ...]:
        """The summary's metrics and each decided latency objective's own."""
        return shown_metrics(result.objective.metric for result in self.objective_results)

    @property
    def shown_percentiles(self) -> tuple[float, ...]:
        """The summary's percentiles and each decided latency objective's own, rising."""
        own = {
            result.objective.p
            for result in self.objective_results
            if result.objective.p is not None and result.objective.metric in LATENCY_METRICS
        }
        return tuple(sorted(set(self.summary_percentiles) | own))

    def infrastructure(self) -> InfrastructureFailure | None:
        """Why the run measured no server (it went away, exited, or one error failed
        most requests), or None: such a run is invalid, not statistics."""
        return classify(self.records, self.server_exit)

    def diagnosis(self) -> list[Finding]:
        """Bottleneck hypotheses with their evidence and the check to run next."""
        return diagnose(self.records, self.workload, self.server_metrics)

    def evaluate(self, objectives: Sequence[Objective]) -> list[ObjectiveResult]:
        """Decide ``objectives`` together (their confidence shared) and keep the results.

        Returns one result per objective without raising on a failed one (see
        :meth:`assert_slo` for that). An objective whose scope holds no request is
        INCONCLUSIVE and says so ("no requests in cohort ...").
        """
        for objective in objectives:
            if not isinstance(objective, Objective):
                raise SpecError(
                    f"expected Objective objects (from objective(...)), got {objective!r}:"
                    " pass them as separate arguments, e.g. assert_slo(*objectives)"
                )
        if self.error_budget is not None:
            confidence = self.error_budget.take(counted_tests(objectives), self.confidence)
        else:
            confidence = objective_confidence(counted_tests(objectives), self.confidence)
        if self.until_decided is not None:
            confidence = self.until_decided.final_confidence(confidence)
        for objective in objectives:
            self._check_capacity(objective)
            self.phase_records(objective.phase)  # an unknown phase is an error
            if objective.relative and self.baseline_problem:
                raise SpecError(f"{objective.label}: {self.baseline_problem}")
        invalid = None
        if self.health is not None and not self.health.valid:
            invalid = "; ".join(self.health.reasons)
        infrastructure = self.infrastructure()
        if infrastructure is not None:  # the likelier cause of a lagging generator too
            invalid = infrastructure.headline
        if self.interrupted:
            invalid = f"the run was cut short ({self.interrupted})"
        results = decide_objectives(
            objectives,
            self.records,
            confidence=confidence,
            baseline=self.baseline_runs,
            invalid_reason=invalid,
            workload=self.workload,
            capacity=self.capacity,
        )
        self.objective_results.extend(results)
        return results

    def _check_capacity(self, objective: Objective) -> None:
        """A capacity run decides its objectives on each probe, and only capacity ones
        on the whole run; SpecError otherwise."""
        if self.capacity is not None and objective.metric != "capacity":
            raise SpecError(
                f"{objective.label}: a capacity search decided this on each probe (see"
                " result.capacity.probes); gate the search with objective('capacity', min=...)"
            )

    def assert_slo(self, *objectives: Objective) -> list[ObjectiveResult]:
        """Decide ``objectives``; raise AssertionError naming every failed one with evidence.

        Inconclusive objectives follow the session's ``--latency-inconclusive`` setting.
        """
        __tracebackhide__ = True
        if not objectives:
            raise SpecError(
                "assert_slo() was given no objectives, so it would assert nothing: pass at"
                ' least one, e.g. assert_slo(objective("ttft", p=95, max="700ms"))'
            )
        if self.plan_check is not None:
            self.plan_check(objectives)
        results = self.evaluate(objectives)
        if self.gate is not None:
            self.gate(self, results)
        else:
            failed = [r.objective.label for r in results if r.verdict is Verdict.FAIL]
            if failed:
                raise AssertionError(f"latency objectives not met: {', '.join(failed)}")
        return results


class SessionBudget:
    """One error budget for every objective of a session (``--latency-error-control``)."""

    def __init__(self) -> None:
        self.decided = 0

    def take(self, count: int, confidence: float) -> float:
        """The per-objective confidence for ``count`` objectives decided next."""
        spent = spent_confidence(confidence, self.decided, count)
        self.decided += max(count, 1)
        return spent
