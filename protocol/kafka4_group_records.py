"""The Kafka 4 record types of `__consumer_offsets` (consumer groups, KIP-848; share groups, KIP-932; streams
groups, KIP-1071) and of `__share_group_state` (KIP-932), byte for byte as Kafka 4.1 (4.4 for the streams
groups) writes them.

Kafka's CoordinatorRecordSerde frames every record the same way: the key is an int16 record type followed by
the key struct at version 0; the value is an int16 version followed by the value struct (a tombstone has no
value). The structs are the JSON definitions in protocol/definitions/ (`<Name>Key` / `<Name>Value`), encoded
with the same schema machinery as the API messages. Record types 0-2 (offset commits and classic group
metadata) are protocol.group_records' business.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from enum import IntEnum
from typing import Any

from construct import Container

from protocol.errors import DecodeError
from protocol.schema import message

_INT16 = struct.Struct(">h")


class RecordError(ValueError):
    """A key or value that is not a known record of this kind, or that is malformed."""


class GroupRecordType(IntEnum):
    """`__consumer_offsets` record types (the key's leading int16), Kafka's CoordinatorRecordType."""

    OFFSET_COMMIT_V0 = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_PARTITION_METADATA = 9  # written by Kafka 4.0 only; 4.1 ignores it, and so do we
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    # 18 was StreamsGroupPartitionMetadata of Kafka 4.0's early-access streams groups, gone since 4.1.
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23


class ShareStateRecordType(IntEnum):
    """`__share_group_state` record types."""

    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1


GROUP_RECORD_NAMES = {
    GroupRecordType.CONSUMER_GROUP_METADATA: "ConsumerGroupMetadata",
    GroupRecordType.CONSUMER_GROUP_PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
    GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA: "ConsumerGroupMemberMetadata",
    GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
    GroupRecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
    GroupRecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
    GroupRecordType.SHARE_GROUP_MEMBER_METADATA: "ShareGroupMemberMetadata",
    GroupRecordType.SHARE_GROUP_METADATA: "ShareGroupMetadata",
    GroupRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: "ShareGroupTargetAssignmentMetadata",
    GroupRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: "ShareGroupTargetAssignmentMember",
    GroupRecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ShareGroupCurrentMemberAssignment",
    GroupRecordType.SHARE_GROUP_STATE_PARTITION_METADATA: "ShareGroupStatePartitionMetadata",
    GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION: "ConsumerGroupRegularExpression",
    GroupRecordType.STREAMS_GROUP_METADATA: "StreamsGroupMetadata",
    GroupRecordType.STREAMS_GROUP_MEMBER_METADATA: "StreamsGroupMemberMetadata",
    GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: "StreamsGroupTargetAssignmentMetadata",
    GroupRecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: "StreamsGroupTargetAssignmentMember",
    GroupRecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: "StreamsGroupCurrentMemberAssignment",
    GroupRecordType.STREAMS_GROUP_TOPOLOGY: "StreamsGroupTopology",
}
SHARE_STATE_RECORD_NAMES = {
    ShareStateRecordType.SHARE_SNAPSHOT: "ShareSnapshot",
    ShareStateRecordType.SHARE_UPDATE: "ShareUpdate",
}

KAFKA4_GROUP_RECORD_TYPES = frozenset(GROUP_RECORD_NAMES)


def record_type(key: bytes) -> int:
    """The leading int16 of a key (for `__consumer_offsets`, 0-2 are the classic types)."""
    if len(key) < 2:
        raise RecordError("key shorter than its record type")
    return _INT16.unpack_from(key)[0]


def _encode(name: str, record_type: int, key: Mapping[str, Any], value: Mapping[str, Any] | None
            ) -> tuple[bytes, bytes | None]:
    key_spec, value_spec = message(f"{name}Key"), message(f"{name}Value")
    key_bytes = _INT16.pack(record_type) + key_spec.encode(0, key)
    if value is None:
        return key_bytes, None
    version = value_spec.valid_versions[1]
    return key_bytes, _INT16.pack(version) + value_spec.encode(version, value)


def _decode(name: str, key: bytes, value: bytes | None) -> tuple[Container, Container | None]:
    key_spec, value_spec = message(f"{name}Key"), message(f"{name}Value")
    try:
        key_struct = key_spec.decode(0, key, 2)
        if value is None:
            return key_struct, None
        if len(value) < 2:
            raise RecordError(f"{name} value shorter than its version")
        version = _INT16.unpack_from(value)[0]
        lo, hi = value_spec.valid_versions
        if not lo <= version <= hi:
            raise RecordError(f"unknown {name}Value version {version}")
        return key_struct, value_spec.decode(version, value, 2)
    except DecodeError as exc:
        raise RecordError(str(exc)) from None


def encode_group_record(kind: GroupRecordType, key: Mapping[str, Any], value: Mapping[str, Any] | None
                        ) -> tuple[bytes, bytes | None]:
    """(key, value) of a consumer/share group record; value None makes the tombstone."""
    return _encode(GROUP_RECORD_NAMES[kind], kind, key, value)


def decode_group_record(key: bytes, value: bytes | None) -> tuple[GroupRecordType, Container, Container | None]:
    """A Kafka 4 group record of `__consumer_offsets`; RecordError for other types or malformed bytes."""
    kind = record_type(key)
    try:
        name = GROUP_RECORD_NAMES[GroupRecordType(kind)]
    except (ValueError, KeyError):
        raise RecordError(f"__consumer_offsets record type {kind} is not a Kafka 4 group record") from None
    key_struct, value_struct = _decode(name, key, value)
    return GroupRecordType(kind), key_struct, value_struct


def encode_share_state_record(kind: ShareStateRecordType, key: Mapping[str, Any], value: Mapping[str, Any] | None
                              ) -> tuple[bytes, bytes | None]:
    return _encode(SHARE_STATE_RECORD_NAMES[kind], kind, key, value)


def decode_share_state_record(key: bytes, value: bytes | None
                              ) -> tuple[ShareStateRecordType, Container, Container | None]:
    kind = record_type(key)
    try:
        name = SHARE_STATE_RECORD_NAMES[ShareStateRecordType(kind)]
    except ValueError:
        raise RecordError(f"unknown __share_group_state record type {kind}") from None
    key_struct, value_struct = _decode(name, key, value)
    return ShareStateRecordType(kind), key_struct, value_struct
