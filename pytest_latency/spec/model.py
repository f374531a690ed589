"""Workload, objective and server specifications: the validated input of every run.

The same dataclasses serve Python tests (built directly) and ``*.slo.yaml`` files
(built by :mod:`pytest_latency.spec.slo_yaml`, which adds file/line context to errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from pytest_latency.errors import SpecError as SpecError  # re-exported
from pytest_latency.spec import checks as check
from pytest_latency.spec import gates
from pytest_latency.spec.checks import gpu_ids as gpu_ids  # re-exported
from pytest_latency.spec.checks import parse_gpus as parse_gpus  # re-exported
from pytest_latency.spec.files import MAX_TOKENS as MAX_TOKENS  # re-exported
from pytest_latency.spec.phase import ARRIVALS as ARRIVALS  # re-exported
from pytest_latency.spec.phase import MAX_BURSTINESS as MAX_BURSTINESS  # re-exported
from pytest_latency.spec.phase import MAX_DURATION_S as MAX_DURATION_S  # re-exported
from pytest_latency.spec.phase import MAX_RATE as MAX_RATE  # re-exported
from pytest_latency.spec.phase import Arrival as Arrival  # re-exported
from pytest_latency.spec.phase import Phase as Phase  # re-exported
from pytest_latency.spec.phase import StopRule as StopRule  # re-exported
from pytest_latency.spec.phase import burst as burst  # re-exported
from pytest_latency.spec.phase import concurrent as concurrent  # re-exported
from pytest_latency.spec.phase import steady as steady  # re-exported
from pytest_latency.spec.prompts import PromptSource
from pytest_latency.spec.sessions import Prefix as Prefix  # re-exported
from pytest_latency.spec.sessions import Sessions as Sessions  # re-exported
from pytest_latency.spec.traffic import Retry as Retry  # re-exported
from pytest_latency.spec.traffic import ServiceClass as ServiceClass  # re-exported
from pytest_latency.spec.traffic import check_traffic
from pytest_latency.spec.units import objective_limits, outage_duration

Api = Literal["chat", "completions"]
Metric = Literal[
    "ttft",
    "ttfo",  # first answer token (after any reasoning): docs/metrics.md
    "reasoning",  # first reasoning chunk to first answer chunk
    "itl",
    "itl_max",
    "tpot",
    "e2e",
    "queue_wait",
    "prefill",
    "decode",
    "after_queue",
    "unattributed",
    "error_rate",
    gates.GateMetric,  # attainment, recovery: spec_gates.py
]

# The Literal types are the single source of the allowed values.
APIS: tuple[str, ...] = get_args(Api)
METRICS: tuple[str, ...] = get_args(Metric)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_INPUT_TOKENS = (200, 400)
DEFAULT_OUTPUT_TOKENS = 200
DEFAULT_SEED = 0
MAX_REPEAT = 1000
MAX_CONCURRENCY = 1_000_000
# Limits (docs/specs.md "Limits"): every number in a spec is finite and inside these.
MAX_PLANNED_REQUESTS = 10_000_000  # rate x duration, summed over phases and repeats
MAX_TIMEOUT_S = 3600.0  # per request
MAX_WARMUP = 10_000  # warm-up requests
MAX_SEED = 2**63 - 1  # seeds are 0..MAX_SEED
MAX_REGRESSION = 100.0  # a relative objective's max_regression, as a fraction (10000%)


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
    # Run the phases this many times, with ``cooldown_s`` of silence between: each repeat
    # is an independent episode, the unit for objectives about a burst.
    repeat: int = 1
    cooldown_s: float = 0.0
    max_concurrency: int | None = None  # requests in flight at most (None: open loop)
    prefix: Prefix | None = None  # shared prefixes (spec_sessions.py)
    sessions: Sessions | None = None  # multi-turn: phases then plan session starts
    prompts: PromptSource | None = None  # the user's dataset instead of made-up prompts
    tokenizer: Path | None = None  # a local tokenizer folder: prompts of exact token length
    until_decided_s: float | None = None  # add episodes until decided, this long at most
    retry: Retry | None = None  # retry rejected requests (spec/traffic.py)
    classes: tuple[ServiceClass, ...] = ()  # service classes by share (spec/traffic.py)

    def __post_init__(self) -> None:
        self._check_phases()
        check_traffic(self.retry, self.classes)
        for name, kind in (("prefix", Prefix), ("sessions", Sessions)):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), kind):
                raise check.FieldError(name, f"{name} must be a {kind.__name__}")
        if self.prompts is not None and not isinstance(self.prompts, PromptSource):
            raise check.FieldError("prompts", "prompts must come from prompt_dataset(file, format)")
        if self.sessions and any(phase.closed_loop for phase in self.phases):
            raise check.FieldError("sessions", "sessions: are open loop: not with concurrent")
        if self.sessions and (self.prompts or any(phase.trace for phase in self.phases)):
            raise check.FieldError(
                "sessions", "sessions: makes up its turns: not with prompts: or trace phases"
            )
        if isinstance(self.tokenizer, str):
            object.__setattr__(self, "tokenizer", Path(self.tokenizer))
        if isinstance(self.input_tokens, list):
            object.__setattr__(self, "input_tokens", tuple(self.input_tokens))
        check.token_range("input_tokens", self.input_tokens, 1, MAX_TOKENS)
        check.whole("output_tokens", self.output_tokens, 1, MAX_TOKENS)
        check.whole("seed", self.seed, 0, MAX_SEED)
        check.number("timeout_s", self.timeout_s, above=0, at_most=MAX_TIMEOUT_S, what="timeout")
        check.whole("warmup_requests", self.warmup_requests, 0, MAX_WARMUP, what="warmup")
        check.flag("ignore_eos", self.ignore_eos)
        check.whole("repeat", self.repeat, 1, MAX_REPEAT)
        check.number(
            "cooldown_s", self.cooldown_s, at_least=0, at_most=MAX_DURATION_S, what="cooldown"
        )
        if self.max_concurrency is not None:
            check.whole("max_concurrency", self.max_concurrency, 1, MAX_CONCURRENCY)
        if self.until_decided_s is not None:
            check.until_decided(self.until_decided_s, self.episode_s)
        if self.repeat > 1 and self.cooldown_s == 0.0:
            raise check.FieldError(
                "cooldown_s",
                "repeat needs a cooldown (e.g. cooldown: 10s) so that one episode's queue"
                " drains before the next: episodes must be independent",
            )
        planned = self.repeat * sum(phase.planned_requests for phase in self.phases)
        planned *= self.sessions.mean_turns if self.sessions is not None else 1.0
        if planned > MAX_PLANNED_REQUESTS:
            raise check.FieldError(
                "phases",
                f"the workload plans {planned:,.0f} requests (rate x duration over phases and"
                f" repeats); at most {MAX_PLANNED_REQUESTS:,} are allowed",
            )

    def _check_phases(self) -> None:
        if isinstance(self.phases, list):
            object.__setattr__(self, "phases", tuple(self.phases))
        if not isinstance(self.phases, tuple) or not self.phases:
            raise check.FieldError("phases", "workload needs at least one phase")
        for phase in self.phases:
            if not isinstance(phase, Phase):
                raise check.FieldError("phases", f"phases must be Phase objects, got {phase!r}")
        names = [phase.name for phase in self.phases]
        if duplicated := sorted({name for name in names if names.count(name) > 1}):
            raise SpecError(f"phase names must be unique, repeated: {', '.join(duplicated)}")

    @property
    def episode_s(self) -> float:
        """One pass over the phases."""
        return sum(phase.duration_s for phase in self.phases)

    @property
    def duration_s(self) -> float:
        """Every episode and the cool-downs between them."""
        return self.repeat * self.episode_s + (self.repeat - 1) * self.cooldown_s

    def episode_start_s(self, episode: int) -> float:
        """When episode ``episode`` (0-based) starts, in seconds from the run's start."""
        return episode * (self.episode_s + self.cooldown_s)

    def phase_start_s(self, name: str, episode: int = 0) -> float:
        """When phase ``name`` starts in ``episode``; KeyError for an unknown name."""
        start = self.episode_start_s(episode)
        for phase in self.phases:
            if phase.name == name:
                return start
            start += phase.duration_s
        raise KeyError(name)

    def phase_windows(self, name: str) -> list[tuple[float, float]]:
        """(start, end) of every occurrence of phase ``name``, one per episode."""
        phase = next(phase for phase in self.phases if phase.name == name)
        starts = [self.phase_start_s(name, episode) for episode in range(self.repeat)]
        return [(start, start + phase.duration_s) for start in starts]

    def to_json(self) -> dict[str, object]:
        """The workload as given, for the run's JSON and the baseline fingerprint."""
        return {
            "seed": self.seed,
            "input_tokens": list(self.input_tokens),
            "output_tokens": self.output_tokens,
            "timeout_s": self.timeout_s,
            "warmup": self.warmup_requests,
            "ignore_eos": self.ignore_eos,
            "repeat": self.repeat,
            "cooldown_s": self.cooldown_s,
            # Only when set, so that earlier baselines keep their fingerprint.
            **({"max_concurrency": self.max_concurrency} if self.max_concurrency else {}),
            **({"prefix": self.prefix.to_json()} if self.prefix is not None else {}),
            **({"sessions": self.sessions.to_json()} if self.sessions is not None else {}),
            **({"prompts": self.prompts.to_json()} if self.prompts is not None else {}),
            **({"tokenizer": self.tokenizer.name} if self.tokenizer is not None else {}),
            **({"until_decided": {"max_s": self.until_decided_s}} if self.until_decided_s else {}),
            **({"retry": self.retry.to_json()} if self.retry is not None else {}),
            **({"classes": [c.to_json() for c in self.classes]} if self.classes else {}),
            "phases": [phase.to_json() for phase in self.phases],
        }


@dataclass(frozen=True, slots=True)
class Objective:
    """A latency objective on the requests in its scope.

    Absolute: ``metric`` at percentile ``p`` <= ``max_s`` seconds (for ``error_rate`` no
    ``p``, and ``max_s`` is the largest failed/offered fraction). Relative:
    ``max_regression`` (a fraction, 0.1 = 10%) against the same test in a baseline.
    Scope: ``phase``, ``service_class`` and token-range cohorts (None: all)."""

    metric: Metric
    max_s: float | None = None
    p: float | None = None
    phase: str | None = None
    input_tokens: tuple[int, int] | None = None
    output_tokens: tuple[int, int] | None = None
    max_regression: float | None = None
    # A relative objective fails only when the candidate is slower than the baseline by
    # more than max_regression *and* by more than this many seconds (0: no floor).
    min_change_s: float = 0.0
    thresholds: tuple[tuple[str, float], ...] = ()  # release gates: see spec_gates.py
    min_value: float | None = None
    after: str | None = None
    outage_s: float | None = None  # error_rate: an unseen outage allowed for (seconds)
    limit_text: str | None = field(default=None, compare=False)  # max as written: "1s"
    service_class: str | None = None  # scope: one service class (``class:``), None = all

    def __post_init__(self) -> None:
        check.choice("metric", self.metric, METRICS, what="objective metric")
        if self.outage_s is not None and self.metric != "error_rate":
            raise check.FieldError("outage_s", f"objective {self.metric}: outage is for error_rate")
        if self.metric in gates.GATE_METRICS:
            return gates.check_gate(self)
        if (self.max_s is None) == (self.max_regression is None):
            raise SpecError(f"objective {self.metric}: give exactly one of max or max_regression")
        check.text("phase", self.phase, what=f"objective {self.metric}: phase", optional=True)
        check.text("service_class", self.service_class, what="objective class", optional=True)
        for name in ("input_tokens", "output_tokens"):
            bounds = getattr(self, name)
            if isinstance(bounds, list):
                object.__setattr__(self, name, bounds := tuple(bounds))
            if bounds is not None:
                what = f"objective {self.metric}: {name}"
                check.token_range(name, bounds, 0, MAX_TOKENS, what=what)
        if self.metric == "error_rate":
            self._check_error_rate()
        else:
            self._check_latency()

    def _check_error_rate(self) -> None:
        if self.p is not None:
            raise check.FieldError("p", "objective error_rate takes no percentile p")
        check.number("max_s", self.max_s, at_least=0, at_most=1, what="error_rate max (fraction)")
        if self.min_change_s != 0.0:
            raise check.FieldError("min_change_s", "objective error_rate takes no min_change")
        if self.outage_s is not None:
            check.number("outage_s", self.outage_s, above=0, at_most=MAX_DURATION_S, what="outage")

    def _check_latency(self) -> None:
        where = f"objective {self.metric}: "
        check.percentile("p", self.p, what=where + "p")
        if self.max_s is not None:
            check.number("max_s", self.max_s, above=0, at_most=MAX_DURATION_S, what=where + "max")
        if self.max_regression is not None:
            check.number("max_regression", self.max_regression, at_least=0,
                         at_most=MAX_REGRESSION, what=where + "max_regression")  # fmt: skip
        check.number("min_change_s", self.min_change_s, at_least=0, at_most=MAX_DURATION_S,
                     what=where + "min_change")  # fmt: skip
        if self.min_change_s and self.max_regression is None:
            message = where + "min_change applies to max_regression only"
            raise check.FieldError("min_change_s", message)

    @property
    def relative(self) -> bool:
        """Decided against a baseline (``max_regression``) rather than an absolute limit."""
        return self.max_regression is not None

    @property
    def scope(self) -> str:
        """Which requests the objective is about: ``"steady, input 1-256"``, or ``""`` for all."""
        parts = [self.phase] if self.phase else []
        parts += [f"class {self.service_class}"] if self.service_class else []
        if self.input_tokens:
            parts.append(f"input {self.input_tokens[0]}-{self.input_tokens[1]}")
        if self.output_tokens:
            parts.append(f"output {self.output_tokens[0]}-{self.output_tokens[1]}")
        return ", ".join(parts)

    @property
    def label(self) -> str:
        """The objective as reports print it: ``ttft p95 <= 700ms [steady]``."""
        where = f" [{self.scope}]" if self.scope else ""
        if self.metric in gates.GATE_METRICS:
            return gates.gate_label(self)
        if self.metric == "error_rate":
            return f"error_rate <= {self.limit_text or f'{self.max_s or 0.0:.2%}'}{where}"
        if self.max_regression is not None:
            return f"{self.metric} p{self.p:g} <= baseline +{self.max_regression:.0%}{where}"
        limit = self.limit_text or f"{(self.max_s or 0.0) * 1e3:g}ms"
        return f"{self.metric} p{self.p:g} <= {limit}{where}"


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Which server to test: ``kind`` 'sim' (embedded), 'url' with ``url``, or a container kind.

    ``image`` and ``gpus`` apply to container kinds (and run the embedded server from
    its image); ``options`` are the kind's own settings (docs/containers.md).
    """

    kind: str = "sim"
    url: str | None = None
    model: str | None = None
    api: Api = "chat"
    options: dict[str, object] = field(default_factory=dict)
    image: str | None = None
    gpus: str | None = None

    def __post_init__(self) -> None:
        check.text("kind", self.kind, what="server kind")
        for name in ("url", "model", "image"):
            check.text(name, getattr(self, name), what=f"server {name}", optional=True)
        if not isinstance(self.options, dict):
            raise check.FieldError(
                "options", f"server options must be a mapping, got {self.options!r}"
            )
        check.choice("api", self.api, APIS, what="server api")
        if self.kind == "url" and not self.url:
            raise SpecError("server kind 'url' needs a url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise SpecError(f"server url must start with http:// or https://, got {self.url!r}")
        if self.gpus is not None:
            try:
                parse_gpus(self.gpus)
            except ValueError as error:
                raise SpecError(str(error)) from None


def objective(
    metric: str,
    *,
    max: str | None = None,
    p: float | None = None,
    phase: str | None = None,
    max_regression: str | None = None,
    input_tokens: tuple[int, int] | None = None,
    output_tokens: tuple[int, int] | None = None,
    min_change: str | None = None,
    max_s: float | None = None,
    max_ms: float | None = None,
    max_fraction: float | None = None,
    min_change_s: float | None = None,
    outage: str | None = None,
    outage_s: float | None = None,
    service_class: str | None = None,
    **gate: str | float | None,
) -> Objective:
    """An objective with units: ``objective("ttft", p=95, max="700ms", phase="steady")``.

    One limit: ``max`` with its unit (``"700ms"``; for ``error_rate`` ``"1%"``), or numbers
    with the unit in the keyword: ``max_s=0.7``, ``max_ms=700``, ``max_fraction=0.01``; a
    bare number in ``max`` is a SpecError with the fix. ``max_regression``: a percentage
    (``"10%"``), with ``min_change`` (``min_change_s``) an absolute floor (``"2ms"``).
    ``p``: 95, not 0.95. ``outage="2s"`` (``outage_s``): an error_rate's unseen outage.
    ``service_class``: one class's requests (YAML ``class:``). SpecErrors are raised
    from here, so a traceback shows the caller's line."""
    try:
        check.choice("metric", metric, METRICS, what="objective metric")
        unseen_outage_s = outage_duration(metric, outage, outage_s)
        gate_fields = gates.gate_objective_fields(metric, max, max_s, max_ms, gate)
        if gate_fields is not None:
            return Objective(metric=cast(Metric, metric), phase=phase, p=p,
                             service_class=service_class, **gate_fields)  # fmt: skip
        limits = objective_limits(
            metric,
            dict(max=max, max_s=max_s, max_ms=max_ms, max_fraction=max_fraction)
            | dict(max_regression=max_regression, min_change=min_change, min_change_s=min_change_s),
        )
        return Objective(
            metric=cast(Metric, metric),  # validated in __post_init__
            max_s=limits.max_s,
            p=p,
            phase=phase,
            max_regression=limits.max_regression,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            min_change_s=limits.min_change_s,
            outage_s=unseen_outage_s,
            limit_text=max.strip() if isinstance(max, str) and limits.max_s is not None else None,
            service_class=service_class,
        )
    except SpecError as error:
        raise error.with_traceback(None) from None
