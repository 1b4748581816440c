"""The one way to append to a partition: Kafka's UnifiedLog.append with its AppendOrigin, and what follows an
append in Kafka's Partition and ReplicaManager (the high watermark may move, waiting fetches wake up).

Every writer comes through `Appender.append`: Produce (CLIENT), the group and transaction coordinators, the
transaction markers and the share-group state (COORDINATOR), the replica fetchers (REPLICATION). By origin:

- CLIENT: the producer state checks a batch fully (epoch, sequence, the last five batches for a retry to
  acknowledge with its first offsets, a plain batch while a transaction is open); `client_batch_error` holds
  the checks of a batch header Kafka makes of clients' batches only (LogValidator.validateBatch).
- COORDINATOR: no sequence to check; a data batch of an older producer epoch than the partition saw is refused,
  and an end-transaction marker is checked against the producer's epochs and the coordinator epoch (Kafka's
  ProducerAppendInfo with AppendOrigin.COORDINATOR, appendEndTxnMarker).
- REPLICATION: the leader's batches are stored as they are (offsets, epochs, timestamps) and only replayed
  into the producer state.

Then, for every origin: the append, the producer state's commit, the errors as Kafka's codes (OSError:
KAFKA_STORAGE_ERROR, a batch over segment.bytes: RECORD_LIST_TOO_LARGE, bad framing: CORRUPT_MESSAGE), the
leader's hook (in a cluster the high watermark may move) and the wake-up of waiting fetches.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from broker.log.partition_log import Appended, RecordBatchTooLargeError
from broker.log.producer_snapshot import marker_reader
from broker.log.producer_state import Verdict
from protocol.header import ErrorCode
from protocol.records import (
    CONTROL_COMMIT,
    NO_PRODUCER_ID,
    BatchHeader,
    Buffer,
    CorruptRecordError,
    end_marker,
    iter_batches,
)

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog
    from broker.log.producer_state import ProducerStateManager


class AppendOrigin(Enum):
    """Where an append comes from (Kafka's AppendOrigin): what is checked depends on it."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


class AppendTarget(Protocol):
    """A hosted partition as the appender needs it (broker.services.topics.Partition)."""

    @property
    def topic(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def log(self) -> PartitionLog | None: ...

    @property
    def producers(self) -> ProducerStateManager | None: ...


NOTHING_APPENDED = Appended()


def client_batch_error(header: BatchHeader) -> tuple[ErrorCode, str] | None:
    """Kafka's LogValidator.validateBatch for AppendOrigin.CLIENT: what a client may not write (a control
    batch, a record count other than the offset range, a producer id without a sequence). None if fine."""
    if header.is_control:
        return ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records"
    if header.records_count <= 0 or header.records_count != header.last_offset_delta + 1:
        return ErrorCode.INVALID_RECORD, (
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and record count "
            f"{header.records_count}")
    if header.producer_id >= 0 and header.base_sequence < 0:
        return ErrorCode.INVALID_RECORD, (
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}")
    return None


class Appender:
    def __init__(self, wake_fetches: Callable[[], None]) -> None:
        """`wake_fetches()`: long-polling fetches look at their partitions again."""
        self._wake_fetches = wake_fetches
        # In a cluster, the replica manager's: after a leader's append its high watermark may move.
        self.on_leader_append: Callable[[AppendTarget], None] | None = None
        # A write that failed with an I/O error (in a cluster its log directory goes offline: Kafka's
        # LogDirFailureChannel).
        self.on_storage_error: Callable[[OSError], None] | None = None

    def storage_error(self, exc: OSError) -> Appended:
        """The answer to an append that failed with an I/O error, after telling `on_storage_error`."""
        if self.on_storage_error is not None:
            self.on_storage_error(exc)
        return Appended(ErrorCode.KAFKA_STORAGE_ERROR, str(exc))

    def append(self, partition: AppendTarget, records: Buffer, origin: AppendOrigin, now_ms: int) -> Appended:
        """Check `records` (whole v2 batches) for `origin`, append them, commit them to the producer state,
        and tell those who wait for appends. Never raises for a failed append: the error is in the answer."""
        if origin is AppendOrigin.REPLICATION:
            return self._append_as_follower(partition, records, now_ms)
        plog, producers = partition.log, partition.producers
        view = memoryview(records)
        producer_batches: list[tuple[BatchHeader, tuple[int, int] | None, int]] = []  # (header, marker, delta)
        delta = 0  # of the batch's first offset from the append's
        try:
            parsed = list(iter_batches(view))
            for header, start, _end in parsed:
                if header.producer_id != NO_PRODUCER_ID:
                    marker = end_marker(view, start, header) if header.is_control else None
                    refused = _check_producer(partition, header, marker, origin)
                    if refused is not None:
                        return refused
                    producer_batches.append((header, marker, delta))
                delta += header.last_offset_delta + 1
            appended = plog.append_as_leader(view, now_ms=now_ms, parsed=parsed)
        except RecordBatchTooLargeError as exc:
            return Appended(ErrorCode.RECORD_LIST_TOO_LARGE, str(exc))
        except CorruptRecordError as exc:
            return Appended(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except OSError as exc:
            return self.storage_error(exc)
        for header, marker, delta in producer_batches:
            offset = appended.base_offset + delta
            timestamp = appended.log_append_time if appended.log_append_time != -1 else header.max_timestamp
            if marker is not None:
                producers.complete_txn(header.producer_id, header.producer_epoch, marker[0] == CONTROL_COMMIT,
                                       marker[1], offset, timestamp)
            elif not header.is_control:
                producers.commit(header.producer_id, header.producer_epoch, header.base_sequence,
                                 header.last_offset_delta, offset, timestamp, header.is_transactional)
        if self.on_leader_append is not None:
            self.on_leader_append(partition)
        self._wake_fetches()
        return appended

    def _append_as_follower(self, partition: AppendTarget, records: Buffer, now_ms: int) -> Appended:
        """A leader's batches, stored as they are; the producer state replays them (markers included)."""
        plog = partition.log
        try:
            headers = plog.append_as_follower(records, now_ms=now_ms)
        except CorruptRecordError as exc:  # e.g. a response cut inside a batch (max bytes): nothing appended
            return Appended(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except OSError as exc:
            return self.storage_error(exc)
        if not headers:
            return NOTHING_APPENDED
        partition.producers.replay(headers, marker_reader(plog, f"{partition.topic}-{partition.index}"))
        self._wake_fetches()
        return Appended(ErrorCode.NONE, None, headers[0].base_offset, headers[-1].last_offset, -1,
                        plog.log_start_offset)


def _check_producer(partition: AppendTarget, header: BatchHeader, marker: tuple[int, int] | None,
                    origin: AppendOrigin) -> Appended | None:
    """The producer-state check of one batch by origin: None to append it, else the answer (an error, or for a
    client's retry the offsets its batch got the first time)."""
    producers = partition.producers
    if origin is AppendOrigin.CLIENT:
        check = producers.check(header.producer_id, header.producer_epoch, header.base_sequence,
                                header.last_offset_delta, header.is_transactional)
        if check.verdict is Verdict.APPEND:
            return None
        log_start = partition.log.log_start_offset
        if check.verdict is Verdict.DUPLICATE:
            dup = check.duplicate
            return Appended(ErrorCode.NONE, None, dup.first_offset, dup.last_offset, dup.timestamp, log_start,
                            duplicate=True)
        return Appended(ErrorCode[check.error], check.message, log_start_offset=log_start)
    if header.is_control:
        if marker is None:
            return None  # no end-transaction marker: nothing for the producer state
        refused = producers.check_marker(header.producer_id, header.producer_epoch, marker[1])
        return None if refused is None else Appended(ErrorCode[refused])
    refused = producers.check_coordinator_append(header.producer_id, header.producer_epoch)
    if refused is None:
        return None
    return Appended(ErrorCode[refused], f"producer {header.producer_id}'s epoch {header.producer_epoch} is fenced "
                                        f"in {partition.topic}-{partition.index}")



__all__ = ["NOTHING_APPENDED", "Appended", "AppendOrigin", "AppendTarget", "Appender", "client_batch_error"]
