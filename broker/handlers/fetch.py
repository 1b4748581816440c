"""Fetch: stored batches straight from the log, long polling until min_bytes or max_wait_ms.

Fetch sessions (KIP-227, broker.services.fetch_sessions): a Fetch v7+ that opens one is answered with its
id, and the session's incremental fetches read every partition of the session and answer only those with
something new. A fetch that neither names nor wants a session (v0-6; a follower's or librdkafka's: session 0 at
the final epoch) reads the request's partitions and nothing else.

read_committed (KIP-98): whole batches below the last stable offset only, with the aborted transactions
that overlap the returned range (Kafka's UnifiedLog.read with FetchIsolation.TXN_COMMITTED and
collectAbortedTransactions); the long poll counts only those bytes, so it waits behind an open
transaction until its marker is appended. Every partition reports the LSO.

Fetch v0-3 (3.x profiles) cannot read record batch v2: after the read, their records are down-converted
(v0-1 to message format v0, v2-3 to v1; protocol.conversion.lazy_down_convert, Kafka's KIP-283 lazy
down-conversion) unless the topic's message.downconversion.enable is false (UNSUPPORTED_VERSION). That
happens only for those versions, after the long poll, so v4+ fetches pay nothing for it. v0-2 have no
KIP-74: a first batch larger than the limit is not returned (Kafka sends a part of it, which an old client
cannot read either).
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import trio

from broker.handlers.context import LATER, RequestContext
from broker.handlers.leader_hints import add_leader_hints
from broker.log.partition_log import OffsetOutOfRangeError
from broker.security.access import AclOperation, ResourceType, authorized, cluster_authorized
from broker.services.fetch_sessions import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    TOPIC_IDS_FROM,
    CachedPartition,
    ContextKind,
    FetchContext,
    is_full,
    new_context,
)
from protocol.header import ErrorCode
from protocol.messages.fetch import FetchTopic

READ_COMMITTED = 1
ZERO_UUID = uuid.UUID(int=0)
DOWN_CONVERT_BELOW = 4  # Fetch v0-3 read message format v0 (v0-1) or v1 (v2-3)
SESSIONS_FROM = 7  # KIP-227
_FRAME = struct.Struct(">qi")  # base offset, batch length
_LAST_OFFSET_DELTA = struct.Struct(">i")


def _partition_error(index: int, error: ErrorCode, aborted: list[Any] | None = None) -> dict[str, Any]:
    """A partition that could not be read: Kafka gives no offsets with the error (high watermark, last
    stable and log start offsets -1); an unknown partition has an empty aborted list, a failed read none."""
    return {"partition_index": index, "error_code": error, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": aborted, "preferred_read_replica": -1, "records": b""}


def _end_offset(records: bytes) -> int:
    """The offset after the last of the whole stored batches in `records` (batch frames only)."""
    pos, n, last = 0, len(records), 0
    while pos + 12 <= n:
        last = pos
        pos += 12 + _FRAME.unpack_from(records, pos)[1]
    base = _FRAME.unpack_from(records, last)[0]
    return base + _LAST_OFFSET_DELTA.unpack_from(records, last + 23)[0] + 1


def _read(ctx: RequestContext, req: Any, topics: list[Any], readable: dict[str, bool],
          incremental: bool = False) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the partitions to read (`topics`: the request's, or its session's): (topic responses,
    bytes read, any error). `incremental` (a session's fetch, its partitions the session's CachedPartitions):
    a partition with nothing new since the session last told about it (no records, the same high watermark
    and log start offset) is None rather than an answer that the session would leave out anyway."""
    broker = ctx.broker
    version = ctx.header.api_version
    read_committed = version >= 4 and req.isolation_level == READ_COMMITTED
    remaining = req.max_bytes if version >= 3 else broker.config.fetch_max_bytes
    remaining = min(remaining, broker.config.fetch_max_bytes)
    replica_id = req.replica_id  # a follower's fetch (>= 0) reads up to the log end, and reports its progress
    replicas = broker.replicas if replica_id >= 0 else None  # in a cluster, a follower's fetch
    follower = replicas is not None
    min_one = version >= 3  # KIP-74 (v3+): the first non-empty partition returns at least one whole batch
    total = 0
    any_error = False
    responses = []
    for fetch_topic in topics:
        if version >= 13:
            topic = broker.topics.get_by_id(fetch_topic.topic_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic = broker.topics.get(fetch_topic.topic)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        name = topic.name if topic is not None else fetch_topic.topic if version < 13 else None
        if name is not None and name not in readable:  # READ on the topic, asked once per request
            readable[name] = cluster_authorized(ctx, AclOperation.CLUSTER_ACTION) if follower else \
                authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        partitions = []
        for fp in fetch_topic.partitions:
            if name is not None and not readable[name]:
                partitions.append(_partition_error(fp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED, []))
                any_error = True
                continue
            if topic is None:
                partitions.append(_partition_error(fp.partition, missing, []))
                any_error = True
                continue
            partition = broker.topics.leader_partition(topic.name, fp.partition)
            if isinstance(partition, ErrorCode):
                # A partition the topic does not have: an empty aborted list, as for an unknown topic.
                unknown = partition == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                partitions.append(_partition_error(fp.partition, partition, [] if unknown else None))
                any_error = True
                continue
            log = partition.log
            hw = partition.high_watermark
            producers = partition.producers
            lso = producers.last_stable_offset(hw, log.log_start_offset) if producers.ongoing_txns else hw
            epoch_error = broker.topics.check_leader_epoch(partition, fp.current_leader_epoch) if version >= 9 \
                else ErrorCode.NONE
            if epoch_error:
                partitions.append(_partition_error(fp.partition, epoch_error))
                any_error = True
                continue
            if replicas is not None:
                replicas.follower_fetched(partition, replica_id, fp.fetch_offset, -1)
            upper = None if follower else lso if read_committed else hw
            if incremental and fp.fetch_offset == upper and hw == fp.high_watermark and \
                    log.log_start_offset == fp.local_log_start_offset and upper <= log.log_end_offset:
                partitions.append(None)  # nothing to read, nothing the session was not told: not read
                continue
            try:
                records = log.read(fp.fetch_offset, min(fp.partition_max_bytes, remaining), min_one=min_one,
                                   max_offset=upper)
            except OffsetOutOfRangeError:
                partitions.append(_partition_error(fp.partition, ErrorCode.OFFSET_OUT_OF_RANGE))
                any_error = True
                continue
            size = len(records)
            if incremental and not size and hw == fp.high_watermark and log.log_start_offset == \
                    fp.local_log_start_offset:
                partitions.append(None)
                continue
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


def _has_news(ctx: RequestContext, req: Any, topics: list[Any], readable: dict[str, bool]) -> bool:
    """Whether a read of `topics` may return records or an error: a partition whose fetch offset is below
    what it may read up to (the high watermark, the last stable offset for read_committed), or one the read
    would answer with an error (unknown, not readable, not led here, another leader epoch, an offset out of
    range: `_read` finds out which). False means `_read` would return nothing at all: a waiting fetch looks
    here, not at every partition's log, until something is appended where it reads (a fetch session's 1,000
    partitions)."""
    broker = ctx.broker
    version = ctx.header.api_version
    read_committed = version >= 4 and req.isolation_level == READ_COMMITTED
    follower = req.replica_id >= 0 and broker.replicas is not None  # reads up to the log end
    epochs = version >= 9
    topics_by = broker.topics
    if topics_by.log_dir_offline:
        return True
    node_id = topics_by.node_id
    for fetch_topic in topics:
        topic = topics_by.get_by_id(fetch_topic.topic_id) if version >= 13 else topics_by.get(fetch_topic.topic)
        if topic is None:
            return True
        name = topic.name
        if name not in readable:  # READ on the topic (a follower: CLUSTER_ACTION), asked once per request
            readable[name] = cluster_authorized(ctx, AclOperation.CLUSTER_ACTION) if follower else \
                authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        if not readable[name]:
            return True
        hosted = topic.partitions
        count = len(hosted)
        for fp in fetch_topic.partitions:
            index = fp.partition
            if not 0 <= index < count:
                return True
            partition = hosted[index]
            log = partition.log
            if log is None or partition.leader != node_id:
                return True
            if epochs and fp.current_leader_epoch >= 0 and fp.current_leader_epoch != partition.leader_epoch:
                return True
            offset = fp.fetch_offset
            end = log.log_end_offset
            if not follower:
                if partition.replicated_hw is not None:
                    end = partition.replicated_hw
                if read_committed and partition.producers.ongoing_txns:
                    end = partition.producers.last_stable_offset(end, log.log_start_offset)
            if offset < end or offset < log.log_start_offset or offset > log.log_end_offset:
                return True
    return False


def handle_now(ctx: RequestContext, req: Any) -> dict[str, Any] | object:
    """The answer without a task of its own when the data is there (or the client does not wait); else
    LATER, and `handle` long-polls (the session context is made again there: it changes nothing until the
    answer). A consumer's fetch with nothing to read goes there without reading (a follower's reads now: its
    fetch reports how far it has got), and so does a session's incremental fetch that may wait: it comes right
    after the previous answer and mostly waits, and its task would look at every partition of the session
    again."""
    if req.max_wait_ms > 0 and req.session_id != INVALID_SESSION_ID and not is_full(req.session_epoch) and \
            ctx.header.api_version >= SESSIONS_FROM:
        return LATER
    context = _context(ctx, req)
    if context is not None and context.kind is ContextKind.SESSION_ERROR:
        return _session_error(context.error)
    topics = _topics(req, context)
    readable: dict[str, bool] = {}
    if req.max_wait_ms > 0 and req.replica_id < 0 and not _has_news(ctx, req, topics, readable):
        return LATER
    responses, total, any_error = _read(ctx, req, topics, readable, _incremental(context))
    if total >= req.min_bytes or any_error or req.max_wait_ms <= 0:
        return _answer(ctx, req, responses, any_error, context)
    return LATER


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    context = _context(ctx, req)
    if context is not None and context.kind is ContextKind.SESSION_ERROR:
        return _session_error(context.error)
    topics = _topics(req, context)
    broker = ctx.broker
    deadline = trio.current_time() + max(0, req.max_wait_ms) / 1000
    readable: dict[str, bool] = {}
    reported = req.replica_id < 0  # a follower's first read tells the leader its position
    while True:
        woken = broker.appends.event  # taken before looking, so no append between is missed
        late = trio.current_time() >= deadline
        # Read when there may be something to read, and once at the end for the answer.
        if late or not reported or _has_news(ctx, req, topics, readable):
            responses, total, any_error = _read(ctx, req, topics, readable, _incremental(context))
            reported = True
            if total >= req.min_bytes or any_error or late:
                break
        with trio.move_on_at(deadline):
            await woken.wait()
    return _answer(ctx, req, responses, any_error, context)


def _incremental(context: FetchContext | None) -> bool:
    return context is not None and context.kind is ContextKind.INCREMENTAL


def _context(ctx: RequestContext, req: Any) -> FetchContext | None:
    """The fetch's session context (KIP-227), or None for a fetch that neither names nor wants a session."""
    version = ctx.header.api_version
    if version < SESSIONS_FROM or (req.session_id == INVALID_SESSION_ID and req.session_epoch == FINAL_EPOCH):
        return None
    by_id = version >= TOPIC_IDS_FROM
    requested = [((t.topic_id if by_id else t.topic, p.partition),
                  CachedPartition(t.topic, t.topic_id, p.partition, p.partition_max_bytes, p.fetch_offset,
                                  p.current_leader_epoch, p.log_start_offset, p.last_fetched_epoch))
                 for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id if by_id else t.topic, p) for t in req.forgotten_topics_data for p in t.partitions]
    return new_context(ctx.broker.fetch_sessions, version, req.session_id, req.session_epoch,
                       req.replica_id >= 0, requested, forgotten)


def _topics(req: Any, context: FetchContext | None) -> list[Any]:
    """What to read: the request's topics, or an incremental fetch's session partitions in fetch order (one
    topic entry per run of partitions of the same topic, as Kafka's response groups them)."""
    if context is None or context.kind is not ContextKind.INCREMENTAL:
        return req.topics
    topics: list[FetchTopic] = []
    last: Any = None
    for key, partition in zip(context.keys, context.partitions, strict=True):
        if not topics or key[0] != last:
            topics.append(FetchTopic(partition.topic, partition.topic_id, []))
            last = key[0]
        topics[-1].partitions.append(partition)
    return topics


def _session_error(error: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "session_id": INVALID_SESSION_ID, "responses": [],
            "node_endpoints": []}


def _answer(ctx: RequestContext, req: Any, responses: list[dict[str, Any]], any_error: bool,
            context: FetchContext | None) -> dict[str, Any]:
    version = ctx.header.api_version
    broker = ctx.broker
    session_id = INVALID_SESSION_ID
    if context is not None:
        answers = [p for t in responses for p in t["partitions"]]
        error, session_id, answered = context.respond(broker.fetch_sessions, answers, broker.now_ms())
        if error:
            return _session_error(error)
        if len(answered) < len(answers):  # an incremental fetch: the partitions with news only
            keep = {id(answers[i]) for i in answered}
            responses = [t | {"partitions": kept} for t in responses
                         if (kept := [p for p in t["partitions"] if p is not None and id(p) in keep])]
    if version < DOWN_CONVERT_BELOW:
        _down_convert(ctx, req, responses)
    nodes = []
    if any_error and broker.cluster.replicated:
        names = {t["topic_id"]: t["topic"] for t in responses}
        if version >= 13:
            names = {tid: (found.name if (found := broker.topics.get_by_id(tid)) else None) for tid in names}
        nodes = add_leader_hints(ctx, ((names[t["topic_id"]] if version >= 13 else t["topic"], p, "partition_index")
                                       for t in responses for p in t["partitions"]))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": session_id, "responses": responses,
            "node_endpoints": nodes}


def _down_convert(ctx: RequestContext, req: Any, responses: list[dict[str, Any]]) -> None:
    """Kafka's KafkaApis.maybeConvertFetchedData for Fetch v0-3, partition by partition."""
    from protocol.conversion import UnsupportedCompressionError, lazy_down_convert

    version = ctx.header.api_version
    to_magic = 0 if version <= 1 else 1
    topics = ctx.broker.topics
    for fetch_topic, topic_response in zip(req.topics, responses, strict=True):
        topic = topics.get(fetch_topic.topic)
        for fp, partition in zip(fetch_topic.partitions, topic_response["partitions"], strict=True):
            log = topic.partitions[fp.partition].log if topic and 0 <= fp.partition < len(topic.partitions) else None
            if log is None:
                continue  # no log here, no config: nothing to convert (Kafka)
            config = log.config
            if config.compression_type == "zstd":
                partition.update(_partition_error(fp.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE))
            elif not config.message_downconversion_enable:
                partition.update(_partition_error(fp.partition, ErrorCode.UNSUPPORTED_VERSION))
            elif partition["records"]:
                try:
                    partition["records"] = lazy_down_convert(partition["records"], to_magic, fp.fetch_offset)
                except UnsupportedCompressionError:
                    partition.update(_partition_error(fp.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE))
