"""Fetch: stored batches straight from the log, long polling until min_bytes or max_wait_ms.

Fetch sessions (KIP-227) are optional for a broker: we answer session id 0 ("no session"), so clients
keep sending full fetch requests, as with a Kafka broker whose session cache is full.

read_committed (KIP-98): whole batches below the last stable offset only, with the aborted transactions
that overlap the returned range (Kafka's UnifiedLog.read with FetchIsolation.TXN_COMMITTED and
collectAbortedTransactions); the long poll counts only those bytes, so it waits behind an open
transaction until its marker is appended. Every partition reports the LSO.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import trio

from broker.handlers.context import RequestContext
from broker.log.partition_log import OffsetOutOfRangeError
from broker.security.access import AclOperation, ResourceType, authorized
from protocol.header import ErrorCode

READ_COMMITTED = 1
ZERO_UUID = uuid.UUID(int=0)
_FRAME = struct.Struct(">qi")  # base offset, batch length
_LAST_OFFSET_DELTA = struct.Struct(">i")


def _partition_error(index: int, error: ErrorCode, hw: int = -1, log_start: int = -1,
                     lso: int | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "high_watermark": hw,
            "last_stable_offset": hw if lso is None else lso, "log_start_offset": log_start,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}


def _end_offset(records: bytes) -> int:
    """The offset after the last of the whole stored batches in `records` (batch frames only)."""
    pos, n, last = 0, len(records), 0
    while pos + 12 <= n:
        last = pos
        pos += 12 + _FRAME.unpack_from(records, pos)[1]
    base = _FRAME.unpack_from(records, last)[0]
    return base + _LAST_OFFSET_DELTA.unpack_from(records, last + 23)[0] + 1


def _read(ctx: RequestContext, req: Any, readable: dict[str, bool]) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the requested partitions: (topic responses, bytes read, any error)."""
    broker = ctx.broker
    version = ctx.header.api_version
    read_committed = version >= 4 and req.isolation_level == READ_COMMITTED
    remaining = req.max_bytes if version >= 3 else broker.config.fetch_max_bytes
    remaining = min(remaining, broker.config.fetch_max_bytes)
    min_one = True  # KIP-74: the first non-empty partition returns at least one whole batch
    total = 0
    any_error = False
    responses = []
    for fetch_topic in req.topics:
        if version >= 13:
            topic = broker.topics.get_by_id(fetch_topic.topic_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic = broker.topics.get(fetch_topic.topic)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        name = topic.name if topic is not None else fetch_topic.topic if version < 13 else None
        if name is not None and name not in readable:  # READ on the topic, asked once per request
            readable[name] = authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        partitions = []
        for fp in fetch_topic.partitions:
            if name is not None and not readable[name]:
                partitions.append(_partition_error(fp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                any_error = True
                continue
            if topic is None or not 0 <= fp.partition < len(topic.partitions):
                partitions.append(_partition_error(fp.partition, missing))
                any_error = True
                continue
            partition = topic.partitions[fp.partition]
            log = partition.log
            hw = log.log_end_offset
            producers = partition.producers
            lso = producers.last_stable_offset(hw, log.log_start_offset) if producers.ongoing_txns else hw
            if version >= 9 and fp.current_leader_epoch > 0:
                # Our leader epoch is always 0; a newer one means the client knows a future leader.
                partitions.append(_partition_error(fp.partition, ErrorCode.UNKNOWN_LEADER_EPOCH, hw,
                                                   log.log_start_offset, lso))
                any_error = True
                continue
            try:
                records = log.read(fp.fetch_offset, min(fp.partition_max_bytes, remaining), min_one=min_one,
                                   max_offset=lso if read_committed else hw)
            except OffsetOutOfRangeError:
                partitions.append(_partition_error(fp.partition, ErrorCode.OFFSET_OUT_OF_RANGE, hw,
                                                   log.log_start_offset, lso))
                any_error = True
                continue
            size = len(records)
            aborted = None
            if read_committed:
                aborted = []
                if size and producers.aborted and producers.aborted[-1].last_offset >= fp.fetch_offset:
                    aborted = [{"producer_id": pid, "first_offset": first} for pid, first
                               in producers.aborted_transactions(fp.fetch_offset, _end_offset(records))]
            if size:
                min_one = False
                total += size
                remaining = max(0, remaining - size)
            partitions.append({
                "partition_index": fp.partition, "error_code": ErrorCode.NONE, "high_watermark": hw,
                "last_stable_offset": lso, "log_start_offset": log.log_start_offset,
                "aborted_transactions": aborted, "preferred_read_replica": -1, "records": records,
            })
        responses.append({"topic": fetch_topic.topic if version < 13 else None,
                          "topic_id": fetch_topic.topic_id if version >= 13 else ZERO_UUID,
                          "partitions": partitions})
    return responses, total, any_error


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if version >= 7 and req.session_id != 0:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                "session_id": 0, "responses": [], "node_endpoints": []}
    broker = ctx.broker
    deadline = trio.current_time() + max(0, req.max_wait_ms) / 1000
    readable: dict[str, bool] = {}
    while True:
        woken = broker.appends.event  # taken before reading, so no append between is missed
        responses, total, any_error = _read(ctx, req, readable)
        if total >= req.min_bytes or any_error or trio.current_time() >= deadline:
            break
        with trio.move_on_at(deadline):
            await woken.wait()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses,
            "node_endpoints": []}
