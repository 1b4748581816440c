"""What each Spark task of the read job runs: one kafka-python consumer (no group) assigned one Kafka
partition, reading from its start offset up to the end offset the driver saw. Under read_committed the end is
the last stable offset; aborted records and transaction markers take offsets but are never returned."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from jobs.topics import PartitionRange

# Columns of the DataFrame the read job builds (Spark DDL).
SCHEMA = "partition INT, offset LONG, timestamp TIMESTAMP, key STRING, value STRING"


@dataclass(frozen=True)
class ReaderSettings:
    bootstrap: str
    topic: str
    isolation_level: str = "read_committed"
    idle_timeout: float = 60.0  # give up when the position has not moved for this long


def read_partitions(settings: ReaderSettings, ranges: Iterable[PartitionRange]) -> Iterator[tuple]:
    """The task body for `mapPartitions` over PartitionRanges: yields SCHEMA tuples."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=settings.bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=settings.isolation_level, max_poll_records=5000)
    try:
        for r in ranges:
            yield from _read_range(consumer, settings, r)
    finally:
        consumer.close(autocommit=False)


def _read_range(consumer, settings: ReaderSettings, r: PartitionRange) -> Iterator[tuple]:
    from datetime import UTC, datetime

    from kafka import TopicPartition

    if r.end <= r.start:
        return
    tp = TopicPartition(settings.topic, r.partition)
    consumer.assign([tp])
    consumer.seek(tp, r.start)
    last_progress, position = time.monotonic(), r.start
    while position < r.end:
        for record in consumer.poll(timeout_ms=500).get(tp, []):
            if record.offset >= r.end:
                break
            key = None if record.key is None else record.key.decode()
            value = None if record.value is None else record.value.decode()
            ts = datetime.fromtimestamp(record.timestamp / 1000, tz=UTC)
            yield (r.partition, record.offset, ts, key, value)
        new_position = consumer.position(tp)
        if new_position != position:
            position, last_progress = new_position, time.monotonic()
        elif time.monotonic() - last_progress > settings.idle_timeout:
            raise TimeoutError(f"{tp} stuck at offset {position} (reading up to {r.end})")
