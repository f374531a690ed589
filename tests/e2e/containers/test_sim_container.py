"""The embedded server from its image, started through testcontainers by the plugin."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]

IMAGE = "pytest-latency/sim:local"


@pytest.mark.usefixtures("no_leftovers")
def test_sim_image_serves_a_run_with_spans_and_leaves_no_container(
    pytester: pytest.Pytester, docker_client: Any
) -> None:
    require_image(docker_client, IMAGE)
    pytester.makepyfile(
        """
        from pytest_latency import burst, steady

        def test_through_the_container(latency):
            result = latency.run(
                steady(rate=4, duration_s=3), burst(rate=12, duration_s=2),
                input_tokens=(50, 100), output_tokens=20, seed=3,
            )
            assert result.offered > 0

        def test_a_second_test_shares_the_sessions_container(latency):
            latency.run(steady(rate=4, duration_s=1), output_tokens=5, seed=4)
        """
    )
    result = pytester.runpytest(f"--latency-image={IMAGE}", "--latency-json", "run.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*server cold start (start to healthy): *s*"])
    run, second = json.loads((pytester.path / "run.json").read_text())["runs"]
    assert second["server"]["container"] == run["server"]["container"]  # one per session
    server = run["server"]
    assert server["kind"] == "sim" and server["image"] == IMAGE
    assert server["network"] == "host" and server["url"].startswith("http://127.0.0.1:")
    assert 0 < server["cold_start_s"] < 60 and server["exited_during_run"] is None
    requests = run["requests"]
    assert len(requests) == sum(phase["offered"] for phase in run["phases"])
    assert {r["status"] for r in requests} == {"ok"}
    assert {r["output_tokens"] for r in requests} == {20}
    # The container's spans reached the plugin's receiver over host networking.
    assert all(r["queue_wait_s"] is not None for r in requests)
