"""``*.slo.yaml`` files: parsed with line numbers so every error names file, line and key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from keyword import iskeyword
from pathlib import Path
from typing import Any, TypeVar

import yaml

from pytest_latency._units import parse_duration
from pytest_latency.keys import check_id
from pytest_latency.spec import checks as check
from pytest_latency.spec.capacity import (
    CapacitySpec,
    check_capacity_objectives,
    workload_without_phases,
)
from pytest_latency.spec.model import (
    Objective,
    Phase,
    ServerSpec,
    Workload,
    parse_gpus,
)
from pytest_latency.spec.objectives_yaml import parse_objectives, raw_phase_names
from pytest_latency.spec.phase_yaml import parse_phase
from pytest_latency.spec.plan_scope import scope_problems
from pytest_latency.spec.sessions import SESSION_KEYS, parse_session_keys
from pytest_latency.spec.sources_yaml import SOURCE_KEYS, parse_sources
from pytest_latency.spec.traffic import TRAFFIC_KEYS, parse_traffic_keys
from pytest_latency.spec.yaml_context import SpecFileError as SpecFileError  # re-exported
from pytest_latency.spec.yaml_context import YamlContext as _Context
from pytest_latency.spec.yaml_lines import LineList as _List
from pytest_latency.spec.yaml_lines import LineLoader as _Loader
from pytest_latency.spec.yaml_lines import LineMap as _Map

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SloSpec:
    """One ``*.slo.yaml``: what to run, against what, and what must hold."""

    path: Path
    workload: Workload
    objectives: tuple[Objective, ...]
    server: ServerSpec | None
    markers: tuple[str, ...] = ()  # pytest markers for the collected test, besides latency
    id: str | None = None  # the baseline key, instead of the file's path (keys.py)
    objective_lines: tuple[int, ...] = ()  # each objective's line, for warnings there
    capacity: CapacitySpec | None = None  # a capacity search instead of phases
    marker_lines: tuple[int, ...] = ()  # each marker's line, for a warning about it there


_WORKLOAD_KEYS = (
    "seed",
    "input_tokens",
    "output_tokens",
    "timeout",
    "warmup",
    "ignore_eos",
    "repeat",
    "cooldown",
    "max_concurrency",
    "until_decided",
    "phases",
    *SESSION_KEYS,  # prefix, sessions: spec_sessions.py
    *TRAFFIC_KEYS,  # retry: spec/traffic.py
    *SOURCE_KEYS,  # prompts, tokenizer: spec_sources_yaml.py
)
_SERVER_KEYS = ("kind", "url", "model", "api", "options", "image", "gpus")


def _parse_phases(context: _Context, node: _Map) -> tuple[Phase, ...]:
    """The workload's phases that parse; each one that does not is recorded."""
    phases_node = node.get("phases")
    if not isinstance(phases_node, _List) or not phases_node:
        context.report(
            node.key_lines.get("phases", node.line),
            "workload.phases",
            "expected a non-empty list of phases",
        )
        return ()
    parsed = (
        context.recover(
            partial(parse_phase, context, item, item_line, f"workload.phases[{index}]"), None
        )
        for index, (item, item_line) in enumerate(
            zip(phases_node, phases_node.item_lines, strict=True)
        )
    )
    return tuple(phase for phase in parsed if phase is not None)


def _parse_workload(
    context: _Context, value: Any, line: int, phases: tuple[Phase, ...] = ()
) -> Workload:
    """``phases``: made by a capacity search (spec_capacity.py) instead of ``phases:``."""
    mark = context.mark()
    node = context.mapping(value, line, "workload", _WORKLOAD_KEYS)
    if not phases:
        phases = _parse_phases(context, node)
    options: dict[str, Any] = {"phases": phases}
    options.update(context.recover(partial(parse_sources, context, node), {}))
    parsers: dict[str, tuple[str, Callable[[Any], Any]]] = {
        "seed": ("seed", check.as_int),
        "input_tokens": ("input_tokens", check.as_token_range),
        "output_tokens": ("output_tokens", check.as_int),
        "timeout": ("timeout_s", parse_duration),
        "warmup": ("warmup_requests", check.as_int),
        "ignore_eos": ("ignore_eos", check.as_flag),
        "repeat": ("repeat", check.as_int),
        "cooldown": ("cooldown_s", parse_duration),
        "max_concurrency": ("max_concurrency", check.as_int),
    }
    values = context.fields(node, "workload", {name: parse for name, (_, parse) in parsers.items()})
    options.update({parsers[name][0]: value for name, value in values.items()})
    options.update(context.recover(partial(parse_session_keys, context, node), {}))
    options.update(context.recover(partial(parse_traffic_keys, context, node), {}))
    if "until_decided" in node:
        options["until_decided_s"] = context.recover(
            partial(_parse_until_decided, context, node), None
        )
    context.check_since(mark)
    return context.build(node, "workload", lambda: Workload(**options))


def _parse_until_decided(context: _Context, workload: _Map) -> float:
    """``until_decided: {max: 3m}``: the whole run's budget, in seconds."""
    key = "workload.until_decided"
    line = workload.key_lines["until_decided"]
    if not isinstance(workload["until_decided"], _Map):
        shown = workload["until_decided"]
        raise context.fail(line, key, f"expected a mapping such as {{max: 3m}}, got {shown!r}")
    node = context.mapping(workload["until_decided"], line, key, ("max",))
    if "max" not in node:
        raise context.fail(line, f"{key}.max", "missing: give the budget, e.g. {max: 3m}")
    seconds: float = context.field(node, "max", key, parse_duration)
    return seconds


def _parse_server(context: _Context, value: Any, line: int) -> ServerSpec:
    mark = context.mark()
    node = context.mapping(value, line, "server", _SERVER_KEYS)
    text = check.as_text
    fields = context.fields(
        node,
        "server",
        {"url": text, "kind": text, "model": text, "api": text, "image": text, "gpus": parse_gpus},
    )
    url = fields.get("url")
    # Any kind: a plugin or conftest.py may add kinds (pytest_latency_server_kind); the
    # session says "unknown server kind" when a test first asks for the server.
    kind = fields.get("kind") or ("url" if url else "sim")
    options = node.get("options", {})
    if not isinstance(options, dict):
        context.report(node.key_lines["options"], "server.options", "expected a mapping")
    context.check_since(mark)
    return context.build(
        node,
        "server",
        lambda: ServerSpec(
            kind=kind,
            url=url,
            model=fields.get("model"),
            api=fields.get("api", "chat"),
            options=dict(options),
            image=fields.get("image"),
            gpus=fields.get("gpus"),
        ),
    )


_TOP_KEYS = ("id", "server", "workload", "capacity", "objectives", "description", "markers")


def _parse_markers(context: _Context, value: Any, line: int) -> tuple[str, ...]:
    """``markers: [slow, gpu]``: names of pytest markers, as in ``@pytest.mark.slow``."""
    if not isinstance(value, _List):
        raise context.fail(line, "markers", "expected a list of marker names, e.g. [slow]")
    for index, (name, item_line) in enumerate(zip(value, value.item_lines, strict=True)):
        if not isinstance(name, str) or not name.isidentifier() or iskeyword(name):
            raise context.fail(
                item_line,
                f"markers[{index}]",
                f"a marker is a name such as slow or gpu_a100, got {check.shown(name)}",
            )
    return tuple(value)


def _load_top(context: _Context) -> _Map:
    """The file's top-level mapping; SpecFileError for unreadable files and bad YAML."""
    path = context.path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise context.fail(1, "(file)", "no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise context.fail(1, "(file)", f"cannot read ({error})") from None
    try:
        document = yaml.load(text, Loader=_Loader)  # a SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        line = mark.line + 1 if mark is not None else 1
        raise context.fail(line, "(yaml)", str(error.problem or error)) from None
    except yaml.YAMLError as error:
        raise context.fail(1, "(yaml)", str(error)) from None
    except (ValueError, RecursionError) as error:  # e.g. an integer too long to convert
        raise context.fail(1, "(yaml)", f"cannot load: {error}") from None
    return context.mapping(document, 1, "", _TOP_KEYS)


def load_objectives(path: Path) -> tuple[Objective, ...]:
    """The ``objectives:`` list of a file: a whole ``*.slo.yaml`` or just that list.

    With a workload in the file, phase names are checked against its phases; without
    one, the caller checks them against the runs it judges. SpecFileError names file,
    line and key of every error; a file without objectives is an error too.
    """
    context = _Context(path)
    top = _load_top(context)
    objectives = context.recover(partial(_objectives_of, context, top), ())
    context.raise_collected()
    return objectives


def _objectives_of(context: _Context, top: _Map) -> tuple[Objective, ...]:
    if not top.get("objectives"):
        raise context.fail(
            top.key_lines.get("objectives", top.line), "objectives", "expected a non-empty list"
        )
    phases = None
    if "workload" in top and "capacity" not in top:  # a search's phases are its own
        workload = context.recover(
            partial(_parse_workload, context, top["workload"], top.key_lines["workload"]), None
        )
        phases = _phase_names(top, workload)
    return parse_objectives(context, top["objectives"], top.key_lines["objectives"], phases)


def load_slo_file(path: Path) -> SloSpec:
    """Parse and validate one spec file; one SpecFileError names file, line and key of
    every error in it (``errors``), so a file is fixed in one run."""
    context = _Context(path)
    top = _load_top(context)
    spec = context.recover(partial(_spec_of, context, top), None)
    context.raise_collected()
    assert spec is not None  # no error recorded: the spec was built
    return spec


def _spec_of(context: _Context, top: _Map) -> SloSpec:
    mark = context.mark()
    workload, capacity = None, None
    if "workload" not in top:
        context.report(top.line, "workload", "missing: a spec needs a workload with phases")
    else:
        workload, capacity = context.recover(partial(_workload_of, context, top), (None, None))
    names = None if "capacity" in top else _phase_names(top, workload)
    objectives: tuple[Objective, ...] = ()
    if "objectives" not in top:
        context.report(top.line, "objectives", "missing: a spec needs a list of objectives")
    else:
        line = top.key_lines["objectives"]
        objectives = context.recover(
            partial(parse_objectives, context, top["objectives"], line, names), ()
        )
        if not top["objectives"]:  # a test that asserts nothing would always pass
            context.report(line, "objectives", "expected a non-empty list")
    server = _optional(context, top, "server", _parse_server)
    markers = _optional(context, top, "markers", _parse_markers)
    spec_id = (
        context.recover(partial(context.field, top, "id", "", check_id), None)
        if "id" in top
        else None
    )
    context.check_since(mark)
    assert workload is not None
    lines = tuple(top["objectives"].item_lines)
    check_capacity_objectives(context, objectives, lines, capacity is not None)
    for index, key, problem in scope_problems(workload, objectives):
        node = top["objectives"][index]
        context.report(node.key_lines.get(key, node.line), f"objectives[{index}].{key}", problem)
    context.check_since(mark)
    return SloSpec(
        path=context.path,
        workload=workload,
        objectives=objectives,
        server=server,
        markers=markers or (),
        id=spec_id,
        objective_lines=lines,
        capacity=capacity,
        marker_lines=tuple(top["markers"].item_lines) if markers else (),
    )


def _phase_names(top: _Map, workload: Workload | None) -> set[str] | None:
    """The phase names objectives may name (a raw reading when the workload is invalid)."""
    return raw_phase_names(top) if workload is None else {phase.name for phase in workload.phases}


def _optional(
    context: _Context, top: _Map, key: str, parse: Callable[[_Context, Any, int], T]
) -> T | None:
    """The top-level ``key`` parsed, None when absent or invalid (recorded)."""
    if key not in top:
        return None
    return context.recover(partial(parse, context, top[key], top.key_lines[key]), None)


def _workload_of(context: _Context, top: _Map) -> tuple[Workload, CapacitySpec | None]:
    """The workload, and the ``capacity:`` search that makes its phases, if any."""
    if "capacity" not in top:
        return _parse_workload(context, top["workload"], top.key_lines["workload"]), None
    return workload_without_phases(context, top, partial(_parse_workload, context))
