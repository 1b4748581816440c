"""A classic consumer group: its state machine, members and committed offsets (Kafka's GroupMetadata /
ClassicGroup), its GroupMetadata record, and the limits of the classic group coordinator (GroupConfig). Pure
data and rules; coordinator/group_metadata_manager.py and offset_metadata_manager.py drive it."""

from __future__ import annotations

import uuid
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from protocol.consumer_protocol import SubscriptionError, subscription_topics
from protocol.group_records import GroupValue, MemberValue, OffsetValue
from protocol.header import ErrorCode

EVENTS_KEPT = 100  # per group, for the introspection timeline


@dataclass(frozen=True, slots=True)
class GroupConfig:
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    # Kafka's default is 3000; 0 lets a lone consumer (tests, laptops) start at once (the manual).
    initial_rebalance_delay_ms: int = 0
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096
    # A new member's JoinGroup cannot be answered by heartbeats; it expires on its own (Kafka's 5 min).
    new_member_join_timeout_ms: int = 300_000


class GroupState(Enum):
    """Kafka's ClassicGroupState, with the names DescribeGroups and ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's validPreviousStates: a transition from any other state is a bug.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""


class IllegalTransitionError(RuntimeError):
    pass


@dataclass(slots=True)
class JoinResult:
    error: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    # For the leader: (member id, group instance id, metadata of the chosen protocol) of every member.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # in the member's order of preference
    assignment: bytes = b""
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    # Not yet through a completed join: it cannot heartbeat, so its JoinGroup has its own timeout.
    is_new: bool = False

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of its protocols that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(slots=True, eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion order: leader re-election order
    pending_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED, not joined yet
    pending_sync_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # group instance id -> member id
    supported_protocols: Counter[str] = field(default_factory=Counter)
    num_awaiting_join: int = 0
    new_member_added: bool = False  # lets the initial delayed join wait for more members
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    # producer id -> offsets of its open transaction (TxnOffsetCommit), applied by its COMMIT marker
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetValue]] = field(default_factory=dict)
    subscribed_topics: frozenset[str] | None = None  # None: unknown (not a parsable consumer group)
    # (time ms, what happened): state changes and why each rebalance started, the last EVENTS_KEPT of them
    events: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))

    # -- state machine -----------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransitionError(f"group {self.group_id}: {self.state.value} -> {target.value}")
        self.events.append((now_ms, f"{self.state.value} -> {target.value}"))
        self.state = target
        self.state_timestamp_ms = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # -- members -----------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def is_empty_of_members(self) -> bool:
        return not self.members

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: Member, callback: JoinCallback | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        member.join_callback = callback
        if callback is not None:
            self.num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.protocols)
            self.supported_protocols += Counter()  # drop zero counts
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, callback: JoinCallback | None) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        self.supported_protocols += Counter()
        member.protocols = protocols
        self.supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.join_callback = callback

    def invoke_join_callback(self, member: Member, result: JoinResult) -> None:
        callback = member.join_callback
        if callback is not None:
            member.join_callback = None
            self.num_awaiting_join -= 1
            callback(result)

    def invoke_sync_callback(self, member: Member, result: SyncResult) -> None:
        callback = member.sync_callback
        if callback is not None:
            member.sync_callback = None
            callback(result)

    # -- static membership (KIP-345) -----------------------------------------------------------------
    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        member = self.members.pop(old_member_id)
        # A duplicate instance still waiting on the old id is fenced at once.
        self.invoke_join_callback(member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        self.invoke_sync_callback(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    # -- rebalance -----------------------------------------------------------------------------------
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and \
            any(self.supported_protocols[name] == len(self.members) for name in names)

    def candidate_protocols(self) -> set[str]:
        return {name for name, n in self.supported_protocols.items() if n == len(self.members)}

    def select_protocol(self) -> str:
        """Each member votes for its first protocol that all support; the most votes win (ties: the
        protocol voted first, for a stable choice)."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka's rule when completing a join: a leader that did not rejoin is replaced by any member that
        did. False when there is no leader or no member rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def init_next_generation(self, now_ms: int, subscribed_topics: frozenset[str] | None) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = subscribed_topics
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        protocol = self.protocol_name
        if protocol is None:
            raise IllegalTransitionError(f"group {self.group_id} has no protocol in {self.state.value}")
        return [(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in self.members.values()]

    def consumer_subscriptions(self) -> frozenset[str] | None:
        """The topics its members subscribe to, from their metadata of the selected protocol (None: not a
        consumer group, or a subscription that does not parse)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or not self.members:
            return None
        protocol = self.select_protocol()
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(protocol)))
        except SubscriptionError:
            return None
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        # When the subscriptions are unknown, assume subscribed: it is the safe answer (Kafka's).
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # -- what DescribeGroups and ListGroups show ---------------------------------------------------------
    def summary(self, assignments_while_rebalancing: bool = False) -> GroupDescription:
        """Member metadata only once the group is Stable, assignments too (Kafka 3's GroupMetadata.summary) or
        always (`assignments_while_rebalancing`: Kafka 4's ClassicGroupMember.describeNoMetadata)."""
        stable = self.is_in(GroupState.STABLE)
        protocol = self.protocol_name if stable and self.protocol_name else ""
        shown = stable or assignments_while_rebalancing
        members = [MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.metadata(protocol) if stable else b"", m.assignment if shown else b"")
                   for m in self.members.values()]
        return GroupDescription(self.group_id, self.state.value, self.protocol_type or "", protocol, members)

    def overview(self) -> GroupListing:
        return GroupListing(self.group_id, self.protocol_type or "", self.state.value)

    # -- the GroupMetadata record ----------------------------------------------------------------------
    def metadata_value(self, assignment: Mapping[str, bytes]) -> GroupValue:
        protocol = self.protocol_name
        return GroupValue(
            protocol_type=self.protocol_type or "", generation=self.generation_id, protocol=protocol,
            leader=self.leader_id, current_state_timestamp=self.state_timestamp_ms,
            members=[MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.rebalance_timeout_ms, m.session_timeout_ms,
                                 m.metadata(protocol) if protocol else b"", assignment.get(m.member_id, b""))
                     for m in self.members.values()])

    @classmethod
    def from_record(cls, group_id: str, value: GroupValue) -> Group:
        """The group its last GroupMetadata record describes (Kafka's ClassicGroup.fromRecord)."""
        group = cls(group_id, state=GroupState.STABLE if value.members else GroupState.EMPTY,
                    state_timestamp_ms=value.current_state_timestamp, generation_id=value.generation,
                    protocol_type=value.protocol_type or None, protocol_name=value.protocol, leader_id=value.leader)
        for mv in value.members:
            protocols = [(value.protocol, mv.subscription)] if value.protocol else []
            group.add(Member(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host, mv.rebalance_timeout,
                             mv.session_timeout, value.protocol_type, protocols, assignment=mv.assignment), None)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        return group
