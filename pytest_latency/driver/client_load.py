"""What driving cost the client: the data :mod:`.loop_monitor` measures.

Light (stdlib only): analysis and reports import it.
"""

from __future__ import annotations

from dataclasses import dataclass

# A driving thread busy this share of the run had no idle time left to send on time.
SATURATED_SHARE = 0.90


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """What driving cost the client: CPU of the driving thread and its loop's lag."""

    wall_s: float  # monitored span: time zero to the drive's end
    cpu_s: float  # CPU time of the driving thread over that span
    busiest_window_share: float  # the highest CPU share of one WINDOW_S window
    loop_lag_p99_s: float | None  # how late the monitor's wake-ups were
    loop_lag_max_s: float | None
    wakeups: int
    # Of cpu_s, the time spent spinning to a planned instant (driver/pacing.py): the
    # thread was on its CPU but free to read, so it is not counted as busy.
    spin_s: float = 0.0

    @property
    def cpu_share(self) -> float:
        """The driving thread's CPU over wall time (1.0: it used its whole core)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def busy_share(self) -> float:
        """CPU share less the spinning before planned sends: the work it did."""
        return max(0.0, self.cpu_s - self.spin_s) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def saturated(self) -> bool:
        return self.busy_share >= SATURATED_SHARE

    def to_json(self) -> dict[str, object]:
        return {
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "cpu_share": self.cpu_share,
            "spin_s": self.spin_s,
            "busy_share": self.busy_share,
            "busiest_window_share": self.busiest_window_share,
            "loop_lag_p99_s": self.loop_lag_p99_s,
            "loop_lag_max_s": self.loop_lag_max_s,
            "saturated": self.saturated,
        }

    @staticmethod
    def worst(loads: list[ClientLoad | None]) -> ClientLoad | None:
        """The most loaded of several workers' loads (by busy share); None without any."""
        known = [load for load in loads if load is not None]
        return max(known, key=lambda load: load.busy_share, default=None)
