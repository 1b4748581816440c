"""A partition's log: a directory of segments, like Kafka's `<topic>-<partition>/`.

Synchronous and single-threaded (the event-loop thread), except `flush()`, which may run in a worker
thread concurrently with appends and reads: it fdatasyncs dups of the file descriptors it captured under
a lock and then publishes the log end offset it captured as `flushed_offset`.

Files: `<base offset, 20 digits>.log/.index/.timeindex` per segment and the checkpoints of
broker/log/checkpoints.py; opening and recovery are broker/log/log_loader.py's. Appends come through
broker/log/append.py, which checks them by origin and keeps the producer state.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from broker.log.checkpoints import (
    CLEANER_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    fsync_dir,
    fsync_file,
    read_checkpoint,
    write_checkpoint,
)
from broker.log.cleaner import CleaningJob, CleaningResult
from broker.log.config import LogConfig
from broker.log.leader_epochs import LeaderEpochCache
from broker.log.log_loader import SWAP_DIR, complete_swap, load_segments
from broker.log.log_reads import LogReads, OffsetOutOfRangeError
from broker.log.segment import LogSegment, file_name
from protocol.header import ErrorCode
from protocol.records import (
    BatchHeader,
    Buffer,
    CorruptRecordError,
    iter_batches,
    set_log_append_time,
)

log = logging.getLogger(__name__)

_PREFIX = struct.Struct(">qii")  # base offset, batch length, partition leader epoch: outside the CRC


class RecordBatchTooLargeError(ValueError):
    """Kafka's RecordBatchTooLargeException (RECORD_BATCH_TOO_LARGE): an append larger than segment.bytes."""


class Appended(NamedTuple):  # a tuple: one is made at every append, and a tuple is the cheapest to build
    """What an append did (broker/log/append.py answers with it too): an error with Kafka's message, or the offsets
    the batches got (for a producer's retry, those of the batch it repeats: `duplicate`)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1  # -1 with CreateTime; a duplicate's: the timestamp its first append stored
    log_start_offset: int = -1  # reported with the errors raised once the log is reached, as Kafka's
    duplicate: bool = False


@dataclass(slots=True)
class FlushPoint:
    """What a flush covers, captured under the log's lock when it starts."""

    target: int  # the log end offset: flushed_offset once synced
    generation: int  # a truncation meanwhile makes the flush publish nothing
    rolled: list[LogSegment]  # rolled segments not flushed yet, indexes included
    active_base: int  # the recovery point once the rolled segments are flushed
    sync_dir: bool  # a segment file was created: the directory entry must be synced too
    fds: list[int]  # dups of the segments' fds to fdatasync (empty when the filesystem is synced whole)


class PartitionLog(LogReads):
    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment], log_start_offset: int,
                 recovery_point: int, leader_epoch: int) -> None:
        self.directory = directory
        self.config = config  # may be replaced (AlterConfigs); new values apply to new appends and segments
        self.leader_epoch = leader_epoch  # stamped on every appended batch, as a Kafka leader does
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.log_start_offset = log_start_offset
        self.log_end_offset = segments[-1].next_offset
        self.flushed_offset = self.log_end_offset
        self.size_bytes = sum(s.size for s in segments)
        self.closed = False
        self._recovery_point = recovery_point
        self._unflushed: list[LogSegment] = []  # rolled segments not yet fdatasynced
        self._dir_dirty = False  # a segment file was created since the last flush
        self._generation = 0  # bumped by truncation: a flush or cleaning that started before must not publish
        self._first_dirty: int | None = None  # the cleaner checkpoint, read on first use
        self.epochs: LeaderEpochCache | None = None  # the leader epoch cache of a replicated log
        self._lock = threading.Lock()  # segment list changes vs. the flushing thread's capture
        self._flush_lock = threading.Lock()  # one flush at a time; truncation and close wait for it

    # --- opening and recovery ---------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, now_ms: int, leader_epoch: int = 0,
             track_epochs: bool = False, clean_shutdown: bool = False) -> PartitionLog:
        """Create the log or load and recover it. After a clean shutdown (the log was closed, so flushed,
        and nothing wrote to it since: the broker's clean-shutdown marker says so) no segment is scanned,
        as Kafka's LogLoader does; otherwise those from the recovery point on are. A replicated log (a
        cluster's) keeps its leader epoch cache; a single broker's, always led at epoch 0, needs none."""
        directory = Path(directory)
        loaded = load_segments(directory, config, now_ms, clean_shutdown=clean_shutdown)
        segments, start, recovered = loaded.segments, loaded.log_start_offset, loaded.recovered
        self = cls(directory, config, segments, start, loaded.recovery_point, leader_epoch)
        if track_epochs:
            self.epochs = LeaderEpochCache.load(directory) or self._rebuild_epochs()
            self.epochs.truncate_from_end(self.log_end_offset)  # a torn tail was cut at recovery
        if start > self.log_end_offset:
            # The tail holding the log start offset was lost (never flushed): start over there.
            log.warning("%s: log start offset %d is past the log end %d, emptying the log", directory, start,
                        self.log_end_offset)
            self._truncate_fully(start, now_ms)
        active = self._segments[-1]
        for segment in recovered:
            if segment is active:
                # Not synced here (an fdatasync per partition made restarts slow): it stays past the recovery
                # point, so a crash scans it again, and what it holds counts as durable only from the first
                # flush on (an acks=all wait, even for a deduplicated retry, runs one).
                self.flushed_offset = active.base_offset
            elif segment in self._segments:  # the recovery point moves past it: it must be on disk
                os.fdatasync(segment.fd)
                fsync_file(segment.offset_index.path)
                fsync_file(segment.time_index.path)
        self._set_recovery_point(active.base_offset)
        return self

    def _rebuild_epochs(self) -> LeaderEpochCache:
        """The leader epoch cache from the stored batches' leader epochs (a log without its checkpoint)."""
        cache = LeaderEpochCache(self.directory)
        for header in self.iter_batch_headers():
            if header.partition_leader_epoch > cache.latest_epoch:
                cache.assign(header.partition_leader_epoch, header.base_offset)
        return cache

    def become_leader(self, leader_epoch: int) -> None:
        """This broker leads the partition from `leader_epoch` on: its batches are stamped with it, and the
        epoch starts at the log end (Kafka's maybeAssignEpochStartOffset)."""
        self.leader_epoch = leader_epoch
        if self.epochs is not None:
            self.epochs.assign(leader_epoch, self.log_end_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) of OffsetForLeaderEpoch: where `leader_epoch` ended in this log. Without an
        epoch cache the log has had one epoch, its leader's."""
        if self.epochs is not None:
            return self.epochs.end_offset_for(leader_epoch, self.log_end_offset)
        if leader_epoch == self.leader_epoch:
            return leader_epoch, self.log_end_offset
        if 0 <= leader_epoch < self.leader_epoch:
            return leader_epoch, self.log_start_offset
        return -1, -1

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch of the batch holding `offset` (ListOffsets answers it), from the epoch cache."""
        if self.epochs is None:
            return self.leader_epoch
        found = self.epochs.epoch_for_offset(offset)
        return self.leader_epoch if found is None else found

    # --- appending --------------------------------------------------------------------------------------

    def append_as_leader(self, batches: Buffer, *, now_ms: int,
                         parsed: list[tuple[BatchHeader, int, int]] | None = None) -> Appended:
        """Append already-validated v2 batches (`parsed`: their iter_batches, if the caller has it):
        offsets assigned by rewriting each batch's base offset (and leader epoch), LogAppendTime applied if
        configured; the bytes are otherwise stored as given. Only broker/log/append.py calls it (and the
        log's own tests): the producer state and those waiting for appends must follow every append."""
        view = memoryview(batches)
        if parsed is None:
            parsed = list(iter_batches(view))
        if not parsed:
            raise CorruptRecordError("no record batch to append")
        total = len(view)
        config = self.config
        if total > config.segment_bytes:
            raise RecordBatchTooLargeError(f"the append of {total} bytes exceeds segment.bytes "
                                           f"{config.segment_bytes}")
        log_append_time = config.log_append_time
        first = self.log_end_offset
        last_offset = first - 1 + sum(h.last_offset_delta + 1 for h, _, _ in parsed)
        max_timestamp = now_ms if log_append_time else max(h.max_timestamp for h, _, _ in parsed)
        segment = self._segments[-1]
        if self._should_roll(segment, total, max_timestamp, last_offset, now_ms):
            segment = self._roll(now_ms)
        position = segment.size
        if len(parsed) == 1 and not log_append_time:
            header, start, end = parsed[0]
            # Zero copy: a new 16-byte prefix, then the caller's bytes from the magic byte on.
            iov: list[Buffer] = [_PREFIX.pack(first, header.batch_length, self.leader_epoch), view[16:]]
        else:
            buf = bytearray(view)
            offset = first
            for header, start, _end in parsed:
                _PREFIX.pack_into(buf, start, offset, header.batch_length, self.leader_epoch)
                if log_append_time:
                    set_log_append_time(buf, start, now_ms)
                offset += header.last_offset_delta + 1
            iov = [buf]
        _write(segment, iov, total)
        offset = first
        for header, start, end in parsed:
            last = offset + header.last_offset_delta
            segment.track_batch(position + start, end - start, last,
                                now_ms if log_append_time else header.max_timestamp)
            offset = last + 1
        segment.size += total
        self.size_bytes += total
        self.log_end_offset = offset
        return Appended(ErrorCode.NONE, None, first, offset - 1, now_ms if log_append_time else -1,
                        self.log_start_offset)

    def append_as_follower(self, batches: Buffer, *, now_ms: int) -> list[BatchHeader]:
        """Append a leader's batches as they are (offsets, leader epochs, timestamps unchanged), as a
        follower does: they must start at the log end offset. Returns their headers (producer state and
        the epoch cache follow them). Only broker/log/append.py calls it, as `append_as_leader`."""
        view = memoryview(batches)
        parsed = list(iter_batches(view))
        if not parsed:
            return []
        first = parsed[0][0].base_offset
        if first != self.log_end_offset:
            raise CorruptRecordError(f"{self.directory.name}: a follower append at offset {first}, "
                                     f"not at the log end {self.log_end_offset}")
        total = len(view)
        last_offset = parsed[-1][0].base_offset + parsed[-1][0].last_offset_delta
        max_timestamp = max(h.max_timestamp for h, _, _ in parsed)
        segment = self._segments[-1]
        if total > self.config.segment_bytes or self._should_roll(segment, total, max_timestamp, last_offset,
                                                                  now_ms):
            segment = self._roll(now_ms)
        position = segment.size
        _write(segment, [view], total)
        for header, start, end in parsed:
            segment.track_batch(position + start, end - start, header.base_offset + header.last_offset_delta,
                                header.max_timestamp)
            if self.epochs is not None and header.partition_leader_epoch > self.epochs.latest_epoch:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)
        segment.size += total
        self.size_bytes += total
        self.log_end_offset = last_offset + 1
        return [h for h, _, _ in parsed]

    def _should_roll(self, segment: LogSegment, size: int, max_timestamp: int, last_offset: int,
                     now_ms: int) -> bool:
        """Kafka's LogSegment.shouldRoll: full, too old (by the first batch's timestamp, else its age),
        an index full, or offsets no longer relative to the base offset in 32 bits."""
        config = self.config
        if segment.size > config.segment_bytes - size:
            return True
        if segment.size > 0:
            rolling = segment.rolling_timestamp
            if rolling is not None and rolling >= 0:
                waited = max_timestamp - rolling
            else:
                waited = now_ms - segment.created_ms
            if waited > config.segment_ms:
                return True
        return (segment.offset_index.is_full or segment.time_index.is_full
                or segment.would_overflow_offsets(last_offset))

    def _roll(self, now_ms: int) -> LogSegment:
        old = self._segments[-1]
        if old.is_empty:
            return old  # a new segment would have the same base offset
        old.seal()
        new = LogSegment.create(self.directory, self.log_end_offset, self.config, now_ms)
        with self._lock:
            self._segments.append(new)
            self._bases.append(new.base_offset)
            self._unflushed.append(old)
            self._dir_dirty = True
        return new

    # --- durability -------------------------------------------------------------------------------------

    def flush(self) -> None:
        """fdatasync everything appended so far; then flushed_offset covers it. Blocking; safe to run in a
        worker thread while the event-loop thread appends and reads."""
        point = self.begin_flush(dup_fds=True)
        if point is None:
            return
        synced = False
        try:
            for fd in point.fds:
                os.fdatasync(fd)
            for segment in point.rolled:  # their indexes are not rebuilt at open: they must be durable too
                fsync_file(segment.offset_index.path)
                fsync_file(segment.time_index.path)
            if point.sync_dir:
                fsync_dir(self.directory)
            synced = True
        finally:
            for fd in point.fds:
                os.close(fd)
            self.end_flush(point, synced)

    def begin_flush(self, *, dup_fds: bool = False) -> FlushPoint | None:
        """The first half of a flush: takes the flush lock (released by end_flush) and captures what the
        flush covers. Without `dup_fds` the caller syncs the whole filesystem (syncfs) in between, which
        covers the segments, their indexes and the directory at once. None (and no lock held) if closed."""
        self._flush_lock.acquire()
        with self._lock:
            if self.closed:
                self._flush_lock.release()
                return None
            rolled = list(self._unflushed)
            active = self._segments[-1]
            # dups: retention may close a segment's fd while a worker thread syncs it
            fds = [os.dup(segment.fd) for segment in (*rolled, active)] if dup_fds else []
            point = FlushPoint(self.log_end_offset, self._generation, rolled, active.base_offset,
                               self._dir_dirty, fds)
            self._dir_dirty = False
        return point

    def end_flush(self, point: FlushPoint, synced: bool) -> None:
        """The second half: publishes flushed_offset if the sync succeeded, and releases the flush lock."""
        try:
            if not synced:
                with self._lock:
                    self._dir_dirty = self._dir_dirty or point.sync_dir
                return
            with self._lock:
                if point.generation == self._generation and point.target > self.flushed_offset:
                    self.flushed_offset = point.target
                self._unflushed = [s for s in self._unflushed if s not in point.rolled]
            if point.rolled:
                self._set_recovery_point(point.active_base)
        finally:
            self._flush_lock.release()

    # --- compaction ---------------------------------------------------------------------------------------

    def cleanable_segments(self) -> tuple[list[LogSegment], int, int]:
        """The closed segments already flushed (the cleaner rewrites only durable data), oldest first; the
        log's generation (truncation bumps it); where they end: the base offset of the next segment, the
        first unflushed one or else the active one (a pass that claimed up to the active segment would skip
        the unflushed ones for good)."""
        with self._lock:
            closed = []
            for segment in self._segments[:-1]:
                if segment in self._unflushed:
                    break
                closed.append(segment)
            return closed, self._generation, self._segments[len(closed)].base_offset

    @property
    def has_unflushed_segments(self) -> bool:
        """Rolled segments wait for a flush (the cleaner flushes them first: it rewrites durable data only)."""
        return bool(self._unflushed)

    @property
    def first_dirty_offset(self) -> int:
        """Where the cleaner's next pass starts reading new data (the cleaner checkpoint)."""
        if self._first_dirty is None:
            self._first_dirty = read_checkpoint(self.directory / CLEANER_CHECKPOINT) or 0
        if not self.log_start_offset <= self._first_dirty <= self._segments[-1].base_offset:
            return self.log_start_offset  # truncated or deleted below it: clean everything again
        return self._first_dirty

    def swap_cleaned(self, job: CleaningJob, result: CleaningResult, *, now_ms: int) -> bool:
        """Put a cleaning pass's new segments in place of the ones it read, unless the log changed under it
        (retention, DeleteRecords or truncation removed some): then the pass is discarded (False)."""
        old = job.originals[:result.replaced]
        with self._lock:
            start = next((i for i, s in enumerate(self._segments) if s is old[0]), -1)
            current = self._segments[start:start + len(old)] if start >= 0 else []
            unchanged = (job.generation == self._generation and len(current) == len(old)
                         and all(a is b for a, b in zip(current, old, strict=True)))
        if not unchanged:
            shutil.rmtree(result.directory, ignore_errors=True)
            return False
        os.rename(result.directory, self.directory / SWAP_DIR)
        fsync_dir(self.directory)  # the commit point: from here a crash completes the swap at open
        for segment in old:
            segment.close()
        bases = complete_swap(self.directory)
        new = [LogSegment.open(self.directory, base, self.config, now_ms) for base in bases]
        for segment in new:
            if not segment.load_indexes():
                segment.recover()
        with self._lock:
            self._segments[start:start + len(old)] = new
            self._bases = [s.base_offset for s in self._segments]
        self.size_bytes = sum(s.size for s in self._segments)
        self._first_dirty = result.end_offset
        write_checkpoint(self.directory / CLEANER_CHECKPOINT, self.directory, result.end_offset)
        return True

    def _set_recovery_point(self, offset: int) -> None:
        if offset != self._recovery_point:
            write_checkpoint(self.directory / RECOVERY_POINT_CHECKPOINT, self.directory, offset)
            self._recovery_point = offset

    # --- retention and deletion -------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Kafka's UnifiedLog.deleteOldSegments: segments wholly below the log start offset, then (with the
        delete cleanup policy) beyond retention.bytes, then past retention.ms by their largest timestamp.
        A non-empty active segment may go too, after rolling a new one. Returns the number deleted."""
        deleted = self._delete_start_offset_breached(now_ms)
        if not self.config.delete_enabled:
            return deleted
        retention_bytes = self.config.retention_bytes
        if retention_bytes >= 0 and self.size_bytes >= retention_bytes:
            excess = self.size_bytes - retention_bytes

            def over_size(segment: LogSegment, _next: LogSegment | None) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True

            deleted += self._delete_while(over_size, now_ms)
        retention_ms = self.config.retention_ms
        if retention_ms >= 0:
            deleted += self._delete_while(
                lambda segment, _next: now_ms - segment.largest_timestamp() > retention_ms, now_ms)
        return deleted

    def delete_records(self, offset: int, *, now_ms: int | None = None) -> None:
        """DeleteRecords: move the log start offset up to `offset` (persisted), deleting the segments
        wholly below it. OffsetOutOfRangeError beyond the log end offset (the high watermark)."""
        if offset < 0 or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        write_checkpoint(self.directory / LOG_START_OFFSET_CHECKPOINT, self.directory, offset)
        self._delete_start_offset_breached(_now(now_ms))
        if self.epochs is not None:
            self.epochs.truncate_from_start(self.log_start_offset)

    def _delete_start_offset_breached(self, now_ms: int) -> int:
        return self._delete_while(
            lambda _segment, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now_ms)

    def _delete_while(self, predicate: Callable[[LogSegment, LogSegment | None], bool], now_ms: int) -> int:
        """Delete the oldest segments while `predicate(segment, next segment)` holds (LocalLog's
        deletableSegments: never an empty active segment)."""
        segments = self._segments
        doomed: list[LogSegment] = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            if (nxt is None and segment.is_empty) or not predicate(segment, nxt):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(segments):
            self._roll(now_ms)  # a log always keeps one segment: the new, empty active one
        with self._lock:
            del self._segments[:len(doomed)], self._bases[:len(doomed)]
            self._unflushed = [s for s in self._unflushed if s not in doomed]
        for segment in doomed:
            self.size_bytes -= segment.size
            segment.delete_files()
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        if self.epochs is not None:
            self.epochs.truncate_from_start(self.log_start_offset)
        return len(doomed)

    def truncate_to(self, offset: int, *, now_ms: int | None = None) -> None:
        """Remove everything from the batch holding `offset` on (the log end becomes that batch's base
        offset). Below the log start offset the log is emptied and starts again at `offset`."""
        with self._flush_lock:
            if offset >= self.log_end_offset:
                return
            if offset < self.log_start_offset:
                self._truncate_fully(offset, _now(now_ms))
                return
            with self._lock:
                keep = bisect_right(self._bases, offset) or 1
                doomed = self._segments[keep:]
                del self._segments[keep:], self._bases[keep:]
                self._unflushed = [s for s in self._unflushed if s not in doomed]
                self._generation += 1
            for segment in doomed:
                segment.delete_files()
            active = self._segments[-1]
            if active in self._unflushed:
                self._unflushed.remove(active)
            active.truncate_to(offset)
            self._after_truncation()
            if self.epochs is not None:
                self.epochs.truncate_from_end(self.log_end_offset)

    def _truncate_fully(self, offset: int, now_ms: int) -> None:
        with self._lock:
            doomed, self._segments = self._segments, []
            self._bases = []
            self._unflushed = []
            self._generation += 1
        for segment in doomed:
            segment.delete_files()
        segment = LogSegment.create(self.directory, offset, self.config, now_ms)
        with self._lock:
            self._segments.append(segment)
            self._bases.append(offset)
            self._dir_dirty = True
        self.log_start_offset = offset
        write_checkpoint(self.directory / LOG_START_OFFSET_CHECKPOINT, self.directory, offset)
        self._after_truncation()
        if self.epochs is not None:
            self.epochs.clear()

    def _after_truncation(self) -> None:
        self.log_end_offset = self._segments[-1].next_offset
        self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        self.size_bytes = sum(s.size for s in self._segments)
        # The active segment changed on disk: a crash must make the next open scan it.
        self._recovery_point = -1
        self._set_recovery_point(self._segments[-1].base_offset)

    # --- lifecycle ----------------------------------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    def close(self, sync: bool = True) -> None:
        """Flush and close. The active segment's indexes are flushed too: after a clean shutdown the next
        open takes them as they are instead of scanning the segment. `sync=False`: closed without an
        fdatasync (a throwaway data dir)."""
        if self.closed:
            return
        active = self._segments[-1]
        active.seal()
        if sync:
            self.flush()
            fsync_file(active.offset_index.path)
            fsync_file(active.time_index.path)
        with self._flush_lock, self._lock:
            self.closed = True
            for segment in self._segments:
                segment.close()

    def delete(self) -> None:
        """Close and remove the partition's directory."""
        if not self.closed:
            with self._flush_lock, self._lock:
                self.closed = True
                for segment in self._segments:
                    segment.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _write(segment: LogSegment, iov: list[Buffer], total: int) -> None:
    """Write at the segment's end; on failure cut the file back so the log stays whole."""
    position = segment.size
    try:
        written = os.pwritev(segment.fd, iov, position)
        if written < total:  # short writes are rare on regular files (disk full, signals): finish them
            data = memoryview(b"".join(iov))
            while written < total:
                written += os.pwrite(segment.fd, data[written:], position + written)
    except OSError:
        try:
            os.ftruncate(segment.fd, position)
        except OSError:
            log.exception("%s: cannot cut back a failed append", segment.path(".log"))
        raise


def _now(now_ms: int | None) -> int:
    return time.time_ns() // 1_000_000 if now_ms is None else now_ms


__all__ = ["Appended", "FlushPoint", "OffsetOutOfRangeError", "PartitionLog",
           "RecordBatchTooLargeError", "file_name"]
