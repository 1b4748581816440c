"""The cluster as this broker sees it, as its handlers and its Broker ask about it (`ctx.broker.cluster`): who
is there and at which address, who the controller is, how topics are created, grown, configured and deleted,
and what changes when partitions have replicas on other brokers. Two implementations: SingleNode
(broker.services.single_node, the embedded single broker) and ZkCluster (broker.cluster.zk_cluster, one of
several brokers on ZooKeeper)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from broker.services.topics import Topic
from protocol.header import ErrorCode

if TYPE_CHECKING:
    from broker.config.kafka_versions import VersionProfile
    from broker.services.marker_writer import Marker, MarkerWriter
    from broker.services.share_persister import RemoteCoordinators

TopicPartition = tuple[str, int]


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


class MarkerSender(Protocol):
    """Where the transaction coordinator's markers go (broker.services.transactions)."""

    async def write(self, markers: Sequence[Marker]) -> dict[TopicPartition, ErrorCode]: ...


@runtime_checkable
class ClusterView(Protocol):
    # True when partitions have replicas on other brokers (ZooKeeper mode): a coordinator owns the partitions
    # of its internal topic that it leads, a transaction's coordinator may be another broker, responses name
    # the leaders of partitions led elsewhere (KIP-951), and each broker forgets a deleted topic's offsets.
    replicated: bool

    @property
    def controller_id(self) -> int: ...

    # -- who is there ------------------------------------------------------------------------------------------
    async def wait_metadata(self) -> None: ...

    def nodes(self, endpoint: Any) -> list[Node]:
        """The live brokers, at their addresses for the listener the client came in on (`endpoint`)."""

    def node(self, node_id: int, endpoint: Any) -> Node | None: ...

    def is_alive(self, node_id: int) -> bool: ...

    # -- topics ------------------------------------------------------------------------------------------------
    def auto_create_topic(self, name: str) -> Topic | ErrorCode:
        """auto.create.topics.enable: the topic, or the error Metadata answers for it meanwhile."""

    def internal_topic(self, name: str) -> Topic | ErrorCode:
        """`__consumer_offsets` / `__transaction_state`, created on first use with Kafka's settings for it."""

    def create_internal_topics(self, topics: Sequence[tuple[str, int, int, Mapping[str, str]]]) -> None:
        """A streams group's internal topics, (name, partitions, replication factor, configs) each, created in
        the background (Kafka's AutoTopicCreationManager.createStreamsInternalTopics)."""

    def not_controller(self) -> bool:
        """Topic admin requests go to the controller; elsewhere they are NOT_CONTROLLER."""

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False, timeout_s: float = 30.0) -> CreatedTopic: ...

    async def delete_topic(self, name: str, timeout_s: float = 30.0) -> uuid.UUID: ...

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, *,
                                validate_only: bool = False, timeout_s: float = 30.0) -> None: ...

    async def topic_overrides(self, name: str) -> dict[str, str] | None: ...

    async def alter_topic_configs(self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
                                  ) -> None: ...

    # -- leaders and replicas ----------------------------------------------------------------------------------
    async def elect_leaders(self, partitions: list[TopicPartition] | None, unclean: bool
                            ) -> dict[TopicPartition, ErrorCode] | ErrorCode: ...

    async def alter_reassignments(self, targets: Mapping[TopicPartition, list[int] | None]
                                  ) -> dict[TopicPartition, tuple[ErrorCode, str | None]] | ErrorCode: ...

    def reassignments(self) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]: ...

    # -- transactions ------------------------------------------------------------------------------------------
    def transaction_markers(self, local: MarkerWriter) -> MarkerSender:
        """Where the transaction coordinator sends its markers (`local`: this broker's own partitions)."""

    # -- share groups ------------------------------------------------------------------------------------------
    def share_coordinators(self, versions: VersionProfile) -> RemoteCoordinators | None:
        """The other brokers' share coordinators (None: this broker coordinates every share partition's state)."""
