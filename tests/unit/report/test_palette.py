"""Colours keep one meaning across the HTML report's charts: a phase is drawn in the
same colour in every chart (its cohorts in its colour), and the colours that mean
something (queue, sending, pass, fail) mean only that."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.html import palette
from pytest_latency.report.html.cdf import cohort_charts, phase_charts
from pytest_latency.report.html.model import ReportRun
from pytest_latency.report.html.page import _asset
from pytest_latency.report.json_report import run_dict
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload

PHASES = ("warmup", "steady", "spike")


@pytest.fixture(scope="module")
def run() -> ReportRun:
    """Three phases, each with short and long prompts (two cohorts per phase)."""
    phases = tuple(Phase(name, 10, 2.0) for name in PHASES)
    workload = Workload(phases=phases, seed=1, input_tokens=(20, 2000), output_tokens=20)
    records = []
    for index in range(60):
        at = index * 0.1
        records.append(
            RequestRecord(
                index, PHASES[index // 20], at, 20 if index % 2 else 2000, sent_s=at,
                first_token_s=at + 0.05 + 0.001 * index, end_s=at + 0.3, status=Status.OK,
                output_tokens=20, itl_s=np.full(19, 0.01),
            )
        )  # fmt: skip
    server = ServerInfo(kind="sim", url="http://127.0.0.1:1", model="m")
    result = LatencyResult(
        test="t", server=server, workload=workload, records=records,
        started_at_unix=0.0, elapsed_s=6.0,
    )  # fmt: skip
    return ReportRun(result.test, run_dict(result), result.records)


def _legend(chart: str) -> dict[str, list[str]]:
    """label -> its classes, from a CDF's legend."""
    found = re.findall(r'<li><span class="sw ([^"]*)"></span>([^<]*)</li>', chart)
    return {label: cls.split() for cls, label in found}


def test_a_phase_has_one_colour_in_the_phase_and_cohort_charts(run: ReportRun) -> None:
    by_phase = dict(phase_charts(run))
    by_cohort = dict(cohort_charts(run))
    for metric in ("TTFT", "end-to-end"):
        phases = _legend(by_phase[f"{metric} by phase"])
        cohorts = _legend(by_cohort[f"{metric} by cohort"])
        assert len(cohorts) == 2 * len(PHASES)
        colours = {phases[name][0] for name in PHASES}
        assert len(colours) == len(PHASES)  # each phase its own colour
        for label, classes in cohorts.items():
            phase = label.split(" · ")[0]
            assert classes[0] == phases[phase][0], (label, classes, phases[phase])
        # Within a phase, the cohorts differ by dashes.
        dashes = [tuple(classes) for label, classes in cohorts.items() if label.startswith("spike")]
        assert len(set(dashes)) == 2
        # And the curves are drawn in those classes.
        for classes in phases.values():
            assert f'class="cdf {" ".join(classes)}"' in by_phase[f"{metric} by phase"]


def _rules(css: str) -> dict[str, str]:
    """selector -> its declarations, from every rule naming it."""
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        for selector in selectors.split(","):
            rules[selector.strip()] = rules.get(selector.strip(), "") + body + ";"
    return rules


def test_colours_with_a_meaning_mean_only_that() -> None:
    css = palette.css() + _asset("report.css")
    rules = _rules(css)
    series = {re.search(r"--c:(#\w+)", rules[f".c{k}"]).group(1) for k in range(6)}  # type: ignore[union-attr]
    assert not series & set(palette.MEANINGS.values())  # no phase looks like the queue
    assert len(series) == len(palette.SERIES)
    meanings = {
        "fail": (
            ".limit",
            ".bracket-fail",
            ".mk-fail",
            ".pt.fail",
            ".limit-label",
            ".seg-fail",
            ".invalid",
        ),
        "pass": (".bracket-pass", ".v-pass"),
        "queue": (".pt.queue", ".depth-waiting", ".seg-queue"),
        "prefill": (".seg-prefill",),
        "lag": (".rate-sent", ".mk-sent", ".seg-lag"),
        "ttft": (".pt.ttft", ".mk-first"),
        "stream": (".rate-done", ".mk-last"),
    }
    for meaning, selectors in meanings.items():
        for selector in selectors:
            assert f"var(--{meaning})" in rules[selector], (selector, rules[selector])
    for meaning in palette.MEANINGS:  # and nowhere else
        users = {s for s, body in rules.items() if f"var(--{meaning})" in body}
        assert users <= set(meanings[meaning]), (meaning, users - set(meanings[meaning]))
