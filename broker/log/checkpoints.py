"""A partition directory's checkpoint files, one offset each in Kafka's checkpoint file format (`0`, `1`,
`<topic> <partition> <offset>`), and the fsyncs of the directory's files.

`log-start-offset-checkpoint`: the log start offset when DeleteRecords moved it past the first segment's base
offset; `recovery-point-offset-checkpoint`: segments before it were flushed with their indexes (the ones from it
on are scanned at open after a crash); `cleaner-offset-checkpoint`: where the log cleaner's next pass starts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from broker.log.durable_file import fsync_path, write_atomically

log = logging.getLogger(__name__)

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


def read_checkpoint(path: Path) -> int | None:
    """The offset in a one-entry Kafka checkpoint file (`0`, `1`, `<topic> <partition> <offset>`)."""
    try:
        lines = path.read_text().split("\n")
        if lines[0].strip() != "0" or int(lines[1]) != 1:
            raise ValueError("unknown checkpoint format")
        return int(lines[2].split()[-1])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


def write_checkpoint(path: Path, directory: Path, offset: int) -> None:
    topic, _, partition = directory.name.rpartition("-")
    write_atomically(path, f"0\n1\n{topic or directory.name} {partition if partition.isdigit() else 0} {offset}\n")


def fsync_file(path: Path) -> None:
    fsync_path(path, data_only=True, missing_ok=True)  # missing: deleted by retention meanwhile


def fsync_dir(directory: Path) -> None:
    fsync_path(directory)
