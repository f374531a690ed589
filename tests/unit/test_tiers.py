"""The test suite keeps its tiers: every test module is in unit/, e2e/ or security/ (each
marked ``security``), unit mirrors the
package, tests share code only through tests/helpers, container tests are marked
(docs/architecture.md, "Tests")."""

from __future__ import annotations

import ast
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "pytest_latency"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_unit_directories_mirror_subpackages() -> None:
    unit_dirs = {path.name for path in (TESTS / "unit").iterdir() if path.is_dir()}
    unit_dirs.discard("__pycache__")
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert unit_dirs <= subpackages, unit_dirs - subpackages


def test_every_test_module_is_in_a_tier() -> None:
    stray = [
        str(path.relative_to(ROOT))
        for path in TESTS.rglob("test_*.py")
        if path.relative_to(TESTS).parts[0] not in {"unit", "e2e", "security"}
    ]
    assert stray == []


def test_every_test_directory_is_a_package() -> None:
    # without __init__.py, --import-mode=importlib and duplicate basenames break
    missing = [
        str(path.relative_to(ROOT))
        for path in [TESTS, *TESTS.rglob("*")]
        if path.is_dir() and path.name != "__pycache__" and not (path / "__init__.py").exists()
    ]
    assert missing == []


def test_no_module_imports_a_test_module() -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in TESTS.rglob("*.py")
        for name in _imported_modules(path)
        if name.rsplit(".", 1)[-1].startswith("test_")
    }
    assert offenders == set()


def test_finder_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "test_a.py"
    module.write_text("from test_b import CASES\nimport tests.unit.test_c\n")
    assert {"test_b", "tests.unit.test_c"} <= _imported_modules(module)


def test_container_tests_carry_the_container_and_slow_markers() -> None:
    for path in sorted((TESTS / "e2e" / "containers").glob("test_*.py")):
        marks = [
            ast.unparse(node.value)
            for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        ]
        assert marks == ["[pytest.mark.container, pytest.mark.slow]"], path.name


@pytest.mark.slow
def test_the_suite_collects_under_importlib_mode() -> None:
    # Same-named test modules in different tiers and helpers imported as a package must
    # work without rootdir-relative module names (docs/architecture.md, "Tests").
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--import-mode=importlib",
         "-p", "no:randomly", str(TESTS)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]


def test_a_fast_test_cannot_start_a_child_process() -> None:
    # tests/conftest.py refuses it, so that `pytest -m "not slow"` stays in-process
    with pytest.raises(AssertionError, match=r"mark it @pytest\.mark\.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    with pytest.raises(AssertionError, match=r"mark it @pytest\.mark\.slow"):
        multiprocessing.get_context("spawn").Process(target=print).start()


def _marks(decorators: list[ast.expr]) -> set[str]:
    return {ast.unparse(node) for node in decorators}


def test_serial_tests_are_also_slow() -> None:
    # `serial` says when CI runs a slow test (alone, after the parallel part), not whether
    unmarked = [
        f"{path.relative_to(ROOT)}::{node.name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
        and "pytest.mark.serial" in _marks(node.decorator_list)
        and "pytest.mark.slow" not in _marks(node.decorator_list)
    ]
    assert unmarked == []


def test_every_security_module_is_marked() -> None:
    unmarked = [
        str(path.relative_to(ROOT))
        for path in (TESTS / "security").rglob("test_*.py")
        if not any(
            line.startswith("pytestmark =") and "pytest.mark.security" in line
            for line in path.read_text().splitlines()
        )
    ]
    assert unmarked == []
