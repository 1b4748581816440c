"""Kafka's classic group coordinator as pure logic, as Kafka 4's GroupCoordinatorShard puts it together: each
request goes to the manager that owns it, membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the
rebalance and its timers: coordinator/group_metadata_manager.py) or committed offsets (OffsetCommit,
OffsetFetch, TxnOffsetCommit, OffsetDelete, expiry: coordinator/offset_metadata_manager.py); both work on
the same groups. Loading `__consumer_offsets`, ListGroups, DescribeGroups and DeleteGroups concern both, and are
here.

Time comes in as `now_ms`; nothing here sleeps or does I/O. Records for `__consumer_offsets` go to an
injected `GroupStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from coordinator.group import Group, GroupConfig, GroupDescription, GroupListing, GroupState
from coordinator.group_interfaces import GroupStore, Record
from coordinator.group_metadata_manager import GroupMetadataManager
from coordinator.offset_metadata_manager import OffsetMetadataManager
from protocol.group_records import (
    GroupRecordError,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from protocol.header import ErrorCode

log = logging.getLogger(__name__)


class GroupCoordinator:
    def __init__(self, config: GroupConfig, store: GroupStore) -> None:
        self.config = config
        self.store = store
        self.membership = GroupMetadataManager(config, store)
        self.offsets = OffsetMetadataManager(config, store, self.membership)
        self.groups: dict[str, Group] = self.membership.groups
        # Membership.
        self.join_group = self.membership.join_group
        self.sync_group = self.membership.sync_group
        self.heartbeat = self.membership.heartbeat
        self.leave_group = self.membership.leave_group
        self.demote_to_simple = self.membership.demote_to_simple
        self.unload = self.membership.unload
        self.next_deadline = self.membership.next_deadline
        self.tick = self.membership.tick
        # Offsets.
        self.commit_offsets = self.offsets.commit_offsets
        self.fetch_offsets = self.offsets.fetch_offsets
        self.unstable_partitions = self.offsets.unstable_partitions
        self.txn_commit_offsets = self.offsets.txn_commit_offsets
        self.complete_txn = self.offsets.complete_txn
        self.load_pending_txn = self.offsets.load_pending_txn
        self.delete_offsets = self.offsets.delete_offsets
        self.expire_offsets = self.offsets.expire_offsets
        self.topics_deleted = self.offsets.topics_deleted

    @property
    def rebalances(self) -> int:
        """Rebalances started, for metrics."""
        return self.membership.rebalances

    @property
    def retained(self) -> Callable[[str, str], bool] | None:
        """(group, topic) -> whether the group's offsets of the topic must not expire (a KIP-848 group's)."""
        return self.offsets.retained

    @retained.setter
    def retained(self, value: Callable[[str, str], bool] | None) -> None:
        self.offsets.retained = value

    def load(self, records: Iterable[Record], now_ms: int) -> None:
        """Rebuild groups and offsets from `__consumer_offsets` records in log order (the last record of a
        key wins; a tombstone deletes)."""
        offsets: dict[OffsetKey, OffsetValue] = {}
        groups: dict[str, GroupValue] = {}
        for key_data, value_data in records:
            try:
                key = decode_key(key_data)
                if isinstance(key, OffsetKey):
                    if value_data is None:
                        offsets.pop(key, None)
                    else:
                        offsets[key] = decode_offset_value(value_data)
                elif value_data is None:
                    groups.pop(key.group, None)
                else:
                    groups[key.group] = decode_group_value(value_data)
            except GroupRecordError as exc:
                log.warning("skipping a __consumer_offsets record: %s", exc)
        self.membership.load_groups(groups, now_ms)
        self.offsets.load_offsets(offsets)

    def list_groups(self, states: Iterable[str] = ()) -> list[GroupListing]:
        """ListGroups: the groups in the given states (all of them for none)."""
        wanted = {s.lower() for s in states}
        return [g.overview() for g in self.groups.values()
                if not g.is_in(GroupState.DEAD) and (not wanted or g.state.value.lower() in wanted)]

    def describe_group(self, group_id: str, assignments_while_rebalancing: bool = False) -> GroupDescription:
        """DescribeGroups of one group (an unknown one is Dead); see Group.summary."""
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, GroupState.DEAD.value, "", "", [])
        return group.summary(assignments_while_rebalancing)

    def delete_groups(self, group_ids: Iterable[str], now_ms: int) -> dict[str, ErrorCode]:
        """DeleteGroups: an empty group goes with its offsets (their tombstones, then the group's)."""
        errors: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            group = self.groups.get(group_id) if group_id is not None else None
            if group_id is None:
                errors[group_id] = ErrorCode.INVALID_GROUP_ID
            elif group is None or group.is_in(GroupState.DEAD):
                errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_in(GroupState.EMPTY):
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                errors[group_id] = self.offsets.remove_offsets(group, list(group.offsets), now_ms)
        return errors
