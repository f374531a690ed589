"""The receiver's own process (issue 35): it parses spans outside the test process, and it
ends with the test process however that ends (stopped, an exception, SIGTERM, SIGKILL, a
killed pytest), never left behind. Every test starts processes: slow tier.

A process's end is waited for on a pidfd (readable once the process has exited), not
by polling or sleeping.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_latency.secret import Secret
from pytest_latency.telemetry.receiver import OtlpReceiver
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id, post

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
EXIT_WAIT_S = 15.0  # a loaded two-core machine; the receiver checks every 0.5 s at most

# Starts a receiver, says its pid and port, then ends as told.
HOLDER = """\
import sys
from pytest_latency.telemetry.receiver import OtlpReceiver
receiver = OtlpReceiver().start()
assert receiver.wait_ready()
print(receiver.pid, receiver.port, flush=True)
{ending}
"""


def exits_within(pid: int, timeout_s: float = EXIT_WAIT_S) -> bool:
    """Whether process ``pid`` (any process, not only a child of ours) has exited by then."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable)
    finally:
        os.close(fd)


def start_holder(ending: str) -> tuple[subprocess.Popen[str], int, int]:
    """A Python process holding a receiver: (that process, the receiver's pid, its port)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(ending=ending)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the holder said nothing (exit code {process.wait(10)})"
    pid, port = map(int, line.split())
    return process, pid, port


def export(*trace_ids: str) -> bytes:
    spans = [make_span(tid, "llm_request", VLLM_ATTRS) for tid in trace_ids]
    return make_request(spans).SerializeToString()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        assert running.wait_ready()
        yield running


def test_spans_are_received_by_another_process(receiver: OtlpReceiver) -> None:
    assert receiver.pid is not None and receiver.pid != os.getpid()
    tid = new_trace_id()
    assert post(receiver.traces_url, export(tid))[0] == 200
    assert receiver.timings([tid], grace_s=5)[tid].queue_wait_s == 0.125


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_receiving_process_ends_when_its_test_process_is_killed(sig: signal.Signals) -> None:
    holder, pid, port = start_holder(ending="sys.stdin.read()")
    try:
        assert post(f"http://127.0.0.1:{port}/v1/traces", export(new_trace_id()))[0] == 200
        holder.send_signal(sig)
        assert holder.wait(10) == -sig
        assert exits_within(pid), f"receiver process {pid} outlived its test process"
    finally:
        holder.kill()
        holder.wait(10)


def test_the_receiving_process_ends_when_the_test_process_exits_on_an_exception() -> None:
    holder, pid, _ = start_holder(ending="raise RuntimeError('the run broke')")
    assert holder.wait(10) == 1
    assert exits_within(pid)


def test_the_receiving_process_ends_when_pytest_is_killed(tmp_path: Path) -> None:
    (tmp_path / "test_holds.py").write_text(
        textwrap.dedent(
            """\
            import sys
            from pytest_latency.telemetry.receiver import OtlpReceiver

            def test_holds():
                with OtlpReceiver() as receiver:
                    assert receiver.wait_ready()
                    print("RECEIVER", receiver.pid, flush=True)
                    sys.stdin.read()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider", "test_holds.py"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    try:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("RECEIVER"):
                pid = int(line.split()[1])
                break
        else:
            pytest.fail(f"the inner pytest ended without a receiver ({run.wait(10)})")
        run.kill()
        run.wait(10)
        assert exits_within(pid)
    finally:
        run.kill()
        run.wait(10)


def test_ctrl_c_to_the_process_group_does_not_stop_the_receiver(receiver: OtlpReceiver) -> None:
    assert receiver.pid is not None
    os.kill(receiver.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends the group
    tid = new_trace_id()
    assert post(receiver.traces_url, export(tid))[0] == 200
    assert set(receiver.timings([tid], grace_s=5)) == {tid}


def test_a_receiving_process_that_dies_is_reported_and_nothing_waits_for_it(
    receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    assert post(receiver.traces_url, export(new_trace_id()))[0] == 200
    assert receiver.spans_received == 1
    assert receiver.pid is not None
    with caplog.at_level(logging.WARNING, logger="pytest_latency.telemetry.receiver"):
        os.kill(receiver.pid, signal.SIGKILL)
        assert exits_within(receiver.pid)
        # no grace period waited for a process that cannot answer
        assert receiver.timings([new_trace_id()], grace_s=600) == {}
    assert "ended unexpectedly" in caplog.text
    assert receiver.spans_received == 1  # the last counters read
    with pytest.raises(OSError):
        post(receiver.traces_url, export(new_trace_id()))
    receiver.stop()


def test_rejections_are_logged_in_the_test_process(caplog: pytest.LogCaptureFixture) -> None:
    token = Secret("receiver-token-5678")
    level = caplog.at_level(logging.WARNING, logger="pytest_latency.telemetry.receiver")
    with level, OtlpReceiver(token=token) as receiver:
        assert post(receiver.traces_url, export(new_trace_id()))[0] == 401
        assert receiver.rejections == {401: 1}  # answered after the log line was sent
        cmdline = Path(f"/proc/{receiver.pid}/cmdline").read_bytes()
    assert "OTLP receiver answered 401: missing or wrong bearer token" in caplog.text
    assert token.reveal().encode() not in cmdline  # the token travels on the link only


def test_stop_keeps_the_final_counters_and_ends_the_process(receiver: OtlpReceiver) -> None:
    assert post(receiver.traces_url, export(new_trace_id(), new_trace_id()))[0] == 200
    pid = receiver.pid
    assert pid is not None
    receiver.stop()
    assert exits_within(pid, 5.0)
    assert (receiver.spans_received, receiver.exports, receiver.pid) == (2, 1, None)


def test_the_test_process_loads_no_protobuf_to_receive_and_join(tmp_path: Path) -> None:
    tid = new_trace_id()
    (tmp_path / "export.bin").write_bytes(export(tid))
    code = textwrap.dedent(
        f"""\
        import http.client, sys
        from pytest_latency.telemetry.receiver import OtlpReceiver
        with OtlpReceiver() as receiver:
            conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
            body = open({str(tmp_path / "export.bin")!r}, "rb").read()
            conn.request("POST", "/v1/traces", body, {{"Content-Type": "application/x-protobuf"}})
            assert conn.getresponse().status == 200
            assert {tid!r} in receiver.timings([{tid!r}], grace_s=5)
        print(sorted(m for m in sys.modules if m.startswith("google")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
