"""Parse the Prometheus text of a model server's ``/metrics``: which server it is, and
its queue and KV-cache gauges.

Only the few known gauge lines are handed to the parser (``prometheus_client``), so a
large exposition costs little; a body that is not Prometheus text at all (a JSON or
HTML page, an empty or binary body) is named as such by :func:`not_prometheus`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

# Per server kind: series key -> metric names, the first one present wins (the later
# ones are older spellings). ``waiting`` and ``running`` are in every kind; the other
# keys are extras. Label sets of one name are summed (vLLM: model_name x engine), but
# KV-cache use is averaged (_AVERAGED).
_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "waiting": ("vllm:num_requests_waiting",),
        "running": ("vllm:num_requests_running",),
        # vllm:gpu_cache_usage_perc is the name before 0.9 (deprecated since)
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        # A counter: requests evicted from the KV cache to be recomputed, so far.
        "preemptions": ("vllm:num_preemptions_total",),
    },
    "tgi": {"waiting": ("tgi_queue_size",), "running": ("tgi_batch_current_size",)},
    "sglang": {
        "waiting": ("sglang:num_queue_reqs",),
        "running": ("sglang:num_running_reqs",),
        "kv_cache_usage": ("sglang:token_usage",),  # fraction of the KV token pool in use
    },
    "llamacpp": {
        "waiting": ("llamacpp:requests_deferred",),
        "running": ("llamacpp:requests_processing",),
        "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",),  # older builds only
    },
    "sim": {"waiting": ("sim:num_requests_waiting",), "running": ("sim:num_requests_running",)},
}
METRIC_NAMES: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {kind: MappingProxyType(keys) for kind, keys in _NAMES.items()}
)
KINDS: tuple[str, ...] = tuple(_NAMES)  # detection order for "auto"
_ALL_NAMES = frozenset(
    name for keys in _NAMES.values() for names in keys.values() for name in names
)
# Each series is a fraction of its own engine's (vLLM ``engine`` label) or data-parallel
# rank's (SGLang ``dp_rank``) KV pool: their sum passes 1 with data parallelism. The mean
# is the pool-wide fraction when the pools are of one size (vllm/v1/metrics/loggers.py,
# sglang/srt/observability/scheduler_metrics_mixin.py).
_AVERAGED = frozenset(name for keys in _NAMES.values() for name in keys.get("kv_cache_usage", ()))


def check_kind(kind: str, *, allow_auto: bool = True) -> None:
    if kind in _NAMES or (allow_auto and kind == "auto"):
        return
    choices = ", ".join(("auto", *KINDS) if allow_auto else KINDS)
    raise ValueError(f"unknown server kind {kind!r}; expected one of: {choices}")


# A sample line: a metric name, optional labels, a number (NaN and +Inf included).
_SAMPLE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})?\s+[-+]?(\d|\.\d|Inf|inf|NaN|nan)")


def _sample_name(line: str) -> str:
    """The metric name a sample line starts with ("" when it has none: ``{...}``, say)."""
    head = line.split("{", 1)[0].split(None, 1)
    return head[0] if head else ""


def _known_lines(text: str) -> str:
    """Only the sample, HELP and TYPE lines of the names we know (the parse is costly)."""
    kept: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE") and parts[2] in _ALL_NAMES:
                kept.append(line)
        elif line and _sample_name(line) in _ALL_NAMES:
            kept.append(line)
    return "\n".join(kept) + "\n" if kept else ""


def not_prometheus(text: str) -> str | None:
    """Why ``text`` is not a Prometheus text exposition at all (a JSON or HTML page, an
    empty or binary body), or None when it may be one. Servers and gateways that answer
    every GET with their own page do this; the run then says "metrics unavailable"."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body:
        return "an empty body"
    if body[0] in "{[":
        return "a JSON body, not Prometheus text"
    if body[0] == "<":
        return "an HTML or XML page, not Prometheus text"
    if any(ord(char) < 9 for char in body[:4096]):
        return "a binary body, not Prometheus text"
    if not any(_SAMPLE.match(line.strip()) for line in body.splitlines()):
        return "no Prometheus sample line (name, optional {labels}, a number)"
    return None


def known_sums(text: str) -> dict[str, float]:
    """Known sample name -> sum of its finite values over all label sets (the mean for
    KV-cache use, ``_AVERAGED``).

    Raises ValueError when a known line does not parse (the parser's own error, or
    any other it raised on a malformed line, said as a ValueError).
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    try:
        for family in text_string_to_metric_families(_known_lines(text)):
            for sample in family.samples:
                value = float(sample.value)
                if sample.name in _ALL_NAMES and math.isfinite(value):
                    sums[sample.name] = sums.get(sample.name, 0.0) + value
                    counts[sample.name] = counts.get(sample.name, 0) + 1
    except ValueError:
        raise
    except (IndexError, KeyError, TypeError, AttributeError) as error:
        # prometheus_client's parser indexes into lines it assumes well formed.
        raise ValueError(
            f"/metrics line does not parse ({type(error).__name__}: {error})"
        ) from None
    for name in _AVERAGED & sums.keys():
        sums[name] /= counts[name]
    return sums


def detected_kind(sums: Mapping[str, float]) -> str | None:
    for kind, keys in _NAMES.items():
        if any(name in sums for name in (*keys["waiting"], *keys["running"])):
            return kind
    return None


def values_of_kind(sums: Mapping[str, float], kind: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, names in _NAMES[kind].items():
        found = next((sums[name] for name in names if name in sums), None)
        if found is not None:
            out[key] = found
    return out


def detect_kind(text: str) -> str | None:
    """The server kind whose waiting/running gauges appear in ``text``, or None."""
    return detected_kind(known_sums(text))


def parse_exposition(text: str, kind: str) -> dict[str, float]:
    """Gauge values of one scrape: ``waiting``, ``running`` and extras present in ``text``.

    Values of one metric are summed over its label sets (KV-cache use: averaged over
    engines and ranks); a missing metric is absent
    from the result. ``kind="auto"`` detects the kind first (empty result when no
    known server's gauges appear). Raises ValueError for an unknown kind or a known
    metric line that does not parse.
    """
    check_kind(kind)
    sums = known_sums(text)
    found = detected_kind(sums) if kind == "auto" else kind
    return {} if found is None else values_of_kind(sums, found)


def extra_keys(kind: str) -> tuple[str, ...]:
    return tuple(key for key in _NAMES[kind] if key not in ("waiting", "running"))
