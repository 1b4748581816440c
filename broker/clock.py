"""The broker's time: the wall clock, or for tests a virtual clock that moves only when told to
(`BrokerThread(..., virtual_time=True)` and `broker.advance(seconds)`), so that a session or transaction
timeout, offset expiry or retention happens at once and deterministically.

Everything time-based in the broker reads `now_ms()` and waits through `sleep` / `wait`: the group and
transaction coordinators' timers, producer-id and transactional-id expiry, offsets retention, log
retention and the log cleaner's pacing, LogAppendTime stamps. Network timeouts (idle connections, Fetch
long polls) and I/O retries stay on real time: they concern the client's real waiting.
"""

from __future__ import annotations

import math
import time

import trio


class WallClock:
    virtual = False

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def wait(self, event: trio.Event, seconds: float) -> None:
        """Until `event` is set or `seconds` have passed."""
        with trio.move_on_after(seconds):
            await event.wait()


class VirtualClock:
    """Starts at the wall clock's time (so client timestamps are near it) and then stands still."""

    virtual = True

    def __init__(self, start_ms: int | None = None) -> None:
        self._now = WallClock.now_ms() if start_ms is None else start_ms
        self._waiters: set[trio.Event] = set()

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time does not go back")
        self._now += ms
        waiters, self._waiters = self._waiters, set()
        for event in waiters:
            event.set()

    async def sleep(self, seconds: float) -> None:
        target = self._now + seconds * 1000
        while self._now < target:
            woken = trio.Event()
            self._waiters.add(woken)
            await woken.wait()

    async def wait(self, event: trio.Event, seconds: float) -> None:
        """Until `event` is set or the clock moves (the caller looks at the time again either way)."""
        if math.isinf(seconds):
            await event.wait()
            return
        self._waiters.add(event)
        await event.wait()


Clock = WallClock | VirtualClock
