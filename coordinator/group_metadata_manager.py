"""Classic group membership as pure logic (the classic part of Kafka 4's GroupMetadataManager, after the
GroupCoordinator of Kafka 2.x-3.x): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance and the timers
that expire sessions and complete delayed joins, groups changing hands with the consumer group coordinator
(KIP-848's online migration), and the GroupMetadata records of `__consumer_offsets`. Committed offsets are
coordinator/offset_metadata_manager.py's.

Time comes in as `now_ms`; nothing here sleeps or does I/O. Records go to an injected `GroupStore`; responses
that wait (JoinGroup until the rebalance completes, SyncGroup until the leader's assignment) are delivered
through callbacks. Method names follow Kafka's where it helps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from coordinator.group import (
    UNKNOWN_MEMBER_ID,
    Group,
    GroupConfig,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from coordinator.group_interfaces import GroupStore, StoreError
from coordinator.timers import KeyedTimers
from protocol.group_records import GroupKey, GroupValue, encode_group_value, encode_key
from protocol.header import ErrorCode

log = logging.getLogger(__name__)


# Timer keys: (kind, group id[, member id]).
_HEARTBEAT = "heartbeat"
_PENDING = "pending-member"
_JOIN = "join"
_SYNC = "sync"


class GroupMetadataManager:
    def __init__(self, config: GroupConfig, store: GroupStore) -> None:
        self.config = config
        self.store = store
        self.groups: dict[str, Group] = {}
        self.rebalances = 0  # rebalances started, for metrics
        self.timers: KeyedTimers[tuple[str, ...]] = KeyedTimers()
        # Initial delayed join per group: (this delay, rebalance time remaining) — Kafka's InitialDelayedJoin.
        self._initial_join: dict[str, tuple[int, int]] = {}

    # == JoinGroup =================================================================================
    def join_group(self, *, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                   client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                   supports_skip_assignment: bool, respond: JoinCallback, now_ms: int) -> None:
        if not group_id:
            respond(JoinResult(ErrorCode.INVALID_GROUP_ID, member_id))
            return
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            group = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            self.timers.cancel((_HEARTBEAT, group_id, member_id))
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif is_unknown:
            self._new_member_join(group, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                  session_timeout_ms, protocol_type, protocols, require_known_member_id,
                                  supports_skip_assignment, respond, now_ms)
        else:
            self._current_member_join(group, member_id, group_instance_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                      respond, now_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now_ms)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self.config.max_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            # Awaiting members count, not all members: a shrunk max size kicks out the last rejoiners.
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or \
                group.num_awaiting_join < max_size
        return group.has(member_id) or group.size < max_size

    def _new_member_join(self, group: Group, group_instance_id: str | None, client_id: str, client_host: str,
                         rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                         supports_skip_assignment: bool, respond: JoinCallback, now_ms: int) -> None:
        if group.is_in(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        member_id = group.generate_member_id(client_id, group_instance_id)
        if group_instance_id is not None:
            old_member_id = group.static_member_id(group_instance_id)
            if old_member_id is not None:
                self._update_static_member_and_rebalance(group, old_member_id, member_id, group_instance_id,
                                                         protocols, rebalance_timeout_ms, session_timeout_ms,
                                                         supports_skip_assignment, respond, now_ms)
                return
        elif require_known_member_id:
            # KIP-394: the member must come back with this id, so that a retried JoinGroup of a client
            # that lost the response does not add a second member.
            group.pending_members.add(member_id)
            self.timers.schedule((_PENDING, group.group_id, member_id), now_ms + session_timeout_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            return
        self._add_member_and_rebalance(group, member_id, group_instance_id, client_id, client_host,
                                       rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                       respond, now_ms)

    def _current_member_join(self, group: Group, member_id: str, group_instance_id: str | None, client_id: str,
                             client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                             protocol_type: str, protocols: list[tuple[str, bytes]], respond: JoinCallback,
                             now_ms: int) -> None:
        if group.is_in(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(protocol_type, protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if group_instance_id is not None:  # pending members are dynamic: the client mixed things up
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            self.timers.cancel((_PENDING, group.group_id, member_id))
            self._add_member_and_rebalance(group, member_id, None, client_id, client_host, rebalance_timeout_ms,
                                           session_timeout_ms, protocol_type, protocols, respond, now_ms)
            return
        if group.is_static_member_fenced(group_instance_id, member_id):
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id) or (group_instance_id is not None
                                        and group.static_member_id(group_instance_id) is None):
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.get(member_id)
        state = group.state
        if state == GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              respond, now_ms)
        elif state == GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The member lost its JoinGroup response: answer again with the current generation.
                respond(self._join_result(group, member, include_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, respond, now_ms)
        elif state == GroupState.STABLE:
            # The leader rejoining forces a rebalance: that is how it reacts to metadata changes that its
            # member metadata does not show. A follower with the same metadata just gets the generation.
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, respond, now_ms)
            else:
                respond(self._join_result(group, member, include_members=False))
        else:  # Empty: members cannot exist there; let the client reset its generation and rejoin
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: Group, member: Member, *, include_members: bool,
                     skip_assignment: bool = False, leader_id: str | None = None) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
            (leader_id if leader_id is not None else group.leader_id) or "", skip_assignment,
            group.current_member_metadata() if include_members else [])

    def _add_member_and_rebalance(self, group: Group, member_id: str, group_instance_id: str | None,
                                  client_id: str, client_host: str, rebalance_timeout_ms: int,
                                  session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                                  respond: JoinCallback, now_ms: int) -> None:
        member = Member(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                        session_timeout_ms, protocol_type, protocols, is_new=True)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, respond)
        self.schedule_heartbeat(group, member, now_ms, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, now_ms, f"member {member_id} (client {client_id}) joined")

    def _update_member_and_rebalance(self, group: Group, member: Member, protocols: list[tuple[str, bytes]],
                                     rebalance_timeout_ms: int, session_timeout_ms: int, respond: JoinCallback,
                                     now_ms: int) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        self._maybe_prepare_rebalance(group, now_ms, f"member {member.member_id} rejoined (metadata or "
                                      "subscription may have changed)")

    def _update_static_member_and_rebalance(self, group: Group, old_member_id: str, new_member_id: str,
                                            group_instance_id: str, protocols: list[tuple[str, bytes]],
                                            rebalance_timeout_ms: int, session_timeout_ms: int,
                                            supports_skip_assignment: bool, respond: JoinCallback,
                                            now_ms: int) -> None:
        """KIP-345: a known static member restarted (new member id). In a stable group whose protocol would
        not change, it takes the old member's place and assignment without a rebalance."""
        current_leader = group.leader_id
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self.timers.cancel((_HEARTBEAT, group.group_id, old_member_id))
        old = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        state = group.state
        if state == GroupState.STABLE:
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance(group, now_ms, f"static member {group_instance_id} restarted "
                                              "with other protocols")
                return
            error = self._store_group(group, {m.member_id: m.assignment for m in group.members.values()}, now_ms)
            if error != ErrorCode.NONE:
                # Not persisted: put the old member id back and tell the new instance to retry.
                group.update_member(member, *old, None)
                group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                self.schedule_heartbeat(group, member, now_ms)
                respond(JoinResult(error, UNKNOWN_MEMBER_ID, group.generation_id, group.protocol_type,
                                   group.protocol_name, current_leader or ""))
                return
            if supports_skip_assignment:
                # JoinGroup v9+: a returning static leader learns it leads, but must not reassign.
                is_leader = group.is_leader(new_member_id)
                group.invoke_join_callback(member, self._join_result(group, member, include_members=is_leader,
                                                                     skip_assignment=is_leader))
            else:
                # Older clients: name the old leader id so that this member does not assign (a stable group
                # would not broadcast a new assignment).
                group.invoke_join_callback(member, self._join_result(group, member, include_members=False,
                                                                     leader_id=current_leader))
            self.schedule_heartbeat(group, member, now_ms)
        elif state == GroupState.COMPLETING_REBALANCE:
            # The leader may already be assigning with the old member id: rebalance again.
            self._prepare_rebalance(group, now_ms, f"static member {group_instance_id} restarted during "
                                    "the assignment")
        else:  # PreparingRebalance: the join completes with the new id
            self.schedule_heartbeat(group, member, now_ms)

    # == rebalance =================================================================================
    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, now_ms, reason)

    def _prepare_rebalance(self, group: Group, now_ms: int, reason: str) -> None:
        # Kafka's prepareRebalance logs a reason too; kept in the group's timeline for tests (introspection).
        group.events.append((now_ms, f"rebalance: {reason}"))
        log.info("group %s: preparing to rebalance: %s", group.group_id, reason)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
        self.timers.cancel((_SYNC, group.group_id))
        was_empty = group.is_in(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        self.rebalances += 1
        if was_empty:
            delay = self.config.initial_rebalance_delay_ms
            self._initial_join[group.group_id] = (delay, max(group.rebalance_timeout_ms - delay, 0))
            self.timers.schedule((_JOIN, group.group_id), now_ms + delay)
        else:
            self._initial_join.pop(group.group_id, None)
            self.timers.schedule((_JOIN, group.group_id), now_ms + group.rebalance_timeout_ms)
            self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: Group, now_ms: int) -> None:
        """The delayed join completes early once every member rejoined (never the initial delayed join)."""
        if group.group_id in self._initial_join or not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.has_all_members_joined():
            self.timers.cancel((_JOIN, group.group_id))
            self._on_complete_join(group, now_ms)

    def _on_join_expired(self, group: Group, now_ms: int) -> None:
        initial = self._initial_join.pop(group.group_id, None)
        if initial is not None:
            delay, remaining = initial
            if group.new_member_added and remaining != 0:
                # More members arrived during the initial delay: wait again, within the rebalance timeout.
                group.new_member_added = False
                next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                self._initial_join[group.group_id] = (next_delay, max(remaining - delay, 0))
                self.timers.schedule((_JOIN, group.group_id), now_ms + next_delay)
                return
        self._on_complete_join(group, now_ms)

    def _on_complete_join(self, group: Group, now_ms: int) -> None:
        for member in [m for m in group.members.values() if not m.is_awaiting_join and not m.is_static]:
            log.info("group %s removes member %s, which did not rejoin", group.group_id, member.member_id)
            group.remove(member.member_id)
            self.timers.cancel((_HEARTBEAT, group.group_id, member.member_id))
        if group.is_in(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout, until sessions expire the silent members.
            log.warning("group %s could not complete its rebalance: no member rejoined", group.group_id)
            self.timers.schedule((_JOIN, group.group_id), now_ms + group.rebalance_timeout_ms)
            return
        group.new_member_added = False
        group.init_next_generation(now_ms, group.consumer_subscriptions())
        if group.is_in(GroupState.EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            # Failing to write an empty generation is harmless: no member can use the old one for long.
            self._store_group(group, {}, now_ms)
            return
        log.info("group %s stabilized generation %d with %d member(s), protocol %s", group.group_id,
                 group.generation_id, group.size, group.protocol_name)
        for member in list(group.members.values()):
            group.invoke_join_callback(member, self._join_result(group, member,
                                                                 include_members=group.is_leader(member.member_id)))
            self.schedule_heartbeat(group, member, now_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        # Members that never send SyncGroup are removed after the rebalance timeout.
        self.timers.schedule((_SYNC, group.group_id), now_ms + group.rebalance_timeout_ms)

    def _on_sync_expired(self, group: Group, now_ms: int) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync_members:
            for member_id in list(group.pending_sync_members):
                log.info("group %s removes member %s, which did not send SyncGroup", group.group_id, member_id)
                self._drop_member(group, group.get(member_id))
            self._prepare_rebalance(group, now_ms, "members did not send SyncGroup within the rebalance timeout")

    # == SyncGroup =================================================================================
    def sync_group(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: Mapping[str, bytes],
                   respond: SyncCallback, now_ms: int) -> None:
        if not group_id:
            respond(SyncResult(ErrorCode.INVALID_GROUP_ID))
            return
        group = self.groups.get(group_id)
        error = self._validate_member(group, member_id, group_instance_id, generation_id)
        if error != ErrorCode.NONE:
            respond(SyncResult(error))
            return
        assert group is not None
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        member = group.get(member_id)
        state = group.state
        if state == GroupState.EMPTY:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif state == GroupState.PREPARING_REBALANCE:
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif state == GroupState.COMPLETING_REBALANCE:
            member.sync_callback = respond
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                # Members the leader left out get an empty assignment; ids it made up are ignored.
                assignment = {mid: assignments.get(mid, b"") for mid in group.members}
                error = self._store_group(group, assignment, now_ms)
                if error != ErrorCode.NONE:
                    self._reset_and_propagate_assignment_error(group, error, now_ms)
                    self._maybe_prepare_rebalance(group, now_ms, f"storing the assignment failed: {error.name}")
                else:
                    for mid, data in assignment.items():
                        group.get(mid).assignment = data
                    group.transition_to(GroupState.STABLE, now_ms)
                    self._propagate_assignment(group, ErrorCode.NONE, now_ms)
        else:  # Stable: the assignment is known
            self._remove_pending_sync_member(group, member_id)
            respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self.schedule_heartbeat(group, member, now_ms)

    def _remove_pending_sync_member(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.timers.cancel((_SYNC, group.group_id))

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode, now_ms: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now_ms)

    def _propagate_assignment(self, group: Group, error: ErrorCode, now_ms: int) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            if member.sync_callback is None:
                continue
            group.invoke_sync_callback(member, SyncResult(
                error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                member.assignment))
            # A session that expired while the member waited for the assignment was ignored: restart it.
            self.schedule_heartbeat(group, member, now_ms)

    # == Heartbeat =================================================================================
    def heartbeat(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  now_ms: int) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        error = self._validate_member(group, member_id, group_instance_id, generation_id)
        if error != ErrorCode.NONE:
            return error
        assert group is not None
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.schedule_heartbeat(group, group.get(member_id), now_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _validate_member(self, group: Group | None, member_id: str, group_instance_id: str | None,
                         generation_id: int) -> ErrorCode:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(group_instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def schedule_heartbeat(self, group: Group, member: Member, now_ms: int, timeout_ms: int | None = None) -> None:
        """Kafka's completeAndScheduleNextHeartbeatExpiration: a member that is through its first join and
        waits in a rebalance needs no heartbeat; any other gets a new session deadline."""
        key = (_HEARTBEAT, group.group_id, member.member_id)
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            self.timers.cancel(key)
            return
        self.timers.schedule(key, now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms))

    def _on_heartbeat_expired(self, group: Group, member_id: str, now_ms: int) -> None:
        if group.is_in(GroupState.DEAD) or not group.has(member_id):
            return
        member = group.get(member_id)
        if member.is_new or not (member.is_awaiting_join or member.is_awaiting_sync):
            log.info("group %s: member %s failed (session expired), removing it", group.group_id, member_id)
            self._remove_member_and_update_group(group, member, now_ms,
                                                 f"member {member_id} failed: session timeout expired")

    # == LeaveGroup ================================================================================
    def leave_group(self, *, group_id: str, members: list[tuple[str, str | None]],
                    now_ms: int) -> tuple[ErrorCode, list[ErrorCode]]:
        """(group error, one error per (member id, group instance id) leaving)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, group_instance_id in members:
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by its instance id (KIP-345).
                current = group.static_member_id(group_instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                self._remove_member_and_update_group(group, group.get(current), now_ms,
                                                     f"static member {group_instance_id} removed by LeaveGroup")
                errors.append(ErrorCode.NONE)
            elif member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, member_id, now_ms)
                errors.append(ErrorCode.NONE)
            elif group.is_static_member_fenced(group_instance_id, member_id):
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
            elif group.has(member_id):
                log.info("group %s: member %s leaves", group_id, member_id)
                self._remove_member_and_update_group(group, group.get(member_id), now_ms,
                                                     f"member {member_id} left (LeaveGroup)")
                errors.append(ErrorCode.NONE)
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
        return ErrorCode.NONE, errors

    def _drop_member(self, group: Group, member: Member) -> None:
        # A member waiting on a response learns it is gone (Kafka answers the JoinGroup; the SyncGroup too,
        # rather than leave it hanging).
        group.invoke_join_callback(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        group.invoke_sync_callback(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self.timers.cancel((_HEARTBEAT, group.group_id, member.member_id))

    def _remove_member_and_update_group(self, group: Group, member: Member, now_ms: int, reason: str) -> None:
        self._drop_member(group, member)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now_ms, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now_ms)

    def _remove_pending_member_and_update_group(self, group: Group, member_id: str, now_ms: int) -> None:
        group.pending_members.discard(member_id)
        self.timers.cancel((_PENDING, group.group_id, member_id))
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now_ms)

    # == timers ====================================================================================
    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def tick(self, now_ms: int) -> None:
        """Fire every timer due at now_ms."""
        while (key := self.timers.pop_expired(now_ms)) is not None:
            group = self.groups.get(key[1])
            if group is None:
                continue
            kind = key[0]
            if kind == _HEARTBEAT:
                self._on_heartbeat_expired(group, key[2], now_ms)
            elif kind == _PENDING:
                if key[2] in group.pending_members:
                    log.info("group %s: pending member %s expired", group.group_id, key[2])
                    self._remove_pending_member_and_update_group(group, key[2], now_ms)
            elif kind == _JOIN:
                if group.is_in(GroupState.PREPARING_REBALANCE):
                    self._on_join_expired(group, now_ms)
            elif kind == _SYNC:
                self._on_sync_expired(group, now_ms)

    # == groups without members (offsets only), dead groups ========================================
    def demote_to_simple(self, group_id: str) -> None:
        """A classic group became a consumer or streams group (its GroupMetadata tombstone is written): what
        stays here is its committed offsets, as a simple group holds them. Members it had went with it to the
        consumer group; a JoinGroup or SyncGroup of theirs still waiting is told to rejoin there (Kafka's
        convertToConsumerGroup answers them REBALANCE_IN_PROGRESS)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        for member in list(group.members.values()):
            group.invoke_join_callback(member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            group.invoke_sync_callback(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            self.timers.cancel((_HEARTBEAT, group_id, member.member_id))
        for member_id in group.pending_members:
            self.timers.cancel((_PENDING, group_id, member_id))
        self.forget(group)
        self.groups[group_id] = Group(group_id, state_timestamp_ms=group.state_timestamp_ms, offsets=group.offsets,
                                      pending_txn_offsets=group.pending_txn_offsets)

    def adopt(self, group: Group, now_ms: int, rebalance: str | None) -> None:
        """A consumer group of classic members became this classic group (its GroupMetadata record is written):
        it takes over the offsets held here, its members get sessions, and it rebalances (`rebalance`: why) so
        that they rejoin as members of a classic group (Kafka's convertToClassicGroup)."""
        held = self.groups.get(group.group_id)
        if held is not None:
            self.forget(held)
            group.offsets, group.pending_txn_offsets = held.offsets, held.pending_txn_offsets
        self.groups[group.group_id] = group
        for member in group.members.values():
            self.schedule_heartbeat(group, member, now_ms)
        if rebalance is not None:
            self._prepare_rebalance(group, now_ms, rebalance)

    def forget(self, group: Group) -> None:
        self.groups.pop(group.group_id, None)
        self._initial_join.pop(group.group_id, None)
        for key in ((_JOIN, group.group_id), (_SYNC, group.group_id)):
            self.timers.cancel(key)

    # == the GroupMetadata records =================================================================
    def _store_group(self, group: Group, assignment: Mapping[str, bytes], now_ms: int) -> ErrorCode:
        value = group.metadata_value(assignment)
        try:
            self.store.write(group.group_id, [(encode_key(GroupKey(group.group_id)), encode_group_value(value))],
                             now_ms)
        except StoreError as exc:
            log.error("group %s: storing group metadata failed: %s", group.group_id, exc)
            return exc.error
        return ErrorCode.NONE

    def unload(self, belongs: Callable[[str], bool]) -> int:
        """This coordinator lost the partition of the groups for which `belongs(group_id)` (its
        `__consumer_offsets` partition moved to another broker): forget them, their timers too; members
        waiting in JoinGroup or SyncGroup are answered NOT_COORDINATOR (Kafka's onResignation). Returns
        how many groups went."""
        gone = [group for group_id, group in self.groups.items() if belongs(group_id)]
        for group in gone:
            for member in group.members.values():
                if member.join_callback is not None:
                    callback, member.join_callback = member.join_callback, None
                    callback(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_callback is not None:
                    callback, member.sync_callback = member.sync_callback, None
                    callback(SyncResult(ErrorCode.NOT_COORDINATOR))
                self.timers.cancel((_HEARTBEAT, group.group_id, member.member_id))
            for member_id in list(group.pending_members):
                self.timers.cancel((_PENDING, group.group_id, member_id))
            self.timers.cancel((_JOIN, group.group_id))
            self.timers.cancel((_SYNC, group.group_id))
            del self.groups[group.group_id]
        return len(gone)

    def load_groups(self, groups: Mapping[str, GroupValue], now_ms: int) -> None:
        """The groups as their last GroupMetadata records left them; members come back with a fresh session,
        as Kafka's loader does."""
        for group_id, value in groups.items():
            group = self.groups[group_id] = Group.from_record(group_id, value)
            for member in group.members.values():
                self.schedule_heartbeat(group, member, now_ms)
            group.subscribed_topics = group.consumer_subscriptions() if group.members else None
