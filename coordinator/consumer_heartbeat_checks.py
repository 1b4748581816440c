"""The checks of a ConsumerGroupHeartbeat that need no group (Kafka's
GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid) or only the member (its epoch, Kafka's
throwIfConsumerGroupMemberEpochIsInvalid)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from coordinator.consumer_group import ConsumerGroupMember
from coordinator.group_interfaces import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, GroupError
from protocol.header import ErrorCode

_CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


def validate_request(group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                     rack_id: str | None, rebalance_timeout_ms: int, names: list[str] | None, regex: str | None,
                     assignor: str | None, owned: list[Mapping[str, object]] | None, api_version: int,
                     assignors: tuple[str, ...]) -> None:
    """GroupError (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR) for a request no group could take."""
    def blank(value: str | None) -> bool:
        return value is not None and not value.strip()

    if (api_version >= _CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or member_epoch > 0
            or member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and blank(member_id):
        raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if blank(group_id) or group_id is None:
        raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if blank(instance_id):
        raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if blank(rack_id):
        raise GroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if member_epoch == 0:
        if rebalance_timeout_ms == -1:
            raise GroupError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if owned is None or owned:
            raise GroupError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if names is None and regex is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex "
                             "must be non-null when (re-)joining.")
    elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if instance_id is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise GroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if assignor is not None and assignor not in assignors:
        raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. "
                         f"Supported assignors: {', '.join(assignors)}.")


def check_member_epoch(member: ConsumerGroupMember, received: int,
                       owned: dict[uuid.UUID, frozenset[int]] | None) -> None:
    """FENCED_MEMBER_EPOCH for an epoch the member cannot have: a member one epoch behind that owns no more than
    it was given lost a response and is let through."""
    if received > member.member_epoch:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                         f"({received}) than the one known by the group coordinator ({member.member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")
    if received < member.member_epoch:
        subset = owned is not None and all(
            parts <= member.assigned_partitions.get(topic_id, frozenset()) for topic_id, parts in owned.items())
        if received != member.previous_member_epoch or not subset:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member "
                             f"epoch ({received}) than the one known by the group coordinator "
                             f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")


def owned_partitions(entries: Iterable[Mapping[str, object]] | None) -> dict[uuid.UUID, frozenset[int]] | None:
    """The request's TopicPartitions (what the member owns) by topic id; None when not sent."""
    if entries is None:
        return None
    out: dict[uuid.UUID, frozenset[int]] = {}
    for entry in entries:
        topic_id = entry["topic_id"]
        assert isinstance(topic_id, uuid.UUID)
        out[topic_id] = out.get(topic_id, frozenset()) | frozenset(entry["partitions"])  # type: ignore[arg-type]
    return out
