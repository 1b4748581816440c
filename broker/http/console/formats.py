"""How the pages write numbers and times (Jinja2 filters), and the bytes in/out per second from the metrics'
counters between two looks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from broker.http.console.records_view import format_ms

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(n: int | None) -> str:
    if n is None or n < 0:
        return "-"
    value = float(n)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def duration_ms(ms: int | float | None) -> str:
    """12 ms, 3.4 s, 5 min 02 s, 2 h 03 min."""
    if ms is None or ms < 0:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def number(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


FILTERS: dict[str, Callable[..., Any]] = {"size": size, "duration": duration_ms, "ms_time": format_ms,
                                          "number": number}


class Rates:
    """Bytes in and out per second: the metrics' counters now against the previous look (at least a second
    before)."""

    def __init__(self) -> None:
        self._last: tuple[float, int, int] | None = None
        self._rates = (0.0, 0.0)

    def update(self, bytes_in: int, bytes_out: int, now: float | None = None) -> tuple[float, float]:
        now = time.monotonic() if now is None else now
        last = self._last
        if last is None:
            self._last = (now, bytes_in, bytes_out)
            return self._rates
        elapsed = now - last[0]
        if elapsed >= 1.0:
            self._rates = (max(bytes_in - last[1], 0) / elapsed, max(bytes_out - last[2], 0) / elapsed)
            self._last = (now, bytes_in, bytes_out)
        return self._rates
