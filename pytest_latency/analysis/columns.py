"""A run's records as columns: one pass over the records, then vectorised summaries.

A million records summarise in about a second this way; looping over record objects
per metric and per phase took several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from pytest_latency.analysis.samples import request_gap_statistic
from pytest_latency.records import RequestRecord, Status

STATUSES: tuple[Status, ...] = tuple(Status)
_STATUS_CODE = {status: code for code, status in enumerate(STATUSES)}
_OK = _STATUS_CODE[Status.OK]
_CANCELLED = _STATUS_CODE[Status.CANCELLED]


def float_column(records: Sequence[RequestRecord], name: str) -> np.ndarray:
    """One attribute of every record as float64; None becomes NaN."""
    return np.array(list(map(attrgetter(name), records)), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class Columns:
    phases: tuple[str, ...]
    phase: np.ndarray  # index into phases
    status: np.ndarray  # index into STATUSES
    intended: np.ndarray
    sent: np.ndarray  # NaN: never sent
    first: np.ndarray  # NaN: no content token
    end: np.ndarray
    itl_median: np.ndarray  # each request's median gap; NaN: no gap

    @classmethod
    def from_records(cls, records: Sequence[RequestRecord], phases: Sequence[str] = ()) -> Columns:
        """Columns of ``records``; naming the run's ``phases`` up front makes it faster."""
        names = {name: index for index, name in enumerate(phases)}
        labels = map(attrgetter("phase"), records)
        try:  # C-level lookups when every phase is known
            phase = np.fromiter(map(names.__getitem__, labels), dtype=np.int32, count=len(records))
        except KeyError:
            phase = np.fromiter(
                (names.setdefault(name, len(names)) for name in map(attrgetter("phase"), records)),
                dtype=np.int32,
                count=len(records),
            )
        status = np.fromiter(
            map(_STATUS_CODE.__getitem__, map(attrgetter("status"), records)),
            dtype=np.int8,
            count=len(records),
        )
        return cls(
            phases=tuple(names),
            phase=phase,
            status=status,
            intended=float_column(records, "intended_s"),
            sent=float_column(records, "sent_s"),
            first=float_column(records, "first_token_s"),
            end=float_column(records, "end_s"),
            itl_median=request_gap_statistic(records, "median"),
        )

    def in_phase(self, name: str) -> np.ndarray:
        if name not in self.phases:
            return np.zeros(self.phase.size, dtype=bool)
        selected: np.ndarray = self.phase == self.phases.index(name)
        return selected

    @property
    def ok(self) -> np.ndarray:
        completed: np.ndarray = self.status == _OK
        return completed

    @property
    def never_sent(self) -> np.ndarray:
        """Cancelled before being sent: planned, never offered (no sample, no error)."""
        kept_back: np.ndarray = (self.status == _CANCELLED) & np.isnan(self.sent)
        return kept_back

    def status_counts(self, mask: np.ndarray) -> dict[str, int]:
        counts = np.bincount(self.status[mask], minlength=len(STATUSES))
        return {STATUSES[code].value: int(n) for code, n in enumerate(counts) if n}

    def interval(self, instant: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``instant - intended`` per request in ``mask``: ``inf`` where it failed.

        The verdicts' rule (analysis/samples.py): a failed request counts as unbounded,
        a completed one without the instant, and one never sent, are left out.
        """
        mask = mask & ~self.never_sent
        values: np.ndarray = instant[mask] - self.intended[mask]
        values[~self.ok[mask]] = np.inf
        present: np.ndarray = values[~np.isnan(values)]
        return present

    def itl_per_request(self, mask: np.ndarray) -> np.ndarray:
        """Each request's median gap in ``mask`` (``inf`` where it failed, never-sent ones
        left out), as verdicts see it."""
        mask = mask & ~self.never_sent
        medians = self.itl_median[mask]  # a copy: boolean indexing
        medians[~self.ok[mask]] = np.inf
        present: np.ndarray = medians[~np.isnan(medians)]
        return present
