"""Server-side partition assignors of KIP-848 consumer groups: `uniform` (the default) and `range`, ported from
Kafka 4.1's group coordinator (UniformAssignor with its homogeneous and heterogeneous builders, RangeAssignor).

Pure functions of a GroupSpec: the members' subscriptions (as topic ids) and current target assignment, and the
partition count of each topic. The result is the new target assignment of every member. Kafka iterates Java
hash maps where it does not sort; here such iterations follow the members' insertion order and sorted topic ids,
so the algorithm and its balance are Kafka's while an individual partition may land on another member than on
a Kafka broker given the same input.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

Assignment = Mapping[uuid.UUID, frozenset[int]]


class SubscriptionType(Enum):
    HOMOGENEOUS = "Homogeneous"
    HETEROGENEOUS = "Heterogeneous"


class PartitionAssignorError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class MemberSpec:
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment = field(default_factory=dict)  # the member's current target assignment
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]  # in a stable order
    subscription_type: SubscriptionType
    # (topic id, partition) -> member id of the current target assignment (Kafka's invertedTargetAssignment)
    partition_owners: Mapping[tuple[uuid.UUID, int], str] = field(default_factory=dict)

    def is_partition_assigned(self, topic_id: uuid.UUID, partition: int) -> bool:
        return (topic_id, partition) in self.partition_owners


PartitionCount = Callable[[uuid.UUID], int]  # -1: the topic does not exist


def _java_uuid_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """Kafka's Uuid.compareTo: most then least significant 64 bits, as signed longs."""
    def signed(v: int) -> int:
        return v - (1 << 64) if v >= 1 << 63 else v
    return signed(topic_id.int >> 64), signed(topic_id.int & ((1 << 64) - 1))


class UniformAssignor:
    name = "uniform"

    def assign(self, spec: GroupSpec, partitions: PartitionCount) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not spec.members:
            return {}
        if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return _UniformHomogeneous(spec, partitions).build()
        return _UniformHeterogeneous(spec, partitions).build()


def _copy(assignment: Assignment) -> dict[uuid.UUID, set[int]]:
    return {topic_id: set(parts) for topic_id, parts in assignment.items()}


class _UniformHomogeneous:
    """Every member subscribes to the same topics: each gets floor(P/M) or one more, keeping what it had
    as far as its quota allows (sticky), the rest handed out in order."""

    def __init__(self, spec: GroupSpec, partitions: PartitionCount) -> None:
        self.spec = spec
        self.partitions = partitions
        first = next(iter(spec.members.values()))
        self.topic_ids = sorted(first.subscribed_topic_ids, key=_java_uuid_key)

    def build(self) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not self.topic_ids:
            return {}
        unassigned: list[tuple[uuid.UUID, int]] = []
        total = 0
        for topic_id in self.topic_ids:
            count = self.partitions(topic_id)
            if count == -1:
                raise PartitionAssignorError(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
            unassigned += [(topic_id, p) for p in range(count) if not self.spec.is_partition_assigned(topic_id, p)]
            total += count
        members = self.spec.members
        minimum, extra = divmod(total, len(members))
        subscribed = set(self.topic_ids)
        target: dict[str, dict[uuid.UUID, set[int]]] = {}
        unfilled: list[tuple[str, int]] = []
        for index, (member_id, member) in enumerate(members.items()):
            assignment = _copy(member.assignment)
            quota = minimum
            has_extra = extra > 0
            if has_extra:
                quota += 1
            for topic_id in list(assignment):
                parts = assignment[topic_id]
                if topic_id not in subscribed:
                    del assignment[topic_id]
                elif len(parts) <= quota:
                    quota -= len(parts)
                else:
                    for partition in sorted(parts):
                        if quota > 0:
                            quota -= 1
                        else:
                            parts.discard(partition)
                            unassigned.append((topic_id, partition))
                    if not parts:
                        del assignment[topic_id]
            # A member that filled up on the minimum leaves the extra partition to one that can take it, as
            # long as enough members remain to take all the extras.
            if quota > 0 and has_extra and len(members) - index > extra:
                quota -= 1
                has_extra = False
            if quota > 0:
                unfilled.append((member_id, quota))
            if has_extra:
                extra -= 1
            target[member_id] = assignment
        position = 0
        for member_id, quota in unfilled:
            assignment = target[member_id]
            for _ in range(quota):
                if position >= len(unassigned):
                    break
                topic_id, partition = unassigned[position]
                position += 1
                assignment.setdefault(topic_id, set()).add(partition)
        if position < len(unassigned):
            raise PartitionAssignorError("Partitions were left unassigned")
        return target


class _UniformHeterogeneous:
    """Members subscribe to different topics: sticky revocation of unsubscribed topics, then the unassigned
    partitions to the least loaded subscribers topic by topic (the topics with most partitions per subscriber
    first), then moves from the most to the least loaded subscribers until balanced (Kafka's algorithm with its
    16-round limit)."""

    MAX_ITERATIONS = 16

    def __init__(self, spec: GroupSpec, partitions: PartitionCount) -> None:
        self.spec = spec
        self.partitions = partitions
        self.member_ids = list(spec.members)
        self.topic_subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in sorted(spec.members[member_id].subscribed_topic_ids, key=_java_uuid_key):
                if partitions(topic_id) == -1:
                    raise PartitionAssignorError(
                        f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
                self.topic_subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {topic_id: [-1] * partitions(topic_id) for topic_id in self.topic_subscribers}
        self.target: dict[str, dict[uuid.UUID, set[int]]] = {}

    def _topic_order(self, topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        subscribers = len(self.topic_subscribers[topic_id])
        return (-self.partitions(topic_id) / subscribers, subscribers, _java_uuid_key(topic_id))

    def build(self) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not self.topic_subscribers:
            return {}
        for index, member_id in enumerate(self.member_ids):
            member = self.spec.members[member_id]
            assignment = _copy(member.assignment)
            for topic_id in list(assignment):
                if topic_id in member.subscribed_topic_ids and topic_id in self.owners:
                    self.sizes[index] += len(assignment[topic_id])
                    for partition in assignment[topic_id]:
                        self.owners[topic_id][partition] = index
                else:
                    del assignment[topic_id]
            self.target[member_id] = assignment
        unassigned = {topic_id: [p for p, owner in enumerate(owners) if owner == -1]
                      for topic_id, owners in self.owners.items()}
        for topic_id in sorted((t for t, parts in unassigned.items() if parts), key=self._topic_order):
            balancer = _Balancer(self.sizes, self.topic_subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self._move(topic_id, partition, balancer.next_least_loaded())
        movable = [t for t, subscribers in self.topic_subscribers.items() if len(subscribers) >= 2]
        if movable:
            self._balance(sorted(movable, key=self._topic_order))
        return self.target

    def _balance(self, topic_ids: list[uuid.UUID]) -> None:
        last_rebalanced = -1
        for _ in range(self.MAX_ITERATIONS):
            for index, topic_id in enumerate(topic_ids):
                if index == last_rebalanced:
                    return  # a whole round without moving anything
                if self._balance_topic(topic_id) > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def _balance_topic(self, topic_id: uuid.UUID) -> int:
        moved = 0
        owners = self.owners[topic_id]
        balancer = _Balancer(self.sizes, self.topic_subscribers[topic_id])
        if balancer.imbalance <= 1:
            return 0
        order = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, partition in enumerate(order):
            start.setdefault(owners[partition], i)
            end[owners[partition]] = i + 1
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if end.get(most, 0) - start.get(most, 0) <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            partition = order[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._move(topic_id, partition, least)
            moved += 1
        return moved

    def _move(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        old = self.owners[topic_id][partition]
        if old != -1:
            parts = self.target[self.member_ids[old]].get(topic_id)
            if parts is not None:
                parts.discard(partition)
                if not parts:
                    del self.target[self.member_ids[old]][topic_id]
            self.sizes[old] -= 1
        self.target[self.member_ids[member_index]].setdefault(topic_id, set()).add(partition)
        self.owners[topic_id][partition] = member_index
        self.sizes[member_index] += 1


class _Balancer:
    """Kafka's MemberAssignmentBalancer: a least loaded range growing right and a most loaded range growing left
    over the subscribers sorted by partition count (then index)."""

    def __init__(self, sizes: list[int], members: list[int]) -> None:
        self.sizes = sizes
        self.sorted = sorted(members, key=lambda m: (sizes[m], m))
        self.least_end = 0
        self.least_count = sizes[self.sorted[0]] - 1
        self.next_least = 0
        self.most_start = len(self.sorted)
        self.most_end = len(self.sorted)
        self.most_count = sizes[self.sorted[-1]] + 1
        self.next_most = len(self.sorted) - 1
        self.imbalance = sizes[self.sorted[-1]] - sizes[self.sorted[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(self.sorted) and self.sizes[self.sorted[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.sorted[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.sorted[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        member = self.sorted[self.next_most + 1]
        self.sorted[self.next_most + 1] = self.sorted[self.most_end - 1]
        self.sorted[self.most_end - 1] = member
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class RangeAssignor:
    """Per topic, contiguous ranges of partitions to the subscribers sorted by instance id (static members
    first) then member id; the first P % M subscribers get one more. Not sticky: it is a pure function of the
    subscriptions, like Kafka's."""

    name = "range"

    def assign(self, spec: GroupSpec, partitions: PartitionCount) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not spec.members:
            return {}

        def order(member_id: str) -> tuple[int, str]:
            instance = spec.members[member_id].instance_id
            return (0, instance) if instance is not None else (1, member_id)

        member_ids = sorted(spec.members, key=order)
        subscribers: dict[uuid.UUID, int] = {}
        for member_id in member_ids:
            for topic_id in spec.members[member_id].subscribed_topic_ids:
                if partitions(topic_id) == -1:
                    raise PartitionAssignorError("Member is subscribed to a non-existent topic")
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
        quotas = {topic_id: list(divmod(partitions(topic_id), n)) + [0] for topic_id, n in subscribers.items()}
        target: dict[str, dict[uuid.UUID, set[int]]] = {}
        for member_id in member_ids:
            assignment: dict[uuid.UUID, set[int]] = {}
            for topic_id in spec.members[member_id].subscribed_topic_ids:
                quota = quotas[topic_id]  # [minimum, extras left, next start]
                size = quota[0]
                if quota[1] > 0:
                    size += 1
                    quota[1] -= 1
                start = quota[2]
                stop = min(start + size, partitions(topic_id))
                quota[2] = stop
                if start < stop:
                    assignment[topic_id] = set(range(start, stop))
            target[member_id] = assignment
        return target


ASSIGNORS = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}
DEFAULT_ASSIGNOR = UniformAssignor.name
