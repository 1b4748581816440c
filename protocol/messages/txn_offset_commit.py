"""TxnOffsetCommit v0-6: hand-written request decoder and response encoder (a transaction's consumed offsets;
the construct specs stay the reference the tests compare them with). v3+ are flexible and name the group
member (KIP-447); v6 names topics by id (KIP-848's version of the group protocol: topic names are then "")."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, Reader, count, string

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 3
LEADER_EPOCH_FROM = 2
MEMBER_FROM = 3
TOPIC_IDS_FROM = 6
ZERO_UUID = uuid.UUID(int=0)


@dataclass(slots=True)
class TxnOffsetCommitRequestPartition:
    """One partition's offset to commit with the transaction."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None


@dataclass(slots=True)
class TxnOffsetCommitRequestTopic:
    """A topic's offsets ("" for a name and the id from v6, else the name and a zero id)."""

    name: str
    topic_id: uuid.UUID
    partitions: list[TxnOffsetCommitRequestPartition]


@dataclass(slots=True)
class TxnOffsetCommitRequest:
    """A TxnOffsetCommit request's fields (the member's before v3 at the generic codec's defaults)."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    topics: list[TxnOffsetCommitRequestTopic] = field(default_factory=list)


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None
                   ) -> TxnOffsetCommitRequest:
    """TxnOffsetCommit request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = TxnOffsetCommitRequest(r.string(flex, False), r.string(flex, False), r.i64(), r.i16())
    if version >= MEMBER_FROM:
        req.generation_id_or_member_epoch = r.i32()
        req.member_id = r.string(flex, False)
        req.group_instance_id = r.string(flex, True)
    for _ in range(r.count(flex)):
        if version >= TOPIC_IDS_FROM:
            name, topic_id = "", r.uuid()
        else:
            name, topic_id = r.string(flex, False), ZERO_UUID
        partitions = []
        for _ in range(r.count(flex)):
            index = r.i32()
            committed = r.i64()
            leader_epoch = r.i32() if version >= LEADER_EPOCH_FROM else -1
            partitions.append(TxnOffsetCommitRequestPartition(index, committed, leader_epoch, r.string(flex, True)))
            if flex:
                r.skip_tags()
        if flex:
            r.skip_tags()
        req.topics.append(TxnOffsetCommitRequestTopic(name, topic_id, partitions))
    if flex:
        r.skip_tags()
    return req


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    flex = version >= FLEXIBLE_FROM
    tail = b"\x00" if flex else b""
    topics = body.get("topics") or ()
    out = [I32.pack(body.get("throttle_time_ms", 0)), count(len(topics), flex)]
    for topic in topics:
        out.append(topic.get("topic_id", ZERO_UUID).bytes if version >= TOPIC_IDS_FROM
                   else string(topic["name"], flex))
        partitions = topic["partitions"]
        out.append(count(len(partitions), flex))
        for p in partitions:
            out.append(I32.pack(p["partition_index"]) + I16.pack(p["error_code"]) + tail)
        out.append(tail)
    out.append(tail)
    return b"".join(out)
