"""The embedded consumer protocol of groups of protocol type "consumer": a member's subscription (its JoinGroup
metadata, ConsumerProtocolSubscription v0-3) and its assignment (the SyncGroup bytes, ConsumerProtocolAssignment
v0-3), both prefixed by an int16 version, as Kafka's ConsumerProtocol reads and writes them.

The classic coordinator only needs a subscription's topics (OffsetDelete refuses them with
GROUP_SUBSCRIBED_TO_TOPIC and offset expiry keeps them): `subscription_topics` reads just those, as every version
starts with them. The KIP-848 online migration reads and writes the rest: the owned partitions and rack of a
classic member that joins a consumer group, the assignment it is handed in SyncGroup.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.errors import DecodeError

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
HIGHEST_VERSION = 3  # of both ConsumerProtocolSubscription and ConsumerProtocolAssignment in Kafka 4


class SubscriptionError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: dict[str, list[int]] = field(default_factory=dict)  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    version: int
    partitions: dict[str, list[int]]
    user_data: bytes | None = None


def subscription_topics(metadata: bytes) -> list[str]:
    try:
        (version,) = _INT16.unpack_from(metadata, 0)
        if version < 0:
            raise SubscriptionError(f"unknown subscription version {version}")
        (count,) = _INT32.unpack_from(metadata, 2)
        if count < 0 or count > len(metadata):
            raise SubscriptionError(f"invalid topic count {count}")
        pos = 6
        topics = []
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, pos)
            pos += 2
            if size < 0 or pos + size > len(metadata):
                raise SubscriptionError("invalid topic name length")
            topics.append(metadata[pos:pos + size].decode())
            pos += size
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise SubscriptionError(f"malformed subscription: {exc}") from None


def protocol_version(data: bytes) -> int:
    """The version a subscription or assignment starts with; newer than Kafka knows reads as its newest (Kafka's
    checkSubscriptionVersion/checkAssignmentVersion)."""
    if len(data) < 2:
        raise SubscriptionError("consumer protocol data shorter than its version")
    (version,) = _INT16.unpack_from(data, 0)
    if version < 0:
        raise SubscriptionError(f"unsupported consumer protocol version {version}")
    return min(version, HIGHEST_VERSION)


def _decode(name: str, data: bytes) -> tuple[int, object]:
    from protocol.schema import message

    version = protocol_version(data)
    try:
        return version, message(name).decode(version, data, 2)
    except (DecodeError, UnicodeDecodeError) as exc:
        raise SubscriptionError(f"malformed {name}: {exc}") from None


def _partitions(entries: Iterable[object]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for entry in entries:
        out.setdefault(entry.topic, []).extend(entry.partitions)  # type: ignore[attr-defined]
    return out


def decode_subscription(metadata: bytes) -> Subscription:
    """A member's JoinGroup metadata (Kafka's deserializeConsumerProtocolSubscription)."""
    version, s = _decode("ConsumerProtocolSubscription", metadata)
    return Subscription(version, list(s.topics), None if s.user_data is None else bytes(s.user_data),  # type: ignore[attr-defined]
                        _partitions(s.owned_partitions or ()), s.generation_id, s.rack_id)  # type: ignore[attr-defined]


def decode_assignment(data: bytes) -> MemberAssignment:
    """A member's SyncGroup assignment (Kafka's deserializeConsumerProtocolAssignment)."""
    version, a = _decode("ConsumerProtocolAssignment", data)
    return MemberAssignment(version, _partitions(a.assigned_partitions or ()),  # type: ignore[attr-defined]
                            None if a.user_data is None else bytes(a.user_data))  # type: ignore[attr-defined]


def encode_assignment(partitions: Mapping[str, Iterable[int]], version: int) -> bytes:
    """The SyncGroup bytes of an assignment, at the version of the member's subscription (Kafka's
    serializeAssignment: no user data; topics and partitions in order)."""
    from protocol.schema import message

    version = min(max(version, 0), HIGHEST_VERSION)
    body = {"assigned_partitions": [{"topic": topic, "partitions": sorted(parts)}
                                    for topic, parts in sorted(partitions.items())],
            "user_data": None}
    return _INT16.pack(version) + message("ConsumerProtocolAssignment").encode(version, body)
