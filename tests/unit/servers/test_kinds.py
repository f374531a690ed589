"""Server kinds: one ``KIND`` per module, one registry derived from them, a hook before it."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_latency.plugin.session import LatencySession
from pytest_latency.servers import ServerStartError, profiles
from pytest_latency.servers.container import COMMON_OPTIONS, ContainerSpec, Listen
from pytest_latency.servers.kinds import (
    BUILTIN_KINDS,
    CONTAINER_KINDS,
    ServerKind,
    builtin_kind,
    find_kind,
    is_known,
)
from pytest_latency.spec.model import ServerSpec
from tests.helpers.latency_options import options


def fake_container(spec: ServerSpec) -> ContainerSpec:
    """A container that is never started: the options it got become its command."""
    command = tuple(f"{name}={value}" for name, value in sorted(spec.options.items()))
    return ContainerSpec(
        kind=spec.kind,
        image="example/mykind:1",
        command=command,
        listen=Listen("127.0.0.1", 9),
        served_model="mine",
    )


MYKIND = ServerKind("mykind", fake_container, frozenset({"batch"}), exports_spans=True)


def test_the_registry_is_derived_from_each_kind_modules_declaration() -> None:
    for name in BUILTIN_KINDS:
        home = "pytest_latency.servers" + ("" if name == "sim" else ".engines")
        module = importlib.import_module(f"{home}.{name}")
        assert builtin_kind(name) is module.KIND
        assert module.KIND.name == name
        assert profiles.PROFILES[name] == module.KIND.build
        if name != "sim":
            assert module.KIND.options == module.OPTIONS
    assert set(profiles.PROFILES) == set(BUILTIN_KINDS)
    # Every module of servers/engines/ is a kind, found without a list naming it: a new
    # kind's module joins these without this test changing.
    assert {"llamacpp", "ollama", "sglang", "tgi", "vllm"} <= set(CONTAINER_KINDS)
    assert list(CONTAINER_KINDS) == sorted(CONTAINER_KINDS)
    kinds = [builtin_kind(name) for name in BUILTIN_KINDS]
    assert {k.name for k in kinds if k is not None and k.exports_spans} == {"sim", "sglang", "vllm"}
    assert {k.name for k in kinds if k is not None and k.after_start} == {"ollama"}
    assert builtin_kind("container") is None  # a servers/ module that is not a kind
    assert builtin_kind("engines") is None
    assert builtin_kind("url") is None


def test_the_sim_kind_uses_the_one_container_option_set() -> None:
    from pytest_latency.servers import sim

    assert not hasattr(sim, "_CONTAINER_OPTIONS")
    assert sim.COMMON_OPTIONS is COMMON_OPTIONS
    with pytest.raises(ServerStartError, match="startup_timeout apply to the embedded"):
        sim._command(ServerSpec(kind="sim", options={"startup_timeout": "9s"}))


def test_options_are_validated_by_the_kind_declaring_them() -> None:
    built = MYKIND.build(ServerSpec(kind="mykind", options={"batch": 4, "network": "host"}))
    assert built.command == ("batch=4", "network=host")
    with pytest.raises(ServerStartError, match="'mykind' has no option bogus"):
        MYKIND.build(ServerSpec(kind="mykind", options={"bogus": 1}))


def test_the_hook_is_asked_before_the_built_in_kinds() -> None:
    replaced = ServerKind("vllm", fake_container)
    assert find_kind("mykind", lambda name: MYKIND if name == "mykind" else None) is MYKIND
    assert find_kind("vllm", lambda name: replaced) is replaced
    assert find_kind("vllm", lambda name: None) is builtin_kind("vllm")
    assert find_kind("mykind") is None
    assert is_known("mykind", lambda name: MYKIND) and not is_known("mykind")
    with pytest.raises(TypeError, match="returned str, not a ServerKind"):
        find_kind("mykind", lambda name: "mykind")  # type: ignore[arg-type,return-value]


@pytest.mark.usefixtures("receiver_in_this_process")
def test_the_session_asks_the_registry_which_kinds_get_its_receiver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_latency.plugin import session as session_module

    started: list[tuple[ServerSpec, ServerKind | None]] = []

    @contextmanager
    def record(spec: ServerSpec, kind: ServerKind | None = None) -> Iterator[object]:
        started.append((spec, kind))
        raise ServerStartError("not started in this test")
        yield

    monkeypatch.setattr(session_module, "start_server", record)
    session = LatencySession(
        options(server=ServerSpec(kind="mykind")),
        kind_hook=lambda name: MYKIND if name == "mykind" else None,
    )
    try:
        for spec in (None, ServerSpec(kind="tgi", model="m")):
            with pytest.raises(ServerStartError, match="not started"):
                session.server(spec)
        with pytest.raises(ServerStartError, match=r"unknown server kind 'nokind'.*hook"):
            session.server(ServerSpec(kind="nokind"))
        receiver = session.telemetry.receiver.traces_url
    finally:
        session.close()
    (mine, mine_kind), (tgi, tgi_kind) = started
    assert mine_kind is MYKIND
    assert mine.options["otlp_traces_endpoint"] == receiver
    assert tgi_kind is builtin_kind("tgi")
    assert "otlp_traces_endpoint" not in tgi.options  # TGI exports gRPC only


def test_a_module_dropped_into_engines_is_a_kind_without_touching_the_registry(
    tmp_path: Path,
) -> None:
    from pytest_latency.servers import engines
    from pytest_latency.servers.kinds import engine_kinds

    (tmp_path / "newengine.py").write_text("KIND = None  # listed, never imported\n")
    (tmp_path / "_private.py").write_text("")
    found = engine_kinds([*engines.__path__, str(tmp_path)])
    assert found[0] == "llamacpp" and "newengine" in found
    assert set(found) == {*CONTAINER_KINDS, "newengine"}  # _private: not a kind
