"""Keyed deadlines for the coordinators' pure logic: time is passed in, nothing sleeps here.

A key has at most one deadline; scheduling it again replaces the old one (a heartbeat pushes the session
expiry of its member). A heap with lazy deletion keeps `next_deadline` and `pop_expired` cheap.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from itertools import count
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyedTimers(Generic[K]):
    def __init__(self) -> None:
        self._live: dict[K, tuple[int, int]] = {}  # key -> (deadline, sequence of its heap entry)
        self._heap: list[tuple[int, int, K]] = []
        self._seq = count()

    def schedule(self, key: K, deadline_ms: int) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: K) -> None:
        self._live.pop(key, None)

    def deadline(self, key: K) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: K) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _drop_stale(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            deadline, seq, key = heap[0]
            if live.get(key) == (deadline, seq):
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_expired(self, now_ms: int) -> K | None:
        """The key whose deadline passed first (removed), or None. One at a time, because firing one timer
        may cancel or reschedule others."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _deadline, _seq, key = heapq.heappop(self._heap)
        del self._live[key]
        return key


SESSION = "session"
REBALANCE = "rebalance"
MemberKey = tuple[str, str, str]  # (kind, group id, member id: "" for a deadline of the group's own)


class MemberTimers(KeyedTimers[MemberKey]):
    """The deadlines of the members of KIP-848-style groups (consumer and streams groups, as Kafka's
    GroupMetadataManager keeps them): a session each, pushed by every heartbeat, and a rebalance deadline, with
    the epoch it was set at, while a member must reach a new epoch; a group's own deadlines beside them."""

    def __init__(self) -> None:
        super().__init__()
        self._rebalance_epochs: dict[tuple[str, str], int] = {}

    def schedule_session(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        self.schedule((SESSION, group_id, member_id), deadline_ms)

    def schedule_rebalance(self, group_id: str, member_id: str, epoch: int, deadline_ms: int) -> None:
        self.schedule((REBALANCE, group_id, member_id), deadline_ms)
        self._rebalance_epochs[(group_id, member_id)] = epoch

    def cancel_rebalance(self, group_id: str, member_id: str) -> None:
        self.cancel((REBALANCE, group_id, member_id))
        self._rebalance_epochs.pop((group_id, member_id), None)

    def cancel_member(self, group_id: str, member_id: str, *kinds: str) -> None:
        """Every deadline of the member: its session, its rebalance and those of `kinds`."""
        for kind in (SESSION, *kinds):
            self.cancel((kind, group_id, member_id))
        self.cancel_rebalance(group_id, member_id)

    def rebalance_epoch(self, group_id: str, member_id: str) -> int | None:
        """The epoch a rebalance deadline that fired was set at (asked once, when it fires)."""
        return self._rebalance_epochs.pop((group_id, member_id), None)
