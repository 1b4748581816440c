"""Classic and consumer groups under one group id space (KIP-848's group.consumer.migration.policy): the
types a group id that a coordinator does not own may have elsewhere, and the conversion of a classic group into
a consumer group when a member joins with ConsumerGroupHeartbeat (Kafka's getOrMaybeCreateConsumerGroup). The
other way, an empty consumer group becomes a classic one when a classic member joins (the shell deletes it).
"""

from __future__ import annotations

import logging

from coordinator.consumer_group import ConsumerGroup, GroupRecord
from coordinator.group_interfaces import GroupError
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType

log = logging.getLogger(__name__)

UPGRADE_POLICIES = ("bidirectional", "upgrade")  # group.consumer.migration.policy values that allow it


def consumer_group_for(group_id: str, other: str | None, create: bool, migration_policy: str,
                       records: list[GroupRecord], now_ms: int) -> ConsumerGroup:
    """A new consumer group for a group id no consumer group holds, with the records that convert an empty
    classic group; GroupError when the id cannot become a consumer group. `other` is what the id is to the
    other coordinators (the shell's `other_group_type`): "simple" (offsets only), "classic-empty",
    "classic", "share", or None (unknown)."""
    if other is None or other == "simple":
        if not create:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return ConsumerGroup(group_id, now_ms)
    if other == "classic-empty" and create:
        # An empty classic group becomes a consumer group: its metadata goes, its offsets stay.
        records.append((GroupRecordType.GROUP_METADATA, {"group_id": group_id}, None))
        log.info("[GroupId %s] Converted the empty classic group to a consumer group.", group_id)
        return ConsumerGroup(group_id, now_ms)
    if other.startswith("classic") and create:
        if migration_policy not in UPGRADE_POLICIES:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to "
                             "consumer group because online upgrade is disabled.")
        # Online upgrade of a classic group with members needs classic members in a consumer group
        # (KIP-848 mixed membership), which this coordinator does not implement.
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer "
                         "group while it has members: the online upgrade is not supported by this broker.")
    raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
