"""The ``capacity:`` block and ``{metric: capacity}``: strict; errors name file, line, key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.spec.capacity import CapacitySpec, capacity_spec
from pytest_latency.spec.model import SpecError, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_objectives, load_slo_file

CONTRACT = """\
workload: {seed: 5, input_tokens: 20, output_tokens: 20, timeout: 30s}   # no phases
capacity:
  rates: [1, 30]     # search range, req/s
  probe: 60s         # longest probe
  budget: 6m         # the whole search, warm-ups and drains included
  arrival: poisson   # default
objectives:
  - {metric: ttft, p: 90, max: 300ms}
  - {metric: capacity, min: 2}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cap.slo.yaml"
    path.write_text(text)
    return path


def test_the_contract_example_parses(tmp_path: Path) -> None:
    spec = load_slo_file(write(tmp_path, CONTRACT))
    assert spec.capacity == CapacitySpec((1.0, 30.0), 60.0, 360.0, "poisson")
    assert spec.capacity.warmup_s == 6.0  # 10% of the probe
    assert [phase.name for phase in spec.workload.phases] == ["warmup", "probe"]
    assert spec.workload.seed == 5 and spec.workload.timeout_s == 30.0
    assert spec.objectives[1] == objective("capacity", min=2)
    assert spec.objectives[1].label == "capacity >= 2 req/s"
    assert load_objectives(write(tmp_path, CONTRACT))[1].metric == "capacity"  # judge's path


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "words"),
    [
        ("probe: 60s", "probe: 60", 4, "capacity.probe", "unit"),
        ("budget: 6m", "budget: 6", 5, "capacity.budget", "unit"),
        ("budget: 6m", "budget: 30s", 5, "capacity.budget", "does not fit one probe"),
        ("rates: [1, 30]", "rates: [30, 1]", 3, "capacity.rates", "rise"),
        ("rates: [1, 30]", "rates: 30", 3, "capacity.rates", "[low, high]"),
        ("rates: [1, 30]", "rates: [0, 30]", 3, "capacity.rates", "above 0"),
        ("rates: [1, 30]", "rates: [1, 30ms]", 3, "capacity.rates", "requests per second"),
        ("arrival: poisson", "arrival: ramp", 6, "capacity.arrival", "poisson"),
        ("arrival: poisson", "arival: poisson", 6, "capacity.arival", "unknown key"),
        ("probe: 60s", "probe: 1s", 4, "capacity.probe", "probe"),
        ("min: 2}", "min: 2ms}", 9, "objectives[1].min", "requests per second"),
        ("min: 2}", "max: 2s}", 9, "objectives[1].max", "unknown key"),
        ("{metric: capacity, min: 2}", "{metric: capacity}", 9, "objectives[1].min", "missing"),
        ("300ms}", "300ms, phase: probe}", 8, "objectives[0].phase", "remove phase"),
        ("max: 300ms}", "max_regression: 10%}", 8, "objectives[0].metric", "absolute"),
        ("  - {metric: capacity, min: 2}\n", "", 8, "objectives", "metric: capacity"),
        ("seed: 5,", "seed: 5, phases: [],", 1, "workload.phases", "own phases"),
    ],
)
def test_errors_name_file_line_and_key(
    tmp_path: Path, old: str, new: str, line: int, key: str, words: str
) -> None:
    assert old in CONTRACT
    path = write(tmp_path, CONTRACT.replace(old, new))
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    error = caught.value
    assert (error.path, error.line, error.key) == (path, line, key), str(error)
    assert words in error.problem, str(error)


def test_a_capacity_objective_needs_a_search(tmp_path: Path) -> None:
    text = """\
workload: {phases: [{name: steady, rate: 2, duration: 10s}]}
objectives:
  - {metric: ttft, p: 50, max: 1s}
  - {metric: capacity, min: 2}
"""
    with pytest.raises(SpecFileError, match="capacity: block") as caught:
        load_slo_file(write(tmp_path, text))
    assert (caught.value.line, caught.value.key) == (4, "objectives[1].metric")


def test_the_python_twin_takes_units() -> None:
    spec = capacity_spec(rates=(1, "30/s"), probe="20s", budget="2m")
    assert spec == CapacitySpec((1.0, 30.0), 20.0, 120.0)
    assert spec.warmup_s == 2.0 and capacity_spec((1, 2), "200s", "1h").warmup_s == 10.0
    with pytest.raises(SpecError, match="unit"):
        capacity_spec(rates=(1, 30), probe=20, budget="2m")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="requests per second"):
        objective("capacity", min="20ms")
    with pytest.raises(SpecError, match="unexpected max"):
        objective("capacity", min=20, max="1s")
    assert objective("capacity", min="20 req/s").min_value == 20.0


def test_the_fixture_refuses_what_a_probe_cannot_decide() -> None:
    from pytest_latency.plugin.fixtures import LatencyFixture

    latency = LatencyFixture(None, "t.py::test")  # type: ignore[arg-type]  # never reached
    settings = {"rates": (1, 30), "probe": "10s", "budget": "1m"}
    with pytest.raises(SpecError, match="not metric capacity"):
        latency.capacity(objective("capacity", min=2), **settings)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="not metric capacity"):
        latency.capacity(**settings)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="remove phase"):
        goal = objective("ttft", p=90, max="300ms", phase="steady")
        latency.capacity(goal, **settings)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="unit"):
        latency.capacity(objective("ttft", p=90, max="300ms"), rates=(1, 30), probe=10, budget="1m")  # type: ignore[arg-type]
