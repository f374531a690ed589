"""Per-request records: the one row every offered request ends in (DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

import numpy as np


class Status(StrEnum):
    """How a request ended. Exactly one per offered request."""

    OK = "ok"
    HTTP_ERROR = "http_error"
    REJECTED = "rejected"  # 429/503 from admission control
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    PROTOCOL_ERROR = "protocol_error"
    CANCELLED = "cancelled"


TokenSource = Literal["usage", "chunks"]


@dataclass(slots=True)
class RequestRecord:
    """Client-side measurements of one request, in seconds from the run's start.

    ``first_token_s`` and ``end_s`` are instants on the client's monotonic clock
    relative to run start; ``ttft_s`` and ``e2e_s`` are measured from the *planned*
    send time ``intended_s`` so a late generator never hides latency.
    Server fields stay None unless the server reported them.
    """

    id: int
    phase: str
    intended_s: float
    input_tokens: int
    max_tokens: int | None = None  # the planned output cap
    trace_id: str = ""
    sent_s: float | None = None
    first_token_s: float | None = None
    end_s: float | None = None
    # Appended to as chunks arrive (a list), stored compactly once the request ended.
    itl_s: list[float] | np.ndarray = field(default_factory=list)
    status: Status = Status.CANCELLED
    error: str | None = None
    http_status: int | None = None
    output_tokens: int | None = None
    output_tokens_source: TokenSource | None = None
    queue_wait_s: float | None = None
    prefill_s: float | None = None
    decode_s: float | None = None
    server_source: str | None = None  # where the server durations came from, if anywhere
    # Raw server reports kept until the telemetry join reads them.
    server_timing: str | None = None  # the Server-Timing response header
    stream_timings: dict[str, object] | None = None  # llama.cpp's last-chunk ``timings``

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def schedule_lag_s(self) -> float | None:
        return None if self.sent_s is None else self.sent_s - self.intended_s

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_s is None else self.first_token_s - self.intended_s

    @property
    def e2e_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.intended_s

    @property
    def after_queue_s(self) -> float | None:
        """TTFT minus the server-reported queue wait, per request (never from percentiles)."""
        ttft = self.ttft_s
        if ttft is None or self.queue_wait_s is None:
            return None
        return ttft - self.queue_wait_s

    @property
    def unattributed_s(self) -> float | None:
        """The part of TTFT the server did not account for (queue wait and prefill).

        Only what the server reported is subtracted: with queue wait alone, the rest of
        TTFT is unattributed, not "prefill". None when the server reported neither.
        """
        ttft = self.ttft_s
        if ttft is None or (self.queue_wait_s is None and self.prefill_s is None):
            return None
        return ttft - (self.queue_wait_s or 0.0) - (self.prefill_s or 0.0)

    @property
    def tpot_s(self) -> float | None:
        """(e2e - ttft) / (output_tokens - 1), per request; None when undefined."""
        if self.first_token_s is None or self.end_s is None or not self.output_tokens:
            return None
        if self.output_tokens < 2:
            return None
        return (self.end_s - self.first_token_s) / (self.output_tokens - 1)
