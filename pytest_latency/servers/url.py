"""An existing server at a URL: attach (the preflight checks it), never stop it.

``options.api_key_env`` names the environment variable holding the server's API key
(``--latency-api-key-env``); the key itself is never written into a spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_latency.secret import Secret, from_environment
from pytest_latency.servers.base import ServerInfo, ServerStartError
from pytest_latency.servers.server_version import read_server_version
from pytest_latency.spec.model import ServerSpec

API_KEY_OPTION = "api_key_env"


def api_key(spec: ServerSpec) -> Secret | None:
    """The API key from the variable ``options.api_key_env`` names; an error if unset."""
    name = spec.options.get(API_KEY_OPTION)
    if not name:
        return None
    secret = from_environment(str(name))
    if secret is None:
        raise ServerStartError(
            f"server option {API_KEY_OPTION} names the environment variable {name}, "
            "which is not set (or empty)"
        )
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in secret.reveal()):
        # It goes into a header line: a newline would end the header there.
        raise ServerStartError(f"the API key in {name} contains control characters")
    return secret


@contextmanager
def attach(spec: ServerSpec) -> Iterator[ServerInfo]:
    assert spec.url is not None
    base_url = spec.url.rstrip("/").removesuffix("/v1")
    key = api_key(spec)
    # The model is checked (or, when not given, learnt) by the preflight before each run.
    model = spec.model or ""
    details: dict[str, object] = read_server_version(base_url, "url", api_key=key).to_json()
    if key is not None:
        details["api_key_env"] = key.name  # which variable, never its value
    yield ServerInfo(
        kind="url", url=base_url, model=model, api=spec.api, details=details, api_key=key
    )
