"""compare warns when a baseline and a candidate ran on other GPUs, versions or models."""

from __future__ import annotations

from typing import Any

from pytest_latency.analysis.environment_diff import environment_differences


def run(gpus: list[str], version: str | None = "0.32.0", model: str = "m") -> dict[str, Any]:
    return {
        "environment": {
            "gpus": [{"name": name} for name in gpus],
            "server": {"kind": "vllm", "version": version},
            "model": model,
        }
    }


def test_the_same_environment_gives_no_warning() -> None:
    assert environment_differences(run(["A100"]), run(["A100"])) == []


def test_other_gpus_are_named_on_both_sides() -> None:
    (warning,) = environment_differences(run(["A100"]), run(["H100", "H100"]))
    assert warning == "different GPUs: A A100; B H100, H100"


def test_other_server_versions_and_models_each_warn() -> None:
    warnings = environment_differences(run([], "0.31.0", "a"), run([], None, "b"))
    assert warnings == [
        "different server versions: A 0.31.0; B unknown",
        "different models: A a; B b",
    ]


def test_a_run_saved_before_environments_is_not_warned_about() -> None:
    assert environment_differences({"server": {}}, run(["H100"])) == []


def test_compare_prints_the_warning_under_the_test() -> None:
    from pytest_latency.analysis.side_by_side import Comparison, compare_pair
    from pytest_latency.records import RequestRecord, Status, StoredRun
    from pytest_latency.report.compare_table import format_comparison

    def stored(document: dict[str, Any]) -> StoredRun:
        record = RequestRecord(0, "steady", 0.0, 10, sent_s=0.0, first_token_s=0.1, end_s=0.2)
        record.status = Status.OK
        return StoredRun("t", {}, None, True, [record], document)

    test = compare_pair("t", stored(run(["A100"])), stored(run(["H100"])))
    text = format_comparison(Comparison((test,), (), ()), 200)
    assert "  warning: different GPUs: A A100; B H100" in text.splitlines()
