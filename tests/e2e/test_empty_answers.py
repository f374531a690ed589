"""A server that answers 12% of requests with an empty stream (a 200 with only
``[DONE]``), through pytest on loopback: those requests fail, so the run's TTFT p95 FAILs.

Before, an empty stream was ``ok`` with no first token: it dropped out of the TTFT sample
and counted as a success, and the same server passed a TTFT p95 49 times in 50.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

pytestmark = pytest.mark.slow  # 240 requests in an inner pytest (12 s of load)

INNER_TIMEOUT_S = 180  # bounds the inner pytest on a busy machine (about 15 s idle)
EMPTY_SHARE = 0.12  # of the run's requests, drawn at random (seeded by the request index)
FOUR_TOKENS = Script(
    steps=(
        Step(0.0, chat_chunk("Hi", role="assistant")),
        *(Step(0.005 * i, chat_chunk(" there")) for i in range(1, 4)),
        Step(0.02, chat_chunk(finish="stop")),
        Step(0.02, DONE),
    )
)
EMPTY = Script(steps=(Step(0.01, DONE),))
SPEC = """\
server: {{url: "{url}", model: m}}
workload:
  output_tokens: 4
  input_tokens: 5
  timeout: 5s
  phases: [{{name: steady, arrival: constant, rate: 20, duration: 12s}}]
objectives:
  - {{metric: ttft, p: 95, max: 2s}}
"""


@pytest.fixture
def empty_answering_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    server.models = ["m"]

    # Index 0 is the readiness check's request: it gets a real answer. (A fixed period
    # would be a pattern in send order, not the independent failures of the issue.)
    def script(index: int) -> Script:
        empty = index > 0 and random.Random(index).random() < EMPTY_SHARE
        return EMPTY if empty else FOUR_TOKENS

    server.route("m", script)
    server.start()
    yield server
    server.stop()


def test_twelve_percent_empty_streams_fail_the_ttft_p95(
    pytester: pytest.Pytester, empty_answering_server: ScriptedServer
) -> None:
    pytester.makefile(".slo.yaml", empty=SPEC.format(url=empty_answering_server.url))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--latency-json", "run.json", timeout=INNER_TIMEOUT_S
    )
    assert result.ret != 0, result.stdout.str()
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    empty = [r for r in run["requests"] if (r["error"] or "").startswith("empty answer")]
    assert len(run["requests"]) == 240
    drawn = sum(random.Random(index).random() < EMPTY_SHARE for index in range(1, 241))
    assert len(empty) == pytest.approx(drawn, abs=2)  # the run's own draw, give or take order
    assert {r["status"] for r in empty} == {"http_error"}
    assert all(r["first_token_s"] is None for r in empty)
    (ttft,) = run["objectives"]
    assert ttft["verdict"] == "fail", ttft
