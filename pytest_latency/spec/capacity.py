"""The capacity search's spec: a ``capacity:`` block in YAML, ``capacity_spec()`` in Python.

```yaml
workload: {seed: 5, input_tokens: 20, output_tokens: 20, timeout: 30s}   # no phases
capacity:
  rates: [1, 30]     # search range, req/s
  probe: 60s         # longest probe
  budget: 6m         # the whole search, warm-ups and drains included
  arrival: poisson   # default; or constant
objectives:
  - {metric: ttft, p: 90, max: 300ms}
  - {metric: capacity, min: 2}
```

The search makes the phases: each probe is a warm-up and a probe phase at one rate
(docs/capacity.md). Units are strict: rates in req/s (``20`` or ``"20/s"``), durations
with their unit (``60s``, ``6m``); errors name file, line and key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from pytest_latency._units import parse_duration
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check
from pytest_latency.spec.gates import parse_rate
from pytest_latency.spec.model import Objective, Phase, Workload
from pytest_latency.spec.phase import MAX_DURATION_S, Arrival
from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")

CAPACITY_ARRIVALS: tuple[str, ...] = ("poisson", "constant")
MIN_PROBE_S = 2.0  # a probe needs time to see a queue settle
MAX_BUDGET_S = 7 * 24 * 3600.0
WARMUP_SHARE, MIN_WARMUP_S, MAX_WARMUP_S = 0.1, 1.0, 10.0
WARMUP_PHASE, PROBE_PHASE = "warmup", "probe"
_KEYS = ("rates", "probe", "budget", "arrival")


@dataclass(frozen=True, slots=True)
class CapacitySpec:
    """What the capacity search may do: its rate range (req/s), longest probe, budget."""

    rates: tuple[float, float]
    probe_s: float
    budget_s: float
    arrival: Arrival = "poisson"

    def __post_init__(self) -> None:
        if isinstance(self.rates, list):
            object.__setattr__(self, "rates", tuple(self.rates))
        if not isinstance(self.rates, tuple) or len(self.rates) != 2:
            raise check.FieldError("rates", f"rates is [low, high] in req/s, got {self.rates!r}")
        low, high = (parse_rate(rate) for rate in self.rates)
        if not low < high:
            raise check.FieldError("rates", f"rates must rise: [low, high], got {self.rates!r}")
        object.__setattr__(self, "rates", (low, high))
        check.number(
            "probe_s", self.probe_s, at_least=MIN_PROBE_S, at_most=MAX_DURATION_S, what="probe"
        )
        check.number("budget_s", self.budget_s, above=0, at_most=MAX_BUDGET_S, what="budget")
        if self.budget_s < self.warmup_s + self.probe_s:
            raise check.FieldError(
                "budget_s",
                f"budget {self.budget_s:g}s does not fit one probe ({self.warmup_s:g}s warm-up"
                f" + {self.probe_s:g}s probe): raise budget or shorten probe",
            )
        check.choice("arrival", self.arrival, CAPACITY_ARRIVALS, what="capacity arrival")

    @property
    def warmup_s(self) -> float:
        """Each probe's warm-up: 10% of the probe, 1 to 10 s; its requests do not count."""
        return min(MAX_WARMUP_S, max(MIN_WARMUP_S, WARMUP_SHARE * self.probe_s))

    def probe_phases(self, rate: float, probe_s: float | None = None) -> tuple[Phase, Phase]:
        """The warm-up and probe phases of one probe at ``rate`` req/s."""
        length = self.probe_s if probe_s is None else probe_s
        return (
            Phase(WARMUP_PHASE, rate, self.warmup_s, arrival=self.arrival),
            Phase(PROBE_PHASE, rate, length, arrival=self.arrival),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "rates": list(self.rates),
            "probe_s": self.probe_s,
            "budget_s": self.budget_s,
            "arrival": self.arrival,
            "warmup_s": self.warmup_s,
        }


def capacity_spec(
    rates: Sequence[float | str], probe: str, budget: str, arrival: str = "poisson"
) -> CapacitySpec:
    """``capacity_spec(rates=(1, 30), probe="60s", budget="6m")``: durations with units."""
    try:
        return CapacitySpec(
            rates=tuple(rates),  # type: ignore[arg-type]
            probe_s=parse_duration(probe, what="capacity probe"),
            budget_s=parse_duration(budget, what="capacity budget"),
            arrival=cast(Arrival, arrival),
        )
    except SpecError:
        raise
    except ValueError as error:  # a unit error
        raise SpecError(str(error)) from None


def template_workload(spec: CapacitySpec, **options: Any) -> Workload:
    """The workload every probe shares (seed, tokens, timeout...), phases at the low rate."""
    return Workload(phases=spec.probe_phases(spec.rates[0]), **options)


def split_objectives(
    objectives: Sequence[Objective],
) -> tuple[list[Objective], list[Objective]]:
    """(criteria each probe decides, capacity objectives decided on the search)."""
    criteria = [goal for goal in objectives if goal.metric != "capacity"]
    return criteria, [goal for goal in objectives if goal.metric == "capacity"]


# --- YAML ---------------------------------------------------------------------------


class _Context(Protocol):
    def fail(self, line: int, key: str, problem: str) -> SpecError: ...
    def mapping(self, value: Any, line: int, key: str, allowed: tuple[str, ...]) -> LineMap: ...
    def field(self, parent: LineMap, name: str, key: str, parse: Callable[[Any], T]) -> T: ...
    def build(self, node: LineMap, key: str, make: Callable[[], T]) -> T: ...


def _rates(value: Any) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"expected [low, high] in req/s, e.g. [1, 30], got {check.shown(value)}")
    return parse_rate(value[0]), parse_rate(value[1])


def _duration(value: Any) -> float:
    return parse_duration(value, guess="span")


def parse_capacity(context: _Context, value: Any, line: int) -> CapacitySpec:
    """The ``capacity:`` block; SpecFileError naming file, line and key."""
    node = context.mapping(value, line, "capacity", _KEYS)
    for required in ("rates", "probe", "budget"):
        if required not in node:
            raise context.fail(node.line, f"capacity.{required}", "missing")
    rates = context.field(node, "rates", "capacity", _rates)
    probe_s = context.field(node, "probe", "capacity", _duration)
    budget_s = context.field(node, "budget", "capacity", _duration)
    arrival = "poisson"
    if "arrival" in node:
        arrival = context.field(node, "arrival", "capacity", check.as_text)
    yaml_names = {"probe_s": "probe", "budget_s": "budget"}

    def make() -> CapacitySpec:
        try:
            return CapacitySpec(rates, probe_s, budget_s, cast(Arrival, arrival))
        except SpecError as error:
            name = getattr(error, "field", "")
            if name in yaml_names:  # the file's key, for build() to point at
                error.field = yaml_names[name]  # type: ignore[attr-defined]
            raise

    return context.build(node, "capacity", make)


def workload_without_phases(
    context: _Context,
    top: LineMap,
    parse_workload: Callable[[Any, int, tuple[Phase, ...]], Workload],
) -> tuple[Workload, CapacitySpec]:
    """A capacity file's workload (no ``phases:``: the search makes them) and its block."""
    spec = parse_capacity(context, top["capacity"], top.key_lines["capacity"])
    node = top["workload"]
    if isinstance(node, LineMap) and "phases" in node:
        raise context.fail(
            node.key_lines["phases"],
            "workload.phases",
            "a capacity search makes its own phases: remove phases (capacity: sets the rates)",
        )
    workload = parse_workload(node, top.key_lines["workload"], spec.probe_phases(spec.rates[0]))
    return workload, spec


def criterion_problem(goal: Objective) -> str | None:
    """Why ``goal`` cannot be decided on each probe of a search, if it cannot."""
    if goal.phase is not None:
        return "a capacity search decides every objective on each probe: remove phase"
    if goal.relative:
        return "a capacity search decides absolute objectives only: give max, not max_regression"
    if goal.metric == "recovery":
        return "recovery needs a burst phase; a capacity search's probes have none"
    return None


def check_capacity_objectives(
    context: _Context, objectives: Sequence[Objective], lines: Sequence[int], searched: bool
) -> None:
    """Capacity objectives need a ``capacity:`` block, which needs one of them and one
    objective for the probes to decide, each decidable on a probe (no phase, absolute)."""
    criteria, gates = split_objectives(objectives)
    for index, (goal, line) in enumerate(zip(objectives, lines, strict=False)):
        if goal.metric == "capacity" and not searched:
            raise context.fail(
                line,
                f"objectives[{index}].metric",
                "metric capacity is decided on a capacity search: add a capacity: block",
            )
        problem = criterion_problem(goal) if searched else None
        if problem is not None:
            key = "phase" if goal.phase is not None else "metric"
            raise context.fail(line, f"objectives[{index}].{key}", problem)
    if searched and (not criteria or not gates):
        missing = "an objective for the probes to decide" if not criteria else "metric: capacity"
        line = lines[0] if lines else 1
        raise context.fail(line, "objectives", f"a capacity search needs {missing}")
