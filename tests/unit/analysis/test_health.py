"""Generator health: late or missing sends make a run invalid, with the reason."""

import pytest

from pytest_latency.analysis.health import check_generator
from pytest_latency.driver.client_load import ClientLoad
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


def _client(loop_lag_p99_s: float) -> ClientLoad:
    return ClientLoad(
        wall_s=10.0, cpu_s=7.6, busiest_window_share=0.96, loop_lag_p99_s=loop_lag_p99_s,
        loop_lag_max_s=loop_lag_p99_s, wakeups=1000,
    )  # fmt: skip


def test_late_sends_name_the_client_when_its_own_loop_woke_late():
    """Tried at 2,500 req/s on one core: the sends were 640 ms late at p99 while the
    driving thread was busy 76% of the run (96% in its busiest second): the reason must
    say the client was the bottleneck, not leave the user to suspect the server."""
    health = check_generator(_records(0.2), WORKLOAD, client=_client(0.16))
    (reason,) = health.reasons
    assert reason.endswith(
        "the load generator could not keep its schedule (its event loop woke 160.0ms late at"
        " p99, its driving thread busy 76% of the run and 96% of its busiest second: the"
        " client is the bottleneck; spread the load over more workers (--latency-workers)"
        " or run on a quieter machine)"
    ), reason


def test_late_sends_from_a_loop_that_kept_time_waited_for_connections():
    (reason,) = check_generator(_records(0.2), WORKLOAD, client=_client(0.002)).reasons
    assert "its event loop woke 2.0ms late at p99" in reason
    assert "the client kept time, so the sends waited for connections" in reason
