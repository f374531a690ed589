"""``pytest-latency compare A.json B.json``: per-phase percentiles side by side with B/A."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_latency.analysis.side_by_side import Cell
from pytest_latency.cli.main import main
from pytest_latency.records import RequestRecord
from pytest_latency.report.json_report import write_json
from pytest_latency.spec.model import Phase
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))


def _write(path: Path, runs: dict[str, list[RequestRecord]]) -> Path:
    """Real run files, as the plugin writes them (they must match the JSON schema)."""
    write_json(path, [make_result(records, PHASES, test=test) for test, records in runs.items()])
    return path


@pytest.fixture
def files(tmp_path):
    a = _write(
        tmp_path / "a.json", {"t::chat": scaled_records(1.0), "t::only_a": scaled_records(1.0)}
    )
    b = _write(
        tmp_path / "b.json", {"t::chat": scaled_records(2.0), "t::only_b": scaled_records(1.0)}
    )
    return a, b


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_ratios_are_b_over_a_per_phase_metric_and_percentile(files, capsys):
    assert main(["compare", *map(str, files), "--width", "200"]) == 0
    lines = _lines(capsys)
    assert lines[0].startswith("t::chat  (A 120 requests; B 120 requests)")
    rows = {tuple(line.split()[:2]): line for line in lines if line.startswith("  ")}
    assert set(rows) == {
        ("phase", "metric"),
        *((phase, metric) for phase in ("steady", "burst") for metric in ("ttft", "itl", "e2e")),
    }
    # B is A slowed down twice: every ratio is 2.00x, and the values are the known ones.
    for key, line in rows.items():
        if key != ("phase", "metric"):
            assert line.count("2.00x") == 4, line
    steady_ttft = rows[("steady", "ttft")].split("|")
    assert steady_ttft[1].split() == ["505.0ms", "1.01s", "2.00x"]  # p50 of 10..1000 ms
    assert steady_ttft[4].split() == ["990.1ms", "1.98s", "2.00x"]  # p99
    assert rows[("burst", "e2e")].split("|")[1].split() == ["5.18s", "10.36s", "2.00x"]
    assert "only in A: t::only_a" in lines and "only in B: t::only_b" in lines


@pytest.mark.parametrize("width", [50, 60, 80, 100, 132, 200])
def test_every_line_fits_the_width(files, capsys, width):
    assert main(["compare", *map(str, files), "--width", str(width)]) == 0
    lines = _lines(capsys)
    assert max(len(line) for line in lines) <= width
    # Every percentile is still printed: 6 rows x 4 percentiles of 2.00x.
    assert sum(line.count("2.00x") for line in lines) == 24


def test_failed_requests_are_unbounded_and_ratios_say_so(tmp_path, capsys):
    a = _write(tmp_path / "a.json", {"t": scaled_records(1.0)})
    b = _write(tmp_path / "b.json", {"t": scaled_records(1.0, failed=30)})  # 30% of steady failed
    assert main(["compare", str(a), str(b), "--percentiles", "50,90", "--width", "120"]) == 0
    steady_ttft = next(line for line in _lines(capsys) if line.split()[:2] == ["steady", "ttft"])
    assert steady_ttft.split("|")[2].split() == ["901.0ms", "inf", "inf"]  # p90


def test_cell_ratio_is_nan_when_it_means_nothing():
    assert math.isnan(Cell(50, math.inf, math.inf).ratio)
    assert math.isnan(Cell(50, math.inf, 1.0).ratio)
    assert math.isnan(Cell(50, math.nan, 1.0).ratio)
    assert math.isnan(Cell(50, 0.0, 0.0).ratio)
    assert Cell(50, 1.0, math.inf).ratio == math.inf
    assert Cell(50, 0.5, 0.75).ratio == 1.5


def test_usage_errors(files, tmp_path, capsys):
    a, _ = files
    other = _write(tmp_path / "other.json", {"t::else": scaled_records(1.0)})
    assert main(["compare", str(a), str(other)]) == 2
    assert "no test is in both files" in capsys.readouterr().err
    assert main(["compare", str(a), str(a), "--metrics", "ttft,bogus"]) == 2
    assert main(["compare", str(a), str(a), "--percentiles", "0.95"]) == 2
    assert main(["compare", str(a), str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


@pytest.mark.slow
def test_reachable_as_python_m(files):
    done = subprocess.run(
        [sys.executable, "-m", "pytest_latency", "compare", *map(str, files), "--width", "80"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "p50: A, B, B/A" in done.stdout
