"""The receiver's listening socket, bound where the session asked (``127.0.0.1`` unless
told otherwise). Bound by the test process, so the port is known and the bind's error
raised there, before any process is started to serve it (:mod:`.receiver`)."""

from __future__ import annotations

import socket

__all__ = ("BACKLOG", "bind_listener")

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
