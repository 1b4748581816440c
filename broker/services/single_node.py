"""The cluster as a single broker sees it (a ClusterView, broker.services.cluster_view): itself, the
controller of its own topics, and the creator of every topic at once. broker.cluster's ZooKeeper-mode cluster
answers the same questions for a broker that is one of several; handlers ask `ctx.broker.cluster` and do not
care which."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from broker.clock import Clock
from broker.services.cluster_view import CreatedTopic, Node
from broker.services.internal_topics import internal_topic
from broker.services.topics import Topic, TopicError, TopicManager, check_new_assignments
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from broker.config.kafka_versions import VersionProfile
    from broker.services.marker_writer import MarkerWriter


class SingleNode:
    replicated = False  # every partition's only replica is here

    def __init__(self, node_id: int, topics: TopicManager, clock: Clock, auto_create: Callable[[], bool],
                 rack: str | None) -> None:
        self.node_id = node_id
        self.topics = topics
        self.clock = clock
        self._auto_create = auto_create  # the config's auto.create.topics.enable, read when asked
        self.rack = rack

    @property
    def controller_id(self) -> int:
        return self.node_id

    async def wait_metadata(self) -> None:
        """A single broker knows the cluster from the start (see ZkCluster.wait_metadata)."""

    def nodes(self, endpoint: Any) -> list[Node]:
        """The live brokers, at their addresses for the listener the client came in on (`endpoint`)."""
        return [Node(self.node_id, endpoint.host, endpoint.port, self.rack)]

    def is_alive(self, node_id: int) -> bool:
        return node_id == self.node_id

    def node(self, node_id: int, endpoint: Any) -> Node | None:
        return Node(self.node_id, endpoint.host, endpoint.port, self.rack) if node_id == self.node_id else None

    def auto_create_topic(self, name: str) -> Topic | ErrorCode:
        """auto.create.topics.enable: the topic with the broker's defaults, created now."""
        if not self._auto_create():
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        try:
            return self.topics.create(name, now_ms=self.clock.now_ms())
        except TopicError as exc:
            return ErrorCode[exc.error]

    def create_internal_topics(self, topics: Sequence[tuple[str, int, int, Mapping[str, str]]]) -> None:
        """Kafka's AutoTopicCreationManager.createStreamsInternalTopics: (name, partitions, replication factor,
        configs) created now; one that cannot be (it exists meanwhile, a bad config) is logged and left out."""
        for name, partitions, replication_factor, configs in topics:
            if self.topics.get(name) is not None:
                continue
            try:
                self.topics.create(name, partitions, replication_factor, configs, now_ms=self.clock.now_ms())
            except TopicError as exc:
                log.warning("creating internal topic %s: %s", name, exc.message)

    def internal_topic(self, name: str) -> Topic | ErrorCode:
        return internal_topic(self.topics, name, self.clock.now_ms())

    def transaction_markers(self, local: MarkerWriter) -> MarkerWriter:
        return local  # every partition is here

    def share_coordinators(self, versions: VersionProfile) -> None:
        return None  # every share partition's state is coordinated here

    def not_controller(self) -> bool:
        return False  # a single broker is its own controller

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False, timeout_s: float = 30.0) -> CreatedTopic:
        """CreateTopics on this broker alone: replicas can only be this broker. Raises TopicError."""
        if assignments:
            for replicas in assignments.values():
                if any(b != self.node_id for b in replicas):
                    raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                                     f"Unknown broker in replica assignment: {list(replicas)}")
            num_partitions = len(assignments)
            replication_factor = len(next(iter(assignments.values())))
        if validate_only:
            num_partitions, overrides = self.topics.check_create(name, num_partitions, replication_factor, configs)
            return CreatedTopic(None, num_partitions, 1, overrides)
        topic = self.topics.create(name, num_partitions, replication_factor, configs, now_ms=self.clock.now_ms())
        return CreatedTopic(topic.topic_id, len(topic.partitions), 1, topic.configs)

    async def elect_leaders(self, partitions: list[tuple[str, int]] | None, unclean: bool
                            ) -> dict[tuple[str, int], ErrorCode]:
        """Every partition of a single broker has its only replica as leader."""
        if partitions is None:
            partitions = [(t.name, p.index) for t in self.topics if not t.is_internal for p in t.partitions]
        return {tp: ErrorCode.ELECTION_NOT_NEEDED if self.topics.partition(*tp) is not None
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in partitions}

    async def alter_reassignments(self, targets: Mapping[tuple[str, int], list[int] | None]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """The only replica list a partition of a single broker can have is [this broker]: done at once."""
        out: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        for tp, replicas in targets.items():
            if self.topics.partition(*tp) is None:
                out[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            elif replicas is None:
                out[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress for this partition.")
            elif replicas != [self.node_id]:
                out[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes broker(s) that are not registered or a "
                           f"replication factor other than 1: {replicas}")
            else:
                out[tp] = (ErrorCode.NONE, None)
        return out

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        return {}  # none is ever in progress

    async def delete_topic(self, name: str, timeout_s: float = 30.0) -> uuid.UUID:
        """DeleteTopics; raises TopicError."""
        return self.topics.delete(name).topic_id

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, *,
                                validate_only: bool = False, timeout_s: float = 30.0) -> None:
        """CreatePartitions; raises TopicError (new replicas can only be this broker)."""
        topic = self.topics.check_add_partitions(name, count)
        if assignments is not None:
            check_new_assignments(assignments, len(topic.partitions), count, {self.node_id}, 1)
        if not validate_only:
            self.topics.add_partitions(name, count, now_ms=self.clock.now_ms())

    async def topic_overrides(self, name: str) -> dict[str, str] | None:
        """The topic's config overrides; None when there is no such topic."""
        topic = self.topics.get(name)
        return None if topic is None else dict(topic.configs)

    async def alter_topic_configs(self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
                                  ) -> None:
        """A topic's whole set of config overrides; raises TopicError."""
        self.topics.alter_configs(name, overrides, validate_only=validate_only)
