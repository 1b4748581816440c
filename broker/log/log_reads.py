"""Reading a partition's log: stored batches from an offset (Fetch, the replica fetchers, the coordinators'
replay), the searches by timestamp (ListOffsets), and the batch headers (producer state rebuilt from them).

Read-only over the segments: `PartitionLog` inherits it (its segment list and offsets are the state read here).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING

from protocol.records import BatchHeader

if TYPE_CHECKING:
    from broker.log.segment import LogSegment


class OffsetOutOfRangeError(Exception):
    """Kafka's OffsetOutOfRangeException (OFFSET_OUT_OF_RANGE)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")
        self.offset = offset


class LogReads:
    _segments: list[LogSegment]
    _bases: list[int]  # the segments' base offsets, for bisecting
    log_start_offset: int
    log_end_offset: int

    def read(self, offset: int, max_bytes: int, *, min_one: bool = True,
             max_offset: int | None = None) -> bytes:
        """Stored whole batches from the one holding `offset` (it may start before `offset`), up to
        max_bytes, at least one batch when min_one (KIP-74), none holding max_offset or later. Stops at
        the end of a segment. b"" at the log end offset."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)
        limit = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if offset >= limit:
            return b""
        segments = self._segments
        for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
            data = segments[i].read(offset, max_bytes, min_one, limit)
            if data is not None:
                return data
        return b""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start offset whose timestamp is
        >= `timestamp`; None if none. As Kafka's UnifiedLog.fetchOffsetByTimestamp, from the first segment
        whose largest timestamp is >= it; unlike Kafka, when all its matches are below the log start
        offset (DeleteRecords), the search goes on in later segments instead of answering none."""
        for segment in self._segments:
            if segment.largest_timestamp() >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def legacy_offsets_before(self, timestamp: int, max_num_offsets: int, now_ms: int) -> list[int]:
        """ListOffsets v0 (Kafka's UnifiedLog.legacyFetchOffsetsBefore): the base offsets of the segments
        last modified at or before `timestamp` (-1: latest, -2: earliest), newest first, and the log end
        offset as of now when the active segment holds data; at most `max_num_offsets` of them."""
        segments = list(self._segments)
        points = [(max(segment.base_offset, self.log_start_offset), segment.last_modified_ms())
                  for segment in segments]
        if segments[-1].size > 0:
            points.append((self.log_end_offset, now_ms))
        if timestamp == -1:
            start = len(points) - 1
        elif timestamp == -2:
            start = 0
        else:
            start = len(points) - 1
            while start >= 0 and points[start][1] > timestamp:
                start -= 1
        offsets = [points[i][0] for i in range(start, start - min(max_num_offsets, start + 1), -1)]
        return sorted(offsets, reverse=True)

    def max_timestamp(self) -> tuple[int, int]:
        """(offset, timestamp) of the first record with the log's largest timestamp; (-1, -1) if none."""
        best = self._segments[0]
        for segment in self._segments[1:]:
            if segment.max_timestamp > best.max_timestamp:
                best = segment
        return best.offset_of_max_timestamp_record() or (-1, -1)

    def iter_batch_headers(self, start_offset: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the stored batches from the one holding `start_offset` (default: the log start),
        e.g. to rebuild producer state. Do not append while iterating."""
        offset = self.log_start_offset if start_offset is None else start_offset
        segments = list(self._segments)
        for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
            segment = segments[i]
            found = segment.find_batch(offset)
            if found is None:
                continue
            for _pos, head in segment.walk(found[0]):
                yield BatchHeader(*head)

    def read_batch(self, offset: int) -> bytes:
        """The whole stored batch holding `offset` (or the first one after it); b"" if none. For the
        records of a control batch (transaction markers) when replaying producer state, not the hot path."""
        segments = self._segments
        for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
            found = segments[i].find_batch(offset)
            if found is not None:
                return segments[i].read_batch(*found)
        return b""
