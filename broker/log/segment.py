"""One log segment: `<base offset>.log` of stored batches plus its `.index` and `.timeindex`.

Index maintenance follows Kafka's LogSegment: after more than index.interval.bytes of log since the
last entry, an offset index entry (batch last offset -> batch start) and a time index entry (max timestamp
so far -> last offset of the batch holding it, only when that timestamp grew). Appends and recovery build
the same entries, so a rebuilt index equals the one written while appending.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.index import OffsetIndex, TimeIndex
from protocol.crc32c import crc32c
from protocol.records import (
    ATTRIBUTES_OFFSET,
    BATCH_OVERHEAD,
    LOG_OVERHEAD,
    CorruptRecordError,
    decode_records,
    parse_batch_header,
    record_timestamp,
)

log = logging.getLogger(__name__)

# The batch header as a tuple: base_offset, batch_length, leader epoch, magic, crc, attributes,
# last_offset_delta, base_timestamp, max_timestamp, producer id, producer epoch, base sequence, count.
_HEAD = struct.Struct(">qiibIhiqqqhii")
HEAD_SIZE = _HEAD.size
INT32_MAX = 2**31 - 1
RECOVERY_CHUNK = 8 * 1024 * 1024
_WALK_CHUNK = 8192
_INDEX_WRITE_BATCH = 512  # pending entries written to the index files at a time


def file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """Synchronous; used from the event-loop thread, except that a flushing thread may fdatasync a dup
    of `fd` and open the index files by path."""

    def __init__(self, directory: Path, base_offset: int, fd: int, config: LogConfig, now_ms: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.created_ms = now_ms  # Kafka: when this object was created, also on load
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset  # last offset of the first batch with max_timestamp
        self.rolling_timestamp: int | None = None  # max timestamp of the first batch (segment.ms rolling)
        self.bytes_since_index = 0
        self.index_interval = config.index_interval_bytes
        self.offset_index = OffsetIndex(self.path(".index"), base_offset, config.segment_index_bytes // 8)
        self.time_index = TimeIndex(self.path(".timeindex"), base_offset, config.segment_index_bytes // 12)

    def path(self, suffix: str) -> Path:
        return self.directory / file_name(self.base_offset, suffix)

    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        fd = os.open(directory / file_name(base_offset, ".log"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        segment = cls(directory, base_offset, fd, config, now_ms)
        segment.offset_index.rewrite()
        segment.time_index.rewrite()
        return segment

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """An existing segment, not yet checked: call load_indexes() or recover()."""
        fd = os.open(directory / file_name(base_offset, ".log"), os.O_RDWR)
        return cls(directory, base_offset, fd, config, now_ms)

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    # --- appending --------------------------------------------------------------------------------------

    def track_batch(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """Account for a batch written at `position`: offsets, timestamps, index entries."""
        if self.rolling_timestamp is None:
            self.rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_index > self.index_interval:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
            if self.offset_index.pending >= _INDEX_WRITE_BATCH:
                self.write_indexes()
        self.bytes_since_index += size
        self.next_offset = last_offset + 1

    def write_indexes(self) -> None:
        self.offset_index.write_pending()
        self.time_index.write_pending()

    def seal(self) -> None:
        """The segment stops being active: like Kafka, its time index ends with the max timestamp, so a
        later load knows the segment's largest timestamp without reading the log."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.write_indexes()

    def would_overflow_offsets(self, last_offset: int) -> bool:
        return last_offset - self.base_offset > INT32_MAX

    # --- loading and recovery ---------------------------------------------------------------------------

    def load_indexes(self) -> bool:
        """Take a closed segment's state from its index files, checking them against the log's tail
        (the batches after the last offset index entry). False when they are missing or inconsistent.
        After a clean shutdown the active segment loads so too, and appends go on from the state that
        recover() would have rebuilt."""
        offset_index = OffsetIndex.load(self.offset_index.path, self.base_offset,
                                        self.offset_index.max_entries, self.size)
        time_index = TimeIndex.load(self.time_index.path, self.base_offset, self.time_index.max_entries)
        if offset_index is None or time_index is None:
            return False
        entry = offset_index.last_entry()
        position = entry[1] if entry else 0
        next_offset = self.base_offset
        tail_max_timestamp = -1
        end = position
        try:
            for pos, head in self.walk(position):
                last = head[0] + head[6]
                if pos == position and entry is not None and last != entry[0]:
                    return False
                if last < next_offset:
                    return False
                next_offset = last + 1
                tail_max_timestamp = max(tail_max_timestamp, head[8])
                end = pos + LOG_OVERHEAD + head[1]
        except CorruptRecordError:
            return False
        if end != self.size:
            return False
        max_timestamp, offset_of_max = time_index.last_entry()
        if (self.size and offset_of_max >= next_offset) or tail_max_timestamp > max_timestamp:
            return False
        self.offset_index, self.time_index = offset_index, time_index
        self.next_offset = next_offset
        self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max
        self.bytes_since_index = self.size - position  # the last indexed batch and the tail after it
        self.rolling_timestamp = self.first_batch_timestamp() if self.size else None
        return True

    def recover(self) -> int:
        """Scan the whole log, checking each batch's framing, offsets and CRC; cut it after the last good
        batch; rebuild both indexes. Returns the number of bytes cut."""
        self.offset_index.clear()
        self.time_index.clear()
        fd = self.fd
        size = os.fstat(fd).st_size
        unpack = _HEAD.unpack_from
        index_append, time_append = self.offset_index.append, self.time_index.maybe_append
        interval, offset_limit = self.index_interval, self.base_offset + INT32_MAX
        next_offset = self.base_offset
        max_timestamp, offset_of_max = -1, self.base_offset
        since_index = 0
        pos = 0
        reason = ""
        chunk, chunk_start, chunk_len = b"", 0, 0
        view = memoryview(chunk)
        # The hot loop of a restart (a 1 GiB segment can hold millions of batches): track_batch inlined.
        while pos < size:
            off = pos - chunk_start
            if off + HEAD_SIZE > chunk_len:
                chunk, chunk_start, off = os.pread(fd, RECOVERY_CHUNK, pos), pos, 0
                chunk_len, view = len(chunk), memoryview(chunk)
                if chunk_len < HEAD_SIZE:
                    reason = "truncated batch header"
                    break
            head = unpack(chunk, off)
            length = head[1]
            end = pos + LOG_OVERHEAD + length
            if head[3] != 2 or length < BATCH_OVERHEAD or end > size:
                reason = f"bad batch (magic {head[3]}, length {length})"
                break
            base = head[0]
            last = base + head[6]
            if base < next_offset or last < base or last > offset_limit:
                reason = f"offsets out of order (batch {base}..{last} after {next_offset - 1})"
                break
            if off + LOG_OVERHEAD + length > chunk_len:
                chunk, chunk_start, off = os.pread(fd, max(RECOVERY_CHUNK, end - pos), pos), pos, 0
                chunk_len, view = len(chunk), memoryview(chunk)
                if chunk_len < end - pos:
                    reason = "truncated batch"
                    break
            if crc32c(view[off + ATTRIBUTES_OFFSET:off + LOG_OVERHEAD + length]) != head[4]:
                reason = "CRC mismatch"
                break
            if head[8] > max_timestamp:
                max_timestamp, offset_of_max = head[8], last
            if since_index > interval:
                index_append(last, pos)
                time_append(max_timestamp, offset_of_max)
                since_index = 0
            since_index += end - pos
            next_offset = last + 1
            pos = end
        truncated = size - pos
        if truncated:
            log.warning("%s: %s at byte %d, truncating %d bytes", self.path(".log"), reason, pos, truncated)
            os.ftruncate(fd, pos)
        self.size = pos
        self.next_offset = next_offset
        self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max
        self.bytes_since_index = since_index
        self.rolling_timestamp = self.first_batch_timestamp() if pos else None
        # A recovered segment's time index ends with its max timestamp, as a sealed one does (Kafka).
        self.time_index.maybe_append(max_timestamp, offset_of_max)
        self.offset_index.rewrite()
        self.time_index.rewrite()
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding `offset` and everything after; returns bytes removed."""
        if offset >= self.next_offset:
            return 0
        position = self.position_of(offset)
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self.recover()
        return removed

    # --- reading ------------------------------------------------------------------------------------------

    def walk(self, position: int, end: int | None = None) -> Iterator[tuple[int, tuple]]:
        """(position, header tuple) of each batch from `position` (a batch start)
        while its start is before `end` (default: the segment's end). Reads in small chunks."""
        limit = self.size if end is None else end
        buf, buf_start = b"", position
        while position < limit:
            off = position - buf_start
            if off + HEAD_SIZE > len(buf):
                buf, buf_start, off = os.pread(self.fd, _WALK_CHUNK, position), position, 0
                if len(buf) < HEAD_SIZE:
                    raise CorruptRecordError(f"{self.path('.log')}: truncated batch at {position}")
            head = _HEAD.unpack_from(buf, off)
            if head[1] < BATCH_OVERHEAD:
                raise CorruptRecordError(f"{self.path('.log')}: bad batch length {head[1]} at {position}")
            yield position, head
            position += LOG_OVERHEAD + head[1]

    def find_batch(self, offset: int) -> tuple[int, tuple] | None:
        """(position, header) of the first batch whose last offset >= `offset`."""
        for pos, head in self.walk(self.offset_index.lookup(offset)[1]):
            if head[0] + head[6] >= offset:
                return pos, head
        return None

    def position_of(self, offset: int) -> int:
        """Start of the batch holding `offset` (or the first one after it); the size if none."""
        found = self.find_batch(offset)
        return found[0] if found else self.size

    def read(self, offset: int, max_bytes: int, min_one: bool, max_offset: int) -> bytes | None:
        """Whole batches from the one holding `offset`, none holding `max_offset` or later, up to
        max_bytes (at least the first batch when min_one). None when the segment has nothing at or after
        `offset`; b"" when limits leave nothing to return."""
        if offset >= self.next_offset:
            return None
        found = self.find_batch(offset)
        if found is None:
            return None
        start, head = found
        first_end = start + LOG_OVERHEAD + head[1]
        if head[0] + head[6] >= max_offset:
            return b""
        # Kafka's maxPosition: where the batch holding max_offset starts.
        limit = self.size if max_offset >= self.next_offset else self.position_of(max_offset)
        if first_end - start > max_bytes:
            return os.pread(self.fd, first_end - start, start) if min_one else b""
        want = min(start + max_bytes, limit)
        if want == limit:
            end = limit  # the segment's end or a batch start: a boundary
        else:
            end = max(first_end, self.offset_index.floor_position(want))
            for pos, head in self.walk(end, want):
                batch_end = pos + LOG_OVERHEAD + head[1]
                if batch_end > want:
                    break
                end = batch_end
        return os.pread(self.fd, end - start, start)

    def read_batch(self, position: int, head: tuple) -> bytes:
        return os.pread(self.fd, LOG_OVERHEAD + head[1], position)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `starting_offset` with a timestamp >=
        `timestamp` (LogSegment.findOffsetByTimestamp + FileRecords.searchForTimestamp)."""
        indexed_offset = self.time_index.lookup(timestamp)[1]
        position = self.offset_index.lookup(max(indexed_offset, starting_offset))[1]
        for pos, head in self.walk(position):
            if head[8] >= timestamp:
                batch = self.read_batch(pos, head)
                header = parse_batch_header(batch)
                for record in decode_records(batch):
                    record_offset = header.base_offset + record.offset_delta
                    ts = record_timestamp(header, record)
                    if ts >= timestamp and record_offset >= starting_offset:
                        return record_offset, ts
        return None

    def offset_of_max_timestamp_record(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the segment's max timestamp (Kafka 3.8+:
        the batch with that max timestamp, then DefaultRecordBatch.offsetOfMaxTimestamp)."""
        position = self.offset_index.lookup(self.offset_of_max_timestamp)[1]
        for pos, head in self.walk(position):
            if head[8] == self.max_timestamp:
                batch = self.read_batch(pos, head)
                header = parse_batch_header(batch)
                for record in decode_records(batch):
                    if record_timestamp(header, record) == self.max_timestamp:
                        return header.base_offset + record.offset_delta, self.max_timestamp
                return None
        return None

    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp (max.compaction.lag.ms counts from it); -1 when empty."""
        if self.size < HEAD_SIZE:
            return -1
        return _HEAD.unpack(os.pread(self.fd, HEAD_SIZE, 0))[8]

    def last_modified_ms(self) -> int:
        """The log file's modification time (Kafka's LogSegment.lastModified)."""
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def largest_timestamp(self) -> int:
        """For retention: the max timestamp, or the file's mtime when no batch has one (Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    # --- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def delete_files(self) -> None:
        self.close()
        for suffix in (".log", ".index", ".timeindex"):
            self.path(suffix).unlink(missing_ok=True)
