"""Opening a partition's directory, as Kafka's LogLoader: one listing of the directory (leftovers of interrupted
deletions and swaps removed, a committed cleaner swap completed), the checkpoints read, and the segments loaded,
those from the recovery point on scanned and cut at the first bad batch.

The log cleaner writes a pass's segments under `cleaner/`; renaming that directory to `swap/` commits them:
`complete_swap` puts them in place of the old ones, and an uncommitted pass is discarded here.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from broker.log.checkpoints import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, fsync_dir, read_checkpoint
from broker.log.cleaner import CLEANER_DIR, REPLACES_FILE
from broker.log.config import LogConfig
from broker.log.segment import LogSegment

log = logging.getLogger(__name__)

SWAP_DIR = "swap"
_LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp")


@dataclass(frozen=True, slots=True)
class LoadedSegments:
    segments: list[LogSegment]  # never empty: an empty log gets its first segment
    log_start_offset: int
    recovery_point: int
    recovered: list[LogSegment]  # the segments scanned (their data is not known to be flushed)


def load_segments(directory: Path, config: LogConfig, now_ms: int, *, clean_shutdown: bool) -> LoadedSegments:
    """The directory's segments, created if missing. After a clean shutdown (the log was closed, so flushed,
    and nothing wrote to it since) no segment is scanned; otherwise those from the recovery point on are."""
    bases, names = _scan_directory(directory)
    checkpoint_start, recovery_point = (
        read_checkpoint(directory / name) if name in names else None
        for name in (LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT))
    recovery_point = recovery_point or 0
    segments = [LogSegment.open(directory, base, config, now_ms) for base in bases]
    recovered = _recover(segments, None if clean_shutdown else recovery_point)
    if not segments:
        segments.append(LogSegment.create(directory, checkpoint_start or 0, config, now_ms))
    start = max(checkpoint_start or 0, segments[0].base_offset)
    return LoadedSegments(segments, start, recovery_point, recovered)


def _scan_directory(directory: Path) -> tuple[list[int], set[str]]:
    """Base offsets of the segments and the names of the other files, from one listing (a restart lists
    every partition's directory: no more system calls than needed); leftovers of interrupted deletions
    and swaps are removed, a committed cleaner swap is completed. A missing directory is created."""
    try:
        entries = [entry.name for entry in os.scandir(directory)]
    except FileNotFoundError:
        directory.mkdir(parents=True)
        return [], set()
    if SWAP_DIR in entries or CLEANER_DIR in entries:
        if SWAP_DIR in entries:
            log.warning("%s: completing an interrupted cleaner swap", directory)
            complete_swap(directory)
        shutil.rmtree(directory / CLEANER_DIR, ignore_errors=True)
        entries = os.listdir(directory)
    bases: list[int] = []
    indexes: list[tuple[int, str]] = []
    others: set[str] = set()
    for name in entries:
        if name.endswith(_LEFTOVER_SUFFIXES):
            log.warning("%s: removing leftover file %s", directory, name)
            os.unlink(directory / name)
            continue
        stem, _, suffix = name.partition(".")
        if len(stem) != 20 or not stem.isdigit():
            others.add(name)
        elif suffix == "log":
            bases.append(int(stem))
        elif suffix in ("index", "timeindex"):
            indexes.append((int(stem), name))
    known = set(bases)
    for base, name in indexes:
        if base not in known:
            log.warning("%s: removing index %s without its log", directory, name)
            os.unlink(directory / name)
    return sorted(bases), others


def complete_swap(directory: Path) -> list[int]:
    """Move a committed cleaner pass (`swap/`) into the log: first delete the segments it replaces (listed
    in its REPLACES_FILE, which is then renamed to mark that step done), then move the new files in.
    Idempotent, so a crash in the middle is completed by the next open. Returns the base offsets moved."""
    swap = directory / SWAP_DIR
    replaces, moving = swap / REPLACES_FILE, swap / (REPLACES_FILE + ".done")
    if replaces.exists():
        first, end = (int(x) for x in replaces.read_text().split())
        for entry in os.scandir(directory):
            stem, _, suffix = entry.name.partition(".")
            if suffix in ("log", "index", "timeindex") and len(stem) == 20 and stem.isdigit() \
                    and first <= int(stem) < end:
                os.unlink(entry.path)
        fsync_dir(directory)
        os.rename(replaces, moving)
    bases = []
    for entry in os.scandir(swap):
        if entry.name != moving.name:
            os.replace(entry.path, directory / entry.name)
            stem, _, suffix = entry.name.partition(".")
            if suffix == "log":
                bases.append(int(stem))
    moving.unlink(missing_ok=True)
    os.rmdir(swap)
    fsync_dir(directory)
    return sorted(bases)


def _recover(segments: list[LogSegment], recovery_point: int | None) -> list[LogSegment]:
    """Kafka's LogLoader: segments from the one holding the recovery point on (always the last one; none
    when there is no recovery point: a clean shutdown) are scanned and cut at the first bad batch, and if
    one is cut the segments after it are deleted; the others keep their indexes unless those are missing or
    inconsistent. Returns the segments scanned."""
    recovered = []
    i = 0
    while i < len(segments):
        segment = segments[i]
        last = i == len(segments) - 1
        if recovery_point is not None and (last or segments[i + 1].base_offset > recovery_point):
            recovered.append(segment)
            if segment.recover() and not last:
                log.warning("%s: corruption in a segment that was not flushed, deleting the %d segments "
                            "after it", segment.path(".log"), len(segments) - i - 1)
                for later in segments[i + 1:]:
                    later.delete_files()
                del segments[i + 1:]
        elif not segment.load_indexes():
            log.warning("%s: indexes missing or inconsistent, rebuilding", segment.path(".log"))
            recovered.append(segment)
            segment.recover()
        i += 1
    return recovered
