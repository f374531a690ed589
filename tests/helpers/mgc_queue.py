"""Known-truth M/G/c queues as request records, in virtual time (no server).

Poisson arrivals at a given load of ``slots`` servers, first come first served, with
service times of a given mean and coefficient of variation: exponential (CV 1),
lognormal or balanced-means hyperexponential (any CV), or fixed (CV 0). The first
token comes when service starts (TTFT is the wait); service ends the request. Loads
under 1 hold still; over 1 the queue runs away at ``(load - 1) x capacity`` req/s.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from pytest_latency.records import RequestRecord, Status


def service_times(
    rng: np.random.Generator, n: int, mean: float, cv: float, kind: str
) -> np.ndarray:
    """``n`` service times of ``mean`` and coefficient of variation ``cv``."""
    if cv == 0.0:
        return np.full(n, mean)
    if kind == "exponential":
        return rng.exponential(mean, n)
    if kind == "lognormal":
        sigma2 = math.log(1.0 + cv * cv)
        return rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    if kind == "hyperexponential":  # two exponentials, each carrying half the mean
        square = cv * cv
        p = 0.5 * (1.0 + math.sqrt((square - 1.0) / (square + 1.0)))
        fast = rng.random(n) < p
        return np.where(
            fast, rng.exponential(mean / (2 * p), n), rng.exponential(mean / (2 * (1 - p)), n)
        )
    raise ValueError(f"unknown service kind {kind!r}")


@dataclass(frozen=True, slots=True)
class MGcQueue:
    slots: int
    capacity_rps: float  # slots / mean service time
    cv: float = 1.0
    kind: str = "exponential"

    def records(
        self, load: float, seconds: float, seed: int, phase: str = "steady", warmup_s: float = 0.0
    ) -> list[RequestRecord]:
        """Arrivals at ``load`` x capacity for ``warmup_s`` (phase ``warmup``) then
        ``seconds`` (``phase``), from an empty queue, each served to its end."""
        rng = np.random.default_rng(seed)
        rate = load * self.capacity_rps
        total = warmup_s + seconds
        arrivals = np.sort(rng.uniform(0.0, total, rng.poisson(rate * total)))
        services = service_times(
            rng, arrivals.size, self.slots / self.capacity_rps, self.cv, self.kind
        )
        free = [0.0] * self.slots
        records = []
        for index, (at, service) in enumerate(
            zip(arrivals.tolist(), services.tolist(), strict=True)
        ):
            start = max(at, heapq.heappop(free))
            heapq.heappush(free, start + service)
            record = RequestRecord(index, "warmup" if at < warmup_s else phase, at, 20)
            record.sent_s, record.status, record.output_tokens = at, Status.OK, 20
            record.first_token_s, record.end_s = start + 1e-3, start + service + 1e-3
            records.append(record)
        return records
