"""One pytest session's latency state: started servers (reused across tests) and runs.

Cheap to import and to create: the driver, analysis (scipy) and baseline modules load
when a test first runs load, since the plugin creates a session in every pytest run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest

from pytest_latency.plugin.options import LatencyOptions
from pytest_latency.plugin.run_ledger import attach_baseline, baseline_problem, worst_outcome
from pytest_latency.plugin.session_drive import drive_plan, run_target, stop_reason
from pytest_latency.servers import ServerInfo, ServerStartError, start_server
from pytest_latency.servers.kinds import KindLookup, ServerKind, find_kind, unknown_kind
from pytest_latency.spec.model import Objective, ServerSpec, SpecError, Workload
from pytest_latency.telemetry.hub import TelemetryHub, TelemetrySettings

if TYPE_CHECKING:
    from pytest_latency.analysis.baseline import Baseline
    from pytest_latency.analysis.planning import ObjectivePower
    from pytest_latency.analysis.result import LatencyResult, SessionBudget
    from pytest_latency.driver.progress import ProgressListener
    from pytest_latency.plugin.gate import Locate
    from pytest_latency.plugin.rounds import Measured
    from pytest_latency.spec.capacity import CapacitySpec

RunListener = Callable[["LatencyResult"], None]


def _server_key(spec: ServerSpec) -> tuple[object, ...]:
    options = tuple(sorted((name, repr(value)) for name, value in spec.options.items()))
    return (spec.kind, spec.url, spec.model, spec.api, options, spec.image, spec.gpus)


class LatencySession:
    """Starts each distinct server once, runs workloads, and keeps every result."""

    def __init__(
        self,
        options: LatencyOptions,
        on_run: RunListener | None = None,
        kind_hook: KindLookup | None = None,
        progress: ProgressListener | None = None,
    ) -> None:
        """``kind_hook``: the ``pytest_latency_server_kind`` hook, asked for a kind's
        name before the built-in kinds; ``progress`` hears each run's progress."""
        self.options = options
        self.progress = progress
        self._kind_hook = kind_hook
        self.runs: list[LatencyResult] = []
        self._on_run = on_run
        self._servers: dict[tuple[object, ...], ServerInfo] = {}
        self._failed_starts: dict[tuple[object, ...], ServerStartError] = {}
        self._stack = ExitStack()
        self.baseline: Baseline | None = None
        if options.baseline:
            from pytest_latency.analysis.baseline import load_baseline

            self.baseline = load_baseline(options.baseline)
        self.output_lines: list[str] = []  # what writing --latency-json and the baseline did
        self.run_nodes: list[str] = []  # the pytest test of each run, as ``runs``
        self.test_outcomes: dict[str, str] = {}  # pytest node id -> passed/failed/error
        self._nodes_with_runs: set[str] = set()
        self._key_owners: dict[str, str] = {}  # baseline key -> the test that uses it
        self._run_key_bases: list[str] = []  # each run's key before numbering
        self.error_budget: SessionBudget | None = None
        if options.error_control == "session":
            from pytest_latency.analysis.result import SessionBudget

            self.error_budget = SessionBudget()
        self.telemetry = TelemetryHub(
            TelemetrySettings(
                receiver_address=options.otlp_receiver,
                export_endpoint=options.otlp_endpoint,
                grace_s=options.otlp_grace_s,
                metrics_interval_s=options.metrics_interval_s,
                token=options.otlp_token,
            )
        )
        if options.otlp_receiver is not None:
            # Listen from the start: a server the user pointed here exports during the
            # run, and spans sent to a port nobody listens on are lost.
            self.telemetry.start_receiver()

    def resolve(self, spec: ServerSpec | None) -> ServerSpec:
        """A spec file's server, unless ``--latency-server`` was given explicitly."""
        chosen = self.options.server if spec is None or self.options.server_explicit else spec
        flags: dict[str, str | None] = {"model": self.options.model}
        if chosen.kind == self.options.server.kind:
            # --latency-image/--latency-gpus go with --latency-server's kind: a vLLM
            # image must not land on a spec file's embedded server.
            flags |= {"image": self.options.image, "gpus": self.options.gpus}
        missing = {
            name: value for name, value in flags.items() if value and not getattr(chosen, name)
        }
        key_env = self.options.api_key_env
        if chosen.kind == "url" and key_env and "api_key_env" not in chosen.options:
            missing["options"] = {**chosen.options, "api_key_env": key_env}  # type: ignore[assignment]
        return dataclasses.replace(chosen, **missing) if missing else chosen  # type: ignore[arg-type]

    def kind(self, name: str) -> ServerKind | None:
        """The server kind called ``name``: a plugin's or conftest's first, then built-in."""
        if name == "url":
            return None
        found = find_kind(name, self._kind_hook)
        if found is None:
            raise ServerStartError(unknown_kind(name))
        return found

    def server(self, spec: ServerSpec | None = None) -> ServerInfo:
        """The running server for ``spec`` (started once per session), checked ready."""
        __tracebackhide__ = True
        resolved = self.resolve(spec)
        kind = self.kind(resolved.kind)
        if (
            kind is not None
            and kind.exports_spans
            and "otlp_traces_endpoint" not in resolved.options
        ):
            # Kinds that export OTLP/HTTP (the embedded server, vLLM) send spans here.
            options = {
                **resolved.options,
                "otlp_traces_endpoint": self.telemetry.receiver.traces_url,
            }
            resolved = dataclasses.replace(resolved, options=options)
        key = _server_key(resolved)
        if key in self._failed_starts:  # one failed start per session, not one per test
            raise ServerStartError(
                f"{self._failed_starts[key]} (failed earlier in this session; not retried)"
            )
        if key not in self._servers:
            try:
                self._servers[key] = self._stack.enter_context(start_server(resolved, kind))
            except ServerStartError as error:
                self._failed_starts[key] = error
                raise
        info = self._servers[key]
        gone = info.exit_problem() if info.exit_problem is not None else None
        if gone is not None:  # died during an earlier test: say so, do not measure a corpse
            raise ServerStartError(
                f"the {info.kind} server started for this session is gone: {gone}"
            )
        return self._preflight(key, info)

    def _preflight(self, key: tuple[object, ...], info: ServerInfo) -> ServerInfo:
        """Check the server answers before anything is measured; learn its model."""
        __tracebackhide__ = True
        from pytest_latency.servers.preflight import check_ready

        model = check_ready(info.url, info.model or None, info.api, api_key=info.api_key)
        if model != info.model:
            info = self._servers[key] = dataclasses.replace(info, model=model)
        return info

    def check_plan(
        self,
        workload: Workload,
        objectives: Sequence[Objective],
        *,
        test: str,
        keep_seed: bool = False,
        sent: bool = False,
        locate: Locate | None = None,
    ) -> list[ObjectivePower]:
        """Raise UndecidablePlan when the plan cannot decide an objective (too few requests,
        or a burst with too few episodes): a warning with --latency-allow-undecidable, at
        the objective's line from ``locate`` or the test's; ``sent``: it ran already."""
        __tracebackhide__ = True
        from pytest_latency.analysis.bursts import check_power
        from pytest_latency.analysis.planning import require_power

        workload = self.until_decided(self._seeded(workload, keep_seed), objectives)
        powers = check_power(workload, objectives, self._objective_confidence(objectives))
        allowed = self.options.allow_undecidable
        message = require_power(powers, test, allowed=allowed, sent=sent)
        if message is not None:
            from pytest_latency.errors import LatencyUndecidableWarning
            from pytest_latency.plugin.gate import warn_at

            first = next(power.objective for power in powers if not power.decidable)
            warn_at(LatencyUndecidableWarning, message, first, locate)
        return powers

    def _objective_confidence(self, objectives: Sequence[Objective]) -> float:
        """Each of the next ``objectives``' confidence (not taken from the budget)."""
        from pytest_latency.analysis.objectives import planned_confidence

        budget = self.error_budget
        return planned_confidence(objectives, None if budget is None else budget.decided)

    def until_decided(self, workload: Workload, objectives: Sequence[Objective]) -> Workload:
        """``workload`` with ``--latency-until-decided`` as its default budget."""
        from pytest_latency.plugin.rounds import with_budget

        return with_budget(workload, objectives, self.options.until_decided_s)

    def _seeded(self, workload: Workload, keep_seed: bool) -> Workload:
        """``workload`` with ``--latency-seed``, unless ``keep_seed`` (ABBA blocks)."""
        if self.options.seed is None or keep_seed:
            return workload
        return dataclasses.replace(workload, seed=self.options.seed)

    def run(
        self,
        workload: Workload,
        *,
        test: str,
        server: ServerSpec | None = None,
        keep_seed: bool = False,
        key: str | None = None,
        node: str | None = None,
        objectives: Sequence[Objective] = (),
    ) -> LatencyResult:
        """Offer ``workload`` to the server open loop and return every request's record.

        ``--latency-seed`` replaces the workload's seed unless ``keep_seed`` (ABBA blocks
        carry seeds already derived from it). ``key`` is the run's baseline key before
        numbering (:mod:`pytest_latency.keys`; default ``test``); ``node`` the pytest
        test whose outcome is the run's when it decides no objective (default ``test``);
        ``objectives`` what an ``until_decided`` run judges after each round."""
        __tracebackhide__ = True
        workload = self.until_decided(self._seeded(workload, keep_seed), objectives)
        baseline_key = self.next_key(key or test, node or test)  # before any load is sent
        info = self.server(server)
        measured = self._measure(workload, objectives, info)
        result = self._result(workload, measured, info, test)
        result.baseline_key = baseline_key
        attach_baseline(self.baseline, self.options, result)
        self._keep(result, node or test, key or test)
        if measured.interrupted is not None:  # the run is kept for the JSON (interrupted: true)
            raise getattr(measured.interrupted, "cause", measured.interrupted)
        if self._on_run is not None:
            self._on_run(result)
        return result

    def _measure(
        self, workload: Workload, objectives: Sequence[Objective], info: ServerInfo
    ) -> Measured:
        """Drive the workload once, or in rounds until decided (plugin/rounds.py)."""
        from pytest_latency.plugin.rounds import Rounds, fresh_plan

        target = run_target(self.options, info, workload, self.telemetry.trace_prefix)
        drive = drive_plan(self.telemetry, self.options, self.progress, target, info)
        if workload.until_decided_s is None:
            return drive(fresh_plan(workload))
        confidence = self._objective_confidence(objectives)
        rounds = Rounds(
            drive, workload, objectives, confidence=confidence, max_lag_s=self.options.max_lag_s
        )
        return rounds.run()

    def _result(
        self, workload: Workload, measured: Measured, info: ServerInfo, test: str
    ) -> LatencyResult:
        """The run's result, with the gate and the after-run plan check wired in."""
        from pytest_latency.analysis.result import LatencyResult
        from pytest_latency.plugin.gate import enforce

        result = LatencyResult(
            test=test,
            server=info,
            workload=measured.workload,
            records=measured.records,
            started_at_unix=measured.started_at_unix,
            elapsed_s=measured.elapsed_s,
            inconclusive_policy=self.options.inconclusive,
            summary_percentiles=self.options.percentiles,
            trace_url_template=self.options.trace_url,
            server_join=measured.joined,
            server_metrics=measured.series,
            health=measured.health(self.options.max_lag_s),
            server_exit=info.exit_problem() if info.exit_problem is not None else None,
            interrupted=None if measured.interrupted is None else stop_reason(measured.interrupted),
            until_decided=measured.until_decided,
        )
        result.gate = enforce
        result.error_budget = self.error_budget
        result.plan_check = lambda objectives: self.check_plan(
            workload, objectives, test=test, keep_seed=True, sent=True
        )
        return result

    def run_capacity(
        self,
        template: Workload,
        spec: CapacitySpec,
        criteria: Sequence[Objective],
        *,
        test: str,
        server: ServerSpec | None = None,
        key: str | None = None,
    ) -> LatencyResult:
        """Search the capacity with live probes (docs/capacity.md): one run for the reports,
        its bracket in ``result.capacity``; each probe decides ``criteria``."""
        from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE
        from pytest_latency.plugin.capacity_run import LiveSearch, ProbeTelemetry
        from pytest_latency.plugin.capacity_timeline import capacity_result
        from pytest_latency.plugin.gate import enforce

        if template.until_decided_s is not None:
            raise SpecError(
                "until_decided does not apply to a capacity search: each probe is decided"
                " at its own looks within the search's budget; remove until_decided"
            )
        template = self._seeded(template, keep_seed=False)
        baseline_key = self.next_key(key or test, test)
        info = self.server(server)
        # Observed like any run: trace context, /metrics, the join with server spans.
        expect_spans = info.exports_spans or self.options.otlp_receiver is not None
        search = LiveSearch(
            spec,
            template,
            criteria,
            run_target(self.options, info, template, self.telemetry.trace_prefix),
            confidence=DEFAULT_CONFIDENCE,
            telemetry=ProbeTelemetry(self.telemetry, info.kind, expect_spans),
        )
        interrupted: KeyboardInterrupt | None = None
        try:
            found = search.search()
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: keep the probes so far
            interrupted, found = stop, search.interrupted(stop_reason(stop))
        result = capacity_result(
            search, found, test=test, server=info, inconclusive_policy=self.options.inconclusive,
            interrupted=None if interrupted is None else stop_reason(interrupted),
            summary_percentiles=self.options.percentiles, trace_url_template=self.options.trace_url,
        )  # fmt: skip
        result.gate, result.error_budget, result.baseline_key = (
            enforce,
            self.error_budget,
            baseline_key,
        )
        self._keep(result, test, key or test)
        if interrupted is not None:
            raise interrupted  # the search is kept for the JSON (interrupted: true)
        if self._on_run is not None:
            self._on_run(result)
        return result

    def _keep(self, result: LatencyResult, node: str, key: str) -> None:
        """Add a finished (or interrupted) run to the session's runs, for the reports."""
        self.runs.append(result)
        self.run_nodes.append(node)
        self._nodes_with_runs.add(node)
        self._run_key_bases.append(key)

    def next_key(self, key: str, node: str) -> str:
        """The baseline key of ``node``'s next run: ``key``, numbered after earlier runs.

        SpecError when another test already uses ``key`` (two tests given one id).
        """
        from pytest_latency.keys import numbered

        owner = self._key_owners.setdefault(key, node)
        if owner != node:
            raise SpecError(
                f"baseline key {key!r} is used by two tests, {owner} and {node}: give each"
                " its own id"
            )
        return numbered([*self._run_key_bases, key])[-1]

    def baseline_problem(self, key: str) -> str | None:
        """Why relative objectives of the run keyed ``key`` cannot be decided, if so."""
        return baseline_problem(self.baseline, self.options, key)

    def note_outcome(self, node: str, outcome: str) -> None:
        """Keep the worst outcome of a test that ran load: passed < inconclusive (skipped)
        < failed < error. A run that decides no objective reports its test's."""
        if node not in self._nodes_with_runs:
            return
        self.test_outcomes[node] = worst_outcome(self.test_outcomes.get(node, "passed"), outcome)

    def outcomes(self) -> list[str]:
        """Each run's outcome (report/json_report.py ``run_outcome``), as ``runs``."""
        from pytest_latency.report.json_report import run_outcome

        return [
            run_outcome(run, self.test_outcomes.get(node))
            for run, node in zip(self.runs, self.run_nodes, strict=True)
        ]

    def stop_servers(self) -> None:
        """Stop every server this session started (containers removed); idempotent."""
        self._servers.clear()
        self._stack.close()

    def close(self) -> None:
        try:
            self.stop_servers()
        finally:
            self.telemetry.close()


SESSION_KEY = pytest.StashKey[LatencySession]()
