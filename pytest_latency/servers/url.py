"""An existing server at a URL: attach (the preflight checks it), never stop it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_latency.servers._http import probe_version
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec import ServerSpec


@contextmanager
def attach(spec: ServerSpec) -> Iterator[ServerInfo]:
    assert spec.url is not None
    base_url = spec.url.rstrip("/").removesuffix("/v1")
    # The model is checked (or, when not given, learnt) by the preflight before each run.
    model = spec.model or ""
    version = probe_version(base_url)
    details: dict[str, object] = {"version": version} if version else {}
    yield ServerInfo(kind="url", url=base_url, model=model, api=spec.api, details=details)
