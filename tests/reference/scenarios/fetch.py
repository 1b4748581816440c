"""Fetch and ListOffsets edges (out of range, by timestamp, byte limits, leader epochs), DeleteRecords,
OffsetForLeaderEpoch."""

from __future__ import annotations

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DELETE_RECORDS,
    FETCH,
    OFFSET_FOR_LEADER_EPOCH,
    batch,
    create_topic,
    fetch,
    fetch_body,
    list_offsets,
    produce,
)


def _three_batches(s: Session, name: str) -> None:
    """Offsets 0-1 at t0 (+0, +10 ms), 2 at t0+1000, 3-5 at t0+2000 (+0, +5, +10 ms)."""
    t0 = s.t0
    produce(s, "batch 1", name, batch([b"a0", b"a1"], [b"k", b"k"], timestamp=t0, step_ms=10))
    produce(s, "batch 2", name, batch([b"b0"], timestamp=t0 + 1000))
    produce(s, "batch 3", name, batch([b"c0", b"c1", b"c2"], timestamp=t0 + 2000, step_ms=5))


@scenario()
def fetch_edges(s: Session) -> None:
    """Fetch v12: from the start, at the end, past the end, byte limits smaller than a batch, unknown
    partitions, leader epochs; a fetch session."""
    name = s.name("data")
    create_topic(s, "create", name, partitions=2)
    _three_batches(s, name)
    fetch(s, "from 0", name, 0)
    fetch(s, "from the middle of batch 1", name, 1)
    fetch(s, "from 3 (batch 3)", name, 3)
    fetch(s, "at the high watermark", name, 6)
    fetch(s, "past the end", name, 7)
    fetch(s, "far past the end", name, 1000)
    fetch(s, "negative offset", name, -5)
    fetch(s, "partition limit 10 bytes (first batch anyway)", name, 0, partition_max_bytes=10)
    fetch(s, "partition limit 100 bytes", name, 0, partition_max_bytes=100)
    fetch(s, "request limit 10 bytes", name, 0, max_bytes=10)
    fetch(s, "empty partition", name, 0, partition=1)
    fetch(s, "unknown partition", name, 0, partition=9)
    fetch(s, "unknown topic", s.name("nope"), 0)
    fetch(s, "current leader epoch 0", name, 0, current_leader_epoch=0)
    fetch(s, "current leader epoch 5 (newer)", name, 0, current_leader_epoch=5)
    fetch(s, "read_committed without transactions", name, 0, isolation_level=1)
    s.request("two partitions, small request limit", FETCH, 12, fetch_body(name, 0, max_bytes=100, partitions=[
        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]))
    s.request("v4 (oldest served)", FETCH, 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                               "max_bytes": 1 << 20, "isolation_level": 0, "topics": [
        {"topic": name, "partitions": [{"partition": 0, "fetch_offset": 2, "partition_max_bytes": 1 << 20}]}]})
    opened = s.request("open a session", FETCH, 12, fetch_body(name, 0, session_epoch=0))
    session = opened["session_id"] if opened else 0
    s.request("incremental, nothing new", FETCH, 12, fetch_body(name, 6, session_id=session, session_epoch=1,
                                                                partitions=[]) | {"topics": []})
    s.request("incremental, wrong epoch", FETCH, 12, fetch_body(name, 6, session_id=session, session_epoch=5,
                                                                partitions=[]) | {"topics": []})
    s.request("unknown session", FETCH, 12, fetch_body(name, 6, session_id=123456789, session_epoch=1))


@scenario()
def list_offsets_edges(s: Session) -> None:
    """ListOffsets v7: latest, earliest, max timestamp, by timestamp (before, between, after the records),
    unknown partitions, leader epochs, read_committed."""
    name = s.name("timed")
    empty = s.name("empty")
    create_topic(s, "create", name)
    create_topic(s, "create empty", empty)
    _three_batches(s, name)
    T0 = s.t0  # noqa: N806
    list_offsets(s, "latest", name, -1)
    list_offsets(s, "earliest", name, -2)
    list_offsets(s, "max timestamp", name, -3)
    list_offsets(s, "before every record", name, T0 - 100_000)
    list_offsets(s, "exactly the first", name, T0)
    list_offsets(s, "between two records of batch 1", name, T0 + 5)
    list_offsets(s, "between batches", name, T0 + 500)
    list_offsets(s, "inside batch 3", name, T0 + 2007)
    list_offsets(s, "after every record", name, T0 + 100_000)
    list_offsets(s, "empty partition, latest", empty, -1)
    list_offsets(s, "empty partition, max timestamp", empty, -3)
    list_offsets(s, "empty partition, by timestamp", empty, T0)
    list_offsets(s, "unknown partition", name, -1, partition=4)
    list_offsets(s, "unknown topic", s.name("nope"), -1)
    list_offsets(s, "current leader epoch 3 (newer)", name, -1, current_leader_epoch=3)
    list_offsets(s, "read_committed latest", name, -1, isolation_level=1)
    list_offsets(s, "timestamp -4 (earliest local) in v7", name, -4)
    list_offsets(s, "timestamp -5 (latest tiered) in v7", name, -5)
    list_offsets(s, "timestamp -7", name, -7)
    s.request("v1 (oldest served)", 2, 1, {"replica_id": -1, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    s.request("same partition twice", 2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1},
                                      {"partition_index": 0, "timestamp": -2}]}]})


def _delete(s: Session, step: str, name: str, offset: int, partition: int = 0) -> None:
    s.request(step, DELETE_RECORDS, 2, {"topics": [{"name": name, "partitions": [
        {"partition_index": partition, "offset": offset}]}], "timeout_ms": 30000})


@scenario()
def delete_records(s: Session) -> None:
    """DeleteRecords: inside the log, to the high watermark (-1), past it, backwards; what Fetch and
    ListOffsets see afterwards."""
    name = s.name("trimmed")
    create_topic(s, "create", name, partitions=2)
    _three_batches(s, name)
    T0 = s.t0  # noqa: N806
    _delete(s, "to offset 1 (inside batch 1)", name, 1)
    list_offsets(s, "earliest after", name, -2)
    fetch(s, "fetch from 0 (now out of range)", name, 0)
    fetch(s, "fetch from 1", name, 1)
    _delete(s, "backwards to 0", name, 0)
    _delete(s, "past the high watermark", name, 100)
    _delete(s, "to the high watermark (-1)", name, -1)
    list_offsets(s, "earliest at the end", name, -2)
    list_offsets(s, "by timestamp after deletion", name, T0)
    _delete(s, "offset -2", name, -2)
    _delete(s, "unknown partition", name, 0, partition=5)
    _delete(s, "unknown topic", s.name("nope"), 0)
    _delete(s, "empty partition to 0", name, 0, partition=1)


@scenario()
def offset_for_leader_epoch(s: Session) -> None:
    """OffsetForLeaderEpoch v4 from a consumer: the current epoch, an older and a newer one, fencing by
    current_leader_epoch, unknown partitions."""
    name = s.name("epochs")
    empty = s.name("empty")
    create_topic(s, "create", name)
    create_topic(s, "create empty", empty)
    _three_batches(s, name)

    def ask(step: str, epoch: int, current: int = -1, topic: str = name, partition: int = 0) -> None:
        s.request(step, OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}]}]})

    ask("epoch 0", 0)
    ask("epoch 0, current 0", 0, 0)
    ask("epoch 3 (newer than any)", 3)
    ask("epoch -1", -1)
    ask("current epoch 2 (newer)", 0, 2)
    ask("empty partition, epoch 0", 0, topic=empty)
    ask("unknown partition", 0, partition=3)
    ask("unknown topic", 0, topic=s.name("nope"))
    s.request("v2 (oldest served)", OFFSET_FOR_LEADER_EPOCH, 2, {"topics": [{"topic": name, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
