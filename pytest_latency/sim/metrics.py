"""Prometheus text exposition (format 0.0.4) of the reference server's state.

Aggregate series only: request and trace ids belong in logs and traces, never in
labels, where each new value would create a new time series.
"""

from __future__ import annotations

from bisect import bisect_left

from pytest_latency.sim.engine import Engine

QUEUE_TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    """A cumulative histogram with fixed upper bounds, as Prometheus expects."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def lines(self, name: str) -> list[str]:
        out: list[str] = []
        running = 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            running += count
            out.append(f'{name}_bucket{{le="{bound}"}} {running}')
        running += self.counts[-1]
        out.append(f'{name}_bucket{{le="+Inf"}} {running}')
        out.append(f"{name}_sum {self.total}")
        out.append(f"{name}_count {running}")
        return out


def exposition(engine: Engine, invalid: int, queue_time: Histogram, now: float) -> str:
    """The ``/metrics`` body."""
    counters, cache = engine.counters, engine.prefix_cache
    outcomes = {
        "ok": counters.completed,
        "rejected": counters.rejected,
        "expired": counters.expired,
        "unavailable": counters.unavailable,
        "cancelled": counters.cancelled,
        "invalid": invalid,
    }
    ready = engine.config.replicas if engine.is_ready(now) else 0
    families: list[tuple[str, str, str, dict[str, float]]] = [
        ("num_requests_waiting", "gauge", "Requests waiting in the admission queue.",
         {"": engine.waiting}),
        ("num_requests_running", "gauge", "Requests running on a replica.", {"": engine.running}),
        ("replicas_ready", "gauge", "Replicas ready to take work.", {"": ready}),
        ("requests_total", "counter", "Requests that ended, by outcome.",
         {f'{{outcome="{name}"}}': value for name, value in outcomes.items()}),
        ("requests_scheduled_total", "counter", "Requests that reached a replica.",
         {"": counters.scheduled}),
        ("requests_rejected_total", "counter", "Requests refused because the queue was full.",
         {"": counters.rejected}),
        ("requests_expired_total", "counter", "Requests dropped after their queue deadline.",
         {"": counters.expired}),
        ("prompt_tokens_total", "counter", "Prompt tokens prefilled.",
         {"": counters.prompt_tokens}),
        ("generation_tokens_total", "counter", "Output tokens generated.",
         {"": counters.generation_tokens}),
        ("prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         {"": cache.queried_tokens}),
        ("prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         {"": cache.hit_tokens}),
        ("prefix_cache_hit_rate", "gauge", "Prefix cache hits over queries, in tokens, so far.",
         {"": cache.hit_rate}),
    ]  # fmt: skip
    lines: list[str] = []
    for short, kind, help_text, samples in families:
        name = f"sim:{short}"
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [f"{name}{labels} {value}" for labels, value in samples.items()]
    name = "sim:request_queue_time_seconds"
    lines += [f"# HELP {name} Time requests waited for a replica.", f"# TYPE {name} histogram"]
    lines += queue_time.lines(name)
    return "\n".join(lines) + "\n"
