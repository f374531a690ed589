"""The plugin as users meet it: flags, YAML collection, the fixture, JSON, failures."""

import json
import textwrap

import pytest

# A quick embedded server: same model, steps of ~3 ms so a run takes a few seconds.
FAST_SIM = (
    "{kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001,"
    " prefill_per_token_s: 0.00001}}"
)

SPEC = f"""\
server: {FAST_SIM}
workload:
  seed: 3
  input_tokens: [20, 40]
  output_tokens: 12
  timeout: 10s
  phases:
    - {{name: steady, arrival: poisson, rate: 20, duration: 4s}}
    - {{name: burst, arrival: constant, rate: 60, duration: 1s}}
  warmup: 10  # the embedded server's cold start is a trend the dependence estimate pays for
objectives:
  - {{metric: ttft, p: 50, max: 2s, phase: steady}}
  - {{metric: error_rate, max: 100%}}  # a run this short cannot bound it lower
  - {{metric: queue_wait, p: 50, max: 3s, phase: steady}}
  - {{metric: after_queue, p: 50, max: 3s, phase: steady}}
"""

FLAGS = [
    "server",
    "model",
    "json",
    "html",
    "markdown",
    "otlp-receiver",
    "otlp-endpoint",
    "trace-url",
    "baseline",
    "save-baseline",
    "seed",
    "image",
    "gpus",
    "inconclusive",
    "record-content",
    "allow-undecidable",
    "max-line-bytes",
    "max-body-bytes",
]


@pytest.mark.slow
def test_help_lists_every_contract_flag_with_ini_twin(pytester):
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    for flag in FLAGS:
        assert f"--latency-{flag}" in text, flag
        assert f"latency_{flag.replace('-', '_')}" in text, flag


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--latency-server", "ftp://x"], "expected sim, an http(s):// URL"),
        (["--latency-seed", "abc"], "--latency-seed 'abc'"),
        (["--latency-seed", str(2**63)], "0..2**63-1"),
        (["--latency-inconclusive", "maybe"], "expected one of warn, fail, skip"),
        (["--latency-trace-url", "https://jaeger/trace/"], "must contain {trace_id}"),
    ],
)
def test_bad_flags_are_usage_errors(pytester, args, message):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.slow
def test_yaml_spec_runs_and_writes_the_json_schema(pytester):
    pytester.makefile(".slo.yaml", assistant=SPEC)
    # About the JSON, not verdicts: on a busy machine a short-run median may be undecided.
    result = pytester.runpytest(
        "--latency-json", "out/latency.json", "-p", "no:randomly", "--latency-inconclusive", "warn"
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "latency summary" in text and "from each request's planned send time" in text
    document = json.loads((pytester.path / "out" / "latency.json").read_text())
    assert document["schema"] == "pytest-latency/1"
    (run,) = document["runs"]
    assert run["test"] == "assistant.slo.yaml::assistant"
    assert run["server"]["kind"] == "sim" and run["server"]["model"] == "sim-tiny"
    phases = {phase["name"]: phase for phase in run["phases"]}
    assert phases["burst"]["offered"] == 60 and phases["burst"]["target_rate"] == 60
    for phase in phases.values():
        for key in (
            "offered",
            "completed",
            "failed",
            "target_rate",
            "offered_rate",
            "schedule_lag_p99_s",
        ):
            assert key in phase
    offered = sum(phase["offered"] for phase in phases.values())
    assert len(run["requests"]) == offered
    assert sorted(request["id"] for request in run["requests"]) == list(range(offered))
    request = run["requests"][0]
    for key in (
        "id",
        "trace_id",
        "phase",
        "status",
        "error",
        "intended_s",
        "sent_s",
        "ttft_s",
        "e2e_s",
        "itl_s",
        "tpot_s",
        "queue_wait_s",
        "prefill_s",
        "decode_s",
        "input_tokens",
        "output_tokens",
        "first_token_s",
        "end_s",
    ):
        assert key in request, key
    assert len(request["trace_id"]) == 32 and int(request["trace_id"], 16) >= 0
    assert request["status"] == "ok" and request["output_tokens"] == 12
    assert len(request["itl_s"]) == 11
    # The embedded server's spans reached the plugin's receiver and joined every request.
    assert run["server_timings"]["joined"] == offered == run["server_timings"]["requests"]
    assert all(r["server_source"] == "otlp:vllm" for r in run["requests"])
    for r in run["requests"]:
        assert r["queue_wait_s"] >= 0 and r["prefill_s"] > 0 and r["decode_s"] > 0
        assert r["after_queue_s"] == pytest.approx(r["ttft_s"] - r["queue_wait_s"])
    assert phases["steady"]["server_attribution"]["joined"] == phases["steady"]["completed"]
    metrics = run["server_metrics"]
    assert metrics["kind"] == "sim" and metrics["scrapes"] >= 2
    assert max(metrics["running"]) >= 1
    assert [o["metric"] for o in run["objectives"]] == [
        "ttft", "error_rate", "queue_wait", "after_queue",
    ]  # fmt: skip
    for objective in run["objectives"]:
        assert {
            "metric",
            "p",
            "max_s",
            "phase",
            "verdict",
            "estimate_s",
            "lower_s",
            "upper_s",
            "n",
            "n_effective",
        } <= objective.keys()
        # Never a wrong verdict. A p50 over 80 steady requests needs about 10 effective
        # ones; a busy machine's stalls correlate them below that (half the runs under
        # load), and inconclusive is then the honest verdict, not a defect.
        assert objective["verdict"] in ("pass", "inconclusive"), objective
        assert 0 < objective["n_effective"] <= objective["n"]
    assert run["objectives"][1]["verdict"] == "pass"  # error_rate <= 100%: decided at once


@pytest.mark.slow
def test_spec_errors_are_collection_errors_naming_file_line_and_key(pytester):
    pytester.makefile(".slo.yaml", broken=SPEC.replace("rate: 60", "rate: lots"))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*broken.slo.yaml:9: workload.phases[[]1[]].rate: expected a number*"]
    )


@pytest.mark.slow
def test_failed_objective_shows_estimate_bounds_and_slowest_traces(pytester):
    pytester.makefile(
        ".slo.yaml",
        # 160 steady requests, not 80: on a busy machine stalls correlate a short phase so
        # much that even a p50 ten times over its limit had no lower bound (inconclusive).
        strict=SPEC.replace("max: 2s, phase: steady", "max: 1ms, phase: steady").replace(
            "rate: 20, duration: 4s", "rate: 40, duration: 4s"
        ),
    )
    result = pytester.runpytest("--latency-trace-url", "http://127.0.0.1:16686/trace/{trace_id}")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    # Lines are wrapped at the terminal's width: compare with the whitespace folded.
    assert "FAIL ttft p50 <= 1ms [steady]: estimate" in " ".join(text.split())
    assert "bounds" in text and "n=" in text
    assert text.count("http://127.0.0.1:16686/trace/") >= 5


@pytest.mark.slow
def test_fixture_runs_phases_and_hook_sees_every_run(pytester):
    pytester.makeconftest(
        """
        RUNS = []

        def pytest_latency_run_finished(result):
            RUNS.append(result.offered)

        def pytest_sessionfinish(session):
            print("runs seen by hook:", RUNS)
        """
    )
    pytester.makepyfile(
        textwrap.dedent(
            f"""
            import yaml
            from pytest_latency import Phase, ServerSpec, objective

            SERVER = ServerSpec(**yaml.safe_load({FAST_SIM!r}))

            def test_python_api(latency):
                result = latency.run(
                    Phase("steady", rate=10, duration_s=1, arrival="constant"),
                    input_tokens=(10, 10), output_tokens=5, seed=1, server=SERVER,
                )
                assert result.offered == 10
                assert all(record.ok for record in result.records)
                assert result.percentile("ttft", 50) < 1.0
                result.assert_slo(objective("e2e", p=50, max="5s"))
            """
        )
    )
    # Ten requests cannot decide the median; this test is about the fixture and the hook.
    result = pytester.runpytest("-s", "--latency-inconclusive", "warn")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*runs seen by hook: [[]10[]]*"])


@pytest.mark.slow
def test_inconclusive_policy(pytester):
    # A p99 from ~80 requests cannot be bounded. The plan says so before anything is sent
    # (an error); allowed to run anyway, the verdict is inconclusive and the policy
    # applies: fail (the default) fails, warn passes, skip skips.
    pytester.makefile(".slo.yaml", few=SPEC.replace("p: 50, max: 2s", "p: 99, max: 2s"))
    refused = pytester.runpytest("--latency-json", "refused.json")
    refused.assert_outcomes(errors=1)
    # Four objectives and the runaway check share the 1%: 99.8% each.
    assert (
        "ttft p99 <= 2s [steady]: 78 requests planned, at least 688 needed at 99.8%"
        " confidence: make steady at least"
    ) in " ".join(refused.stdout.str().split())
    assert json.loads((pytester.path / "refused.json").read_text())["runs"] == []  # nothing sent
    allow = "--latency-allow-undecidable"
    failed = pytester.runpytest(allow)
    failed.assert_outcomes(failed=1)
    text = " ".join(failed.stdout.str().split())
    assert "latency objectives undecided" in text and "INCONCLUSIVE ttft p99" in text
    warned = pytester.runpytest("-W", "default", allow, "--latency-inconclusive", "warn")
    # At least the two warnings below; on a busy machine another short-run objective may
    # be inconclusive too (one more warning), which is not what this test is about.
    outcomes = warned.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("warnings", 0) >= 2, outcomes
    text = " ".join(warned.stdout.str().split())
    assert "LatencyUndecidableWarning" in text and "Running anyway" in text
    assert "too few samples for a p99 bound" in text
    pytester.runpytest(allow, "--latency-inconclusive", "fail").assert_outcomes(failed=1)
    pytester.runpytest(allow, "--latency-inconclusive", "skip").assert_outcomes(skipped=1)
    # The ini twin allows it as well: it runs (no error) and passes under warn.
    pytester.makeini("[pytest]\nlatency_allow_undecidable = true\n")
    pytester.runpytest("--latency-inconclusive", "warn").assert_outcomes(passed=1)


@pytest.mark.slow
def test_generator_that_cannot_keep_up_makes_the_run_invalid_not_a_pass(pytester):
    # 4,000 requests in 0.4 s: far beyond what one Python process can launch on time,
    # so the schedule lag explodes. The objective is generous (it would pass), yet the
    # run must be an error saying why, and the JSON must say invalid.
    pytester.makefile(
        ".slo.yaml",
        flood=f"""\
server: {FAST_SIM}
workload:
  input_tokens: 5
  output_tokens: 1
  timeout: 20s
  phases: [{{name: flood, arrival: constant, rate: 10000, duration: 0.4s}}]
objectives:
  - {{metric: ttft, p: 50, max: 60s}}
""",
    )
    result = pytester.runpytest("--latency-json", "flood.json")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "latency run invalid" in text and "schedule lag p99" in text
    run = json.loads((pytester.path / "flood.json").read_text())["runs"][0]
    assert run["generator"]["valid"] is False
    assert run["generator"]["schedule_lag_p99_s"] > 0.05
    assert len(run["requests"]) == 4000
