"""syncfs(2): write back and commit a whole filesystem in one call.

A grouped flush of many partitions would otherwise pay one fdatasync, that is one journal commit, per
partition: on this project's ext4 VM 100 files after a small append each took 19 ms with sequential
fdatasyncs and 0.7 ms with one syncfs. Linux only (and reports write-back errors from 5.8 on); elsewhere
`available()` is false and the flusher syncs the logs one by one.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_libc: Any = None


def available() -> bool:
    global _libc
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            import ctypes  # only for a grouped flush of several logs: not on a broker's startup path

            libc = ctypes.CDLL(None, use_errno=True)
            if hasattr(libc, "syncfs"):
                libc.syncfs.argtypes = [ctypes.c_int]
                _libc = libc
    return _libc is not False


def syncfs(fd: int) -> None:
    """Sync the filesystem holding `fd`; OSError on failure."""
    if not available():
        raise OSError("syncfs is not available on this platform")
    if _libc.syncfs(fd) != 0:
        import ctypes

        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
