"""Runs of known truth for infrastructure tests: which requests were answered, which
failed and how, in send order (one request every ``1 / rate`` seconds)."""

from __future__ import annotations

import random

from pytest_latency.records import RequestRecord, Status

REFUSED = "ConnectError: [Errno 111] Connect call failed ('127.0.0.1', 8000)"
CUT = "stream ended without [DONE]"


def answered(index: int, phase: str = "steady", rate: float = 10.0) -> RequestRecord:
    """Request ``index``, sent at ``index / rate`` seconds, its first token after 50 ms and
    its 15 gaps after about 10 ms each (seeded by the index: independent requests)."""
    intended = index / rate
    draw = random.Random(index)
    ttft = 0.05 * draw.lognormvariate(0.0, 0.3)
    gaps = [0.01 * draw.lognormvariate(0.0, 0.2) for _ in range(15)]
    return RequestRecord(
        id=index, phase=phase, intended_s=intended, input_tokens=100, sent_s=intended,
        first_token_s=intended + ttft, end_s=intended + ttft + sum(gaps), itl_s=gaps,
        status=Status.OK, http_status=200, output_tokens=16, trace_id=f"{index:032x}",
    )  # fmt: skip


def failed(
    index: int, status: Status, error: str, phase: str = "steady", rate: float = 10.0
) -> RequestRecord:
    http = int(error[5:8]) if error.startswith("HTTP ") else None
    return RequestRecord(
        id=index, phase=phase, intended_s=index / rate, input_tokens=100, status=status,
        error=error, http_status=http, trace_id=f"{index:032x}",
    )  # fmt: skip


def server_dies_at(index: int, offered: int = 150, cut: int = 3) -> list[RequestRecord]:
    """``index`` requests answered; ``cut`` streams in flight cut off; the rest refused."""
    records = [answered(i) for i in range(index)]
    records += [failed(i, Status.PROTOCOL_ERROR, CUT) for i in range(index, index + cut)]
    records += [failed(i, Status.CONNECTION_ERROR, REFUSED) for i in range(index + cut, offered)]
    return records
