"""Throughput of one phase, counted over the phase's own window (docs/metrics.md).

The window of one occurrence of a phase runs from the phase's planned start to the end
of the last of its requests, or to the phase's planned end if that is later: requests
sent near the end of a phase finish after it, and their tokens belong to it. A phase
repeated over episodes adds its windows. Only completed (``ok``) requests count, as in
vLLM's ``bench serve`` and AIPerf: completed requests/s, their output tokens/s, and
their input plus output tokens/s. Output tokens/s per user is the mean, over completed
requests with two or more tokens, of (output tokens - 1) / (e2e - ttft): the rate one
reader sees once the answer streams (AIPerf's "output token throughput per user", 1/ITL
in its words), which a high aggregate rate can hide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.records import RequestRecord

WINDOW = "over the phase's window: its planned start to its last response (or its end)"


@dataclass(frozen=True, slots=True)
class Throughput:
    """Completed work of one phase per second of its window."""

    window_s: float
    completed: int
    output_tokens: int
    total_tokens: int
    output_tokens_per_s_per_user: float | None  # None: no request streamed 2+ tokens

    @property
    def requests_per_s(self) -> float:
        return self.completed / self.window_s if self.window_s > 0 else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.window_s if self.window_s > 0 else 0.0

    @property
    def total_tokens_per_s(self) -> float:
        return self.total_tokens / self.window_s if self.window_s > 0 else 0.0

    def to_json(self) -> dict[str, float | None]:
        """``phases[].throughput``: exactly these four keys (the window is beside it)."""
        return {
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "total_tokens_per_s": self.total_tokens_per_s,
            "output_tokens_per_s_per_user": self.output_tokens_per_s_per_user,
        }

    def describe(self) -> str:
        """One line for the terminal and Markdown: the numbers and their window."""
        per_user = self.output_tokens_per_s_per_user
        user = "n/a" if per_user is None else f"{per_user:.1f}"
        return (
            f"throughput {self.requests_per_s:.2f} req/s, {self.output_tokens_per_s:.1f}"
            f" output tok/s, {self.total_tokens_per_s:.1f} total tok/s, {user} output tok/s"
            f" per user ({self.completed} completed over {self.window_s:.1f}s, {WINDOW})"
        )


def window_s(records: Sequence[RequestRecord], windows: Sequence[tuple[float, float]]) -> float:
    """The phase's window in seconds: per episode, planned start to the later of its
    planned end and its last response; summed over episodes."""
    last: dict[int, float] = {}  # each episode's last response
    for record in records:
        if record.end_s is not None:
            last[record.episode] = max(last.get(record.episode, record.end_s), record.end_s)
    return sum(
        max(end, last.get(episode, end)) - start for episode, (start, end) in enumerate(windows)
    )


def _input_tokens(record: RequestRecord) -> int:
    """The server's prompt count where it gave one, else the planned input length."""
    return record.prompt_tokens if record.prompt_tokens is not None else record.input_tokens


def per_user_rate(records: Sequence[RequestRecord]) -> float | None:
    """Mean over completed requests with 2+ tokens of (tokens - 1) / (e2e - ttft)."""
    rates = []
    for record in records:
        ttft, e2e, tokens = record.ttft_s, record.e2e_s, record.output_tokens
        if not record.ok or ttft is None or e2e is None or not tokens or tokens < 2:
            continue
        if e2e > ttft:
            rates.append((tokens - 1) / (e2e - ttft))
    return sum(rates) / len(rates) if rates else None


def phase_throughput(
    records: Sequence[RequestRecord], windows: Sequence[tuple[float, float]]
) -> Throughput:
    """Throughput of one phase's ``records`` over its ``windows`` (one per episode)."""
    completed = [record for record in records if record.ok]
    output = sum(record.output_tokens or 0 for record in completed)
    total = output + sum(_input_tokens(record) for record in completed)
    return Throughput(
        window_s=window_s(records, windows),
        completed=len(completed),
        output_tokens=output,
        total_tokens=total,
        output_tokens_per_s_per_user=per_user_rate(completed),
    )
