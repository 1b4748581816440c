"""Differences between Kafka's answers and minibroker's that are understood: deliberate ones (also in the
README, with the reason) and open ones that need work outside a handler or config table. `make
reference-diff` prints them with their reason; the replay test fails on any other difference and on a
known one that is gone (so this list stays true)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    scenario: str  # fnmatch patterns
    step: str
    path: str
    reason: str
    releases: tuple[str, ...] | None = None  # None: every release
    deliberate: bool = False  # listed in the README (a choice), else open work


KNOWN: list[Known] = [
]


def applies(known: Known, release: str, scenario: str) -> bool:
    return (known.releases is None or release in known.releases) and fnmatch.fnmatchcase(scenario, known.scenario)


def matches(known: Known, difference: Any) -> bool:
    return fnmatch.fnmatchcase(difference.step, known.step) and fnmatch.fnmatchcase(difference.path, known.path)


def explain(release: str, scenario: str, difference: Any) -> str | None:
    for known in KNOWN:
        if applies(known, release, scenario) and matches(known, difference):
            return ("deliberate: " if known.deliberate else "open: ") + known.reason
    return None
