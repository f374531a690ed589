"""``judge`` re-decides a saved run as the plugin decided it: an ``until_decided`` run at
its last look's confidence, an inconclusive verdict with what would decide it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from pytest_latency.analysis.looks import Look, LookSchedule, UntilDecided
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.verdict import Verdict
from pytest_latency.cli.judge import judge_runs, stored_timeline
from pytest_latency.records import RequestRecord, Status, read_runs, write_runs
from pytest_latency.report.json_report import objective_dict, run_dict
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Objective, Phase, Workload, objective

# Four episodes of 400 steady requests: two rounds of two episodes, the second look of
# three planned. TTFT p95 is about 165 ms; at 99% the limits below are decided (a fail
# at 120 ms, a pass at 200 ms), at the second look's share (99.84%, bounds at 3 degrees
# of freedom over episodes) neither is.
WORKLOAD = Workload(
    phases=(Phase("steady", rate=10, duration_s=40, arrival="constant"),),
    repeat=4,
    cooldown_s=1.0,
    input_tokens=(30, 30),
    output_tokens=8,
)
TEST = "tests/test_chat.py::test_chat"
SCHEDULE = LookSchedule((2, 2, 2), 300.0)
OBJECTIVES = [objective("ttft", p=95, max="120ms"), objective("ttft", p=95, max="200ms")]


def episode_records(workload: Workload, per_episode: int, seed: int = 1) -> list[RequestRecord]:
    """``per_episode`` ok requests 100 ms apart in each episode, lognormal TTFT (100 ms)."""
    rng = np.random.default_rng(seed)
    records: list[RequestRecord] = []
    for episode in range(workload.repeat):
        for index in range(per_episode):
            intended = workload.episode_start_s(episode) + index * 0.1
            ttft = float(rng.lognormal(np.log(0.1), 0.3))
            records.append(
                RequestRecord(
                    id=len(records), phase="steady", intended_s=intended, input_tokens=30,
                    sent_s=intended + 0.0005, first_token_s=intended + ttft,
                    end_s=intended + ttft + 0.1, itl_s=np.full(7, 0.1 / 7), status=Status.OK,
                    http_status=200, output_tokens=8, output_tokens_source="usage",
                    episode=episode,
                )
            )  # fmt: skip
    return records


def saved_run(
    tmp_path: Path, objectives: list[Objective], log: UntilDecided | None
) -> tuple[dict[str, Any], Path]:
    """The plugin's path: decide on the result (at the last look's share), save as JSON."""
    result = LatencyResult(
        test=TEST, server=ServerInfo("url", "http://127.0.0.1:8000", "m"), workload=WORKLOAD,
        records=episode_records(WORKLOAD, 400), started_at_unix=0.0,
        elapsed_s=170.0, baseline_key=TEST, until_decided=log,
    )  # fmt: skip
    result.evaluate(objectives)
    path = tmp_path / "run.json"
    document = run_dict(result)
    write_runs(path, [document])
    return document, path


def two_looks() -> UntilDecided:
    log = UntilDecided(300.0, SCHEDULE, used_s=180.0, stopped="budget spent")
    for number, confidence in enumerate(SCHEDULE.confidences(0.99)[:2], start=1):
        log.looks.append(Look(number, 2 * number, 800 * number, 85.0 * number, confidence, ()))
    return log


def test_an_until_decided_run_is_re_judged_at_its_last_looks_share(tmp_path: Path) -> None:
    document, path = saved_run(tmp_path, OBJECTIVES, two_looks())
    [judged] = judge_runs(read_runs(path), OBJECTIVES)
    assert [result.verdict for result in judged.results] == [Verdict.INCONCLUSIVE] * 2
    # Two objectives and the runaway check (one of them waits in the queue) share 99%.
    last_share = SCHEDULE.confidences(1 - 0.01 / 3)[1]
    assert [result.confidence for result in judged.results] == [last_share] * 2
    assert [objective_dict(result) for result in judged.results] == document["objectives"]
    # The same records without the looks are decided at 99%: the share is what differs.
    [plain] = judge_runs([dataclasses.replace(read_runs(path)[0], document={})], OBJECTIVES)
    # (At 99% over three tests, the runaway check one of them, the bounds at 3 degrees of
    # freedom over episodes decide neither limit either; at 99% over two they did.)
    assert [result.confidence for result in plain.results] == [1 - 0.01 / 3] * 2
    assert last_share > 1 - 0.01 / 3


def test_an_inconclusive_verdict_says_what_would_decide_it_as_the_plugin_does(
    tmp_path: Path,
) -> None:
    document, path = saved_run(tmp_path, OBJECTIVES, two_looks())
    [judged] = judge_runs(read_runs(path), OBJECTIVES)
    for result, stored in zip(judged.results, document["objectives"], strict=True):
        assert result.reason == stored["reason"]
        # Four episodes ran (repeat: 4): the advice is in episodes and an until_decided budget.
        assert "to decide it: " in result.reason
        assert "episodes (repeat: " in result.reason and "until_decided: {max: " in result.reason


def test_the_timeline_is_the_saved_workloads_phases_and_episodes(tmp_path: Path) -> None:
    _, path = saved_run(tmp_path, OBJECTIVES[:1], None)
    [run] = read_runs(path)
    timeline = stored_timeline(run)
    assert timeline is not None
    assert (timeline.repeat, timeline.cooldown_s, timeline.phases) == (4, 1.0, WORKLOAD.phases)
    assert stored_timeline(dataclasses.replace(run, workload={"phases": "x"})) is None
    assert stored_timeline(dataclasses.replace(run, workload=None)) is None
