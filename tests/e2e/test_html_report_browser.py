"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

CI (``CI=true``) installs Chromium (scripts/browser.sh) and these tests must run there;
elsewhere they skip, saying how to enable them. Each test saves a screenshot next to
its report (pytest's tmp path) and, under CI, in ``reports/`` as an artifact.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_latency.report.html import write_html
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import HOSTILE, make_result, simulated_records

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI") == "true"


def _chromium_path() -> str:
    path = os.environ.get("LATENCY_CHROMIUM") or shutil.which("chromium")
    if path is None:
        reason = "Debian's chromium is not installed (apt-get install chromium, or CI=true)"
        if IN_CI:
            pytest.fail(f"{reason}: scripts/browser.sh installs it under CI")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


class Opened:
    """A report open in a page, with everything the page complained about."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1100, "height": 900})
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        self.page.on("dialog", self._dialog)
        self.page.goto(path.as_uri(), wait_until="load")

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def screenshot(self, path: Path) -> None:
        self.page.screenshot(path=str(path), full_page=True)
        if IN_CI:
            (ROOT / "reports").mkdir(exist_ok=True)
            shutil.copy(path, ROOT / "reports" / path.name)


def _assert_every_chart_drawn(page: Any, at_least: int) -> None:
    charts = page.locator("svg.chart")
    assert charts.count() >= at_least
    for index in range(charts.count()):
        chart = charts.nth(index)
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 50, index
        # Data, not just axes: curves, points, waterfall rows or attribution bars.
        marks = chart.locator("path.cdf, path.pt, .wf-row, rect.seg-queue, rect.seg-unattr")
        name = chart.get_attribute("aria-label")
        assert marks.count() > 0, f"chart {index} ({name}) draws no data"
        drawn = marks.first.bounding_box()
        assert drawn is not None and drawn["width"] + drawn["height"] > 2, name


@pytest.fixture(scope="module")
def spike_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    phases = (Phase("steady", rate=5, duration_s=20), Phase("burst", rate=25, duration_s=5))
    records = simulated_records(phases, failures_every=40)
    objectives = [objective("ttft", p=95, max="700ms", phase="steady"), objective("e2e", p=50,
                  max="10s"), objective("error_rate", max="1%")]  # fmt: skip
    result = make_result(records, phases, objectives, test=f"t.py::test_spike[{HOSTILE}]")
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_html(path, [result])
    return path


def test_report_draws_every_chart_without_errors(browser, spike_report):
    opened = Opened(browser, spike_report)
    page = opened.page
    assert page.locator("h2").first.text_content() == f"t.py::test_spike[{HOSTILE}]"
    _assert_every_chart_drawn(page, 8)  # attribution, waterfall, over time, 5 CDFs
    assert page.locator("path.pt.ttft").count() > 100
    assert page.locator(".wf-row").count() >= 10
    opened.screenshot(spike_report.with_name("html-report.png"))
    assert opened.errors == [] and opened.dialogs == []


def test_hover_shows_the_request_and_its_trace(browser, spike_report):
    page = Opened(browser, spike_report).page
    point = page.locator("path.pt.ttft").nth(10)
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    tip = page.locator("#tip")
    tip.wait_for(state="visible")
    trace = tip.locator("code.trace-id").text_content()
    assert re.fullmatch(r"[0-9a-f]{32}", trace or "")
    # The card is the request under the pointer (points may overlap: the top one).
    under = page.evaluate(
        "([x, y]) => { const k = document.elementFromPoint(x, y).closest('[data-k]').dataset.k;"
        " return JSON.parse(document.getElementById('latency-data').textContent).rows[k]; }",
        [x, y],
    )
    assert under[13] == trace
    link = tip.locator("a").get_attribute("href")
    assert link == f"https://traces.example/trace/{trace}"
    assert "request #" in (tip.text_content() or "") and "TTFT" in (tip.text_content() or "")
    page.locator(".wf-row").first.hover(force=True)
    assert re.fullmatch(r"[0-9a-f]{32}", tip.locator("code.trace-id").text_content() or "")


def test_the_timeline_zooms_and_resets(browser, spike_report):
    page = Opened(browser, spike_report).page
    chart = page.locator("svg.zoomable").nth(1)  # the over-time chart
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    before = chart.locator("g.xt text").all_text_contents()
    y = box["y"] + box["height"] * 0.3
    page.mouse.move(box["x"] + box["width"] * 0.5, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
    page.mouse.up()
    layer = chart.locator("g.zl").last
    assert (layer.get_attribute("transform") or "").startswith("matrix(")
    zoomed = chart.locator("g.xt text").all_text_contents()
    assert zoomed != before and len(zoomed) >= 3
    page.locator("button.reset").nth(1).click()
    assert chart.locator("g.xt text").all_text_contents() == before


SPIKE_TEST = f"""
import pytest
from pytest_latency import Phase, ServerSpec, objective

SERVER = ServerSpec(kind="sim", options={{"decode_base_s": 0.003, "decode_per_seq_s": 0.0001}})

@pytest.mark.parametrize("case", ["x"], ids=[{HOSTILE!r}])
def test_spike(latency, case):
    result = latency.run(
        Phase({HOSTILE!r}, rate=20, duration_s=1, arrival="constant"),
        input_tokens=(10, 10), output_tokens=5, seed=1, server=SERVER,
    )
    result.assert_slo(objective("e2e", p=50, max="5s"))
"""


def test_a_hostile_test_id_and_phase_name_render_as_text(browser, pytester, tmp_path):
    pytester.makepyfile(test_hostile=textwrap.dedent(SPIKE_TEST))
    report = tmp_path / "hostile.html"
    # 20 requests may leave the median undecided; this test is about the hostile names.
    pytester.runpytest(
        "--latency-html", str(report), "-p", "no:randomly", "--latency-inconclusive", "warn"
    ).assert_outcomes(passed=1)
    opened = Opened(browser, report)
    page = opened.page
    assert page.locator("h2").first.text_content() == f"test_hostile.py::test_spike[{HOSTILE}]"
    assert page.locator("table.phases td").first.text_content() == HOSTILE
    assert page.locator("text.phase-label").first.text_content() == HOSTILE
    _assert_every_chart_drawn(page, 5)
    opened.screenshot(tmp_path / "html-report-hostile.png")
    assert opened.dialogs == [] and opened.errors == []
