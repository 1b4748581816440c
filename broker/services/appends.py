"""The append signal: Fetch long polls sleep on it, and every append wakes them to look at their
partitions again."""

from __future__ import annotations

import trio


class AppendSignal:
    def __init__(self) -> None:
        self._event: trio.Event | None = None  # made when someone waits: a notify with no waiter costs nothing

    def notify(self) -> None:
        event = self._event
        if event is not None:
            self._event = None
            event.set()

    @property
    def event(self) -> trio.Event:
        """Set at the next append (take it before looking at the partitions, then wait on it)."""
        if self._event is None:
            self._event = trio.Event()
        return self._event
