"""Compatibility levels and modes, as Confluent's registry names them, and the check of a new schema against a
subject's earlier versions at a level."""

from __future__ import annotations

import enum
from collections.abc import Sequence

from broker.http.registry.schema_types import ParsedSchema


class Compatibility(enum.Enum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"  # the new schema reads data written with the latest
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"  # ... with every earlier version
    FORWARD = "FORWARD"  # the latest reads data written with the new one
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"  # both
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def backward(self) -> bool:
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.value.startswith(("FORWARD", "FULL"))

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")


DEFAULT_COMPATIBILITY = Compatibility.BACKWARD  # Confluent's schema.compatibility.level default


class Mode(enum.Enum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    IMPORT = "IMPORT"  # registrations carry their ids (migrations from another registry)


def check(level: Compatibility, new: ParsedSchema, earlier: Sequence[ParsedSchema]) -> list[str]:
    """Why `new` may not follow `earlier` (oldest first) at `level`; empty: it may."""
    if level is Compatibility.NONE or not earlier:
        return []
    against = earlier if level.transitive else earlier[-1:]
    problems: list[str] = []
    for old in reversed(against):  # the latest first, as Confluent reports
        if old.schema_type != new.schema_type:  # neither can read the other's data (not a 500: a refusal)
            problems.append(f"TYPE_CHANGED: the schema type changed from {old.schema_type} to {new.schema_type}")
            continue
        if level.backward:
            problems += [f"{p} (the new schema reading data of an earlier one)" for p in new.incompatibilities(old)]
        if level.forward:
            problems += [f"{p} (an earlier schema reading data of the new one)" for p in old.incompatibilities(new)]
    return problems
