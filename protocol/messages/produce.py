"""Produce v0-13: hand-written request decoder and response encoder (the hottest path).

v0-2 carry message sets of format v0/v1 (served by the 3.x profiles) and have no transactional id; v12 is
v11 (KIP-890: it only tells the broker the client may rely on transaction version 2); v13 names topics by
id instead of by name (KIP-516)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol.errors import DecodeLimits
from protocol.messages.wire import I16, I32, I64, Reader, bytes_, count, string

FLEXIBLE_FROM = 9
TOPIC_IDS_FROM = 13
ZERO_UUID = uuid.UUID(int=0)
UNSUPPORTED_VERSION = 35


@dataclass(slots=True)
class PartitionProduceData:
    index: int
    records: bytes | None


@dataclass(slots=True)
class TopicProduceData:
    name: str  # "" from v13 until the handler resolves topic_id
    partition_data: list[PartitionProduceData]
    topic_id: uuid.UUID = ZERO_UUID


@dataclass(slots=True)
class ProduceRequest:
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[TopicProduceData]


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None) -> ProduceRequest:
    """Produce request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    by_id = version >= TOPIC_IDS_FROM
    transactional_id = r.string(flex, True) if version >= 3 else None
    acks = r.i16()
    timeout_ms = r.i32()
    topics = []
    for _ in range(r.count(flex)):
        if by_id:
            name, topic_id = "", r.uuid()
        else:
            name, topic_id = r.string(flex, False), ZERO_UUID
        partitions = []
        for _ in range(r.count(flex)):
            index = r.i32()
            records = r.bytes(flex, True)
            if flex:
                r.skip_tags()
            partitions.append(PartitionProduceData(index, records))
        if flex:
            r.skip_tags()
        topics.append(TopicProduceData(name, partitions, topic_id))
    if flex:
        r.skip_tags()
    return ProduceRequest(transactional_id, acks, timeout_ms, topics)


def _needs_generic(body: Mapping[str, Any]) -> bool:
    if body.get("node_endpoints"):
        return True
    return any(p.get("current_leader") for t in body["responses"] for p in t["partition_responses"])


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    if _needs_generic(body):
        from protocol.schema import message

        return message("ProduceResponse").encode(version, body)
    flex = version >= FLEXIBLE_FROM
    by_id = version >= TOPIC_IDS_FROM
    out = [count(len(body["responses"]), flex)]
    for topic in body["responses"]:
        out.append(topic["topic_id"].bytes if by_id else string(topic["name"], flex))
        out.append(count(len(topic["partition_responses"]), flex))
        for p in topic["partition_responses"]:
            out.append(I32.pack(p["index"]) + I16.pack(p["error_code"]) + I64.pack(p["base_offset"]))
            if version >= 2:
                out.append(I64.pack(p.get("log_append_time_ms", -1)))
            if version >= 5:
                out.append(I64.pack(p.get("log_start_offset", -1)))
            if version >= 8:
                errors = p.get("record_errors") or []
                out.append(count(len(errors), flex))
                for e in errors:
                    out.append(I32.pack(e["batch_index"]))
                    out.append(string(e.get("batch_index_error_message"), flex))
                    if flex:
                        out.append(b"\x00")
                out.append(string(p.get("error_message"), flex))
            if flex:
                out.append(b"\x00")
        if flex:
            out.append(b"\x00")
    if version >= 1:
        out.append(I32.pack(body.get("throttle_time_ms", 0)))
    if flex:
        out.append(b"\x00")
    return b"".join(out)


__all__ = ["ProduceRequest", "TopicProduceData", "PartitionProduceData", "decode_request", "encode_response",
           "bytes_"]
