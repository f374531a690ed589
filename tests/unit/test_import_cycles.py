"""No module imports one that imports it back (type-checking imports too), anywhere in
the package."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.import_cycles import cycles, import_graph
from tests.helpers.import_layers import upward_imports

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_latency"


def test_the_finder_sees_a_cycle_through_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\nA = 1\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nB = 2\n"
    )
    (package / "c.py").write_text("def late():\n    from pkg import a\n")
    assert cycles(import_graph(package)) == []
    assert cycles(import_graph(package, type_checking=True)) == [[["pkg.a", "pkg.b", "pkg.a"]]]


def test_telemetry_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE, type_checking=True)
    inside = {module for module in graph if module.startswith("pytest_latency.telemetry")}
    telemetry = {module: graph[module] & inside for module in inside}
    assert cycles(telemetry) == []
    assert "pytest_latency.telemetry._http" in graph["pytest_latency.telemetry.receiver_thread"]
    # the test process's side of the receiver loads no HTTP handler (nor protobuf)
    assert "pytest_latency.telemetry._http" not in graph["pytest_latency.telemetry.receiver"]


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE, type_checking=True)
    assert len(graph) > 100  # the whole package was read
    assert cycles(graph) == []


def test_the_finder_sees_an_upward_import_anywhere_in_a_module(tmp_path: Path) -> None:
    package = tmp_path / "pytest_latency"
    (package / "report").mkdir(parents=True)
    (package / "plugin").mkdir()
    for folder in (package, package / "report", package / "plugin"):
        (folder / "__init__.py").write_text("")
    (package / "plugin" / "session.py").write_text("X = 1\n")
    (package / "report" / "fine.py").write_text("import pytest_latency.report\n")
    (package / "report" / "late.py").write_text(
        "def f():\n    from pytest_latency.plugin.session import X\n"
    )
    (package / "records.py").write_text("import pytest_latency\n")
    assert upward_imports(package) == [
        "pytest_latency.records:1 (basics) -> pytest_latency (facade)",
        "pytest_latency.report.late:2 (report) -> pytest_latency.plugin.session (plugin)",
    ]


def test_arrows_run_down_only_and_nothing_imports_the_facade() -> None:
    # docs/architecture.md: spec -> workload -> driver -> telemetry -> servers ->
    # analysis -> report, with the pytest side and the CLI on top
    assert upward_imports(PACKAGE) == []


def test_the_package_root_holds_only_the_facade_and_the_shared_basics() -> None:
    root_modules = {path.name for path in PACKAGE.glob("*.py")}
    assert root_modules == {
        "__init__.py",
        "__main__.py",
        "errors.py",
        "records.py",
        "file_format.py",
        "gaps.py",
        "keys.py",
        "_units.py",
        "secret.py",
        "shown_text.py",
        "inflate.py",
    }
