"""Kafka 4.4's streams group protocol (KIP-1071) as pure logic: StreamsGroupHeartbeat (join with the topology,
heartbeat, leave, static members), the topology and its internal topics, the broker-side task assignment and the
reconciliation that revokes a task before another member gets it, session and rebalance timeouts, and the member
epoch checks of OffsetCommit/OffsetFetch.

Follows GroupMetadataManager.streamsGroupHeartbeat (4.4): every change is a list of records computed from the
group as it is, written through the injected store, then replayed (coordinator/streams_group.py). Time is passed
in; timers are keyed deadlines the shell fires with `tick`. Kafka 4.4 hands out no warm-up tasks (its
AssignmentRefiner returns the target assignment unchanged), and neither does this: warm-up tasks a member reports
are reconciled like any other.
"""

from __future__ import annotations

import hashlib
import logging
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from coordinator.group_interfaces import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    GroupError,
    GroupRecord,
    RecordStore,
    StoreError,
    TopicsView,
)
from coordinator.streams_assignor import AssignmentMember, TaskAssignorError, assign
from coordinator.streams_group import (
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    TasksTuple,
    current_assignment_record,
    group_tombstones,
    member_record,
    member_tombstones,
    metadata_record,
    replay,
    target_metadata_record,
    target_record,
    topology_record,
)
from coordinator.streams_heartbeat import (
    HeartbeatRequest,
    Status,
    StreamsHeartbeatResult,
    check_epoch,
    check_tasks,
    partitions_by_endpoint,
    validate_request,
)
from coordinator.streams_reconciliation import Owners, next_assignment
from coordinator.streams_topology import (
    ConfiguredTopology,
    InternalTopic,
    StreamsStatus,
    StreamsTopology,
    configure_topics,
)
from coordinator.timers import SESSION, MemberTimers
from protocol.group_records import GroupKey, encode_key
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType, encode_group_record

log = logging.getLogger(__name__)

METADATA_REFRESH_INTERVAL_MS = 2**31 - 1  # refreshed on topic changes, not on a period
ASSIGNORS = ("sticky",)


@dataclass(frozen=True, slots=True)
class StreamsGroupConfig:
    """A group's effective settings: the broker's group.streams.* defaults, or its streams.* group configs."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3_000
    assignment_interval_ms: int = 1_000
    task_offset_interval_ms: int = 60_000
    acceptable_recovery_lag: int = 10_000
    num_warmup_replicas: int = 2
    assignor: str = "sticky"
    static_members: bool = True  # Kafka 4.4; 4.2 and 4.3 refuse instance ids
    # A new group's target assignment epoch before its first assignment (4.3 on: 1, Kafka's
    # TargetAssignmentMetadata.INITIAL; 4.2: 0), and whether the last member's leave sets the (empty) target
    # assignment to the new group epoch (4.4).
    initial_assignment_epoch: int = 1
    empty_target_on_last_leave: bool = True


_INITIAL_DELAY = "streams-initial-rebalance"
_INTERVAL = "streams-assignment-interval"


class StreamsGroupCoordinator:
    def __init__(self, config: Callable[[str], StreamsGroupConfig], store: RecordStore, topics: TopicsView) -> None:
        """`config(group_id)`: the group's effective settings (broker defaults and group configs)."""
        self.config = config
        self.store = store
        self.topics = topics
        self.groups: dict[str, StreamsGroup] = {}
        self.timers = MemberTimers()
        # What a group id this coordinator does not own is ("simple", "classic-empty", "classic", "consumer",
        # "share" or None), and what to do once an empty classic group's tombstone is durable (the shell wires them).
        self.other_group_type: Callable[[str], str | None] | None = None
        self.on_classic_converted: Callable[[str], None] | None = None

    # == records ================================================================================
    def _commit(self, group_id: str, records: list[GroupRecord], now_ms: int) -> None:
        """Write the records (StoreError if that fails: nothing changed), then apply them."""
        if not records:
            return
        self.store.write(group_id, [(encode_key(GroupKey(key["group_id"])), None)
                                    if kind is GroupRecordType.GROUP_METADATA else encode_group_record(kind, key, value)
                                    for kind, key, value in records], now_ms)
        for record in records:
            if record[0] is GroupRecordType.GROUP_METADATA:
                if self.on_classic_converted is not None:
                    self.on_classic_converted(group_id)
            else:
                replay(self.groups, record, now_ms, self._new_group)

    def _new_group(self, group_id: str, now_ms: int) -> StreamsGroup:
        return StreamsGroup(group_id, now_ms, self.config(group_id).initial_assignment_epoch)

    def load(self, records: Iterable[GroupRecord], now_ms: int) -> None:
        """Replay `__consumer_offsets` records after a restart; members get a fresh session (Kafka's onLoaded)."""
        for record in records:
            try:
                replay(self.groups, record, now_ms, self._new_group)
            except (RuntimeError, KeyError, ValueError) as exc:
                log.warning("skipping a streams group record: %s", exc)
        for group in self.groups.values():
            group.request_metadata_refresh()
            for member in group.members.values():
                self.timers.schedule((SESSION, group.group_id, member.member_id),
                                     now_ms + self.config(group.group_id).session_timeout_ms)
                if member.state is MemberState.UNREVOKED_TASKS:
                    self._schedule_rebalance(group.group_id, member, now_ms)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        gone = [gid for gid in self.groups if belongs(gid)]
        for gid in gone:
            for member_id in self.groups.pop(gid).members:
                self._cancel_timers(gid, member_id)
            self.timers.cancel((_INITIAL_DELAY, gid, ""))
            self.timers.cancel((_INTERVAL, gid, ""))
        return len(gone)

    def on_topics_changed(self, changed: Iterable[str]) -> None:
        """Topics appeared, went or grew: groups reading or creating them configure their topology again."""
        names = set(changed)
        for group in self.groups.values():
            if any(group.is_subscribed_to(name) for name in names):
                group.request_metadata_refresh()

    def _metadata_hash(self, topology: StreamsTopology) -> int:
        """A hash of the topology's existing topics (ids and partition counts): a change reconfigures the
        topology and bumps the group epoch. (Kafka hashes more, with its own function; only equality matters.)"""
        digest = hashlib.blake2b(digest_size=8)
        for name in sorted(topology.required_topics()):
            topic_id = self.topics.topic_id(name)
            if topic_id is not None:
                digest.update(name.encode() + b"\0" + topic_id.bytes
                              + struct.pack(">i", self.topics.partition_count(topic_id)))
        return int(struct.unpack(">q", digest.digest())[0])

    def _partition_count(self, name: str) -> int | None:
        topic_id = self.topics.topic_id(name)
        return None if topic_id is None else self.topics.partition_count(topic_id)

    # == StreamsGroupHeartbeat ====================================================================
    def heartbeat(self, request: HeartbeatRequest, now_ms: int) -> StreamsHeartbeatResult:
        try:
            validate_request(request)
            if request.instance_id is not None and not self.config(request.group_id).static_members:
                raise GroupError(ErrorCode.INVALID_REQUEST, "Static membership is not yet supported.")
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request, now_ms)
            return self._heartbeat(request, now_ms)
        except GroupError as exc:
            return StreamsHeartbeatResult(exc.error, exc.message)
        except StoreError as exc:
            log.error("streams group %s: storing records failed: %s", request.group_id, exc)
            return StreamsHeartbeatResult(exc.error, str(exc))

    def _group_for_heartbeat(self, group_id: str, create: bool, records: list[GroupRecord], now_ms: int
                             ) -> StreamsGroup:
        """Kafka's getOrCreateStreamsGroup / getStreamsGroupOrThrow."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        other = self.other_group_type(group_id) if self.other_group_type is not None else None
        if other not in (None, "simple", "classic-empty"):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if not create:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        if other == "classic-empty":
            records.append((GroupRecordType.GROUP_METADATA, {"group_id": group_id}, None))
            log.info("[GroupId %s] Converted the empty classic group to a streams group.", group_id)
        return self._new_group(group_id, now_ms)

    def _heartbeat(self, r: HeartbeatRequest, now_ms: int) -> StreamsHeartbeatResult:
        records: list[GroupRecord] = []
        statuses: list[Status] = []
        config = self.config(r.group_id)
        joining = r.member_epoch == 0
        group = self._group_for_heartbeat(r.group_id, joining, records, now_ms)
        existed = r.group_id in self.groups
        if joining and (r.instance_id is None or r.instance_id not in group.static_members) \
                and len(group.members) >= config.max_size and (not r.member_id or r.member_id not in group.members):
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum capacity "
                             f"of {config.max_size} members.")
        owned = None if r.active_tasks is None else TasksTuple(r.active_tasks, r.standby_tasks or {},
                                                                r.warmup_tasks or {})
        if r.instance_id is None:
            member = self._dynamic_member(group, r.member_id, r.member_epoch, owned, joining)
        else:
            member = self._static_member(group, r.member_id, r.member_epoch, r.instance_id, owned, joining, records)
        updated = member.replace(
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            topology_epoch=r.topology.epoch if r.topology is not None else member.topology_epoch,
            client_id=r.client_id, client_host=r.client_host,
            process_id=r.process_id if r.process_id is not None else member.process_id,
            client_tags=r.client_tags if r.client_tags is not None else member.client_tags,
            user_endpoint=r.user_endpoint if r.user_endpoint is not None else member.user_endpoint)

        # Kafka's hasStreamsMemberMetadataChanged: a dynamic member's change bumps the epoch; a static member's
        # only when what the assignment depends on changed (a static member that took an instance over is new
        # only in name: its record is written already).
        changed = not updated.metadata_equals(member)
        if changed or (member.member_id not in group.members and not _recorded(records, member.member_id)):
            records.append(member_record(r.group_id, updated))
        bump = changed and (r.instance_id is None or any(getattr(member, k) != getattr(updated, k) for k in (
            "topology_epoch", "rack_id", "client_tags", "process_id")))
        topology = self._topology(group, r, records)
        if group.topology is not None and updated.topology_epoch < group.topology.epoch:
            statuses.append(Status(StreamsStatus.STALE_TOPOLOGY, f"The member's topology epoch "
                                   f"{updated.topology_epoch} is behind the group's topology epoch "
                                   f"{group.topology.epoch}."))

        configured, metadata_hash, changed = self._configure(group, topology, now_ms)
        bump |= changed
        validated = -1
        if configured.is_ready:
            validated = topology.epoch
            assert configured.subtopologies is not None
            for tasks in (r.active_tasks, r.standby_tasks, r.warmup_tasks):
                check_tasks(configured, tasks)
        if r.task_offsets is not None:
            group.task_offsets[updated.member_id] = dict(r.task_offsets)
        bump |= validated != group.validated_topology_epoch
        configs = {"num.standby.replicas": str(config.num_standby_replicas)}
        bump |= configs != group.last_assignment_configs

        group_epoch = group.group_epoch
        if bump:
            group_epoch = group_epoch + 1 if group_epoch else 2  # a new group's first epoch is 2, as in Kafka
            records.append(metadata_record(group, group_epoch, metadata_hash, validated, configs))
            log.info("[GroupId %s][MemberId %s] Bumped streams group epoch to %d with validated topology epoch %d.",
                     r.group_id, updated.member_id, group_epoch, validated)
            group.metadata_refresh_deadline_ms = now_ms + METADATA_REFRESH_INTERVAL_MS
            group.metadata_refresh_epoch = group_epoch
            if not group.members and config.initial_rebalance_delay_ms > 0 \
                    and (_INITIAL_DELAY, r.group_id, "") not in self.timers:
                self.timers.schedule((_INITIAL_DELAY, r.group_id, ""), now_ms + config.initial_rebalance_delay_ms)

        target_epoch, target = self._target(group, group_epoch, updated, configured, config, records, statuses,
                                            now_ms)
        reconciled = self._reconcile(group, updated, target_epoch, target, owned, records)
        self._commit(r.group_id, records, now_ms)
        group = self._live(group)
        final = reconciled if reconciled is not None else updated
        self._after_reconcile(r.group_id, final, reconciled is not None, now_ms)
        self.timers.schedule((SESSION, r.group_id, final.member_id), now_ms + config.session_timeout_ms)
        if r.shutdown_application:
            group.shutdown_request_member_id = final.member_id
        return self._response(group, existed, r, member, final, configured, statuses, config)

    def _live(self, group: StreamsGroup) -> StreamsGroup:
        """The group as replayed: a group created by this heartbeat is another object, which takes over what
        the heartbeat kept in memory (the configured topology, the reported task offsets)."""
        live = self.groups.get(group.group_id)
        if live is None or live is group:
            return group
        live.configured_topology = group.configured_topology
        live.task_offsets.update(group.task_offsets)
        live.metadata_refresh_deadline_ms = group.metadata_refresh_deadline_ms
        live.metadata_refresh_epoch = group.metadata_refresh_epoch
        return live

    def _response(self, group: StreamsGroup, existed: bool, r: HeartbeatRequest, before: StreamsGroupMember,
                  final: StreamsGroupMember, configured: ConfiguredTopology, statuses: list[Status],
                  config: StreamsGroupConfig) -> StreamsHeartbeatResult:
        tasks_changed = final.assigned != before.assigned
        if tasks_changed or before.user_endpoint != final.user_endpoint or r.member_epoch == 0:
            if final.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        send_tasks = r.member_epoch == 0 or tasks_changed
        partitions = None
        if group.endpoint_information_epoch != r.endpoint_information_epoch:
            partitions = partitions_by_endpoint(group, configured, self._partition_count)
        to_create: dict[str, InternalTopic] = {}
        if configured.error is not None:
            to_create = dict(configured.topics_to_create)
            statuses.append(Status(configured.error.status, configured.error.message))
        if group.shutdown_request_member_id is not None:
            statuses.append(Status(StreamsStatus.SHUTDOWN_APPLICATION, f"Streams group member "
                                   f"{group.shutdown_request_member_id} encountered a fatal error and requested a "
                                   "shutdown for the entire application."))
        return StreamsHeartbeatResult(
            ErrorCode.NONE, None, final.member_id, final.member_epoch, config.heartbeat_interval_ms,
            config.task_offset_interval_ms, config.acceptable_recovery_lag, statuses,
            final.assigned.tasks() if send_tasks else None,
            group.endpoint_information_epoch if existed else 0, partitions, to_create)

    def _dynamic_member(self, group: StreamsGroup, member_id: str, epoch: int, owned: TasksTuple | None,
                        create: bool) -> StreamsGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not create:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                 f"{group.group_id}.")
            log.info("[GroupId %s][MemberId %s] Member joins the streams group.", group.group_id, member_id)
            return StreamsGroupMember(member_id)
        check_epoch(member, epoch, owned)
        return member

    def _static_member(self, group: StreamsGroup, member_id: str, epoch: int, instance_id: str,
                       owned: TasksTuple | None, create: bool, records: list[GroupRecord]) -> StreamsGroupMember:
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                return group.members.get(member_id) or StreamsGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")
            # The instance is back under a new member id: it takes the old member's place and tasks.
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records += member_tombstones(group.group_id, existing.member_id)
            records.append(member_record(group.group_id, new))
            records.append(target_record(group.group_id, member_id, group.target_assignment.get(existing.member_id,
                                                                                                 TasksTuple())))
            records.append(current_assignment_record(group.group_id, new))
            self._cancel_timers(group.group_id, existing.member_id)
            log.info("[GroupId %s] Static member with instance id %s re-joins as %s, replacing %s.", group.group_id,
                     instance_id, member_id, existing.member_id)
            return new
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {existing.member_id}.")
        check_epoch(existing, epoch, owned)
        return existing

    def _topology(self, group: StreamsGroup, r: HeartbeatRequest, records: list[GroupRecord]) -> StreamsTopology:
        """Kafka's maybeUpdateTopology: the first member's topology initializes the group's; a later one must be
        the same (Kafka 4.4 does not update topologies), unless it is older (the member then hears STALE_TOPOLOGY)."""
        if r.topology is None:
            if group.topology is None:
                raise GroupError(ErrorCode.INVALID_REQUEST, "The topology is null and the group topology is also "
                                 "null.")
            return group.topology
        if group.topology is None:
            log.info("[GroupId %s][MemberId %s] Member initialized the topology with epoch %d", group.group_id,
                     r.member_id, r.topology.epoch)
            records.append(topology_record(group.group_id, r.topology))
            return r.topology
        if group.topology.epoch > r.topology.epoch:
            return group.topology
        if group.topology != r.topology:
            raise GroupError(ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
        return group.topology

    def _configure(self, group: StreamsGroup, topology: StreamsTopology, now_ms: int
                   ) -> tuple[ConfiguredTopology, int, bool]:
        """(the configured topology, the metadata hash, whether the group epoch must move)."""
        reconfigure = group.topology is None
        metadata_hash = group.metadata_hash
        bump = False
        if reconfigure or group.configured_topology is None or group.metadata_expired(now_ms):
            metadata_hash = self._metadata_hash(topology)
            if metadata_hash != group.metadata_hash:
                bump = reconfigure = True
            if reconfigure or group.configured_topology is None:
                group.configured_topology = configure_topics(topology, metadata_hash, self._partition_count)
        assert group.configured_topology is not None
        return group.configured_topology, metadata_hash, bump

    # -- target assignment (Kafka's maybeUpdateStreamsTargetAssignment) --------------------------------
    def _target(self, group: StreamsGroup, group_epoch: int, member: StreamsGroupMember,
                configured: ConfiguredTopology, config: StreamsGroupConfig, records: list[GroupRecord],
                statuses: list[Status], now_ms: int) -> tuple[int, TasksTuple]:
        if (_INITIAL_DELAY, group.group_id, "") in self.timers:
            statuses.append(Status(StreamsStatus.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured "
                                   "initial rebalance delay."))
            return max(1, group.assignment_epoch), TasksTuple()
        members = {mid: m for mid, m in group.members.items() if m.instance_id is None
                   or group.static_members.get(m.instance_id) == mid}
        previous = group.static_members.get(member.instance_id) if member.instance_id is not None else None
        targets = dict(group.target_assignment)
        if previous is not None and previous != member.member_id:
            members.pop(previous, None)
            targets[member.member_id] = targets.pop(previous, TasksTuple())
        members[member.member_id] = member
        if group_epoch <= group.assignment_epoch:
            return group.assignment_epoch, targets.get(member.member_id, TasksTuple())
        if not _can_compute(group.assignment_timestamp_ms, config.assignment_interval_ms, now_ms):
            statuses.append(Status(StreamsStatus.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured "
                                   "assignment interval."))
            self.timers.schedule((_INTERVAL, group.group_id, ""),
                                 group.assignment_timestamp_ms + config.assignment_interval_ms)
            return group.assignment_epoch, targets.get(member.member_id, TasksTuple())
        new = self._assign(group, group_epoch, members, targets, configured, config, records, now_ms)
        return group_epoch, new.get(member.member_id, TasksTuple())

    def _assign(self, group: StreamsGroup, epoch: int, members: Mapping[str, StreamsGroupMember],
                targets: Mapping[str, TasksTuple], configured: ConfiguredTopology, config: StreamsGroupConfig,
                records: list[GroupRecord], now_ms: int) -> dict[str, TasksTuple]:
        """Kafka's streams TargetAssignmentBuilder: the assignor's result, its changes recorded."""
        specs = {mid: AssignmentMember(m.process_id, targets.get(mid, TasksTuple()).active,
                                       targets.get(mid, TasksTuple()).standby, group.task_offsets.get(mid, {}))
                 for mid, m in members.items()}
        subtopologies = {sid: (s.number_of_tasks, s.stateful) for sid, s in (configured.subtopologies or {}).items()} \
            if configured.is_ready else {}
        try:
            result = assign(specs, subtopologies, config.num_standby_replicas)
        except TaskAssignorError as exc:
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch "
                             f"{epoch}: {exc}") from None
        new = {mid: TasksTuple(tasks.active, tasks.standby, {}) for mid, tasks in result.items()}
        for mid, tasks in new.items():
            if targets.get(mid) != tasks or mid not in group.target_assignment:
                records.append(target_record(group.group_id, mid, tasks))
        records.append(target_metadata_record(group.group_id, epoch, now_ms))
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.", group.group_id,
                 epoch, config.assignor)
        return new

    def _compute_delayed(self, group_id: str, now_ms: int) -> None:
        """The initial rebalance delay (or the assignment interval) passed: Kafka's computeDelayedTargetAssignment."""
        group = self.groups.get(group_id)
        if group is None or not group.members or group.group_epoch <= group.assignment_epoch \
                or group.configured_topology is None:
            return
        records: list[GroupRecord] = []
        self._assign(group, group.group_epoch, group.members, group.target_assignment, group.configured_topology,
                     self.config(group_id), records, now_ms)
        try:
            self._commit(group_id, records, now_ms)
        except StoreError as exc:
            log.error("streams group %s: storing the delayed assignment failed: %s", group_id, exc)

    # -- reconciliation ---------------------------------------------------------------------------
    def _reconcile(self, group: StreamsGroup, member: StreamsGroupMember, target_epoch: int, target: TasksTuple,
                   owned: TasksTuple | None, records: list[GroupRecord]) -> StreamsGroupMember | None:
        if member.is_reconciled_to(target_epoch) and member.member_id in group.members:
            return None
        owners = Owners(group.active_process, group.standby_processes, group.warmup_processes)
        new = next_assignment(member, target_epoch, target, owners, owned)
        if new.assignment_equals(member) and member.member_id in group.members:
            return None
        records.append(current_assignment_record(group.group_id, new))
        return new

    def _after_reconcile(self, group_id: str, member: StreamsGroupMember, changed: bool, now_ms: int) -> None:
        if not changed:
            return
        if member.state is MemberState.UNREVOKED_TASKS:
            self._schedule_rebalance(group_id, member, now_ms)
        else:
            self.timers.cancel_rebalance(group_id, member.member_id)

    # == leaving and fencing =====================================================================
    def _leave(self, r: HeartbeatRequest, now_ms: int) -> StreamsHeartbeatResult:
        group = self.groups.get(r.group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {r.group_id} not found.")
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group "
                                 f"{r.group_id}.")
        else:
            member = group.static_member(r.instance_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {r.member_id} with instance id "
                                 f"{r.instance_id} was fenced by member {member.member_id}.")
        if r.shutdown_application:
            group.shutdown_request_member_id = member.member_id
        if r.instance_id is not None and r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A static member leaving for a while keeps its place and tasks until its session expires.
            away = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            self._commit(r.group_id, [current_assignment_record(r.group_id, away)], now_ms)
            log.info("[GroupId %s] Static member %s with instance id %s temporarily left the streams group.",
                     r.group_id, member.member_id, r.instance_id)
            return StreamsHeartbeatResult(ErrorCode.NONE, None, member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        log.info("[GroupId %s][MemberId %s] Member left the streams group.", r.group_id, member.member_id)
        self._fence(group, member, now_ms)
        return StreamsHeartbeatResult(ErrorCode.NONE, None, member.member_id, r.member_epoch)

    def _fence(self, group: StreamsGroup, member: StreamsGroupMember, now_ms: int) -> None:
        """Kafka's streamsGroupFenceMember: the member's records deleted and the group epoch bumped."""
        records = member_tombstones(group.group_id, member.member_id)
        epoch = group.group_epoch + 1
        records.append(metadata_record(group, epoch, group.metadata_hash, group.validated_topology_epoch,
                                       group.last_assignment_configs))
        if len(group.members) == 1 and self.config(group.group_id).empty_target_on_last_leave:
            records.append(target_metadata_record(group.group_id, epoch, group.assignment_timestamp_ms))
        self._commit(group.group_id, records, now_ms)
        self._cancel_timers(group.group_id, member.member_id)

    def _fence_by_timer(self, group_id: str, member_id: str, reason: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        log.info("[GroupId %s][MemberId %s] Member fenced from the group because %s.", group_id, member_id, reason)
        group.events.append((now_ms, f"member {member_id} fenced: {reason}"))
        try:
            self._fence(group, member, now_ms)
        except StoreError as exc:
            log.error("streams group %s: fencing member %s failed: %s; trying again later", group_id, member_id, exc)
            self.timers.schedule((SESSION, group_id, member_id), now_ms + 1_000)

    # == timers ==================================================================================
    def _schedule_rebalance(self, group_id: str, member: StreamsGroupMember, now_ms: int) -> None:
        self.timers.schedule_rebalance(group_id, member.member_id, member.member_epoch,
                                       now_ms + max(member.rebalance_timeout_ms, 0))

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.timers.cancel_member(group_id, member_id)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def tick(self, now_ms: int) -> None:
        while (key := self.timers.pop_expired(now_ms)) is not None:
            kind, group_id, member_id = key
            if kind == SESSION:
                self._fence_by_timer(group_id, member_id, "the member session expired", now_ms)
            elif kind in (_INITIAL_DELAY, _INTERVAL):
                self._compute_delayed(group_id, now_ms)
            else:
                epoch = self.timers.rebalance_epoch(group_id, member_id)
                group = self.groups.get(group_id)
                member = group.members.get(member_id) if group is not None else None
                if member is not None and member.member_epoch == epoch:
                    self._fence_by_timer(group_id, member_id, f"it failed to transition from epoch {epoch} within "
                                         f"{member.rebalance_timeout_ms}ms", now_ms)

    # == admin and offsets =======================================================================
    def delete_group(self, group_id: str, now_ms: int) -> ErrorCode:
        """DeleteGroups of an empty streams group (its offsets are the caller's)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not StreamsGroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        try:
            self._commit(group_id, group_tombstones(group), now_ms)
        except StoreError as exc:
            return exc.error
        self.timers.cancel((_INITIAL_DELAY, group_id, ""))
        self.timers.cancel((_INTERVAL, group_id, ""))
        return ErrorCode.NONE

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                               transactional: bool, api_version: int
                               ) -> ErrorCode | Callable[[str, int], ErrorCode]:
        """NONE for a group id that is not a streams group's; else the group's check (StreamsGroup)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE
        return group.validate_offset_commit(member_id, instance_id, member_epoch, transactional, api_version)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        group = self.groups.get(group_id)
        return ErrorCode.NONE if group is None else group.validate_offset_fetch(member_id, member_epoch)


def _recorded(records: list[GroupRecord], member_id: str) -> bool:
    return any(kind is GroupRecordType.STREAMS_GROUP_MEMBER_METADATA and key.get("member_id") == member_id
               for kind, key, _ in records)


def _can_compute(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka's canComputeNextTargetAssignment: at most one assignment per interval."""
    return assignment_timestamp_ms == 0 or interval_ms == 0 or now_ms >= assignment_timestamp_ms + interval_ms
