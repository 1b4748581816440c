"""Fetch sessions (KIP-227) as Kafka's FetchManager and FetchSessionCache keep them: pure logic, time passed in.

A client opens a session with a full fetch (session id 0, epoch 0); the broker remembers every partition's
fetch parameters and what it last told the client about it (high watermark, log start offset). Each
incremental fetch (the session's id, its next epoch) names only the partitions whose parameters changed and
the ones to forget, and is answered with only the partitions that have something to say: records, a new high
watermark or log start offset, an error. A full fetch naming a session closes it (epoch 0 opens a new one,
epoch -1 none), and an incremental fetch that leaves no partition closes it too.

The cache is Kafka's: `max.incremental.fetch.session.cache.slots` split evenly over 8 shards (so fewer than 8
slots keep no session at all), new sessions placed on the shards in turn, session ids drawn from the shard's
range of ids. A full shard makes room by evicting a session unused for 2 minutes, or else its least valuable
evictable session (fewer partitions; a follower's is worth more than a consumer's) when the new one is worth
more; a consumer's session is evictable by another consumer only once it is 2 minutes old.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.header import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NUM_SHARDS = 8  # Kafka's NumFetchSessionCacheShards
SESSION_ID_RANGE = 0x7FFFFFFF // NUM_SHARDS
EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
INVALID_HIGH_WATERMARK = -1
TOPIC_IDS_FROM = 13  # Fetch v13+ name topics by id

# A partition of a session: (topic id, partition) for sessions of Fetch v13+, (topic name, partition) before.
PartitionKey = tuple[uuid.UUID | str, int]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 0 -> 1 -> ... -> INT32 max -> 1; a negative epoch stays final."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 0x7FFFFFFF else epoch + 1


def is_full(epoch: int) -> bool:
    return epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@dataclass(slots=True)
class CachedPartition:
    """A session's partition: the client's fetch parameters (named as in a Fetch request, so the read path
    takes it as one) and what the client was last told."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    partition_max_bytes: int
    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int  # the fetcher's, as it sent it
    last_fetched_epoch: int
    high_watermark: int = INVALID_HIGH_WATERMARK
    local_log_start_offset: int = -1

    def update_request(self, requested: CachedPartition) -> None:
        self.partition_max_bytes = requested.partition_max_bytes
        self.fetch_offset = requested.fetch_offset
        self.log_start_offset = requested.log_start_offset
        self.current_leader_epoch = requested.current_leader_epoch
        self.last_fetched_epoch = requested.last_fetched_epoch

    def must_respond(self, answer: Mapping[str, Any], update: bool) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: whether an incremental answer includes this
        partition (records, a changed high watermark or log start offset, an error), remembering what it
        says when `update`. An error resets the remembered high watermark, so the partition is sent again
        once the error is gone."""
        respond = bool(answer["records"])
        if self.high_watermark != answer["high_watermark"]:
            respond = True
            if update:
                self.high_watermark = answer["high_watermark"]
        if self.local_log_start_offset != answer["log_start_offset"]:
            respond = True
            if update:
                self.local_log_start_offset = answer["log_start_offset"]
        if answer["error_code"] != ErrorCode.NONE:
            respond = True
            if update:
                self.high_watermark = INVALID_HIGH_WATERMARK
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    privileged: bool  # a follower's
    partitions: dict[PartitionKey, CachedPartition]  # in fetch order: partitions that returned data go last
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int  # the epoch the next incremental fetch must carry
    cached_size: int = -1  # the size the cache accounts the session with (set when touched)
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the least valuable session sorts first."""
        return self.privileged, self.cached_size, self.id

    def update(self, requested: Iterable[tuple[PartitionKey, CachedPartition]],
               forgotten: Iterable[PartitionKey]) -> None:
        """An incremental fetch's changes: new partitions added last, changed ones updated in place, forgotten
        ones removed."""
        for key, partition in requested:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = partition
            else:
                cached.update_request(partition)
        for key in forgotten:
            self.partitions.pop(key, None)

    def move_last(self, key: PartitionKey) -> None:
        """A partition that returned records goes to the end of the fetch order (Kafka's fairness)."""
        self.partitions[key] = self.partitions.pop(key)


class FetchSessionCacheShard:
    """One of Kafka's FetchSessionCacheShards: at most `max_entries` sessions, ids in its own range."""

    def __init__(self, max_entries: int, eviction_ms: int, shard_num: int,
                 rng: Callable[[int, int], int] = random.randrange) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.shard_num = shard_num
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._rng = rng

    def new_session_id(self) -> int:
        low, high = max(1, self.shard_num * SESSION_ID_RANGE), (self.shard_num + 1) * SESSION_ID_RANGE
        while True:
            session_id = self._rng(low, high)
            if session_id not in self.sessions:
                return session_id

    def maybe_create(self, now: int, privileged: bool, size: int, uses_topic_ids: bool,
                     partitions: Callable[[], dict[PartitionKey, CachedPartition]]) -> int:
        """The new session's id, or INVALID_SESSION_ID when the shard is full and nothing may be evicted."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, (privileged, size, 0), now):
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, partitions(), uses_topic_ids, now, now,
                               next_epoch(INITIAL_EPOCH))
        self.sessions[session.id] = session
        self.touch(session, now)
        return session.id

    def touch(self, session: FetchSession, now: int) -> None:
        """A use of the session: its last-use time, and whether it may now be evicted (decided here, as Kafka's
        evictable maps are updated only on a touch)."""
        session.last_used_ms = now
        session.cached_size = len(session.partitions)
        old = now - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def _try_evict(self, privileged: bool, key: tuple[bool, int, int], now: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stalest.last_used_ms > self.eviction_ms:
            victim = stalest
        else:
            evictable = [s for s in self.sessions.values()
                         if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
            if not evictable:
                return False
            victim = min(evictable, key=FetchSession.evictable_key)
            if key < victim.evictable_key():
                return False
        del self.sessions[victim.id]
        self.evictions += 1
        return True


class FetchSessionCache:
    """Kafka's FetchSessionCache: the shards, and the turn of the next new session."""

    def __init__(self, slots: int, eviction_ms: int = EVICTION_MS,
                 rng: Callable[[int, int], int] = random.randrange) -> None:
        self.shards = [FetchSessionCacheShard(slots // NUM_SHARDS, eviction_ms, n, rng) for n in range(NUM_SHARDS)]
        self._turn = 0

    def shard(self, session_id: int) -> FetchSessionCacheShard | None:
        index = session_id // SESSION_ID_RANGE
        return self.shards[index] if 0 <= index < NUM_SHARDS else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self.shard(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def remove(self, session_id: int) -> FetchSession | None:
        shard = self.shard(session_id)
        return shard.remove(session_id) if shard is not None else None

    def next_shard(self) -> FetchSessionCacheShard:
        shard = self.shards[self._turn % NUM_SHARDS]
        self._turn += 1
        return shard

    @property
    def sessions(self) -> int:
        return sum(len(s.sessions) for s in self.shards)

    @property
    def partitions(self) -> int:
        return sum(s.cached_size for shard in self.shards for s in shard.sessions.values())

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self.shards)


class ContextKind(enum.Enum):
    """Kafka's FetchContext classes."""

    SESSION_ERROR = "SessionErrorContext"  # answered with the error alone, no partitions
    SESSIONLESS = "SessionlessFetchContext"  # the requested partitions, every one answered, no session
    FULL = "FullFetchContext"  # the same, then a new session (if the cache makes room)
    INCREMENTAL = "IncrementalFetchContext"  # the session's partitions, those with news answered


@dataclass(slots=True)
class FetchContext:
    """How one fetch is served: which partitions are read (`partitions`, in order, under `keys`) and, once
    read, which are answered and with which session id (`respond`).

    Nothing changes in the cache until `respond`: a fetch answered later (a long poll) builds its context
    again, and the first one leaves no trace. Kafka updates the session when the request comes in and
    answers when the read is done; for the one client of a session the two are the same."""

    kind: ContextKind
    partitions: list[CachedPartition] = field(default_factory=list)
    keys: list[PartitionKey] = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE
    session_id: int = INVALID_SESSION_ID  # the session named: closed (full, or nothing left), or fetched
    epoch: int = 0
    privileged: bool = False
    uses_topic_ids: bool = False
    requested: list[tuple[PartitionKey, CachedPartition]] = field(default_factory=list)
    forgotten: list[PartitionKey] = field(default_factory=list)

    def respond(self, cache: FetchSessionCache, answers: list[Mapping[str, Any] | None],
                now: int) -> tuple[ErrorCode, int, list[int]]:
        """(top-level error, session id, indexes into `partitions` of the partitions to answer), given each
        read partition's answer (a Fetch response partition: records, high_watermark, log_start_offset,
        error_code) in `partitions` order; an incremental fetch's reader may give None for a partition of the
        session with nothing new (no records, the high watermark and log start offset it was last told)."""
        if self.kind is ContextKind.SESSION_ERROR:
            return self.error, INVALID_SESSION_ID, []
        everything = list(range(len(answers)))
        if self.kind is ContextKind.SESSIONLESS:
            if self.session_id != INVALID_SESSION_ID:
                cache.remove(self.session_id)
            return ErrorCode.NONE, INVALID_SESSION_ID, everything
        if self.kind is ContextKind.FULL:
            if self.session_id != INVALID_SESSION_ID:
                cache.remove(self.session_id)

            def cached() -> dict[PartitionKey, CachedPartition]:
                for partition, answer in zip(self.partitions, answers, strict=True):
                    partition.high_watermark = answer["high_watermark"]
                    partition.local_log_start_offset = answer["log_start_offset"]
                return dict(zip(self.keys, self.partitions, strict=True))

            session_id = cache.next_shard().maybe_create(now, self.privileged, len(answers), self.uses_topic_ids,
                                                         cached)
            return ErrorCode.NONE, session_id, everything
        shard = cache.shard(self.session_id)
        session = shard.sessions.get(self.session_id) if shard is not None else None
        if session is None or shard is None:  # gone while the fetch waited
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID, []
        if session.epoch != self.epoch:  # another fetch of the session came in between
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, []
        session.update(self.requested, self.forgotten)
        shard.touch(session, now)
        session.epoch = next_epoch(session.epoch)
        answered = []
        for index, (key, answer) in enumerate(zip(self.keys, answers, strict=True)):
            if answer is None:
                continue
            cached_partition = session.partitions[key]
            if cached_partition.must_respond(answer, update=True):
                answered.append(index)
                if answer["records"]:
                    session.move_last(key)
        return ErrorCode.NONE, session.id, answered


def new_context(cache: FetchSessionCache, version: int, session_id: int, epoch: int, privileged: bool,
                requested: list[tuple[PartitionKey, CachedPartition]], forgotten: list[PartitionKey]) -> FetchContext:
    """Kafka's FetchManager.newContext: the context of a fetch of `version` naming session `session_id` at
    `epoch`, with `requested` partitions (in request order) and `forgotten` ones."""
    uses_topic_ids = version >= TOPIC_IDS_FROM
    keys, partitions = [k for k, _ in requested], [p for _, p in requested]
    if is_full(epoch):
        kind = ContextKind.SESSIONLESS if epoch == FINAL_EPOCH else ContextKind.FULL
        return FetchContext(kind, partitions, keys, session_id=session_id, privileged=privileged,
                            uses_topic_ids=uses_topic_ids)
    session = cache.get(session_id)
    if session is None:
        return FetchContext(ContextKind.SESSION_ERROR, error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return FetchContext(ContextKind.SESSION_ERROR, error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != uses_topic_ids:
        return FetchContext(ContextKind.SESSION_ERROR, error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    # The session's partitions after this fetch's changes, in fetch order, each read with its latest parameters.
    changed = dict(requested)
    gone = set(forgotten)
    order = [k for k in session.partitions if k not in gone] + [k for k in changed if k not in session.partitions
                                                                 and k not in gone]
    if not order:  # nothing left to fetch: the session closes
        return FetchContext(ContextKind.SESSIONLESS, partitions, keys, session_id=session_id)
    return FetchContext(ContextKind.INCREMENTAL, [changed.get(k) or session.partitions[k] for k in order], order,
                        session_id=session_id, epoch=epoch, requested=requested, forgotten=forgotten)
