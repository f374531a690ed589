"""--latency-record-content: prompts and answers reach the records and the reports only
when asked for, as text that is never markup."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_latency.driver import Target, run_plan
from pytest_latency.records import baseline_row, record_from_dict, record_to_dict
from tests.helpers.json_schema import assert_valid_run_file
from tests.helpers.scripted_server import (
    DONE,
    PROMPT,
    Script,
    ScriptedServer,
    Step,
    chat_chunk,
    plan_at,
)

HOSTILE = "<script>alert(1)</script> & </textarea>"


def test_the_driver_keeps_prompt_and_answer_only_when_asked(server: ScriptedServer) -> None:
    steps = (Step(0.0, chat_chunk(HOSTILE[:20])),
             Step(0.01, chat_chunk(HOSTILE[20:], finish="stop")), Step(0.01, DONE))  # fmt: skip
    server.route("m", Script(steps=steps))
    kept = run_plan(plan_at([0.0]), Target(server.url, "m", record_content=True)).records[0]
    assert kept.ok and (kept.prompt, kept.content) == (PROMPT, HOSTILE)
    row = record_to_dict(kept)
    assert (row["prompt"], row["content"]) == (PROMPT, HOSTILE)
    assert record_from_dict(json.loads(json.dumps(row))).content == HOSTILE
    assert "prompt" not in baseline_row(row) and "content" not in baseline_row(row)
    plain = run_plan(plan_at([0.0]), Target(server.url, "m")).records[0]
    assert plain.ok and plain.prompt is None and plain.content is None
    assert "prompt" not in record_to_dict(plain) and "content" not in record_to_dict(plain)


SPEC = """\
workload:
  seed: 3
  input_tokens: 8
  output_tokens: 6
  phases: [{name: steady, arrival: constant, rate: 10, duration: 2s}]
objectives:
  - {metric: error_rate, max: 50%}
"""


@pytest.mark.slow
@pytest.mark.parametrize("record_content", [True, False])
def test_the_reports_show_content_only_with_the_flag(
    pytester: pytest.Pytester, record_content: bool
) -> None:
    (pytester.path / "content.slo.yaml").write_text(textwrap.dedent(SPEC))
    flags = ["--latency-record-content"] if record_content else []
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--latency-allow-undecidable", "--latency-json", "run.json",
        "--latency-html", "run.html", *flags,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    (run,) = assert_valid_run_file(Path(pytester.path / "run.json"))["runs"]
    requests = run["requests"]
    assert len(requests) == 20 and all(request["status"] == "ok" for request in requests)
    html = (pytester.path / "run.html").read_text()
    if not record_content:
        assert not any("prompt" in request or "content" in request for request in requests)
        return
    for request in requests:
        assert request["prompt"] and request["content"]
        # The embedded server streams one word per token.
        assert len(request["content"].split()) == request["output_tokens"] == 6
    # The hover cards carry the text (as JSON data, never markup).
    assert json.dumps(requests[0]["content"])[1:-1][:40] in html
