"""Which event loop drives: asyncio's on the precise selector, even with uvloop installed;
``PYTEST_LATENCY_LOOP=uvloop`` or ``use_uvloop`` chooses uvloop; either gives the same
records."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from pytest_latency.driver import Run, Status, Target, pacing
from pytest_latency.driver.loop import (
    DRIVE_SWITCH_INTERVAL_S,
    LOOP_VARIABLE,
    drive_to_end,
    loop_options,
)
from pytest_latency.driver.precise_loop import PreciseEpollSelector, new_event_loop
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

ASYNCIO = {"loop_factory": new_event_loop}
UVLOOP = {"use_uvloop": True} if importlib.util.find_spec("uvloop") is not None else ASYNCIO


def test_asyncios_loop_is_the_default_even_with_uvloop_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(LOOP_VARIABLE, raising=False)
    assert loop_options(use_uvloop=None) == ASYNCIO  # the drive's default
    assert loop_options() == ASYNCIO
    assert loop_options(use_uvloop=True) == UVLOOP
    assert loop_options(use_uvloop=False) == ASYNCIO


CHOICES = [("asyncio", ASYNCIO), ("", ASYNCIO), ("uvloop", UVLOOP), (" UVLoop ", UVLOOP)]


@pytest.mark.parametrize(("value", "expected"), CHOICES)
def test_the_environment_chooses_the_loop(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: dict[str, object]
) -> None:
    monkeypatch.setenv(LOOP_VARIABLE, value)
    assert loop_options(use_uvloop=None) == expected
    assert loop_options(use_uvloop=value.strip().lower() == "uvloop") == expected


def test_the_asyncio_drive_runs_on_the_precise_selector(server: ScriptedServer) -> None:
    seen: list[object] = []

    class Watching(Run):
        async def drive(self, client: object = None) -> object:  # type: ignore[override]
            seen.append(getattr(asyncio.get_running_loop(), "_selector", None))
            return await super().drive()

    server.route("m", Script(steps=(Step(0.0, chat_chunk("a", finish="stop") + DONE),)))
    drive_to_end(Watching(plan_at([0.0]), Target(server.url, "m")), use_uvloop=False)
    assert [type(selector) for selector in seen] == [PreciseEpollSelector]


@pytest.mark.parametrize("use_uvloop", [False, True], ids=["asyncio", "uvloop"])
def test_the_sleep_keeps_to_the_millisecond_grid_on_uvloop_only(
    server: ScriptedServer, use_uvloop: bool
) -> None:
    if use_uvloop:
        pytest.importorskip("uvloop")
    seen: list[bool] = []

    class Watching(Run):
        async def drive(self, client: object = None) -> object:  # type: ignore[override]
            seen.append(pacing._timers.coarse)
            return await super().drive()

    server.route("m", Script(steps=(Step(0.0, chat_chunk("a", finish="stop") + DONE),)))
    drive_to_end(Watching(plan_at([0.0]), Target(server.url, "m")), use_uvloop=use_uvloop)
    assert seen == [use_uvloop]
    assert pacing._timers.coarse is False  # after the drive


@pytest.mark.parametrize("use_uvloop", [False, True], ids=["asyncio", "uvloop"])
def test_either_loop_drives_to_the_same_records(server: ScriptedServer, use_uvloop: bool) -> None:
    if use_uvloop:
        pytest.importorskip("uvloop")
    steps = (*(Step(0.002 * i, chat_chunk(f"t{i}")) for i in range(4)), Step(0.01, DONE))
    server.route("m", Script(steps=steps))
    run = Run(plan_at([0.0, 0.01]), Target(server.url, "m"))
    drive_to_end(run, use_uvloop=use_uvloop)  # the records stay on the run
    records = run.result().records
    assert [r.status for r in records] == [Status.OK, Status.OK]
    assert [(r.output_tokens, len(r.itl_s)) for r in records] == [(4, 3), (4, 3)]


def test_the_switch_interval_is_short_during_a_drive_and_restored_after(
    server: ScriptedServer,
) -> None:
    seen: list[float] = []

    class Watching(Run):
        async def drive(self, client: object = None) -> object:  # type: ignore[override]
            seen.append(sys.getswitchinterval())
            return await super().drive()

    server.route("m", Script(steps=(Step(0.0, chat_chunk("a", finish="stop") + DONE),)))
    before = sys.getswitchinterval()
    drive_to_end(Watching(plan_at([0.0]), Target(server.url, "m")))
    assert seen == [DRIVE_SWITCH_INTERVAL_S] and before > DRIVE_SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == before
