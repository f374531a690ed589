"""YAML loaded with the line of every mapping key and list item, for file:line errors."""

from __future__ import annotations

from typing import Any

import yaml


class LineMap(dict[str, Any]):
    """A mapping that remembers the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class LineList(list[Any]):
    line: int = 0
    item_lines: list[int]


class LineLoader(yaml.SafeLoader):
    """A SafeLoader whose mappings and lists are :class:`LineMap` and :class:`LineList`."""


def _construct_map(loader: LineLoader, node: yaml.MappingNode) -> LineMap:
    loader.flatten_mapping(node)
    result = LineMap()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        key = str(key)
        if key in result:
            raise yaml.MarkedYAMLError(
                problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_list(loader: LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_list)
