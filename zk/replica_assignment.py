"""Where a topic's replicas go: Kafka's AdminUtils.assignReplicasToBrokers (rack-unaware and rack-aware) and
the partition-growth variant of AdminZkClient (CreatePartitions), as pure functions.

Kafka picks the first replica of each partition round-robin from a random start index, and spreads the others
with a replica shift that also starts at random and grows by one every time the partitions have gone round
the brokers once. Both random numbers can be given (`start_index`, `replica_shift`) so results are
reproducible; Kafka's `fixedStartIndex` is the two set to the same value.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zk.errors import (
    AdminOperationError,
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    broker_id: int
    rack: str | None = None


def assign_replicas_to_brokers(brokers: Sequence[BrokerMetadata], n_partitions: int, replication_factor: int, *,
                               start_index: int | None = None, replica_shift: int | None = None,
                               start_partition_id: int = 0,
                               rng: random.Random | None = None) -> dict[int, list[int]]:
    """Partition id -> replica broker ids (the first is the preferred leader), for partitions
    `start_partition_id` .. `start_partition_id + n_partitions - 1`. Brokers are used in the order given
    (Kafka's callers sort them by id). Rack-aware when any broker has a rack, and then every broker must have
    one (AdminOperationError otherwise). `start_index`/`replica_shift` default to random numbers below the
    number of brokers, as Kafka draws them."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    draw = rng or random
    if start_index is None:
        start_index = draw.randrange(len(brokers))
    if replica_shift is None:
        replica_shift = draw.randrange(len(brokers))
    start_partition_id = max(0, start_partition_id)
    if all(b.rack is None for b in brokers):
        return _rack_unaware(n_partitions, replication_factor, [b.broker_id for b in brokers], start_index,
                             replica_shift, start_partition_id)
    return _rack_aware(n_partitions, replication_factor, brokers, start_index, replica_shift, start_partition_id)


def replica_index(first_replica_index: int, second_replica_shift: int, index: int, n_brokers: int) -> int:
    shift = 1 + (second_replica_shift + index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def _rack_unaware(n_partitions: int, replication_factor: int, broker_list: list[int], start_index: int,
                  replica_shift: int, start_partition_id: int) -> dict[int, list[int]]:
    n = len(broker_list)
    result = {}
    partition = start_partition_id
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            replica_shift += 1
        first = (partition + start_index) % n
        replicas = [broker_list[first]]
        replicas += [broker_list[replica_index(first, replica_shift, j, n)] for j in range(replication_factor - 1)]
        result[partition] = replicas
        partition += 1
    return result


def _rack_aware(n_partitions: int, replication_factor: int, brokers: Sequence[BrokerMetadata], start_index: int,
                replica_shift: int, start_partition_id: int) -> dict[int, list[int]]:
    rack_of: dict[int, str] = {}
    for b in brokers:
        if b.rack is None:
            raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
        rack_of[b.broker_id] = b.rack
    n_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    n = len(arranged)
    result = {}
    partition = start_partition_id
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            replica_shift += 1
        first = (partition + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {rack_of[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[replica_index(first, replica_shift * n_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none, or a broker that
                # already has one while some broker has none.
                if ((rack not in racks_with_replicas or len(racks_with_replicas) == n_racks)
                        and (broker not in brokers_with_replicas or len(brokers_with_replicas) == n)):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        result[partition] = replicas
        partition += 1
    return result


def rack_alternated_broker_list(rack_of: Mapping[int, str]) -> list[int]:
    """Brokers taken from each rack in turn (racks in name order, brokers in id order):
    {0: r1, 1: r1, 3: r2, 4: r2} -> [0, 3, 1, 4]."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    iterators = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    racks = sorted(iterators)
    result: list[int] = []
    i = 0
    while len(result) < len(rack_of):
        broker = next(iterators[racks[i]], None)
        if broker is not None:
            result.append(broker)
        i = (i + 1) % len(racks)
    return result


def new_partitions_assignment(topic: str, existing: Mapping[int, Sequence[int]], brokers: Sequence[BrokerMetadata],
                              num_partitions: int,
                              replica_assignment: Mapping[int, Sequence[int]] | None = None) -> dict[int, list[int]]:
    """The replicas of the partitions CreatePartitions adds to grow `topic` to `num_partitions` (Kafka's
    AdminZkClient.createNewPartitionsAssignment): a given assignment is validated, else they continue the
    existing round-robin from the broker of partition 0's first replica, with its replication factor.
    `brokers` are the live brokers sorted by id."""
    if 0 not in existing:
        raise AdminOperationError(f"Unexpected existing replica assignment for topic '{topic}', partition id 0 "
                                  f"is missing. Assignment: {dict(existing)}")
    partition0 = list(existing[0])
    to_add = num_partitions - len(existing)
    if to_add <= 0:
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{len(existing)} partitions, {num_partitions} would not be an increase.")
    if replica_assignment is not None:
        validate_replica_assignment(replica_assignment, len(partition0), {b.broker_id for b in brokers})
        return {p: list(r) for p, r in replica_assignment.items()}
    start = next((i for i, b in enumerate(brokers) if b.broker_id >= partition0[0]), 0)
    return assign_replicas_to_brokers(brokers, to_add, len(partition0), start_index=start, replica_shift=start,
                                      start_partition_id=len(existing))


def validate_replica_assignment(assignment: Mapping[int, Sequence[int]], expected_replication_factor: int,
                                available_broker_ids: set[int]) -> None:
    """Kafka's checks of a replica assignment given for new partitions."""
    for partition, replicas in assignment.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} for "
                f"partition id {partition}.")
        if not set(replicas) <= available_broker_ids:
            available = ", ".join(map(str, sorted(available_broker_ids)))
            raise BrokerNotAvailableError(
                f"Some brokers specified for partition id {partition} are not available. Specified brokers: "
                f"{', '.join(map(str, replicas))}, available brokers: {available}.")
    bad = sorted((p, len(r)) for p, r in assignment.items() if len(r) != expected_replication_factor)
    if bad:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition 0 has {expected_replication_factor} "
            f"while partitions [{', '.join(str(p) for p, _ in bad)}] have replication factors "
            f"[{', '.join(str(n) for _, n in bad)}], respectively.")


def validate_topic_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """Kafka's checks of a new topic's assignment (AdminZkClient.validateTopicCreate): one replication factor,
    no duplicate replica, partitions 0..n-1."""
    if len({len(r) for r in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {dict(assignment)}")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
