"""A segment's sparse indexes, Kafka's file formats: kept in memory, appended to their files in batches.

`.index` (OffsetIndex): 8-byte entries, relative offset int32 + file position int32 (big-endian): the
last offset of a batch and where that batch starts. `.timeindex` (TimeIndex): 12-byte entries, timestamp
int64 + relative offset int32: the largest timestamp so far and the last offset of the batch that holds it.
Both are rebuildable from the log, so their files may lag behind memory; recovery checks them.
"""

from __future__ import annotations

import os
import struct
import sys
from abc import ABC, abstractmethod
from array import array
from bisect import bisect_right
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _Index(ABC):
    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._written = 0  # entries already in the file

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _encode(self, start: int) -> bytes:
        """Entries from `start` on, in the file format."""

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def write_pending(self) -> None:
        """Append the entries the file lacks."""
        if self._written == len(self):
            return
        with open(self.path, "ab") as f:
            if f.tell() != self._written * self.ENTRY.size:  # the file changed under us: start over
                f.truncate(0)
                self._written = 0
            f.write(self._encode(self._written))
        self._written = len(self)

    def rewrite(self) -> None:
        """Make the file hold exactly the entries. Recovery rebuilds an index that usually equals its file,
        which is then left alone; else it is overwritten in place, not truncated to zero first (ext4 starts
        writing back a file truncated to zero as it is closed: a restart did that for every partition)."""
        data = self._encode(0)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            found = os.pread(fd, len(data) + 1, 0)
            if found != data:
                os.pwrite(fd, data, 0)
                if len(found) > len(data):
                    os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        self._written = len(self)

    @property
    def pending(self) -> int:
        return len(self) - self._written

    @classmethod
    def _read(cls, path: Path) -> bytes | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return data if len(data) % cls.ENTRY.size == 0 else None


class OffsetIndex(_Index):
    ENTRY = _OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)
        self._offsets = array("i")  # relative to base_offset
        self._positions = array("i")

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, offset: int, position: int) -> None:
        self._offsets.append(offset - self.base_offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry with offset <= `offset`; (base_offset, 0) if none."""
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch start <= position (0 if none): a known batch boundary."""
        i = bisect_right(self._positions, position) - 1
        return self._positions[i] if i >= 0 else 0

    def last_entry(self) -> tuple[int, int] | None:
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def truncate_at_position(self, position: int) -> None:
        """Drop entries for batches at or after `position` (the log is cut there)."""
        n = bisect_right(self._positions, position - 1)
        del self._offsets[n:], self._positions[n:]
        self._written = min(self._written, n)

    def clear(self) -> None:
        self.truncate_at_position(0)

    def _encode(self, start: int) -> bytes:
        pairs = array("i", bytes(8 * (len(self) - start)))
        pairs[0::2] = self._offsets[start:]
        pairs[1::2] = self._positions[start:]
        if sys.byteorder == "little":
            pairs.byteswap()
        return pairs.tobytes()

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int, log_size: int) -> OffsetIndex | None:
        """The index in `path`, or None when missing or failing Kafka's sanity checks."""
        data = cls._read(path)
        if data is None:
            return None
        pairs = array("i", data)
        if sys.byteorder == "little":
            pairs.byteswap()
        index = cls(path, base_offset, max_entries)
        index._offsets = pairs[0::2]
        index._positions = pairs[1::2]
        index._written = len(index)
        if index._offsets and (index._offsets[0] < 0 or index._offsets[-1] < index._offsets[0]
                               or index._positions[0] < 0 or index._positions[-1] >= log_size):
            return None
        return index


class TimeIndex(_Index):
    ENTRY = _TIME_ENTRY

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)
        self._timestamps = array("q")
        self._offsets = array("i")  # relative to base_offset

    def __len__(self) -> int:
        return len(self._timestamps)

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset); (-1, base_offset) when empty, as Kafka's TimeIndex.lastEntry."""
        if not self._timestamps:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Only a timestamp larger than the last one gets an entry (so no-timestamp data leaves none)."""
        if timestamp > (self._timestamps[-1] if self._timestamps else -1):
            self._timestamps.append(timestamp)
            self._offsets.append(offset - self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= `timestamp`; (-1, base_offset) if none."""
        i = bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def truncate_at_offset(self, offset: int) -> None:
        """Drop entries pointing at `offset` or later."""
        n = len(self._offsets)
        while n and self._offsets[n - 1] >= offset - self.base_offset:
            n -= 1
        del self._timestamps[n:], self._offsets[n:]
        self._written = min(self._written, n)

    def clear(self) -> None:
        del self._timestamps[:], self._offsets[:]
        self._written = 0

    def _encode(self, start: int) -> bytes:
        pack = _TIME_ENTRY.pack
        pairs = zip(self._timestamps[start:], self._offsets[start:], strict=True)
        return b"".join(pack(t, o) for t, o in pairs)

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int) -> TimeIndex | None:
        data = cls._read(path)
        if data is None:
            return None
        index = cls(path, base_offset, max_entries)
        for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
            index._timestamps.append(timestamp)
            index._offsets.append(relative)
        index._written = len(index)
        if index._offsets and (index._offsets[0] < 0 or index._offsets[-1] < index._offsets[0]
                               or index._timestamps[-1] < index._timestamps[0]):
            return None
        return index
