"""The summary explains its confidence figures once: "99.750% = 99% shared by 4 tests"
(the objectives and, where one waits in the queue, the runaway check)."""

from __future__ import annotations

from pytest_latency.report.confidence_note import confidence_note
from pytest_latency.report.terminal import format_summary
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))


def _run(count: int):
    goals = [
        objective("ttft", p=50, max="5s", phase="steady"),
        objective("e2e", p=50, max="9s", phase="steady"),
        objective("error_rate", max="5%"),
    ][:count]
    return make_result(scaled_records(1.0), PHASES, goals, test=f"t.py::test_{count}")


def test_three_objectives_decided_together_are_explained_once():
    runs = [_run(3), _run(3)]
    note = confidence_note(runs)
    assert note is not None
    assert note.startswith("confidence: 99.750% = 99% shared by 4 tests (")
    assert "and the runaway check where one waits in the queue" in note
    text = "\n".join(format_summary(runs, width=400))
    assert text.count("99.750% = 99% shared by 4 tests") == 1
    assert text.count("at 99.750% confidence") == 4  # each latency verdict keeps its figure


def test_each_figure_of_the_summary_is_explained():
    note = confidence_note([_run(1), _run(2)])
    assert note is not None
    assert "99.667% = 99% shared by 3 tests; 99.500% = 99% shared by 2 tests" in note


def test_no_verdict_no_note():
    assert confidence_note([_run(0)]) is None
