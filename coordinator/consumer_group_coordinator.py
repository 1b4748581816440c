"""Kafka 4.1's KIP-848 consumer group protocol as pure logic: ConsumerGroupHeartbeat (join, heartbeat, leave,
static members), session and rebalance timeouts, ConsumerGroupDescribe, and the member epoch checks of
OffsetCommit/OffsetFetch. Beside it: the target assignment and each member's reconciliation towards it
(coordinator/consumer_assignment.py), regular expression subscriptions (consumer_group_regex.py), the members that
speak the classic protocol and the online migration between classic and consumer groups
(consumer_group_classic.py, group_conversion.py).

Follows GroupMetadataManager.consumerGroupHeartbeat and its helpers (4.1): every change is a list of records
computed from the group as it is; the records are written to `__consumer_offsets` through the injected store,
then replayed into the group (coordinator/consumer_group.py). Time is passed in; timers are keyed deadlines
the shell fires with `tick`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordinator.assignors import (
    Assignment,
    SubscriptionType,
)
from coordinator.consumer_assignment import metadata_hash, next_assignment, target_assignment
from coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    MemberState,
    current_assignment_record,
    epoch_record,
    group_tombstones,
    member_subscription_record,
    member_tombstones,
    replay,
    subscription_type,
    target_assignment_record,
    target_epoch_record,
)
from coordinator.consumer_group_classic import CLASSIC_JOIN, CLASSIC_SYNC, ClassicProtocolMembers
from coordinator.consumer_group_describe import DescribedGroup, describe_groups
from coordinator.consumer_group_regex import regex_update, resolve_regexes
from coordinator.consumer_heartbeat_checks import check_member_epoch, owned_partitions, validate_request
from coordinator.group_conversion import consumer_group_for
from coordinator.group_interfaces import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    GroupError,
    GroupRecord,
    RecordStore,
    StoreError,
    TopicsView,
    tombstone,
)
from coordinator.timers import SESSION, MemberTimers
from protocol.group_records import GroupKey, encode_group_value, encode_key
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType, encode_group_record

if TYPE_CHECKING:
    from coordinator.group import Group
    from coordinator.group_coordinator import GroupCoordinator

log = logging.getLogger(__name__)

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
METADATA_REFRESH_INTERVAL_MS = 2**31 - 1  # Kafka 4.1: refreshed on topic changes, not on a period


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors, the first is the default
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy
    regex_refresh_interval_ms: int = 600_000  # group.consumer.regex.refresh.interval.ms
    # Kafka 4.3+: a new group starts at epoch 1 with an empty target assignment, so its first computed
    # assignment is epoch 2 (KAFKA-20268); and a group's target assignment is computed at most every
    # group.consumer.assignment.interval.ms: a change meanwhile bumps the group epoch and waits (the group is
    # Assigning) until the interval has passed. 0 and 0: at once from epoch 1, as 4.2 and older.
    initial_epoch: int = 0
    assignment_interval_ms: int = 0
    # Kafka 4.4: the last member leaving brings the empty target assignment up to the group epoch (KAFKA-20442),
    # and the next member to join is assigned at once.
    empty_assignment_on_leave: bool = False
    # Kafka 4.3+: a classic member rejoins when its epoch is behind the group's assignment epoch (the group epoch
    # before: with batched assignments the group epoch may be ahead while the assignment waits).
    classic_rejoin_at_assignment_epoch: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: not sent (unchanged)


# Timer keys: (kind, group id, member id)
_ASSIGN = "assign"  # a group's batched target assignment (Kafka 4.3+)


class ConsumerGroupCoordinator(ClassicProtocolMembers):
    def __init__(self, config: ConsumerGroupConfig, store: RecordStore, topics: TopicsView,
                 classic: GroupCoordinator | None = None) -> None:
        self.config = config
        self.store = store
        self.topics = topics
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self.timers = MemberTimers()
        self.rebalances = 0
        # Kafka's lastMetadataImageWithNewTopics: the topics' version when a topic last appeared.
        self.topics_version = 0
        self.version_with_new_topics = -1
        # The type of a group id this coordinator does not own: "simple" (offsets only), "classic-empty",
        # "classic", "share", or None (the shell wires it to the other coordinators).
        self.other_group_type: Callable[[str], str | None] | None = None

    # == records ================================================================================
    def _commit(self, group_id: str, records: list[GroupRecord], now_ms: int,
                downgraded: tuple[Group, bool] | None = None) -> None:
        """Write the records (StoreError if that fails: nothing changed), then apply them. A GroupMetadata
        tombstone lets the classic coordinator's group go (it became this consumer group); `downgraded`, the
        classic group this one became (and whether it rebalances), is written last, as a GroupMetadata record,
        and handed to the classic coordinator."""
        if not records and downgraded is None:
            return
        encoded = [(encode_key(GroupKey(key["group_id"])), None) if kind is GroupRecordType.GROUP_METADATA
                   else encode_group_record(kind, key, value) for kind, key, value in records]
        if downgraded is not None:
            classic = downgraded[0]
            encoded.append((encode_key(GroupKey(group_id)), encode_group_value(classic.metadata_value(
                {m.member_id: m.assignment for m in classic.members.values()}))))
        self.store.write(group_id, encoded, now_ms)
        for record in records:
            if record[0] is GroupRecordType.GROUP_METADATA:
                if self.classic is not None:
                    self.classic.demote_to_simple(group_id)
            else:
                replay(self.groups, record, now_ms)
        if downgraded is not None:
            self._adopt(downgraded[0], downgraded[1], now_ms)

    def load(self, records: Iterable[GroupRecord], now_ms: int) -> None:
        """Replay `__consumer_offsets` records after a restart; members get a fresh session (Kafka's onLoaded)."""
        for record in records:
            try:
                replay(self.groups, record, now_ms)
            except (RuntimeError, KeyError, ValueError) as exc:
                log.warning("skipping a consumer group record: %s", exc)
        for group in self.groups.values():
            group.request_metadata_refresh()
            for member in group.members.values():
                self._schedule_session(group.group_id, member.member_id, now_ms,
                                       member.classic.session_timeout_ms if member.classic is not None else None)
                if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                    self._schedule_rebalance(group.group_id, member, now_ms)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        """Forget the groups of a `__consumer_offsets` partition led elsewhere now; returns how many."""
        gone = [gid for gid in self.groups if belongs(gid)]
        for gid in gone:
            for member_id in self.groups.pop(gid).members:
                self._cancel_timers(gid, member_id)
        return len(gone)

    # == topics =================================================================================
    def on_topics_changed(self, changed: Iterable[str], created: bool) -> None:
        """Topics were created, deleted or grew: groups subscribed to them recompute their metadata hash at
        the next heartbeat; a new topic may match regular expressions (Kafka's onNewMetadataImage)."""
        self.topics_version += 1
        if created:
            self.version_with_new_topics = self.topics_version
        names = set(changed)
        for group in self.groups.values():
            if any(group.is_subscribed_to(name) for name in names) or created:
                group.request_metadata_refresh()

    def _metadata_hash(self, subscribed: Iterable[str]) -> int:
        return metadata_hash(subscribed, self.topics)

    # == ConsumerGroupHeartbeat ==================================================================
    def heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_timeout_ms: int, subscribed_topic_names: list[str] | None,
                  subscribed_topic_regex: str | None, server_assignor: str | None,
                  topic_partitions: list[Mapping[str, object]] | None, client_id: str, client_host: str,
                  api_version: int, now_ms: int) -> HeartbeatResult:
        try:
            validate_request(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                             subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions,
                             api_version, self.config.assignors)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(group_id, instance_id, member_id, member_epoch, now_ms)
            return self._heartbeat(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                   subscribed_topic_names, subscribed_topic_regex, server_assignor,
                                   owned_partitions(topic_partitions), client_id, client_host, now_ms)
        except GroupError as exc:
            return HeartbeatResult(exc.error, exc.message)
        except StoreError as exc:
            log.error("group %s: storing records failed: %s", group_id, exc)
            return HeartbeatResult(exc.error, str(exc))

    def _group_for_heartbeat(self, group_id: str, create: bool, records: list[GroupRecord],
                             now_ms: int) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        other = self.other_group_type(group_id) if self.other_group_type is not None else None
        if other == "classic" and create:  # a classic group with members: the online upgrade
            return self._upgrade(group_id, records, now_ms)
        group = consumer_group_for(group_id, other, create, self.config.migration_policy, records, now_ms)
        if self.config.initial_epoch:  # in memory only: the first member's join writes the next epoch
            group.set_epochs(now_ms, group_epoch=self.config.initial_epoch,
                             assignment_epoch=self.config.initial_epoch)
        return group

    def _assign_now(self, group: ConsumerGroup, now_ms: int) -> bool:
        """Whether the target assignment may be computed now (else when the interval since the last one has
        passed, by a timer)."""
        interval = self.config.assignment_interval_ms
        last = group.last_assignment_ms
        if interval <= 0 or last is None or now_ms - last >= interval:
            return True
        self.timers.schedule((_ASSIGN, group.group_id, ""), last + interval)
        return False

    def _heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                   rack_id: str | None, rebalance_timeout_ms: int, names: list[str] | None, regex: str | None,
                   assignor: str | None, owned: dict[uuid.UUID, frozenset[int]] | None, client_id: str,
                   client_host: str, now_ms: int) -> HeartbeatResult:
        records: list[GroupRecord] = []
        create = member_epoch == 0
        new_group = group_id not in self.groups
        group = self._group_for_heartbeat(group_id, create, records, now_ms)
        if len(group.members) >= self.config.max_size and (not member_id or member_id not in group.members):
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")
        if not member_id:
            member_id = str(uuid.uuid4())
        if instance_id is None:
            member = self._dynamic_member(group, member_id, member_epoch, owned, create)
        else:
            member = self._static_member(group, member_id, member_epoch, instance_id, owned, create, records)

        updated = member.replace(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=assignor if assignor is not None else member.server_assignor,
            subscribed_topic_names=tuple(sorted(set(names))) if names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=regex if regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host, classic=None)

        bump = group.group_epoch == 0 or new_group
        if not updated.subscription_equals(member) or member_id not in group.members:
            records.append(member_subscription_record(group_id, updated))
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                bump = True
        regex_bump, refresh = regex_update(group, member, updated, records, now_ms,
                                           refresh_interval_ms=self.config.regex_refresh_interval_ms,
                                           version_with_new_topics=self.version_with_new_topics)
        bump |= regex_bump

        group_epoch = group.group_epoch
        sub_type = group.subscription_type
        if bump or group.metadata_expired(now_ms):
            group_epoch, sub_type = self._update_subscription_metadata(group, bump, member, updated, records, now_ms)

        reconciled = self._assign_and_reconcile(group, group_epoch, member, updated, sub_type, owned, records, now_ms)
        self._after_reconcile(group_id, updated if reconciled is None else reconciled, reconciled is not None,
                              now_ms)
        final = reconciled if reconciled is not None else updated
        self._schedule_session(group_id, member_id, now_ms)
        if new_group:  # the members of a classic group converted for this one get their sessions
            for other_member in self.groups[group_id].members.values():
                if other_member.classic is not None:
                    self._schedule_session(group_id, other_member.member_id, now_ms,
                                           other_member.classic.session_timeout_ms)
        if refresh:
            self._refresh_regexes(group_id, now_ms)

        full = rebalance_timeout_ms != -1 and (names is not None or regex is not None) and owned is not None
        send_assignment = member_epoch == 0 or full or final.assigned_partitions != member.assigned_partitions
        return HeartbeatResult(ErrorCode.NONE, None, final.member_id, final.member_epoch,
                               self.config.heartbeat_interval_ms,
                               final.assigned_partitions if send_assignment else None)

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                        owned: dict[uuid.UUID, frozenset[int]] | None, create: bool) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not create:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group.group_id}.")
            member = ConsumerGroupMember(member_id)
            log.info("[GroupId %s] Member %s joins the consumer group using the consumer protocol.",
                     group.group_id, member_id)
        check_member_epoch(member, epoch, owned)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str,
                       owned: dict[uuid.UUID, frozenset[int]] | None, create: bool,
                       records: list[GroupRecord], classic: bool = False) -> ConsumerGroupMember:
        """Kafka's getOrMaybeSubscribeStaticConsumerGroupMember: a new instance takes the place of the instance
        id's member, its target assignment too, once that member left, unless one of them speaks the classic
        protocol (`classic`: the one joining; no epoch to check)."""
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                member = group.members.get(member_id) or ConsumerGroupMember(member_id)
                log.info("[GroupId %s] Static member %s with instance id %s joins the consumer group.",
                         group.group_id, member_id, instance_id)
                return member
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not existing.uses_classic_protocol \
                    and not classic:
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                 f"because the instance id is owned by {existing.member_id} member.")
            # The instance came back under a new member id: it takes the old member's place and assignment.
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records += member_tombstones(group.group_id, existing.member_id)
            records.append(member_subscription_record(group.group_id, new))
            records.append(target_assignment_record(group.group_id, member_id,
                                                    group.target_assignment.get(existing.member_id, {})))
            records.append(current_assignment_record(group.group_id, new))
            self._cancel_timers(group.group_id, existing.member_id)
            log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group as %s, "
                     "replacing %s.", group.group_id, instance_id, member_id, existing.member_id)
            return new
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {existing.member_id}.")
        if not classic:
            check_member_epoch(existing, epoch, owned)
        return existing

    # -- regular expressions (their resolution: coordinator/consumer_group_regex.py) ----------
    def _refresh_regexes(self, group_id: str, now_ms: int) -> None:
        """Resolve the group's regexes against the topics (Kafka does it in its executor, then
        handleRegularExpressionsResult); a change of the topics they match bumps the group epoch."""
        group = self.groups.get(group_id)
        if group is None:
            return
        records, bump, subscribed = resolve_regexes(group, self.topics.topic_names(), self.topics_version, now_ms)
        metadata_hash = self._metadata_hash(subscribed)
        if bump or metadata_hash != group.metadata_hash:
            records.append(epoch_record(group_id, group.group_epoch + 1, metadata_hash))
            self.rebalances += 1
        try:
            self._commit(group_id, records, now_ms)
        except StoreError as exc:
            log.error("group %s: storing the resolved regular expressions failed: %s", group_id, exc)
            return
        group.metadata_refresh_deadline_ms = now_ms + METADATA_REFRESH_INTERVAL_MS
        group.metadata_refresh_epoch = group.group_epoch

    # -- subscription metadata (the target assignment: coordinator/consumer_assignment.py) ------
    def _update_subscription_metadata(self, group: ConsumerGroup, bump: bool, member: ConsumerGroupMember,
                                      updated: ConsumerGroupMember, records: list[GroupRecord],
                                      now_ms: int) -> tuple[int, SubscriptionType]:
        regexes = group.subscribed_regexes_after(member, updated)
        subscribed = group.subscribed_topics_after(member if member.member_id in group.members else None, updated)
        metadata_hash = self._metadata_hash(subscribed)
        members = len(group.members)
        if updated.member_id not in group.members and group.static_member(updated.instance_id) is None:
            members += 1
        sub_type = subscription_type(regexes, subscribed, members)
        epoch = group.group_epoch
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch += 1
            records.append(epoch_record(group.group_id, epoch, metadata_hash))
            self.rebalances += 1
            log.info("[GroupId %s] Bumped group epoch to %d.", group.group_id, epoch)
        group.metadata_refresh_deadline_ms = now_ms + METADATA_REFRESH_INTERVAL_MS
        group.metadata_refresh_epoch = epoch
        if group.has_subscription_metadata_record:
            records.append(tombstone(GroupRecordType.CONSUMER_GROUP_PARTITION_METADATA, group.group_id))
        return epoch, sub_type

    # -- reconciliation (Kafka's CurrentAssignmentBuilder: coordinator/consumer_assignment.py) --
    def _assign_and_reconcile(self, group: ConsumerGroup, group_epoch: int, member: ConsumerGroupMember,
                              updated: ConsumerGroupMember, sub_type: SubscriptionType,
                              owned: dict[uuid.UUID, frozenset[int]] | None, records: list[GroupRecord],
                              now_ms: int) -> ConsumerGroupMember | None:
        """A new target assignment when the group epoch moved past the last one (and one may be computed now), the
        member's next step towards its target, all written; the member reconciled (None: unchanged)."""
        assigned = group_epoch > group.assignment_epoch and self._assign_now(group, now_ms)
        if assigned:
            target = target_assignment(group, group_epoch, member, updated, sub_type, records, self.topics,
                                       self.config.assignors[0])
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target_of(updated.member_id, updated.instance_id)
        reconciled = self._maybe_reconcile(group, updated, target_epoch, target, owned, records)
        self._commit(group.group_id, records, now_ms)
        if assigned:  # (a new group exists once its records are replayed)
            self.groups[group.group_id].last_assignment_ms = now_ms
        return reconciled

    def _maybe_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int,
                         target: Assignment, owned: dict[uuid.UUID, frozenset[int]] | None,
                         records: list[GroupRecord]) -> ConsumerGroupMember | None:
        """The member moved towards its target (None: unchanged), its new current assignment recorded."""
        if member.is_reconciled_to(target_epoch):
            return None
        new = next_assignment(member, target_epoch, target, group.current_partition_epoch, owned)
        if new.assignment_equals(member):
            return None
        records.append(current_assignment_record(group.group_id, new))
        log.debug("[GroupId %s] Member %s: epoch %d, state %s, assigned %s, revoking %s", group.group_id,
                  new.member_id, new.member_epoch, new.state.name, dict(new.assigned_partitions),
                  dict(new.partitions_pending_revocation))
        return new

    def _after_reconcile(self, group_id: str, member: ConsumerGroupMember, changed: bool, now_ms: int) -> None:
        if not changed:
            return
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self._schedule_rebalance(group_id, member, now_ms)
        else:
            self.timers.cancel_rebalance(group_id, member.member_id)

    # == leaving and fencing =====================================================================
    def _leave(self, group_id: str, instance_id: str | None, member_id: str, member_epoch: int,
               now_ms: int) -> HeartbeatResult:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group_id}.")
            log.info("[GroupId %s] Member %s left the consumer group.", group_id, member_id)
            self._fence([member], group, now_ms)
            return HeartbeatResult(ErrorCode.NONE, None, member_id, member_epoch)
        member = group.static_member(instance_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {member.member_id}.")
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A static member leaving for a while keeps its place (and target) until its session expires.
            leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={})
            self._commit(group_id, [current_assignment_record(group_id, leaving)], now_ms)
            log.info("[GroupId %s] Static member %s with instance id %s temporarily left the consumer group.",
                     group_id, member_id, instance_id)
            return HeartbeatResult(ErrorCode.NONE, None, member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self._fence([member], group, now_ms)
        return HeartbeatResult(ErrorCode.NONE, None, member_id, member_epoch)

    def _fence(self, members: list[ConsumerGroupMember], group: ConsumerGroup, now_ms: int) -> None:
        """Kafka's consumerGroupFenceMembers: the members' records deleted, their regexes if nobody else
        uses them, and the group epoch bumped so the others get a new target."""
        if not members:
            return
        gid = group.group_id
        if self._may_downgrade(group, {m.member_id for m in members}):
            self._downgrade(group, {m.member_id for m in members}, now_ms)
            return
        records: list[GroupRecord] = []
        for member in members:
            records += member_tombstones(gid, member.member_id)
        counts: dict[str, int] = {}
        for member in members:
            if member.subscribed_topic_regex:
                counts[member.subscribed_topic_regex] = counts.get(member.subscribed_topic_regex, 0) + 1
        deleted = [regex for regex, n in counts.items() if group.num_subscribed_members(regex) == n]
        records += [tombstone(GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, gid, regular_expression=r)
                    for r in deleted]
        subscribed = group.subscribed_topics_without(members, deleted)
        records.append(epoch_record(gid, group.group_epoch + 1, self._metadata_hash(subscribed)))
        empty = len(members) == len(group.members)
        if empty and self.config.empty_assignment_on_leave:
            records.append(target_epoch_record(gid, group.group_epoch + 1))
        self.rebalances += 1
        self._commit(gid, records, now_ms)
        if empty and self.config.empty_assignment_on_leave:
            group.last_assignment_ms = None
        for member in members:
            self._cancel_timers(gid, member.member_id)

    def _fence_by_timer(self, group_id: str, member_id: str, reason: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        log.info("[GroupId %s] Member %s fenced from the group because %s.", group_id, member_id, reason)
        group.events.append((now_ms, f"member {member_id} fenced: {reason}"))
        try:
            self._fence([member], group, now_ms)
        except StoreError as exc:
            log.error("group %s: fencing member %s failed: %s; trying again later", group_id, member_id, exc)
            self.timers.schedule((SESSION, group_id, member_id), now_ms + 1_000)

    # == timers ==================================================================================
    def _schedule_session(self, group_id: str, member_id: str, now_ms: int, timeout_ms: int | None = None) -> None:
        """The member's session: group.consumer.session.timeout.ms, or a classic member's own."""
        timeout_ms = self.config.session_timeout_ms if timeout_ms is None else timeout_ms
        self.timers.schedule((SESSION, group_id, member_id), now_ms + timeout_ms)

    def _schedule_rebalance(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        self.timers.schedule_rebalance(group_id, member.member_id, member.member_epoch,
                                       now_ms + max(member.rebalance_timeout_ms, 0))

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.timers.cancel_member(group_id, member_id, CLASSIC_JOIN, CLASSIC_SYNC)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def _assign_by_timer(self, group_id: str, now_ms: int) -> None:
        """The batched target assignment of a group whose epoch moved on since the last one (Kafka 4.3+): its
        members reconcile towards it at their next heartbeats."""
        group = self.groups.get(group_id)
        if group is None or group.group_epoch <= group.assignment_epoch or not group.members:
            return
        member = next(iter(group.members.values()))
        records: list[GroupRecord] = []
        try:
            target_assignment(group, group.group_epoch, member, member, group.subscription_type, records,
                              self.topics, self.config.assignors[0])
            self._commit(group_id, records, now_ms)
        except (GroupError, StoreError) as exc:
            log.error("group %s: the target assignment failed: %s; trying again later", group_id, exc)
            self.timers.schedule((_ASSIGN, group_id, ""), now_ms + 1_000)
            return
        group.last_assignment_ms = now_ms

    def tick(self, now_ms: int) -> None:
        while (key := self.timers.pop_expired(now_ms)) is not None:
            kind, group_id, member_id = key
            if kind == _ASSIGN:
                self._assign_by_timer(group_id, now_ms)
            elif kind == SESSION:
                self._fence_by_timer(group_id, member_id, "the member session expired", now_ms)
            elif kind == CLASSIC_JOIN:
                self._fence_by_timer(group_id, member_id, "the classic member failed to join within the rebalance "
                                     "timeout", now_ms)
            elif kind == CLASSIC_SYNC:
                self._fence_by_timer(group_id, member_id, "the member failed to sync within timeout", now_ms)
            else:
                epoch = self.timers.rebalance_epoch(group_id, member_id)
                group = self.groups.get(group_id)
                member = group.members.get(member_id) if group is not None else None
                if member is not None and member.member_epoch == epoch:
                    self._fence_by_timer(group_id, member_id, f"it failed to transition from epoch {epoch} "
                                         f"within {member.rebalance_timeout_ms}ms", now_ms)

    # == describe, delete ======================================================================
    def describe(self, group_ids: Iterable[str]) -> list[DescribedGroup]:
        return describe_groups(self.groups, group_ids, self.other_group_type, self.config.assignors[0])

    def delete_group(self, group_id: str, now_ms: int) -> ErrorCode:
        """The group's records (DeleteGroups on an Empty consumer group; its offsets are the caller's)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not ConsumerGroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        try:
            self._commit(group_id, group_tombstones(group), now_ms)
        except StoreError as exc:
            return exc.error
        return ErrorCode.NONE

    # == offsets: the member epoch checks (ConsumerGroup's) ============================================
    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                               transactional: bool, api_version: int) -> ErrorCode:
        """NONE when the group is not a consumer group."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE
        return group.validate_offset_commit(member_id, instance_id, member_epoch, transactional, api_version)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        group = self.groups.get(group_id)
        return ErrorCode.NONE if group is None else group.validate_offset_fetch(member_id, member_epoch)


