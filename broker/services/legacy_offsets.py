"""OffsetCommit v0 / OffsetFetch v0 offsets: apart from the group coordinator's, as Kafka keeps them.

A ZooKeeper-mode Kafka broker writes v0 commits to ZooKeeper (`/consumers/<group>/offsets/<topic>/<partition>`,
the offset only: no metadata, no expiry) and answers v0 fetches from there; the group coordinator's offsets
(v1+) are another store, so a v0 commit is invisible to a v1+ fetch and the other way round. Here that
store is one small file in the data dir (`meta/legacy-consumer-offsets.json`), replaced atomically on each
commit, so v0 offsets survive restarts like the znodes do.
"""

from __future__ import annotations

import json
from pathlib import Path

from broker.log.durable_file import write_atomically


class LegacyOffsets:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: dict[str, dict[str, int]] = {}  # group -> "topic/partition" -> offset
        if path.exists():
            self._offsets = json.loads(path.read_text())

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        group = self._offsets.setdefault(group_id, {})
        for (topic, partition), offset in offsets.items():
            group[f"{topic}/{partition}"] = offset
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(self._offsets, sort_keys=True))

    def get(self, group_id: str, topic: str, partition: int) -> int | None:
        return self._offsets.get(group_id, {}).get(f"{topic}/{partition}")
