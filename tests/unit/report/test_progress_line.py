"""The progress line never reads "40s of 35s": past the plan it says it is draining."""

from __future__ import annotations

import pytest

from pytest_latency.driver.progress import Progress
from pytest_latency.report.progress import format_progress


def test_within_the_plan_it_counts_down() -> None:
    line = format_progress(Progress(312, 115, 112, elapsed_s=23.2, duration_s=45.0))
    assert line == "latency 23s of 45s: sent 115/312, completed 112, in flight 3, 22s left"


@pytest.mark.parametrize(
    ("sent", "completed", "expected"),
    [
        (134, 125, "latency 35s planned, draining 5s: sent 134/134, completed 125, in flight 9"),
        (
            130,
            125,
            "latency 35s planned, sending late 5s: sent 130/134, completed 125, in flight 5",
        ),
        (134, None, "latency 35s planned, draining 5s: 134/134 due (workers count the rest)"),
    ],
)
def test_past_the_plan_it_says_what_it_waits_for(
    sent: int, completed: int | None, expected: str
) -> None:
    line = format_progress(Progress(134, sent, completed, elapsed_s=40.1, duration_s=35.0))
    assert line == expected
    assert "of 35s" not in line


def test_at_the_end_of_the_plan_it_is_not_draining_yet() -> None:
    # 35.3 s rounds to the planned 35 s: "0s left" would be no clearer than "all sent"
    line = format_progress(Progress(134, 134, 125, elapsed_s=35.3, duration_s=35.0))
    assert line == "latency 35s of 35s: sent 134/134, completed 125, in flight 9, all sent"
