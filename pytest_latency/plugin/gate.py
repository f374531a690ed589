"""Turning objective results into a test outcome, by the ``--latency-inconclusive`` policy.

A run that decides nothing raises first, whatever the policy: it measured no server
(:class:`LatencyInfrastructureError`, with the evidence) or its generator fell behind
(:class:`LatencyRunInvalid`).

Where things print, so that each prints once: every verdict in full, and the diagnosis,
in the latency summary; a failed test's message names its failed objectives first (the
line pytest's short summary shows) and their slowest requests; warnings carry what the
summary does not: that an undecided objective let the test pass, and a comparison's
caveats. Warnings point at the user's line: the objective's line in its ``*.slo.yaml``,
or the line of the test that called ``assert_slo``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr  # no public name for these
from _pytest._io import TerminalWriter

from pytest_latency.analysis.relative import NO_BASELINE
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.errors import REPORTED_AS_TEXT as REPORTED_AS_TEXT
from pytest_latency.errors import LatencyComparisonWarning as LatencyComparisonWarning
from pytest_latency.errors import LatencyInconclusiveWarning as LatencyInconclusiveWarning
from pytest_latency.errors import LatencyInfrastructureError as LatencyInfrastructureError
from pytest_latency.errors import LatencyObjectiveError as LatencyObjectiveError
from pytest_latency.errors import LatencyRunInvalid as LatencyRunInvalid
from pytest_latency.report.failure import (
    failure_message,
    infrastructure_message,
    invalid_message,
    skip_reason,
)
from pytest_latency.report.wrapping import default_width, wrap_after
from pytest_latency.spec.model import Objective

if TYPE_CHECKING:
    from pytest_latency.analysis.result import LatencyResult

Location = tuple[str, int]  # (file as the user knows it, 1-based line)
Locate = Callable[[Objective], Location]
_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep  # pytest_latency/, all of it
_WARNING_INDENT = 2  # pytest indents a warning's text by two in its summary


def enforce(
    run: LatencyResult,
    results: Sequence[ObjectiveResult],
    *,
    width: int | None = None,
    locate: Locate | None = None,
) -> None:
    """Raise on failed objectives; warn, fail or skip on inconclusive ones.

    ``width``: the terminal's (pytest's) width, for the failure text; ``locate``: where
    each objective was written (a spec file's line). Without it, warnings point at the
    line that called into pytest-latency (the test's ``assert_slo``).
    """
    __tracebackhide__ = True
    width = width or default_width()
    check_valid(run, width)
    where = locate or _constant(_caller())
    for result in results:
        for caveat in result.warnings:
            text = f"{result.objective.label}: {caveat}"
            _warn(LatencyComparisonWarning, text, where(result.objective), width)
    failed = [result for result in results if result.verdict is Verdict.FAIL]
    undecided = [result for result in results if result.verdict is Verdict.INCONCLUSIVE]
    first = run.establishing_baseline  # relative objectives with nothing yet: warnings
    policy = run.inconclusive_policy
    if first and policy == "fail":
        warned = [result for result in undecided if result.reason == NO_BASELINE]
        undecided = [result for result in undecided if result.reason != NO_BASELINE]
        for result in warned:
            text = f"{result.objective.label}: {NO_BASELINE}; this run saves the first one"
            _warn(LatencyInconclusiveWarning, text, where(result.objective), width)
    heading = "latency objectives not met"
    if policy == "fail" and undecided:
        if not failed:  # nothing failed: say the run could not tell, and the way out
            heading = (
                "latency objectives undecided (the evidence cannot tell; each says what would"
                " decide it; --latency-inconclusive warn lets an undecided test pass)"
            )
        failed += undecided
    if failed:
        raise LatencyObjectiveError(failure_message(run, failed, heading, width))
    if undecided and policy == "skip":
        pytest.skip(skip_reason(undecided))
    for result in undecided:
        text = (
            f"{result.objective.label}: inconclusive; --latency-inconclusive warn lets the"
            " test pass; see the latency summary"
        )
        _warn(LatencyInconclusiveWarning, text, where(result.objective), width)


def check_valid(
    run: LatencyResult, width: int | None = None, objectives: Sequence[Objective] = ()
) -> None:
    """Raise LatencyInfrastructureError, with the evidence, when the run measured no
    server (it went away, exited, or one error failed most requests); LatencyRunInvalid,
    with the reasons, when the generator fell behind.

    ``objectives``, when the run has decided none yet, are decided first (each invalid,
    with the reason) so that the reports name them: a spec file checks before it judges.
    """
    __tracebackhide__ = True
    width = width or default_width()
    infrastructure = run.infrastructure()
    behind = run.health is not None and not run.health.valid
    if (infrastructure is not None or behind) and objectives and not run.objective_results:
        run.evaluate(objectives)
    if infrastructure is not None:
        raise LatencyInfrastructureError(infrastructure_message(run, infrastructure, width))
    if run.health is not None and behind:
        raise LatencyRunInvalid(invalid_message(run, run.health.reasons, width))


def terminal_width(config: pytest.Config) -> int:
    """The width pytest's terminal writer uses (``COLUMNS`` is honoured)."""
    if config.pluginmanager.get_plugin("terminalreporter") is None:  # -p no:terminal
        return default_width()
    return config.get_terminal_writer().fullwidth


def user_path(path: Path | str, start: Path | None = None) -> str:
    """``path`` relative to ``start`` (the working directory) when inside it, else absolute."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to((start or Path.cwd()).resolve()))
    except ValueError:
        return str(absolute)


def _caller() -> Location:
    """The innermost frame outside this package: the user's test (or their helper)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.realpath(frame.f_code.co_filename).startswith(
        _PACKAGE
    ):
        frame = frame.f_back
    return user_path(frame.f_code.co_filename), frame.f_lineno


def _constant(location: Location) -> Locate:
    return lambda _objective: location


def warn_at(
    category: type[Warning],
    text: str,
    objective: Objective,
    locate: Locate | None = None,
    width: int | None = None,
) -> None:
    """Warn about ``objective`` at its line (``locate``: a spec file's), or else at the
    line of the user's code that called into pytest-latency."""
    where = locate or _constant(_caller())
    _warn(category, text, where(objective), width or default_width())


def _warn(category: type[Warning], text: str, location: Location, width: int) -> None:
    """Warn at ``location``, the text wrapped to fit pytest's warnings summary."""
    filename, lineno = location
    used = len(f"{filename}:{lineno}: {category.__name__}: ")
    message = "\n".join(wrap_after(used, text, width - _WARNING_INDENT))
    # registry=None: never folded into an earlier identical warning (each test's counts).
    warnings.warn_explicit(message, category, filename, lineno)


class FailureText(TerminalRepr):
    """A failure shown as its text alone, whose first line is pytest's crash message."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.reprcrash = ReprFileLocation(path, 1, text.split("\n", 1)[0])

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.text.split("\n"):
            tw.line(line)


def shorten_report(report: pytest.TestReport, error: BaseException, spec_item: bool) -> None:
    """Make the short summary (and a CI log, which shows the crash message untrimmed)
    carry our message's first line: the failed objectives, without the exception's
    type name before them. A spec file's failure is its text alone, in every phase."""
    if not isinstance(error, REPORTED_AS_TEXT) or not report.failed:
        return
    text = str(error)
    if spec_item:
        report.longrepr = FailureText(text, str(report.fspath))
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    if isinstance(crash, ReprFileLocation):
        crash.message = text.split("\n", 1)[0]
