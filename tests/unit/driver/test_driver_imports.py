"""driver/ has no import cycles: every import (top-level, in functions, under
TYPE_CHECKING) between its modules is read from the source and the graph searched."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_latency.driver

DRIVER = Path(pytest_latency.driver.__file__).parent
PACKAGE = "pytest_latency.driver"


def driver_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(DRIVER.glob("*.py")):
        module = f"{PACKAGE}.{path.stem}" if path.stem != "__init__" else PACKAGE
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            targets |= {name for name in names if name.startswith(PACKAGE + ".")}
        graph[module] = {target for target in targets if target != module}
    modules = set(graph)
    return {module: {t for t in targets if t in modules} for module, targets in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                found.append([*path[path.index(target) :], target])
            elif len(path) < len(graph):
                visit(target, [*path, target])

    for module in sorted(graph):
        if module != PACKAGE:  # the package facade imports its modules by design
            visit(module, [module])
    return [cycle for cycle in found if PACKAGE not in cycle]


def test_driver_modules_import_each_other_without_cycles() -> None:
    graph = driver_imports()
    assert f"{PACKAGE}.request" in graph and graph[f"{PACKAGE}.client"]  # the scan sees them
    assert cycles(graph) == []


def test_the_cycle_search_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert ["a", "b", "c", "a"] in cycles(graph)
