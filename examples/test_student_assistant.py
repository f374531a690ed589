"""The seed lesson's spike, as a Python test: the burst costs waiting, not generation."""

from pytest_latency import burst, objective, steady


def test_student_assistant_spike(latency):
    result = latency.run(
        steady(rate=5, duration_s=40),
        burst(rate=25, duration_s=5),
        input_tokens=(200, 400),
        output_tokens=200,
        timeout_s=60,
        warmup_requests=2,
        seed=7,
    )
    result.assert_slo(
        objective("ttft", p=95, max="700ms", phase="steady"),
        objective("itl", p=50, max="40ms"),
        objective("error_rate", max="5%"),
    )
    # The lesson's reading of the spike: first-token latency grows with the burst while
    # the gap between tokens barely moves, so the delay is before generation (queueing).
    ttft_growth = result.percentile("ttft", 95, "burst") / result.percentile("ttft", 95, "steady")
    itl_change = result.percentile("itl", 50, "burst") / result.percentile("itl", 50, "steady")
    assert ttft_growth > 2.0, f"burst TTFT p95 only {ttft_growth:.1f}x steady"
    assert 0.85 < itl_change < 1.15, f"median ITL moved {itl_change:.2f}x during the burst"
