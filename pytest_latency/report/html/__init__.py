"""The HTML report (``--latency-html``, ``pytest-latency report``): one self-contained file.

Charts are SVG drawn in Python with a small inline script for hover cards and zoom, so
the file depends on nothing and fetches nothing (docs/reports.md).
:func:`write_html` renders a session's runs; :func:`write_html_from_file` renders the
runs of a saved ``--latency-json`` file through the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_latency.file_format import replacing
from pytest_latency.report.html.model import ReportRun

if TYPE_CHECKING:
    from pytest_latency.analysis.baseline import Baseline
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.records import StoredRun

__all__ = ("ReportRun", "render_html", "report_runs", "write_html", "write_html_from_file")


def render_html(runs: Sequence[ReportRun]) -> str:
    from pytest_latency.report.html.page import render_page

    return render_page(runs)


def report_runs(results: Sequence[LatencyResult]) -> list[ReportRun]:
    """A session's runs as the report reads them: the object ``--latency-json`` writes."""
    from pytest_latency.report.json_report import run_dict

    return [
        ReportRun.build(
            run_dict(result),
            result.records,
            [record for stored in result.baseline_runs or [] for record in stored],
            result.trace_url_template,
        )
        for result in results
    ]


def stored_report_runs(
    runs: Sequence[StoredRun], baseline: Baseline | None = None, trace_url: str | None = None
) -> list[ReportRun]:
    """Runs read from a file, each with its baseline runs (same key as ``judge``), if any."""
    from pytest_latency.analysis.baseline import run_keys

    built = []
    for run, key in zip(runs, run_keys([run.test for run in runs]), strict=True):
        history = baseline.runs.get(key, []) if baseline is not None else []
        pooled = [record for old in history for record in old.records]
        built.append(ReportRun.from_stored(run, pooled, trace_url))
    return built


def write_text_atomically(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` through a temporary file; the folder is created."""
    with replacing(path) as handle:
        handle.write(content)


def write_html(path: Path, results: Sequence[LatencyResult]) -> None:
    """The session's report, from the same run objects ``--latency-json`` writes."""
    write_text_atomically(path, render_html(report_runs(results)))


def write_html_from_file(
    path: Path,
    runs: Sequence[StoredRun],
    baseline: Baseline | None = None,
    trace_url: str | None = None,
) -> None:
    write_text_atomically(path, render_html(stored_report_runs(runs, baseline, trace_url)))
