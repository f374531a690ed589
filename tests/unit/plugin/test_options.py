"""read_options: every flag read from the command line or its ini twin, checked, with its
default otherwise (the e2e tests run the usage errors through pytest itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.plugin.options import DEFAULT_MAX_LAG_S, LatencyOptions, read_options
from pytest_latency.telemetry.settings import DEFAULT_GRACE_S


def options(pytester: pytest.Pytester, *args: str, ini: str = "") -> LatencyOptions:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    return read_options(pytester.parseconfig(*args))


def test_without_flags_every_option_has_its_default(pytester: pytest.Pytester) -> None:
    read = options(pytester)
    assert (read.server.kind, read.server_explicit, read.json_path, read.seed) == (
        "sim",
        False,
        None,
        None,
    )
    assert (read.otlp_grace_s, read.max_lag_s, read.workers, read.baseline_history) == (
        DEFAULT_GRACE_S,
        DEFAULT_MAX_LAG_S,
        1,
        1,
    )
    assert (read.inconclusive, read.error_control, read.ray_address) == ("fail", "test", None)


def test_flags_are_parsed_and_a_zero_duration_is_kept_not_defaulted(
    pytester: pytest.Pytester,
) -> None:
    read = options(
        pytester,
        "--latency-otlp-grace", "0s",
        "--latency-json", "out/l.json",
        "--latency-seed", "7",
        "--latency-baseline-history", "5",
        "--latency-max-line-bytes", "1KiB",
        "--latency-trace-url", "https://t/{trace_id}",
        "--latency-ray", "auto",
        "--latency-ray-workers", "3",
    )  # fmt: skip
    assert read.otlp_grace_s == 0.0
    assert (read.json_path, read.seed, read.baseline_history) == (Path("out/l.json"), 7, 5)
    assert (read.max_line_bytes, read.trace_url) == (1024, "https://t/{trace_id}")
    assert (read.ray_address, read.ray_workers) == ("auto", 3)


def test_the_command_line_wins_over_the_ini_twin(pytester: pytest.Pytester) -> None:
    read = options(pytester, "--latency-workers", "3", ini="latency_workers = 2\nlatency_seed = 9")
    assert (read.workers, read.seed) == (3, 9)


def test_a_bad_ray_address_is_named_before_a_conflicting_worker_count(
    pytester: pytest.Pytester,
) -> None:
    with pytest.raises(pytest.UsageError, match="--latency-ray 'nowhere': expected auto"):
        options(pytester, "--latency-ray", "nowhere", "--latency-workers", "2")
