"""The ``stall`` rule: the server delivered nothing for a while, with requests waiting.

A queue builds and drains gradually: while requests wait, the ones being served still
produce first tokens and last bytes. A stall (a GC or allocator pause, a model or
adapter load, a lock, a stuck batch) produces nothing at all, then releases its waiters
together. Its signature in the records is a silence on the server's side of the
timeline, the largest gap between two server events (a first token, a last byte),
that is long against the run's own first-token latency, with several requests waiting
through it and no request evidently streaming across it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pytest_latency.analysis.diagnosis_rules import Columns, Finding, fmt_s, strength_margin

STALL_MIN_OK = 20  # ok requests, to know the run's usual first-token latency
STALL_MIN_S = 0.5  # a silence at least this long ...
STALL_FACTOR = 5.0  # ... and at least this many median TTFTs of the other requests
STALL_MIN_WAITING = 5  # requests that waited through at least half of it
_RELEASE_SHARE = 0.1  # "released at once": first token within this share of the silence


def _largest_silence(c: Columns) -> tuple[float, float] | None:
    """(start, end) of the longest stretch without a first token or a last byte."""
    events = np.concatenate([c.first[np.isfinite(c.first)], c.end[c.ok & np.isfinite(c.end)]])
    if events.size < 2:
        return None
    events.sort()
    index = int(np.argmax(np.diff(events)))
    return float(events[index]), float(events[index + 1])


def stall(c: Columns, largest_gaps: Callable[[np.ndarray], np.ndarray]) -> Finding | None:
    """The longest silence, when requests waited through it and none streamed across it.

    ``largest_gaps(rows)``: those requests' largest inter-token gaps (NaN without gaps),
    asked only for the requests streaming across the silence. One whose gaps are all
    shorter than the silence delivered tokens during it (events the columns do not
    hold), so there was no stall.
    """
    if int(c.ok.sum()) < STALL_MIN_OK:
        return None
    silence = _largest_silence(c)
    if silence is None:
        return None
    begin, end = silence
    length = end - begin
    streaming = np.flatnonzero(c.ok & (c.first <= begin) & (c.end >= end))
    if streaming.size and not np.all(largest_gaps(streaming) >= length):  # NaN: unknown
        return None
    waited = np.isfinite(c.first) & (c.first >= end) & (c.start < end)
    long_waits = int((waited & (c.start <= begin + length / 2)).sum())
    others = c.ok & ~waited
    if long_waits < STALL_MIN_WAITING or not others.any():
        return None
    usual = float(np.median(c.ttft[others]))
    threshold = max(STALL_MIN_S, STALL_FACTOR * usual)
    if length < threshold:
        return None
    ttft = c.ttft[waited]
    released = int((c.first[waited] <= end + _RELEASE_SHARE * length).sum())
    evidence = (
        f"the server sent nothing (no first token, no last byte) for {fmt_s(length)}, from"
        f" {begin:.2f}s to {end:.2f}s, while {ttft.size} requests waited ({long_waits} of"
        f" them through at least half of it);"
        f" {released} of them got their first token within"
        f" {fmt_s(_RELEASE_SHARE * length)} of its end; their TTFT median"
        f" {fmt_s(float(np.median(ttft)))}, up to {fmt_s(float(ttft.max()))}, vs median"
        f" {fmt_s(usual)} of the other {int(others.sum())}"
    )
    return Finding(
        "stall",
        "The server stalled: it delivered nothing for a while with requests waiting, then"
        " served them together (a pause, not a growing queue).",
        evidence,
        "read the server's log and metrics at that instant (a GC or allocator pause, a model"
        " or adapter load, a lock, preemption or swapping, a stuck batch); a queue builds and"
        " drains gradually, a stall releases its waiters at once",
        round(0.7 * strength_margin(length / threshold, 1.0, 10.0), 3),
    )
