"""What the coordinators' internal topics (`__consumer_offsets`, `__transaction_state`, `__share_group_state`)
share: which partition holds a key (Kafka's partitioning by Java string hash), creation on first use, and reading
the stored batches back (broker/services/coordinator_runtime.py replays them)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.services.topics import Partition, Topic, TopicManager

if TYPE_CHECKING:
    from protocol.records import BatchHeader, Record

log = logging.getLogger(__name__)

_READ_CHUNK = 1024 * 1024


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 overflow): Kafka's coordinator partitioning."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=65536)  # asked at every write of a group or transaction: the ids in use recur
def partition_for(key: str, partitions: int) -> int:
    """The coordinator partition of a group or transactional id: Kafka's `Utils.abs(key.hashCode) % n`, where
    Utils.abs is Math.abs with Integer.MIN_VALUE taken to 0 (not the partitioner's `n & 0x7fffffff`: the two
    differ for every negative hash; Kafka 3.9 put group "txn-errors-g" on partition 30, recorded in
    tests/reference/recorded/3.9/txn_errors.json)."""
    h = java_string_hash(key)
    return (0 if h == -(2**31) else abs(h)) % partitions


def internal_topic(topics: TopicManager, name: str, now_ms: int) -> Topic:
    """The topic, created with Kafka's settings for it on first use (Kafka creates it on the first
    FindCoordinator)."""
    topic = topics.get(name)
    if topic is None:
        topic = topics.create(name, now_ms=now_ms)
    return topic


def stored_batches(partition: Partition) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Every batch of the partition with its records, in log order (corrupt batches are logged, skipped)."""
    for chunk in stored_chunks(partition):
        yield from chunk


def stored_chunks(partition: Partition) -> Iterator[list[tuple[BatchHeader, list[Record]]]]:
    """The partition's batches with their records, in log order, a read (up to 1 MiB) at a time: a loader may
    let other tasks run between two (corrupt batches are logged, skipped)."""
    from protocol.records import CorruptRecordError, decode_records, iter_batches  # with the logs, not at startup

    plog = partition.log
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, _READ_CHUNK)
        if not data:
            break
        chunk = []
        for header, start, end in iter_batches(data):
            offset = header.base_offset + header.last_offset_delta + 1
            try:
                records = decode_records(memoryview(data)[start:end])
            except CorruptRecordError as exc:
                log.error("%s-%d: skipping a corrupt batch at %d: %s", partition.topic, partition.index,
                          header.base_offset, exc)
                continue
            chunk.append((header, records))
        yield chunk
