"""Bad saved files and careless paths against the CLI (issue 35, items 6 and 7): every
bad file is exit 2 with a reason and no traceback, decompression is capped, no output
replaces an input or another output, temporary files have unique names, and CSV cells
cannot become spreadsheet formulas.
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

import pytest

from pytest_latency import file_format
from pytest_latency.cli.main import main
from pytest_latency.file_format import clashing_paths, decode
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.json_report import write_json
from pytest_latency.report.request_csv import CsvRun, write_requests_csv
from pytest_latency.spec.model import Phase
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records
from tests.helpers.peak_rss import run_measured

pytestmark = pytest.mark.security

OBJECTIVES = "objectives:\n  - {metric: ttft, p: 50, max: 2s}\n"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    phases = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))
    write_json(path, [make_result(scaled_records(1.0), phases)])
    return path


def bad_files(good: Path, folder: Path) -> dict[str, Path]:
    text = good.read_text()
    document = json.loads(text)
    wrong_type = {**document, "runs": [{**document["runs"][0], "phases": 5}]}
    files = {
        "deeply nested": b'{"schema": "pytest-latency/1", "runs": ' + b"[" * 100_000,
        "truncated gzip": gzip.compress(text.encode())[:-40],
        "corrupt gzip": b"\x1f\x8b\x08\x00" + b"\xff" * 64,
        "invalid utf-8": b'{"schema": "\xff\xfe"}',
        "phases: 5": json.dumps(wrong_type).encode(),
        "requests: {}": json.dumps({**document, "runs": [{"test": "t", "requests": {}}]}).encode(),
    }
    paths = {}
    for name, data in files.items():
        # Not *.json: the suite checks every plugin-like JSON file it leaves against the schema.
        path = folder / (name.replace(" ", "_").replace(":", "") + ".bad")
        path.write_bytes(data)
        paths[name] = path
    return paths


@pytest.mark.parametrize("command", ["judge", "report", "compare", "as-peer"])
def test_every_bad_file_is_exit_2_with_a_reason_and_no_traceback(
    command: str, good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objectives = tmp_path / "o.slo.yaml"
    objectives.write_text(OBJECTIVES)
    for name, path in bad_files(good, tmp_path).items():
        argv = {
            "judge": ["judge", str(path), "--objectives", str(objectives)],
            "report": ["report", str(path), "--csv", str(tmp_path / "out.csv")],
            "compare": ["compare", str(good), str(path)],
            "as-peer": ["compare", "--as", "vllm", str(path)],
        }[command]
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 2, (name, captured.out[-500:], captured.err[-500:])
        assert "error:" in captured.err and "Traceback" not in captured.err + captured.out, name


def test_decompressed_input_is_capped_in_bounded_steps() -> None:
    bomb = gzip.compress(b" " * (8 << 20))
    with pytest.raises(ValueError, match="decompresses to more than 1 MiB"):
        decode(bomb, max_bytes=1 << 20)
    assert decode(gzip.compress(b'{"a": 1}') + gzip.compress(b" ")) == {"a": 1}  # two members


@pytest.mark.slow
def test_a_one_mib_gzip_bomb_costs_the_cli_little_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as packer:  # ~1 MiB that expands to 1 GiB
        for _ in range(1024):
            packer.write(b" " * (1 << 20))
    objectives = tmp_path / "o.slo.yaml"
    objectives.write_text(OBJECTIVES)
    run = run_measured(
        [
            sys.executable,
            "-m",
            "pytest_latency",
            "judge",
            str(bomb),
            "--objectives",
            str(objectives),
        ],
        tmp_path,
    )
    print(
        f"CLI on a {bomb.stat().st_size >> 10} KiB gzip bomb: peak RSS {run.peak_rss_mib:.0f} MiB"
    )
    assert run.code == 2, run.output
    assert "decompresses to more than 256 MiB" in run.output and "Traceback" not in run.output
    assert run.peak_rss_mib < 450  # the 256 MiB cap, the file's bytes, numpy and scipy


def test_no_output_replaces_an_input_or_another_output(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objectives = tmp_path / "o.slo.yaml"
    objectives.write_text(OBJECTIVES)
    before = good.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(good)
    for argv in (
        ["judge", str(good), "--objectives", str(objectives), "--json", str(good)],
        ["judge", str(good), "--objectives", str(objectives), "--json", str(link)],
        ["report", str(good), "--html", str(tmp_path / "x.out"), "--csv", str(tmp_path / "x.out")],
        ["report", str(good), "--csv", str(good)],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "would replace the input" in err or "name the same file" in err, err
    assert good.read_bytes() == before
    clash = clashing_paths([], [("--latency-json", Path("a")), ("--latency-csv", Path("./a"))])
    assert clash == "--latency-json and --latency-csv name the same file a"


def test_temporary_files_have_unique_names(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    planted = tmp_path / "run.json.tmp"  # the old fixed name: a planted link
    planted.symlink_to(tmp_path / "elsewhere")
    file_format.write_atomically(target, b"{}")
    assert target.read_bytes() == b"{}" and not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "run.json.tmp"]


def test_csv_cells_that_would_be_formulas_are_neutralised(tmp_path: Path) -> None:
    records = []
    for index, text in enumerate(["=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)", "+1+1",
                                  "-2+3", "\tTAB", "\rCR", "fine"]):  # fmt: skip
        record = RequestRecord(id=index, phase="steady", intended_s=0.0, input_tokens=1)
        record.status, record.error = Status.HTTP_ERROR, text
        records.append(record)
    path = tmp_path / "out.csv"
    write_requests_csv(path, [CsvRun("=cmd|' /C calc'!A0", "key", records)])
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["error"] for row in rows] == [
        "'=HYPERLINK(\"http://x\",\"y\")", "'@SUM(A1)", "'+1+1", "'-2+3", "'\tTAB", "'\rCR", "fine"
    ]  # fmt: skip
    assert rows[0]["test"].startswith("'=")
    assert rows[0]["intended_s"] == "0.0"  # numbers stay numbers
