"""A trace phase's requests, placed in the phase (read by :mod:`pytest_latency.spec.trace`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One line of a trace, placed in its phase (``offset_s`` from the phase start)."""

    offset_s: float
    input_tokens: int | None  # None: ``input_text`` given, its length is counted at planning
    output_tokens: int | None  # None: the workload's output_tokens
    line: int
    text: str | None = None
    hash_ids: tuple[int, ...] = ()
    session: int | None = None  # session ids numbered by first appearance
    turn: int | None = None  # the line's place in its session (0, 1, ...), in time order


@dataclass(frozen=True, slots=True)
class Trace:
    """The requests of a trace phase, after window and speed; the file's name and digest."""

    file: str
    sha256: str
    requests: tuple[TraceRequest, ...] = field(repr=False)
    duration_s: float = 0.0
    speed: float = 1.0
    window: tuple[float, float] | None = None  # (start, duration) of trace time, seconds
    time_unit: str = "ms"  # the file's timestamps: "ms" or "s"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "sha256": self.sha256,
            "requests": len(self.requests),
            "speed": self.speed,
            "window": list(self.window) if self.window is not None else None,
            **({"time_unit": self.time_unit} if self.time_unit != "ms" else {}),
        }
