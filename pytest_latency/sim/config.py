"""Configuration of the embedded reference server: capacity, admission and timing model.

Every field carries its help text in ``metadata`` so the command line (``python -m
pytest_latency.sim --help``) and the documentation stay in step with the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_MODEL = "sim-tiny"
#: ``parent``: the caller's sampled flag decides, as in vLLM (``vllm/tracing/otel.py``
#: builds its TracerProvider with the SDK's default, parent-based sampler); ``all``.
OTLP_SAMPLINGS = ("parent", "all")
SCHEDULINGS = ("fcfs", "priority")  # vLLM's --scheduling-policy values


def _opt(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Capacity, admission and timing of the simulated serving stack.

    The defaults are calibrated so the classic spike workload (Poisson, 5 req/s
    for 20 s then 25 req/s for 5 s, prompts of 200-400 tokens, 200 output tokens)
    reproduces its illustrative spike: a short queue wait and ~30 ms inter-token
    latency in steady load, queue waits of seconds in the burst while the token
    cadence barely moves. See ``docs/sim.md`` for the engine iteration model.
    """

    replicas: int = _opt(2, "model replicas sharing one admission queue")
    max_batch: int = _opt(48, "sequences one replica decodes at once (its slots)")
    max_queue: int = _opt(512, "waiting requests before new ones get 429")
    queue_timeout_s: float = _opt(30.0, "longest a request may wait for a slot before 503")
    decode_base_s: float = _opt(0.029, "fixed cost of one engine step, seconds")
    decode_per_seq_s: float = _opt(0.00005, "extra step cost per sequence in the batch, seconds")
    prefill_base_s: float = _opt(0.002, "extra step cost per newly admitted request, seconds")
    prefill_per_token_s: float = _opt(
        0.0001, "extra step cost per prompt token of newly admitted requests, seconds"
    )
    prefix_cache_blocks: int = _opt(
        16_384, "prefix cache size in blocks (LRU); 0 turns the prefix cache off"
    )
    prefix_block_tokens: int = _opt(16, "tokens (prompt words) per prefix-cache block")
    cold_start_s: float = _opt(0.0, "delay after start before the replicas are ready, seconds")
    model: str = _opt(DEFAULT_MODEL, "the one model name served")
    seed: int = _opt(0, "seed for early-stop lengths (ignore_eos=false) and token words")
    default_max_tokens: int = _opt(16, "output cap when a request sets none")
    max_model_len: int = _opt(8192, "prompt plus output tokens allowed per request")
    # Streams as reasoning models and speculative decoding send them (sim/chunks.py).
    reasoning_tokens: int = _opt(
        0,
        "output tokens each answer first spends reasoning, streamed as delta.reasoning_content"
        " (chat; at most all but one of its tokens); 0: no reasoning",
    )
    tokens_per_chunk: int = _opt(
        1, "output tokens per SSE chunk (several: speculative decoding, stream intervals)"
    )
    scheduling: str = _opt(
        "fcfs",
        "fcfs, or priority as vLLM's --scheduling-policy priority: the request field"
        " 'priority' (lower first) orders the queue and preempts running requests",
    )
    class_shares: str = _opt(
        "",
        "per-class admission shares, e.g. premium=70,batch=30 (percent of the server's"
        " slots plus queue); a class over its share gets 429 with Retry-After; empty: none",
    )
    class_header: str = _opt("x-service-class", "the request header naming its class")
    otlp_traces_endpoint: str = _opt(
        "", "OTLP/HTTP URL (with /v1/traces) for vLLM-style request spans; empty: no export"
    )
    otlp_sampling: str = _opt(
        "parent",
        "which requests get a span: parent (as vLLM and SGLang: none when the incoming "
        "traceparent's sampled flag is clear) or all",
    )

    def __post_init__(self) -> None:
        if self.reasoning_tokens < 0 or self.tokens_per_chunk < 1:
            raise ValueError(
                "SimConfig: reasoning_tokens must be >= 0 and tokens_per_chunk >= 1, got"
                f" {self.reasoning_tokens!r} and {self.tokens_per_chunk!r}"
            )
        for name in ("replicas", "max_batch", "max_model_len", "default_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"SimConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.prefix_block_tokens < 1:
            raise ValueError(
                f"SimConfig.prefix_block_tokens must be >= 1, got {self.prefix_block_tokens!r}"
            )
        if self.max_queue < 0 or self.prefix_cache_blocks < 0:
            name = "max_queue" if self.max_queue < 0 else "prefix_cache_blocks"
            raise ValueError(f"SimConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name.endswith("_s") and not value >= 0:
                raise ValueError(f"SimConfig.{spec.name} must be >= 0 seconds, got {value!r}")
        if self.decode_base_s + self.decode_per_seq_s <= 0:
            # A zero-cost step would make a replica spin without yielding time.
            raise ValueError("SimConfig: decode_base_s + decode_per_seq_s must be > 0")
        if not self.model:
            raise ValueError("SimConfig.model must be a non-empty string")
        if self.otlp_sampling not in OTLP_SAMPLINGS:
            raise ValueError(
                f"SimConfig.otlp_sampling must be one of {', '.join(OTLP_SAMPLINGS)}, "
                f"got {self.otlp_sampling!r}"
            )
        if self.scheduling not in SCHEDULINGS:
            raise ValueError(
                f"SimConfig.scheduling must be one of {', '.join(SCHEDULINGS)}, got"
                f" {self.scheduling!r}"
            )
        self.shares()  # a malformed class_shares fails at start, not on a request
        endpoint = self.otlp_traces_endpoint
        if endpoint and not endpoint.startswith(("http://", "https://")):
            raise ValueError(
                f"SimConfig.otlp_traces_endpoint must be an http(s) URL, got {endpoint!r}"
            )

    def shares(self) -> dict[str, float]:
        """``class_shares`` as fractions by class name (empty: no per-class admission)."""
        found: dict[str, float] = {}
        for part in filter(None, (item.strip() for item in self.class_shares.split(","))):
            name, _, percent = part.partition("=")
            try:
                share = float(percent.strip().rstrip("%")) / 100
            except ValueError:
                share = -1.0
            if not name.strip() or not 0 < share <= 1:
                raise ValueError(
                    f"SimConfig.class_shares: expected NAME=PERCENT items such as"
                    f" premium=70,batch=30, got {part!r}"
                )
            found[name.strip()] = share
        return found

    def step_duration(self, batch_size: int, admitted_prompt_tokens: list[int]) -> float:
        """Seconds one engine step takes: decode for the whole batch plus new prefills
        (``admitted_prompt_tokens``: each new prompt's tokens not in the prefix cache)."""
        prefill = sum(
            self.prefill_base_s + self.prefill_per_token_s * n for n in admitted_prompt_tokens
        )
        return self.decode_base_s + self.decode_per_seq_s * batch_size + prefill
