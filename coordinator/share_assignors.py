"""The `simple` assignors of share groups (KIP-932): Kafka 4.1's, which hashes each member onto a partition and
lets members share partitions, and Kafka 4.2+'s (SimpleHomogeneousAssignmentBuilder and
SimpleHeterogeneousAssignmentBuilder), which balances the partitions between the members first, sharing a
partition only when there are more members than partitions, and keeps members' partitions where it can.

Kafka takes the members in the order of a Java HashMap of their ids (`java_hash_order`), and that order decides
who gets which partition; so do its sets of topic partitions in the 4.2+ builder, ordered by the topic ids'
hashes (random ids: which of two members gets which partition varies from topic to topic, on Kafka too), which
here are taken in partition order. Pure functions of a GroupSpec and the assignable partitions of each topic.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable

from coordinator.assignors import GroupSpec, PartitionAssignorError, SubscriptionType

Partitions = Callable[[uuid.UUID], Iterable[int] | None]  # a topic's assignable partitions; None: no such topic


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a java.util.HashMap holding `keys` (inserted in the order given): by bucket,
    (hash ^ hash >>> 16) & (capacity - 1), the table grown from 16 entries at a load of 0.75; a bucket's keys in
    insertion order."""
    ordered = list(keys)
    capacity = 16
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(ordered, key=bucket)  # stable: a bucket keeps the insertion order


def _targets(topic_ids: Iterable[uuid.UUID], partitions: Partitions) -> list[tuple[uuid.UUID, int]]:
    """The assignable (topic, partition) pairs of `topic_ids`, in Kafka's order; a topic that does not exist
    fails the assignment as Kafka's assignors do."""
    out = []
    for topic_id in sorted(topic_ids, key=str):
        assignable = partitions(topic_id)
        if assignable is None:
            raise PartitionAssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist "
                                         "in the topic metadata.")
        out += [(topic_id, p) for p in sorted(assignable)]
    return out


class HashingSimpleAssignor:
    """Kafka 4.1's SimpleAssignor for share groups: each member hashes onto one partition of its subscription,
    current assignments stay where they can, the rest go round robin; with more members than partitions,
    members share partitions."""

    name = "simple"

    def assign(self, spec: GroupSpec, partitions: Partitions) -> dict[str, dict[uuid.UUID, set[int]]]:
        """`partitions(topic_id)`: the topic's assignable partitions (those whose share state is initialized),
        None when the topic does not exist."""
        if not spec.members:
            return {}

        def hashed(member_ids: Iterable[str], parts: list[tuple[uuid.UUID, int]],
                   into: dict[tuple[uuid.UUID, int], list[str]]) -> None:
            if parts:
                for member_id in member_ids:
                    # Java's Math.abs(hashCode % size): the remainder truncates, so this is |hash| mod size.
                    index = abs(java_string_hash(member_id)) % len(parts)
                    into.setdefault(parts[index], []).append(member_id)

        current: dict[tuple[uuid.UUID, int], list[str]] = {}
        for member_id, member in spec.members.items():
            for topic_id, parts in member.assignment.items():
                for p in parts:
                    current.setdefault((topic_id, p), []).append(member_id)
        member_ids = list(spec.members)
        final: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in member_ids}
        if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            subscribed = spec.members[member_ids[0]].subscribed_topic_ids
            target = _targets(subscribed, partitions)
            if not target:
                return {}
            desired = -(-len(target) // len(member_ids))
            new: dict[tuple[uuid.UUID, int], list[str]] = {}
            hashed(member_ids, target, new)
            for tp, members in new.items():
                for m in members:
                    final[m].add(tp)
            by_partition = {tp: set(ms) for tp, ms in new.items()}
            for tp, members in current.items():
                if tp[0] in subscribed and tp not in new:
                    for m in members:
                        if m in final and len(final[m]) < desired:
                            final[m].add(tp)
                            by_partition.setdefault(tp, set()).add(m)
            unassigned = [tp for tp in target if tp not in by_partition]
            eligible = list(member_ids)
            i = 0
            pending = list(unassigned)
            while pending:
                if not eligible:
                    raise PartitionAssignorError("Inconsistent number of member IDs")
                member = eligible[i % len(eligible)]
                if len(final[member]) <= desired:
                    final[member].add(pending.pop(0))
                    i += 1
                else:
                    eligible.remove(member)
        else:
            subscriptions = {m: _targets(spec.members[m].subscribed_topic_ids, partitions) for m in member_ids
                             if spec.members[m].subscribed_topic_ids}
            topic_members: dict[uuid.UUID, list[str]] = {}
            for m, parts in subscriptions.items():
                for topic_id, _ in parts:
                    if m not in topic_members.setdefault(topic_id, []):
                        topic_members[topic_id].append(m)
            new = {}
            for m, parts in subscriptions.items():
                hashed([m], parts, new)
            all_targets = list(dict.fromkeys(tp for parts in subscriptions.values() for tp in parts))
            unassigned: dict[uuid.UUID, list[tuple[uuid.UUID, int]]] = {}
            for tp in all_targets:
                if tp not in new and tp not in current:
                    unassigned.setdefault(tp[0], []).append(tp)
            for topic_id, parts in unassigned.items():
                members = topic_members[topic_id]
                for i, tp in enumerate(parts):
                    new.setdefault(tp, []).append(members[i % len(members)])
            for tp, members in new.items():
                for m in members:
                    final[m].add(tp)
            for tp, members in current.items():
                for m in members:
                    if m in topic_members.get(tp[0], ()) and tp not in new:
                        final[m].add(tp)
        out: dict[str, dict[uuid.UUID, set[int]]] = {}
        for member_id, tps in final.items():
            assignment: dict[uuid.UUID, set[int]] = {}
            for topic_id, p in tps:
                assignment.setdefault(topic_id, set()).add(p)
            out[member_id] = assignment
        return out


class SimpleAssignor:
    """Kafka 4.2+'s SimpleAssignor: balance first (each member gets its share of the partitions, a partition is
    shared by at most as many members as needed to give every member one), then stickiness (members keep what
    they have where the balance allows). Members subscribed to the same topics are balanced over all their
    partitions together; otherwise each topic is balanced between the members subscribed to it."""

    name = "simple"

    def assign(self, spec: GroupSpec, partitions: Partitions) -> dict[str, dict[uuid.UUID, set[int]]]:
        members = list(spec.members)
        if not members:
            return {}

        subscribed = {m: spec.members[m].subscribed_topic_ids for m in members}
        result = {m: {t: set(ps) for t, ps in spec.members[m].assignment.items() if t in subscribed[m]}
                  for m in members}
        if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            _balance(_targets(subscribed[members[0]], partitions), members, result)
        else:
            for topic_id in sorted(set().union(*subscribed.values()), key=str):
                _balance(_targets([topic_id], partitions), [m for m in members if topic_id in subscribed[m]], result)
        return {m: {t: ps for t, ps in a.items() if ps} for m, a in result.items()}


def _balance(targets: list[tuple[uuid.UUID, int]], members: list[str],
             result: dict[str, dict[uuid.UUID, set[int]]]) -> None:
    """One balancing of `targets` between `members`, over their current assignment in `result` (changed in place):
    Kafka's revoke unassignable, over-shared and overfilled, then assign the remaining partitions."""
    if not members:
        return
    topics = {t for t, _ in targets}
    sharing = 0 if not targets else (len(members) + len(targets) - 1) // len(targets)
    precise = sharing * len(targets) / len(members)
    want = {m: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(members)}
    assignable = set(targets)
    holders: dict[tuple[uuid.UUID, int], list[str]] = {tp: [] for tp in targets}
    held: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}

    def drop(member: str, tp: tuple[uuid.UUID, int]) -> None:
        result[member].get(tp[0], set()).discard(tp[1])
        held[member].remove(tp)
        holders[tp].remove(member)

    for member in members:
        for topic_id in sorted(t for t in result[member] if t in topics):
            for p in sorted(result[member][topic_id]):
                if (topic_id, p) in assignable:
                    holders[(topic_id, p)].append(member)
                    held[member].append((topic_id, p))
                else:  # no longer assignable
                    result[member][topic_id].discard(p)
    overfilled = [m for m in members if len(held[m]) > want[m]]
    for tp in targets:  # over-shared partitions: from overfilled members first
        for member in [m for m in list(holders[tp]) if m in overfilled] + [m for m in list(holders[tp])
                                                                            if m not in overfilled]:
            if len(holders[tp]) <= sharing:
                break
            if member in holders[tp]:
                drop(member, tp)
    for member in overfilled:
        while len(held[member]) > want[member]:
            drop(member, held[member][0])
    unfilled = [m for m in members if len(held[m]) < want[m]]
    cursor = 0
    for tp in targets:
        missing = sharing - len(holders[tp])
        tried = 0
        while missing > 0 and unfilled and tried < len(unfilled):
            member = unfilled[cursor % len(unfilled)]
            if member in holders[tp]:
                cursor += 1
                tried += 1
                continue
            result[member].setdefault(tp[0], set()).add(tp[1])
            held[member].append(tp)
            holders[tp].append(member)
            missing -= 1
            tried = 0
            if len(held[member]) >= want[member]:
                unfilled.remove(member)
            else:
                cursor += 1
