"""List import cycles between the modules of a package, from their source (AST).

    python tests/helpers/import_cycles.py [PACKAGE_DIR] [--within pytest_latency.telemetry]
                                  [--type-checking]

An edge A -> B is an import of B that runs when A is imported: a module-level
``import``/``from ... import`` (also inside module-level ``if``/``try``/``with`` blocks
and class bodies), never one inside a function, nor under ``if TYPE_CHECKING:`` (unless
``--type-checking``: then those count too, the cycles a type checker sees). Edges
go to the named module (``from pkg import sub`` to ``pkg.sub`` when that is a module);
the parent packages Python runs on the way are not counted. Prints each strongly
connected group of modules and a shortest cycle through each of its members; exits 1
when there is a cycle.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

Graph = dict[str, set[str]]


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` under the package."""
    root = package_dir.parent
    names: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_time_nodes(
    body: list[ast.stmt], type_checking: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported (or type-checked)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if type_checking or not _is_type_checking(node.test):
                yield from _import_time_nodes(node.body, type_checking)
            yield from _import_time_nodes(node.orelse, type_checking)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _import_time_nodes(block, type_checking)
            for handler in node.handlers:
                yield from _import_time_nodes(handler.body, type_checking)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _import_time_nodes(node.body, type_checking)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(package_dir: Path, type_checking: bool = False) -> Graph:
    """Module -> the package's modules it imports at import time."""
    names = module_names(package_dir)
    graph: Graph = {}
    for module, path in names.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _import_time_nodes(tree.body, type_checking):
            targets = list(_targets(node, module, is_package))
            # ``from pkg import sub``: the submodule when it is one, else the package.
            submodules = [t for t in targets[1:] if t in names]
            if isinstance(node, ast.ImportFrom) and submodules:
                edges.update(submodules)
            else:
                edges.update(t for t in targets if t in names)
        edges.discard(module)
        graph[module] = edges
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Groups of modules that reach each other (Tarjan), only those with a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def shortest_cycle(graph: Graph, start: str, members: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside one group (breadth first)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return []


def cycles(graph: Graph) -> list[list[list[str]]]:
    """Per group, distinct shortest cycles through each member (rotations merged)."""
    found: list[list[list[str]]] = []
    for group in strongly_connected(graph):
        seen: set[tuple[str, ...]] = set()
        paths: list[list[str]] = []
        for member in group:
            path = shortest_cycle(graph, member, set(group))
            ring = path[:-1]
            turn = ring.index(min(ring))
            key = tuple(ring[turn:] + ring[:turn])
            if key not in seen:
                seen.add(key)
                paths.append([*key, key[0]])
        found.append(paths)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[2] / "pytest_latency"
    parser.add_argument("package_dir", nargs="?", type=Path, default=default)
    parser.add_argument("--within", default="", help="only modules under this dotted prefix")
    parser.add_argument(
        "--type-checking", action="store_true", help="count imports under TYPE_CHECKING too"
    )
    args = parser.parse_args()
    graph = import_graph(args.package_dir, args.type_checking)
    if args.within:
        inside = {m for m in graph if m == args.within or m.startswith(args.within + ".")}
        graph = {m: edges & inside for m, edges in graph.items() if m in inside}
    groups = cycles(graph)
    if not groups:
        print(f"no import cycles among {len(graph)} modules")
        return 0
    for number, paths in enumerate(groups, 1):
        members = sorted({m for path in paths for m in path})
        print(f"cycle group {number}: {len(members)} modules")
        for path in paths:
            print("  " + " -> ".join(path))
    return 1


if __name__ == "__main__":
    sys.exit(main())
