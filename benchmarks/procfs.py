"""What the kernel says about a broker process: resident memory and CPU time (all threads)."""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_kib(pid: int) -> int | None:
    return _status_kib(pid, "VmRSS:")


def peak_rss_kib(pid: int) -> int | None:
    return _status_kib(pid, "VmHWM:")


def cpu_seconds(pid: int) -> float | None:
    """User plus system time of the process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None
