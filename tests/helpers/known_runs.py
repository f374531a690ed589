"""Runs with known latencies: a steady phase of 100 requests with TTFT 10..1000 ms, then
a burst of 20 at 5 s, scaled, for the CLI's and reports' tests."""

from __future__ import annotations

import numpy as np

from pytest_latency.records import RequestRecord, Status


def scaled_records(scale: float, failed: int = 0) -> list[RequestRecord]:
    """100 steady requests with TTFT 10..1000 ms times ``scale``, 20 burst ones at 5 s."""
    records = []
    for index in range(120):
        phase = "steady" if index < 100 else "burst"
        ttft = (index + 1) * 0.01 * scale if phase == "steady" else 5.0 * scale
        record = RequestRecord(id=index, phase=phase, intended_s=index * 0.1, input_tokens=10)
        record.sent_s = record.intended_s
        if index < failed:
            record.status, record.end_s, record.error = Status.HTTP_ERROR, record.sent_s, "500"
        else:
            record.status = Status.OK
            record.first_token_s = record.sent_s + ttft
            record.itl_s = np.full(9, 0.02 * scale)
            record.end_s = record.first_token_s + 9 * 0.02 * scale
            record.output_tokens = 10
        records.append(record)
    return records
