"""A load spike, as a Python test: the burst costs waiting, not generation."""

from pytest_latency import Phase, burst, objective

STEADY = Phase("steady", rate=5, duration_s=30, arrival="constant")  # evenly spaced
OBJECTIVES = (
    objective("ttft", p=95, max="700ms", phase="steady"),
    objective("tpot", p=50, max="40ms", phase="steady"),
)


def test_student_assistant_spike(latency):
    phases = (STEADY, burst(rate=60, duration_s=5))
    options = {"input_tokens": (200, 400), "output_tokens": 32, "timeout_s": 60, "seed": 7}
    # Before anything is sent: can 150 steady requests decide a p95? (They can.)
    latency.plan(*phases, objectives=OBJECTIVES, **options)
    result = latency.run(*phases, warmup_requests=2, **options)
    result.assert_slo(*OBJECTIVES)
    # How to read the spike: first-token latency grows with the burst while
    # the gap between tokens barely moves, so the delay is before generation (queueing).
    ttft_growth = result.percentile("ttft", 95, "burst") / result.percentile("ttft", 95, "steady")
    itl_change = result.percentile("itl", 50, "burst") / result.percentile("itl", 50, "steady")
    assert ttft_growth > 5.0, f"burst TTFT p95 only {ttft_growth:.1f}x steady"
    assert 0.9 < itl_change < 1.25, f"median ITL moved {itl_change:.2f}x during the burst"
