"""How the session drives one plan: the target it sends to, the drive under telemetry's
watch, the span join, and why an interrupted run stopped (:mod:`.session` calls these).

Kept apart from :mod:`.session` (servers, runs, baselines, outcomes) so each stays small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_latency.plugin.interrupts import interrupt_reason
from pytest_latency.plugin.options import LatencyOptions
from pytest_latency.servers import ServerInfo
from pytest_latency.spec.model import Workload
from pytest_latency.telemetry.hub import TelemetryHub

if TYPE_CHECKING:
    from pytest_latency.driver import DriveResult, Target
    from pytest_latency.driver.genai_conventions import GenAiTarget
    from pytest_latency.driver.progress import ProgressListener
    from pytest_latency.plugin.rounds import Drive, Measured
    from pytest_latency.telemetry.join import JoinReport
    from pytest_latency.telemetry.prometheus import MetricsSeries
    from pytest_latency.workload import Plan


def request_options(workload: Workload) -> dict[str, object]:
    """Body fields that make outputs run to the fixed cap, on servers that accept them."""
    if not workload.ignore_eos:
        return {}
    return {"ignore_eos": True, "min_tokens": workload.output_tokens}


def run_target(
    options: LatencyOptions, info: ServerInfo, workload: Workload, trace_prefix: str | None = None
) -> Target:
    """Where the run sends, with the response limits and content keeping the flags set."""
    from pytest_latency.driver import ResponseLimits, Target
    from pytest_latency.driver.target import CONTINUOUS_USAGE_KINDS

    return Target(
        base_url=info.url,
        model=info.model,
        api=info.api,  # type: ignore[arg-type]
        extra_body=request_options(workload),
        api_key=info.api_key,
        limits=ResponseLimits(
            max_line_bytes=options.max_line_bytes,
            max_body_bytes=options.max_body_bytes,
        ),
        record_content=options.record_content,
        continuous_usage_stats=info.kind in CONTINUOUS_USAGE_KINDS,
        trace_prefix=trace_prefix,
    )


def drive_observed(
    telemetry: TelemetryHub,
    options: LatencyOptions,
    progress: ProgressListener | None,
    plan: Plan,
    target: Target,
    kind: str,
) -> tuple[BaseException | None, DriveResult, MetricsSeries | None]:
    """Run the plan while telemetry observes; Ctrl-C (or SIGTERM), or a test stopped
    mid-run (RunAborted), returns what was measured, also when Ctrl-C lands as the
    scraper stops, after the drive."""
    from pytest_latency.driver import RunAborted, RunInterrupted, run_plan

    interrupted: BaseException | None = None
    outcome: DriveResult | None = None
    observation = None
    try:
        with telemetry.observe(target.base_url, kind) as observation:
            try:
                outcome = run_plan(
                    plan,
                    target,
                    telemetry.client_spans,
                    workers=options.workers,
                    progress=progress,
                    ray_address=options.ray_address,
                    ray_workers=options.ray_workers,
                )
            except (RunInterrupted, RunAborted) as stop:  # keep what was measured
                interrupted, outcome = stop, stop.result
            observation.time_zero_ns = outcome.started_ns
    except KeyboardInterrupt as stop:
        if outcome is None:  # not from the drive: nothing measured to keep
            raise
        interrupted = interrupted or stop
    return interrupted, outcome, None if observation is None else observation.series


def join_spans(
    telemetry: TelemetryHub, options: LatencyOptions, outcome: DriveResult, info: ServerInfo
) -> tuple[JoinReport | None, KeyboardInterrupt | None]:
    """Server timings for the records; Ctrl-C while waiting for spans keeps the run."""
    expect_spans = info.exports_spans or options.otlp_receiver is not None
    try:
        return telemetry.join(outcome.records, expect_spans=expect_spans), None
    except KeyboardInterrupt as stop:  # the records are complete, only spans are missing
        return None, stop


def genai_target(target: Target) -> GenAiTarget:
    """The run's operation, model and server in the GenAI conventions' terms."""
    from pytest_latency.driver.genai_conventions import GenAiTarget

    return GenAiTarget.of(target.base_url, target.model, target.api == "chat")


def stop_reason(stop: BaseException) -> str:
    """The JSON's ``interrupted_reason``: Ctrl-C or SIGTERM, or what stopped the test."""
    from pytest_latency.driver import RunAborted
    from pytest_latency.driver.errors import exception_text

    if isinstance(stop, RunAborted):
        return f"interrupted (the test stopped mid-run: {exception_text(stop.cause)})"
    return f"interrupted ({interrupt_reason()})"


def drive_plan(
    telemetry: TelemetryHub,
    options: LatencyOptions,
    progress: ProgressListener | None,
    target: Target,
    info: ServerInfo,
) -> Drive:
    """How the session drives one plan (a whole run, or one round of it): observed by
    telemetry, then joined with the server's spans unless it was cut short."""

    from pytest_latency.plugin.rounds import Measured

    def drive(plan: Plan) -> Measured:
        interrupted, outcome, series = drive_observed(
            telemetry, options, progress, plan, target, info.kind
        )
        telemetry.export_client_metrics(outcome.records, genai_target(target))
        joined = None
        if interrupted is None:
            joined, interrupted = join_spans(telemetry, options, outcome, info)
        return Measured(
            workload=plan.workload,
            records=list(outcome.records),
            started_at_unix=outcome.started_at_unix,
            elapsed_s=outcome.elapsed_s,
            workers=list(outcome.workers),
            client=outcome.client,
            joined=joined,
            series=series,
            interrupted=interrupted,
        )

    return drive
