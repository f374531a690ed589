"""One pytest session's latency state: started servers (reused across tests) and runs.

Cheap to import and to create: the driver, analysis (scipy) and baseline modules load
when a test first runs load, since the plugin creates a session in every pytest run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest

from pytest_latency._options import LatencyOptions
from pytest_latency.servers import ServerInfo, ServerStartError, start_server
from pytest_latency.servers.kinds import KindLookup, ServerKind, find_kind, unknown_kind
from pytest_latency.spec import ServerSpec, Workload
from pytest_latency.telemetry.hub import TelemetryHub, TelemetrySettings

if TYPE_CHECKING:
    from pytest_latency.baseline import Baseline
    from pytest_latency.driver import DriveResult, RunInterrupted, Target
    from pytest_latency.driver.progress import ProgressListener
    from pytest_latency.result import LatencyResult, SessionBudget
    from pytest_latency.telemetry.prometheus import MetricsSeries
    from pytest_latency.workload import Plan

RunListener = Callable[["LatencyResult"], None]


def _server_key(spec: ServerSpec) -> tuple[object, ...]:
    options = tuple(sorted((name, repr(value)) for name, value in spec.options.items()))
    return (spec.kind, spec.url, spec.model, spec.api, options, spec.image, spec.gpus)


def request_options(workload: Workload) -> dict[str, object]:
    """Body fields that make outputs run to the fixed cap, on servers that accept them."""
    if not workload.ignore_eos:
        return {}
    return {"ignore_eos": True, "min_tokens": workload.output_tokens}


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
            from pytest_latency.baseline import load_baseline

            self.baseline = load_baseline(options.baseline)
        self.saved_baseline: list[str] = []  # what --latency-save-baseline did, to print
        self.error_budget: SessionBudget | None = None
        if options.error_control == "session":
            from pytest_latency.result import SessionBudget

            self.error_budget = SessionBudget()
        self.telemetry = TelemetryHub(
            TelemetrySettings(
                receiver_address=options.otlp_receiver,
                export_endpoint=options.otlp_endpoint,
                grace_s=options.otlp_grace_s,
                metrics_interval_s=options.metrics_interval_s,
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
        return info

    def run(
        self,
        workload: Workload,
        *,
        test: str,
        server: ServerSpec | None = None,
        keep_seed: bool = False,
    ) -> LatencyResult:
        """Offer ``workload`` to the server open loop and return every request's record.

        ``--latency-seed`` replaces the workload's seed unless ``keep_seed`` (ABBA blocks
        carry seeds already derived from it).
        """
        from pytest_latency.analysis.health import check_generator
        from pytest_latency.driver import Target
        from pytest_latency.gate import enforce
        from pytest_latency.result import LatencyResult
        from pytest_latency.workload import build_plan

        if self.options.seed is not None and not keep_seed:
            workload = dataclasses.replace(workload, seed=self.options.seed)
        info = self.server(server)
        plan = build_plan(workload)
        target = Target(
            base_url=info.url,
            model=info.model,
            api=info.api,  # type: ignore[arg-type]
            extra_body=request_options(workload),
        )
        interrupted, outcome, series = self._drive(plan, target, info.kind)
        joined = None
        if interrupted is None:
            expect_spans = info.exports_spans or self.options.otlp_receiver is not None
            joined = self.telemetry.join(outcome.records, expect_spans=expect_spans)
        result = LatencyResult(
            test=test,
            server=info,
            workload=workload,
            records=outcome.records,
            started_at_unix=outcome.started_at_unix,
            elapsed_s=outcome.elapsed_s,
            inconclusive_policy=self.options.inconclusive,
            trace_url_template=self.options.trace_url,
            server_join=joined,
            server_metrics=series,
            health=check_generator(outcome.records, workload, max_lag_p99_s=self.options.max_lag_s),
            server_exit=info.exit_problem() if info.exit_problem is not None else None,
            interrupted=None if interrupted is None else "interrupted (Ctrl-C)",
        )
        result.gate = enforce
        result.error_budget = self.error_budget
        self._attach_baseline(result)
        self.runs.append(result)
        if interrupted is not None:
            raise interrupted  # the run is kept for the JSON (interrupted: true)
        if self._on_run is not None:
            self._on_run(result)
        return result

    def _drive(
        self, plan: Plan, target: Target, kind: str
    ) -> tuple[RunInterrupted | None, DriveResult, MetricsSeries | None]:
        """Run the plan while telemetry observes; Ctrl-C returns what was measured."""
        from pytest_latency.driver import RunInterrupted, run_plan

        interrupted: RunInterrupted | None = None
        with self.telemetry.observe(target.base_url, kind) as observation:
            try:
                outcome = run_plan(
                    plan,
                    target,
                    self.telemetry.client_spans,
                    workers=self.options.workers,
                    progress=self.progress,
                )
            except RunInterrupted as stop:  # keep what was measured, then stop pytest
                interrupted, outcome = stop, stop.result
            observation.time_zero_ns = outcome.started_ns
        return interrupted, outcome, observation.series

    def _attach_baseline(self, result: LatencyResult) -> None:
        """Give ``result`` its stored runs, or the reason they are not comparable."""
        if self.baseline is None:
            return
        from pytest_latency.baseline import mismatches, run_keys

        key = run_keys([*(run.test for run in self.runs), result.test])[-1]
        stored = self.baseline.runs.get(key)
        if not stored:
            known = ", ".join(self.baseline.keys()[:10]) or "none"
            result.baseline_problem = (
                f"{self.baseline.path} holds no run for {key!r} (it holds: {known})"
            )
            return
        server = result.server
        identity = {"kind": server.kind, "model": server.model, "api": server.api}
        differing = mismatches(stored[-1], result.workload.to_json(), identity)
        if differing and not self.options.allow_baseline_mismatch:
            result.baseline_problem = (
                f"{self.baseline.path}: the baseline of {key!r} ran another workload or server"
                f" ({'; '.join(differing)}); pass --latency-allow-baseline-mismatch to"
                " compare anyway"
            )
            return
        result.baseline_runs = [run.records for run in stored]

    def close(self) -> None:
        self._servers.clear()
        try:
            self._stack.close()
        finally:
            self.telemetry.close()


SESSION_KEY = pytest.StashKey[LatencySession]()
