"""Command line: ``python -m pytest_latency.sim --port 0 [--replicas 2 ...]``.

Prints exactly one line to stdout once the socket is listening,
``pytest-latency sim listening on http://127.0.0.1:PORT``, which a parent process
reads to learn the port. SIGTERM and SIGINT stop the server cleanly (exit status 0).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import fields

from pytest_latency.sim.app import SimApp
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.server import bind, serve, url_of

BANNER = "pytest-latency sim listening on {url}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_latency.sim",
        description="The pytest-latency reference LLM server (OpenAI API, simulated timing).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument(
        "--log-level", default="warning", choices=("debug", "info", "warning", "error")
    )
    for spec in fields(SimConfig):
        # Durations get a short flag too (--cold-start as well as --cold-start-s).
        names = [f"--{spec.name.replace('_', '-')}"]
        if spec.name.endswith("_s"):
            names.insert(0, names[0][: -len("-s")])
        kind = type(spec.default)
        parser.add_argument(
            *names, dest=spec.name, type=kind, default=spec.default, metavar=kind.__name__.upper(),
            help=f"{spec.metadata['help']} (default: {spec.default})",
        )  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = SimConfig(**{spec.name: getattr(args, spec.name) for spec in fields(SimConfig)})
    except ValueError as exc:
        parser.error(str(exc))
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("pytest_latency.sim").setLevel(args.log_level.upper())
    if args.log_level != "debug":  # the OTLP exporter's retry chatter: errors only
        logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(BANNER.format(url=url_of(sock)), flush=True)
    try:
        asyncio.run(_serve_until_signal(config, sock))
    finally:
        sock.close()
    return 0


async def _serve_until_signal(config: SimConfig, sock: socket.socket) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(SimApp(config), sock, stop)


if __name__ == "__main__":
    sys.exit(main())
