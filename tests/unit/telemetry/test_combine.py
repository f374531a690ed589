"""A capacity search's probes as one run's telemetry: the span joins add up, and each
probe's /metrics scrapes land at its place on the search's timeline."""

from __future__ import annotations

from pytest_latency.telemetry.combine import Placed, joined_reports, placed_series
from pytest_latency.telemetry.join import JoinReport
from pytest_latency.telemetry.prometheus import MetricsSeries


def _series(t_s: list[float], waiting: list[float | None], **fields: object) -> MetricsSeries:
    values: dict[str, object] = {
        "kind": "sim",
        "t_s": t_s,
        "waiting": waiting,
        "running": [1.0] * len(t_s),
        "extra": {},
        "scrapes": len(t_s),
        "failures": 0,
        "last_error": None,
        "interval_s": 0.5,
    }
    return MetricsSeries(**{**values, **fields})  # type: ignore[arg-type]


def test_joins_add_up_and_the_first_span_problem_names_its_probe() -> None:
    first = JoinReport(10, 10, {"otlp": 10}, unknown_traces=1, waited_s=0.5, receiver="r")
    second = JoinReport(6, 4, {"otlp": 3, "server-timing": 1}, waited_s=2.0,
                        receiver="r", span_problem="server spans stopped arriving")  # fmt: skip
    joined = joined_reports([first, None, second])
    assert joined is not None
    assert (joined.requests, joined.joined, joined.missing) == (16, 14, 2)
    assert joined.sources == {"otlp": 13, "server-timing": 1}
    assert (joined.unknown_traces, joined.waited_s, joined.receiver) == (1, 2.5, "r")
    assert joined.span_problem == "probe 3: server spans stopped arriving"
    assert joined_reports([None, None]) is None


def test_scrapes_move_to_each_probes_place_and_off_phase_ones_are_left_out() -> None:
    # Probe 1 at 0 s (6 s long), probe 2 at 6 s: a scrape before time zero and one
    # during the drain (after 6 s) would land on the other probe.
    one = _series([-0.2, 0.5, 5.5, 6.4], [0.0, 1.0, 2.0, 9.0], failures=1, last_error="x")
    two = _series([0.1, 3.0], [3.0, None], kind="unknown", extra={"kv": [0.1, 0.2]})
    series = placed_series([Placed(one, 0.0, 6.0), Placed(two, 6.0, 4.0)])
    assert series is not None
    assert series.t_s == [0.5, 5.5, 6.1, 9.0]
    assert series.waiting == [1.0, 2.0, 3.0, None]
    assert series.extra == {"kv": [None, None, 0.1, 0.2]}
    assert (series.kind, series.scrapes, series.failures) == ("sim", 4, 1)
    assert series.last_error == "x" and series.interval_s == 0.5
    assert placed_series([]) is None
