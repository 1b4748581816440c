"""Log compaction, as Kafka's LogCleaner does it for `cleanup.policy=compact` logs.

A pass over one partition log has three steps:
- `plan_cleaning` (broker.log.cleaning_plan; event-loop thread) picks the cleanable range: whole closed,
  flushed segments from the log start up to the first of the active segment, the segment holding the
  first unstable offset (an open transaction cannot be judged yet) and the first segment younger than
  min.compaction.lag.ms. Segments from the cleaner checkpoint on are dirty. A log is due when dirty /
  cleanable bytes exceed min.cleanable.dirty.ratio, when its oldest dirty batch is older than
  max.compaction.lag.ms, or when a delete horizon set by an earlier pass has come. The job holds dups of
  the segments' file descriptors, so that retention deleting a segment meanwhile cannot make it read a
  recycled descriptor.
- `CleaningJob.run` (a worker thread; it only reads and writes files) maps each key of the dirty range to
  the offset of its latest record, then rewrites each group of segments (up to segment.bytes) into one new
  segment under `cleaner/`, keeping what Kafka's cleaner keeps (`_BatchFilter`).
- `PartitionLog.swap_cleaned` (event-loop thread) puts the new segments in place of the old ones.
Offsets never change: survivors keep theirs, and fetches skip the gaps.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.durable_file import fsync_path
from broker.log.segment import INT32_MAX, LogSegment
from protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    Record,
    build_batch,
    decode_records,
    parse_batch_header,
    parse_control_record,
)

log = logging.getLogger(__name__)

CLEANER_DIR = "cleaner"  # a pass's new segments while they are written; removed at open if left over
REPLACES_FILE = "replaces"  # in CLEANER_DIR: "<first offset> <end offset>" of the segments replaced
_READ_CHUNK = 1024 * 1024
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class SegmentView:
    """A closed segment as a cleaning job reads it, through its own descriptor (a dup the job closes)."""

    base_offset: int
    end_offset: int  # the next segment's base offset
    size: int
    fd: int
    index_entries: int
    time_index_entries: int
    mtime_ns: int


@dataclass(slots=True)
class CleaningResult:
    directory: Path  # CLEANER_DIR holding the new segments and REPLACES_FILE
    end_offset: int  # the segments replaced end here: the next pass's first dirty offset
    replaced: int  # how many old segments the new ones replace, from the first one of the job
    delete_horizon: int | None  # earliest delete horizon of a kept batch: a later pass may drop it then
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    markers_removed: int = 0


@dataclass(eq=False)
class CleaningJob:
    directory: Path
    config: LogConfig
    now_ms: int
    segments: list[SegmentView]
    first_dirty: int
    aborted: list[tuple[int, int]]  # (producer id, first offset) of aborted transactions, by first offset
    last_batches: dict[int, tuple[int | None, int]]  # ProducerStateManager.last_batches()
    max_map_entries: int
    # For the swap: the segment objects the views were taken from and the log's generation then.
    originals: list[LogSegment] = field(default_factory=list)
    generation: int = 0

    def run(self) -> CleaningResult:
        """Map, then rewrite; closes the job's descriptors. On error the cleaner directory is removed."""
        target = self.directory / CLEANER_DIR
        try:
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            offset_map, latest, end = self._build_offset_map()
            return self._rewrite(target, offset_map, latest, end)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            for segment in self.segments:
                os.close(segment.fd)

    # --- step 1: the offset map ---------------------------------------------------------------------

    def _build_offset_map(self) -> tuple[dict[bytes, int], int, int]:
        """key -> offset of its latest record in the dirty segments (Kafka's buildOffsetMap), skipping
        control batches and aborted data; the latest offset mapped; where the mapped range ends. Stops
        before a segment whose keys would overflow max_map_entries (the rest waits for the next pass)."""
        offset_map: dict[bytes, int] = {}
        latest = -1
        end = self.segments[-1].end_offset
        tracker = _TxnTracker(self.aborted)
        mapped_any = False
        for segment in self.segments:
            if segment.end_offset <= self.first_dirty:
                continue
            keys: dict[bytes, int] = {}
            for header, data in _batches(segment):
                if header.is_control:
                    tracker.on_marker(header, _marker_type(header, data))
                    continue
                if tracker.on_batch(header):
                    continue
                for record in decode_records(data):
                    if record.key is not None:
                        offset = header.base_offset + record.offset_delta
                        keys[record.key] = offset
                        latest = max(latest, offset)
            if mapped_any and len(offset_map) + len(keys) > self.max_map_entries:
                end = segment.base_offset
                log.info("%s: %d keys fill the cleaner's map, cleaning up to offset %d this pass", self.directory,
                         len(offset_map), end)
                break
            offset_map.update(keys)
            mapped_any = True
        return offset_map, latest, end

    # --- step 2: the rewrite ------------------------------------------------------------------------

    def _rewrite(self, target: Path, offset_map: dict[bytes, int], latest: int, end: int) -> CleaningResult:
        segments = [s for s in self.segments if s.base_offset < end]
        result = CleaningResult(target, end, len(segments), None)
        batch_filter = _BatchFilter(offset_map, latest, self.now_ms, self.config.delete_retention_ms,
                                    _TxnTracker(self.aborted), self.last_batches)
        for group in _groups(segments, self.config):
            new = LogSegment.create(target, group[0].base_offset, self.config, self.now_ms)
            try:
                for segment in group:
                    result.bytes_read += segment.size
                    for header, data in _batches(segment):
                        kept = batch_filter.filter(header, data)
                        if kept is None:
                            continue
                        kept_header = parse_batch_header(kept) if kept is not data else header
                        position = new.size
                        os.pwrite(new.fd, kept, position)
                        new.track_batch(position, len(kept), kept_header.last_offset, kept_header.max_timestamp)
                        new.size += len(kept)
                new.seal()
                os.fdatasync(new.fd)
                result.bytes_written += new.size
            finally:
                new.close()
            for path in (new.offset_index.path, new.time_index.path):
                fsync_path(path)
            # An emptied segment's age for retention.ms is its file's mtime: keep the old one's (Kafka).
            mtime = max(s.mtime_ns for s in group)
            os.utime(new.path(".log"), ns=(mtime, mtime))
        result.records_removed = batch_filter.records_removed
        result.markers_removed = batch_filter.markers_removed
        result.delete_horizon = batch_filter.earliest_horizon
        replaces = target / REPLACES_FILE
        replaces.write_text(f"{segments[0].base_offset} {end}\n")
        fsync_path(replaces)
        fsync_path(target)
        return result


# --- what a pass keeps --------------------------------------------------------------------------------

class BatchRetention(Enum):
    """Kafka's RecordFilter.BatchRetention: what happens to a batch whose records are all removed."""

    DELETE = "DELETE"  # remove the batch, whatever its records
    DELETE_EMPTY = "DELETE_EMPTY"  # remove it when no record is kept
    RETAIN_EMPTY = "RETAIN_EMPTY"  # keep its header even with no record: its producer's last sequence


class _TxnTracker:
    """Kafka's CleanedTransactionMetadata: reading batches in offset order, which transactional batches
    belong to aborted transactions and which markers close a transaction with no data left."""

    def __init__(self, aborted: list[tuple[int, int]]) -> None:
        self._pending = deque(aborted)
        self._ongoing_aborted: dict[int, bool] = {}  # producer id -> a batch of it was seen
        self._ongoing_committed: set[int] = set()

    def _start_aborted_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][1] <= offset:
            self._ongoing_aborted[self._pending.popleft()[0]] = False

    def on_batch(self, header: BatchHeader) -> bool:
        """True when the batch is aborted data (a pass removes it)."""
        self._start_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        if header.producer_id in self._ongoing_aborted:
            self._ongoing_aborted[header.producer_id] = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_marker(self, header: BatchHeader, marker: int | None) -> bool:
        """True when the marker's transaction has no data left in the range read: once past its delete
        horizon the marker may go."""
        self._start_aborted_up_to(header.last_offset)
        if marker is None:
            return True  # emptied by an earlier pass
        if marker == CONTROL_ABORT:
            return not self._ongoing_aborted.pop(header.producer_id, False)
        if marker == CONTROL_COMMIT:
            if header.producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(header.producer_id)
                return False
            return True
        return False


class _BatchFilter:
    """Kafka's LogCleaner.cleanInto filter with MemoryRecords.filterTo: per batch, the records kept and
    how the batch is written back (as it was, rebuilt, emptied or not at all)."""

    def __init__(self, offset_map: dict[bytes, int], latest: int, now_ms: int, delete_retention_ms: int,
                 tracker: _TxnTracker, last_batches: dict[int, tuple[int | None, int]]) -> None:
        self.offset_map = offset_map
        self.latest = latest
        self.now_ms = now_ms
        self.delete_retention_ms = delete_retention_ms
        self.tracker = tracker
        self.last_batches = last_batches
        self.records_removed = 0
        self.markers_removed = 0
        self.earliest_horizon: int | None = None

    def _is_last_of_producer(self, header: BatchHeader) -> bool:
        last = self.last_batches.get(header.producer_id)
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset is not None:
            return header.last_offset == last_data_offset
        return header.is_control and header.producer_epoch == epoch

    def filter(self, header: BatchHeader, data: memoryview) -> memoryview | bytes | None:
        """The batch to write in the cleaned segment (`data` itself when unchanged), or None."""
        if header.is_control:
            marker = _marker_type(header, data)
            empty_txn = self.tracker.on_marker(header, marker)
            horizon = header.delete_horizon
            discard_records = empty_txn and horizon is not None and horizon <= self.now_ms
        else:
            empty_txn = False
            discard_records = self.tracker.on_batch(header)
        if header.producer_id >= 0 and self._is_last_of_producer(header):
            retention = BatchRetention.RETAIN_EMPTY
        elif discard_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY
        if retention is BatchRetention.DELETE:
            self._count_removed(header)
            return None
        records = decode_records(data)
        kept: list[Record] = []
        tombstones = False
        for record in records:
            if self._keep(header, record, discard_records):
                kept.append(record)
                tombstones = tombstones or record.value is None
        need_horizon = (tombstones or empty_txn) and header.delete_horizon is None
        if len(kept) == len(records) and not need_horizon:
            self._note_horizon(header.delete_horizon)
            return data
        if kept:
            horizon = self.now_ms + self.delete_retention_ms if need_horizon else header.delete_horizon
            self._note_horizon(horizon)
            self.records_removed += 0 if header.is_control else len(records) - len(kept)
            return _rebuild(header, kept, horizon)
        self._count_removed(header)
        if retention is BatchRetention.RETAIN_EMPTY:
            return build_batch([], base_offset=header.base_offset, base_timestamp=header.max_timestamp,
                               max_timestamp=header.max_timestamp, producer_id=header.producer_id,
                               producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
                               is_transactional=header.is_transactional, is_control=header.is_control,
                               partition_leader_epoch=header.partition_leader_epoch,
                               timestamp_type=header.timestamp_type, last_offset_delta=header.last_offset_delta)
        return None

    def _keep(self, header: BatchHeader, record: Record, discard_records: bool) -> bool:
        """Kafka's LogCleaner.shouldRetainRecord: the latest record of its key (or past the map), and a
        tombstone only until its batch's delete horizon."""
        if discard_records:
            return False
        if header.is_control:
            return True
        if record.key is None:
            return False  # a compacted log cannot hold one (produce refuses them); Kafka drops it too
        offset = header.base_offset + record.offset_delta
        if offset <= self.latest and offset < self.offset_map.get(record.key, -1):
            return False
        horizon = header.delete_horizon
        return record.value is not None or horizon is None or self.now_ms < horizon

    def _count_removed(self, header: BatchHeader) -> None:
        if header.is_control:
            self.markers_removed += header.records_count
        else:
            self.records_removed += header.records_count

    def _note_horizon(self, horizon: int | None) -> None:
        # Only horizons still to come give a later pass work; a past one left on a batch whose tombstones
        # are gone does not.
        if horizon is not None and horizon > self.now_ms:
            self.earliest_horizon = horizon if self.earliest_horizon is None else min(self.earliest_horizon, horizon)


def _rebuild(header: BatchHeader, records: list[Record], delete_horizon: int | None) -> bytes:
    """The batch with only `records` (MemoryRecords.buildRetainedRecordsInto): same base offset, last
    offset delta, producer fields and codec; the base timestamp is the delete horizon when there is one,
    else the first record's timestamp."""
    timestamps = [header.base_timestamp + r.timestamp_delta for r in records]
    base_timestamp = delete_horizon if delete_horizon is not None else timestamps[0]
    rebased = [Record(r.offset_delta, ts - base_timestamp, r.key, r.value, r.headers)
               for r, ts in zip(records, timestamps, strict=True)]
    max_timestamp = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else max(timestamps)
    return build_batch(rebased, base_offset=header.base_offset, base_timestamp=base_timestamp,
                       max_timestamp=max_timestamp, compression=header.compression,
                       producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                       base_sequence=header.base_sequence, is_transactional=header.is_transactional,
                       is_control=header.is_control, partition_leader_epoch=header.partition_leader_epoch,
                       timestamp_type=header.timestamp_type, last_offset_delta=header.last_offset_delta,
                       delete_horizon=delete_horizon is not None)


def _marker_type(header: BatchHeader, data: memoryview) -> int | None:
    """CONTROL_COMMIT / CONTROL_ABORT of a control batch, None when emptied by an earlier pass."""
    records = decode_records(data)
    if not records:
        return None
    return parse_control_record(records[0])[0]


def _groups(segments: list[SegmentView], config: LogConfig) -> Iterator[list[SegmentView]]:
    """Consecutive segments whose cleaned output fits one segment (Kafka's groupSegmentsBySize): their
    sizes within segment.bytes, their indexes within segment.index.bytes, offsets relative to the first
    base offset within 32 bits."""
    max_index_entries = config.segment_index_bytes // 12  # the time index's entries are the larger
    group: list[SegmentView] = []
    size = entries = 0
    for segment in segments:
        if group and (size + segment.size > config.segment_bytes
                      or entries + max(segment.index_entries, segment.time_index_entries) + 1 > max_index_entries
                      or segment.end_offset - 1 - group[0].base_offset > INT32_MAX):
            yield group
            group, size, entries = [], 0, 0
        group.append(segment)
        size += segment.size
        entries += max(segment.index_entries, segment.time_index_entries) + 1
    if group:
        yield group


def _batches(segment: SegmentView) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Each stored batch of the segment (header and bytes), read in chunks through the job's descriptor."""
    position, size = 0, segment.size
    buf, buf_start = b"", 0
    while position < size:
        off = position - buf_start
        if off + LOG_OVERHEAD > len(buf):
            buf, buf_start, off = os.pread(segment.fd, _READ_CHUNK, position), position, 0
            if len(buf) < LOG_OVERHEAD:
                raise CorruptRecordError(f"segment {segment.base_offset}: truncated batch at {position}")
        end = off + LOG_OVERHEAD + _LENGTH.unpack_from(buf, off + 8)[0]
        if end > len(buf):
            buf, buf_start = os.pread(segment.fd, max(_READ_CHUNK, end - off), position), position
            off, end = 0, end - off
            if len(buf) < end:
                raise CorruptRecordError(f"segment {segment.base_offset}: truncated batch at {position}")
        view = memoryview(buf)[off:end]
        yield parse_batch_header(view), view
        position = buf_start + end


__all__ = ["CLEANER_DIR", "REPLACES_FILE", "BatchRetention", "CleaningJob", "CleaningResult", "SegmentView"]
