"""A server of known capacity in virtual time: ``slots`` requests served at once, each
for a fixed prefill then a fixed decode per output token, first come first served.

Its throughput capacity is ``slots / (prefill + tokens x decode)`` req/s (an M/D/c
queue under Poisson arrivals); where a latency objective flips is found by simulating
it, as the capacity tests do.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from pytest_latency.records import RequestRecord, Status


@dataclass(frozen=True, slots=True)
class SlotServer:
    slots: int
    prefill_s: float
    decode_s: float  # per output token
    output_tokens: int

    @property
    def service_s(self) -> float:
        return self.prefill_s + self.output_tokens * self.decode_s

    @property
    def throughput_rps(self) -> float:
        """The highest rate it sustains (the queue runs away above it)."""
        return self.slots / self.service_s

    def serve(self, arrivals_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(first token, end) instants of requests arriving at ``arrivals_s`` (sorted)."""
        free = [0.0] * self.slots
        starts = np.empty(arrivals_s.size)
        for index, at in enumerate(arrivals_s):
            start = max(float(at), heapq.heappop(free))
            heapq.heappush(free, start + self.service_s)
            starts[index] = start
        return starts + self.prefill_s, starts + self.service_s

    def records(self, phases: list[tuple[str, float, float]], seed: int) -> list[RequestRecord]:
        """Poisson arrivals through ``phases`` (name, rate, seconds) served to the end."""
        rng = np.random.default_rng(seed)
        names: list[str] = []
        times: list[float] = []
        offset = 0.0
        for name, rate, seconds in phases:
            count = rng.poisson(rate * seconds)
            at = np.sort(rng.uniform(offset, offset + seconds, count))
            times.extend(at.tolist())
            names.extend([name] * count)
            offset += seconds
        arrivals = np.array(times)
        first, end = self.serve(arrivals)
        records = []
        for index, (name, at) in enumerate(zip(names, arrivals, strict=True)):
            record = RequestRecord(index, name, float(at), 20)
            record.sent_s, record.status = float(at), Status.OK
            record.first_token_s, record.end_s = float(first[index]), float(end[index])
            record.output_tokens = self.output_tokens
            records.append(record)
        return records
