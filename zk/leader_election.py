"""Kafka's partition leader elections (kafka.controller.PartitionLeaderElectionAlgorithms and Election), pure.

The four algorithms pick a leader from a partition's assignment (its replica list in order, so the first is
the preferred leader); the `leader_for_*` functions turn the pick into the partition's next state as Kafka's
controller does (leader epoch + 1, the ISR trimmed, RECOVERING after an unclean election). None: no leader
can be elected (the partition goes, or stays, offline).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from zk.znodes import PartitionState


def offline_partition_leader_election(assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int],
                                      unclean_leader_election_enabled: bool) -> int | None:
    """The first live replica in the ISR; with unclean election enabled, else the first live replica."""
    leader = next((r for r in assignment if r in live_replicas and r in isr), None)
    if leader is None and unclean_leader_election_enabled:
        leader = next((r for r in assignment if r in live_replicas), None)
    return leader


def reassign_partition_leader_election(reassignment: Sequence[int], isr: Collection[int],
                                       live_replicas: Collection[int]) -> int | None:
    """The first live in-sync replica of the target replicas."""
    return next((r for r in reassignment if r in live_replicas and r in isr), None)


def preferred_replica_partition_leader_election(assignment: Sequence[int], isr: Collection[int],
                                                live_replicas: Collection[int]) -> int | None:
    """The preferred replica (the first of the assignment) if it is live and in sync; no other."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(assignment: Sequence[int], isr: Collection[int],
                                                  live_replicas: Collection[int],
                                                  shutting_down_brokers: Collection[int]) -> int | None:
    """The first live in-sync replica that is not shutting down."""
    return next((r for r in assignment
                 if r in live_replicas and r in isr and r not in shutting_down_brokers), None)


@dataclass(frozen=True, slots=True)
class ElectionResult:
    state: PartitionState | None       # the new state to write, None when no leader could be elected
    live_replicas: tuple[int, ...]     # the replicas Kafka sends the new state to


def leader_for_offline(assignment: Sequence[int], state: PartitionState, live_brokers: Collection[int],
                       unclean_leader_election_enabled: bool,
                       leader_recovery_supported: bool = True) -> ElectionResult:
    """A new leader for a partition that has none (new, or its leader died). The ISR keeps its live members
    when the leader comes from it; an unclean leader is the whole ISR, and the partition is RECOVERING."""
    live = tuple(r for r in assignment if r in live_brokers)
    leader = offline_partition_leader_election(assignment, state.isr, live, unclean_leader_election_enabled)
    if leader is None:
        return ElectionResult(None, live)
    if leader in state.isr:
        return ElectionResult(state.new_leader_and_isr(leader, [r for r in state.isr if r in live_brokers]), live)
    if leader_recovery_supported:
        return ElectionResult(state.new_recovering_leader_and_isr(leader, [leader]), live)
    return ElectionResult(state.new_leader_and_isr(leader, [leader]), live)


def leader_for_reassign(target_replicas: Sequence[int], state: PartitionState,
                        live_brokers: Collection[int]) -> ElectionResult:
    """A leader among the target replicas of a reassignment (when the current one is not among them)."""
    live = tuple(r for r in target_replicas if r in live_brokers)
    leader = reassign_partition_leader_election(target_replicas, state.isr, live)
    return ElectionResult(state.new_leader(leader) if leader is not None else None, tuple(target_replicas))


def leader_for_preferred_replica(assignment: Sequence[int], state: PartitionState,
                                 live_brokers: Collection[int]) -> ElectionResult:
    """Leadership back to the preferred replica (ElectLeaders PREFERRED, auto leader rebalance)."""
    live = tuple(r for r in assignment if r in live_brokers)
    leader = preferred_replica_partition_leader_election(assignment, state.isr, live)
    return ElectionResult(state.new_leader(leader) if leader is not None else None, tuple(assignment))


def leader_for_controlled_shutdown(assignment: Sequence[int], state: PartitionState,
                                   live_or_shutting_down_brokers: Collection[int],
                                   shutting_down_brokers: Collection[int]) -> ElectionResult:
    """A leader that is not shutting down; the shutting-down brokers leave the ISR."""
    live = tuple(r for r in assignment if r in live_or_shutting_down_brokers)
    leader = controlled_shutdown_partition_leader_election(assignment, state.isr, live, shutting_down_brokers)
    if leader is None:
        return ElectionResult(None, live)
    isr = [r for r in state.isr if r not in shutting_down_brokers]
    return ElectionResult(state.new_leader_and_isr(leader, isr), live)
