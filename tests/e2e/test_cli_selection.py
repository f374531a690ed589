"""``--test PATTERN`` on ``judge``, ``compare`` and ``report``; ``compare`` says how it paired."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.cli.main import main
from pytest_latency.report.json_report import write_json
from pytest_latency.spec.model import Phase
from tests.helpers.known_runs import scaled_records

STEADY = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))
ONLY_STEADY = (Phase("steady", rate=10, duration_s=12),)


def _write(path: Path, runs: dict[str, tuple[tuple[Phase, ...], float]]) -> Path:
    from tests.helpers.html_runs import make_result

    results = []
    for test, (phases, scale) in runs.items():
        records = scaled_records(scale)
        if len(phases) == 1:
            for record in records:
                record.phase = "steady"
        results.append(make_result(records, phases, test=test))
    write_json(path, results)
    return path


@pytest.fixture
def run_file(tmp_path):
    return _write(
        tmp_path / "runs.json",
        {
            "tests/test_chat.py::test_chat": (STEADY, 1.0),
            "tests/test_rag.py::test_rag": (ONLY_STEADY, 1.0),
        },
    )


def test_judge_refuses_a_phase_one_run_lacks_and_says_how_to_select(run_file, tmp_path, capsys):
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text("objectives:\n  - {metric: ttft, p: 50, max: 5s, phase: burst}\n")
    assert main(["judge", str(run_file), "--objectives", str(objectives)]) == 2
    assert "--test PATTERN" in capsys.readouterr().err
    assert main(["judge", str(run_file), "--objectives", str(objectives), "--test", "chat"]) == 0
    out = capsys.readouterr().out
    assert "tests/test_chat.py::test_chat" in out and "test_rag" not in out
    assert "judged 1 run(s)" in out


def test_report_writes_only_the_selected_runs(run_file, tmp_path, capsys):
    html = tmp_path / "out.html"
    assert main(["report", str(run_file), "--html", str(html), "--test", "test_rag"]) == 0
    assert "(1 run(s))" in capsys.readouterr().out
    assert main(["report", str(run_file), "--html", str(html), "--test", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--test 'nope': no run of" in err and "tests/test_chat.py::test_chat" in err


def test_compare_pairs_the_same_test_from_another_root_and_says_so(tmp_path, capsys):
    a = _write(
        tmp_path / "a.json",
        {"specs/chat.slo.yaml::chat": (STEADY, 1.0), "x.py::test_x": (STEADY, 1.0)},
    )
    b = _write(tmp_path / "b.json", {"c2/specs/chat.slo.yaml::chat": (STEADY, 2.0)})
    assert main(["compare", str(a), str(b), "--width", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == (
        "paired 1 run(s) by baseline key:"
        " A specs/chat.slo.yaml::chat = B c2/specs/chat.slo.yaml::chat"
    )
    assert "only in A: x.py::test_x" in lines
    assert main(["compare", str(a), str(b), "--width", "200", "--test", "chat"]) == 0
    assert "only in A" not in capsys.readouterr().out
