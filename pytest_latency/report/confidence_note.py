"""One line per summary that says what the printed confidence figures mean.

A verdict printed "at 99.667% confidence" is one share of the test's 99%: the
objectives decided together split the 1% chance of a wrong verdict (Bonferroni), so
that all of them hold together at 99%. Without this line the odd figure reads as a bug.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE
from pytest_latency.analysis.result import LatencyResult


def _shared_by(confidence: float) -> int | None:
    """How many objectives share the default confidence to give ``confidence`` each."""
    if confidence >= 1.0:
        return None
    count = (1.0 - DEFAULT_CONFIDENCE) / (1.0 - confidence)
    nearest = round(count)
    return nearest if nearest >= 1 and math.isclose(count, nearest, rel_tol=1e-6) else None


def confidence_note(runs: Sequence[LatencyResult]) -> str | None:
    """``confidence: 99.667% = 99% shared by 3 tests ...``; None without verdicts."""
    return note_for(result.confidence for run in runs for result in run.objective_results)


def note_for(confidences: Iterable[float]) -> str | None:
    """The note for these verdicts' confidences (a summary rendered from a saved file has
    only the figures); None when there are none."""
    figures = sorted(set(confidences), reverse=True)
    if not figures:
        return None
    total = f"{DEFAULT_CONFIDENCE:.0%}"
    parts = []
    for confidence in figures:
        count = _shared_by(confidence)
        if count == 1:
            parts.append(f"{confidence:.3%} = {total} for one objective")
        elif count is not None:
            parts.append(f"{confidence:.3%} = {total} shared by {count} tests")
        else:
            parts.append(f"{confidence:.3%} = a share of the {total} error budget")
    return (
        "confidence: " + "; ".join(parts) + " (the objectives decided together, and the"
        " runaway check where one waits in the queue, split the"
        f" {1 - DEFAULT_CONFIDENCE:.0%} chance of a wrong verdict, so all of them hold"
        f" together at {total}; a session budget or until_decided looks spend it in"
        " smaller shares)"
    )
