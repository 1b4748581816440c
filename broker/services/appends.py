"""The append signal: Fetch long polls sleep on it, and every append wakes them to look at their
partitions again."""

from __future__ import annotations

import trio


class AppendSignal:
    def __init__(self) -> None:
        self._event = trio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = trio.Event()

    @property
    def event(self) -> trio.Event:
        """Set at the next append (take it before looking at the partitions, then wait on it)."""
        return self._event
