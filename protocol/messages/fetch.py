"""Fetch v0-18: hand-written request decoder and response encoder (records are passed through as
they are given: stored batches, or for v0-3 the message sets they were down-converted to)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import DecodeLimits
from protocol.messages.wire import I16, I32, I64, Reader, bytes_, count, string

FLEXIBLE_FROM = 12
ZERO_UUID = uuid.UUID(int=0)


@dataclass(slots=True)
class FetchPartition:
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


@dataclass(slots=True)
class FetchTopic:
    topic: str
    topic_id: uuid.UUID
    partitions: list[FetchPartition]


@dataclass(slots=True)
class ForgottenTopic:
    topic: str
    topic_id: uuid.UUID
    partitions: list[int]


@dataclass(slots=True)
class FetchRequest:
    cluster_id: str | None = None
    replica_id: int = -1
    max_wait_ms: int = 0
    min_bytes: int = 0
    max_bytes: int = 0x7FFFFFFF
    isolation_level: int = 0
    session_id: int = 0
    session_epoch: int = -1
    topics: list[FetchTopic] = field(default_factory=list)
    forgotten_topics_data: list[ForgottenTopic] = field(default_factory=list)
    rack_id: str = ""


def _request_tags(r: Reader, req: FetchRequest) -> None:
    for _ in range(r.tag_count()):
        tag = r.uvarint()
        size = r.uvarint()
        end = r.pos + size
        if tag == 0:  # cluster_id
            req.cluster_id = r.string(True, True)
        r._take(end - r.pos)  # replica_state (tag 1) and unknown tags are not used by a single broker


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None) -> FetchRequest:
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = FetchRequest()
    if version <= 14:
        req.replica_id = r.i32()
    req.max_wait_ms = r.i32()
    req.min_bytes = r.i32()
    if version >= 3:
        req.max_bytes = r.i32()
    if version >= 4:
        req.isolation_level = r.i8()
    if version >= 7:
        req.session_id = r.i32()
        req.session_epoch = r.i32()
    for _ in range(r.count(flex)):
        name = r.string(flex, False) if version <= 12 else ""
        topic_id = r.uuid() if version >= 13 else ZERO_UUID
        partitions = []
        for _ in range(r.count(flex)):
            partition = r.i32()
            leader_epoch = r.i32() if version >= 9 else -1
            fetch_offset = r.i64()
            last_fetched_epoch = r.i32() if version >= 12 else -1
            log_start_offset = r.i64() if version >= 5 else -1
            max_bytes = r.i32()
            if flex:
                r.skip_tags()
            partitions.append(FetchPartition(partition, leader_epoch, fetch_offset, last_fetched_epoch,
                                             log_start_offset, max_bytes))
        if flex:
            r.skip_tags()
        req.topics.append(FetchTopic(name, topic_id, partitions))
    if version >= 7:
        for _ in range(r.count(flex)):
            name = r.string(flex, False) if version <= 12 else ""
            topic_id = r.uuid() if version >= 13 else ZERO_UUID
            partitions = [r.i32() for _ in range(r.count(flex))]
            if flex:
                r.skip_tags()
            req.forgotten_topics_data.append(ForgottenTopic(name, topic_id, partitions))
    if version >= 11:
        req.rack_id = r.string(flex, False)
    if flex:
        _request_tags(r, req)
    return req


def _needs_generic(body: Mapping[str, Any]) -> bool:
    if body.get("node_endpoints"):
        return True
    for t in body["responses"]:
        for p in t["partitions"]:
            if p.get("diverging_epoch") or p.get("current_leader") or p.get("snapshot_id"):
                return True
    return False


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    if _needs_generic(body):
        from protocol.schema import message

        return message("FetchResponse").encode(version, body)
    flex = version >= FLEXIBLE_FROM
    out = [I32.pack(body.get("throttle_time_ms", 0))] if version >= 1 else []
    if version >= 7:
        out.append(I16.pack(body.get("error_code", 0)) + I32.pack(body.get("session_id", 0)))
    out.append(count(len(body["responses"]), flex))
    for t in body["responses"]:
        if version <= 12:
            out.append(string(t["topic"], flex))
        else:
            out.append((t.get("topic_id") or ZERO_UUID).bytes)
        out.append(count(len(t["partitions"]), flex))
        for p in t["partitions"]:
            out.append(I32.pack(p["partition_index"]) + I16.pack(p["error_code"]) + I64.pack(p["high_watermark"]))
            if version >= 4:
                out.append(I64.pack(p.get("last_stable_offset", -1)))
                if version >= 5:
                    out.append(I64.pack(p.get("log_start_offset", -1)))
                aborted = p.get("aborted_transactions")
                out.append(count(None if aborted is None else len(aborted), flex))
                for a in aborted or ():
                    out.append(I64.pack(a["producer_id"]) + I64.pack(a["first_offset"]))
                    if flex:
                        out.append(b"\x00")
            if version >= 11:
                out.append(I32.pack(p.get("preferred_read_replica", -1)))
            out.append(bytes_(p.get("records"), flex))
            if flex:
                out.append(b"\x00")
        if flex:
            out.append(b"\x00")
    if flex:
        out.append(b"\x00")
    return b"".join(out)
