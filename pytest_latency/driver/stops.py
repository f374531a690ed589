"""Stop rules while driving: a phase that is failing or saturating stops sending early.

Every request the rule keeps from being sent stays a ``cancelled`` record whose error
starts with :data:`~pytest_latency.records.STOPPED_EARLY` and says why: one record per
offered request, never a silent gap (docs/specs.md "Stop rules").
"""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np

from pytest_latency.records import STOPPED_EARLY, RequestRecord
from pytest_latency.spec.model import Workload
from pytest_latency.spec.phase import MIN_SATURATION_GROWTH, Phase


class PhaseStops:
    """Counts per phase what ended and failed, and the in-flight count at each send."""

    def __init__(self, workload: Workload) -> None:
        self._phases = {phase.name: phase for phase in workload.phases if phase.stop}
        self._ended: dict[str, int] = defaultdict(int)
        self._failed: dict[str, int] = defaultdict(int)
        self._sends: dict[str, deque[tuple[float, int]]] = {}
        self._reasons: dict[str, str] = {}
        self.in_flight = 0

    def reason(self, phase: str) -> str | None:
        """Why ``phase`` stopped (the cancelled records' error), None while it runs."""
        return self._reasons.get(phase)

    def sent(self, phase: str, at_s: float) -> None:
        """A request of ``phase`` goes out at ``at_s`` (run seconds)."""
        self.in_flight += 1
        rule = self._phases.get(phase)
        if rule is None or rule.stop is None or rule.stop.saturation is None:
            return
        window = self._sends.setdefault(phase, deque(maxlen=rule.stop.after))
        window.append((at_s, self.in_flight))
        self._check_saturation(rule, window)

    def ended(self, record: RequestRecord) -> None:
        """A sent request ended (any status)."""
        self.in_flight -= 1
        rule = self._phases.get(record.phase)
        if rule is None or rule.stop is None or rule.stop.error_rate is None:
            return
        self._ended[record.phase] += 1
        self._failed[record.phase] += not record.ok
        ended, failed = self._ended[record.phase], self._failed[record.phase]
        if ended >= rule.stop.after and failed / ended > rule.stop.error_rate:
            self._stop(
                record.phase,
                f"error rate {failed / ended:.0%} ({failed}/{ended} ended) over"
                f" {rule.stop.error_rate:.0%}",
            )

    def _check_saturation(self, phase: Phase, window: deque[tuple[float, int]]) -> None:
        assert phase.stop is not None and phase.stop.saturation is not None
        if len(window) < phase.stop.after or len(window) < 3:
            return
        times = np.array([at for at, _ in window])
        counts = np.array([count for _, count in window], dtype=np.float64)
        if times[-1] <= times[0]:
            return
        slope = float(np.polyfit(times, counts, 1)[0])  # requests in flight gained per second
        growth = slope * (times[-1] - times[0])
        threshold = phase.stop.saturation * phase.mean_rate
        if slope >= threshold and growth >= MIN_SATURATION_GROWTH:
            self._stop(
                phase.name,
                f"over-saturated: in flight grew {slope:.1f}/s over the last {len(window)}"
                f" sends (>= {phase.stop.saturation:.0%} of the offered"
                f" {phase.mean_rate:g}/s), {int(counts[-1])} in flight",
            )

    def _stop(self, phase: str, why: str) -> None:
        self._reasons.setdefault(phase, f"{STOPPED_EARLY}phase {phase!r}: {why}")
