"""The readiness check against a hostile server: every answer bounded in bytes, decoded
size and wall-clock time; server text escaped; a model id with control characters
refused (issue 35, item 1 and 3).

Each mode runs the real check against a loopback server that misbehaves the way a
security review found; the check must end as ``ServerNotReady`` with a clear reason,
within its deadline plus one read timeout, having held little memory (tracemalloc's
peak of the process, servers included, which write in 64 KiB pieces).
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from pytest_latency.errors import ServerNotReady
from pytest_latency.servers import ServerStartError
from pytest_latency.servers._http import discover_model
from pytest_latency.servers.preflight import check_ready
from pytest_latency.servers.server_version import read_server_version
from tests.helpers import hostile_server as hostile
from tests.helpers.hostile_server import HostileServer, Script

pytestmark = pytest.mark.security

TIMEOUT_S = 1.5
PEAK_BYTES = 24 * 1024 * 1024  # caps are 1 MiB; a GiB-sized read shows at once
BOMB = 64 << 20  # a gzip of 64 KiB that expands to 64 MiB

MODES: dict[str, tuple[Script, Script, str]] = {
    # name: (GET script, POST script, the reason's words)
    "endless /v1/models": (hostile.endless_models, hostile.answers, "body over 1 MiB"),
    "gzip bomb /v1/models": (hostile.gzip_models(BOMB), hostile.answers, "decoded body over 1 MiB"),
    "deep JSON /v1/models": (hostile.deep_models, hostile.answers, "no model list"),
    "endless data line": (hostile.models_listed, hostile.endless_data_line, "body over 64 KiB"),
    "endless 500 body": (hostile.models_listed, hostile.endless_error, "HTTP 500"),
}
SLOW_MODES = {  # runs into its deadline: seconds
    "one byte a second": (hostile.models_listed, hostile.trickle, "not complete within"),
}


@pytest.mark.parametrize(
    "mode",
    [*MODES, *(pytest.param(mode, marks=pytest.mark.slow) for mode in SLOW_MODES)],
)
def test_each_hostile_readiness_mode_ends_not_ready_bounded(mode: str) -> None:
    get, post, reason = {**MODES, **SLOW_MODES}[mode]
    with HostileServer(post, get_script=get) as server:
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises(ServerNotReady, match="server not ready") as failure:
                check_ready(server.url, None, timeout_s=TIMEOUT_S)
        finally:
            elapsed = time.monotonic() - started
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert reason in str(failure.value)
    assert elapsed < 2 * TIMEOUT_S + 1.0, elapsed  # the deadline, then one read timeout
    assert peak < PEAK_BYTES, peak
    assert failure.value.__context__ is None or failure.value.__suppress_context__


def test_a_model_id_with_control_characters_is_refused_and_shown_escaped() -> None:
    name = "m\n::error title=pwned::owned\x1b]0;title\x07\x1b[2J"
    with HostileServer(hostile.answers, get_script=hostile.model_named(name)) as server:
        with pytest.raises(ServerNotReady, match="control characters") as failure:
            check_ready(server.url, None, timeout_s=TIMEOUT_S)
        with pytest.raises(ServerStartError, match="control characters") as discovered:
            discover_model(server.url, timeout_s=TIMEOUT_S)
    for text in (str(failure.value), str(discovered.value)):
        assert "\x1b" not in text and "\n" not in text and "\x07" not in text
        assert "\\x1b" in text and "\\x0a" in text


def test_a_refused_answer_quotes_the_server_escaped() -> None:
    async def refuse(wire: hostile.Wire) -> None:
        text = "no\n::error title=fake::x\x1b[31m red \x9b1m"
        await wire.write(hostile.json_answer({"error": text}, "400 Bad Request"))

    server = HostileServer(refuse, get_script=hostile.models_listed)
    with server, pytest.raises(ServerNotReady, match="HTTP 400") as failure:
        check_ready(server.url, "hostile", timeout_s=TIMEOUT_S)
    text = str(failure.value)
    assert not any(ch in text for ch in "\x1b\x9b\n")
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())


def test_the_version_probe_and_model_discovery_are_bounded() -> None:
    with HostileServer(hostile.answers, get_script=hostile.gzip_models(BOMB)) as server:
        tracemalloc.start()
        try:
            assert read_server_version(server.url, "unknown").version is None
            with pytest.raises(ServerStartError, match="decoded body over 1 MiB"):
                discover_model(server.url, timeout_s=TIMEOUT_S)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < PEAK_BYTES, peak
