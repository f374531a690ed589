"""Generator health: late or missing sends make a run invalid, with the reason."""

import pytest

from pytest_latency.analysis.health import check_generator
from pytest_latency.driver.worker_clocks import GeneratorWorker
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, Workload

WORKLOAD = Workload(phases=(Phase("steady", rate=10, duration_s=10),))


def _records(lag_s: float, sent_fraction: float = 1.0) -> list[RequestRecord]:
    records = []
    for index in range(100):
        record = RequestRecord(id=index, phase="steady", intended_s=index * 0.1, input_tokens=1)
        if index < 100 * sent_fraction:
            record.sent_s = record.intended_s + lag_s
            record.status = Status.OK
        records.append(record)
    return records


def test_on_time_generator_is_valid():
    health = check_generator(_records(0.002), WORKLOAD)
    assert health.valid and health.reasons == ()
    assert health.shortfalls == {"steady": 0.0}


def test_lagging_generator_is_invalid_with_reason():
    health = check_generator(_records(0.2), WORKLOAD)
    assert not health.valid
    assert "schedule lag p99 200.0ms exceeds 50.0ms" in health.reasons[0]


def test_requests_never_sent_are_a_shortfall():
    health = check_generator(_records(0.001, sent_fraction=0.8), WORKLOAD)
    assert not health.valid and health.shortfalls["steady"] == pytest.approx(0.2)
    assert "20% of 100 planned requests were not sent" in health.reasons[0]


def test_threshold_is_a_setting():
    assert check_generator(_records(0.2), WORKLOAD, max_lag_p99_s=0.5).valid


def test_a_remote_worker_whose_clock_is_uncertain_beyond_the_allowed_lag_makes_it_invalid():
    sure = GeneratorWorker("pytest-latency-worker-0", "n0", 1e-5, 0.0004, requests=50)
    unsure = GeneratorWorker("pytest-latency-worker-1", "n1", 0.2, 0.08, requests=50)
    health = check_generator(_records(0.002), WORKLOAD, workers=[sure])
    assert health.valid and health.to_json()["workers"] == [sure.to_json()]
    health = check_generator(_records(0.002), WORKLOAD, workers=[sure, unsure])
    assert not health.valid
    assert health.reasons == (
        "worker pytest-latency-worker-1 on node n1: clock offset uncertain by 80 ms, more "
        "than the allowed schedule lag 50 ms",
    )


def test_local_runs_report_no_workers():
    assert "workers" not in check_generator(_records(0.002), WORKLOAD).to_json()
