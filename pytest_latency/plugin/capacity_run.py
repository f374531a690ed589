"""The capacity search against a live server: each probe is a real open-loop run.

A probe at rate r offers a warm-up phase (not counted) and a probe phase, both at r.
At each pre-planned look (a fraction of the probe phase: 50% and 100%) it waits until
every probe request sent before the look has ended, decides the objectives at that
look's share of alpha (:func:`~pytest_latency.analysis.looks.look_confidences`) and,
once one fails, stops sending: what was not sent stays a ``cancelled`` record with the
reason. A pass needs the whole probe (a queue that builds slowly looks fine early).
Between looks a runaway queue (over-saturation) fails the probe at once; once the
requests it sent have ended, its objectives are decided on them (a fail stands, a pass
becomes inconclusive: a pass needs the whole probe). After the run
the probe drains: it polls the server's ``/metrics`` until nothing waits or runs (or,
without one, the client's own requests have all ended), so one probe's queue never
spills into the next. The whole search, warm-ups and drains included, ends by the
budget: at the deadline the running probe is cancelled (docs/capacity.md).

Like any run, each probe is observed (:class:`ProbeTelemetry`): its requests carry trace
context, ``/metrics`` is scraped while it drives, and after its drain its records are
joined with the server's spans by trace id (queue wait, prefill, decode).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread
import httpx

from pytest_latency.analysis.capacity import DEFAULT_LOOKS, search_capacity
from pytest_latency.analysis.capacity_probe import (
    RUNAWAY_CHECK_S,
    check_spans,
    decide_probe,
    decide_runaway,
    held_back,
    queue_alpha,
    queue_evidence,
    saturated,
)
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeEvidence, ProbeResult
from pytest_latency.driver import Run, Target
from pytest_latency.driver.loop import run_on_loop
from pytest_latency.plugin.capacity_timeline import ProbeRun
from pytest_latency.plugin.session_drive import genai_target
from pytest_latency.records import STOPPED_EARLY, RequestRecord, Status
from pytest_latency.spec.capacity import PROBE_PHASE, CapacitySpec
from pytest_latency.spec.model import MAX_SEED, Objective, Workload
from pytest_latency.telemetry.hub import Observation, TelemetryHub
from pytest_latency.telemetry.join import JoinReport
from pytest_latency.telemetry.queue_depth import queue_depth
from pytest_latency.workload import build_plan

ENDED_POLL_S = 0.02
DRAIN_POLL_S = 0.1
DRAIN_ALLOWANCE = 0.1  # of the probe, planned per probe for its drain (at least 1 s)
BUDGET_SPENT = f"{STOPPED_EARLY}the capacity search's budget ran out"


@dataclass(frozen=True, slots=True)
class ProbeTelemetry:
    """How probes are observed, as the session observes any run: the session's hub
    (client spans, ``/metrics`` scraping, the span receiver) and the server's kind."""

    hub: TelemetryHub
    kind: str  # the server's kind: which /metrics names to read
    expect_spans: bool  # the server exports spans to the hub's receiver


@dataclass(slots=True)
class _Decision:
    verdicts: dict[str, str]
    offered: int
    stopped_early: bool
    evidence: tuple[ProbeEvidence, ...] = ()
    seen: tuple[RequestRecord, ...] = ()  # the probe requests decided on, for a repeat
    # A runaway queue stopped it: the requests sent before the stop and the confidence
    # of the look it did not reach; its objectives are decided once those have ended.
    runaway: tuple[tuple[RequestRecord, ...], float] | None = None


class LiveSearch:
    """Runs :func:`search_capacity` with live probes; keeps every probe's run."""

    def __init__(
        self,
        spec: CapacitySpec,
        template: Workload,
        criteria: Sequence[Objective],
        target: Target,
        *,
        confidence: float,
        telemetry: ProbeTelemetry | None = None,
    ) -> None:
        self.spec, self.template, self.criteria, self.target = spec, template, criteria, target
        self.confidence = confidence
        self.telemetry = telemetry
        self.runs: list[ProbeRun] = []
        self.results: list[ProbeResult] = []  # every decided probe, for an interrupted search
        # The probe requests each decided probe rested on, by rate: a repeat pools them.
        self._decided_at: dict[float, list[tuple[RequestRecord, ...]]] = {}
        self._deadline = math.inf
        self._last_end = 0.0
        self._spanless = False  # a probe got no span at all: later ones wait for none

    @property
    def probe_cost_s(self) -> float:
        """A probe's planned cost: warm-up, the whole probe, and its drain allowance."""
        drain = max(1.0, DRAIN_ALLOWANCE * self.spec.probe_s)
        return self.spec.warmup_s + self.spec.probe_s + drain

    def search(self) -> CapacityResult:
        """Bracket the capacity; at most ``spec.budget_s`` of wall-clock time."""
        self._last_end = time.monotonic()
        self._deadline = self._last_end + self.spec.budget_s
        return search_capacity(
            self.probe,
            self.spec.rates,
            probe_cost_s=self.probe_cost_s,
            budget_s=self.spec.budget_s,
            confidence=self.confidence,
            shortest_probe_s=self.spec.warmup_s + DEFAULT_LOOKS[0] * self.spec.probe_s,
        )

    def probe(
        self, rate: float, looks: Sequence[float], confidences: Sequence[float]
    ) -> ProbeResult:
        """One live probe at ``rate``; its cost is the wall-clock time since the last one
        ended, so that the search's spent time is the time the search took."""
        # Each probe draws its own arrivals (a repeat at one rate is a new sample).
        seed = (self.template.seed + len(self.runs)) % (MAX_SEED + 1)
        phases = self.spec.probe_phases(rate)
        workload = dataclasses.replace(self.template, phases=phases, seed=seed)
        spans = self.telemetry.hub.client_spans if self.telemetry is not None else None
        run = Run(build_plan(workload), self.target, spans)
        observation = Observation()
        try:
            with self._observe() as observation:
                # As every drive runs: a test's timeout raised by a signal handler stops it.
                decision = run_on_loop(self._drive, run, rate, looks, confidences)
                observation.time_zero_ns = run.started_ns or None
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep the probe's records, then stop
            self.runs.append(
                ProbeRun(
                    rate, workload, run.records, run.started_at_unix, "",
                    series=observation.series,
                )
            )  # fmt: skip
            raise
        if decision is not None and decision.runaway is not None:
            decision = self._after_runaway(decision, rate)
        drain = self._drain() if decision is not None else "budget ran out"
        joined = self._join(run.records)
        if decision is None:  # cancelled at the deadline: nothing decided
            for record in run.records:
                if record.status is Status.CANCELLED:
                    record.error = BUDGET_SPENT
            labels = [goal.label for goal in self.criteria]
            # No look decided it: none of its requests is what a verdict rests on.
            decision = _Decision(dict.fromkeys(labels, "inconclusive"), 0, False)
        self.runs.append(
            ProbeRun(
                rate, workload, run.records, run.started_at_unix, drain, joined,
                observation.series,
            )
        )  # fmt: skip
        now = time.monotonic()
        cost, self._last_end = now - self._last_end, now
        if decision.seen:
            self._decided_at.setdefault(rate, []).append(decision.seen)
        self.results.append(
            ProbeResult(
                rate,
                decision.offered,
                decision.verdicts,
                decision.stopped_early,
                cost,
                drain,
                decision.evidence,
            )
        )
        return self.results[-1]

    @contextlib.contextmanager
    def _observe(self) -> Iterator[Observation]:
        """Scrape the server's /metrics while the block runs, as for any run."""
        if self.telemetry is None:
            yield Observation()
            return
        with self.telemetry.hub.observe(self.target.base_url, self.telemetry.kind) as seen:
            yield seen

    def _join(self, records: Sequence[RequestRecord]) -> JoinReport | None:
        """The probe's records joined with the server's spans, after its drain (so the
        spans of its last requests have had time to arrive). The wait for late spans
        ends by the budget's deadline, and once a probe got none at all the later ones
        do not wait for them: a server that does not export would otherwise cost every
        probe the whole grace period."""
        if self.telemetry is None:
            return None
        self.telemetry.hub.export_client_metrics(records, genai_target(self.target))
        expect = self.telemetry.expect_spans and not self._spanless
        left = max(0.0, self._deadline - time.monotonic())
        joined = self.telemetry.hub.join(records, expect_spans=expect, max_wait_s=left)
        self._spanless = self._spanless or (
            expect and joined.joined == 0 and any(r.ok for r in records)
        )
        return joined

    def interrupted(self, why: str) -> CapacityResult:
        """The search so far when it was cut short: its probes, and no bracket (a search
        that did not end claims nothing)."""
        started = self._deadline - self.spec.budget_s
        spent = time.monotonic() - started if math.isfinite(started) else 0.0
        return CapacityResult(None, None, list(self.results), self.spec.budget_s, spent, why)

    async def _drive(
        self, run: Run, rate: float, looks: Sequence[float], confidences: Sequence[float]
    ) -> _Decision | None:
        """Drive the probe while watching it; None when the budget's deadline cut it."""
        decision: _Decision | None = None
        with anyio.move_on_after(max(0.0, self._deadline - time.monotonic())):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run.drive)
                decision = await self._watch(run, rate, looks, confidences)
        return decision

    async def _watch(
        self, run: Run, rate: float, looks: Sequence[float], confidences: Sequence[float]
    ) -> _Decision:
        warm_s = self.spec.warmup_s
        probe_s = run.plan.workload.phases[-1].duration_s
        while not run.started_ns:  # noqa: ASYNC110 (the driver sets no event for time zero)
            await anyio.sleep(ENDED_POLL_S)
        level = queue_alpha(len(self.criteria), confidences, probe_s, looks)
        at_looks = {look * probe_s for look in looks}
        due = [span for span in check_spans(probe_s, looks) if span not in at_looks]
        for index, (look, confidence) in enumerate(zip(looks, confidences, strict=True)):
            cutoff = warm_s + look * probe_s
            while (now := (time.perf_counter_ns() - run.started_ns) / 1e9) < cutoff:
                wake = min(cutoff, warm_s + due[0]) if due else cutoff  # the next check
                await anyio.sleep(max(0.0, min(RUNAWAY_CHECK_S, wake - now)))
                now = (time.perf_counter_ns() - run.started_ns) / 1e9
                if not due or now - warm_s < due[0]:
                    continue
                due.pop(0)
                if saturated(run.records, warm_s, now, level):  # a runaway queue: fail now
                    run.stop(f"capacity probe at {rate:g}/s: the queue ran away")
                    seen = _probe_records(run, cutoff=now)
                    queue = queue_evidence(run.records, warm_s, now, level)
                    shown = () if queue is None else (queue,)
                    runaway = (tuple(seen), confidence)
                    return _Decision({}, len(seen), True, shown, runaway=runaway)
            seen = _probe_records(run, cutoff=cutoff)
            last = index == len(looks) - 1
            # An early look waits for its requests until the next look is due (the probe
            # sends on meanwhile, so the wait costs no time; a quarter of the probe skipped
            # the look at 227/s on the held-out server, whose queue then filled and
            # rejected: 0 of 2307 good and undecided). A look skipped for them spends
            # none of its alpha, which keeps the error bound (a union over looks).
            wait_s = None if last else (looks[index + 1] - look) * probe_s
            waited = await _until_ended(seen, wait_s)
            if not waited:
                continue
            before = [r for r in run.records if r.intended_s < cutoff]  # warm-up too
            verdicts, evidence = await anyio.to_thread.run_sync(
                self._decide, seen, before, rate, confidence, level
            )
            # An early look stops on a fail only: a queue builds during a probe, so its
            # later part is never better than its earlier part, and an early pass could
            # still turn (docs/capacity.md).
            if "fail" in verdicts.values() or last:
                if not last:
                    run.stop(f"capacity probe at {rate:g}/s decided at {look:.0%} of the probe")
                    verdicts, evidence = held_back(verdicts, evidence)  # a pass needs it all
                return _Decision(verdicts, len(seen), not last, tuple(evidence), tuple(seen))
        raise AssertionError("the last look always decides")

    def _after_runaway(self, decision: _Decision, rate: float) -> _Decision:
        """A probe its runaway queue stopped, with each objective decided on the requests
        it sent before the stop, now that they have ended (or were cut at the deadline)."""
        assert decision.runaway is not None
        seen, confidence = decision.runaway
        queue = decision.evidence[0] if decision.evidence else None
        verdicts, evidence = decide_runaway(
            self.criteria, seen, queue, confidence=confidence,
            earlier=self._decided_at.get(rate, []),
        )  # fmt: skip
        return _Decision(verdicts, decision.offered, True, tuple(evidence))

    def _decide(
        self,
        seen: Sequence[RequestRecord],
        before: Sequence[RequestRecord],
        rate: float,
        confidence: float,
        level: float,
    ) -> tuple[dict[str, str], list[ProbeEvidence]]:
        """The objectives on ``seen`` pooled with earlier probes at ``rate``, at
        ``confidence`` (shared), and whether the queue ran away in the probe (in flight
        counted over ``before``, warm-up included, so that the probe's start is not
        mistaken for growth; tested at ``level``)."""
        return decide_probe(
            self.criteria,
            seen,
            before,
            rate,
            confidence=confidence,
            warmup_s=self.spec.warmup_s,
            queue_level=level,
            earlier=self._decided_at.get(rate, []),
        )

    def _drain(self) -> str:
        """Wait until the server's queue is empty, by its /metrics (bounded by the
        request timeout and the deadline); say how the drain ended."""
        until = min(self._deadline, time.monotonic() + self.template.timeout_s)
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.monotonic() < until:
                values = queue_depth(client, self.target.base_url)  # SGLang: /v1/loads
                if "waiting" not in values and "running" not in values:
                    return "no queue gauges: drained when every request had ended"
                if values.get("waiting", 0.0) + values.get("running", 0.0) <= 0:
                    return "server queue empty"
                time.sleep(DRAIN_POLL_S)
        return "drain cut short by the request timeout or the budget"


def _probe_records(run: Run, *, cutoff: float) -> list[RequestRecord]:
    """The probe phase's requests planned before ``cutoff`` (run seconds)."""
    return [r for r in run.records if r.phase == PROBE_PHASE and r.intended_s < cutoff]


async def _until_ended(records: Sequence[RequestRecord], limit_s: float | None) -> bool:
    """Wait until each record ended (or was never sent and never will be); False when
    ``limit_s`` passed first. Polled: the driver fills records in place, signalling none."""
    with anyio.move_on_after(math.inf if limit_s is None else limit_s):
        while any(r.end_s is None and not (r.sent_s is None and r.error) for r in records):  # noqa: ASYNC110
            await anyio.sleep(ENDED_POLL_S)
        return True
    return False
