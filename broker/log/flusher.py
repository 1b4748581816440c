"""Group commit for acks=all: producers wait until their offsets are fdatasynced.

Policies (broker option log.flush.policy): "none" answers at once (the OS writes back, and the log is
flushed at shutdown), "always" runs one fdatasync per waiter (serialized per partition), "grouped" lets
all waiters share one flush round: while a round runs, newer waiters (of any partition: the partitions of
one produce request, of concurrent requests, the coordinators' logs) queue for the next one, which then
covers all of them. A round of one log fdatasyncs its files; a round of several syncs the data dir's
filesystem once (syncfs), since one fdatasync per partition, each a journal commit, does not scale with
partitions (see broker.log.syncfs).

A round normally runs in a worker thread so that a slow disk does not stall the event loop. A thread round
trip costs ~0.2 ms, as much as an fdatasync on a fast disk: while recent rounds took less than
`inline_below_s` (a moving average), they run inline instead.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import trio

from broker.log import syncfs

POLICIES = ("none", "grouped", "always")
INLINE_BELOW_S = 0.0004
_EWMA_WEIGHT = 0.2


class Flushable(Protocol):
    flushed_offset: int
    closed: bool

    def flush(self) -> None: ...

    def begin_flush(self) -> Any: ...  # a FlushPoint, or None if closed

    def end_flush(self, point: Any, synced: bool) -> None: ...


@dataclass(eq=False)
class _Serialized:
    """The requests that wait on one fdatasync being run inline, one at a time."""

    waiters: int = 0
    lock: trio.Lock = field(default_factory=trio.Lock)


class GroupFlusher:
    def __init__(self, policy: str = "grouped", inline_below_s: float = INLINE_BELOW_S,
                 root: Path | None = None) -> None:
        """`root`: the data dir, every log's filesystem; without it each log is fdatasynced on its own."""
        if policy not in POLICIES:
            raise ValueError(f"fsync policy must be one of {POLICIES}, not {policy!r}")
        self.policy = policy
        self.flushes = 0  # flush rounds run, for tests and metrics
        self.inline_below_s = inline_below_s
        self.average_s: float | None = None  # moving average of round durations; None: none measured yet
        self.root = root
        self._pending: dict[Flushable, None] = {}  # logs for the next round (an ordered set)
        self._in_round: frozenset[Flushable] = frozenset()  # the logs of the running round
        self._running: trio.Event | None = None  # set when the running round finishes
        self._serialized: dict[Flushable, _Serialized] = {}  # policy "always", only while someone waits

    async def wait_durable(self, log: Flushable, offset: int) -> None:
        """Return once `offset` of `log` is on disk (at once with policy "none" or a closed log)."""
        if self.policy == "none":
            return
        if self.policy == "always":
            await self._always(log)
            return
        while log.flushed_offset <= offset and not log.closed:
            if self._running is not None:
                if log not in self._in_round:
                    self._pending[log] = None
                await self._running.wait()
                continue  # that round may have captured the log before our append: check again
            self._pending[log] = None
            logs = list(self._pending)
            self._pending.clear()
            self._running, self._in_round = trio.Event(), frozenset(logs)
            try:
                await self._round(logs)
            finally:
                self._running.set()
                self._running, self._in_round = None, frozenset()

    @property
    def flushes_inline(self) -> bool:
        """A flush now would run inline (fast recent rounds, policy "grouped", none running): a request may
        then flush its own logs with `flush_now` without awaiting."""
        return (self.policy == "grouped" and self._running is None and self.average_s is not None
                and self.average_s < self.inline_below_s)

    def flush_now(self, logs: list[Flushable]) -> None:
        """One round over `logs` in the event loop's thread, while `flushes_inline` (OSError if it failed)."""
        self.flushes += 1
        self._timed_round(logs)

    async def _always(self, log: Flushable) -> None:
        state = self._serialized.get(log)
        if state is None:
            state = self._serialized[log] = _Serialized()
        state.waiters += 1
        try:
            async with state.lock:
                await self._round([log])
        finally:
            state.waiters -= 1
            if not state.waiters:
                del self._serialized[log]

    async def _round(self, logs: list[Flushable]) -> None:
        self.flushes += 1
        if self.average_s is not None and self.average_s < self.inline_below_s:
            self._timed_round(logs)
        else:
            # Not abandoned on cancellation: the state above stays consistent until the thread returns.
            await trio.to_thread.run_sync(self._timed_round, logs)

    def _timed_round(self, logs: list[Flushable]) -> None:
        started = time.perf_counter()
        if len(logs) > 1 and self.root is not None and syncfs.available():
            self._sync_filesystem(logs)
        else:
            for log in logs:
                log.flush()
        seconds = time.perf_counter() - started
        avg = self.average_s
        self.average_s = seconds if avg is None else avg + _EWMA_WEIGHT * (seconds - avg)

    def _sync_filesystem(self, logs: list[Flushable]) -> None:
        """One syncfs covers every log's segments, indexes and directory entries appended before it."""
        points = []
        synced = False
        try:
            for log in logs:
                point = log.begin_flush()
                if point is not None:
                    points.append((log, point))
            fd = os.open(self.root, os.O_RDONLY)
            try:
                syncfs.syncfs(fd)
            finally:
                os.close(fd)
            synced = True
        finally:
            for log, point in points:
                log.end_flush(point, synced)
