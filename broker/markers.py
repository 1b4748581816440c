"""Transaction markers on a partition: the partition side of WriteTxnMarkers (Kafka's
ReplicaManager.appendRecords with AppendOrigin.COORDINATOR for a control batch, then
UnifiedLog.append's producer-state update: ProducerAppendInfo.appendEndTxnMarker, the transaction index,
ProducerStateManager.completeTxn).

    error, offset = append_marker(state, partition, producer_id, epoch, coordinator_epoch, commit, now_ms)
    if not error:
        await state.flusher.wait_durable(partition.log, offset)   # acks=all, as produce's _durable

Works on any partition, internal topics included (transactional offset commits in __consumer_offsets).
"""

from __future__ import annotations

from typing import Any

from broker.log.partition_log import RecordBatchTooLargeError
from broker.topics import Partition
from protocol.header import ErrorCode
from protocol.records import control_batch


def append_marker(state: Any, partition: Partition, producer_id: int, producer_epoch: int,
                  coordinator_epoch: int, commit: bool, now_ms: int) -> tuple[ErrorCode, int]:
    """Validate (stale producer epoch: INVALID_PRODUCER_EPOCH; older coordinator epoch:
    TRANSACTION_COORDINATOR_FENCED), append a COMMIT or ABORT control batch, close the producer's open
    transaction in the partition's producer state (an abort goes to the aborted index) and wake the
    long-polling fetchers (the LSO may have moved). Returns (error, the marker's offset or -1)."""
    producers = partition.producers
    error = producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
    if error is not None:
        return ErrorCode[error], -1
    batch = control_batch(commit, producer_id, producer_epoch, coordinator_epoch, now_ms)
    try:
        result = partition.log.append(batch, now_ms=now_ms)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR, -1
    except RecordBatchTooLargeError:  # a 78-byte batch over segment.bytes
        return ErrorCode.RECORD_LIST_TOO_LARGE, -1
    timestamp = result.log_append_time if result.log_append_time != -1 else now_ms
    producers.complete_txn(producer_id, producer_epoch, commit, coordinator_epoch, result.base_offset, timestamp)
    state.notify_append()
    return ErrorCode.NONE, result.base_offset
