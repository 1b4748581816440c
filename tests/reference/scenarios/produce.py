"""Produce's error paths: record too large, corrupt CRC, keyless records on a compacted topic, timestamps out
of range, bad compression, bad acks, unknown partitions, malformed record sets; idempotence's errors."""

from __future__ import annotations

import struct

from protocol.records import COMPRESSION_GZIP, CRC_OFFSET
from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    INIT_PRODUCER_ID,
    batch,
    create_topic,
    fetch,
    now_ms,
    produce,
)


def _with_attributes(data: bytes, attributes: int) -> bytes:
    """The batch with other attributes and its CRC recomputed (a well-formed batch claiming them)."""
    from protocol.records import ATTRIBUTES_OFFSET, compute_crc

    buf = bytearray(data)
    struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, attributes)
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
    return bytes(buf)


@scenario()
def produce_errors(s: Session) -> None:
    """Produce v9 error paths on a topic with small limits, a compacted topic and a plain one."""
    plain, small, compacted = s.name("plain"), s.name("small"), s.name("compacted")
    create_topic(s, "create plain", plain, partitions=2)
    create_topic(s, "create small", small, config={"max.message.bytes": "1000"})
    create_topic(s, "create compacted", compacted, config={"cleanup.policy": "compact"})
    produce(s, "good", plain, batch([b"a", b"b"], [b"k1", None]))
    produce(s, "good, partition 1, acks=1", plain, batch([b"c"]), partition=1, acks=1)
    produce(s, "v3 (oldest served)", plain, batch([b"d"]), version=3)
    produce(s, "batch over max.message.bytes", small, batch([b"x" * 2000]))
    produce(s, "many records over max.message.bytes", small, batch([b"y" * 100] * 20))
    produce(s, "just under max.message.bytes", small, batch([b"z" * 900]))
    corrupt = bytearray(batch([b"crc"]))
    corrupt[-1] ^= 0xFF
    produce(s, "corrupt CRC", plain, bytes(corrupt))
    produce(s, "keyless record on a compacted topic", compacted, batch([b"v1", b"v2", b"v3"], [b"k", None, b"k"]))
    produce(s, "keyed records on a compacted topic", compacted, batch([b"v1"], [b"k"]))
    produce(s, "unknown codec 5", plain, _with_attributes(batch([b"codec"]), 5))
    create_topic(s, "create bad-gzip", s.name("bad-gzip"))
    produce(s, "gzip flag on plain bytes", s.name("bad-gzip"), _with_attributes(batch([b"not gzip"]),
                                                                               COMPRESSION_GZIP))
    produce(s, "gzip", plain, batch([b"g1", b"g2"], compression=COMPRESSION_GZIP))
    produce(s, "acks=2", plain, batch([b"e"]), acks=2)
    produce(s, "unknown partition", plain, batch([b"f"]), partition=7)
    produce(s, "negative partition", plain, batch([b"f"]), partition=-1)
    produce(s, "null records", plain, None)
    produce(s, "empty records", plain, b"")
    produce(s, "two batches in one request", plain, batch([b"h"]) + batch([b"i"]))
    produce(s, "truncated batch", plain, batch([b"trunc"])[:-3])
    produce(s, "control batch from a client", plain, batch([b"\x00\x00\x00\x01"], [b"\x00\x00\x00\x00"],
                                                            is_control=True, is_transactional=True,
                                                            producer_id=1, producer_epoch=0))
    fetch(s, "what was stored", plain, 0)


@scenario()
def produce_timestamps(s: Session) -> None:
    """Timestamps out of a topic's range (message.timestamp.before/after.max.ms), LogAppendTime topics."""
    strict, append = s.name("strict"), s.name("append-time")
    create_topic(s, "create strict", strict, config={"message.timestamp.before.max.ms": "3600000",
                                                     "message.timestamp.after.max.ms": "3600000"})
    create_topic(s, "create append-time", append, config={"message.timestamp.type": "LogAppendTime"})
    now = now_ms()
    produce(s, "now", strict, batch([b"now"], timestamp=now))
    produce(s, "two days old", strict, batch([b"old"], timestamp=now - 2 * 86_400_000))
    produce(s, "two days ahead", strict, batch([b"future"], timestamp=now + 2 * 86_400_000))
    produce(s, "second record two days old", strict, batch([b"ok", b"old"], timestamp=now,
                                                            step_ms=-2 * 86_400_000))
    produce(s, "log append time", append, batch([b"a"], timestamp=1))
    fetch(s, "log append time stored", append, 0)
    produce(s, "year 2100", strict, batch([b"y2100"], timestamp=4_102_444_800_000))


@scenario()
def produce_default_timestamp_limits(s: Session) -> None:
    """The default timestamp limits of the release: a record from the far past and one from the far future."""
    name = s.name("defaults")
    create_topic(s, "create", name)
    produce(s, "year 2000", name, batch([b"old"], timestamp=946_684_800_000))
    produce(s, "two days ahead", name, batch([b"soon"], timestamp=now_ms() + 2 * 86_400_000))
    produce(s, "year 2100", name, batch([b"future"], timestamp=4_102_444_800_000))


@scenario()
def produce_idempotent(s: Session) -> None:
    """Idempotent producer: in order, duplicate, gap, old epoch, unknown producer id."""
    name = s.name("idem")
    create_topic(s, "create", name)
    init = s.request("init producer id", INIT_PRODUCER_ID, 4, {"transactional_id": None,
                                                               "transaction_timeout_ms": 60000,
                                                               "producer_id": -1, "producer_epoch": -1})
    pid, epoch = (init["producer_id"], init["producer_epoch"]) if init else (0, 0)
    produce(s, "seq 0", name, batch([b"0", b"1"], producer_id=pid, producer_epoch=epoch, base_sequence=0))
    produce(s, "seq 2", name, batch([b"2"], producer_id=pid, producer_epoch=epoch, base_sequence=2))
    produce(s, "duplicate of seq 0", name, batch([b"0", b"1"], producer_id=pid, producer_epoch=epoch,
                                                   base_sequence=0))
    produce(s, "gap: seq 5", name, batch([b"5"], producer_id=pid, producer_epoch=epoch, base_sequence=5))
    produce(s, "newer epoch, seq 0", name, batch([b"n"], producer_id=pid, producer_epoch=epoch + 1,
                                                 base_sequence=0))
    produce(s, "older epoch", name, batch([b"e"], producer_id=pid, producer_epoch=epoch, base_sequence=3))
    produce(s, "newer epoch, seq 7", name, batch([b"m"], producer_id=pid, producer_epoch=epoch + 2,
                                                 base_sequence=7))
    produce(s, "unknown producer, seq 0", name, batch([b"u"], producer_id=pid + 12345, producer_epoch=0,
                                                      base_sequence=0))
    produce(s, "unknown producer, seq 9", name, batch([b"u"], producer_id=pid + 54321, producer_epoch=0,
                                                      base_sequence=9))
    s.request("init with a known id and epoch (KIP-360)", INIT_PRODUCER_ID, 4, {
        "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": epoch + 1})
    s.request("init with a wrong epoch", INIT_PRODUCER_ID, 4, {
        "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": 77})
    fetch(s, "stored", name, 0)


def _with_payload(data: bytes, payload: bytes, records_count: int | None = None) -> bytes:
    """The batch with another records section (its length, record count and CRC made consistent): a
    well-formed batch around a payload that is not what it claims."""
    from protocol.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, compute_crc

    buf = bytearray(data[:BATCH_HEADER_SIZE] + payload)
    struct.pack_into(">i", buf, 8, len(buf) - LOG_OVERHEAD)
    if records_count is not None:
        struct.pack_into(">i", buf, 23, records_count - 1)  # last offset delta
        struct.pack_into(">i", buf, 57, records_count)
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
    return bytes(buf)


@scenario(releases=("3.9", "4.4"))
def produce_corrupt_compressed(s: Session) -> None:
    """Batches of every codec whose payload is not what the batch claims, each refused and none stored: plain
    bytes flagged as compressed, a compressed payload cut short, records cut short inside a valid compressed
    payload, more records claimed than compressed, bytes left after the last record; good batches between."""
    from protocol.records import BATCH_HEADER_SIZE, COMPRESSION_NAMES, compress

    for codec in (1, 2, 3, 4):
        name = COMPRESSION_NAMES[codec]
        topic = s.name(f"bad-{name}")
        create_topic(s, f"create {name}", topic)
        good = batch([b"v1", b"v2"], [b"k1", b"k2"])
        records = good[BATCH_HEADER_SIZE:]
        flagged = _with_attributes(good, codec)
        produce(s, f"{name}: good", topic, batch([b"g1", b"g2"], compression=codec))
        produce(s, f"{name}: plain bytes flagged {name}", topic, flagged)
        valid = compress(codec, records)
        produce(s, f"{name}: payload cut short", topic, _with_payload(flagged, valid[:len(valid) // 2]))
        produce(s, f"{name}: records cut short", topic, _with_payload(flagged, compress(codec, records[:-3])))
        produce(s, f"{name}: more records claimed", topic, _with_payload(flagged, valid, records_count=3))
        produce(s, f"{name}: bytes after the last record", topic,
                _with_payload(flagged, compress(codec, records + b"\x00\x00"), records_count=2))
        produce(s, f"{name}: good again", topic, batch([b"g3"], compression=codec))
        fetch(s, f"{name}: what was stored", topic, 0)
