"""The cluster as a single broker sees it: itself, the controller of its own topics, and the creator of
every topic at once. broker.cluster's ZooKeeper-mode cluster answers the same questions for a broker
that is one of several; handlers ask `ctx.broker.cluster` and do not care which."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.clock import Clock
from broker.services.topics import Topic, TopicError, TopicManager
from protocol.header import ErrorCode


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
