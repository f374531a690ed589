import math

import pytest

from pytest_latency._units import format_seconds, parse_duration, parse_fraction


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("700ms", 0.7),
        ("30s", 30.0),
        ("1.5s", 1.5),
        ("250us", 250e-6),
        ("2m", 120.0),
        ("1h", 3600.0),
        (0, 0.0),  # zero is the same in every unit
        ("0", 0.0),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["fast", "-1s", "1 parsec", True, None, [1], -1, math.nan])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("value", "guess", "fix"),
    [
        (700, "latency", "did you mean 700ms?"),
        ("700", "latency", "did you mean 700ms?"),
        (0.7, "latency", "did you mean 0.7s?"),
        (5, "latency", "did you mean 5ms or 5s?"),  # unsure: both
        (20, "span", "did you mean 20s?"),  # a phase, a timeout: seconds
        (1.5, "span", "did you mean 1.5s?"),
    ],
)
def test_a_duration_without_a_unit_is_an_error_showing_the_fix(value, guess, fix):
    with pytest.raises(ValueError) as error:
        parse_duration(value, what="ttft max", guess=guess)
    assert str(error.value) == f"ttft max: {value} needs a unit: {fix}"


def test_fractions():
    assert parse_fraction("1%") == pytest.approx(0.01)
    assert parse_fraction("0.5 %") == pytest.approx(0.005)
    assert parse_fraction("100%") == 1.0
    assert parse_fraction(0) == 0.0
    for bad in ("150%", "one", "-1%", True, None, math.inf):
        with pytest.raises(ValueError):
            parse_fraction(bad)


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        (1, "1 needs a unit: write 1%, or 100% (max_fraction: 1) if you meant a fraction"),
        (
            0.05,
            "0.05 needs a unit: write 0.05%, or 5% (max_fraction: 0.05) if you meant a fraction",
        ),
        (5, "5 needs a unit: write 5% (or max_fraction: 0.05)"),
        ("2", "2 needs a unit: write 2% (or max_fraction: 0.02)"),
    ],
)
def test_a_fraction_without_percent_is_an_error_showing_both_readings(value, fix):
    with pytest.raises(ValueError) as error:
        parse_fraction(value, what="error_rate max", fraction_key="max_fraction: ")
    assert str(error.value) == f"error_rate max: {fix}"


def test_format_seconds():
    assert format_seconds(0.0312) == "31.2ms"
    assert format_seconds(2.8) == "2.80s"
    assert format_seconds(math.inf) == "inf"
    assert format_seconds(None) == "-"
