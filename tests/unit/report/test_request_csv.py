"""The per-request CSV: a documented header, then every offered request exactly once."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from pytest_latency.cli.main import main
from pytest_latency.report.json_report import write_json
from pytest_latency.report.request_csv import CsvRun, request_columns, write_requests_csv
from pytest_latency.spec.model import Phase
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))
DOCS = Path(__file__).parents[3] / "docs" / "reports.md"


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_request_is_one_row_with_its_scalar_fields(tmp_path):
    records = scaled_records(1.0, failed=3)
    path = tmp_path / "requests.csv"
    written = write_requests_csv(path, [CsvRun("t.py::test_chat", "t.py::test_chat", records)])
    rows = _read(path)
    assert written == len(rows) == len(records) == 120
    assert sorted(int(row["id"]) for row in rows) == list(range(120))  # each exactly once
    by_id = {int(row["id"]): row for row in rows}
    for record in records:
        row = by_id[record.id]
        assert row["status"] == record.status.value and row["phase"] == record.phase
        if record.ttft_s is None:
            assert row["ttft_s"] == "" and row["error"] == "500"
        else:
            assert float(row["ttft_s"]) == pytest.approx(record.ttft_s, abs=1e-12)
    assert {row["test"] for row in rows} == {"t.py::test_chat"}


def test_the_header_names_the_columns_and_is_documented(tmp_path):
    columns = request_columns()
    assert columns[:2] == ("test", "baseline_key")
    assert {"ttft_s", "e2e_s", "tpot_s", "itl_median_s", "queue_wait_s", "status"} <= set(columns)
    assert "itl_s" not in columns and "prompt" not in columns  # lists and content stay in JSON
    path = tmp_path / "empty.csv"
    assert write_requests_csv(path, []) == 0
    assert path.read_text().strip() == ",".join(columns)
    documented = re.search(r"```text\n(test,baseline_key,[^\n]*)\n```", DOCS.read_text())
    assert documented is not None and tuple(documented.group(1).split(",")) == columns


def test_report_writes_the_csv_of_a_run_file(tmp_path, capsys):
    run_file = tmp_path / "runs.json"
    write_json(run_file, [make_result(scaled_records(1.0), PHASES, test="t.py::test_a")])
    out = tmp_path / "out.csv"
    assert main(["report", str(run_file), "--csv", str(out)]) == 0
    assert "CSV report:" in capsys.readouterr().out
    rows = _read(out)
    assert len(rows) == 120 and rows[0]["test"] == "t.py::test_a"
    assert float(rows[5]["ttft_s"]) == pytest.approx(0.06)
