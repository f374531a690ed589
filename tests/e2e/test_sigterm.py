"""SIGTERM (a cancelled CI job) stops a latency session like Ctrl-C: records kept.

The subprocess tests synchronise on an event that proves the run is under way (the
embedded server has generated tokens for a request of the run, its own counter), never on
a fixed sleep, and start the child with SIGINT at its default: a suite launched with ``&``
from a script inherits SIGINT ignored, and so would every child it starts.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from pytest_latency.plugin import interrupts

CHILD_TEST = """
from pathlib import Path
from pytest_latency import steady

def test_long(latency):
    # Where the parent watches, written whole (a rename): never an empty file to read.
    Path("server.tmp").write_text(latency.server.url)
    Path("server.tmp").replace("server.txt")
    latency.run(steady(rate=10, duration_s=30), output_tokens=200, seed=1)
"""
RATE, DURATION_S = 10, 30
# Before the drive, the server answers two preflights (servers/preflight.py), one for
# `latency.server` and one in run(), each asking for max_tokens 1.
PREFLIGHT_TOKENS = 2


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ignore_sigint() -> None:  # what `pytest ... &` in a non-interactive shell gets
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _generated_tokens(url: str) -> float:
    """Output tokens the embedded server has generated (its own counter); 0 when the
    scrape fails (a busy machine), which only makes the caller poll again."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=5.0).text
    except httpx.HTTPError:
        return 0.0
    found = re.search(r"^sim:generation_tokens_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _run_under_way(url: str) -> bool:
    """More tokens than the preflights' can only come from the run's own requests, so
    the drive has begun (a signal before it would interrupt no run; issue 23)."""
    return _generated_tokens(url) > PREFLIGHT_TOKENS


def _wait_for(condition: Callable[[], bool], child: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 120  # starting pytest on a busy machine: only a bound
    while not condition():
        assert child.poll() is None, f"pytest ended before {what}: {child.communicate()[0]}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)  # polls for an event


def _run_and_terminate(tmp_path: Path, preexec: Callable[[], None]) -> tuple[str, int, float, str]:
    """Start pytest on CHILD_TEST, SIGTERM it once the run is under way; its output,
    exit code, seconds from SIGTERM to exit, and the embedded server's URL."""
    (tmp_path / "test_long.py").write_text(CHILD_TEST)
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--latency-json", "run.json", "test_long.py"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=preexec,
    )  # fmt: skip
    try:
        server_file = tmp_path / "server.txt"
        _wait_for(server_file.exists, child, "started the server")
        url = server_file.read_text()
        _wait_for(lambda: _run_under_way(url), child, "began the run")
        child.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        output, _ = child.communicate(timeout=60)
        return output, child.returncode, time.monotonic() - signalled, url
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.slow
@pytest.mark.parametrize("preexec", [_default_sigint, _ignore_sigint], ids=["sigint", "no-sigint"])
def test_sigterm_mid_run_keeps_the_run_and_stops_the_server(
    tmp_path: Path, preexec: Callable[[], None]
) -> None:
    output, code, took_s, url = _run_and_terminate(tmp_path, preexec)
    assert code == 2, output  # pytest's "interrupted", not a kill (-15)
    assert "RunInterrupted" in output  # pytest reports the interrupted run
    (run,) = json.loads((tmp_path / "run.json").read_text())["runs"]
    assert run["interrupted"] is True, output
    assert "SIGTERM" in run["interrupted_reason"]
    requests = run["requests"]
    offered = sum(phase["offered"] for phase in run["phases"])
    assert len(requests) == offered >= RATE * DURATION_S  # one record per offered request
    sent = [request for request in requests if request["sent_s"] is not None]
    assert len(sent) >= 1  # the server had generated tokens for the run before the signal
    assert {request["status"] for request in requests} <= {"ok", "cancelled"}
    assert any(request["status"] == "cancelled" for request in requests)
    # The session's embedded server stopped with it (its process is gone).
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/health", timeout=2.0)
    assert took_s < 30, f"took {took_s:.1f}s from SIGTERM to exit"
    print(f"SIGTERM to exit: {took_s:.2f}s")


@pytest.mark.slow
def test_the_handler_is_installed_while_configured_and_restored_after(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import signal

        def test_installed():
            handler = signal.getsignal(signal.SIGTERM)
            assert getattr(handler, "__name__", "") == "_on_sigterm"
        """
    )
    before = signal.getsignal(signal.SIGTERM)
    pytester.runpytest_inprocess("-p", "no:randomly").assert_outcomes(passed=1)
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.fixture
def sigterm_handler() -> Iterator[interrupts.TerminationHandler]:
    handler = interrupts.install()
    try:
        yield handler
    finally:
        interrupts.restore(handler)


def test_sigterm_is_given_to_the_ctrl_c_handler(
    sigterm_handler: interrupts.TerminationHandler,
) -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]
    assert interrupts.interrupt_reason() == "SIGTERM"


def test_sigterm_raises_keyboard_interrupt_even_with_ctrl_c_ignored(
    sigterm_handler: interrupts.TerminationHandler,
) -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_sigterm_during_cleanup_is_ignored(
    sigterm_handler: interrupts.TerminationHandler,
) -> None:
    interrupts.cleaning_up(sigterm_handler)
    signal.raise_signal(signal.SIGTERM)  # would raise KeyboardInterrupt otherwise
    assert sigterm_handler.received == 1


def test_no_handler_is_installed_off_the_main_thread() -> None:
    handlers: list[interrupts.TerminationHandler] = []
    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=lambda: handlers.append(interrupts.install()))
    thread.start()
    thread.join()
    assert signal.getsignal(signal.SIGTERM) is before
    interrupts.restore(handlers[0])
    assert interrupts.interrupt_reason() == "Ctrl-C"


def test_an_ignored_sigterm_stays_ignored() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        handler = interrupts.install()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        interrupts.restore(handler)
    finally:
        signal.signal(signal.SIGTERM, previous)
