"""The group coordinators (classic, consumer, share) and the broker around them: the store they write
`__consumer_offsets` records to (a write is appended atomically, or StoreError says why not and nothing
changed), the view of the topics they assign, and the error a request is answered with."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType

Record = tuple[bytes, bytes | None]  # key, value (None: tombstone)
# The KIP-848-style groups' (consumer, streams) records before encoding: (type, key, value or None: tombstone).
GroupRecord = tuple[GroupRecordType, dict[str, Any], dict[str, Any] | None]
EVENTS_KEPT = 100  # a modern group's recent events, for introspection
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
TopicPartition = tuple[str, int]


def tombstone(kind: GroupRecordType, group_id: str, **key: str) -> GroupRecord:
    return (kind, {"group_id": group_id, **key}, None)


class StoreError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


class RecordStore(Protocol):
    def write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        """Append the records to the group's `__consumer_offsets` partition, atomically; StoreError if not."""


class GroupStore(RecordStore, Protocol):
    def write_txn(self, group_id: str, producer_id: int, producer_epoch: int, records: list[Record],
                  now_ms: int) -> None:
        """The same, as a transactional batch of the producer (pending until its marker)."""


class TopicsView(Protocol):
    """What the coordinators need to know of the cluster's topics (Kafka's metadata image)."""

    def topic_id(self, name: str) -> uuid.UUID | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def partition_count(self, topic_id: uuid.UUID) -> int: ...  # -1 when unknown

    def topic_names(self) -> list[str]: ...


class GroupError(Exception):
    """An ApiException of Kafka's coordinator: the error code and message of the response."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message
