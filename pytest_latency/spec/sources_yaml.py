"""Spec keys that point at files: trace phases, ``prompts:`` datasets and ``tokenizer:``.

Paths are relative to the spec file. A bad line in a data file is reported at the spec's
key and names the data file's own line: ``spec.slo.yaml:7: workload.phases[0].file:
trace.jsonl:3: input_length: missing (or give input_text)``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pytest_latency._units import parse_duration
from pytest_latency.spec import checks as check
from pytest_latency.spec.files import DataFileError
from pytest_latency.spec.phase import Phase, parse_stop
from pytest_latency.spec.prompts import PROMPT_FORMATS, PromptSource, load_prompts
from pytest_latency.spec.trace import TIME_UNITS, trace_phase
from pytest_latency.spec.yaml_context import YamlContext
from pytest_latency.spec.yaml_lines import LineList, LineMap

T = TypeVar("T")
TRACE_PHASE_KEYS = ("name", "arrival", "file", "speed", "window", "stop", "time_unit")
SOURCE_KEYS = ("prompts", "tokenizer")
_PROMPTS_KEYS = ("file", "format")
_TOKENIZER_FILE = "tokenizer.json"


def _path(context: YamlContext) -> Callable[[Any], Path]:
    def parse(value: Any) -> Path:
        path = Path(check.as_text(value))
        return path if path.is_absolute() else context.path.parent / path

    return parse


def _window(value: Any) -> tuple[float, float]:
    """``{start: 10s, duration: 60s}`` or ``[10s, 60s]``: trace time from its first instant."""
    if isinstance(value, LineMap) and set(value) <= {"start", "duration"} and "duration" in value:
        start, duration = value.get("start", 0), value["duration"]
    elif isinstance(value, LineList) and len(value) == 2:
        start, duration = value
    else:
        raise ValueError(f"expected {{start: 10s, duration: 60s}}, got {check.shown(value)}")
    return parse_duration(start, what="start"), check.as_positive_duration(duration)


def _from_file(context: YamlContext, node: LineMap, key: str, read: Callable[[], T]) -> T:
    """``read()``; a data file's error is reported at ``key.file``, naming the file's line."""
    try:
        return read()
    except DataFileError as error:
        raise context.fail(node.key_lines["file"], f"{key}.file", str(error)) from None


def parse_trace_phase(context: YamlContext, node: LineMap, key: str) -> Phase:
    """``{name: replay, arrival: trace, file: trace.jsonl, speed: 2, window: ...}``."""
    for name in node:
        if name not in TRACE_PHASE_KEYS:
            problem = "a trace phase takes its rate and duration from the trace; allowed: "
            raise context.fail(
                node.key_lines[name], f"{key}.{name}", problem + ", ".join(TRACE_PHASE_KEYS)
            )
    for required in ("name", "file"):
        if required not in node:
            raise context.fail(node.line, f"{key}.{required}", "missing")
    name = context.field(node, "name", key, check.as_text)
    path = context.field(node, "file", key, _path(context))
    speed = context.field(node, "speed", key, check.as_positive) if "speed" in node else 1.0
    window = context.field(node, "window", key, _window) if "window" in node else None
    stop = context.field(node, "stop", key, parse_stop) if "stop" in node else None
    unit = context.field(node, "time_unit", key, _time_unit) if "time_unit" in node else None
    return context.build(
        node,
        key,
        lambda: _from_file(
            context,
            node,
            key,
            lambda: trace_phase(
                path, name=name, speed=speed, window=window, stop=stop, time_unit=unit
            ),
        ),
    )


def _time_unit(value: Any) -> str:
    if value not in TIME_UNITS:
        problem = f"must be {' or '.join(TIME_UNITS)} (the timestamps' unit), got {value!r}"
        raise ValueError(problem + check.did_you_mean(value, TIME_UNITS))
    return str(value)


def _prompts(context: YamlContext, value: Any, line: int) -> PromptSource:
    key = "workload.prompts"
    node = context.mapping(value, line, key, _PROMPTS_KEYS)
    if "file" not in node:
        raise context.fail(node.line, f"{key}.file", "missing")
    path = context.field(node, "file", key, _path(context))
    if "format" in node:
        format = context.field(node, "format", key, _format)
    elif path.suffix == ".txt":
        format = "text"
    else:
        raise context.fail(node.line, f"{key}.format", "missing: " + ", ".join(PROMPT_FORMATS))
    return _from_file(context, node, key, lambda: load_prompts(path, format))


def _format(value: Any) -> str:
    if value not in PROMPT_FORMATS:
        raise ValueError(f"must be one of {', '.join(PROMPT_FORMATS)}, got {check.shown(value)}")
    return str(value)


def _tokenizer(context: YamlContext) -> Callable[[Any], Path]:
    def parse(value: Any) -> Path:
        path = _path(context)(value)
        if not (path / _TOKENIZER_FILE).is_file() and not path.is_file():
            raise ValueError(f"no {_TOKENIZER_FILE} in {value!r} (a local tokenizer folder)")
        if importlib.util.find_spec("tokenizers") is None:
            raise ValueError(
                "needs the tokenizers package: pip install 'pytest-latency[tokenizer]'"
            )
        return path

    return parse


def parse_sources(context: YamlContext, node: LineMap) -> dict[str, Any]:
    """The workload's ``prompts`` and ``tokenizer`` options, where given."""
    options: dict[str, Any] = {}
    if "prompts" in node:
        options["prompts"] = _prompts(context, node["prompts"], node.key_lines["prompts"])
    if "tokenizer" in node:
        options["tokenizer"] = context.field(node, "tokenizer", "workload", _tokenizer(context))
    return options
