"""``pytest-latency judge``: re-decide the runs of a saved ``--latency-json`` file.

Each run is judged from its ``requests`` alone (summaries and verdicts stored in the
file are not trusted) by :func:`pytest_latency.analysis.objectives.decide_objectives`,
the path the plugin takes, at the plugin's confidence. A run that measured no server
(:mod:`pytest_latency.analysis.infrastructure`: it went away, exited, or one error
failed most requests), fell behind its schedule or was cut short is invalid. Exit
codes: 0 when no objective failed or is invalid, 1 when one did (or, with
``--fail-on inconclusive``, is inconclusive), 2 on a usage error.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_latency.analysis.baseline import Baseline, mismatches, run_keys, stored_key
from pytest_latency.analysis.infrastructure import classify
from pytest_latency.analysis.looks import stored_final_confidence
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.runaway import counted_tests
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, objective_confidence
from pytest_latency.errors import BaselineKeyError, SpecError
from pytest_latency.records import RequestRecord, StoredRun, write_runs
from pytest_latency.report.evidence import format_estimate
from pytest_latency.report.json_report import objective_dict
from pytest_latency.spec.checks import did_you_mean
from pytest_latency.spec.model import Objective, Phase, Workload

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
TABLE_WIDTH = 100
_VERDICT_COLUMN = 15  # "  inconclusive " and the text after it lines up


class UsageError(Exception):
    """The command cannot judge: a bad file, an unknown phase, an unusable baseline."""


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """One run's decided objectives."""

    test: str
    results: list[ObjectiveResult]
    key: str = ""  # its baseline key
    workload: dict[str, Any] | None = None  # as the run file recorded it

    @property
    def outcome(self) -> str:
        """failed, error (an invalid run), inconclusive or passed, as the plugin says."""
        verdicts = {result.verdict for result in self.results}
        for verdict, outcome in _OUTCOMES:
            if verdict in verdicts:
                return outcome
        return "passed"


_OUTCOMES = (
    (Verdict.INVALID, "error"),
    (Verdict.FAIL, "failed"),
    (Verdict.INCONCLUSIVE, "inconclusive"),
)


def run_phases(run: StoredRun) -> list[str]:
    """The phases a run planned (its workload), else those its requests name."""
    planned = (run.workload or {}).get("phases")
    if isinstance(planned, list):
        names = [phase.get("name") for phase in planned if isinstance(phase, dict)]
        if names and all(isinstance(name, str) for name in names):
            return [str(name) for name in names]
    return sorted({record.phase for record in run.records})


def check_phases(run: StoredRun, objectives: Sequence[Objective]) -> None:
    """An objective about a phase the run does not have is a usage error."""
    phases = run_phases(run)
    for objective in objectives:
        if objective.phase is not None and objective.phase not in phases:
            raise UsageError(
                f"{objective.label}: unknown phase {objective.phase!r};"
                f" run {run.test!r} has: {', '.join(phases) or 'no phases'}"
                + did_you_mean(objective.phase, phases)
                + " (judge only some runs with --test PATTERN)"
            )


def invalid_reason(run: StoredRun) -> str | None:
    """Why a run cannot be trusted, if so, in the plugin's order of precedence: it was
    cut short, it measured no server (the infrastructure headline), the load generator
    fell behind."""
    reason = None
    generator = run.document.get("generator")
    if isinstance(generator, dict) and generator.get("valid") is False:
        reasons = [str(reason) for reason in generator.get("reasons") or []]
        reason = "; ".join(reasons) or "the load generator fell behind"
    server = run.document.get("server")
    exited = server.get("exited_during_run") if isinstance(server, dict) else None
    failure = classify(run.records, exited if isinstance(exited, str) else None)
    if failure is not None:
        reason = failure.headline
    if run.document.get("interrupted"):
        why = run.document.get("interrupted_reason")
        reason = f"interrupted ({why})" if why else "interrupted"
    return reason


def baseline_runs(
    run: StoredRun, key: str, baseline: Baseline, allow_mismatch: bool
) -> list[list[RequestRecord]]:
    """The records of every stored run under ``key`` (the history), if comparable."""
    try:
        stored = baseline.lookup(key)
    except BaselineKeyError as error:
        raise UsageError(str(error)) from None
    differing = mismatches(stored[-1], run.workload or {}, run.server)
    if differing and not allow_mismatch:
        raise UsageError(
            f"{baseline.path}: the baseline of {key!r} ran another workload or server"
            f" ({'; '.join(differing)}); pass --allow-baseline-mismatch to compare anyway"
        )
    return [old.records for old in stored]


def judge_runs(
    runs: Sequence[StoredRun],
    objectives: Sequence[Objective],
    baseline: Baseline | None = None,
    *,
    allow_baseline_mismatch: bool = False,
) -> list[JudgedRun]:
    """Decide ``objectives`` on every run; UsageError before deciding anything if unusable.

    The confidence is the plugin's: 0.99 shared by the objectives of one file, as the
    plugin shares it across one assert's objectives.
    """
    relative = any(objective.relative for objective in objectives)
    if relative and baseline is None:
        raise UsageError("relative objectives (max_regression) need --baseline BASE.json")
    history: list[list[list[RequestRecord]] | None] = []
    keys = [
        stored_key(run.document, key)
        for run, key in zip(runs, run_keys([run.test for run in runs]), strict=True)
    ]
    for run, key in zip(runs, keys, strict=True):
        check_phases(run, objectives)
        if relative and baseline is not None:
            history.append(baseline_runs(run, key, baseline, allow_baseline_mismatch))
        else:
            history.append(None)
    confidence = objective_confidence(counted_tests(objectives))
    return [
        JudgedRun(
            run.test,
            decide_objectives(
                objectives,
                run.records,
                confidence=run_confidence(run, confidence),
                baseline=stored,
                invalid_reason=invalid_reason(run),
                workload=stored_timeline(run),
            ),
            key,
            run.workload,
        )
        for run, stored, key in zip(runs, history, keys, strict=True)
    ]


def run_confidence(run: StoredRun, confidence: float) -> float:
    """The confidence the plugin decided ``run`` at: for a run extended ``until_decided``,
    its last look's share of ``confidence`` (analysis/looks.py), else ``confidence``."""
    document = run.document
    return stored_final_confidence(document.get("until_decided"), document.get("looks"), confidence)


def stored_timeline(run: StoredRun) -> Workload | None:
    """The run's phases, episodes and cool-downs from its saved workload: what the plugin
    places records on (a recovery's burst end) and sizes "what would decide it" from.
    Only the timeline: prompts, prefixes, sessions and traces are not rebuilt (a trace
    phase keeps its recorded rate and duration). None when the file has no usable one."""
    saved = run.workload
    if not saved:
        return None
    try:
        phases = tuple(
            Phase(
                str(phase["name"]),
                float(phase["rate"]),
                float(phase["duration_s"]),
                "constant" if phase.get("arrival") == "trace" else phase.get("arrival", "poisson"),
                float(phase.get("burstiness", 1.0)),
                phase.get("rate_to"),
            )
            for phase in saved["phases"]
        )
        return Workload(
            phases, repeat=int(saved.get("repeat", 1)), cooldown_s=float(saved.get("cooldown_s", 0))
        )
    except (KeyError, TypeError, ValueError, SpecError):
        return None  # an older or hand-made file: judged without the timeline


FAILING = frozenset({Verdict.FAIL, Verdict.INVALID})


def exit_code(judged: Sequence[JudgedRun], fail_on: Collection[str] = ()) -> int:
    """1 when any objective failed or is invalid (nothing invalid reads as green), or
    has a verdict named in ``fail_on`` (``inconclusive``); else 0."""
    failing = FAILING | {Verdict(verdict) for verdict in fail_on}
    verdicts = {result.verdict for run in judged for result in run.results}
    return EXIT_FAILED if verdicts & failing else EXIT_OK


def format_table(judged: Sequence[JudgedRun], width: int = TABLE_WIDTH) -> str:
    """Per run its test, then per objective: verdict and label, evidence, reason."""
    indent = " " * _VERDICT_COLUMN
    wrapper = textwrap.TextWrapper(width, initial_indent=indent, subsequent_indent=indent + "  ")
    lines: list[str] = []
    for run in judged:
        lines.append(run.test)
        for result in run.results:
            verdict = result.verdict.value.upper()
            lines.append(f"  {verdict:<{_VERDICT_COLUMN - 3}} {result.objective.label}")
            for text in (format_estimate(result), result.reason, *result.warnings):
                lines.extend(wrapper.wrap(text))
    counts = {verdict: 0 for verdict in Verdict}
    for run in judged:
        for result in run.results:
            counts[result.verdict] += 1
    tally = ", ".join(f"{count} {verdict.value}" for verdict, count in counts.items())
    lines.append(f"judged {len(judged)} run(s): {tally}")
    return "\n".join(lines)


def write_judgement(path: Path, judged: Sequence[JudgedRun], policy: str = "warn") -> None:
    """``{"schema", "plugin_version", "runs": [{"test", ..., "objectives"}]}``, atomically.

    ``policy``: what the exit code made of inconclusive verdicts, ``warn`` (nothing) or
    ``fail`` (``--fail-on inconclusive``).
    """
    write_runs(
        path,
        [
            {
                "test": run.test,
                "baseline_key": run.key or run.test,
                "outcome": run.outcome,
                "inconclusive_policy": policy,
                "workload": run.workload,
                "objectives": [objective_dict(result) for result in run.results],
            }
            for run in judged
        ],
    )
