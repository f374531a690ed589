"""The request body: the workload-wide min_tokens never passes a request's own max_tokens."""

from __future__ import annotations

import json
from typing import cast

from pytest_latency.driver.request import Sender
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.driver.transport import Transport
from pytest_latency.workload.plan import PlannedRequest


def _body(output_tokens: int) -> dict[str, object]:
    sender = Sender(
        cast(Transport, None),  # body() never touches the transport
        {},
        "tiny",
        True,
        {"ignore_eos": True, "min_tokens": 200},
        5.0,
        ClientSpans(),
    )
    request = PlannedRequest(0, "replay", 0.0, 10, output_tokens, "a prompt")
    return cast(dict[str, object], json.loads(sender.body(request)))


def test_min_tokens_is_capped_at_the_requests_max_tokens() -> None:
    assert (_body(5)["max_tokens"], _body(5)["min_tokens"]) == (5, 5)
    assert (_body(300)["max_tokens"], _body(300)["min_tokens"]) == (300, 200)
