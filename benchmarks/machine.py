"""Wall time, CPU time and machine load of one measured piece of work: the one definition every benchmark
uses, so a figure is never printed without the conditions it was measured in.

    with Measured("run_1k") as m:
        ...
    for line in m.lines():            # run_1k_wall_s, run_1k_cpu_s, run_1k_load (and _busy when loaded)
        print(line)

CPU time counts this process and the child processes it waited for (``RUSAGE_CHILDREN``). The load is the
1-minute load average at the end; a figure measured while it was above the number of cores is marked
``busy: 1``, so it is never compared with a quiet one.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, field

__all__ = ["Measured", "cores", "cpu_seconds", "load_average", "memory_mb"]


def cores() -> int:
    return os.cpu_count() or 1


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def memory_mb(key: str = "VmHWM") -> float:
    """A ``/proc/self/status`` size of this process in MB (``VmHWM``: peak resident set, ``VmRSS``: current);
    the peak from ``getrusage`` where there is no ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class Measured:
    """A context manager measuring wall time, CPU time and load for the figures named ``name``."""

    name: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    load: float = 0.0
    _start: tuple[float, float] = field(default=(0.0, 0.0), repr=False)

    def __enter__(self) -> Measured:
        self._start = (time.perf_counter(), cpu_seconds())
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu = self._start
        self.wall_s = time.perf_counter() - wall
        self.cpu_s = cpu_seconds() - cpu
        self.load = load_average()

    @property
    def busy(self) -> bool:
        """Measured while the machine had more runnable work than cores."""
        return self.load > cores()

    def lines(self) -> list[str]:
        """``name_wall_s``, ``name_cpu_s``, ``name_load`` (and ``name_busy: 1`` when loaded) as ``name: value``."""
        out = [f"{self.name}_wall_s: {self.wall_s:.3f}", f"{self.name}_cpu_s: {self.cpu_s:.3f}",
               f"{self.name}_load: {self.load:.2f}"]
        return out + ([f"{self.name}_busy: 1"] if self.busy else [])
