"""Producer state on disk: a snapshot file per partition, and its rebuild from the log on open.

The snapshot records the state as of an offset; on open it is loaded and the batch headers after that
offset are replayed. A snapshot past the recovered log end (its batches were lost with an unflushed
tail) or unreadable is ignored and the state is rebuilt from the whole log, so deduplication survives
both a clean restart and a SIGKILL. Replay decodes only control batches (transaction markers): their
type, commit or abort, is in the record key; open transactions and the aborted index come back with it.
"""

from __future__ import annotations

import logging

from broker.log.durable_file import write_atomically
from broker.log.partition_log import PartitionLog
from broker.log.producer_state import MarkerReader, ProducerStateManager
from protocol.records import BatchHeader, CorruptRecordError, end_marker

log = logging.getLogger(__name__)

SNAPSHOT_NAME = "producer_state.snapshot"


def load_producer_state(plog: PartitionLog, name: str) -> ProducerStateManager:
    path = plog.directory / SNAPSHOT_NAME
    state, offset = ProducerStateManager(name), plog.log_start_offset
    try:
        loaded, covered = ProducerStateManager.from_snapshot(path.read_bytes(), name)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        log.warning("%s: ignoring producer snapshot: %s", name, exc)
    else:
        if plog.log_start_offset <= covered <= plog.log_end_offset:
            state, offset = loaded, covered
        else:
            log.info("%s: producer snapshot at %d is outside the log [%d, %d], rebuilding", name, covered,
                     plog.log_start_offset, plog.log_end_offset)
    if offset < plog.log_end_offset:
        state.replay((h for h in plog.iter_batch_headers(offset) if h.base_offset >= offset),
                     marker_reader(plog, name))
    return state


def marker_reader(plog: PartitionLog, name: str = "") -> MarkerReader:
    """Reads (control type, coordinator epoch) of a stored control batch, as Kafka's
    ProducerAppendInfo.append does with EndTransactionMarker.deserialize; None when it holds no record
    (cleaned) or is no end-transaction marker."""

    def read(header: BatchHeader) -> tuple[int, int] | None:
        batch = plog.read_batch(header.base_offset)
        if not batch:
            return None
        try:
            return end_marker(batch)
        except CorruptRecordError as exc:
            log.warning("%s: unreadable control batch at %d: %s", name, header.base_offset, exc)
            return None

    return read


def save_producer_state(plog: PartitionLog, state: ProducerStateManager) -> None:
    """Write the snapshot atomically."""
    write_atomically(plog.directory / SNAPSHOT_NAME, state.snapshot(plog.log_end_offset))
