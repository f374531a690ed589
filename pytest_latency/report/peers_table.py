"""``pytest-latency compare --as vllm|aiperf RUN.json``: a run in a peer's own words.

vLLM's lines read like ``vllm bench serve``'s result block (``Mean TTFT (ms): ...``);
AIPerf's like its console table (one row per metric: avg, min, max, p99, p90, p50, std).
The numbers come from :mod:`pytest_latency.analysis.peers`, which says how each peer
defines them; docs/metrics.md has the table of our metrics against theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.peers import PeerStatistic, peer_statistics
from pytest_latency.records import StoredRun

_TITLES = {
    "vllm": "vLLM bench serve definitions (clock from the send, ITL pooled over requests)",
    "aiperf": "AIPerf definitions (ITL = (latency - TTFT) / (OSL - 1); ICL = chunk gaps)",
}


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"


def _vllm_lines(statistics: Sequence[PeerStatistic]) -> list[str]:
    lines = []
    for statistic in statistics:
        if "" in statistic.values:  # a single value: a throughput
            lines.append(
                f"{statistic.name} ({statistic.unit}):".ljust(40) + _number(statistic.values[""])
            )
            continue
        lines.append(f" {statistic.name} ".center(50, "-"))
        for key, value in statistic.values.items():
            lines.append(f"{key} {statistic.name} ({statistic.unit}):".ljust(40) + _number(value))
    return lines


def _aiperf_lines(statistics: Sequence[PeerStatistic]) -> list[str]:
    distributions = [s for s in statistics if "" not in s.values]
    keys = list(distributions[0].values) if distributions else []
    head = f"{'Metric':<44}" + "".join(f"{key:>10}" for key in keys)
    lines = [head]
    for statistic in distributions:
        label = f"{statistic.name} ({statistic.unit})"
        lines.append(
            f"{label:<44}" + "".join(f"{_number(v):>10}" for v in statistic.values.values())
        )
    for statistic in statistics:
        if "" in statistic.values:
            label = f"{statistic.name} ({statistic.unit})"
            lines.append(f"{label:<44}{_number(statistic.values['']):>10}")
    return lines


def format_peer(peer: str, runs: Sequence[StoredRun]) -> str:
    """Every run of the file, in ``peer``'s words."""
    blocks = []
    for run in runs:
        statistics = peer_statistics(peer, run.records)
        completed = sum(1 for record in run.records if record.ok)
        lines = [
            f"{run.test}: {_TITLES[peer]}",
            f"Successful requests: {completed} of {len(run.records)}",
            *(_vllm_lines(statistics) if peer == "vllm" else _aiperf_lines(statistics)),
        ]
        blocks.append("\n".join(lines))
    note = (
        "Client side, loopback or network as configured. These are the peer's definitions"
        ' recomputed from our records (docs/metrics.md, "Our metrics and the peers\'"): our'
        " own TTFT counts from the planned send time and our ITL is per request, not pooled."
    )
    return "\n\n".join([*blocks, note])
