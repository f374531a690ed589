"""Values of the ``--latency-*`` flags: each parser takes the text and returns the value
or raises ValueError, which :mod:`pytest_latency.plugin.options` turns into a usage
error naming the flag. Light imports only (every pytest run imports this)."""

from __future__ import annotations

from pytest_latency._units import parse_duration
from pytest_latency.secret import Secret, from_environment
from pytest_latency.telemetry.settings import OTLP_TOKEN_VARIABLE, parse_listen_address

#: The summary's percentiles unless ``--latency-percentiles`` says otherwise.
DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0)


def positive_duration(value: str) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be longer than 0s")
    return seconds


def parse_seed(value: str) -> int:
    seed = int(value)
    if not 0 <= seed < 2**63:  # spec.MAX_SEED
        raise ValueError("a seed must be an integer in 0..2**63-1")
    return seed


def count(value: str) -> int:
    count = int(value)
    if count < 1:
        raise ValueError("must be an integer >= 1")
    return count


def listen_address(value: str) -> str:
    """``HOST:PORT`` to listen on, checked and kept as written."""
    parse_listen_address(value)
    return value


def trace_url(value: str) -> str:
    if "{trace_id}" not in value:
        raise ValueError("must contain {trace_id}")
    return value


def percentile_list(value: str) -> tuple[float, ...]:
    """``50,90,99,99.9``: percentiles between 1 and 100 (exclusive), in rising order."""
    try:
        ps = [float(text) for text in value.split(",") if text.strip()]
    except ValueError:
        ps = []
    if not ps or not all(1 < p < 100 for p in ps):
        raise ValueError("expected percentiles between 1 and 100 (exclusive), e.g. 50,90,99,99.9")
    return tuple(sorted(set(ps)))


def otlp_token(flag_value: str | None) -> Secret | None:
    """The receiver's token: the flag (or its ini twin), else the environment variable."""
    if flag_value:
        return Secret(flag_value, "--latency-otlp-token")
    return from_environment(OTLP_TOKEN_VARIABLE)
