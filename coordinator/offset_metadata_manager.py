"""Committed offsets of classic and simple groups as pure logic (Kafka 4's OffsetMetadataManager):
OffsetCommit and its checks of the member and generation, OffsetFetch, TxnOffsetCommit (pending until the
transaction's marker), OffsetDelete, expiry (offsets.retention.ms, KIP-211/496) and the offsets of deleted
topics. The offsets live in the groups the membership manager (coordinator/group_metadata_manager.py) holds;
a group without members that only stores offsets is a simple group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from coordinator.group import CONSUMER_PROTOCOL_TYPE, Group, GroupConfig, GroupState
from coordinator.group_interfaces import GroupStore, Record, StoreError, TopicPartition
from coordinator.group_metadata_manager import GroupMetadataManager
from protocol.group_records import (
    GroupKey,
    GroupRecordError,
    OffsetKey,
    OffsetValue,
    decode_key,
    decode_offset_value,
    encode_key,
    encode_offset_value,
)
from protocol.header import ErrorCode

log = logging.getLogger(__name__)


class OffsetMetadataManager:
    def __init__(self, config: GroupConfig, store: GroupStore, membership: GroupMetadataManager) -> None:
        self.config = config
        self.store = store
        self.membership = membership
        self.groups = membership.groups  # one dict: a group's offsets live in the group
        self.retained: Callable[[str, str], bool] | None = None  # (group, topic): offsets that must not expire

    # == OffsetCommit, OffsetFetch =================================================================
    def commit_offsets(self, *, group_id: str | None, generation_id: int, member_id: str,
                       group_instance_id: str | None, offsets: Mapping[TopicPartition, OffsetValue],
                       api_version: int, now_ms: int) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit for partitions of existing topics (the caller answers unknown ones)."""
        if group_id is None:
            return dict.fromkeys(offsets, ErrorCode.INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # v9+ names the problem; older versions keep the error clients always got.
                error = ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
                return dict.fromkeys(offsets, error)
            # A consumer that only stores offsets (no group management): a "simple" group.
            group = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
        error = self._validate_offset_commit(group, member_id, group_instance_id, generation_id)
        if error != ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        if generation_id >= 0 and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self.membership.schedule_heartbeat(group, group.get(member_id), now_ms)
        results: dict[TopicPartition, ErrorCode] = {}
        records: list[Record] = []
        accepted: dict[TopicPartition, OffsetValue] = {}
        limit = self.config.offset_metadata_max_bytes
        for tp, value in offsets.items():
            if len(value.metadata) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            accepted[tp] = value
            records.append((encode_key(OffsetKey(group_id, tp[0], tp[1])), encode_offset_value(value)))
        if records:
            try:
                self.store.write(group_id, records, now_ms)
            except StoreError as exc:
                log.error("group %s: storing offsets failed: %s", group_id, exc)
                results.update(dict.fromkeys(accepted, exc.error))
                return results
            group.offsets.update(accepted)
            results.update(dict.fromkeys(accepted, ErrorCode.NONE))
        return results

    def _validate_offset_commit(self, group: Group, member_id: str, group_instance_id: str | None,
                                generation_id: int, transactional: bool = False) -> ErrorCode:
        """Kafka 4's ClassicGroup.validateOffsetCommit (TxnOffsetCommit when transactional)."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(GroupState.EMPTY):
            return ErrorCode.NONE  # offsets stored by a client that does not use group management
        if generation_id >= 0 or member_id or group_instance_id is not None:
            if group_instance_id is not None:
                current = group.static_member_id(group_instance_id)
                if current is None:
                    return ErrorCode.UNKNOWN_MEMBER_ID
                if current != member_id:
                    return ErrorCode.FENCED_INSTANCE_ID
            elif not group.has(member_id):
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
            # The member knows the new generation from its JoinGroup response but has no assignment yet.
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def fetch_offsets(self, group_id: str,
                      partitions: Iterable[TopicPartition] | None) -> list[tuple[TopicPartition, OffsetValue | None]]:
        """Committed offsets of the partitions (None: not committed), or all of the group's when None."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None and not group.is_in(GroupState.DEAD) else {}
        if partitions is None:
            return sorted(offsets.items())
        return [(tp, offsets.get(tp)) for tp in partitions]

    def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        """Partitions with a transactional commit not yet committed or aborted (OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT for them, KIP-447)."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        return {tp for pending in group.pending_txn_offsets.values() for tp in pending}

    # == transactional offsets (TxnOffsetCommit, KIP-98/447) =======================================
    def txn_commit_offsets(self, *, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                           group_instance_id: str | None, generation_id: int,
                           offsets: Mapping[TopicPartition, OffsetValue],
                           now_ms: int) -> dict[TopicPartition, ErrorCode]:
        """Offsets written in the producer's transaction: pending until its marker reaches the group's
        `__consumer_offsets` partition (complete_txn)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
        error = self._validate_offset_commit(group, member_id, group_instance_id, generation_id, transactional=True)
        if error != ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        for tp, value in offsets.items():
            if len(value.metadata) > self.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = value
        if accepted:
            records = [(encode_key(OffsetKey(group_id, t, p)), encode_offset_value(v))
                       for (t, p), v in accepted.items()]
            try:
                self.store.write_txn(group_id, producer_id, producer_epoch, records, now_ms)
            except StoreError as exc:
                log.error("group %s: storing transactional offsets failed: %s", group_id, exc)
                results.update(dict.fromkeys(accepted, exc.error))
                return results
            group.pending_txn_offsets.setdefault(producer_id, {}).update(accepted)
            results.update(dict.fromkeys(accepted, ErrorCode.NONE))
        return results

    def complete_txn(self, producer_id: int, commit: bool,
                     in_partition: Callable[[str], bool] | None = None) -> None:
        """A COMMIT/ABORT marker of the producer reached a `__consumer_offsets` partition (`in_partition`
        tells which groups live there): their pending offsets become committed, or are dropped (Kafka's
        handleTxnCompletion)."""
        for group in self.groups.values():
            if in_partition is not None and not in_partition(group.group_id):
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if pending and commit:
                group.offsets.update(pending)

    def load_pending_txn(self, producer_id: int, records: Iterable[Record]) -> None:
        """Offsets of a transaction still open when the log was replayed: pending again, until its marker."""
        for key_data, value_data in records:
            try:
                key = decode_key(key_data)
                if not isinstance(key, OffsetKey) or value_data is None:
                    continue
                value = decode_offset_value(value_data)
            except GroupRecordError as exc:
                log.warning("skipping a __consumer_offsets record: %s", exc)
                continue
            group = self.groups.get(key.group)
            if group is None:
                group = self.groups[key.group] = Group(key.group, state_timestamp_ms=-1)
            group.pending_txn_offsets.setdefault(producer_id, {})[(key.topic, key.partition)] = value

    # == OffsetDelete, expiry, deleted topics ======================================================
    def delete_offsets(self, group_id: str, partitions: list[TopicPartition],
                       now_ms: int) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: only for topics the group does not consume (Kafka's handleDeleteOffsets)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        errors: dict[TopicPartition, ErrorCode] = {}
        if group.is_in(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = []
            for tp in partitions:
                if group.is_subscribed_to(tp[0]):
                    errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            error = self.remove_offsets(group, [tp for tp in eligible if tp in group.offsets], now_ms)
            errors.update(dict.fromkeys(eligible, error))
        return ErrorCode.NONE, errors

    def remove_offsets(self, group: Group, partitions: list[TopicPartition], now_ms: int) -> ErrorCode:
        """Tombstones for the offsets; the group itself goes too once it is empty with no offsets left
        (Kafka's cleanupGroupMetadata)."""
        gid = group.group_id
        records: list[Record] = [(encode_key(OffsetKey(gid, t, p)), None) for t, p in partitions]
        remaining = len(group.offsets) - len(partitions)
        dies = group.is_in(GroupState.EMPTY) and remaining == 0 and not group.pending_txn_offsets
        if dies:
            records.append((encode_key(GroupKey(gid)), None))
        if records:
            try:
                self.store.write(gid, records, now_ms)
            except StoreError as exc:
                log.error("group %s: writing tombstones failed: %s", gid, exc)
                return exc.error
        for tp in partitions:
            group.offsets.pop(tp, None)
        if dies:
            group.transition_to(GroupState.DEAD, now_ms)
            self.membership.forget(group)
        return ErrorCode.NONE

    def expire_offsets(self, now_ms: int) -> int:
        """Offsets past offsets.retention.ms (Kafka's removeExpiredOffsets, KIP-211), then empty groups
        without offsets. Returns the number of offsets removed."""
        removed = 0
        retention = self.config.offsets_retention_ms
        for group in list(self.groups.values()):
            if group.is_in(GroupState.EMPTY) and group.protocol_type is not None:
                # Nobody consumes: retention counts from when the group became empty.
                base = group.state_timestamp_ms

                def expired(tp: TopicPartition, v: OffsetValue, base: int = base) -> bool:
                    return _offset_expired(v, base if base >= 0 else v.commit_timestamp, retention, now_ms)
            elif group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None \
                    and group.is_in(GroupState.STABLE):
                # Offsets of topics the group no longer consumes (KIP-496).
                topics = group.subscribed_topics

                def expired(tp: TopicPartition, v: OffsetValue, topics: frozenset[str] = topics) -> bool:
                    return tp[0] not in topics and _offset_expired(v, v.commit_timestamp, retention, now_ms)
            elif group.protocol_type is None:
                def expired(tp: TopicPartition, v: OffsetValue, gid: str = group.group_id) -> bool:
                    # A KIP-848 consumer group keeps the offsets of the topics it consumes (Kafka 4).
                    if self.retained is not None and self.retained(gid, tp[0]):
                        return False
                    return _offset_expired(v, v.commit_timestamp, retention, now_ms)
            else:
                continue
            doomed = [tp for tp, v in group.offsets.items() if expired(tp, v)]
            if doomed or (group.is_in(GroupState.EMPTY) and not group.offsets):
                if self.remove_offsets(group, doomed, now_ms) == ErrorCode.NONE:
                    removed += len(doomed)
        return removed

    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> list[str]:
        """Committed offsets of deleted topics go (Kafka's onPartitionsDeleted), so a topic created again
        under the same name starts without them. Returns the groups that changed."""
        gone = set(topics)
        changed = []
        for group in list(self.groups.values()):
            doomed = [tp for tp in group.offsets if tp[0] in gone]
            if doomed and self.remove_offsets(group, doomed, now_ms) == ErrorCode.NONE:
                changed.append(group.group_id)
        return changed

    # == the OffsetCommit records ==================================================================
    def load_offsets(self, offsets: Mapping[OffsetKey, OffsetValue]) -> None:
        """The committed offsets as their last OffsetCommit records left them; a group that has none of its
        own metadata holds them as a simple group."""
        for key, offset in offsets.items():
            group = self.groups.get(key.group)
            if group is None:
                group = self.groups[key.group] = Group(key.group, state_timestamp_ms=-1)
            group.offsets[(key.topic, key.partition)] = offset


def _offset_expired(value: OffsetValue, base_ms: int, retention_ms: int, now_ms: int) -> bool:
    if value.expire_timestamp is not None:  # committed with an explicit retention (OffsetCommit v2-4)
        return now_ms >= value.expire_timestamp
    return now_ms - base_ms >= retention_ms
