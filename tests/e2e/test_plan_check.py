"""The plan-time power check as users meet it: YAML specs and the ``latency`` fixture."""

import socket
import textwrap

import pytest

# A quick embedded server: steps of ~3 ms, so a run takes a few seconds.
FAST_SIM = (
    "{kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001,"
    " prefill_per_token_s: 0.00001}}"
)


def _closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _spec(server: str) -> str:
    # 20 constant arrivals; a p95 sharing the 1% with the error rate and the runaway
    # check (99.67% each) needs 125.
    return textwrap.dedent(
        f"""\
        server: {server}
        workload:
          input_tokens: 10
          output_tokens: 4
          phases: [{{name: steady, arrival: constant, rate: 10, duration: 2s}}]
        objectives:
          - {{metric: ttft, p: 95, max: 1s}}
          - {{metric: error_rate, max: 100%}}
        """
    )


EXPECTED = (
    "ttft p95 <= 1s: 20 requests planned, at least 125 needed at 99.67% confidence:"
    " make steady at least 13s at 10/s"
)


@pytest.mark.slow
def test_a_yaml_plan_that_cannot_decide_errors_before_any_server_is_asked(pytester):
    # The server is a closed port: the error is the plan's, so nothing reached for it.
    pytester.makefile(".slo.yaml", short=_spec(f'{{url: "{_closed_url()}"}}'))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "the plan cannot decide 1 of 2 objectives (short.slo.yaml::short):" in text
    assert EXPECTED in text and "Nothing was sent" in text
    assert "error_rate" not in text.split("short.slo.yaml::short):")[1].split("The counts")[0]
    assert "server not ready" not in text


@pytest.mark.slow
def test_allowed_it_warns_and_runs(pytester):
    pytester.makefile(".slo.yaml", short=_spec(FAST_SIM))
    result = pytester.runpytest(
        "--latency-allow-undecidable", "--latency-inconclusive", "warn", "-W", "default"
    )
    result.assert_outcomes(passed=1, warnings=2)  # undecidable, then inconclusive
    text = " ".join(result.stdout.str().split())  # the warning is wrapped to the terminal
    assert "LatencyUndecidableWarning" in text and EXPECTED in text
    assert "INCONCLUSIVE ttft p95" in text


@pytest.mark.slow
def test_the_fixture_checks_before_sending_with_latency_plan(pytester):
    pytester.makepyfile(
        f"""
        from pytest_latency import Phase, ServerSpec, objective

        def test_short(latency):
            phases = [Phase("steady", rate=10, duration_s=2, arrival="constant")]
            objectives = [objective("ttft", p=95, max="1s"), objective("error_rate", max="50%")]
            latency.plan(*phases, objectives=objectives, input_tokens=(10, 10), output_tokens=4)
            latency.run(*phases, server=ServerSpec(kind="url", url="{_closed_url()}"))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "UndecidablePlan: the plan cannot decide 1 of 2 objectives" in text
    assert EXPECTED in text and "server not ready" not in text


@pytest.mark.slow
def test_the_fixture_returns_the_counts_of_a_plan_that_can_decide(pytester):
    pytester.makepyfile(
        """
        from pytest_latency import Phase, objective

        def test_enough(latency):
            (power,) = latency.plan(
                Phase("steady", rate=10, duration_s=12, arrival="constant"),
                objectives=[objective("ttft", p=95, max="1s")],
            )
            # One objective and the runaway check share the 1%: 99.5% each.
            assert (power.planned, power.needed, power.decidable) == (120, 117, True)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.slow
def test_assert_slo_errors_on_a_plan_that_could_never_decide(pytester):
    pytester.makepyfile(
        f"""
        import yaml
        from pytest_latency import Phase, ServerSpec, objective

        def test_short(latency):
            result = latency.run(
                Phase("steady", rate=10, duration_s=2, arrival="constant"),
                input_tokens=(10, 10), output_tokens=4,
                server=ServerSpec(**yaml.safe_load({FAST_SIM!r})),
            )
            result.assert_slo(objective("ttft", p=95, max="1s"), objective("error_rate", max="50%"))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)  # not a verdict: an error, as for a spec file
    text = result.stdout.str()
    assert EXPECTED in text and "The run could not have decided them" in text
    assert "latency.plan(...)" in text and "INCONCLUSIVE" not in text.split("ERRORS")[1]
