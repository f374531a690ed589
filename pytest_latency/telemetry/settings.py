"""What a session's telemetry is configured with, and the parser for a listen address.

Kept free of protobuf, HTTP and OpenTelemetry imports: the plugin's option parsing
reads these defaults in every pytest run, most of which never receive a span.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_latency.secret import Secret

__all__ = (
    "DEFAULT_GRACE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENT_POSTS",
    "DEFAULT_METRICS_INTERVAL_S",
    "OTLP_TOKEN_VARIABLE",
    "TRACES_PATH",
    "TelemetrySettings",
    "parse_listen_address",
)

#: Largest accepted body, after decompression (a batch of 512 vLLM spans is ~1 MiB).
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
#: Exports read at once; more are answered 503 (OTLP exporters retry those).
DEFAULT_MAX_CONCURRENT_POSTS = 4
#: The receiver's one path (OTLP/HTTP's default for traces).
TRACES_PATH = "/v1/traces"
#: The environment variable holding the receiver's bearer token (--latency-otlp-token).
OTLP_TOKEN_VARIABLE = "PYTEST_LATENCY_OTLP_TOKEN"
#: Default wait for late spans when joining (vLLM exports in batches, seconds late).
DEFAULT_GRACE_S = 10.0
#: Default interval between scrapes of the server's ``/metrics`` during a run.
DEFAULT_METRICS_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    receiver_address: str | None = None  # HOST:PORT; None = ephemeral 127.0.0.1 port
    export_endpoint: str | None = None  # OTLP/HTTP collector for client spans
    grace_s: float = DEFAULT_GRACE_S
    metrics_interval_s: float = DEFAULT_METRICS_INTERVAL_S  # 0 disables scraping
    token: Secret | None = None  # the receiver's bearer token (--latency-otlp-token)


def parse_listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT``, ``:PORT`` or ``PORT`` to ``(host, port)``.

    An omitted host is ``127.0.0.1``; port ``0`` asks for an ephemeral port.
    Raises ``ValueError`` with the reason.
    """
    value = text.strip()
    if value.startswith("["):
        host, sep, port_text = value[1:].partition("]:")
        if not sep:
            raise ValueError(f"expected [HOST]:PORT, got {text!r}")
    elif ":" in value:
        host, _, port_text = value.rpartition(":")
        if ":" in host:
            raise ValueError(f"write an IPv6 host in brackets: [HOST]:PORT, got {text!r}")
    else:
        host, port_text = "", value
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port must be an integer 0-65535, got {text!r}")
    return host or "127.0.0.1", int(port_text)
