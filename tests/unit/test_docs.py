"""The examples in the README and docs are valid specs and valid Python."""

import re
from pathlib import Path

import pytest

from pytest_latency.spec.slo_yaml import load_slo_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(language: str) -> list[tuple[Path, str]]:
    found = []
    for path in DOCS:
        for block in re.findall(rf"```{language}\n(.*?)```", path.read_text(), re.S):
            found.append((path, block))
    return found


SPECS = [(path, block) for path, block in _blocks("yaml") if "workload:" in block]


def test_the_docs_have_spec_examples():
    assert len(SPECS) >= 2


@pytest.mark.parametrize(("path", "block"), SPECS)
def test_yaml_examples_are_valid_specs(tmp_path, path, block):
    spec = tmp_path / "doc.slo.yaml"
    spec.write_text(block)
    assert load_slo_file(spec).workload.phases


@pytest.mark.parametrize(("path", "block"), SPECS)
def test_yaml_examples_plan_enough_requests_to_decide_every_objective(tmp_path, path, block):
    # A spec copied from the docs must pass the plan-time power check (docs/specs.md).
    from pytest_latency.analysis.planning import plan_power
    from pytest_latency.analysis.verdict import objective_confidence
    from pytest_latency.workload import build_plan

    spec_file = tmp_path / "doc.slo.yaml"
    spec_file.write_text(block)
    spec = load_slo_file(spec_file)
    confidence = objective_confidence(len(spec.objectives))
    powers = plan_power(
        build_plan(spec.workload), spec.objectives, [confidence] * len(spec.objectives)
    )
    assert [power.describe() for power in powers if not power.decidable] == []


@pytest.mark.parametrize(("path", "block"), _blocks("python"))
def test_python_examples_compile(path, block):
    compile(block, f"{path.name} example", "exec")
