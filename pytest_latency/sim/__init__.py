"""The embedded reference server: a small, faithful model of an LLM serving stack.

Gateway (validation, W3C trace id) → bounded admission queue with deadlines →
continuously batching replicas (prefill, decode) → SSE token stream, behind an
OpenAI-compatible HTTP API. :func:`simulate` runs the same scheduling model in
virtual time. See ``docs/sim.md``.
"""

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import Counters, ServerTimings, State
from pytest_latency.sim.server import SimServer, SimSnapshot
from pytest_latency.sim.virtual import Arrival, SimResult, simulate

__all__ = (
    "Arrival",
    "Counters",
    "ServerTimings",
    "SimConfig",
    "SimResult",
    "SimServer",
    "SimSnapshot",
    "State",
    "simulate",
)
