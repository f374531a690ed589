"""How the session picks, shares and remembers servers (no server is started here)."""

from __future__ import annotations

import pytest

from pytest_latency.plugin.session import LatencySession
from pytest_latency.servers import ServerStartError
from pytest_latency.spec.model import ServerSpec
from tests.helpers.latency_options import options


def test_image_and_gpu_flags_go_with_the_flagged_servers_kind() -> None:
    session = LatencySession(
        options(server=ServerSpec(kind="llamacpp"), image="my/llama:1", gpus="all")
    )
    try:
        assert session.resolve(None).image == "my/llama:1"
        assert session.resolve(None).gpus == "all"
        # A spec file's vLLM server does not get the llama.cpp image (nor its GPUs).
        from_file = session.resolve(ServerSpec(kind="vllm", model="m"))
        assert (from_file.image, from_file.gpus) == (None, None)
        # What a file names itself wins over the flag.
        named = session.resolve(ServerSpec(kind="llamacpp", image="their/llama:2"))
        assert named.image == "their/llama:2"
    finally:
        session.close()


@pytest.mark.usefixtures("receiver_in_this_process")
def test_a_failed_start_is_not_retried_by_every_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_latency.plugin import session as session_module

    attempts = []

    def refuse(spec: ServerSpec, kind: object = None) -> object:
        attempts.append(spec.kind)
        raise ServerStartError("image my/vllm:1 cannot be pulled")

    monkeypatch.setattr(session_module, "start_server", refuse)
    session = LatencySession(options(server=ServerSpec(kind="vllm", model="m")))
    try:
        with pytest.raises(ServerStartError, match="cannot be pulled"):
            session.server()
        with pytest.raises(ServerStartError, match="failed earlier in this session"):
            session.server()
        assert attempts == ["vllm"]
    finally:
        session.close()
