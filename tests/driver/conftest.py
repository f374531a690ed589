from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted streaming server on an ephemeral 127.0.0.1 port, in its own thread."""
    scripted = ScriptedServer()
    scripted.start()
    try:
        yield scripted
    finally:
        scripted.stop()
