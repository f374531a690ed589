"""``pytest-latency judge`` and ``report``: work with the runs of a saved ``--latency-json`` file.

``report`` renders the HTML report ``--latency-html`` writes (docs/reports.md).
``judge`` re-decides objectives: each run is judged from its ``requests`` alone
(summaries and verdicts stored in the file are not trusted) by
:func:`pytest_latency.analysis.objectives.decide_objectives`, the path the plugin
takes, at the plugin's confidence. Exit codes: 0 when no objective failed, 1 when one
did, 2 on a usage error (the reason on stderr, never a traceback). This module does not
import pytest: it serves CI jobs that only have the JSON."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_latency.analysis.baseline import (
    Baseline,
    load_baseline,
    mismatches,
    run_keys,
    stored_key,
)
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, objective_confidence
from pytest_latency.errors import BaselineKeyError
from pytest_latency.records import RequestRecord, RunFileError, StoredRun, read_runs, write_runs
from pytest_latency.report.evidence import format_estimate
from pytest_latency.report.json_report import objective_dict
from pytest_latency.spec.model import Objective, SpecError
from pytest_latency.spec.slo_yaml import load_objectives

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
            )


def invalid_reason(run: StoredRun) -> str | None:
    """Why a run cannot be trusted (the generator fell behind, it was cut short), if so."""
    if run.valid:
        return None
    generator = run.document.get("generator")
    if isinstance(generator, dict) and generator.get("valid") is False:
        reasons = [str(reason) for reason in generator.get("reasons") or []]
        return "; ".join(reasons) or "the load generator fell behind"
    why = run.document.get("interrupted_reason")
    return f"interrupted ({why})" if why else "interrupted"


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
    confidence = objective_confidence(len(objectives))
    return [
        JudgedRun(
            run.test,
            decide_objectives(
                objectives,
                run.records,
                confidence=confidence,
                baseline=stored,
                invalid_reason=invalid_reason(run),
            ),
            key,
            run.workload,
        )
        for run, stored, key in zip(runs, history, keys, strict=True)
    ]


def exit_code(judged: Sequence[JudgedRun]) -> int:
    """1 when any objective failed; inconclusive and invalid verdicts do not fail."""
    failed = any(result.verdict is Verdict.FAIL for run in judged for result in run.results)
    return EXIT_FAILED if failed else EXIT_OK


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


def write_judgement(path: Path, judged: Sequence[JudgedRun]) -> None:
    """``{"schema", "plugin_version", "runs": [{"test", ..., "objectives"}]}``, atomically.

    The judge's exit code ignores inconclusive verdicts: its policy is ``warn``.
    """
    write_runs(
        path,
        [
            {
                "test": run.test,
                "baseline_key": run.key or run.test,
                "outcome": run.outcome,
                "inconclusive_policy": "warn",
                "workload": run.workload,
                "objectives": [objective_dict(result) for result in run.results],
            }
            for run in judged
        ],
    )


def _judge(arguments: argparse.Namespace) -> int:
    try:
        objectives = load_objectives(arguments.objectives)
        runs = read_runs(arguments.run)
        baseline = load_baseline(arguments.baseline) if arguments.baseline else None
    except (SpecError, RunFileError) as error:
        raise UsageError(str(error)) from None
    if not runs:
        raise UsageError(f"{arguments.run}: holds no runs")
    judged = judge_runs(
        runs, objectives, baseline, allow_baseline_mismatch=arguments.allow_baseline_mismatch
    )
    print(format_table(judged))
    if arguments.json is not None:
        try:
            write_judgement(arguments.json, judged)
        except OSError as error:
            raise UsageError(f"{arguments.json}: cannot write ({error})") from None
    return exit_code(judged)


def _report(arguments: argparse.Namespace) -> int:
    """``pytest-latency report RUN.json --html OUT.html [--markdown OUT.md]``: the
    session's reports, from a file."""
    from pytest_latency.report.html import write_html_from_file
    from pytest_latency.report.markdown import write_markdown_from_file

    if arguments.html is None and arguments.markdown is None:
        raise UsageError("give --html OUT.html, --markdown OUT.md or both")
    template = arguments.trace_url
    if template is not None and "{trace_id}" not in template:
        raise UsageError(f"--trace-url {template!r}: must contain {{trace_id}}")
    try:
        runs = read_runs(arguments.run)
        baseline = load_baseline(arguments.baseline) if arguments.baseline else None
    except RunFileError as error:
        raise UsageError(str(error)) from None
    for path, write, kind in (
        (arguments.html, write_html_from_file, "HTML"),
        (arguments.markdown, write_markdown_from_file, "Markdown"),
    ):
        if path is None:
            continue
        try:
            write(path, runs, baseline, template)
        except OSError as error:
            raise UsageError(f"{path}: cannot write ({error})") from None
        print(f"{kind} report: {path} ({len(runs)} run(s))")
    return EXIT_OK


def _add_report(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="render the HTML report or Markdown summary of a --latency-json file",
        description="Render the reports --latency-html and --latency-markdown write from "
        "the runs of RUN.json. Exit 0: written; 2: usage error.",
    )
    report.add_argument("run", type=Path, metavar="RUN.json", help="a --latency-json file")
    report.add_argument("--html", type=Path, metavar="OUT.html", help="write the HTML report here")
    report.add_argument(
        "--markdown", type=Path, metavar="OUT.md", help="write the Markdown summary here"
    )
    report.add_argument(
        "--baseline",
        type=Path,
        metavar="BASE.json",
        help="overlay these baseline runs on relative objectives (matched by test id)",
    )
    report.add_argument(
        "--trace-url",
        metavar="TEMPLATE",
        help="link trace ids with this {trace_id} URL template (default: the run's own)",
    )


def _compare(arguments: argparse.Namespace) -> int:
    """``pytest-latency compare A.json B.json``: percentiles side by side, B/A."""
    import shutil

    from pytest_latency.analysis.samples import LATENCY_METRICS
    from pytest_latency.analysis.side_by_side import compare_runs
    from pytest_latency.report.compare_table import format_comparison

    metrics = [name.strip() for name in arguments.metrics.split(",") if name.strip()]
    unknown = [name for name in metrics if name not in LATENCY_METRICS]
    if unknown or not metrics:
        raise UsageError(f"--metrics: expected some of {', '.join(LATENCY_METRICS)}")
    try:
        ps = [float(text) for text in arguments.percentiles.split(",")]
    except ValueError:
        ps = []
    if not ps or not all(1 < p < 100 for p in ps):
        raise UsageError("--percentiles: numbers between 1 and 100, e.g. 50,90,95,99")
    try:
        a, b = load_baseline(arguments.a), load_baseline(arguments.b)
    except RunFileError as error:
        raise UsageError(str(error)) from None
    comparison = compare_runs(a.runs, b.runs, metrics, ps)
    if not comparison.tests:
        raise UsageError(
            f"no test is in both files ({arguments.a}: {', '.join(a.runs) or 'no runs'};"
            f" {arguments.b}: {', '.join(b.runs) or 'no runs'})"
        )
    width = arguments.width or shutil.get_terminal_size().columns
    print(format_comparison(comparison, width))
    return EXIT_OK


def _add_compare(commands: Any) -> None:
    compare = commands.add_parser(
        "compare",
        help="print two --latency-json files' percentiles side by side, with B/A",
        description="Per test in both files (the newest run of each) and per phase: each "
        "metric's percentiles in A and B and their ratio B/A. Descriptive: no bound, no "
        "verdict. Exit 0: printed; 2: usage error.",
    )
    compare.add_argument("a", type=Path, metavar="A.json", help="the reference run(s)")
    compare.add_argument("b", type=Path, metavar="B.json", help="the run(s) to compare with A")
    compare.add_argument(
        "--metrics", default="ttft,itl,e2e", metavar="LIST", help="default: ttft,itl,e2e"
    )
    compare.add_argument(
        "--percentiles", default="50,90,95,99", metavar="LIST", help="default: 50,90,95,99"
    )
    compare.add_argument(
        "--width", type=int, metavar="COLUMNS", help="table width (default: the terminal's)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-latency", description="Work with saved pytest-latency runs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    judge = commands.add_parser(
        "judge",
        help="re-decide the runs of a --latency-json file from their requests",
        description="Decide objectives on every run of RUN.json from its requests. "
        "Exit 0: no objective failed; 1: one failed; 2: usage error.",
    )
    judge.add_argument("run", type=Path, metavar="RUN.json", help="a --latency-json file")
    judge.add_argument(
        "--objectives",
        type=Path,
        required=True,
        metavar="FILE",
        help="YAML with an objectives: list (a whole *.slo.yaml works too)",
    )
    judge.add_argument(
        "--baseline",
        type=Path,
        metavar="BASE.json",
        help="a --latency-json file (or saved baseline) for max_regression objectives",
    )
    judge.add_argument(
        "--allow-baseline-mismatch",
        action="store_true",
        help="compare against a baseline that ran another workload or server",
    )
    judge.add_argument("--json", type=Path, metavar="OUT.json", help="write the verdicts here")
    _add_report(commands)
    _add_compare(commands)
    from pytest_latency.cli.images import add_images

    add_images(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pytest-latency`` console script; returns the exit code."""
    # argparse exits with 2 on its own usage errors, which is our usage code too.
    arguments = _parser().parse_args(argv)
    from pytest_latency.cli.images import build_command

    commands = {"report": _report, "compare": _compare, "images": build_command, "judge": _judge}
    try:
        return commands[arguments.command](arguments)
    except UsageError as error:
        print(f"pytest-latency {arguments.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
