"""Deciding a request's final status: shared by the httpx and the fast transport.

The rules themselves are documented in :mod:`pytest_latency.driver.request`.
"""

from __future__ import annotations

from pytest_latency.driver.errors import error_event_text
from pytest_latency.driver.sse import ErrorEvent, StreamError, StreamState
from pytest_latency.records import RequestRecord, Status

UNDECIDED = Status.CANCELLED  # every record's status until one is decided
# finish_reason values by which a server says it gave up on the request (vLLM's "abort",
# OpenAI-style "error"): the answer is not one, whatever came before.
FAILED_FINISH_REASONS = frozenset({"abort", "error"})


def decide(record: RequestRecord, status: Status, error: str | None) -> None:
    """Set the final status unless one was already decided."""
    if record.status is UNDECIDED:
        record.status = status
        record.error = error


def decide_stream_end(
    record: RequestRecord,
    state: StreamState,
    error: StreamError | None,
    content_type: str,
    prompt: str,
) -> None:
    """The status of a 2xx streamed response once its body ended (or broke off)."""
    if isinstance(error, ErrorEvent):
        decide(record, Status.HTTP_ERROR, error_event_text(error.payload, prompt))
    elif error is not None:
        decide(record, Status.PROTOCOL_ERROR, str(error))
    elif state.done or state.finished:
        failure = answer_failure(state)
        decide(record, Status.OK if failure is None else Status.HTTP_ERROR, failure)
    else:
        hint = (
            ""
            if content_type.startswith("text/event-stream")
            else f" (content-type {content_type!r})"
        )
        decide(record, Status.PROTOCOL_ERROR, f"stream ended without [DONE]{hint}")


def answer_failure(state: StreamState) -> str | None:
    """Why a stream that ended properly is no answer; None when it is one.

    A 200 that is only ``[DONE]``, or stops at once, delivered nothing: counted as a
    success it would drop out of every latency sample and pass an error rate.
    """
    if state.finish_reason in FAILED_FINISH_REASONS:
        return f"the server ended the answer with finish_reason {state.finish_reason!r}"
    if state.chunks == 0:
        return "empty answer: the stream completed with no content"
    return None
