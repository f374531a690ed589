"""During a drive the collector is frozen and seldom runs; afterwards it is as it was."""

from __future__ import annotations

import gc

from pytest_latency.driver import Run, Status, Target
from pytest_latency.driver.drive_gc import DRIVE_THRESHOLD, quiet_gc, restore_gc
from pytest_latency.driver.loop import drive_to_end
from pytest_latency.driver.stops import PhaseStops
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at


def test_quiet_gc_raises_the_young_threshold_and_restore_gives_it_back() -> None:
    before = gc.get_threshold()
    previous = quiet_gc()
    try:
        assert previous == before
        assert gc.get_threshold() == (max(before[0], DRIVE_THRESHOLD), *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        restore_gc(previous)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_drive_runs_with_the_quiet_collector_and_restores_it(server: ScriptedServer) -> None:
    seen: list[tuple[int, int, int]] = []

    class Watching(Run):
        def phase_stops(self) -> PhaseStops:
            seen.append(gc.get_threshold())  # called at time zero, inside the drive
            return super().phase_stops()

    server.route("m", Script(steps=(Step(0.0, chat_chunk("a", finish="stop") + DONE),)))
    before = gc.get_threshold()
    run = Watching(plan_at([0.0]), Target(server.url, "m"))
    drive_to_end(run)
    assert [r.status for r in run.result().records] == [Status.OK]
    assert seen == [(max(before[0], DRIVE_THRESHOLD), *before[1:])]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
