"""KIP-932 share groups as pure logic (Kafka 4.x's ShareGroup, ShareGroupMember and the share part of
GroupMetadataManager): members join with ShareGroupHeartbeat, every member gets a target assignment from the
`simple` assignor (several members may share a partition: the records, not the partitions, are divided), and a
member takes its target at once (nothing to revoke). Session timeouts fence silent members.

A partition is assigned only once its share-partition state is initialized at the share coordinator: a heartbeat
that subscribes the group to partitions without state asks the shell to initialize them
(`ShareHeartbeatResult.initialize`, InitializeShareGroupState at the group epoch), and the heartbeat after that
is done (`initialized`) assigns them. Which partitions are initializing, initialized or being deleted is kept in
`__consumer_offsets` (ShareGroupStatePartitionMetadata), so that a group coordinator that moves or restarts does
not initialize them again (which would reset their state); the group's epoch too (ShareGroupMetadata). Members are
not (they rejoin after a restart, docs/compatibility/kafka4.md).

How the epochs move is each release's (recorded from Kafka 4.1, 4.2 and 4.4: share_group_epochs): Kafka 4.3 and
later create a group at epoch 1 and compute its assignment at most every share.assignment.interval.ms; 4.1 and 4.2
compute it at every change, and a member's leaving takes two epochs (its fencing, then the next heartbeat's new
assignment); 4.4 gives an empty group its assignment epoch when the last member leaves. Time is passed in.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from coordinator.assignors import Assignment, GroupSpec, MemberSpec, PartitionAssignorError, SubscriptionType
from coordinator.group_interfaces import GroupError, RecordStore, StoreError, TopicsView
from coordinator.share_assignors import HashingSimpleAssignor, SimpleAssignor, java_hash_order
from coordinator.timers import KeyedTimers
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType, encode_group_record

log = logging.getLogger(__name__)

LEAVE_GROUP_MEMBER_EPOCH = -1
EVENTS_KEPT = 100


class ShareGroupState(Enum):
    """Kafka's ShareGroupState, with the names ListGroups and ShareGroupDescribe report."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned_partitions: Assignment = field(default_factory=dict)


TopicPartitions = dict[uuid.UUID, frozenset[int]]


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    events: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))
    metadata_hash: int = 0
    # The share partitions' state at the share coordinator (ShareGroupStatePartitionMetadata).
    initializing: TopicPartitions = field(default_factory=dict)
    initialized: TopicPartitions = field(default_factory=dict)
    deleting: frozenset[uuid.UUID] = frozenset()
    last_assignment_ms: int | None = None
    reassign_on_heartbeat: bool = False  # 4.1/4.2: a member left; the next heartbeat bumps the epoch again
    assigned_initialized: TopicPartitions = field(default_factory=dict)  # what the last assignment could assign

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topics(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    # Share partitions whose state the shell initializes (InitializeShareGroupState at `state_epoch`, start
    # offset -1), then reports with ShareGroupCoordinator.initialized.
    initialize: TopicPartitions = field(default_factory=dict)
    state_epoch: int = 0


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200
    initial_epoch: int = 0  # Kafka 4.3+: 1 (a group's first member gets epoch 2)
    assignment_interval_ms: int = 0  # Kafka 4.3+: share.assignment.interval.ms (1 s)
    empty_assignment_on_leave: bool = False  # Kafka 4.4
    reassign_after_leave: bool = False  # Kafka 4.1 and 4.2
    balanced_assignor: bool = True  # Kafka 4.2+'s simple assignor (4.1's hashes members onto partitions)


# Timer keys: ("share-session", group id, member id), ("share-assign", group id, "")
_SESSION = "share-session"
_ASSIGN = "share-assign"


class ShareGroupCoordinator:
    def __init__(self, config: ShareGroupConfig, store: RecordStore, topics: TopicsView) -> None:
        self.config = config
        self.store = store
        self.topics = topics
        self.groups: dict[str, ShareGroup] = {}
        self.timers: KeyedTimers[tuple[str, str, str]] = KeyedTimers()
        self.assignor = SimpleAssignor() if config.balanced_assignor else HashingSimpleAssignor()
        self.other_group_type: Callable[[str], str | None] | None = None
        # Called with (group id, member id) when a member leaves or is fenced: its acquired records go back.
        self.on_member_gone: Callable[[str, str], None] | None = None

    # == records ================================================================================
    def _store_epoch(self, group: ShareGroup, epoch: int, now_ms: int) -> None:
        key, value = encode_group_record(GroupRecordType.SHARE_GROUP_METADATA, {"group_id": group.group_id},
                                         {"epoch": epoch, "metadata_hash": group.metadata_hash})
        self.store.write(group.group_id, [(key, value)], now_ms)

    def _store_state_metadata(self, group_id: str, initializing: TopicPartitions, initialized: TopicPartitions,
                              deleting: frozenset[uuid.UUID], now_ms: int) -> None:
        """ShareGroupStatePartitionMetadata: which share partitions' state is being initialized, is initialized,
        is being deleted. StoreError: nothing changed."""
        def topics(which: TopicPartitions) -> list[dict[str, object]]:
            return [{"topic_id": t, "topic_name": self.topics.topic_name(t) or "", "partitions": sorted(ps)}
                    for t, ps in sorted(which.items(), key=lambda item: str(item[0])) if ps]
        key, value = encode_group_record(GroupRecordType.SHARE_GROUP_STATE_PARTITION_METADATA, {"group_id": group_id}, {
            "initializing_topics": topics(initializing), "initialized_topics": topics(initialized),
            "deleting_topics": [{"topic_id": t, "topic_name": self.topics.topic_name(t) or ""}
                                for t in sorted(deleting, key=str)]})
        self.store.write(group_id, [(key, value)], now_ms)

    def load(self, records: Iterable[tuple[GroupRecordType, Mapping[str, object], Mapping[str, object] | None]],
             now_ms: int) -> None:
        for kind, key, value in records:
            group_id = str(key["group_id"])
            if kind is GroupRecordType.SHARE_GROUP_METADATA:
                if value is None:
                    self.groups.pop(group_id, None)
                else:
                    group = self.groups.setdefault(group_id, ShareGroup(group_id))
                    group.group_epoch = int(value["epoch"])  # type: ignore[arg-type]
                    group.assignment_epoch = group.group_epoch
            elif kind is GroupRecordType.SHARE_GROUP_STATE_PARTITION_METADATA:
                group = self.groups.setdefault(group_id, ShareGroup(group_id))
                if value is None:
                    group.initializing, group.initialized, group.deleting = {}, {}, frozenset()
                    continue
                group.initializing = _topic_partitions(value["initializing_topics"])
                group.initialized = _topic_partitions(value["initialized_topics"])
                group.deleting = frozenset(t.topic_id for t in value["deleting_topics"])  # type: ignore[attr-defined]

    def unload(self, belongs: Callable[[str], bool]) -> int:
        gone = [gid for gid in self.groups if belongs(gid)]
        for gid in gone:
            for member_id in self.groups.pop(gid).members:
                self.timers.cancel((_SESSION, gid, member_id))
            self.timers.cancel((_ASSIGN, gid, ""))
        return len(gone)

    # == ShareGroupHeartbeat =====================================================================
    def heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed_topic_names: list[str] | None, client_id: str, client_host: str,
                  now_ms: int) -> ShareHeartbeatResult:
        try:
            self._validate(group_id, member_id, member_epoch, subscribed_topic_names)
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return self._leave(group_id, member_id, now_ms)
            return self._heartbeat(group_id, member_id, member_epoch, rack_id, subscribed_topic_names, client_id,
                                   client_host, now_ms)
        except GroupError as exc:
            return ShareHeartbeatResult(exc.error, exc.message)
        except StoreError as exc:
            return ShareHeartbeatResult(exc.error, str(exc))

    @staticmethod
    def _validate(group_id: str, member_id: str, epoch: int, names: list[str] | None) -> None:
        """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
        if not member_id or not member_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not group_id or not group_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if epoch == 0:
            if not names:
                raise GroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"MemberEpoch is {epoch}, but must be greater than or "
                             "equal to -1.")

    def _new_group(self, group_id: str, epoch: int) -> ShareGroup:
        """A share group not there yet, at the release's first epoch (in memory until its first record)."""
        other = self.other_group_type(group_id) if self.other_group_type is not None else None
        if other not in (None, "simple"):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if epoch != 0:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = ShareGroup(group_id)
        group.group_epoch = group.assignment_epoch = self.config.initial_epoch
        return group

    def _heartbeat(self, group_id: str, member_id: str, epoch: int, rack_id: str | None, names: list[str] | None,
                   client_id: str, client_host: str, now_ms: int) -> ShareHeartbeatResult:
        group = self.groups.get(group_id) or self._new_group(group_id, epoch)
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                 f"{group_id}.")
            if len(group.members) >= self.config.max_size:
                raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum "
                                 f"capacity of {self.config.max_size} members.")
            member = ShareGroupMember(member_id)
        elif epoch > member.member_epoch or (epoch < member.member_epoch and epoch != member.previous_member_epoch):
            relation = "greater" if epoch > member.member_epoch else "smaller"
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"The share group member has a {relation} member "
                             f"epoch ({epoch}) than the one known by the "
                             f"group coordinator ({member.member_epoch}). The member must abandon all its "
                             "partitions and rejoin.")
        new_names = tuple(sorted(set(names))) if names is not None else member.subscribed_topic_names
        joining = member_id not in group.members
        changed = joining or new_names != member.subscribed_topic_names
        before = dict(member.assigned_partitions)
        group_epoch = group.group_epoch
        metadata_changed = self._metadata_changed(group, new_names, member_id)
        # Share partitions initialized since the last assignment was computed: a new one is needed (if one is
        # pending, at a later group epoch, it will have them).
        initialized = group.group_epoch == group.assignment_epoch and group.initialized != group.assigned_initialized
        if changed or group.group_epoch == 0 or metadata_changed or group.reassign_on_heartbeat or initialized:
            group_epoch += 1
            self._store_epoch(group, group_epoch, now_ms)  # StoreError: nothing changed
            group.reassign_on_heartbeat = False
            group.events.append((now_ms, f"group epoch {group_epoch}: member {member_id} "
                                         f"{'joined' if joining else 'changed its subscription'}"
                                 if changed else f"group epoch {group_epoch}: the partitions to assign changed"))
        if member_id not in self.groups.get(group_id, group).members:
            log.info("[GroupId %s] Member %s joins the share group.", group_id, member_id)
        self.groups[group_id] = group
        group.group_epoch = group_epoch
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        member.client_id, member.client_host = client_id, client_host
        member.subscribed_topic_names = new_names
        group.members[member_id] = member
        if group_epoch > group.assignment_epoch and self._assign_now(group, now_ms):
            self._assign(group, group_epoch, now_ms)
        target = group.target_assignment.get(member_id, {})
        if member.member_epoch != group.assignment_epoch or member.assigned_partitions != target:
            # A share group member takes its target at once: partitions are shared, nothing to revoke.
            member.previous_member_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
            member.assigned_partitions = target
        self.timers.schedule((_SESSION, group_id, member_id), now_ms + self.config.session_timeout_ms)
        initialize = self._start_initializing(group, now_ms)
        send = epoch == 0 or member.assigned_partitions != before
        return ShareHeartbeatResult(ErrorCode.NONE, None, member_id, member.member_epoch,
                                    self.config.heartbeat_interval_ms, member.assigned_partitions if send else None,
                                    initialize, group.group_epoch)

    def _assign_now(self, group: ShareGroup, now_ms: int) -> bool:
        """Whether the target assignment may be computed now (else by a timer, once the interval since the last
        one has passed; the members get it at their next heartbeat)."""
        interval = self.config.assignment_interval_ms
        last = group.last_assignment_ms
        if interval <= 0 or last is None or now_ms - last >= interval:
            return True
        self.timers.schedule((_ASSIGN, group.group_id, ""), last + interval)
        return False

    def _subscribed_partitions(self, group: ShareGroup) -> TopicPartitions:
        out: TopicPartitions = {}
        for name in group.subscribed_topics():
            topic_id = self.topics.topic_id(name)
            count = self.topics.partition_count(topic_id) if topic_id is not None else -1
            if topic_id is not None and count > 0:
                out[topic_id] = frozenset(range(count))
        return out

    def _start_initializing(self, group: ShareGroup, now_ms: int) -> TopicPartitions:
        """The subscribed partitions without share state, now initializing (written first: a coordinator that
        moves meanwhile initializes them again, never an initialized one)."""
        wanted: TopicPartitions = {}
        for topic_id, partitions in self._subscribed_partitions(group).items():
            if topic_id in group.deleting:
                continue
            missing = partitions - group.initialized.get(topic_id, frozenset()) - \
                group.initializing.get(topic_id, frozenset())
            if missing:
                wanted[topic_id] = frozenset(missing)
        if not wanted:
            return {}
        initializing = _union(group.initializing, wanted)
        self._store_state_metadata(group.group_id, initializing, group.initialized, group.deleting, now_ms)
        group.initializing = initializing
        return wanted

    def _metadata_changed(self, group: ShareGroup, names: tuple[str, ...], member_id: str) -> bool:
        """Whether the group's topics or their partition counts changed."""
        topics = set(group.subscribed_topics()) | set(names)
        signature = hash(tuple(sorted((n, self.topics.partition_count(tid)) for n in topics
                                      if (tid := self.topics.topic_id(n)) is not None)))
        if signature != group.metadata_hash:
            group.metadata_hash = signature
            return True
        return False

    def _assign(self, group: ShareGroup, epoch: int, now_ms: int) -> None:
        specs = {}
        for member_id in java_hash_order(group.members):  # as Kafka's HashMap of the members iterates
            member = group.members[member_id]
            ids = frozenset(tid for tid in (self.topics.topic_id(n) for n in member.subscribed_topic_names)
                            if tid is not None)
            specs[member_id] = MemberSpec(ids, group.target_assignment.get(member_id, {}))
        subscriptions = {spec.subscribed_topic_ids for spec in specs.values()}
        sub_type = SubscriptionType.HOMOGENEOUS if len(subscriptions) <= 1 else SubscriptionType.HETEROGENEOUS

        def assignable(topic_id: uuid.UUID) -> frozenset[int] | None:
            if self.topics.partition_count(topic_id) == -1:
                return None
            return group.initialized.get(topic_id, frozenset())
        try:
            result = self.assignor.assign(GroupSpec(specs, sub_type), assignable)
        except PartitionAssignorError as exc:
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                             f"epoch {epoch}: {exc}") from None
        group.target_assignment = {m: {t: frozenset(p) for t, p in result.get(m, {}).items() if p}
                                   for m in group.members}
        group.group_epoch = group.assignment_epoch = epoch
        group.last_assignment_ms = now_ms
        group.assigned_initialized = dict(group.initialized)

    def _leave(self, group_id: str, member_id: str, now_ms: int) -> ShareHeartbeatResult:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        if member_id not in group.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        log.info("[GroupId %s] Member %s left the share group.", group_id, member_id)
        self._remove(group, member_id, now_ms, "left")
        return ShareHeartbeatResult(ErrorCode.NONE, None, member_id, LEAVE_GROUP_MEMBER_EPOCH)

    def _remove(self, group: ShareGroup, member_id: str, now_ms: int, why: str) -> None:
        """Kafka's shareGroupFenceMember: the group epoch moves on; the others get their new target at their next
        heartbeat (4.1/4.2: at yet another epoch; 4.3+: within the assignment interval)."""
        epoch = group.group_epoch + 1
        self._store_epoch(group, epoch, now_ms)
        group.members.pop(member_id, None)
        group.target_assignment.pop(member_id, None)
        group.group_epoch = epoch
        group.events.append((now_ms, f"group epoch {epoch}: member {member_id} {why}"))
        self.timers.cancel((_SESSION, group.group_id, member_id))
        if not group.members:
            if self.config.empty_assignment_on_leave:
                group.assignment_epoch = epoch
                group.last_assignment_ms = None
        elif self.config.reassign_after_leave:
            group.reassign_on_heartbeat = True
        if self.on_member_gone is not None:
            self.on_member_gone(group.group_id, member_id)

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    # == the share partitions' state ===============================================================
    def initialized(self, group_id: str, done: TopicPartitions, failed: TopicPartitions, now_ms: int) -> None:
        """The shell's initialization is over: `done` share partitions have state now (assigned from the next
        heartbeat on), `failed` ones are initialized again by a later heartbeat."""
        group = self.groups.get(group_id)
        if group is None:
            return
        initializing = _minus(_minus(group.initializing, done), failed)
        initialized = _union(group.initialized, done)
        try:
            self._store_state_metadata(group_id, initializing, initialized, group.deleting, now_ms)
        except StoreError as exc:
            log.warning("share group %s: recording initialized share partitions failed: %s", group_id, exc)
            group.initializing = _minus(group.initializing, done)
            return
        group.initializing, group.initialized = initializing, initialized

    def prepare_initialize(self, group_id: str, partitions: TopicPartitions, now_ms: int) -> tuple[ErrorCode, int]:
        """AlterShareGroupOffsets: the share partitions are initialized again (with the given start offsets, by
        the shell) at the group's epoch, the state epoch; (error, state epoch)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, 0
        try:
            self._store_state_metadata(group_id, _union(group.initializing, partitions), group.initialized,
                                       group.deleting, now_ms)
        except StoreError as exc:
            return exc.error, 0
        group.initializing = _union(group.initializing, partitions)
        return ErrorCode.NONE, group.group_epoch

    def state_partitions(self, group_id: str, topic_ids: Iterable[uuid.UUID] | None = None) -> TopicPartitions:
        """The group's share partitions that have (or are getting) state, of some topics or all."""
        group = self.groups.get(group_id)
        if group is None:
            return {}
        found = _union(group.initialized, group.initializing)
        return found if topic_ids is None else {t: ps for t, ps in found.items() if t in set(topic_ids)}

    def prepare_delete(self, group_id: str, topic_ids: Iterable[uuid.UUID], now_ms: int) -> ErrorCode:
        """DeleteShareGroupOffsets, DeleteGroups: the topics' share state is being deleted (written first, so that
        a coordinator that moves finishes it)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        deleting = group.deleting | frozenset(topic_ids)
        initializing = {t: ps for t, ps in group.initializing.items() if t not in deleting}
        initialized = {t: ps for t, ps in group.initialized.items() if t not in deleting}
        try:
            self._store_state_metadata(group_id, initializing, initialized, deleting, now_ms)
        except StoreError as exc:
            return exc.error
        group.initializing, group.initialized, group.deleting = initializing, initialized, deleting
        return ErrorCode.NONE

    def deleted(self, group_id: str, topic_ids: Iterable[uuid.UUID], now_ms: int) -> ErrorCode:
        """The topics' share state is deleted: they are no longer being deleted."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        deleting = group.deleting - frozenset(topic_ids)
        try:
            self._store_state_metadata(group_id, group.initializing, group.initialized, deleting, now_ms)
        except StoreError as exc:
            return exc.error
        group.deleting = deleting
        return ErrorCode.NONE

    # == timers ==================================================================================
    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def tick(self, now_ms: int) -> None:
        while (key := self.timers.pop_expired(now_ms)) is not None:
            kind, group_id, member_id = key
            group = self.groups.get(group_id)
            if kind == _ASSIGN:
                if group is not None and group.group_epoch > group.assignment_epoch:
                    self._assign_by_timer(group, now_ms)
                continue
            if group is None or member_id not in group.members:
                continue
            log.info("[GroupId %s] Member %s fenced from the group because the member session expired.",
                     group_id, member_id)
            try:
                self._remove(group, member_id, now_ms, "fenced: the member session expired")
            except StoreError as exc:
                log.error("share group %s: fencing %s failed: %s; trying again later", group_id, member_id, exc)
                self.timers.schedule(key, now_ms + 1_000)

    def _assign_by_timer(self, group: ShareGroup, now_ms: int) -> None:
        try:
            self._assign(group, group.group_epoch, now_ms)
        except GroupError as exc:
            log.error("share group %s: the target assignment failed: %s; trying again later", group.group_id, exc)
            self.timers.schedule((_ASSIGN, group.group_id, ""), now_ms + 1_000)

    # == admin ===================================================================================
    def create_empty(self, group_id: str, epoch: int, now_ms: int) -> ErrorCode:
        """AlterShareGroupOffsets of a group that does not exist yet: Kafka creates it empty (at epoch 0 in
        4.2, 1 in 4.4), so that its share-partition state can be set before any member joins."""
        if group_id in self.groups:
            return ErrorCode.NONE
        other = self.other_group_type(group_id) if self.other_group_type is not None else None
        if other not in (None, "simple"):
            return ErrorCode.GROUP_ID_NOT_FOUND
        group = ShareGroup(group_id)
        try:
            self._store_epoch(group, epoch, now_ms)
        except StoreError as exc:
            return exc.error
        group.group_epoch = group.assignment_epoch = epoch
        self.groups[group_id] = group
        return ErrorCode.NONE

    def delete_group(self, group_id: str, now_ms: int) -> ErrorCode:
        """An empty group's records go (its share state was deleted first: `prepare_delete`, `deleted`)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        records = [encode_group_record(kind, {"group_id": group_id}, None)
                   for kind in (GroupRecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
                                GroupRecordType.SHARE_GROUP_METADATA)]
        try:
            self.store.write(group_id, records, now_ms)
        except StoreError as exc:
            return exc.error
        del self.groups[group_id]
        self.timers.cancel((_ASSIGN, group_id, ""))
        return ErrorCode.NONE


def _topic_partitions(topics: object) -> TopicPartitions:
    return {t.topic_id: frozenset(t.partitions) for t in topics}  # type: ignore[attr-defined]


def _union(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    return {t: a.get(t, frozenset()) | b.get(t, frozenset()) for t in {*a, *b}}


def _minus(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    out = {t: ps - b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}
