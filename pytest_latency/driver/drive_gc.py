"""The cyclic garbage collector during a drive: collected and frozen before time zero,
and seldom after it.

A full (generation 2) collection of a pytest process with numpy, OpenTelemetry and the
plan loaded stalls the loop for 20-50 ms: that was the p99 schedule lag. After
``gc.freeze()`` collections walk only objects made during the drive.

Those collections still stalled it. At 1,000 req/s through pytest, a 5 s drive ran
about 110 young (generation 0) collections of 0.05-4.8 ms (median 0.22 ms) and 9-10
generation 1 collections of 3.5-12.5 ms, and all of them together found 172 objects of
cyclic garbage: the drive makes almost none (its objects die by reference counting).
Each collection holds the loop; the generation 1 ones alone delay a few sends each,
which at that rate is the p99. So during the drive a collection starts only after
``DRIVE_THRESHOLD`` more container objects than were freed (Python's default: 700):
about once per few thousand requests, enough to bound memory if something does make
cycles (a failure that keeps tracebacks). The thresholds are restored afterwards.
"""

from __future__ import annotations

import gc

DRIVE_THRESHOLD = 50_000  # net new container objects between young collections


def quiet_gc() -> tuple[int, int, int]:
    """Collect now, freeze what exists, raise the young threshold; returns the thresholds
    to give back to :func:`restore_gc` when the drive ends."""
    previous = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(previous[0], DRIVE_THRESHOLD), previous[1], previous[2])
    return previous


def restore_gc(previous: tuple[int, int, int]) -> None:
    """Undo :func:`quiet_gc`: the thresholds as they were, nothing frozen."""
    gc.set_threshold(*previous)
    gc.unfreeze()
