"""The cluster as a single broker sees it: itself, the controller of its own topics, and the creator of
every topic at once. broker.cluster's ZooKeeper-mode cluster answers the same questions for a broker
that is one of several; handlers ask `ctx.broker.cluster` and do not care which."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from broker.clock import Clock
from broker.services.topics import Topic, TopicError, TopicManager
from protocol.header import ErrorCode


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    """What CreateTopics answers of a created (or, validate_only, creatable) topic."""

    topic_id: uuid.UUID | None
    num_partitions: int
    replication_factor: int
    configs: dict[str, str]


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as Metadata, DescribeCluster and FindCoordinator describe it to a client."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class SingleNode:
    def __init__(self, node_id: int, topics: TopicManager, clock: Clock, auto_create: Any, rack: str | None) -> None:
        self.node_id = node_id
        self.topics = topics
        self.clock = clock
        self._auto_create = auto_create  # the config's auto.create.topics.enable, read when asked
        self.rack = rack

    @property
    def controller_id(self) -> int:
        return self.node_id

    def nodes(self, endpoint: Any) -> list[Node]:
        """The live brokers, at their addresses for the listener the client came in on (`endpoint`)."""
        return [Node(self.node_id, endpoint.host, endpoint.port, self.rack)]

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
