"""Which layer each module of the package is in, and every import that points up a layer.

The layers of docs/architecture.md, lowest first. An import counts wherever it is written
(module level, inside a function, under ``if TYPE_CHECKING:``): a lazy import is still a
dependency, it only runs later. The CLI and the pytest side are both top layers, and
neither imports the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.import_cycles import module_names

LAYERS = ("basics", "spec", "workload", "driver", "telemetry", "servers", "analysis", "report")
TOP = ("plugin", "cli")  # side by side above report
SUBPACKAGE_LAYER = {
    "spec": "spec",
    "workload": "workload",
    "driver": "driver",
    "telemetry": "telemetry",
    "servers": "servers",
    "sim": "servers",  # the embedded server is a server kind
    "analysis": "analysis",
    "report": "report",
    "plugin": "plugin",
    "cli": "cli",
}


def layer_of(module: str) -> str:
    """``facade`` for the package itself, else the layer of its first subpackage."""
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    if parts[1] == "__main__":
        return "cli"
    return SUBPACKAGE_LAYER.get(parts[1], "basics")


def _rank(layer: str) -> int:
    return len(LAYERS) if layer in TOP else LAYERS.index(layer)


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def upward_imports(package_dir: Path) -> list[str]:
    """``module:line -> target`` for each import of the facade or of a higher layer."""
    names = module_names(package_dir)
    offenders: set[str] = set()
    for module, path in names.items():
        here = layer_of(module)
        if here == "facade":
            continue
        for line, target in _imports(path):
            if target not in names:
                continue
            there = layer_of(target)
            up = there == "facade" or _rank(there) > _rank(here)
            sideways_on_top = here in TOP and there in TOP and here != there
            if up or sideways_on_top:
                offenders.add(f"{module}:{line} ({here}) -> {target} ({there})")
    return sorted(offenders)
