"""The examples in the README and docs are valid specs and valid Python."""

import re
from pathlib import Path

import pytest

from pytest_latency.spec_yaml import load_slo_file

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


@pytest.mark.parametrize(("path", "block"), _blocks("python"))
def test_python_examples_compile(path, block):
    compile(block, f"{path.name} example", "exec")
