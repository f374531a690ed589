"""``pytest-latency judge``, ``report`` and ``compare``: work with saved ``--latency-json`` files.

``report`` renders the HTML report ``--latency-html`` writes (docs/reports.md).
``judge`` re-decides objectives (:mod:`pytest_latency.cli.judge`): exit 0 when no
objective failed or is invalid, 1 when one did (or, with ``--fail-on inconclusive``, is
inconclusive), 2 on a usage error (the reason on stderr, never a traceback). A malformed
file is a usage error too, whatever is wrong with it, and no output may name an input's
file or another output's. This module does not import pytest: it serves CI jobs that
only have the JSON."""

from __future__ import annotations

import argparse
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_latency.analysis.baseline import load_baseline
from pytest_latency.cli.judge import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    exit_code,
    format_table,
    judge_runs,
    write_judgement,
)
from pytest_latency.cli.judge import JudgedRun as JudgedRun  # re-exported
from pytest_latency.cli.selection import add_test_option, paired_comparison, select_runs
from pytest_latency.file_format import clashing_paths
from pytest_latency.records import RunFileError, read_runs
from pytest_latency.spec.model import SpecError
from pytest_latency.spec.slo_yaml import load_objectives

FAIL_ON = ("inconclusive",)  # what --fail-on adds to fail and invalid
_MALFORMED = (TypeError, KeyError, AttributeError, IndexError, RecursionError, EOFError, zlib.error)


def _judge(arguments: argparse.Namespace) -> int:
    _refuse_clashes(
        [("RUN.json", arguments.run), ("OBJECTIVES", arguments.objectives),
         ("--baseline", arguments.baseline)],
        [("--json", arguments.json)],
    )  # fmt: skip
    try:
        objectives = load_objectives(arguments.objectives)
        runs = select_runs(read_runs(arguments.run), arguments.test, arguments.run)
        baseline = load_baseline(arguments.baseline) if arguments.baseline else None
    except (SpecError, RunFileError) as error:
        raise UsageError(str(error)) from None
    if not runs:
        raise UsageError(f"{arguments.run}: holds no runs")
    judged = judge_runs(
        runs, objectives, baseline, allow_baseline_mismatch=arguments.allow_baseline_mismatch
    )
    print(format_table(judged))
    fail_on = arguments.fail_on or []
    if arguments.json is not None:
        policy = "fail" if "inconclusive" in fail_on else "warn"
        try:
            write_judgement(arguments.json, judged, policy)
        except OSError as error:
            raise UsageError(f"{arguments.json}: cannot write ({error})") from None
    return exit_code(judged, fail_on)


def _report(arguments: argparse.Namespace) -> int:
    """``pytest-latency report RUN.json --html OUT.html [--markdown OUT.md] [--csv OUT.csv]``:
    the session's reports, from a file."""
    from pytest_latency.report.html import write_html_from_file
    from pytest_latency.report.markdown import write_markdown_from_file
    from pytest_latency.report.request_csv import write_csv_from_file

    if arguments.html is None and arguments.markdown is None and arguments.csv is None:
        raise UsageError("give --html OUT.html, --markdown OUT.md, --csv OUT.csv, or several")
    _refuse_clashes(
        [("RUN.json", arguments.run), ("--baseline", arguments.baseline)],
        [("--html", arguments.html), ("--markdown", arguments.markdown),
         ("--csv", arguments.csv)],
    )  # fmt: skip
    template = arguments.trace_url
    if template is not None and "{trace_id}" not in template:
        raise UsageError(f"--trace-url {template!r}: must contain {{trace_id}}")
    try:
        runs = select_runs(read_runs(arguments.run), arguments.test, arguments.run)
        baseline = load_baseline(arguments.baseline) if arguments.baseline else None
    except RunFileError as error:
        raise UsageError(str(error)) from None
    for path, write, kind in (
        (arguments.html, write_html_from_file, "HTML"),
        (arguments.markdown, write_markdown_from_file, "Markdown"),
        (arguments.csv, write_csv_from_file, "CSV"),
    ):
        if path is None:
            continue
        try:
            write(path, runs, baseline, template)
        except OSError as error:
            raise UsageError(f"{path}: cannot write ({error})") from None
        print(f"{kind} report: {path} ({len(runs)} run(s))")
    return EXIT_OK


def _refuse_clashes(
    inputs: list[tuple[str, Path | None]], outputs: list[tuple[str, Path | None]]
) -> None:
    """No output replaces an input or another output (checked before anything is read)."""
    clash = clashing_paths(inputs, outputs)
    if clash is not None:
        raise UsageError(clash)


def _add_report(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="render the HTML report, Markdown summary or CSV of a --latency-json file",
        description="Render the reports --latency-html, --latency-markdown and --latency-csv "
        "write from the runs of RUN.json. Exit 0: written; 2: usage error.",
    )
    report.add_argument("run", type=Path, metavar="RUN.json", help="a --latency-json file")
    report.add_argument("--html", type=Path, metavar="OUT.html", help="write the HTML report here")
    report.add_argument(
        "--markdown", type=Path, metavar="OUT.md", help="write the Markdown summary here"
    )
    report.add_argument(
        "--csv", type=Path, metavar="OUT.csv", help="write every request as a CSV row here"
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
    add_test_option(report)


def _compare(arguments: argparse.Namespace) -> int:
    """``pytest-latency compare A.json B.json``: percentiles side by side, B/A; with
    ``--as vllm|aiperf RUN.json``, one file's numbers by that peer's definitions."""
    import shutil

    if arguments.peer is not None:
        return _compare_as_peer(arguments)
    if arguments.b is None:
        raise UsageError("give two files, A.json B.json (or --as vllm|aiperf RUN.json)")

    from pytest_latency.analysis.samples import LATENCY_METRICS
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
    comparison, pairing = paired_comparison(a, b, metrics, ps, arguments.test)
    width = arguments.width or shutil.get_terminal_size().columns
    print(format_comparison(comparison, width))
    print("\n".join(pairing))
    return EXIT_OK


def _compare_as_peer(arguments: argparse.Namespace) -> int:
    from pytest_latency.report.peers_table import format_peer

    if arguments.b is not None:
        raise UsageError(
            f"--as {arguments.peer} reads one file, got {arguments.a} and {arguments.b}"
        )
    try:
        runs = read_runs(arguments.a)
    except RunFileError as error:
        raise UsageError(str(error)) from None
    if not runs:
        raise UsageError(f"{arguments.a}: holds no runs")
    print(format_peer(arguments.peer, runs))
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
    compare.add_argument(
        "b", type=Path, nargs="?", metavar="B.json", help="the run(s) to compare with A"
    )
    compare.add_argument(
        "--as",
        dest="peer",
        choices=("vllm", "aiperf"),
        help="print A's numbers by this peer's definitions and names instead (docs/metrics.md)",
    )
    compare.add_argument(
        "--metrics", default="ttft,itl,e2e", metavar="LIST", help="default: ttft,itl,e2e"
    )
    compare.add_argument(
        "--percentiles", default="50,90,95,99", metavar="LIST", help="default: 50,90,95,99"
    )
    compare.add_argument(
        "--width", type=int, metavar="COLUMNS", help="table width (default: the terminal's)"
    )
    add_test_option(compare)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-latency", description="Work with saved pytest-latency runs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    judge = commands.add_parser(
        "judge",
        help="re-decide the runs of a --latency-json file from their requests",
        description="Decide objectives on every run of RUN.json from its requests. "
        "Exit 0: no objective failed or is invalid; 1: one failed or is invalid (or, with "
        "--fail-on inconclusive, is inconclusive); 2: usage error.",
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
    judge.add_argument(
        "--fail-on",
        action="append",
        choices=FAIL_ON,
        metavar="VERDICT",
        help="also exit 1 on this verdict: inconclusive (fail and invalid always do)",
    )
    add_test_option(judge)
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
        try:
            return commands[arguments.command](arguments)
        except _MALFORMED as error:
            if arguments.command == "images":
                raise
            # Values of the wrong type deep in a saved file (``"phases": 5``): the file's
            # fault, said without a traceback, with the usage exit code.
            detail = f"{type(error).__name__}: {str(error)[:200]}"
            raise UsageError(
                str(RunFileError(f"a file given holds malformed data ({detail})"))
            ) from None
    except UsageError as error:
        print(f"pytest-latency {arguments.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
