"""Members of a consumer group that speak the classic protocol (KIP-848 mixed membership, Kafka's
classicGroup*ToConsumerGroup paths of GroupMetadataManager): their JoinGroup, SyncGroup, Heartbeat and LeaveGroup
are served by the consumer group, whose coordinator computes their assignment like any member's.

A classic member joins (or rejoins) with JoinGroup: it is answered at once, its generation its member epoch, its
new assignment reconciled from the partitions its subscription says it owns; SyncGroup hands it its current
assignment. When the group epoch moves past its epoch, or it has partitions to revoke, or partitions it waited for
are free, its Heartbeat answers REBALANCE_IN_PROGRESS so that it rejoins. It must rejoin within its rebalance
timeout, and sync within it after joining, or it is fenced, like a member whose session (its own classic session
timeout) expires.

The group changes hands as Kafka's does: a consumer-protocol member joining a classic group with members converts
it (`_upgrade`, with coordinator/group_conversion.py); the last consumer-protocol member leaving converts it back
when the migration policy allows (`_downgrade`), and the classic group rebalances.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from coordinator.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    group_tombstones,
    member_subscription_record,
)
from coordinator.consumer_group_regex import regex_update
from coordinator.group import JoinResult, SyncResult
from coordinator.group_conversion import (
    DOWNGRADE_POLICIES,
    assignment_bytes,
    check_upgrade,
    classic_group_from,
    group_from_records,
    new_member_id,
    topic_partitions,
    upgrade_records,
)
from coordinator.group_interfaces import GroupError, GroupRecord, StoreError
from protocol.consumer_protocol import SubscriptionError, decode_subscription
from protocol.header import ErrorCode

if TYPE_CHECKING:
    from coordinator.group import Group, GroupConfig

log = logging.getLogger(__name__)

# Timer keys (kind, group id, member id) beside the coordinator's session and rebalance timeouts.
CLASSIC_JOIN = "classic-join"  # a classic member told to rejoin must do so within its rebalance timeout
CLASSIC_SYNC = "classic-sync"  # and send SyncGroup within it after its JoinGroup
UNKNOWN_MEMBER_ID = ""


class ClassicProtocolMembers:
    """Mixed into ConsumerGroupCoordinator (coordinator/consumer_group_coordinator.py): it uses the coordinator's
    groups, records (`_commit`), subscription metadata, target assignment, reconciliation, fencing and timers."""

    # == JoinGroup ===============================================================================
    def classic_join(self, *, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                     client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                     protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                     supports_skip_assignment: bool, now_ms: int) -> JoinResult:
        """A classic member's JoinGroup to a consumer group with members (Kafka's classicGroupJoinToConsumerGroup),
        answered at once (no member leads: `supports_skip_assignment` does not matter)."""
        bounds = self._classic_config()
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, member_id)
        if not bounds.min_session_timeout_ms <= session_timeout_ms <= bounds.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        try:
            return self._classic_join(group_id, member_id, group_instance_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                      require_known_member_id, now_ms)
        except GroupError as exc:
            return JoinResult(exc.error, member_id)
        except StoreError as exc:
            log.error("group %s: storing records failed: %s", group_id, exc)
            return JoinResult(exc.error, member_id)

    def _classic_join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                      client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                      protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                      now_ms: int) -> JoinResult:
        group = self.groups[group_id]
        if self.config.migration_policy == "disabled":
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group {group_id} "
                             "with the classic protocol because the group migration is disabled.")
        unknown = member_id == UNKNOWN_MEMBER_ID
        if unknown:
            member_id = new_member_id()
        if member_id not in group.members and len(group.members) >= self.config.max_size:
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")
        if not group.supports_classic_protocols(protocol_type, (name for name, _ in protocols)):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Member {member_id}'s protocols are not supported.")
        if require_known_member_id and unknown and instance_id is None:
            # KIP-394: a dynamic member comes back with the id it is given.
            log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                     "member id %s and requesting the member to rejoin with this id.", group_id, member_id)
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        try:
            subscription = decode_subscription(protocols[0][1])
        except SubscriptionError as exc:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Malformed embedded consumer protocol in "
                             f"subscription deserialization: {exc}") from None

        records: list[GroupRecord] = []
        replaced = group.static_member(instance_id)
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
            if member_id not in group.members:
                log.info("[GroupId %s] Member %s joins the consumer group using the classic protocol.",
                         group_id, member_id)
        else:
            member = self._static_member(group, member_id, -1, instance_id, None, unknown, records, classic=True)
        updated = member.replace(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex="",
            client_id=client_id, client_host=client_host,
            classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)))

        bump = False
        if not updated.subscription_equals(member) or member.member_id not in group.members:
            records.append(member_subscription_record(group_id, updated))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        regex_bump, _refresh = regex_update(group, member, updated, records, now_ms,
                                            refresh_interval_ms=self.config.regex_refresh_interval_ms,
                                            version_with_new_topics=self.version_with_new_topics)
        bump |= regex_bump
        group_epoch, sub_type = group.group_epoch, group.subscription_type
        if bump or group.metadata_expired(now_ms):
            group_epoch, sub_type = self._update_subscription_metadata(group, bump, member, updated, records, now_ms)

        owned = topic_partitions(subscription.owned_partitions, self.topics)
        downgrade = replaced is not None and self._may_downgrade(group, {replaced.member_id}, replacing=True)
        if downgrade:
            # The last consumer-protocol member (static) is replaced by this classic one: the group becomes classic
            # again; it rebalances if its assignment is behind its epoch.
            stale = group.assignment_epoch < group_epoch
            if not stale:
                target = group.target_of(updated.member_id, updated.instance_id)
                updated = self._maybe_reconcile(group, updated, group.assignment_epoch, target, owned,
                                                records) or updated
            classic = classic_group_from(group, (), self.topics, now_ms, joining=updated)
            log.info("[GroupId %s] Downgrade group from consumer to classic%s.", group_id,
                     " with stale assignment" if stale else "")
            ids = [updated.member_id if mid == replaced.member_id else mid for mid in group.members]
            self._commit(group_id, records + group_tombstones(group, ids), now_ms, downgraded=(classic, stale))
            self._forget_members(group_id, group.members)
        else:
            updated = self._assign_and_reconcile(group, group_epoch, member, updated, sub_type, owned, records,
                                                 now_ms) or updated
            self.timers.cancel((CLASSIC_JOIN, group_id, member_id))
            self._schedule_session(group_id, member_id, now_ms, session_timeout_ms)
            self.timers.schedule((CLASSIC_SYNC, group_id, member_id), now_ms + max(rebalance_timeout_ms, 0))
        return JoinResult(ErrorCode.NONE, updated.member_id, updated.member_epoch, "consumer",
                          updated.classic.protocol_name if updated.classic is not None else None, "")

    # == SyncGroup, Heartbeat, LeaveGroup ===========================================================
    def classic_sync(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                     protocol_type: str | None, protocol_name: str | None, assignments: Mapping[str, bytes],
                     now_ms: int) -> SyncResult:
        """Kafka's classicGroupSyncToConsumerGroup: the member's current assignment, unless it must rejoin (the
        coordinator assigns: `assignments` a member sends are not used)."""
        try:
            group, member = self._classic_member(group_id, member_id, group_instance_id, generation_id)
            assert member.classic is not None
            if protocol_type is not None and protocol_type != "consumer":
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol type {protocol_type} from "
                                 f"member {member_id} request is not equal to the group protocol type consumer.")
            if protocol_name is not None and protocol_name != member.classic.protocol_name:
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol name {protocol_name} from "
                                 f"member {member_id} request is not equal to the protocol name "
                                 f"{member.classic.protocol_name} returned in the join response.")
            if self._classic_rejoin_epoch(group) > member.member_epoch \
                    and member.state is not MemberState.UNREVOKED_PARTITIONS:
                self._schedule_classic_join(group_id, member, now_ms)
                raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group {group_id} "
                                 f"and member {member_id} should rejoin to catch up.")
        except GroupError as exc:
            return SyncResult(exc.error)
        self.timers.cancel((CLASSIC_SYNC, group_id, member.member_id))
        self._schedule_session(group_id, member.member_id, now_ms, member.classic.session_timeout_ms)
        metadata = member.classic.protocols[0][1]
        try:
            assignment = assignment_bytes(member.assigned_partitions, metadata, self.topics)
        except SubscriptionError:
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        return SyncResult(ErrorCode.NONE, protocol_type, protocol_name, assignment)

    def classic_heartbeat(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                          now_ms: int) -> ErrorCode:
        """Kafka's classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member must rejoin (the
        group moved past its epoch, it has partitions to revoke, or the partitions it waited for are free)."""
        try:
            group, member = self._classic_member(group_id, member_id, group_instance_id, generation_id)
        except GroupError as exc:
            return exc.error
        assert member.classic is not None
        self._schedule_session(group_id, member.member_id, now_ms, member.classic.session_timeout_ms)
        if (member.member_epoch < self._classic_rejoin_epoch(group)
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._schedule_classic_join(group_id, member, now_ms)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_leave(self, *, group_id: str, members: list[tuple[str, str | None]],
                      now_ms: int) -> tuple[ErrorCode, list[ErrorCode]]:
        """Kafka's classicGroupLeaveToConsumerGroup: the members named (by id, or a static one by instance id
        alone) are fenced; the last consumer-protocol member leaving may turn the group classic."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, []
        errors: list[ErrorCode] = []
        leaving: dict[str, ConsumerGroupMember] = {}
        for member_id, instance_id in members:
            if instance_id is None:
                member = group.members.get(member_id)
            else:
                member = group.static_member(instance_id)
                if member is not None and member_id != UNKNOWN_MEMBER_ID and member.member_id != member_id:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
            if member is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            log.info("[GroupId %s] Member %s has left group through explicit `LeaveGroup` request.", group_id,
                     member.member_id)
            leaving[member.member_id] = member
            errors.append(ErrorCode.NONE)
        try:
            self._fence(list(leaving.values()), group, now_ms)
        except StoreError as exc:
            return ErrorCode.NONE, [exc.error if e == ErrorCode.NONE else e for e in errors]
        return ErrorCode.NONE, errors

    def _classic_member(self, group_id: str, member_id: str, instance_id: str | None,
                        generation_id: int) -> tuple[ConsumerGroup, ConsumerGroupMember]:
        """Kafka's validateConsumerGroupMember, throwIfMemberDoesNotUseClassicProtocol and
        throwIfGenerationIdUnmatched."""
        group = self.groups.get(group_id)
        if not group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID)
        if group is None or not group.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} not found.")
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} was fenced by member {member.member_id}.")
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if not member.uses_classic_protocol:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if member.member_epoch != generation_id:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal "
                             f"to the member epoch {member.member_epoch} of member {member_id}.")
        return group, member

    def _classic_rejoin_epoch(self, group: ConsumerGroup) -> int:
        """The epoch a classic member behind must rejoin for: the group's (the assignment's from Kafka 4.3, whose
        group epoch may move ahead while an assignment waits)."""
        return group.assignment_epoch if self.config.classic_rejoin_at_assignment_epoch else group.group_epoch

    def _schedule_classic_join(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        key = (CLASSIC_JOIN, group_id, member.member_id)
        if key not in self.timers:
            self.timers.schedule(key, now_ms + max(member.rebalance_timeout_ms, 0))

    def _classic_config(self) -> GroupConfig:
        from coordinator.group import GroupConfig

        return self.classic.config if self.classic is not None else GroupConfig()

    # == the group changing hands ====================================================================
    def _upgrade(self, group_id: str, records: list[GroupRecord], now_ms: int) -> ConsumerGroup:
        """A classic group with members, converted for the consumer-protocol member that joins it (its records
        appended to `records`); the classic group is let go once they are written (`_commit`)."""
        classic = self.classic.groups[group_id] if self.classic is not None else None
        if classic is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        check_upgrade(classic, self.config.migration_policy, self.config.max_size)
        converted = upgrade_records(classic, self.topics, self._metadata_hash)
        records += converted
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return group_from_records(group_id, converted, now_ms)

    def _may_downgrade(self, group: ConsumerGroup, leaving: Collection[str], replacing: bool = False) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMembers / WithReplacedMember: the members left all use the
        classic protocol (there are some), the policy allows it, and they fit in a classic group."""
        if not group.all_members_use_classic_except(leaving):
            return False
        remaining = len(group.members) - (0 if replacing else len(leaving))
        if remaining <= 0:
            log.debug("Skip downgrading the consumer group %s to classic group because it's empty.", group.group_id)
            return False
        if self.config.migration_policy not in DOWNGRADE_POLICIES:
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                     group.group_id)
            return False
        if remaining > self._classic_config().max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                     "classic group max size.", group.group_id)
            return False
        return True

    def _downgrade(self, group: ConsumerGroup, leaving: Collection[str], now_ms: int) -> None:
        """The members leaving were the last of the consumer protocol: the group becomes classic and rebalances
        (Kafka's convertToClassicGroup)."""
        classic = classic_group_from(group, leaving, self.topics, now_ms)
        log.info("[GroupId %s] Downgrade group from consumer to classic for member leaving.", group.group_id)
        self._commit(group.group_id, group_tombstones(group), now_ms, downgraded=(classic, True))
        self._forget_members(group.group_id, group.members)

    def _forget_members(self, group_id: str, members: Mapping[str, ConsumerGroupMember]) -> None:
        for member_id in list(members):
            self._cancel_timers(group_id, member_id)

    def _adopt(self, classic: Group, rebalance: bool, now_ms: int) -> None:
        if self.classic is not None:
            self.classic.membership.adopt(classic, now_ms, "Downgrade group from consumer to classic."
                                          if rebalance else None)

