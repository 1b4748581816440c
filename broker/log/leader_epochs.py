"""The leader epoch cache of a partition log (Kafka's LeaderEpochFileCache, KIP-101/KIP-279): for each
leader epoch the offset of its first batch, kept in the log directory's `leader-epoch-checkpoint` in
Kafka's text format ("0" the version, the entry count, then "epoch start_offset" per line).

It answers OffsetForLeaderEpoch (where did an epoch end?), so that a follower that comes back, or a
leader that lost its leadership, truncates to the offset where its log and the new leader's part, never
by high watermark alone.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from pathlib import Path

from broker.log.durable_file import write_atomically

log = logging.getLogger(__name__)

CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
_VERSION = 0


class LeaderEpochCache:
    def __init__(self, directory: Path, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = directory / CHECKPOINT
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or ():
            self._epochs.append(epoch)
            self._starts.append(start)

    @classmethod
    def load(cls, directory: Path) -> LeaderEpochCache | None:
        """The stored cache, or None when there is none (or it is unreadable): rebuild it from the log."""
        path = directory / CHECKPOINT
        try:
            lines = path.read_text().split("\n")
            if int(lines[0]) != _VERSION:
                raise ValueError(f"version {lines[0]}")
            count = int(lines[1])
            entries = [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + count])]
            if len(entries) != count:
                raise ValueError("truncated")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, IndexError) as exc:
            log.warning("%s: unreadable, rebuilding it from the log: %s", path, exc)
            return None
        return cls(directory, entries)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    @property
    def latest_epoch_start(self) -> int:
        return self._starts[-1] if self._starts else 0

    def assign(self, epoch: int, start_offset: int) -> bool:
        """A batch of `epoch` at `start_offset` (appended, or the epoch begun at the log end by a new
        leader); a new entry when the epoch is new, or starts earlier than recorded. True when it changed."""
        if epoch < 0 or start_offset < 0:
            return False
        if self._epochs and self._epochs[-1] == epoch and self._starts[-1] <= start_offset:
            return False
        # Entries that the new one contradicts (a later or equal epoch, or a later or equal start) go.
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self._write()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's endOffsetFor: where `requested_epoch` ended, i.e. the start of the
        next known epoch, with the largest known epoch at or below the requested one; the log end for the
        latest epoch; (-1, -1) when undefined or later than any known."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:  # older than any known epoch: its data is gone; replicate from the next start
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset` (Kafka's epochForOffset)."""
        i = bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else None

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to `end_offset`: epochs starting at or after it are gone."""
        if end_offset < 0 or not self._starts or self._starts[-1] < end_offset:
            return
        keep = bisect_left(self._starts, end_offset)
        del self._epochs[keep:], self._starts[keep:]
        self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log starts at `start_offset` now (retention, DeleteRecords): the epoch holding it starts there."""
        removed = bisect_right(self._starts, start_offset)
        if removed == 0:
            return
        epoch = self._epochs[removed - 1]
        del self._epochs[:removed], self._starts[:removed]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        self._write()

    def clear(self) -> None:
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
            self._write()

    def _write(self) -> None:
        lines = [str(_VERSION), str(len(self._epochs)), *(f"{e} {o}" for e, o in self.entries)]
        try:
            write_atomically(self.path, "\n".join(lines) + "\n")
        except FileNotFoundError:  # the log directory is being removed
            pass
