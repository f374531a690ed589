"""Response limits set by flag or ini twin reach the driver: an over-long SSE line or an
oversized body makes that request a ``protocol_error`` with a clear error text."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_latency.driver import ResponseLimits
from pytest_latency.plugin import options as _options
from pytest_latency.plugin.sizes import parse_size
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

SPEC = """\
server: {{url: "{url}", model: {model}, api: chat}}
workload:
  seed: 1
  input_tokens: 5
  output_tokens: 4
  timeout: 10s
  phases: [{{name: steady, arrival: constant, rate: 20, duration: 1s}}]
objectives:
  - {{metric: ttft, p: 50, max: 10s}}  # decidable with 20 requests: pass or fail
"""
# One content chunk whose SSE line is ~4 KiB: fine by default (1 MiB), over a 1 KiB limit.
LONG_LINE = Script(steps=(Step(0.0, chat_chunk("x" * 4000)), Step(0.001, DONE)))
# 40 short lines, ~5 KiB in all: no line is long, the body is over a 2 KiB limit.
MANY_LINES = Script(
    steps=(*(Step(0.0005 * i, chat_chunk(f"t{i:03}" * 20)) for i in range(40)), Step(0.03, DONE))
)


def _run(
    pytester: pytest.Pytester, server: ScriptedServer, model: str, *args: str, ini: str = ""
) -> list[dict[str, object]]:
    server.models = [model]  # the preflight checks the model is listed
    pytester.makefile(".slo.yaml", limits=textwrap.dedent(SPEC.format(url=server.url, model=model)))
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest("--latency-json", "run.json", *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    return run["requests"]  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flag", "ini"])
def test_a_small_line_limit_makes_an_over_long_sse_line_a_protocol_error(
    pytester: pytest.Pytester, server: ScriptedServer, how: str
) -> None:
    server.route("long", LONG_LINE)
    if how == "flag":
        requests = _run(pytester, server, "long", "--latency-max-line-bytes", "1KiB")
    else:
        requests = _run(pytester, server, "long", ini="latency_max_line_bytes = 1 KiB")
    assert len(requests) == 20  # one record per offered request
    assert {r["status"] for r in requests} == {"protocol_error"}
    assert {r["error"] for r in requests} == {"SSE line over 1 KiB"}


@pytest.mark.slow
def test_the_same_line_passes_under_the_default_limit(
    pytester: pytest.Pytester, server: ScriptedServer
) -> None:
    server.route("long", LONG_LINE)
    requests = _run(pytester, server, "long")
    assert {r["status"] for r in requests} == {"ok"}


@pytest.mark.slow
def test_a_small_body_limit_makes_an_oversized_body_a_protocol_error(
    pytester: pytest.Pytester, server: ScriptedServer
) -> None:
    server.route("many", MANY_LINES)
    requests = _run(pytester, server, "many", "--latency-max-body-bytes", "2KiB")
    assert len(requests) == 20
    assert {r["status"] for r in requests} == {"protocol_error"}
    assert {r["error"] for r in requests} == {"body over 2 KiB"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--latency-max-line-bytes", "64KB"], "expected a size such as 64KiB"),
        (["--latency-max-line-bytes", "0"], "between 1 byte and 1 GiB"),
        (["--latency-max-line-bytes", "2GiB"], "between 1 byte and 1 GiB"),
        (["--latency-max-body-bytes", "1.5"], "not a whole number of bytes"),
        (["--latency-max-body-bytes", "lots"], "--latency-max-body-bytes 'lots'"),
    ],
)
def test_bad_sizes_are_usage_errors_at_configure_time(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.parametrize(
    ("text", "count"),
    [("300", 300), ("300B", 300), ("64KiB", 65536), ("8 mib", 8 * 1024**2), ("1.5MiB", 1572864)],
)
def test_sizes_parse_in_binary_units(text: str, count: int) -> None:
    assert parse_size(text, maximum=1024**3) == count


def test_option_defaults_are_the_drivers() -> None:
    assert ResponseLimits().max_line_bytes == _options.DEFAULT_MAX_LINE_BYTES
    assert ResponseLimits().max_body_bytes == _options.DEFAULT_MAX_BODY_BYTES
