"""What the controller knows of the cluster (Kafka's ControllerContext), and the states of its partition
state machine (NewPartition, OnlinePartition, OfflinePartition, NonExistentPartition) with their checked
transitions, as pure data: the controller (broker.cluster.controller) reads ZooKeeper into it, and
broker.cluster.partition_state_machine moves partitions between the states."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from zk.znodes import BrokerRegistration, PartitionState, ReplicaAssignment

TopicPartition = tuple[str, int]


class PartitionStatus(enum.Enum):
    NEW = "NewPartition"  # assigned replicas, no leader yet
    ONLINE = "OnlinePartition"  # a live leader
    OFFLINE = "OfflinePartition"  # its leader died, or none could be elected
    NON_EXISTENT = "NonExistentPartition"  # never created, or deleted


VALID_PREVIOUS: dict[PartitionStatus, set[PartitionStatus]] = {  # Kafka's validPreviousStates
    PartitionStatus.NEW: {PartitionStatus.NON_EXISTENT},
    PartitionStatus.ONLINE: {PartitionStatus.NEW, PartitionStatus.ONLINE, PartitionStatus.OFFLINE},
    PartitionStatus.OFFLINE: {PartitionStatus.NEW, PartitionStatus.ONLINE, PartitionStatus.OFFLINE},
    PartitionStatus.NON_EXISTENT: {PartitionStatus.OFFLINE},
}


class IllegalTransition(Exception):
    pass


@dataclass(slots=True)
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)  # the czxid of each registration
    shutting_down: set[int] = field(default_factory=set)
    offline_dirs: set[int] = field(default_factory=set)  # live brokers whose log directory failed (until restart)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    assignments: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    status: dict[TopicPartition, PartitionStatus] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    # replicas whose StopReplica(delete) has not been acknowledged yet, per topic being deleted
    deletions_pending: dict[str, set[tuple[int, TopicPartition]]] = field(default_factory=dict)

    # -- topology -----------------------------------------------------------------------------------------
    @property
    def live_or_shutting_down(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        """Live, not shutting down, with their log directory online: where leaders may be elected."""
        return set(self.live_brokers) - self.shutting_down - self.offline_dirs

    def topics(self) -> set[str]:
        return set(self.topic_ids)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((name for name, tid in self.topic_ids.items() if tid == topic_id), None)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp[0] == topic)

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        assignment = self.assignments.get(tp)
        return assignment.replicas if assignment is not None else ()

    def live_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return tuple(r for r in self.replicas(tp) if r in self.live_brokers and r not in self.offline_dirs)

    def offline_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return tuple(r for r in self.replicas(tp) if r not in self.live_brokers or r in self.offline_dirs)

    def partitions_on(self, broker_id: int) -> Iterator[TopicPartition]:
        return (tp for tp, a in self.assignments.items() if broker_id in a.replicas)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.states.items() if s.leader == broker_id)

    def leader(self, tp: TopicPartition) -> int:
        state = self.states.get(tp)
        return state.leader if state is not None else -1

    def is_deleting(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    # -- the partition state machine ------------------------------------------------------------------------
    def transition(self, partitions: Iterable[TopicPartition], target: PartitionStatus) -> None:
        for tp in partitions:
            current = self.status.get(tp, PartitionStatus.NON_EXISTENT)
            if current not in VALID_PREVIOUS[target]:
                raise IllegalTransition(f"{tp[0]}-{tp[1]}: {current.value} -> {target.value}")
            self.status[tp] = target

    def in_status(self, *statuses: PartitionStatus) -> list[TopicPartition]:
        wanted = set(statuses)
        return sorted(tp for tp, s in self.status.items() if s in wanted)

    # -- changes ------------------------------------------------------------------------------------------
    def add_topic(self, topic: str, topic_id: uuid.UUID, partitions: dict[int, ReplicaAssignment]) -> list[
            TopicPartition]:
        """A topic (or its new partitions) from its znode; returns the partitions it did not have."""
        self.topic_ids[topic] = topic_id
        added = []
        for index, assignment in partitions.items():
            tp = (topic, index)
            if tp not in self.assignments:
                added.append(tp)
            self.assignments[tp] = assignment
        return sorted(added)

    def remove_topic(self, topic: str) -> None:
        self.topic_ids.pop(topic, None)
        for tp in self.partitions_of(topic):
            self.assignments.pop(tp, None)
            self.states.pop(tp, None)
            self.status.pop(tp, None)
        self.topics_to_delete.discard(topic)
        self.deletions_pending.pop(topic, None)

    def imbalanced(self, percentage: int) -> dict[int, list[TopicPartition]]:
        """Per live preferred leader, its partitions led by another broker, when more than `percentage` of
        the partitions it prefers (Kafka's checkAndTriggerAutoLeaderRebalance)."""
        preferred: dict[int, list[TopicPartition]] = {}
        for tp, assignment in self.assignments.items():
            if assignment.replicas and not self.is_deleting(tp[0]) and not assignment.is_being_reassigned:
                preferred.setdefault(assignment.replicas[0], []).append(tp)
        out = {}
        for broker_id, tps in preferred.items():
            if broker_id not in self.live_broker_ids:
                continue
            elsewhere = [tp for tp in tps if self.leader(tp) != broker_id]
            if tps and len(elsewhere) * 100 / len(tps) > percentage:
                out[broker_id] = sorted(elsewhere)
        return out
