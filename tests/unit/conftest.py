"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from broker.log.segment import LogSegment


@pytest.fixture
def scanned(monkeypatch) -> list[str]:
    """The directories of the segments that recover() scans (a log opened after a clean shutdown scans none)."""
    names: list[str] = []
    recover = LogSegment.recover

    def counting(segment: LogSegment) -> int:
        names.append(segment.directory.name)
        return recover(segment)

    monkeypatch.setattr(LogSegment, "recover", counting)
    return names
