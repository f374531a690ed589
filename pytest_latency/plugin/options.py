"""The ``--latency-*`` flags, each with a ``latency_*`` ini twin, validated into one object.

Values are checked when pytest configures, so a bad flag is a usage error before any
test runs, never a traceback in the middle of a suite.

Every pytest run with the plugin installed imports this module, so it imports only
light modules (no numpy, scipy, HTTP clients or protobuf).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from pytest_latency._units import parse_duration
from pytest_latency.plugin.option_values import (
    DEFAULT_PERCENTILES,
    count,
    listen_address,
    otlp_token,
    parse_seed,
    percentile_list,
    positive_duration,
    trace_url,
)
from pytest_latency.plugin.sizes import parse_size
from pytest_latency.secret import Secret
from pytest_latency.servers.kinds import CONTAINER_KINDS, KindLookup, is_known, unknown_kind
from pytest_latency.spec.model import ServerSpec, parse_gpus
from pytest_latency.telemetry.settings import (
    DEFAULT_GRACE_S,
    DEFAULT_METRICS_INTERVAL_S,
    OTLP_TOKEN_VARIABLE,
)

_T = TypeVar("_T")
INCONCLUSIVE_POLICIES: tuple[str, ...] = ("warn", "fail", "skip")
#: ``--latency-max-lag`` default: the same value as analysis.health.DEFAULT_MAX_LAG_P99_S
#: (a test holds them equal), written here because that module imports numpy.
DEFAULT_MAX_LAG_S = 0.050

ERROR_CONTROLS: tuple[str, ...] = ("test", "session")

#: Per-response bounds, the defaults of driver.limits.ResponseLimits (a test holds them
#: equal; written here because the driver package imports httpx). A buffered SSE line
#: costs memory per request in flight, hence the lower ceiling; a body is only counted.
DEFAULT_MAX_LINE_BYTES = 1024**2
DEFAULT_MAX_BODY_BYTES = 64 * 1024**2
MAX_LINE_BYTES_CEILING = 1024**3
MAX_BODY_BYTES_CEILING = 64 * 1024**3


@dataclass(frozen=True, slots=True)
class _Flag:
    name: str  # without the --latency- prefix
    help: str
    metavar: str | None = None
    is_switch: bool = False


FLAGS: tuple[_Flag, ...] = (
    _Flag(
        "server",
        "server to test: sim (embedded, default), an http(s):// URL, or a container "
        f"kind ({'|'.join(CONTAINER_KINDS)}, or one a conftest.py adds)",
        "SPEC",
    ),
    _Flag("model", "model name to request (default: the server's first listed model)", "NAME"),
    _Flag(
        "api-key-env",
        "environment variable holding a URL server's API key (sent as a Bearer token; "
        "the key never appears in output or reports)",
        "VAR",
    ),
    _Flag("json", "write every run (phases, objectives, requests) as JSON to PATH", "PATH"),
    _Flag("html", "write an HTML report to PATH", "PATH"),
    _Flag("csv", "write every request as a row of a CSV file to PATH (docs/reports.md)", "PATH"),
    _Flag(
        "percentiles",
        "the percentiles the summary, JSON and HTML show (default 50,95,99)",
        "LIST",
    ),
    _Flag(
        "markdown",
        "write a Markdown summary (verdicts, slowest requests, diagnosis) to PATH; "
        "$GITHUB_STEP_SUMMARY gets it appended when set",
        "PATH",
    ),
    _Flag("otlp-receiver", "where the plugin listens for server spans (OTLP/HTTP)", "HOST:PORT"),
    _Flag(
        "otlp-endpoint",
        "export client spans to this OTLP/HTTP traces URL, and GenAI client metrics to its"
        " sibling /v1/metrics",
        "URL",
    ),
    _Flag(
        "otlp-token",
        "the OTLP receiver accepts only posts with 'Authorization: Bearer TOKEN' "
        f"(or set ${OTLP_TOKEN_VARIABLE})",
        "TOKEN",
    ),
    _Flag(
        "otlp-grace",
        "how long to wait after a run for batched server spans (default 10s)",
        "DURATION",
    ),
    _Flag(
        "max-lag", "a run whose schedule lag p99 exceeds this is invalid (default 50ms)", "DURATION"
    ),
    _Flag(
        "metrics-interval",
        "scrape the server's /metrics this often during a run (default 1s; 0 disables)",
        "DURATION",
    ),
    _Flag("trace-url", "link template for trace ids in reports, with {trace_id}", "TEMPLATE"),
    _Flag("baseline", "compare against a baseline saved earlier", "PATH"),
    _Flag(
        "save-baseline",
        "save this session's valid runs as a baseline, merged into PATH if it exists",
        "PATH",
    ),
    _Flag(
        "baseline-history",
        "runs of one test a saved baseline keeps (default 1; 3+ lets verdicts measure "
        "between-run noise)",
        "N",
    ),
    _Flag(
        "allow-baseline-mismatch",
        "compare against baseline runs whose workload or server identity differs",
        is_switch=True,
    ),
    _Flag(
        "error-control",
        "spread the error budget (1 - confidence) over each assert (test, default) or over "
        "the whole session",
        "test|session",
    ),
    _Flag("seed", "override every workload's seed", "N"),
    _Flag("workers", "generate load from N processes (default 1)", "N"),
    _Flag(
        "ray",
        "generate load from Ray actors spread over a cluster: auto, HOST:PORT of a running "
        "cluster, or ray://HOST:PORT (needs pytest-latency[ray])",
        "ADDRESS",
    ),
    _Flag(
        "ray-workers",
        "Ray actors to generate load from (default: one per CPU the cluster offers)",
        "N",
    ),
    _Flag("image", "container image for a container server kind", "IMAGE"),
    _Flag("gpus", "GPUs for a container server: all, a count, or ids (device=1, 0,1)", "GPUS"),
    _Flag(
        "inconclusive",
        "what an inconclusive objective does: fail (default: an undecided gate is not"
        " green), warn (the test passes with a warning) or skip",
        "warn|fail|skip",
    ),
    _Flag(
        "allow-undecidable",
        "run a plan with too few requests to ever pass an objective (warn instead of error)",
        is_switch=True,
    ),
    _Flag(
        "until-decided",
        "extend each run in rounds until its objectives are decided, for at most DURATION "
        "in all (workloads without their own until_decided; e.g. 3m)",
        "DURATION",
    ),
    _Flag(
        "max-line-bytes",
        "longest SSE line (or one event's data) a response may send before the request "
        "becomes a protocol_error (default 1MiB; units B, KiB, MiB, GiB)",
        "SIZE",
    ),
    _Flag(
        "max-body-bytes",
        "largest (decoded) response body before the request becomes a protocol_error "
        "(default 64MiB; units B, KiB, MiB, GiB)",
        "SIZE",
    ),
    _Flag(
        "record-content",
        "keep each request's prompt and answer in the JSON and the HTML hover cards "
        "(off: prompts and answers are never stored)",
        is_switch=True,
    ),
)


@dataclass(frozen=True, slots=True)
class LatencyOptions:
    server: ServerSpec
    server_explicit: bool
    model: str | None
    json_path: Path | None
    html_path: Path | None
    otlp_receiver: str | None
    otlp_endpoint: str | None
    otlp_grace_s: float
    metrics_interval_s: float
    max_lag_s: float
    trace_url: str | None
    baseline: Path | None
    save_baseline: Path | None
    seed: int | None
    workers: int
    image: str | None
    gpus: str | None
    inconclusive: str
    record_content: bool
    baseline_history: int = 1
    allow_baseline_mismatch: bool = False
    error_control: str = "test"
    api_key_env: str | None = None
    markdown_path: Path | None = None
    allow_undecidable: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ray_address: str | None = None
    ray_workers: int | None = None
    until_decided_s: float | None = None  # default until_decided budget (None: off)
    csv_path: Path | None = None
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    otlp_token: Secret | None = None  # never shown: a Secret's repr is ***


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("latency", "latency objectives for LLM endpoints (pytest-latency)")
    for flag in FLAGS:
        dest = "latency_" + flag.name.replace("-", "_")
        if flag.is_switch:
            group.addoption(
                f"--latency-{flag.name}",
                action="store_true",
                default=None,
                dest=dest,
                help=flag.help,
            )
            parser.addini(dest, flag.help, type="bool", default=False)
        else:
            group.addoption(
                f"--latency-{flag.name}",
                dest=dest,
                default=None,
                metavar=flag.metavar,
                help=flag.help,
            )
            parser.addini(dest, flag.help, default=None)


def parse_server(
    value: str, model: str | None = None, kind_hook: KindLookup | None = None
) -> ServerSpec:
    """``sim``, an http(s) URL, or a server kind (built-in, or one ``kind_hook`` knows,
    i.e. the ``pytest_latency_server_kind`` hook); UsageError otherwise."""
    text = value.strip()
    if text.startswith(("http://", "https://")):
        return ServerSpec(kind="url", url=text, model=model)
    if is_known(text, kind_hook):
        return ServerSpec(kind=text, model=model)
    raise pytest.UsageError(f"--latency-server {value!r}: {unknown_kind(text)}")


def _raw(config: pytest.Config, name: str) -> object:
    """A flag's value as given: command line over ini file; None when neither sets it."""
    dest = "latency_" + name.replace("-", "_")
    value = config.getoption(dest)
    if value is None:
        value = config.getini(dest)
    return value


def _text(config: pytest.Config, name: str) -> str | None:
    value = _raw(config, name)
    return str(value) if value not in (None, "") else None


def _parsed(name: str, value: str | None, parse: Callable[[str], _T]) -> _T | None:
    """``parse(value)``, or None without a value; a UsageError names the flag."""
    return _parsed_or(name, value, parse, None)


def _parsed_or(name: str, value: str | None, parse: Callable[[str], _T], default: _T) -> _T:
    """``parse(value)``, or ``default`` without a value; a UsageError names the flag."""
    if value is None:
        return default
    try:
        return parse(value)
    except ValueError as error:
        raise pytest.UsageError(f"--latency-{name} {value!r}: {error}") from None


def read_options(config: pytest.Config) -> LatencyOptions:
    """All flags, command line over ini file over defaults, validated."""
    text = functools.partial(_text, config)
    model, server_text = text("model"), text("server")
    ray_address, ray_workers = _ray_options(text("ray"), text("ray-workers"), text("workers"))
    return LatencyOptions(
        server=parse_server(
            server_text or "sim",
            model,
            lambda name: config.hook.pytest_latency_server_kind(name=name),
        ),
        server_explicit=server_text is not None,
        model=model,
        json_path=_parsed("json", text("json"), Path),
        html_path=_parsed("html", text("html"), Path),
        csv_path=_parsed("csv", text("csv"), Path),
        percentiles=_parsed_or(
            "percentiles", text("percentiles"), percentile_list, DEFAULT_PERCENTILES
        ),
        markdown_path=_parsed("markdown", text("markdown"), Path),
        otlp_receiver=_parsed("otlp-receiver", text("otlp-receiver"), listen_address),
        otlp_endpoint=text("otlp-endpoint"),
        otlp_grace_s=_parsed_or("otlp-grace", text("otlp-grace"), parse_duration, DEFAULT_GRACE_S),
        max_lag_s=_parsed_or("max-lag", text("max-lag"), parse_duration, DEFAULT_MAX_LAG_S),
        metrics_interval_s=_parsed_or(
            "metrics-interval", text("metrics-interval"), parse_duration, DEFAULT_METRICS_INTERVAL_S
        ),
        trace_url=_parsed("trace-url", text("trace-url"), trace_url),
        baseline=_parsed("baseline", text("baseline"), Path),
        save_baseline=_parsed("save-baseline", text("save-baseline"), Path),
        baseline_history=_parsed_or("baseline-history", text("baseline-history"), count, 1),
        allow_baseline_mismatch=bool(_raw(config, "allow-baseline-mismatch")),
        error_control=_choice("error-control", text("error-control") or "test", ERROR_CONTROLS),
        seed=_parsed("seed", text("seed"), parse_seed),
        workers=_parsed_or("workers", text("workers"), count, 1),
        image=text("image"),
        gpus=_parsed("gpus", text("gpus"), parse_gpus),
        inconclusive=_choice("inconclusive", text("inconclusive") or "fail", INCONCLUSIVE_POLICIES),
        record_content=bool(_raw(config, "record-content")),
        api_key_env=_set_variable("api-key-env", text("api-key-env")),
        allow_undecidable=bool(_raw(config, "allow-undecidable")),
        max_line_bytes=_size("max-line-bytes", text("max-line-bytes"), DEFAULT_MAX_LINE_BYTES),
        max_body_bytes=_size("max-body-bytes", text("max-body-bytes"), DEFAULT_MAX_BODY_BYTES),
        ray_address=ray_address,
        ray_workers=ray_workers,
        until_decided_s=_parsed("until-decided", text("until-decided"), positive_duration),
        otlp_token=otlp_token(text("otlp-token")),
    )


def _ray_options(
    address: str | None, workers: str | None, local_workers: str | None
) -> tuple[str | None, int | None]:
    """``--latency-ray`` and ``--latency-ray-workers``, checked together."""
    if address is None:
        if workers is not None:
            raise pytest.UsageError(
                f"--latency-ray-workers {workers!r}: needs --latency-ray ADDRESS"
            )
        return None, None
    address = _parsed_or("ray", address, parse_ray_address, address)
    if local_workers not in (None, "1"):
        raise pytest.UsageError(
            f"--latency-workers {local_workers!r}: with --latency-ray the load comes from "
            "Ray actors; set their number with --latency-ray-workers"
        )
    return address, _parsed("ray-workers", workers, count)


def parse_ray_address(value: str) -> str:
    """``auto``, ``HOST:PORT`` of a running cluster's head (GCS), or ``ray://HOST:PORT``."""
    text = value.strip()
    if text == "auto":
        return text
    rest = text.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError("expected auto, HOST:PORT of a running Ray cluster, or ray://HOST:PORT")
    return text


def _set_variable(name: str, variable: str | None) -> str | None:
    """An environment variable's name, checked to be set (its value is never read here)."""
    if variable and not os.environ.get(variable):
        raise pytest.UsageError(
            f"--latency-{name} {variable}: that environment variable is not set"
        )
    return variable


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise pytest.UsageError(f"--latency-{name} {value!r}: expected one of {', '.join(allowed)}")
    return value


def _size(name: str, value: str | None, default: int) -> int:
    ceiling = MAX_LINE_BYTES_CEILING if name == "max-line-bytes" else MAX_BODY_BYTES_CEILING
    return _parsed_or(name, value, functools.partial(parse_size, maximum=ceiling), default)
