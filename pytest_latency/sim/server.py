"""Serve the reference server with uvicorn: in a background thread, or in the foreground.

We bind the listening socket ourselves (port 0 picks a free one) so the port is known
before the server runs and cannot race with another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

import httpx
import uvicorn

from pytest_latency.sim.app import SimApp
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import Counters, ServerTimings

GRACEFUL_SHUTDOWN_S = 2.0  # streams are aborted first, so this is only a backstop
_BOOT_TIMEOUT_S = 10.0


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # The owner decides how to stop: uvicorn's own handlers would re-raise the
        # signal after shutdown and turn a clean SIGTERM exit into a kill.
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 = a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)  # connections queue from now on, before uvicorn runs
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve(app: SimApp, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve ``app`` on ``sock`` until ``stop`` is set; open streams are aborted first."""
    config = uvicorn.Config(
        app.asgi, log_level="warning", access_log=False, lifespan="on", ws="none",
        timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN_S),
    )  # fmt: skip
    server = _Uvicorn(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not serving.done():
        await app.live.shutdown()
        server.should_exit = True
    await serving
    await app.aclose()  # a no-op after uvicorn's lifespan shutdown ran it


@dataclass(frozen=True, slots=True)
class SimSnapshot:
    """A consistent copy of the server's state, taken on its event loop."""

    counters: Counters
    waiting: int
    running: int
    recent: tuple[ServerTimings, ...]  # requests that ended, oldest first (bounded)


class SimServer:
    """The reference server in a background thread, bound to ``host`` (loopback).

    Use as a context manager; ``url`` is ``http://127.0.0.1:PORT``. With
    ``wait_ready`` (the default) entering waits until ``/health`` answers 200, which
    includes the configured cold start.
    """

    def __init__(
        self, config: SimConfig | None = None, *, host: str = "127.0.0.1", port: int = 0,
        wait_ready: bool = True, ready_timeout_s: float | None = None,
    ) -> None:  # fmt: skip
        self.config = config or SimConfig()
        self._host, self._port = host, port
        self._wait = wait_ready
        self._ready_timeout_s = ready_timeout_s
        self._url: str | None = None
        self._thread: threading.Thread | None = None
        self._booted = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._app: SimApp | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the server is not started")
        return self._url

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> SimServer:
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        sock = bind(self._host, self._port)
        self._url = url_of(sock)
        self._thread = threading.Thread(
            target=self._run, args=(sock,), name="pytest-latency-sim", daemon=True
        )
        self._thread.start()
        if not self._booted.wait(_BOOT_TIMEOUT_S) or self._error is not None:
            self.stop()
            raise RuntimeError(f"the reference server did not start: {self._error!r}")
        if self._wait:
            try:
                self.wait_ready(self._ready_timeout_s)
            except BaseException:
                self.stop()
                raise
        return self

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Poll ``/health`` until 200, TimeoutError after ``timeout_s`` (cold start + 10 s)."""
        limit = self.config.cold_start_s + 10.0 if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        with httpx.Client(base_url=self.url, trust_env=False, timeout=2.0) as client:
            while True:  # bounded by the deadline
                if self._error is not None:
                    raise RuntimeError(f"the reference server failed: {self._error!r}")
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/health").status_code == 200:
                        return
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{self.url}/health not ready after {limit:.1f}s")
                time.sleep(0.01)

    def snapshot(self, timeout_s: float = 5.0) -> SimSnapshot:
        """Counters, queue/batch occupancy and recent request timings."""
        loop, app = self._loop, self._app
        if loop is None or app is None:
            raise RuntimeError("the server is not running")

        async def take() -> SimSnapshot:
            engine = app.live.engine
            recent = tuple(dataclasses.replace(timings) for timings in engine.recent)
            return SimSnapshot(
                dataclasses.replace(engine.counters), engine.waiting, engine.running, recent
            )

        return asyncio.run_coroutine_threadsafe(take(), loop).result(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Abort open requests, stop serving and join the thread (bounded)."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout_s)
        self._thread = None
        if thread.is_alive():
            raise RuntimeError(f"the reference server did not stop within {timeout_s}s")

    def _run(self, sock: socket.socket) -> None:
        try:
            asyncio.run(self._main(sock))
        except BaseException as exc:  # reported to the owning thread
            self._error = exc
        finally:
            sock.close()
            self._booted.set()

    async def _main(self, sock: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._app = SimApp(self.config)
        self._booted.set()
        await serve(self._app, sock, self._stop)
