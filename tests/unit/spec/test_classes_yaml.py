"""``classes:`` in a workload and ``class:`` in objectives: parsed, checked at their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.spec.model import Objective, Phase, ServiceClass, SpecError, Workload, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

SPEC = """\
workload:
  phases: [{{name: steady, rate: 50, duration: 20s}}]
  classes: {classes}
objectives:
  - {{metric: ttft, p: 50, max: 1s, class: {name}}}
"""
TWO = (
    "[{name: premium, share: 20, priority: 0, headers: {x-priority: high}},"
    " {name: batch, share: 80%}]"
)


def load(tmp_path: Path, classes: str, name: str = "premium"):  # type: ignore[no-untyped-def]
    path = tmp_path / "classes.slo.yaml"
    path.write_text(SPEC.format(classes=classes, name=name))
    return load_slo_file(path)


def test_classes_load_with_percent_shares_priority_and_headers(tmp_path: Path) -> None:
    spec = load(tmp_path, TWO)
    premium, batch = spec.workload.classes
    assert premium == ServiceClass("premium", 0.2, 0, (("x-priority", "high"),))
    assert batch == ServiceClass("batch", 0.8)
    assert spec.objectives[0].service_class == "premium"
    assert spec.objectives[0].label == "ttft p50 <= 1s [class premium]"
    assert spec.workload.to_json()["classes"] == [
        {"name": "premium", "share": 20.0, "priority": 0, "headers": {"x-priority": "high"}},
        {"name": "batch", "share": 80.0, "priority": None, "headers": {}},
    ]


@pytest.mark.parametrize(
    ("classes", "line", "problem"),
    [
        (
            "[{name: a, share: 60}, {name: b, share: 30}]",
            3,
            "class shares must add up to 100%, got 90%",
        ),
        ("[{name: a, share: 50}, {name: a, share: 50}]", 3, "class names must be unique"),
        ("[{name: a}]", 3, "workload.classes[0].share: missing"),
        ("[{name: a, share: 100, weight: 2}]", 3, "workload.classes[0].weight: unknown key"),
        ("[{name: a, share: 100, priority: high}]", 3, "priority"),
        ("premium", 3, "expected a non-empty list of classes"),
    ],
)
def test_bad_classes_name_file_line_and_key(
    tmp_path: Path, classes: str, line: int, problem: str
) -> None:
    with pytest.raises(SpecFileError) as caught:
        load(tmp_path, classes, name="a")
    assert f"classes.slo.yaml:{line}:" in str(caught.value) and problem in str(caught.value)


def test_an_objective_naming_an_unknown_class_is_an_error_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError) as caught:
        load(tmp_path, TWO, name="premum")
    text = str(caught.value)
    assert "classes.slo.yaml:5: objectives[0].class: unknown class 'premum'" in text
    assert "did you mean 'premium'" in text


def test_credential_like_header_values_never_reach_the_json() -> None:
    shown = ServiceClass("t", 1.0, headers=(("Authorization", "Bearer sk-1"), ("x-tenant", "a")))
    assert shown.to_json()["headers"] == {"Authorization": "<redacted>", "x-tenant": "a"}


def test_classes_and_class_objectives_in_python() -> None:
    with pytest.raises(SpecError, match="shares must add up to 100%"):
        Workload(phases=(Phase("s", rate=1, duration_s=1),), classes=(ServiceClass("a", 0.5),))
    goal = objective("ttft", p=95, max="1s", service_class="premium")
    assert isinstance(goal, Objective) and goal.service_class == "premium"
