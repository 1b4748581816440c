"""The fetch session cache and contexts (broker.services.fetch_sessions): pure, time passed in. What a fetch
reads, what it answers, the session errors, the shards and eviction (Kafka's FetchSessionCacheShard)."""

from __future__ import annotations

import uuid
from typing import Any

from broker.services.fetch_sessions import (
    EVICTION_MS,
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    NUM_SHARDS,
    SESSION_ID_RANGE,
    CachedPartition,
    ContextKind,
    FetchSessionCache,
    new_context,
    next_epoch,
)
from protocol.header import ErrorCode

ZERO = uuid.UUID(int=0)


def _part(partition: int, offset: int = 0, topic: str = "t") -> tuple[tuple[str, int], CachedPartition]:
    return (topic, partition), CachedPartition(topic, ZERO, partition, 1 << 20, offset, -1, -1, -1)


def _answer(hw: int, records: bytes = b"", error: int = 0, log_start: int = 0) -> dict[str, Any]:
    return {"records": records, "high_watermark": hw, "log_start_offset": log_start, "error_code": error}


def _open(cache: FetchSessionCache, partitions: list[int], hws: list[int], now: int = 0,
          privileged: bool = False) -> int:
    context = new_context(cache, 12, 0, 0, privileged, [_part(p) for p in partitions], [])
    assert context.kind is ContextKind.FULL
    error, session_id, answered = context.respond(cache, [_answer(hw) for hw in hws], now)
    assert error == ErrorCode.NONE and answered == list(range(len(partitions)))
    return session_id


def test_epochs_wrap_to_one_and_a_final_epoch_stays_final() -> None:
    assert [next_epoch(e) for e in (0, 1, 0x7FFFFFFF, -1)] == [1, 2, 1, FINAL_EPOCH]


def test_an_incremental_fetch_reads_every_partition_and_answers_only_the_ones_with_news() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0, 1, 2], [3, 0, 0])
    context = new_context(cache, 12, sid, 1, False, [_part(0, 3)], [])
    assert context.kind is ContextKind.INCREMENTAL
    assert [(p.partition, p.fetch_offset) for p in context.partitions] == [(0, 3), (1, 0), (2, 0)]
    # p1 has a record, p2 nothing new, p0 read to its end
    error, got_sid, answered = context.respond(cache, [_answer(3), _answer(1, b"r"), _answer(0)], 1)
    assert (error, got_sid, answered) == (ErrorCode.NONE, sid, [1])
    # p1 returned records: it is read last from now on (Kafka's fairness)
    context = new_context(cache, 12, sid, 2, False, [], [])
    assert [p.partition for p in context.partitions] == [0, 2, 1]


def test_a_new_high_watermark_or_log_start_offset_is_news_an_error_always_is() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0, 1, 2], [0, 0, 0])
    context = new_context(cache, 12, sid, 1, False, [], [])
    answers = [_answer(5), _answer(0, log_start=0), _answer(-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert context.respond(cache, answers, 1)[2] == [0, 2]
    context = new_context(cache, 12, sid, 2, False, [], [])
    answers = [_answer(5), _answer(0, log_start=1), _answer(-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert context.respond(cache, answers, 2)[2] == [1, 2]
    # the error gone: the partition is answered once more (its high watermark was forgotten), then not
    context = new_context(cache, 12, sid, 3, False, [], [])
    assert context.respond(cache, [_answer(5), _answer(0, log_start=1), _answer(0)], 3)[2] == [2]
    context = new_context(cache, 12, sid, 4, False, [], [])
    assert context.respond(cache, [_answer(5), _answer(0, log_start=1), _answer(0)], 4)[2] == []


def test_forgotten_partitions_leave_added_ones_come_last_and_are_answered() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0, 1], [0, 0])
    context = new_context(cache, 12, sid, 1, False, [_part(5)], [("t", 0)])
    assert [p.partition for p in context.partitions] == [1, 5]
    assert context.respond(cache, [_answer(0), _answer(0)], 1)[2] == [1]  # new: nothing told about it yet


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0], [0])
    context = new_context(cache, 12, sid, 1, False, [], [("t", 0)])
    assert context.kind is ContextKind.SESSIONLESS
    assert context.respond(cache, [], 1) == (ErrorCode.NONE, INVALID_SESSION_ID, [])
    assert new_context(cache, 12, sid, 2, False, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_session_errors_change_nothing() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0], [0])
    assert new_context(cache, 12, sid, 2, False, [], []).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert new_context(cache, 13, sid, 1, False, [], []).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    assert new_context(cache, 12, sid + 1, 1, False, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert new_context(cache, 12, 0, 1, False, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert new_context(cache, 12, -7, 1, False, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert new_context(cache, 12, sid, 1, False, [], []).kind is ContextKind.INCREMENTAL


def test_a_context_not_answered_leaves_no_trace() -> None:
    """A long poll makes its context twice (once to try at once, once to wait): the first must not count."""
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0], [0])
    new_context(cache, 12, sid, 1, False, [_part(1)], [("t", 0)])
    context = new_context(cache, 12, sid, 1, False, [], [])
    assert [p.partition for p in context.partitions] == [0]
    assert context.respond(cache, [_answer(0)], 1) == (ErrorCode.NONE, sid, [])


def test_a_fetch_in_between_makes_the_waiting_one_answer_invalid_epoch() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0], [0])
    waiting = new_context(cache, 12, sid, 1, False, [], [])
    new_context(cache, 12, sid, 1, False, [], []).respond(cache, [_answer(0)], 1)
    assert waiting.respond(cache, [_answer(0)], 2)[0] == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_a_full_fetch_closes_the_session_it_names() -> None:
    cache = FetchSessionCache(1000)
    sid = _open(cache, [0], [0])
    context = new_context(cache, 12, sid, 0, False, [_part(0)], [])
    new_sid = context.respond(cache, [_answer(0)], 1)[1]
    assert new_sid not in (0, sid) and cache.get(sid) is None and cache.get(new_sid) is not None
    context = new_context(cache, 12, new_sid, FINAL_EPOCH, False, [_part(0)], [])
    assert context.respond(cache, [_answer(0)], 2) == (ErrorCode.NONE, INVALID_SESSION_ID, [0])
    assert cache.sessions == 0


def test_sessions_go_to_the_shards_in_turn_with_ids_from_each_shards_range() -> None:
    cache = FetchSessionCache(1000)
    ids = [_open(cache, [0], [0]) for _ in range(2 * NUM_SHARDS)]
    assert [sid // SESSION_ID_RANGE for sid in ids] == list(range(NUM_SHARDS)) * 2
    assert cache.sessions == 2 * NUM_SHARDS and cache.partitions == 2 * NUM_SHARDS


def test_fewer_slots_than_shards_keep_no_session() -> None:
    cache = FetchSessionCache(NUM_SHARDS - 1)
    assert [_open(cache, [0], [0]) for _ in range(NUM_SHARDS)] == [INVALID_SESSION_ID] * NUM_SHARDS


def test_a_full_shard_evicts_a_session_unused_for_the_eviction_time() -> None:
    cache = FetchSessionCache(NUM_SHARDS)  # one session a shard
    first = [_open(cache, [0], [0], now=0) for _ in range(NUM_SHARDS)]
    assert _open(cache, [0], [0], now=EVICTION_MS) == INVALID_SESSION_ID  # shard 0: not stale yet
    newer = _open(cache, [0], [0], now=EVICTION_MS + 1)  # shard 1: its session is stale now
    assert newer // SESSION_ID_RANGE == 1 and cache.get(first[1]) is None
    assert cache.evictions == 1


def test_a_consumer_evicts_only_an_old_smaller_session_a_follower_any_consumers_smaller_one() -> None:
    cache = FetchSessionCache(NUM_SHARDS)
    for _ in range(NUM_SHARDS):
        _open(cache, [0, 1], [0, 0], now=0)
    # All used a moment ago, none stale. A consumer with more partitions: the sessions are too young.
    assert _open(cache, [0, 1, 2], [0, 0, 0], now=1000) == INVALID_SESSION_ID
    # A follower evicts a consumer's session with fewer partitions, young or not...
    assert _open(cache, [0, 1, 2], [0, 0, 0], now=1000, privileged=True) != INVALID_SESSION_ID
    # ...but not one with as many (the newcomer must be worth more).
    assert _open(cache, [0, 1], [0, 0], now=1000, privileged=False) == INVALID_SESSION_ID


def test_a_session_becomes_evictable_by_consumers_when_used_after_the_eviction_time() -> None:
    """Kafka decides whether a session is old enough to give way to a consumer's when it is used, not when the
    cache is full."""
    cache = FetchSessionCache(NUM_SHARDS)
    ids = [_open(cache, [0], [0], now=0) for _ in range(NUM_SHARDS)]
    # Shard 0's session is used after 2 minutes, shard 1's just before: neither is stale at the end.
    for session_id, now in ((ids[0], EVICTION_MS + 10), (ids[1], EVICTION_MS - 1000)):
        new_context(cache, 12, session_id, 1, False, [], []).respond(cache, [_answer(0)], now)
    later = EVICTION_MS + 20
    assert _open(cache, [0, 1], [0, 0], now=later) // SESSION_ID_RANGE == 0  # shard 0: evicted
    assert cache.get(ids[0]) is None
    assert _open(cache, [0, 1], [0, 0], now=later) == INVALID_SESSION_ID  # shard 1: too young when used
    assert cache.get(ids[1]) is not None
