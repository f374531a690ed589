"""``retry:`` in a workload: parsed with units, bad values named by file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.records import RequestRecord, record_from_dict, record_to_dict
from pytest_latency.spec.model import Phase, Retry, SpecError, Workload
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

SPEC = """\
workload:
  phases: [{{name: steady, rate: 5, duration: 2s}}]
  retry: {retry}
objectives:
  - {{metric: error_rate, max: 5%}}
"""


def load(tmp_path: Path, retry: str) -> Workload:
    path = tmp_path / "retry.slo.yaml"
    path.write_text(SPEC.format(retry=retry))
    return load_slo_file(path).workload


def test_retry_loads_with_durations_and_goes_into_the_workloads_json(tmp_path: Path) -> None:
    workload = load(tmp_path, "{max: 2, backoff: 250ms, max_backoff: 4s}")
    assert workload.retry == Retry(max_retries=2, backoff_s=0.25, max_backoff_s=4.0)
    assert workload.to_json()["retry"] == {"max": 2, "backoff_s": 0.25, "max_backoff_s": 4.0}


def test_a_workload_without_retry_keeps_its_fingerprint() -> None:
    assert "retry" not in Workload(phases=(Phase("s", rate=1, duration_s=1),)).to_json()


@pytest.mark.parametrize(
    ("retry", "problem"),
    [
        ("{max: 0}", "retry max must be a whole number in 1..10"),
        ("{max: 11}", "retry max must be a whole number in 1..10"),
        ("{backoff: 1s}", "workload.retry.max: missing"),
        ("{max: 2, tries: 3}", "workload.retry.tries: unknown key"),
        ("{max: 2, backoff: 2s, max_backoff: 1s}", "max_backoff (at least backoff)"),
        ("3", "workload.retry"),
    ],
)
def test_a_bad_retry_names_file_line_and_key(tmp_path: Path, retry: str, problem: str) -> None:
    with pytest.raises(SpecFileError) as caught:
        load(tmp_path, retry)
    assert "retry.slo.yaml:3:" in str(caught.value) and problem in str(caught.value)


def test_retry_in_python_checks_its_values() -> None:
    with pytest.raises(SpecError, match="retry max"):
        Retry(max_retries=-1)


def test_attempts_and_retry_after_round_trip_and_older_rows_read_as_never_retried() -> None:
    record = RequestRecord(0, "s", 0.0, 10, attempts=3, retry_after_s=1.0, retry_wait_s=2.0)
    row = record_to_dict(record)
    assert (row["attempts"], row["retry_after_s"], row["retry_wait_s"]) == (3, 1.0, 2.0)
    back = record_from_dict(row)
    assert (back.attempts, back.retry_after_s, back.retry_wait_s) == (3, 1.0, 2.0)
    for name in ("attempts", "retry_after_s", "retry_wait_s"):
        del row[name]
    older = record_from_dict(row)
    assert (older.attempts, older.retry_after_s, older.retry_wait_s) == (1, None, 0.0)
