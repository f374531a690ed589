import math

import pytest

from pytest_latency._units import format_seconds, parse_duration, parse_fraction


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("700ms", 0.7), ("30s", 30.0), ("1.5", 1.5), (2, 2.0), ("250us", 250e-6), ("2m", 120.0)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["fast", "-1s", "1 parsec", True, None, [1]])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_fractions():
    assert parse_fraction("1%") == pytest.approx(0.01)
    assert parse_fraction(0.05) == 0.05
    for bad in ("150%", 2, "one"):
        with pytest.raises(ValueError):
            parse_fraction(bad)


def test_format_seconds():
    assert format_seconds(0.0312) == "31.2ms"
    assert format_seconds(2.8) == "2.80s"
    assert format_seconds(math.inf) == "inf"
    assert format_seconds(None) == "-"
