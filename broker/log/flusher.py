"""Group commit for acks=all: producers wait until their offsets are fdatasynced.

Policies (broker option log.flush.policy): "none" answers at once (the OS writes back, and the log is
flushed at shutdown), "always" runs one fdatasync per waiter (serialized per partition), "grouped" lets
all waiters of a partition share one: while an fdatasync runs in a worker thread, newer waiters queue
for the next one, which then covers all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import trio

POLICIES = ("none", "grouped", "always")


class Flushable(Protocol):
    flushed_offset: int
    closed: bool

    def flush(self) -> None: ...


@dataclass(eq=False)
class _Partition:
    waiters: int = 0
    running: trio.Event | None = None  # set when the fdatasync in progress finishes
    lock: trio.Lock = field(default_factory=trio.Lock)


class GroupFlusher:
    def __init__(self, policy: str = "grouped") -> None:
        if policy not in POLICIES:
            raise ValueError(f"fsync policy must be one of {POLICIES}, not {policy!r}")
        self.policy = policy
        self.flushes = 0  # fdatasync rounds run, for tests and metrics
        self._partitions: dict[Flushable, _Partition] = {}  # only while someone waits

    async def wait_durable(self, log: Flushable, offset: int) -> None:
        """Return once `offset` of `log` is on disk (at once with policy "none" or a closed log)."""
        if self.policy == "none":
            return
        state = self._partitions.get(log)
        if state is None:
            state = self._partitions[log] = _Partition()
        state.waiters += 1
        try:
            if self.policy == "always":
                async with state.lock:
                    await self._flush(log)
                return
            while log.flushed_offset <= offset and not log.closed:
                if state.running is not None:
                    await state.running.wait()
                    continue  # that flush may have started before our append: check again
                state.running = trio.Event()
                try:
                    await self._flush(log)
                finally:
                    state.running.set()
                    state.running = None
        finally:
            state.waiters -= 1
            if not state.waiters:
                del self._partitions[log]

    async def _flush(self, log: Flushable) -> None:
        self.flushes += 1
        # Not abandoned on cancellation: the state above stays consistent until the thread returns.
        await trio.to_thread.run_sync(log.flush)
