"""AddPartitionsToTxn v0-5: hand-written request decoder and response encoder (a transaction's first request
to its coordinator; the construct specs stay the reference the tests compare them with). v3+ are flexible;
v4+ are brokers' batches of transactions (KIP-890 verification), v0-3 a producer's one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, Reader, count, string

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 3
BATCHED_FROM = 4


@dataclass(slots=True)
class AddPartitionsToTxnTopic:
    """A topic and the partitions to add to the transaction."""

    name: str
    partitions: list[int]


@dataclass(slots=True)
class AddPartitionsToTxnTransaction:
    """v4+: one transaction of a broker's batch."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    verify_only: bool
    topics: list[AddPartitionsToTxnTopic]


@dataclass(slots=True)
class AddPartitionsToTxnRequest:
    """An AddPartitionsToTxn request's fields (those of the other versions at the generic codec's defaults)."""

    transactions: list[AddPartitionsToTxnTransaction] = field(default_factory=list)
    v3_and_below_transactional_id: str = ""
    v3_and_below_producer_id: int = 0
    v3_and_below_producer_epoch: int = 0
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = field(default_factory=list)


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None
                   ) -> AddPartitionsToTxnRequest:
    """AddPartitionsToTxn request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = AddPartitionsToTxnRequest()
    if version >= BATCHED_FROM:
        for _ in range(r.count(flex)):
            transaction = AddPartitionsToTxnTransaction(r.string(flex, False), r.i64(), r.i16(), r.i8() != 0,
                                                        _topics(r, flex))
            if flex:
                r.skip_tags()
            req.transactions.append(transaction)
    else:
        req.v3_and_below_transactional_id = r.string(flex, False)
        req.v3_and_below_producer_id = r.i64()
        req.v3_and_below_producer_epoch = r.i16()
        req.v3_and_below_topics = _topics(r, flex)
    if flex:
        r.skip_tags()
    return req


def _topics(r: Reader, flex: bool) -> list[AddPartitionsToTxnTopic]:
    topics = []
    for _ in range(r.count(flex)):
        name = r.string(flex, False)
        partitions = [r.i32() for _ in range(r.count(flex))]
        if flex:
            r.skip_tags()
        topics.append(AddPartitionsToTxnTopic(name, partitions))
    return topics


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    flex = version >= FLEXIBLE_FROM
    tail = b"\x00" if flex else b""
    out = [I32.pack(body.get("throttle_time_ms", 0))]
    if version >= BATCHED_FROM:
        out.append(I16.pack(body.get("error_code", 0)))
        results = body.get("results_by_transaction") or ()
        out.append(count(len(results), flex))
        for result in results:
            out.append(string(result["transactional_id"], flex))
            _topic_results(out, result["topic_results"], flex)
            out.append(tail)
    else:
        _topic_results(out, body.get("results_by_topic_v3_and_below") or (), flex)
    out.append(tail)
    return b"".join(out)


def _topic_results(out: list[bytes], topics: Any, flex: bool) -> None:
    tail = b"\x00" if flex else b""
    out.append(count(len(topics), flex))
    for topic in topics:
        out.append(string(topic["name"], flex))
        partitions = topic["results_by_partition"]
        out.append(count(len(partitions), flex))
        for p in partitions:
            out.append(I32.pack(p["partition_index"]) + I16.pack(p["partition_error_code"]) + tail)
        out.append(tail)
