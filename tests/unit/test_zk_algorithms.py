"""zk/replica_assignment.py and zk/leader_election.py on the examples of Kafka's documentation (the
comparison with Kafka's own code on generated cases is tests/integration/test_zk_kafka_algorithms.py)."""

from __future__ import annotations

import random

import pytest

from zk.errors import AdminOperationError, InvalidPartitionsError, InvalidReplicationFactorError
from zk.leader_election import (
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
)
from zk.replica_assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    rack_alternated_broker_list,
)
from zk.znodes import LeaderRecoveryState, PartitionState


def test_rack_unaware_example_of_kafkas_javadoc():
    # 5 brokers, 10 partitions, 3 replicas, first replica of p0 on broker 0 and no extra shift.
    brokers = [BrokerMetadata(i) for i in range(5)]
    result = assign_replicas_to_brokers(brokers, 10, 3, start_index=0, replica_shift=0)
    assert result[0] == [0, 1, 2] and result[4] == [4, 0, 1]
    assert result[5] == [0, 2, 3] and result[9] == [4, 1, 2]  # the shift grew after one round


def test_rack_aware_example_of_kafkas_javadoc():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    brokers = [BrokerMetadata(i, r) for i, r in racks.items()]
    result = assign_replicas_to_brokers(brokers, 7, 3, start_index=0, replica_shift=0)
    assert [result[p] for p in range(6)] == [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3]]
    assert result[6] == [0, 4, 2]


def test_random_start_and_refusals():
    brokers = [BrokerMetadata(i) for i in range(3)]
    seen = {tuple(assign_replicas_to_brokers(brokers, 1, 1, rng=random.Random(s))[0]) for s in range(30)}
    assert seen == {(0,), (1,), (2,)}
    with pytest.raises(InvalidPartitionsError):
        assign_replicas_to_brokers(brokers, 0, 1)
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 3"):
        assign_replicas_to_brokers(brokers, 1, 4)
    with pytest.raises(AdminOperationError):
        assign_replicas_to_brokers([BrokerMetadata(0, "a"), BrokerMetadata(1)], 1, 1)


def test_growth_continues_from_partition_zero():
    brokers = [BrokerMetadata(i) for i in (1, 2, 3)]
    added = new_partitions_assignment("t", {0: [2, 3], 1: [3, 1]}, brokers, 4)
    assert added == {2: [1, 3], 3: [2, 3]}  # what Kafka 3.9 answers: start and shift at broker 2's position
    with pytest.raises(InvalidPartitionsError):
        new_partitions_assignment("t", {0: [1]}, brokers, 1)


STATE = PartitionState(leader=1, leader_epoch=5, isr=(1, 2), controller_epoch=3, zk_version=8)


def test_offline_election():
    clean = leader_for_offline([1, 2, 3], STATE, live_brokers={2, 3}, unclean_leader_election_enabled=False)
    assert clean.state == PartitionState(2, 6, (2,), 3, zk_version=8) and clean.live_replicas == (2, 3)
    dead = leader_for_offline([1, 2, 3], STATE, live_brokers={3}, unclean_leader_election_enabled=False)
    assert dead.state is None
    unclean = leader_for_offline([1, 2, 3], STATE, live_brokers={3}, unclean_leader_election_enabled=True)
    assert unclean.state == PartitionState(3, 6, (3,), 3, LeaderRecoveryState.RECOVERING, 8)
    old_ibp = leader_for_offline([1, 2, 3], STATE, {3}, True, leader_recovery_supported=False)
    assert old_ibp.state.leader_recovery_state == LeaderRecoveryState.RECOVERED


def test_reassign_preferred_and_controlled_shutdown():
    assert leader_for_reassign([2, 3], STATE, {1, 2, 3}).state == PartitionState(2, 6, (1, 2), 3, zk_version=8)
    assert leader_for_reassign([3], STATE, {1, 2, 3}).state is None  # 3 is not in sync
    preferred = leader_for_preferred_replica([2, 1], STATE, {1, 2})
    assert preferred.state.leader == 2 and preferred.state.isr == (1, 2)
    assert leader_for_preferred_replica([3, 1], STATE, {1, 3}).state is None
    moved = leader_for_controlled_shutdown([1, 2], STATE, {1, 2}, shutting_down_brokers={1})
    assert moved.state == PartitionState(2, 6, (2,), 3, zk_version=8)
    assert leader_for_controlled_shutdown([1], PartitionState(1, 0, (1,), 1), {1}, {1}).state is None
