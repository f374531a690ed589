"""Recognise a plain answer chunk from its bytes, so the hot path need not decode its JSON.

Most payloads of a stream are one shape: one choice whose delta carries non-empty
``content``, ``finish_reason`` null, no usage, no error. All the timeline needs from
such a chunk is "an answer token arrived", and ``json.loads`` of it was the largest
single cost per chunk (docs/performance.md). :func:`plain_answer` says True only when
the bytes leave no other reading; anything else (usage, errors, finish reasons,
reasoning, several choices, text completions, content that merely looks odd) returns
False and is decoded in full by :class:`.sse.StreamState`. A False is never wrong, only
slower; the tests check that a True never disagrees with the full decoding.

Why a byte search can be trusted here: inside a JSON string every ``"`` is escaped, so
a quoted key such as ``"content"`` followed by ``:`` cannot occur inside a value. Counting
``"content"`` and ``"delta"`` (once each) rules out several choices and nested objects
such as logprobs; the brackets must balance, so a cut-off payload is decoded (and
refused) in full. What is not checked is full JSON validity of a payload that has the
plain shape: the first payload of every stream is always decoded (see StreamState),
so a server that does not speak JSON is still caught there.
"""

from __future__ import annotations

import re

# A non-empty string value of "content" (an empty one is not a token).
_CONTENT = re.compile(rb'"content"\s*:\s*"(?!")')
# Keys the timeline reads, present and not null: the payload needs its full decoding.
# The possessive ``\s*+`` keeps the lookahead from backtracking past ``: null``.
_READ_KEYS = re.compile(
    rb'"(?:usage|timings|reasoning_content|reasoning|finish_reason)"\s*:\s*+(?!null\s*[,}])'
)
# Error events; text completions; a raw newline (only a multi-line ``data:`` event has
# one, and JSON strings cannot).
_FULL_DECODING = (b'"error"', b'"text"', b"\n")


def plain_answer(data: bytes) -> bool:
    """True when ``data`` is one choice's non-empty answer delta and nothing else we read."""
    if data[:1] != b"{" or data[-1:] != b"}":
        return False
    if data.count(b'"delta"') != 1 or data.count(b'"content"') != 1:
        return False
    for key in _FULL_DECODING:
        if key in data:
            return False
    if _CONTENT.search(data) is None or _READ_KEYS.search(data) is not None:
        return False
    return data.count(b"{") == data.count(b"}") and data.count(b"[") == data.count(b"]")


# Content that ends where the next quote is: no quote, no escape, no newline.
_PLAIN_CONTENT = re.compile(rb'[^"\\\n]+')

# A stream's plain chunks differ only in their content: the bytes before the content
# string and after it repeat (id, model, created, finish_reason null).
Shape = tuple[bytes, bytes]  # (everything up to the content's opening quote, the rest)


def shape_of(data: bytes) -> Shape | None:
    """The repeating frame of a plain answer chunk (:func:`plain_answer` said True), or
    None when its content holds a backslash (the closing quote is then not simply the
    next quote)."""
    match = _CONTENT.search(data)
    if match is None:
        return None
    start = match.end()  # the content string's first byte (the lookahead is zero-width)
    end = data.find(b'"', start)
    if end < 0 or b"\\" in data[start:end]:
        return None
    return data[:start], data[end:]


def fits(data: bytes, shape: Shape) -> bool:
    """``data`` is ``shape``'s frame around a non-empty content string with no quote,
    backslash or newline: the same chunk as the one the shape came from, another token.
    Two prefix/suffix compares and one match in place instead of the scan (a slice and
    three searches took 2.7x as long); False only costs the scan."""
    prefix, suffix = shape
    start, end = len(prefix), len(data) - len(suffix)
    return (
        end > start
        and data.startswith(prefix)
        and data.endswith(suffix)
        and _PLAIN_CONTENT.fullmatch(data, start, end) is not None
    )


# Content on one SSE line of this frame: as above, and no carriage return either (the
# decoder would end the line there).
_LINE_CONTENT = re.compile(rb'[^"\\\n\r]+')
_EVENT_END = b"\n\n"


def plain_events(data: bytes, head: bytes, suffix: bytes) -> int:
    """How many whole events ``data`` is, when every one of them is ``data: `` + a plain
    chunk of this stream's frame (``head`` = ``data: `` + the shape's prefix, ``suffix``
    the shape's rest) + a blank line, and nothing else; 0 otherwise. One split per read
    and, per event, what :func:`fits` does: the same chunks the decoder and
    :func:`fits` would accept one event at a time (a 0 only costs that path)."""
    if not data.endswith(_EVENT_END):
        return 0
    events = data.split(_EVENT_END)
    if events.pop():  # b"\n" after a third newline: leave it to the decoder
        return 0
    start, tail = len(head), len(suffix)
    match = _LINE_CONTENT.fullmatch
    for event in events:
        if not (
            event.startswith(head)
            and event.endswith(suffix)
            and match(event, start, len(event) - tail) is not None
        ):
            return 0
    return len(events)
