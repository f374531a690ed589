"""A hostile-server matrix: every way a server can break HTTP or SSE, on both transports.

Each case answers the driver's POSTs with a raw script (:mod:`hostile_server`) and holds
the driver to its contract: exactly one record per offered request, the documented
status, a clear error text, and a run that ends by itself within its duration + the
request deadline + a grace, whatever the server does. The hot path runs for http://
when the driver owns its client; the httpx path runs when a caller passes a client.
No fixed sleeps synchronise anything: a drive returns when every request has ended.
"""

from __future__ import annotations

import gzip
import time
from dataclasses import dataclass

import anyio
import httpx
import pytest

from pytest_latency.driver import DriveResult, Status, Target, drive, run_plan
from tests.helpers.hostile_server import STREAM, HostileServer, Script, Wire, chunked, head, token
from tests.helpers.scripted_server import PROMPT, plan_at

TIMEOUT_S = 1.0
GRACE_S = 3.0  # generous: a loaded CI machine, warm-up, process noise
DEEP = b"data: " + b"[" * 5000 + b"]" * 5000 + b"\n\n"


@dataclass(frozen=True)
class Case:
    script: Script
    status: Status
    error: str | dict[str, str]  # a prefix of the record's error (per transport: a dict)
    transports: tuple[str, ...] = ("hot", "httpx")
    times: tuple[float, ...] = (0.0,)
    tokens: int | None = None  # output tokens every record must report
    timeout_s: float = TIMEOUT_S  # the request deadline


def length(body: bytes) -> str:
    return f"content-length: {len(body)}"


def once(*parts: bytes, then: str = "keep") -> Script:
    async def play(wire: Wire) -> None:
        for part in parts:
            await wire.write(part)
        if then == "close":
            wire.close()
        elif then == "reset":
            wire.reset()
        elif then == "hang":
            await wire.hang()

    return play


async def drip(wire: Wire) -> None:
    response = head("200 OK", length(STREAM)) + STREAM
    for index in range(len(response)):
        await wire.write(response[index : index + 1])
        await wire.pause(0.001)


async def endless_line(wire: Wire) -> None:
    await wire.write(head("200 OK", "transfer-encoding: chunked"))
    await wire.write(chunked(b"data: ")[:-5])  # no terminating chunk
    while True:
        piece = b"x" * 65536
        await wire.write(b"%x\r\n%s\r\n" % (len(piece), piece))


async def endless_head(wire: Wire) -> None:
    await wire.write(b"HTTP/1.1 200 OK\r\n")
    while True:
        await wire.write(b"x-filler: " + b"y" * 1000 + b"\r\n")


async def never_ending(wire: Wire) -> None:
    await wire.write(head("200 OK", "transfer-encoding: chunked"))
    while True:
        await wire.write(b"%x\r\n%s\r\n" % (len(token("t")), token("t")))
        await wire.pause(0.02)


async def deep_json_later(wire: Wire) -> None:
    await wire.write(head("200 OK", "transfer-encoding: chunked"))
    await wire.write(b"%x\r\n%s\r\n" % (len(token("first")), token("first")))
    await wire.pause(0.05)  # a later read carries the bomb
    await wire.write(b"%x\r\n%s\r\n" % (len(DEEP), DEEP))
    await wire.hang()


async def reset_mid_stream(wire: Wire) -> None:
    await wire.write(head("200 OK", "transfer-encoding: chunked"))
    await wire.write(b"%x\r\n%s\r\n" % (len(token("first")), token("first")))
    await wire.pause(0.05)
    wire.reset()


# A whole valid response nobody asked for, with 5 tokens where the real one has 2.
LEFTOVER = head("200 OK", length(token("x") * 5 + STREAM))
LEFTOVER += token("x") * 5 + STREAM


def excess_after_length(late: bool) -> Script:
    async def play(wire: Wire) -> None:
        await wire.write(head("200 OK", length(STREAM)) + STREAM)
        if late:
            await wire.pause(0.05)  # arrives on the idle, pooled connection
        await wire.leftovers(LEFTOVER)

    return play


GZIPPED = gzip.compress(STREAM)
MALFORMED = "malformed HTTP response: "

CASES: dict[str, Case] = {
    "negative-chunk-size": Case(
        once(head("200 OK", "transfer-encoding: chunked"), b"-6\r\nxxxxxx\r\n"),
        Status.PROTOCOL_ERROR,
        MALFORMED,
    ),
    "garbage-chunk-size": Case(
        once(head("200 OK", "transfer-encoding: chunked"), b"zz\r\n"),
        Status.PROTOCOL_ERROR,
        MALFORMED,
    ),
    "garbage-status-line": Case(once(b"HTTX/9 banana\r\n\r\n"), Status.PROTOCOL_ERROR, MALFORMED),
    "status-line-echoes-the-prompt": Case(
        once(f"HTTX/9 {PROMPT}\r\n\r\n".encode()),
        Status.PROTOCOL_ERROR,
        {"hot": MALFORMED, "httpx": "[redacted"},
    ),
    "interim-100-and-103": Case(
        once(
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n",
            head("200 OK", "transfer-encoding: chunked"),
            chunked(STREAM),
        ),
        Status.OK,
        "",
    ),
    "bad-content-length": Case(
        once(head("200 OK", "content-length: 12abc"), STREAM),
        Status.PROTOCOL_ERROR,
        MALFORMED,
    ),
    "conflicting-content-lengths": Case(
        once(head("200 OK", "content-length: 5", "content-length: 7"), STREAM),
        Status.PROTOCOL_ERROR,
        MALFORMED,
    ),
    # RFC 9112 6.3: both headers "ought to be handled as an error"; llhttp does, h11
    # lets Transfer-Encoding win (the httpx path then reads the stream: ok).
    "length-and-chunked": Case(
        once(head("200 OK", "content-length: 5", "transfer-encoding: chunked"), chunked(STREAM)),
        Status.PROTOCOL_ERROR,
        MALFORMED,
        transports=("hot",),
    ),
    "length-longer-than-body": Case(
        once(head("200 OK", "content-length: 100000"), token("first"), then="close"),
        Status.CONNECTION_ERROR,
        "RemoteProtocolError: peer closed connection without sending complete message body",
    ),
    # Hot path only: httpcore keeps leftovers in h11's buffer and hands them to the next
    # request on that connection (it then fails "illegal status line"); not ours to fix.
    "bytes-after-the-body": Case(
        excess_after_length(late=False),
        Status.OK,
        "",
        transports=("hot",),
        times=(0.0, 0.3, 0.6),
        tokens=2,
    ),
    "late-bytes-after-the-body": Case(
        excess_after_length(late=True),
        Status.OK,
        "",
        transports=("hot",),
        times=(0.0, 0.3, 0.6),
        tokens=2,
    ),
    "deep-json-first-read": Case(
        once(head("200 OK", "transfer-encoding: chunked"), chunked(DEEP)),
        Status.PROTOCOL_ERROR,
        "malformed JSON in a data line (nested too deeply)",
    ),
    "deep-json-later-read": Case(
        deep_json_later,
        Status.PROTOCOL_ERROR,
        "malformed JSON in a data line (nested too deeply)",
    ),
    "endless-line": Case(
        endless_line, Status.PROTOCOL_ERROR, "SSE line over 1 MiB without a newline"
    ),
    # Hundreds of one-byte writes 1 ms apart take ~0.5-0.8 s idle; a busy machine
    # stretches every pause, so this case (which must end ok) gets a deadline it
    # cannot reach for that reason.
    "slow-drip": Case(drip, Status.OK, "", tokens=2, timeout_s=10.0),
    "close-before-head": Case(
        once(then="close"),
        Status.CONNECTION_ERROR,
        "RemoteProtocolError: Server disconnected without sending a response",
    ),
    "close-mid-stream": Case(
        once(head("200 OK", "transfer-encoding: chunked"), b"5\r\nda", then="close"),
        Status.CONNECTION_ERROR,
        "RemoteProtocolError: peer closed connection without sending complete message body",
    ),
    "reset-mid-stream": Case(
        reset_mid_stream,
        Status.CONNECTION_ERROR,
        {"hot": "ReadError: [Errno 104] Connection reset by peer", "httpx": "ReadError"},
    ),
    "never-ending-stream": Case(
        never_ending,
        Status.TIMEOUT,
        f"no complete response within {TIMEOUT_S:g}s of the planned send time (first token",
    ),
    "no-answer": Case(
        once(then="hang"), Status.TIMEOUT, f"no complete response within {TIMEOUT_S:g}s"
    ),
    "http10-close-delimited": Case(
        once(head("200 OK", version="HTTP/1.0"), STREAM, then="close"), Status.OK, "", tokens=2
    ),
    "gzip-body": Case(
        once(head("200 OK", "content-encoding: gzip", length(GZIPPED)), GZIPPED),
        Status.OK,
        "",
    ),
    "brotli-body": Case(
        once(head("200 OK", "content-encoding: br", "content-length: 4"), b"\x0b\x02\x80\x00"),
        Status.PROTOCOL_ERROR,
        "unsupported Content-Encoding 'br'",
    ),
    "corrupt-gzip-body": Case(
        once(head("200 OK", "content-encoding: gzip", "content-length: 8"), b"notgzip!"),
        Status.PROTOCOL_ERROR,
        "malformed gzip body",  # both transports decode in bounded steps, alike
    ),
    "oversized-head": Case(
        endless_head,
        Status.PROTOCOL_ERROR,
        {"hot": "response head over 64 KiB", "httpx": MALFORMED},
    ),
    "upgrade-101": Case(
        once(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\nconnection: upgrade\r\n\r\n"),
        Status.PROTOCOL_ERROR,
        "malformed HTTP response: unexpected protocol upgrade",
        transports=("hot",),
    ),
    "long-error-body": Case(
        once(head("500 Oops", "transfer-encoding: chunked"), b"%x\r\n%s\r\n" % (5000, b"e" * 5000)),
        Status.HTTP_ERROR,
        "HTTP 500: eeee",
    ),
}


def drive_with(transport: str, plan: object, target: Target) -> DriveResult:
    if transport == "hot":
        return run_plan(plan, target)  # type: ignore[arg-type]

    async def main() -> DriveResult:
        async with httpx.AsyncClient(trust_env=False) as client:
            return await drive(plan, target, client=client)  # type: ignore[arg-type]

    return anyio.run(main)


MATRIX = [
    pytest.param(
        name,
        transport,
        id=f"{name}-{transport}",
        # a timeout case waits out the whole deadline: kept out of the inner loop
        marks=[pytest.mark.slow] if case.status is Status.TIMEOUT else [],
    )
    for name, case in CASES.items()
    for transport in case.transports
]


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize(("name", "transport"), MATRIX)
def test_hostile_server_matrix(name: str, transport: str) -> None:
    case = CASES[name]
    plan = plan_at(list(case.times), timeout_s=case.timeout_s)
    with HostileServer(case.script) as server:
        started = time.monotonic()
        result = drive_with(transport, plan, Target(server.url, "m"))
        took = time.monotonic() - started
        logs = list(server.logs)
    assert sorted(r.id for r in result.records) == list(range(len(case.times)))
    expected = case.error if isinstance(case.error, str) else case.error[transport]
    for record in result.records:
        assert record.status is case.status, (record.status, record.error)
        assert (record.error or "").startswith(expected), record.error
        assert len(record.error or "") <= 220 and PROMPT not in (record.error or "")
        assert case.tokens is None or record.output_tokens == case.tokens
    assert took <= max(case.times) + case.timeout_s + GRACE_S, took
    for log in logs:  # a connection that carried leftovers never carried another request
        assert log.tainted_after is None or log.posts == log.tainted_after, logs


async def _closes_on_reuse(wire: Wire) -> None:
    """Answers the first POST of a connection in full, keeps it open, then closes it
    without a byte when the client reuses it: a stale keep-alive connection."""
    if wire.log.posts > 1:
        wire.close()
        return
    await wire.write(head("200 OK", "transfer-encoding: chunked") + chunked(STREAM))


def test_a_reused_connection_closed_without_an_answer_is_retried_on_a_new_one() -> None:
    # llama.cpp closes kept-alive connections without a word; when its FIN lands just
    # after the pool's reuse check, the request must not be lost.
    with HostileServer(_closes_on_reuse) as server:
        result = drive_with("hot", plan_at([0.0, 0.4, 0.8]), Target(server.url, "m"))
        logs = list(server.logs)
    assert [r.status for r in result.records] == [Status.OK] * 3, [r.error for r in result.records]
    # Each reuse was refused once and the request answered on a new connection.
    assert [log.posts for log in logs if log.posts] == [2, 2, 1]
