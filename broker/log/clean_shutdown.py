"""The clean-shutdown marker of a data dir (Kafka's `.kafka_cleanshutdown`, one per log dir).

Written once every log was closed (flushed, the active segments' indexes too); while it is there, the logs
are exactly as they were closed, so the next start opens them without scanning any segment. A start removes
it (durably) before anything can write to a log, so that a crash afterwards is recovered as one.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.log.durable_file import fsync_path, write_atomically

MARKER = ".kafka_cleanshutdown"


def mark_clean_shutdown(data_dir: Path) -> None:
    write_atomically(data_dir / MARKER, "{\"version\":0}\n")


def had_clean_shutdown(data_dir: Path) -> bool:
    return os.path.exists(data_dir / MARKER)


def clear_clean_shutdown(data_dir: Path) -> None:
    try:
        os.unlink(data_dir / MARKER)
    except FileNotFoundError:
        return
    fsync_path(data_dir)
