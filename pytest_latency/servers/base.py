"""What every server kind yields once it is up: where it is and what it serves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_latency.errors import ServerStartError as ServerStartError  # re-exported
from pytest_latency.secret import Secret


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Identity and address of the server a run measures (never credentials).

    ``request_options`` are extra body fields this server accepts for every request,
    e.g. ``ignore_eos`` so outputs run to the fixed cap.
    """

    kind: str
    url: str
    model: str
    api: str = "chat"
    details: dict[str, object] = field(default_factory=dict)
    cold_start_s: float | None = None
    exports_spans: bool = False  # configured to send its spans to the plugin's receiver
    # Why the server is gone (exit code, last logs), None while it runs; None: unknown.
    exit_problem: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    # Sent as ``Authorization: Bearer`` with every request; never in a report.
    api_key: Secret | None = field(default=None, repr=False, compare=False)
