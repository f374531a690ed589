"""Requests of a trace phase: the trace's instants, lengths, block ids and sessions."""

from __future__ import annotations

import numpy as np

from pytest_latency.spec.model import Workload
from pytest_latency.workload.plan import PlannedRequest
from pytest_latency.workload.sessions import Start
from pytest_latency.workload.shaper import PromptShaper


def trace_request(
    workload: Workload,
    start: Start,
    request_id: int,
    shaper: PromptShaper,
    rng: np.random.Generator,
) -> PlannedRequest:
    """The request of one trace line, at its phase start plus the line's offset.

    ``input_tokens`` is the trace's input length; a line with ``input_text`` (AIPerf)
    sends that text, counted when it has no length. A line without an output length
    gets the workload's ``output_tokens``.
    """
    line = start.line
    assert line is not None  # a trace phase's start
    if line.text is not None:
        prompt = line.text
        tokens = line.input_tokens or shaper.count(line.text)
    elif line.hash_ids:
        assert line.input_tokens is not None  # a line without text has a length
        prompt, tokens = shaper.from_blocks(request_id, line.input_tokens, line.hash_ids, rng)
    else:
        assert line.input_tokens is not None
        prompt, tokens = shaper.made_up(request_id, line.input_tokens, rng)
    return PlannedRequest(
        id=request_id,
        phase=start.phase,
        intended_s=start.intended_s,
        input_tokens=tokens,
        output_tokens=line.output_tokens or workload.output_tokens,
        prompt=prompt,
        episode=start.episode,
        session=line.session,
        turn=line.turn,
        input_tokens_source=shaper.source,
        prefix_blocks=line.hash_ids,
    )
