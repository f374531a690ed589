"""Workload, objective and server specifications: the validated input of every run.

The same dataclasses serve Python tests (built directly) and ``*.slo.yaml`` files
(built by :mod:`pytest_latency.spec_yaml`, which adds file/line context to errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pytest_latency._units import parse_duration, parse_fraction

Arrival = Literal["constant", "poisson", "gamma"]
Api = Literal["chat", "completions"]
Metric = Literal[
    "ttft",
    "itl",
    "tpot",
    "e2e",
    "queue_wait",
    "prefill",
    "decode",
    "after_queue",
    "unattributed",
    "error_rate",
]

ARRIVALS: tuple[str, ...] = ("constant", "poisson", "gamma")
APIS: tuple[str, ...] = ("chat", "completions")
METRICS: tuple[str, ...] = (
    "ttft",
    "itl",
    "tpot",
    "e2e",
    "queue_wait",
    "prefill",
    "decode",
    "error_rate",
)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_INPUT_TOKENS = (200, 400)
DEFAULT_OUTPUT_TOKENS = 200
DEFAULT_SEED = 0


class SpecError(ValueError):
    """A specification is invalid; the message names the key and the problem."""


@dataclass(frozen=True, slots=True)
class Phase:
    """One stretch of traffic: requests arrive at ``rate`` per second for ``duration_s``.

    ``burstiness`` shapes gamma arrivals as in vLLM's ``--burstiness``: 1 is Poisson,
    below 1 is burstier, above 1 is more regular.
    """

    name: str
    rate: float
    duration_s: float
    arrival: Arrival = "poisson"
    burstiness: float = 1.0

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise SpecError("phase name must be a non-empty string")
        if not self.rate > 0:
            raise SpecError(f"phase {self.name!r}: rate must be > 0 requests/s, got {self.rate!r}")
        if not self.duration_s > 0:
            raise SpecError(f"phase {self.name!r}: duration must be > 0, got {self.duration_s!r}")
        if self.arrival not in ARRIVALS:
            raise SpecError(
                f"phase {self.name!r}: arrival must be one of {', '.join(ARRIVALS)}, "
                f"got {self.arrival!r}"
            )
        if not self.burstiness > 0:
            raise SpecError(f"phase {self.name!r}: burstiness must be > 0, got {self.burstiness!r}")


def steady(rate: float, duration_s: float, name: str = "steady") -> Phase:
    """A steady Poisson phase (the seed's 'normal load')."""
    return Phase(name=name, rate=rate, duration_s=duration_s, arrival="poisson")


def burst(rate: float, duration_s: float, name: str = "burst") -> Phase:
    """A short high-rate Poisson phase (the seed's 'short burst')."""
    return Phase(name=name, rate=rate, duration_s=duration_s, arrival="poisson")


@dataclass(frozen=True, slots=True)
class Workload:
    """The whole offered load: phases in order, request shapes, and the seed."""

    phases: tuple[Phase, ...]
    seed: int = DEFAULT_SEED
    input_tokens: tuple[int, int] = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    timeout_s: float = DEFAULT_TIMEOUT_S
    warmup_requests: int = 0
    ignore_eos: bool = True

    def __post_init__(self) -> None:
        if not self.phases:
            raise SpecError("workload needs at least one phase")
        names = [phase.name for phase in self.phases]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise SpecError(f"phase names must be unique, repeated: {', '.join(duplicated)}")
        low, high = self.input_tokens
        if not (1 <= low <= high):
            raise SpecError(
                f"input_tokens must be a positive int or [low, high] with low <= high, "
                f"got {list(self.input_tokens)!r}"
            )
        if self.output_tokens < 1:
            raise SpecError(f"output_tokens must be >= 1, got {self.output_tokens!r}")
        if not self.timeout_s > 0:
            raise SpecError(f"timeout must be > 0, got {self.timeout_s!r}")
        if self.warmup_requests < 0:
            raise SpecError(f"warmup must be >= 0, got {self.warmup_requests!r}")

    @property
    def duration_s(self) -> float:
        return sum(phase.duration_s for phase in self.phases)

    def phase_start_s(self, name: str) -> float:
        start = 0.0
        for phase in self.phases:
            if phase.name == name:
                return start
            start += phase.duration_s
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class Objective:
    """A latency objective: ``metric`` at percentile ``p`` must be <= ``max_s``.

    For ``error_rate``, ``p`` is unused and ``max_s`` is the largest failed/offered
    fraction allowed. ``phase`` None means all phases together.
    """

    metric: Metric
    max_s: float
    p: float | None = None
    phase: str | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise SpecError(
                f"objective metric must be one of {', '.join(METRICS)}, got {self.metric!r}"
            )
        if self.metric == "error_rate":
            if self.p is not None:
                raise SpecError("objective error_rate takes no percentile p")
            if not 0.0 <= self.max_s <= 1.0:
                raise SpecError(f"error_rate max must lie in [0%, 100%], got {self.max_s!r}")
        else:
            if self.p is None or not 0.0 < self.p < 100.0:
                raise SpecError(
                    f"objective {self.metric}: p must be a percentile in (0, 100), got {self.p!r}"
                )
            if not self.max_s > 0:
                raise SpecError(f"objective {self.metric}: max must be > 0, got {self.max_s!r}")

    @property
    def label(self) -> str:
        scope = f" [{self.phase}]" if self.phase else ""
        if self.metric == "error_rate":
            return f"error_rate <= {self.max_s:.2%}{scope}"
        return f"{self.metric} p{self.p:g} <= {self.max_s * 1e3:g}ms{scope}"


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Which server to test: ``kind`` 'sim' (embedded), 'url' with ``url``, or a container kind."""

    kind: str = "sim"
    url: str | None = None
    model: str | None = None
    api: Api = "chat"
    options: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise SpecError(f"server api must be one of {', '.join(APIS)}, got {self.api!r}")
        if self.kind == "url" and not self.url:
            raise SpecError("server kind 'url' needs a url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise SpecError(f"server url must start with http:// or https://, got {self.url!r}")


def objective(
    metric: str, *, max: str | float, p: float | None = None, phase: str | None = None
) -> Objective:
    """An objective with human units: ``objective("ttft", p=95, max="700ms", phase="steady")``.

    ``max`` is a duration (``"700ms"``, or seconds as a number) for latency metrics and a
    percentage (``"1%"``, or a fraction) for ``error_rate``.
    """
    try:
        limit = parse_fraction(max) if metric == "error_rate" else parse_duration(max)
    except ValueError as error:
        raise SpecError(f"objective {metric}: max: {error}") from None
    return Objective(metric=metric, max_s=limit, p=p, phase=phase)  # type: ignore[arg-type]
