"""No module imports one that imports it back (type-checking imports too), anywhere in
the package."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.import_cycles import cycles, import_graph

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
    assert "pytest_latency.telemetry._http" in graph["pytest_latency.telemetry.receiver"]


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE, type_checking=True)
    assert len(graph) > 100  # the whole package was read
    assert cycles(graph) == []
