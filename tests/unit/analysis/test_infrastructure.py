"""Infrastructure failures, classified from records alone: which runs measured no server.

Each case is a run whose truth is known by construction (which requests failed, how,
where in send order); the classification must name it, or stay silent for failures
that are the server's answer under load (a latency matter the objectives judge).
"""

from __future__ import annotations

import pytest

from pytest_latency.analysis.infrastructure import (
    DOMINANT_SHARE,
    GONE_MIN_REQUESTS,
    InfrastructureFailure,
    classify,
    infrastructure_headline,
)
from pytest_latency.analysis.verdict import Verdict
from pytest_latency.errors import LatencyInfrastructureError, LatencyRunInvalid
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import make_result
from tests.helpers.infrastructure_runs import CUT, REFUSED, answered, failed, server_dies_at

STEADY = (Phase("steady", rate=10, duration_s=15),)
OBJECTIVES = (
    objective("error_rate", max="5%"),
    objective("ttft", p=95, max="2s"),
    objective("e2e", p=90, max="5s"),
)


def every_kth_fails(offered: int, k: int, status: Status, error: str) -> list[RequestRecord]:
    return [
        failed(i, status, error) if i % k == 3 else answered(i) for i in range(offered)
    ]  # fmt: skip


def test_a_server_that_dies_at_request_60_of_150_went_away_with_the_evidence():
    found = classify(server_dies_at(60))
    assert isinstance(found, InfrastructureFailure) and found.pattern == "gone"
    assert found.headline == (
        "infrastructure: 90 of 150 requests failed with connection refused (87) or stream"
        " ended without [DONE] (3), from request #60 (6.00s) to the end of the run"
        " — the server went away?"
    )
    assert found.evidence() == [
        "90 of 150 requests failed, the first #60 at 6.00s, the last #149 at 14.90s",
        f"connection_error 87: connection refused: {REFUSED}",
        f"protocol_error 3: {CUT}",
        "the last request answered before them: #59 at 5.90s",
    ]


def test_a_dead_server_is_found_in_send_order_whatever_order_the_records_come_in():
    records = server_dies_at(60)
    assert classify(list(reversed(records))) == classify(records)


def test_a_server_gone_for_the_last_few_requests_is_still_gone_and_one_refusal_is_not():
    # 145 answered, the last 5 refused: a 3% error rate a 5% limit would pass.
    assert classify(server_dies_at(145, cut=0)).pattern == "gone"  # type: ignore[union-attr]
    assert GONE_MIN_REQUESTS == 5
    assert classify(server_dies_at(146, cut=0)) is None  # 4: a blip, the error rate judges it


def test_a_graceful_shutdown_rejecting_one_request_on_its_way_out_is_still_gone():
    records = server_dies_at(60)
    records[61] = failed(61, Status.REJECTED, "HTTP 503")  # while shutting down
    found = classify(records)
    assert found is not None and found.pattern == "gone" and len(found.failed) == 90


def test_a_404_on_every_request_is_one_dominant_error_with_its_hint():
    found = classify([failed(i, Status.HTTP_ERROR, "HTTP 404: model unloaded") for i in range(40)])
    assert found is not None and found.pattern == "dominant"
    assert found.headline == (
        "infrastructure: 40 of 40 requests failed with HTTP 404: model unloaded"
        " — a wrong model name or URL?"
    )


def test_http_errors_are_one_kind_per_status_whatever_their_bodies_say():
    records = [
        failed(i, Status.HTTP_ERROR, f"HTTP 401: token {i} rejected") if i % 4 else answered(i)
        for i in range(40)
    ]
    found = classify(records)
    assert found is not None and found.pattern == "dominant" and len(found.failed) == 30
    assert found.headline.endswith("— missing or wrong credentials?")


def test_500s_on_15_percent_are_not_infrastructure_but_fail_the_error_rate():
    # Every 7th request (14%) fails with HTTP 500 over 400 requests: the objectives say it.
    records = every_kth_fails(400, 7, Status.HTTP_ERROR, "HTTP 500: boom")
    assert classify(records) is None
    result = make_result(records, (Phase("steady", rate=10, duration_s=40),), OBJECTIVES)
    verdicts = {r.objective.metric: r.verdict for r in result.objective_results}
    assert Verdict.INVALID not in verdicts.values()
    assert verdicts["error_rate"] is Verdict.FAIL
    assert verdicts["ttft"] is not Verdict.PASS  # failures count as unbounded latency
    assert [finding.rule for finding in result.diagnosis()][:1] == ["errors"]


def test_429_rejections_under_a_burst_are_the_servers_answer_not_infrastructure():
    steady = [answered(i) for i in range(100)]
    # The burst (the run's end) is turned away in its second half: 40 rejections in a row.
    burst = [
        answered(i, "burst", 40.0)
        if i < 140
        else failed(i, Status.REJECTED, "HTTP 429", "burst", 40.0)
        for i in range(100, 180)
    ]  # fmt: skip
    for record in burst:
        record.intended_s += 10.0 - 100 / 40.0  # the burst starts at 10 s
    assert classify(steady + burst) is None
    # An overloaded end: the last 30 of 200 time out (15%, under OUTAGE_SHARE): latency.
    timed_out = [answered(i) for i in range(170)] + [
        failed(i, Status.TIMEOUT, "timeout after 30s") for i in range(170, 200)
    ]
    assert classify(timed_out) is None


def test_a_server_that_stops_answering_is_infrastructure_whatever_the_requests_saw():
    """60 answered, then every request to the end times out (a hung server, or one that
    finished nothing within the timeout again): before, a 60% timeout run was an
    INCONCLUSIVE p95 (bounds 0..inf, effective n 5) and the test passed."""
    records = [answered(i) for i in range(60)] + [
        failed(i, Status.TIMEOUT, "timeout after 5s") for i in range(60, 150)
    ]
    found = classify(records)
    assert found is not None and found.pattern == "stalled"
    assert found.headline == (
        "infrastructure: 90 of 150 requests failed with timeout after 5s, from request #60"
        " (6.00s) to the end of the run — the server stopped answering: hung, or so"
        " overloaded that no request finished within the timeout"
    )
    assert found.last_answered is not None and found.last_answered.id == 59
    # Still so when the last ones find no server at all (it was killed while hung) ...
    records[-3:] = [failed(i, Status.CONNECTION_ERROR, REFUSED) for i in range(147, 150)]
    assert classify(records).pattern == "stalled"  # type: ignore[union-attr]
    # ... but one answer among them, or a rejection (the server's admission answering),
    # makes it the server's answer under load: latency, not setup.
    records[140] = answered(140)
    assert classify(records) is None
    records[140] = failed(140, Status.REJECTED, "HTTP 429")
    assert classify(records) is None
    # Requests the run never sent (it stopped early) are no evidence either way.
    stopped = [answered(i) for i in range(60)] + [
        failed(i, Status.CANCELLED, "never sent") for i in range(60, 150)
    ]
    assert classify(stopped) is None


def test_an_outage_mid_run_is_infrastructure_and_a_short_blip_is_not():
    records = [answered(i) for i in range(150)]
    outage = [failed(i, Status.CONNECTION_ERROR, REFUSED) if 50 <= i < 90 else r
              for i, r in enumerate(records)]  # fmt: skip
    found = classify(outage)
    assert found is not None and found.pattern == "outage"
    assert "40 of 150 requests failed with connection refused in a row, requests #50 to #89" in (
        found.headline
    )
    blip = [failed(i, Status.CONNECTION_ERROR, REFUSED) if 50 <= i < 58 else r
            for i, r in enumerate(records)]  # fmt: skip
    assert classify(blip) is None


def test_a_server_that_exited_is_infrastructure_even_when_no_request_failed():
    records = [answered(i) for i in range(50)]
    found = classify(records, server_exit="container abc exited with code 137")
    assert found is not None and found.pattern == "exited"
    assert found.headline == (
        "infrastructure: the server exited during the run (container abc exited with code 137)"
    )
    tail = "container abc exited with code 137; last log lines:\nKilled\nbye"
    logged = classify(records, server_exit=tail)
    assert logged is not None and logged.headline == found.headline  # one line
    assert logged.evidence() == [f"the server exited during the run: {tail}"]
    dying = classify(server_dies_at(60), server_exit="exited with code 137")
    assert dying is not None and dying.headline.startswith(
        "infrastructure: the server exited during the run (exited with code 137); 90 of 150"
    )


def test_the_headline_names_only_an_infrastructure_error_behind_half_the_run():
    assert DOMINANT_SHARE == 0.5
    hot = [failed(i, Status.CONNECTION_ERROR, "[Errno 111] Connect call failed") for i in range(3)]
    assert infrastructure_headline(hot) == (
        "infrastructure: 3 of 3 requests failed with connection refused — the server went away?"
    )
    # Two different errors, neither half the run (together they are), scattered.
    mixed = [
        failed(i, Status.HTTP_ERROR, "HTTP 401: bad token" if i % 2 else "HTTP 500: boom")
        if i % 5 else answered(i)
        for i in range(30)
    ]  # fmt: skip
    assert infrastructure_headline(mixed) is None


def test_a_run_whose_server_went_away_decides_every_objective_invalid_with_the_headline():
    result = make_result(server_dies_at(60), STEADY, OBJECTIVES)
    found = result.infrastructure()
    assert found is not None
    assert {(r.verdict, r.reason) for r in result.objective_results} == {
        (Verdict.INVALID, found.headline)
    }


def test_the_gate_raises_an_infrastructure_error_with_the_evidence():
    from pytest_latency.plugin.gate import check_valid

    result = make_result(server_dies_at(60), STEADY)
    with pytest.raises(LatencyInfrastructureError) as raised:
        check_valid(result, 200, OBJECTIVES)
    assert isinstance(raised.value, LatencyRunInvalid)  # caught where invalid runs are
    text = str(raised.value)
    first, *rest = text.split("\n")
    assert first.startswith("infrastructure: 90 of 150 requests failed with connection refused")
    assert "  the last request answered before them: #59 at 5.90s" in rest
    link = f"https://traces.example/trace/{60:032x}"  # make_result's trace URL template
    assert f"  the first failed request: {link}" in rest
    assert "nothing was decided" in text
    # The objectives were decided first, so the reports name them, invalid.
    assert [r.verdict for r in result.objective_results] == [Verdict.INVALID] * 3


def test_a_server_gone_before_a_probe_stopped_early_is_still_gone():
    """A capacity probe stopped early leaves its unsent requests cancelled at the end of
    the run: no evidence either way, so the refusals before them still say 'went away'."""
    records = server_dies_at(60)
    records += [failed(i, Status.CANCELLED, "never sent") for i in range(150, 170)]
    found = classify(records)
    assert found is not None and found.pattern == "gone"
    assert found.headline.startswith("infrastructure: 90 of 150 requests failed with")
