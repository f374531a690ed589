"""An existing server at a URL: attach, discover the model if not given, never stop it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_latency.servers._http import discover_model, probe_version
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec import ServerSpec


@contextmanager
def attach(spec: ServerSpec) -> Iterator[ServerInfo]:
    assert spec.url is not None
    base_url = spec.url.rstrip("/").removesuffix("/v1")
    model = spec.model or discover_model(base_url)
    version = probe_version(base_url)
    details: dict[str, object] = {"version": version} if version else {}
    yield ServerInfo(kind="url", url=base_url, model=model, api=spec.api, details=details)
