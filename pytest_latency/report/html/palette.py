"""The HTML report's colours: one meaning each, in every chart.

Colours with a fixed meaning (``MEANINGS``: the parts of a request's time, sending,
pass and fail) are the CSS variables of ``report.css``'s ``:root`` and are used for that
meaning only: the queue is orange wherever it is drawn, a limit or a failed rate red.
Series without one (phases, cohorts, a capacity search's objectives) take the series
colours (``SERIES``, the classes ``c0``...), none of which means anything else; a phase
keeps its colour in every chart (:func:`phase_classes`), and a cohort is drawn in its
phase's colour, told apart from the phase's other cohorts by its dashes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: meaning -> colour (the CSS variable ``--<meaning>``)
MEANINGS = {
    "ttft": "#2563eb",  # time to first token, its points and markers
    "queue": "#ea580c",  # server queue wait and queue depth
    "prefill": "#7c3aed",
    "stream": "#16a34a",  # decode / completion
    "lag": "#ca8a04",  # sending: schedule lag, sent requests
    "fail": "#dc2626",  # a limit, a failed verdict or rate
    "pass": "#166534",  # a passed verdict or rate
}
#: series colours, classes ``c0``.. ``c5``: for phases, cohorts and objectives
SERIES = ("#0891b2", "#be185d", "#92400e", "#64748b", "#115e59", "#f472b6")
DASHES = 4  # cohorts of one phase: classes d0..d3 (d0 solid)
ALL = "call"  # every phase together (near black, dashed)
BASELINE = "cbase"  # a baseline's requests (grey, dashed)


def series_class(index: int) -> str:
    """The class of the ``index``-th series of a chart whose series have no meaning."""
    return f"c{index % len(SERIES)}"


def phase_classes(names: Iterable[str]) -> dict[str, str]:
    """Each phase's class, by its order in ``names`` (the run's phases in plan order):
    the same in every chart of the run."""
    ordered = list(dict.fromkeys(names))
    return {name: series_class(index) for index, name in enumerate(ordered)}


def cohort_classes(phases: dict[str, str], cohorts: Sequence[tuple[str, str]]) -> list[str]:
    """Each cohort's classes, given (cohort key, its phase) in order: its phase's colour
    and, for the second and later cohort of a phase, dashes of their own."""
    seen: dict[str, int] = {}
    found = []
    for _, phase in cohorts:
        colour = phases.get(phase, ALL)
        count = seen.get(phase, 0)
        seen[phase] = count + 1
        found.append(f"{colour} d{count % DASHES}")
    return found


def css() -> str:
    """The palette as CSS: the meanings' variables and the series classes."""
    meanings = ";".join(f"--{name}:{colour}" for name, colour in MEANINGS.items())
    series = "".join(f".c{k}{{--c:{colour}}}" for k, colour in enumerate(SERIES))
    return f":root{{{meanings}}}\n{series}\n"
