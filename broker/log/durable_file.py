"""Small files that must survive a crash whole (metadata, checkpoints, snapshots): written to a temp file
next to them, fsynced, renamed over the old one, then the directory fsynced so that the rename is durable
too. A crash leaves either the old or the new file, never a torn one. (`sync=False`, a data dir thrown away
after the broker: renamed into place all the same, nothing fsynced.)"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, *, sync: bool = True) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_path(path.parent)


def fsync_path(path: Path, *, data_only: bool = False, missing_ok: bool = False) -> None:
    """fsync (or fdatasync) a file or directory by path."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    try:
        (os.fdatasync if data_only else os.fsync)(fd)
    finally:
        os.close(fd)
