"""Produce: validate each partition's record batch from its 61-byte header, append it unchanged,
answer after a grouped fdatasync for acks=all. The records of an uncompressed batch are not decoded here
(but for a compacted topic's keys and out-of-range timestamp limits); a compressed batch is decompressed
and parsed, as Kafka's LogValidator does, so that a corrupt one is refused rather than stored.

Transactional batches (KIP-98): the producer state rejects a non-transactional batch while the producer
has an open transaction on the partition (INVALID_TXN_STATE) and opens one with the first transactional
batch; `verify_transactions` is where the transaction coordinator checks that the partition is part of
the producer's transaction before that first batch (KIP-890)."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

import trio

from broker.handlers.context import LATER, RequestContext
from broker.handlers.leader_hints import add_leader_hints
from broker.log.append import Appended, AppendOrigin, client_batch_error
from broker.security.access import AclOperation, ResourceType, authorized, authorized_names
from broker.services.topics import Partition
from protocol.header import ErrorCode
from protocol.messages.produce import TOPIC_IDS_FROM
from protocol.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    MAGIC_OFFSET,
    TRANSACTIONAL_MASK,
    CorruptRecordError,
    DecompressionError,
    InvalidMagicError,
    TruncatedBatchError,
    check_records,
    decode_records,
    iter_batches,
    parse_batch_header,
    verify_crc,
)

if TYPE_CHECKING:
    from broker.app import Broker

ZSTD = 4
LEGACY_FROM = 3  # Produce v0-2 may carry message format v0/v1


def _partition(ctx: RequestContext, topic_data: Any, index: int, acks: int, writable: set[str]
               ) -> Partition | ErrorCode:
    """The partition to append to, or the error that refuses it before its batch is looked at."""
    if ctx.header.api_version >= TOPIC_IDS_FROM and not topic_data.name:
        return ErrorCode.UNKNOWN_TOPIC_ID  # no topic has this id
    if acks not in (0, 1, -1):
        return ErrorCode.INVALID_REQUIRED_ACKS
    if topic_data.name not in writable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # Produce never creates a topic: Kafka creates one only when Metadata asks for it (auto.create.topics.enable;
    # recorded from Kafka 3.9, 4.1 and 4.4: tests/reference/recorded/*/produce_does_not_create.json).
    topics = ctx.broker.topics
    topic = topics.get(topic_data.name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if topic.is_internal:
        return ErrorCode.INVALID_TOPIC_EXCEPTION  # Kafka: "Cannot append to internal topic"
    return topics.leader_partition(topic_data.name, index)


def validate(records: bytes | None, version: int, max_message_bytes: int) -> tuple[ErrorCode, str | None]:
    """Kafka's checks of a v3+ produce payload (ProduceRequest.validateRecords, LogValidator),
    using only batch headers."""
    if not records or len(records) < BATCH_HEADER_SIZE:
        return ErrorCode.INVALID_RECORD, (
            f"Produce requests with version {version} must have at least one record batch per partition")
    try:
        batches = list(iter_batches(records))
    except InvalidMagicError:
        return ErrorCode.INVALID_RECORD, (
            f"Produce requests with version {version} are only allowed to contain record batches with "
            "magic version 2")
    except TruncatedBatchError:
        # Kafka's batch iterator stops at a batch cut short: the request then holds no whole batch.
        return ErrorCode.INVALID_RECORD, (
            f"Produce requests with version {version} are only allowed to contain exactly one record batch "
            "per partition")
    except CorruptRecordError as exc:
        return ErrorCode.CORRUPT_MESSAGE, str(exc)
    if len(batches) != 1:
        return ErrorCode.INVALID_RECORD, (
            f"Produce requests with version {version} are only allowed to contain exactly one record batch "
            "per partition")
    header, start, end = batches[0]
    if header.magic != 2:
        return ErrorCode.INVALID_RECORD, (
            f"Produce requests with version {version} are only allowed to contain record batches with "
            "magic version 2")
    if version < 7 and header.compression == ZSTD:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "Produce requests with version < 7 cannot use zstd"
    if end - start > max_message_bytes:
        return ErrorCode.MESSAGE_TOO_LARGE, (
            f"The record batch size {end - start} bytes exceeds max.message.bytes {max_message_bytes}")
    if not verify_crc(records, start, end):
        return ErrorCode.CORRUPT_MESSAGE, "Record batch is corrupt (CRC mismatch)"
    if header.compression > ZSTD:
        # Kafka fails on the unknown codec id (IllegalArgumentException: UNKNOWN_SERVER_ERROR).
        return ErrorCode.UNKNOWN_SERVER_ERROR, None
    return client_batch_error(header) or (ErrorCode.NONE, None)


def compressed_batch_error(records: bytes) -> tuple[ErrorCode, str | None]:
    """Kafka's LogValidator on a compressed batch: decompressed and every record parsed, as the batch claims
    them (recorded from Kafka 3.9 and 4.4: a payload its codec refuses is UNKNOWN_SERVER_ERROR, records that
    do not parse INVALID_RECORD; tests/reference/scenarios/produce.py). Uncompressed batches are not decoded."""
    if not parse_batch_header(records).compression:
        return ErrorCode.NONE, None
    try:
        check_records(records)
    except DecompressionError:
        return ErrorCode.UNKNOWN_SERVER_ERROR, None
    except CorruptRecordError as exc:
        return ErrorCode.INVALID_RECORD, f"Found invalid record in a compressed batch: {exc}"
    return ErrorCode.NONE, None


def has_transactional_records(req: Any) -> bool:
    """Kafka's ProduceRequest.hasTransactionalRecords, from the first batch's attributes (low byte)."""
    for topic_data in req.topic_data:
        for pdata in topic_data.partition_data:
            records = pdata.records
            if (records and len(records) >= BATCH_HEADER_SIZE and records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK
                    and records[MAGIC_OFFSET] == 2):  # v0/v1 messages have no transactions
                return True
    return False


IMPLICIT_ADD_FROM = 12  # Produce v12+: transaction version 2 clients (KIP-890 part 2)


async def verify_transactions(ctx: RequestContext, req: Any) -> dict[tuple[str, int], ErrorCode]:
    """KIP-890, before anything is appended, for each transactional batch on a partition where its producer has
    no open transaction at its epoch (its first batch there). Produce v12+ (transaction version 2) adds the
    partition to the producer's transaction, starting one if none is open: the client sends no
    AddPartitionsToTxn. Older versions verify that the coordinator has the partition in the producer's ongoing
    transaction, else INVALID_TXN_STATE (or INVALID_PRODUCER_EPOCH). This broker's coordinator is asked
    directly; another broker's with AddPartitionsToTxn v4, during which the connection's later requests wait
    (ctx.release)."""
    wanted, producer = _unverified(ctx, req)
    if not wanted:
        return {}
    broker = ctx.broker
    txn_id = req.transactional_id
    add = ctx.header.api_version >= IMPLICIT_ADD_FROM
    txns = broker.txns
    if broker.zk_cluster is not None and txns.runtime.error_for(txn_id):  # the coordinator is another broker
        return await broker.zk_cluster.verify_transaction(txn_id, *producer, wanted, verify_only=not add)
    if add:
        return dict.fromkeys(wanted, await _add_to_transaction(broker, txn_id, *producer, wanted))
    # The coordinator replays __transaction_state when it starts (shortly after a restart): until then it knows
    # no transaction.
    await txns.loaded.wait()
    return {tp: txns.coordinator.producer_in_transaction(*producer, tp) for tp in wanted}


def _verified_now(ctx: RequestContext, req: Any) -> dict[tuple[str, int], ErrorCode] | object:
    """`verify_transactions` when it awaits nothing: transaction version 1 on a single broker whose
    coordinator has loaded; LATER otherwise."""
    wanted, producer = _unverified(ctx, req)
    if not wanted:
        return {}
    txns = ctx.broker.txns
    if ctx.broker.cluster.replicated or ctx.header.api_version >= IMPLICIT_ADD_FROM or not txns.loaded.is_set():
        return LATER
    return {tp: txns.coordinator.producer_in_transaction(*producer, tp) for tp in wanted}


def _unverified(ctx: RequestContext, req: Any) -> tuple[list[tuple[str, int]], tuple[int, int]]:
    """The partitions whose transactional batch needs verifying (none if verification is off), and the
    producer's (id, epoch). Each such partition remembers the batch's sequence while it is verified, so that a
    later batch whose verification succeeds does not get ahead of it (ProducerStateManager.start_verification)."""
    broker = ctx.broker
    txn_id = req.transactional_id
    add = ctx.header.api_version >= IMPLICIT_ADD_FROM
    if txn_id is None or not (add or broker.config.transaction_partition_verification_enable):
        return [], (-1, -1)
    wanted: list[tuple[str, int]] = []
    producer = (-1, -1)
    for topic_data in req.topic_data:
        for pdata in topic_data.partition_data:
            records = pdata.records
            if not records or len(records) < BATCH_HEADER_SIZE or \
                    not records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK or records[16] != 2:
                continue
            partition = broker.topics.leader_partition(topic_data.name, pdata.index)
            if isinstance(partition, ErrorCode):
                continue
            header = parse_batch_header(records)
            if not partition.producers.has_ongoing_transaction(header.producer_id, header.producer_epoch):
                partition.producers.start_verification(header.producer_id, header.producer_epoch,
                                                       header.base_sequence, broker.now_ms(), add)
                wanted.append((topic_data.name, pdata.index))
                producer = (header.producer_id, header.producer_epoch)
    return wanted, producer


async def _add_to_transaction(broker: Broker, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: list[tuple[str, int]]) -> ErrorCode:
    """Transaction version 2 with this broker's coordinator (Kafka's AddPartitionsToTxnManager with TV2). A
    fenced producer gets INVALID_PRODUCER_EPOCH, as Kafka answers Produce."""
    txns = broker.txns
    await txns.loaded.wait()
    outcome = txns.coordinator.add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                              broker.now_ms())
    error = await txns.apply(outcome.transit, outcome.error)
    if error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def record_errors(partition: Partition, records: bytes, now: int) -> dict[str, Any] | None:
    """Kafka's record-level checks (LogValidator): keys on a compacted topic, then CreateTime timestamps. The
    partition's answer (INVALID_RECORD, INVALID_TIMESTAMP or CORRUPT_MESSAGE) if a record fails, else None."""
    config = partition.log.config
    try:
        if config.compacted and (errors := compaction_errors(partition, records)):
            error = ErrorCode.INVALID_RECORD
        elif not config.log_append_time and (errors := timestamp_errors(
                records, now, config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms)):
            error = ErrorCode.INVALID_TIMESTAMP
        else:
            return None
    except CorruptRecordError as exc:
        return _response(partition.index, ErrorCode.CORRUPT_MESSAGE, str(exc))
    response = _response(partition.index, error, (
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing "
        f"the first {len(errors)} record errors in the response"), log_start_offset=partition.log.log_start_offset)
    response["record_errors"] = errors
    return response


def compaction_errors(partition: Partition, records: bytes) -> list[dict[str, Any]]:
    """Records without a key, which a compacted topic refuses (Kafka's LogValidator.validateKey, KIP-467):
    the only produce check that decodes records, and only for compacted topics."""
    errors = []
    message = ("Compacted topic cannot accept message without key in topic partition "
               f"{partition.topic}-{partition.index}.")
    for _header, start, end in iter_batches(records):
        for i, record in enumerate(decode_records(memoryview(records)[start:end])):
            if record.key is None:
                errors.append({"batch_index": i, "batch_index_error_message": message})
    return errors


def timestamp_errors(records: bytes, now: int, before_max_ms: int, after_max_ms: int) -> list[dict[str, Any]]:
    """CreateTime records outside [now - before, now + after] (Kafka's LogValidator.validateTimestamp,
    KIP-937). The batch header settles the common case (the default limits: no lower bound, and a batch
    whose max timestamp is in range); records are decoded only when a limit may be crossed."""
    lowest, highest = now - before_max_ms, now + after_max_ms
    header = parse_batch_header(records)
    if lowest <= 0 and header.max_timestamp <= highest:
        return []
    errors = []
    for _header, start, end in iter_batches(records):
        for i, record in enumerate(decode_records(memoryview(records)[start:end])):
            timestamp = header.base_timestamp + record.timestamp_delta
            if timestamp != -1 and not lowest <= timestamp <= highest:
                errors.append({"batch_index": i, "batch_index_error_message": (
                    f"Timestamp {timestamp} of message with offset {i} is out of range. The timestamp should be "
                    f"within [{lowest}, {highest}]")})
    return errors


def _response(index: int, error: ErrorCode, message: str | None = None, base_offset: int = -1,
              log_append_time: int = -1, log_start_offset: int = -1) -> dict[str, Any]:
    return {"index": index, "error_code": error, "base_offset": base_offset,
            "log_append_time_ms": log_append_time, "log_start_offset": log_start_offset,
            "record_errors": [], "error_message": message}


def _appended_response(index: int, appended: Appended) -> dict[str, Any]:
    return _response(index, appended.error, appended.message, appended.base_offset, appended.log_append_time,
                     appended.log_start_offset)


def _is_legacy(records: bytes | None) -> bool:
    """Message format v0/v1 (or nothing at all): anything but a v2 batch."""
    return not records or len(records) <= MAGIC_OFFSET or records[MAGIC_OFFSET] in (0, 1)


def _append_legacy(ctx: RequestContext, partition: Partition, pdata: Any, now: int
                   ) -> tuple[dict[str, Any], int | None]:
    """A v0/v1 message set up-converted (Kafka's LogValidator) and appended: the partition's answer and the last
    offset appended (None when nothing was)."""
    from protocol.conversion import ConversionError, up_convert  # the old formats load only when used

    log = partition.log
    config = log.config
    try:
        converted = up_convert(
            pdata.records or b"", now_ms=now, log_append_time=config.log_append_time,
            compression_type=config.compression_type, compacted=config.compacted,
            timestamp_before_max_ms=config.message_timestamp_before_max_ms,
            timestamp_after_max_ms=config.message_timestamp_after_max_ms,
            max_message_bytes=config.max_message_bytes, topic_partition=f"{partition.topic}-{partition.index}")
    except ConversionError as exc:
        response = _response(pdata.index, exc.error, exc.message, log_start_offset=log.log_start_offset)
        response["record_errors"] = [{"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors]
        return response, None
    if converted is None:  # no whole message: nothing appended, no error (Kafka)
        return _response(pdata.index, ErrorCode.NONE, log_start_offset=log.log_start_offset), None
    if len(converted.batch) > config.max_message_bytes:  # re-checked after conversion, as Kafka does
        return _response(pdata.index, ErrorCode.MESSAGE_TOO_LARGE,
                         f"The record batch size in the append to {partition.topic}-{partition.index} is "
                         f"{len(converted.batch)} bytes which exceeds the maximum configured value of "
                         f"{config.max_message_bytes}.", log_start_offset=log.log_start_offset), None
    appended = ctx.broker.appender.append(partition, converted.batch, AppendOrigin.CLIENT, now)
    return _appended_response(pdata.index, appended), None if appended.error else appended.last_offset


async def _durable(broker: Broker, partition: Partition, offset: int, response: dict[str, Any],
                   timeout_s: float) -> None:
    """acks=all: the fdatasync covering `offset` and, for a replicated partition, every in-sync replica; an
    error (KAFKA_STORAGE_ERROR, NOT_ENOUGH_REPLICAS_AFTER_APPEND, ...) replaces the answer."""
    error = await broker.durability.wait(partition, offset, timeout_s)
    if error:
        _not_durable(response, error)


def _not_durable(response: dict[str, Any], error: ErrorCode) -> None:
    """A partition's answer once its wait failed: the error replaces the offsets."""
    message = "fsync failed" if error == ErrorCode.KAFKA_STORAGE_ERROR else None
    response.update(error_code=error, error_message=message, base_offset=-1, log_append_time_ms=-1)


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any] | None:
    refused = _refuse_transactional(ctx, req)
    if refused is not None:
        return refused or None
    verified = await verify_transactions(ctx, req) if req.transactional_id is not None else {}
    responses, waits = _append(ctx, req, verified)
    ctx.release()  # everything is appended: the connection's next request may start
    if waits:
        timeout_s = max(0, req.timeout_ms) / 1000
        if len(waits) == 1:
            await _durable(ctx.broker, *waits[0], timeout_s)
        else:
            async with trio.open_nursery() as nursery:
                for wait in waits:
                    nursery.start_soon(_durable, ctx.broker, *wait, timeout_s)
    return _answer(ctx, req.acks, responses)


def handle_now(ctx: RequestContext, req: Any) -> dict[str, Any] | None | object:
    """The whole Produce without a task of its own (one scheduling round less per request, measured: a
    synchronous produce's broker CPU from ~275 to ~100 us) when nothing will be awaited: a transaction
    verified by this broker's loaded coordinator if any, and acks below all or a durability settled inline
    (no fdatasync, or one the flusher would run inline anyway; no other replica). Otherwise LATER, having done
    nothing: `handle` runs instead."""
    durability = ctx.broker.durability
    if req.acks == -1 and not durability.settles_inline:
        return LATER
    refused = _refuse_transactional(ctx, req)
    if refused is not None:
        return refused or None
    verified = _verified_now(ctx, req)
    if verified is LATER:
        return LATER  # nothing done yet (the topics named by id are named again by `handle`)
    responses, waits = _append(ctx, req, verified)
    error = durability.settle_now([partition for partition, _offset, _response in waits]) if waits else None
    if error:
        for _partition, _offset, response in waits:
            _not_durable(response, error)
    return _answer(ctx, req.acks, responses)


def _refuse_transactional(ctx: RequestContext, req: Any) -> dict[str, Any] | None:
    """KafkaApis.handleProduceRequest: transactional records need a transactional id, with WRITE on it.
    The answer if refused ({} with acks=0), else None. Names the topics of a v13 request (by id) first."""
    if ctx.header.api_version >= TOPIC_IDS_FROM:
        for topic_data in req.topic_data:
            topic = ctx.broker.topics.get_by_id(topic_data.topic_id)
            if topic is not None:
                topic_data.name = topic.name
    if not has_transactional_records(req) or (req.transactional_id is not None and authorized(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)):
        return None
    if req.acks == 0:
        return {}
    return {"responses": [{"name": t.name, "topic_id": t.topic_id, "partition_responses": [
                _response(p.index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for p in t.partition_data]}
            for t in req.topic_data], "throttle_time_ms": 0, "node_endpoints": []}


def _append(ctx: RequestContext, req: Any, verified: dict[tuple[str, int], ErrorCode]
            ) -> tuple[list[dict[str, Any]], list[tuple[Partition, int, dict[str, Any]]]]:
    """Validate and append each partition's batch: the topics' answers, and for acks=all what to wait for
    (partition, last offset, the partition's answer, which a failed wait rewrites)."""
    broker = ctx.broker
    acks = req.acks
    waits: list[tuple[Partition, int, dict[str, Any]]] = []
    responses = []
    now = broker.now_ms()
    writable = authorized_names(ctx, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in req.topic_data))
    for topic_data in req.topic_data:
        partitions = []
        for pdata in topic_data.partition_data:
            partition = _partition(ctx, topic_data, pdata.index, acks, writable)
            if isinstance(partition, ErrorCode):
                partitions.append(_response(pdata.index, partition))
                continue
            response, last_offset = _append_partition(ctx, partition, pdata, acks, verified, now)
            if acks == -1 and last_offset is not None:
                waits.append((partition, last_offset, response))
            partitions.append(response)
        responses.append({"name": topic_data.name, "topic_id": topic_data.topic_id,
                          "partition_responses": partitions})
    return responses, waits


def _append_partition(ctx: RequestContext, partition: Partition, pdata: Any, acks: int,
                      verified: dict[tuple[str, int], ErrorCode], now: int) -> tuple[dict[str, Any], int | None]:
    """One partition's batch checked and appended: its answer, and the offset an acks=all answer waits for
    (None if nothing was appended nor deduplicated)."""
    version = ctx.header.api_version
    if version < LEGACY_FROM and _is_legacy(pdata.records):
        return _append_legacy(ctx, partition, pdata, now)
    log = partition.log
    error, message = validate(pdata.records, version, log.config.max_message_bytes)
    if not error and acks == -1:
        error = ctx.broker.durability.check_min_isr(partition)  # NOT_ENOUGH_REPLICAS, before appending
        message = None
    if error:
        # Kafka reports the log start offset only with errors raised once the log is reached.
        log_start = log.log_start_offset if error == ErrorCode.UNKNOWN_SERVER_ERROR else -1
        return _response(pdata.index, error, message, log_start_offset=log_start), None
    error, message = compressed_batch_error(pdata.records)
    if error:  # found once the log is reached: Kafka reports its start offset
        return _response(pdata.index, error, message, log_start_offset=log.log_start_offset), None
    refused = record_errors(partition, pdata.records, now)
    if refused is not None:
        return refused, None
    if pdata.records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK:
        error = verified.get((partition.topic, partition.index), ErrorCode.NONE)
        if error:  # refused before the log is reached: no log start offset (as Kafka)
            return _response(pdata.index, error), None
    if ctx.io_error:  # a fault rule: the append fails as on a failing disk
        appended = ctx.broker.appender.storage_error(OSError(errno.EIO, "Input/output error (an io_error fault rule)"))
    else:
        appended = ctx.broker.appender.append(partition, pdata.records, AppendOrigin.CLIENT, now)
    return _appended_response(pdata.index, appended), None if appended.error else appended.last_offset


def _answer(ctx: RequestContext, acks: int, responses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if acks == 0:
        return None
    nodes = add_leader_hints(ctx, ((t["name"], p, "index") for t in responses for p in t["partition_responses"])) \
        if ctx.broker.cluster.replicated else []
    return {"responses": responses, "throttle_time_ms": 0, "node_endpoints": nodes}
