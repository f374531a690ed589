"""The receiver's listening socket, bound where the session asked (``127.0.0.1`` unless
told otherwise). Bound by the test process, so the port is known and the bind's error
raised there, before any process is started to serve it (:mod:`.receiver`). Also what
both receivers (in a process, in a thread) share: their address and their lifecycle as
a context manager (:class:`ListeningReceiver`)."""

from __future__ import annotations

import socket
from types import TracebackType
from typing import Self

from pytest_latency.telemetry.settings import TRACES_PATH

__all__ = ("BACKLOG", "ListeningReceiver", "bind_listener")

#: Connections the kernel queues before they are accepted: exporters that connect while
#: the receiving process is still starting wait here, not refused.
BACKLOG = 128


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` (IPv6 when ``host`` has a colon), listening.

    ``SO_REUSEADDR`` as ``http.server`` sets it: a port just released binds again.
    Raises ``OSError`` when the bind fails (port taken, unknown host).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(BACKLOG)
    except BaseException:
        listener.close()
        raise
    return listener


class ListeningReceiver:
    """An OTLP/HTTP receiver's address and lifecycle; subclasses serve (start/stop)."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self, timeout_s: float = 2.0) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        raise NotImplementedError

    def __enter__(self) -> Self:
        """Start unless already started; :meth:`stop` on exit."""
        return self if self.running else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        """The bound port (the ephemeral one after :meth:`start` when 0 was asked)."""
        return self._port

    @property
    def endpoint(self) -> str:
        """``http://HOST:PORT`` (the OTLP base endpoint)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def traces_url(self) -> str:
        """``http://HOST:PORT/v1/traces`` (the full URL an ``http/protobuf`` exporter needs)."""
        return self.endpoint + TRACES_PATH
