"""The session's files: ``--latency-json``, ``--latency-html``, ``--latency-csv``,
``--latency-markdown`` (and ``$GITHUB_STEP_SUMMARY``), and ``--latency-save-baseline``.

Their paths are checked when pytest configures (:func:`path_problem`), so a typo costs
no load run; they are written when the session finishes (:func:`write_session_files`),
where a failure is a line of the summary and a failed session, never a traceback, and a
baseline that is not saved says why. Importing this module costs nothing: the JSON
report (numpy, scipy) loads when the files are written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_latency.plugin.options import LatencyOptions
    from pytest_latency.plugin.session import LatencySession


def output_paths_problem(options: LatencyOptions) -> str | None:
    """What is wrong with the report paths the flags name, for a usage error; or None.

    An existing ``--latency-save-baseline`` file must be a run file: saving merges into
    it, and an unreadable one would only be found after the whole load. No two outputs
    may name one file (the last written would win silently), nor may an output name the
    ``--latency-baseline`` it reads.
    """
    for flag, path in (
        ("--latency-json", options.json_path),
        ("--latency-save-baseline", options.save_baseline),
        ("--latency-html", options.html_path),
        ("--latency-csv", options.csv_path),
        ("--latency-markdown", options.markdown_path),
    ):
        problem = path_problem(path) if path is not None else None
        if problem:
            return f"{flag} {path}: {problem}"
    from pytest_latency.file_format import clashing_paths

    clash = clashing_paths(
        [("--latency-baseline", options.baseline)],
        [
            ("--latency-json", options.json_path),
            ("--latency-html", options.html_path),
            ("--latency-csv", options.csv_path),
            ("--latency-markdown", options.markdown_path),
        ],
    ) or clashing_paths(
        [],  # saving merges into --latency-baseline's file when they are one: allowed
        [
            ("--latency-json", options.json_path),
            ("--latency-html", options.html_path),
            ("--latency-csv", options.csv_path),
            ("--latency-markdown", options.markdown_path),
            ("--latency-save-baseline", options.save_baseline),
        ],
    )
    if clash is not None:
        return clash
    save, compared = options.save_baseline, options.baseline
    if save is None or not save.is_file():
        return None
    if compared is not None and save.resolve() == compared.resolve():
        return None  # read (and checked) as --latency-baseline already
    from pytest_latency.errors import RunFileError
    from pytest_latency.records import read_runs

    try:
        read_runs(save)
    except RunFileError as error:
        return (
            f"--latency-save-baseline: {error}; saving merges into an existing file,"
            " so move it away or choose another path"
        )
    return None


def path_problem(path: Path) -> str | None:
    """Why a report could not be written to ``path`` at the end of the session, if so.

    The parent folder must exist and take a new file, or be creatable (its nearest
    existing ancestor is a writable folder). Nothing is left behind by the check.
    """
    target = path.absolute()
    if target.is_dir():
        return f"{path} is a folder; give a file name"
    folder = target.parent
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        if existing == folder:
            return f"{folder} is not a folder"
        return f"{existing} is not a folder, so {folder} cannot be created"
    if existing != folder:
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"cannot create {folder}: {existing} is not writable"
        return None
    try:  # the real test: access() says yes to root on a read-only mount in some setups
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".pytest-latency-", suffix=".probe")
    except OSError as error:
        return f"cannot write in {folder} ({error.strerror or error})"
    os.close(handle)
    os.unlink(probe)
    return None


def write_session_files(session: LatencySession) -> tuple[list[str], bool]:
    """Write the JSON, the reports and the baseline the flags asked for.

    Returns the lines to print and whether a write failed (the session then fails).
    """
    options = session.options
    lines: list[str] = []
    failed = False
    for what, path, write in (
        ("JSON", options.json_path, _write_json),
        ("HTML", options.html_path, _write_html),
        ("CSV", options.csv_path, _write_csv),
    ):
        if path is None:
            continue
        try:
            write(path, session)
            lines.append(f"latency {what}: {path} ({len(session.runs)} run(s))")
        except (OSError, ValueError) as error:
            lines.append(f"latency {what}: could not write {path} ({error}); the session fails")
            failed = True
    if options.markdown_path is not None or (session.runs and os.environ.get(STEP_SUMMARY)):
        try:
            _write_markdown(options.markdown_path, session)
            if options.markdown_path is not None:
                lines.append(f"latency Markdown: {options.markdown_path}")
        except (OSError, ValueError) as error:
            lines.append(f"latency Markdown: could not write ({error}); the session fails")
            failed = True
    if options.save_baseline is not None:
        baseline_lines, baseline_failed = _save_baseline(options.save_baseline, session)
        lines += baseline_lines
        failed = failed or baseline_failed
    return lines, failed


STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # GitHub Actions' job summary file, appended to


def _write_json(path: Path, session: LatencySession) -> None:
    from pytest_latency.report.json_report import write_json

    write_json(path, session.runs, session.outcomes())


def _write_html(path: Path, session: LatencySession) -> None:
    from pytest_latency.report.html import write_html

    write_html(path, session.runs)


def _write_csv(path: Path, session: LatencySession) -> None:
    from pytest_latency.report.request_csv import CsvRun, write_requests_csv

    write_requests_csv(
        path, (CsvRun(run.test, run.baseline_key, run.records) for run in session.runs)
    )


def _write_markdown(path: Path | None, session: LatencySession) -> None:
    from pytest_latency.report.markdown import write_session_markdown

    write_session_markdown(session.runs, path)


def _save_baseline(path: Path, session: LatencySession) -> tuple[list[str], bool]:
    from pytest_latency.errors import RunFileError
    from pytest_latency.report.json_report import save_baseline

    try:
        return save_baseline(
            path, session.runs, session.options.baseline_history, session.outcomes()
        ), False
    except RunFileError as error:
        return [f"latency baseline {path}: not saved, the file is left as is ({error})"], True
    except (OSError, ValueError) as error:
        return [f"latency baseline {path}: could not write ({error}); the session fails"], True
