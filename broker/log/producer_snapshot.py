"""Producer state on disk: a snapshot file per partition, and its rebuild from the log on open.

The snapshot records the state as of an offset; on open it is loaded and the batch headers after that
offset are replayed. A snapshot past the recovered log end (its batches were lost with an unflushed
tail) or unreadable is ignored and the state is rebuilt from the whole log, so deduplication survives
both a clean restart and a SIGKILL.
"""

from __future__ import annotations

import logging
import os

from broker.log.partition_log import PartitionLog
from coordinator.producer_state import ProducerStateManager

log = logging.getLogger(__name__)

SNAPSHOT_NAME = "producer_state.snapshot"


def load_producer_state(plog: PartitionLog, name: str) -> ProducerStateManager:
    path = plog.directory / SNAPSHOT_NAME
    state, offset = ProducerStateManager(name), plog.log_start_offset
    if path.exists():
        try:
            loaded, covered = ProducerStateManager.from_snapshot(path.read_bytes(), name)
        except (OSError, ValueError) as exc:
            log.warning("%s: ignoring producer snapshot: %s", name, exc)
        else:
            if plog.log_start_offset <= covered <= plog.log_end_offset:
                state, offset = loaded, covered
            else:
                log.info("%s: producer snapshot at %d is outside the log [%d, %d], rebuilding", name, covered,
                         plog.log_start_offset, plog.log_end_offset)
    if offset < plog.log_end_offset:
        state.replay(h for h in plog.iter_batch_headers(offset) if h.base_offset >= offset)
    return state


def save_producer_state(plog: PartitionLog, state: ProducerStateManager) -> None:
    """Write the snapshot atomically (temp file, fsync, rename)."""
    path = plog.directory / SNAPSHOT_NAME
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(state.snapshot(plog.log_end_offset))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
