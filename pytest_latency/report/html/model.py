"""What the HTML report draws, read from one run's stored JSON object and its requests.

A :class:`ReportRun` is built the same way for both paths: the plugin passes the run
object it writes with ``--latency-json`` (``run_dict``) and the session's records;
``pytest-latency report`` passes the object read back from the file and the records
parsed from it. So a saved file renders the report the session wrote.

Prompts and responses are part of a record only with ``--latency-record-content``; then
the hover cards show their first ``CARD_TEXT_CHARS`` characters, as text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import numpy as np

from pytest_latency.analysis.infrastructure import classify
from pytest_latency.analysis.samples import record_value
from pytest_latency.errors import LatencyError
from pytest_latency.records import RequestRecord, StoredRun
from pytest_latency.spec.model import Objective

#: Scatter points per chart series before the ordinary requests are thinned.
MAX_POINTS = 2500
#: The share of requests, by TTFT, always drawn as the slow tail.
SLOW_TAIL = 0.10
#: Waterfall rows: the slowest requests, then ordinary ones across the distribution.
SLOWEST_ROWS = 8
ORDINARY_ROWS = 6
FAILED_ROWS = 4


@dataclass(frozen=True, slots=True)
class ReportRun:
    """One run as the report reads it.

    ``document`` is the run's ``--latency-json`` object; ``records`` its requests;
    ``baseline`` the pooled requests of the same test's baseline runs (empty when no
    baseline was given); ``trace_url`` a ``{trace_id}`` link template, if any.
    """

    test: str
    document: Mapping[str, Any]
    records: Sequence[RequestRecord]
    baseline: Sequence[RequestRecord] = ()
    trace_url: str | None = None
    phases: list[tuple[str, float, float]] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        document: Mapping[str, Any],
        records: Sequence[RequestRecord],
        baseline: Sequence[RequestRecord] = (),
        trace_url: str | None = None,
    ) -> ReportRun:
        ordered = sorted(records, key=lambda record: (record.intended_s, record.id))
        template = trace_url or _text(document.get("trace_url_template"))
        return cls(
            test=str(document.get("test", "")),
            document=document,
            records=ordered,
            baseline=list(baseline),
            trace_url=template,
            phases=phase_windows(document.get("workload"), ordered),
        )

    @classmethod
    def from_stored(
        cls,
        run: StoredRun,
        baseline: Sequence[RequestRecord] = (),
        trace_url: str | None = None,
    ) -> ReportRun:
        return cls.build(run.document, run.records, baseline, trace_url)

    def section(self, key: str) -> Any:
        """A part of the run object (``objectives``, ``server_metrics``...), or None."""
        return self.document.get(key)

    def invalid_reasons(self) -> list[str]:
        """Why the run decides nothing, if so: it measured no server (the infrastructure
        headline), the load generator fell behind, it was cut short. Empty when valid."""
        reasons: list[str] = []
        server = self.section("server")
        exited = server.get("exited_during_run") if isinstance(server, Mapping) else None
        failure = classify(self.records, exited if isinstance(exited, str) else None)
        if failure is not None:
            reasons.append(failure.headline)
        generator = self.section("generator")
        if isinstance(generator, Mapping) and generator.get("valid") is False:
            reasons += [str(reason) for reason in generator.get("reasons") or []] or [
                "the load generator fell behind"
            ]
        if self.section("interrupted"):
            reasons.append(f"cut short: {self.section('interrupted_reason') or 'interrupted'}")
        return reasons


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def phase_windows(
    workload: object, records: Sequence[RequestRecord]
) -> list[tuple[str, float, float]]:
    """(phase, start, end) of every planned phase occurrence, seconds from run start.

    From the stored workload (phases in order, repeated ``repeat`` times with
    ``cooldown_s`` between); from the requests' planned sends when it is missing.
    """
    if isinstance(workload, Mapping) and isinstance(workload.get("phases"), list):
        try:
            phases = [(str(p["name"]), float(p["duration_s"])) for p in workload["phases"]]
            repeat = int(workload.get("repeat") or 1)
            cooldown = float(workload.get("cooldown_s") or 0.0)
        except (KeyError, TypeError, ValueError):
            phases = []
        if phases:
            episode = sum(duration for _, duration in phases)
            windows = []
            for number in range(max(1, min(repeat, 1000))):
                start = number * (episode + cooldown)
                for name, duration in phases:
                    windows.append((name, start, start + duration))
                    start += duration
            return windows
    spans: dict[str, tuple[float, float]] = {}
    for record in records:
        low, high = spans.get(record.phase, (record.intended_s, record.intended_s))
        spans[record.phase] = (min(low, record.intended_s), max(high, record.intended_s))
    return [(name, low, high) for name, (low, high) in spans.items()]


def trace_link(template: str | None, trace_id: str) -> str | None:
    """The trace's URL from the template, only when it is an http(s) link."""
    if not template or not trace_id:
        return None
    url = template.replace("{trace_id}", quote(trace_id, safe=""))
    return url if url.lower().startswith(("http://", "https://")) else None


def objective_of(row: Mapping[str, Any]) -> Objective | None:
    """The :class:`Objective` a stored objective object describes; None if it is not one."""
    try:
        tokens = {
            name: tuple(row[name]) if isinstance(row.get(name), list | tuple) else None
            for name in ("input_tokens", "output_tokens")
        }
        return Objective(
            metric=row["metric"],
            max_s=row.get("max_s"),
            p=row.get("p"),
            phase=row.get("phase"),
            max_regression=row.get("max_regression"),
            min_change_s=row.get("min_change_s") or 0.0,
            input_tokens=tokens["input_tokens"],
            output_tokens=tokens["output_tokens"],
            # Release gates' own fields (json_report.gate_fields)
            thresholds=tuple(sorted((row.get("thresholds_s") or {}).items())),
            min_value=row.get("min"),
            after=row.get("after"),
            outage_s=row.get("outage_s"),
            limit_text=row.get("limit_text"),
        )
    except (KeyError, TypeError, ValueError, AttributeError, LatencyError):
        return None


def number(value: object) -> float | None:
    """A finite stored number, else None (JSON writes an unbounded limit as null)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def ttft_rank(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Requests slowest first by TTFT; failed ones (unbounded) before every completed one."""
    valued = [(record_value(record, "ttft"), record) for record in records]
    ranked = [(value, record) for value, record in valued if value is not None]
    ranked.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [record for _, record in ranked]


@dataclass(frozen=True, slots=True)
class WaterfallRows:
    """The requests the waterfall draws, by group."""

    failed: list[RequestRecord]  # the first failures, in send order
    slowest: list[RequestRecord]  # the slowest completed requests by TTFT
    ordinary: list[RequestRecord]  # completed ones spread from p90 down to p10 of the rest


def waterfall_rows(
    records: Sequence[RequestRecord],
    slowest: int = SLOWEST_ROWS,
    ordinary: int = ORDINARY_ROWS,
    failed: int = FAILED_ROWS,
) -> WaterfallRows:
    """Failures apart, so that they never hide the slowest requests that did complete."""
    completed = [record for record in ttft_rank(records) if record.ok]
    slow = completed[:slowest]
    rest = completed[len(slow) :]
    picked: list[RequestRecord] = []
    if rest and ordinary > 0:
        positions = np.linspace(0.1, 0.9, ordinary) * (len(rest) - 1)
        picked = [rest[index] for index in sorted({round(float(p)) for p in positions})]
    failures = [record for record in records if not record.ok and not record.never_sent][:failed]
    return WaterfallRows(failures, slow, picked)


@dataclass(frozen=True, slots=True)
class Thinned:
    """The requests a scatter draws, and the sentence that says how they were chosen."""

    records: list[RequestRecord]
    note: str


def thin(records: Sequence[RequestRecord], limit: int = MAX_POINTS) -> Thinned:
    """At most about ``limit`` requests: every failed one and the slow tail, the rest thinned.

    The rest is kept every k-th in send order, so its density over time still shows
    the load. Nothing is thinned when everything fits.
    """
    total = len(records)
    if total <= limit:
        return Thinned(list(records), f"Drawn: all {total} requests")
    ranked = ttft_rank(records)
    tail = {record.id for record in ranked[: math.ceil(total * SLOW_TAIL)]}
    tail.update(record.id for record in records if not record.ok and not record.never_sent)
    rest = [record for record in records if record.id not in tail]
    step = max(1, math.ceil(len(rest) / max(limit - len(tail), 1)))
    kept_rest = {record.id for record in rest[::step]}
    kept = [record for record in records if record.id in tail or record.id in kept_rest]
    return Thinned(
        kept,
        f"Drawn: {len(kept)} of {total} requests, every failed one and the slowest "
        f"{SLOW_TAIL:.0%} by TTFT, the others every {step}th in send order",
    )


def run_duration(run: ReportRun) -> float:
    """The run's planned span, or its last end when that is later."""
    planned = max((end for _, _, end in run.phases), default=0.0)
    ends = [record.end_s or record.intended_s for record in run.records]
    return max([planned, *ends, 1e-3])


def rate_bins(run: ReportRun) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Bin width, bin starts, sends per second and completions per second."""
    duration = run_duration(run)
    width = max(1.0, math.ceil(duration / 120.0))
    edges = np.arange(0.0, duration + width, width)
    sent = np.array([r.sent_s for r in run.records if r.sent_s is not None], dtype=np.float64)
    done = np.array([r.end_s for r in run.records if r.ok and r.end_s is not None])
    sent_counts = np.histogram(sent, bins=edges)[0] / width
    done_counts = np.histogram(done.astype(np.float64), bins=edges)[0] / width
    return width, edges[:-1], sent_counts, done_counts


CARD_FIELDS: tuple[str, ...] = (
    "test",
    "id",
    "phase",
    "status",
    "error",
    "planned_s",
    "lag_s",
    "ttft_s",
    "queue_s",
    "prefill_s",
    "unattributed_s",
    "e2e_s",
    "output_tokens",
    "trace_id",
    "url",
    "prompt",
    "content",
)
# With --latency-record-content, a card shows this much of the prompt and the answer
# (the whole text is in --latency-json): 10,000 cards stay a few MB.
CARD_TEXT_CHARS = 300


def _clipped(text: str | None) -> str | None:
    if text is None or len(text) <= CARD_TEXT_CHARS:
        return text
    return text[:CARD_TEXT_CHARS] + "\u2026"


def _rounded(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


class Cards:
    """The hover cards of one page: one row per drawn request, keyed by ``data-k``."""

    def __init__(self) -> None:
        self.rows: list[list[object]] = []
        self._keys: dict[tuple[int, int], int] = {}

    def key(self, test: int, run: ReportRun, record: RequestRecord) -> int:
        """The request's key, adding its card on first use."""
        found = self._keys.get((test, record.id))
        if found is not None:
            return found
        status = record.status.value
        if record.http_status and not record.ok:
            status = f"{status} (HTTP {record.http_status})"
        self.rows.append(
            [
                test,
                record.id,
                record.phase,
                status,
                record.error,
                _rounded(record.intended_s),
                _rounded(record.schedule_lag_s),
                _rounded(record.ttft_s),
                _rounded(record.queue_wait_s),
                _rounded(record.prefill_s),
                _rounded(record.unattributed_s),
                _rounded(record.e2e_s),
                record.output_tokens,
                record.trace_id,
                trace_link(run.trace_url, record.trace_id),
                _clipped(record.prompt),
                _clipped(record.content),
            ]
        )
        self._keys[(test, record.id)] = len(self.rows) - 1
        return len(self.rows) - 1

    def to_json(self) -> dict[str, object]:
        return {"fields": list(CARD_FIELDS), "rows": self.rows}
