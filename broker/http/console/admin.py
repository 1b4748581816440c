"""The console's Kafka admin client: what it shows and does goes as Kafka requests to the brokers, as Kafka's
AdminClient sends them (Metadata to any broker, ListOffsets, Fetch, Produce and DescribeProducers to each
partition's leader, CreateTopics to the controller, ListGroups and ListTransactions to every broker, the group
and transaction APIs to the coordinator FindCoordinator names), over the inter-broker listener with this
broker's own credentials (broker.cluster.client.BrokerClient). Each broker's versions come from its ApiVersions
answer: a request goes at the highest version both sides serve.

    admin = ClusterAdmin(broker)
    cluster = await admin.metadata()
    offsets = await admin.offsets(cluster, [("orders", 0)], LATEST)
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable
from protocol.header import ApiKey, ErrorCode

if TYPE_CHECKING:
    from broker.app import Broker

log = logging.getLogger(__name__)

CLIENT_ID = "minibroker-console"
EARLIEST, LATEST = -2, -1  # ListOffsets' special timestamps
TIMEOUT_S = 15.0

# The highest version of each API the console speaks (its fields are filled for these).
MAX_VERSIONS = {
    ApiKey.API_VERSIONS: 0, ApiKey.METADATA: 12, ApiKey.LIST_OFFSETS: 7, ApiKey.FETCH: 12, ApiKey.PRODUCE: 9,
    ApiKey.DESCRIBE_CONFIGS: 4, ApiKey.DESCRIBE_LOG_DIRS: 4, ApiKey.CREATE_TOPICS: 7, ApiKey.DELETE_TOPICS: 5,
    ApiKey.CREATE_PARTITIONS: 3, ApiKey.LIST_GROUPS: 5, ApiKey.FIND_COORDINATOR: 4, ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.CONSUMER_GROUP_DESCRIBE: 0, ApiKey.SHARE_GROUP_DESCRIBE: 1, ApiKey.STREAMS_GROUP_DESCRIBE: 0,
    ApiKey.OFFSET_FETCH: 8, ApiKey.OFFSET_COMMIT: 8, ApiKey.OFFSET_DELETE: 0,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: 0, ApiKey.LIST_TRANSACTIONS: 0, ApiKey.DESCRIBE_TRANSACTIONS: 0,
    ApiKey.DESCRIBE_PRODUCERS: 0, ApiKey.DESCRIBE_ACLS: 1, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
}
# The lowest the console's requests make sense at (a field they need appears there).
MIN_VERSIONS = {ApiKey.LIST_GROUPS: 0, ApiKey.FIND_COORDINATOR: 4, ApiKey.OFFSET_FETCH: 8, ApiKey.FETCH: 4,
                ApiKey.PRODUCE: 3, ApiKey.METADATA: 1, ApiKey.LIST_OFFSETS: 1, ApiKey.DESCRIBE_ACLS: 1}

COORDINATOR_GROUP, COORDINATOR_TRANSACTION = 0, 1
CONFIG_TOPIC = 2
ACL_ANY = 1  # resource type, pattern type, operation and permission "ANY" in a DescribeAcls filter

T = TypeVar("T")


class AdminError(Exception):
    """A request the console could not make or that the broker refused: the message says which and why."""

    def __init__(self, message: str, error: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.error = error


def check(code: int, what: str, message: str | None = None) -> None:
    """AdminError for a non-zero error code, named as Kafka names it."""
    if code:
        error = ErrorCode(code) if code in ErrorCode._value2member_map_ else None
        name = error.name if error is not None else f"error {code}"
        raise AdminError(f"{what}: {name}" + (f" ({message})" if message else ""), error)


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionMeta:
    index: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    error: str | None = None


@dataclass
class TopicMeta:
    name: str
    topic_id: str
    internal: bool
    partitions: list[PartitionMeta]
    error: str | None = None


@dataclass
class ClusterMeta:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, Node]
    topics: dict[str, TopicMeta]

    def partition(self, topic: str, index: int) -> PartitionMeta:
        meta = self.topics.get(topic)
        if meta is None or meta.error:
            raise AdminError(f"no topic {topic}" + (f" ({meta.error})" if meta is not None else ""))
        for p in meta.partitions:
            if p.index == index:
                return p
        raise AdminError(f"no partition {topic}-{index}")


@dataclass
class GroupListing:
    group_id: str
    group_type: str  # classic, consumer, share, streams
    state: str
    protocol_type: str
    coordinator: int


@dataclass
class GroupMember:
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None = None
    assigned: list[tuple[str, int]] = field(default_factory=list)
    detail: str = ""  # the member's epoch, subscriptions, tasks ... as the group type has them


@dataclass
class GroupDescription:
    group_id: str
    group_type: str
    state: str
    coordinator: int
    protocol: str = ""
    epoch: int | None = None
    members: list[GroupMember] = field(default_factory=list)
    error: str | None = None


@dataclass
class Transaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_ms: int
    partitions: list[tuple[str, int]]
    coordinator: int


class _NodeConnection:
    """A connection to one broker, with the API versions it serves (asked once)."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self.versions: dict[int, tuple[int, int]] | None = None

    async def request(self, api: ApiKey, body: Mapping[str, Any], timeout: float | None) -> Any:
        if self.versions is None:
            answer = await self.client.request(ApiKey.API_VERSIONS, 0, {})
            check(answer.error_code, "ApiVersions")
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        served = self.versions.get(int(api))
        if served is None:
            raise AdminError(f"broker {self.client.name} does not serve {api.name}")
        version = min(served[1], MAX_VERSIONS[api])
        if version < max(served[0], MIN_VERSIONS.get(api, 0)):
            raise AdminError(f"broker {self.client.name} serves {api.name} v{served[0]}-{served[1]}; the console "
                             f"needs v{MIN_VERSIONS.get(api, 0)}-{MAX_VERSIONS[api]}")
        return await self.client.request(api, version, body, timeout=timeout)

    def version(self, api: ApiKey) -> int:
        assert self.versions is not None
        return min(self.versions[int(api)][1], MAX_VERSIONS[api])


class ClusterAdmin:
    def __init__(self, broker: Broker, client_id: str = CLIENT_ID) -> None:
        self.broker = broker
        self.client_id = client_id
        self._connections: dict[int, _NodeConnection] = {}
        self._security, self._listener, self._unusable = _client_side(broker)

    # -- connections -------------------------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return int(self.broker.node_id)

    def address(self, node_id: int) -> tuple[str, int] | None:
        """Where broker `node_id` takes the cluster's own connections (this one: its own listener)."""
        if node_id == self.node_id:
            for endpoint in self.broker.endpoints:
                if self._listener is None or self.broker.config.listeners[endpoint.listener].name == self._listener:
                    host = endpoint.bound_host
                    return ("127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host,
                            endpoint.bound_port)
            return None
        if self.broker.zk_cluster is None:
            return None
        return self.broker.zk_cluster.inter_broker_address(node_id)

    def _connection(self, node_id: int) -> _NodeConnection:
        if self._unusable is not None:
            raise AdminError(self._unusable)
        address = self.address(node_id)
        if address is None:
            raise AdminError(f"broker {node_id} is not reachable (not alive, or without the inter-broker listener)")
        connection = self._connections.get(node_id)
        if connection is None:
            connection = self._connections[node_id] = _NodeConnection(self._client(node_id, address))
        else:
            connection.client.retarget(*address)
        return connection

    def _client(self, node_id: int, address: tuple[str, int]) -> BrokerClient:
        return BrokerClient(f"broker {node_id}", *address, client_id=self.client_id, timeout=TIMEOUT_S,
                            security=self._security)

    def session(self, node_id: int) -> Session:
        """A connection of its own (a live tail's long polls must not hold up the pages' requests)."""
        if self._unusable is not None:
            raise AdminError(self._unusable)
        address = self.address(node_id)
        if address is None:
            raise AdminError(f"broker {node_id} is not reachable")
        return Session(_NodeConnection(self._client(node_id, address)))

    async def call(self, node_id: int, api: ApiKey, body: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        try:
            return await self._connection(node_id).request(api, body, timeout)
        except BrokerUnavailable as exc:
            raise AdminError(f"{api.name} to broker {node_id}: {exc}") from None

    async def ask_each(self, requests: Mapping[int, tuple[ApiKey, Mapping[str, Any]]]) -> dict[int, Any]:
        """One request to each of several brokers at once: the answers of those that answered (the others are
        logged and left out: a page shows what it could get)."""
        answers: dict[int, Any] = {}

        async def ask(node_id: int, api: ApiKey, body: Mapping[str, Any]) -> None:
            try:
                answers[node_id] = await self.call(node_id, api, body)
            except AdminError as exc:
                log.info("console: %s", exc)

        await gather([functools.partial(ask, node, api, body) for node, (api, body) in requests.items()])
        return answers

    async def aclose(self) -> None:
        for connection in self._connections.values():
            await connection.client.aclose()
        self._connections.clear()

    # -- cluster and topics ------------------------------------------------------------------------------------
    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMeta:
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False}
        answer = await self.call(self.node_id, ApiKey.METADATA, body)
        brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in answer.brokers}
        out: dict[str, TopicMeta] = {}
        for t in answer.topics:
            partitions = [PartitionMeta(p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes),
                                        list(p.isr_nodes), list(p.offline_replicas or []), _name(p.error_code))
                          for p in sorted(t.partitions, key=lambda p: p.partition_index)]
            out[t.name] = TopicMeta(t.name, str(t.topic_id) if t.topic_id else "", bool(t.is_internal), partitions,
                                    _name(t.error_code))
        return ClusterMeta(answer.cluster_id, answer.controller_id, brokers, dict(sorted(out.items())))

    async def offsets(self, cluster: ClusterMeta, partitions: Iterable[tuple[str, int]], timestamp: int,
                      *, committed: bool = False) -> dict[tuple[str, int], int | None]:
        """ListOffsets at each partition's leader: the offset for `timestamp` (EARLIEST, LATEST or ms); None
        where the broker refused (no leader, an error). `committed`: read_committed (the last stable offset)."""
        partitions = list(partitions)
        out: dict[tuple[str, int], int | None] = dict.fromkeys(partitions)
        answers = await self.ask_each({leader: (ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": 1 if committed else 0,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                                   "timestamp": timestamp} for p in ps]} for t, ps in by_topic(tps)]})
            for leader, tps in by_leader(cluster, partitions).items()})
        for answer in answers.values():
            for t in answer.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = None if p.error_code or p.offset < 0 else p.offset
        return out

    async def log_sizes(self, cluster: ClusterMeta) -> dict[tuple[str, int, int], int]:
        """{(topic, partition, broker): bytes} from every broker's DescribeLogDirs."""
        answers = await self.ask_each({n: (ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}) for n in cluster.brokers})
        return {(t.name, p.partition_index, node): p.partition_size for node, answer in answers.items()
                for result in answer.results for t in result.topics for p in t.partitions}

    async def topic_configs(self, topic: str) -> list[dict[str, Any]]:
        answer = await self.call(self.node_id, ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": CONFIG_TOPIC, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        result = answer.results[0]
        check(result.error_code, f"DescribeConfigs {topic}", result.error_message)
        return [{"name": c.name, "value": None if c.is_sensitive else c.value,
                 "source": _config_source(c.config_source), "read_only": c.read_only, "sensitive": c.is_sensitive}
                for c in sorted(result.configs, key=lambda c: c.name)]

    async def create_topic(self, name: str, partitions: int, replication_factor: int,
                           configs: Mapping[str, str]) -> None:
        cluster = await self.metadata([])
        answer = await self.call(self._controller(cluster), ApiKey.CREATE_TOPICS, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                        "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "timeout_ms": int(TIMEOUT_S * 1000), "validate_only": False})
        result = answer.topics[0]
        check(result.error_code, f"CreateTopics {name}", result.error_message)

    async def delete_topic(self, name: str) -> None:
        cluster = await self.metadata([])
        controller = self._controller(cluster)
        body: dict[str, Any] = {"topic_names": [name], "topics": [{"name": name}], "timeout_ms": int(TIMEOUT_S * 1000)}
        answer = await self.call(controller, ApiKey.DELETE_TOPICS, body)
        result = answer.responses[0]
        check(result.error_code, f"DeleteTopics {name}", getattr(result, "error_message", None))

    async def create_partitions(self, name: str, count: int) -> None:
        cluster = await self.metadata([])
        answer = await self.call(self._controller(cluster), ApiKey.CREATE_PARTITIONS, {
            "topics": [{"name": name, "count": count, "assignments": None}], "timeout_ms": int(TIMEOUT_S * 1000),
            "validate_only": False})
        result = answer.results[0]
        check(result.error_code, f"CreatePartitions {name}", result.error_message)

    def _controller(self, cluster: ClusterMeta) -> int:
        return cluster.controller_id if cluster.controller_id >= 0 else self.node_id

    # -- records -----------------------------------------------------------------------------------------------
    async def produce(self, cluster: ClusterMeta, topic: str, partition: int, batch: bytes) -> int:
        """Produce one batch with acks=all to the partition's leader; its base offset."""
        leader = cluster.partition(topic, partition).leader
        if leader < 0:
            raise AdminError(f"{topic}-{partition} has no leader", ErrorCode.LEADER_NOT_AVAILABLE)
        answer = await self.call(leader, ApiKey.PRODUCE, {
            "transactional_id": None, "acks": -1, "timeout_ms": int(TIMEOUT_S * 1000),
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        result = answer.responses[0].partition_responses[0]
        check(result.error_code, f"Produce {topic}-{partition}", result.error_message)
        return int(result.base_offset)

    async def fetch(self, cluster: ClusterMeta, topic: str, partition: int, offset: int, max_bytes: int) -> Any:
        """One Fetch (no long poll) at the partition's leader, on the pages' connection to it."""
        return await self._leader_session(cluster, topic, partition).fetch(topic, partition, offset,
                                                                          max_bytes=max_bytes)

    async def aborted(self, cluster: ClusterMeta, topic: str, partition: int, offset: int,
                      max_bytes: int) -> list[tuple[int, int]]:
        """The aborted transactions from `offset` on, at the partition's leader (Session.aborted)."""
        return await self._leader_session(cluster, topic, partition).aborted(topic, partition, offset, max_bytes)

    def _leader_session(self, cluster: ClusterMeta, topic: str, partition: int) -> Session:
        leader = cluster.partition(topic, partition).leader
        if leader < 0:
            raise AdminError(f"{topic}-{partition} has no leader", ErrorCode.LEADER_NOT_AVAILABLE)
        return Session(self._connection(leader))

    # -- groups ------------------------------------------------------------------------------------------------
    async def list_groups(self, cluster: ClusterMeta) -> list[GroupListing]:
        """Every broker's groups (each lists those it coordinates), of every type."""
        answers = await self.ask_each({n: (ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": []})
                                       for n in cluster.brokers})
        found = []
        for node, answer in answers.items():
            for g in answer.groups:
                kind = getattr(g, "group_type", None) or ("classic" if g.protocol_type in ("consumer", "")
                                                          else g.protocol_type)
                found.append(GroupListing(g.group_id, kind.lower(), getattr(g, "group_state", None) or "",
                                          g.protocol_type, node))
        return sorted(found, key=lambda g: g.group_id)

    async def coordinator(self, key: str, key_type: int = COORDINATOR_GROUP) -> int:
        answer = await self.call(self.node_id, ApiKey.FIND_COORDINATOR, {"key_type": key_type,
                                                                         "coordinator_keys": [key]})
        found = answer.coordinators[0]
        check(found.error_code, f"FindCoordinator {key}", found.error_message)
        return int(found.node_id)

    async def describe_group(self, group_id: str, group_type: str) -> GroupDescription:
        node = await self.coordinator(group_id)
        if group_type in ("consumer", "share"):
            return await self._describe_kip848_group(node, group_id, group_type)
        if group_type == "streams":
            return await self._describe_streams_group(node, group_id)
        answer = await self.call(node, ApiKey.DESCRIBE_GROUPS, {"groups": [group_id],
                                                                "include_authorized_operations": False})
        g = answer.groups[0]
        check(g.error_code, f"DescribeGroups {group_id}")
        members = []
        for m in g.members:
            assigned = consumer_assignment(m.member_assignment) if g.protocol_type == "consumer" else []
            members.append(GroupMember(m.member_id, m.client_id, m.client_host, m.group_instance_id, assigned))
        return GroupDescription(group_id, "classic", g.group_state, node, g.protocol_data or "", None, members)

    async def _describe_kip848_group(self, node: int, group_id: str, group_type: str) -> GroupDescription:
        """A consumer group (ConsumerGroupDescribe) or a share group (ShareGroupDescribe): the same answer's shape."""
        api = ApiKey.CONSUMER_GROUP_DESCRIBE if group_type == "consumer" else ApiKey.SHARE_GROUP_DESCRIBE
        answer = await self.call(node, api, {"group_ids": [group_id], "include_authorized_operations": False})
        g = answer.groups[0]
        check(g.error_code, f"{api.name} {group_id}", g.error_message)
        members = []
        for m in g.members:
            subscribed = ", ".join(m.subscribed_topic_names or []) or getattr(m, "subscribed_topic_regex", None)
            members.append(GroupMember(m.member_id, m.client_id, m.client_host, getattr(m, "instance_id", None),
                                       sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions
                                              for p in tp.partitions),
                                       f"epoch {m.member_epoch}; subscribed to {subscribed or '-'}"))
        return GroupDescription(group_id, group_type, g.group_state, node, g.assignor_name, g.group_epoch, members)

    async def _describe_streams_group(self, node: int, group_id: str) -> GroupDescription:
        answer = await self.call(node, ApiKey.STREAMS_GROUP_DESCRIBE, {"group_ids": [group_id],
                                                                       "include_authorized_operations": False})
        g = answer.groups[0]
        check(g.error_code, f"StreamsGroupDescribe {group_id}", g.error_message)
        members = []
        for m in g.members:
            tasks = "; ".join(f"{kind} {t.subtopology_id}:{list(t.partitions)}" for kind in ("active", "standby",
                                                                                         "warmup")
                              for t in getattr(m.assignment, f"{kind}_tasks", None) or [])
            members.append(GroupMember(m.member_id, m.client_id, m.client_host, m.instance_id, [],
                                       f"epoch {m.member_epoch}; process {m.process_id}; {tasks or 'no tasks'}"))
        return GroupDescription(group_id, "streams", g.group_state, node, "", g.group_epoch, members)

    async def committed(self, group_id: str, group_type: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets (a share group's start offsets)."""
        node = await self.coordinator(group_id)
        if group_type == "share":
            answer = await self.call(node, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                     {"groups": [{"group_id": group_id, "topics": None}]})
            g = answer.groups[0]
            check(g.error_code, f"DescribeShareGroupOffsets {group_id}", g.error_message)
            return {(t.topic_name, p.partition_index): p.start_offset for t in g.topics for p in t.partitions
                    if not p.error_code and p.start_offset >= 0}
        answer = await self.call(node, ApiKey.OFFSET_FETCH, {
            "groups": [{"group_id": group_id, "member_id": None, "member_epoch": -1, "topics": None}],
            "require_stable": False})
        g = answer.groups[0]
        check(g.error_code, f"OffsetFetch {group_id}")
        return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
                if not p.error_code and p.committed_offset >= 0}

    async def commit_offsets(self, group_id: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Set an empty group's offsets (kafka-consumer-groups --reset-offsets: OffsetCommit outside a
        generation; a group with members refuses it)."""
        node = await self.coordinator(group_id)
        answer = await self.call(node, ApiKey.OFFSET_COMMIT, {
            "group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "committed_offset": offsets[(t, p)],
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}
                                                  for p in ps]} for t, ps in by_topic(sorted(offsets))]})
        for t in answer.topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetCommit {group_id} {t.name}-{p.partition_index}")

    async def delete_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        node = await self.coordinator(group_id)
        answer = await self.call(node, ApiKey.OFFSET_DELETE, {"group_id": group_id, "topics": [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in by_topic(sorted(partitions))]})
        check(answer.error_code, f"OffsetDelete {group_id}")
        for t in answer.topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetDelete {group_id} {t.name}-{p.partition_index}")

    # -- transactions and producers ------------------------------------------------------------------------------
    async def transactions(self, cluster: ClusterMeta) -> list[Transaction]:
        """Every coordinator's transactions (ListTransactions to every broker, then DescribeTransactions)."""
        listed = await self.ask_each({n: (ApiKey.LIST_TRANSACTIONS, {
            "state_filters": [], "producer_id_filters": [], "duration_filter": -1}) for n in cluster.brokers})
        described = await self.ask_each({node: (ApiKey.DESCRIBE_TRANSACTIONS, {
            "transactional_ids": [t.transactional_id for t in answer.transaction_states]})
            for node, answer in listed.items() if answer.transaction_states})
        found = [Transaction(t.transactional_id, t.producer_id, t.producer_epoch, t.transaction_state,
                             t.transaction_timeout_ms, t.transaction_start_time_ms,
                             sorted((tp.topic, p) for tp in t.topics for p in tp.partitions), node)
                 for node, answer in described.items() for t in answer.transaction_states
                 if not t.error_code]  # an error: it moved to another coordinator since it was listed
        return sorted(found, key=lambda t: t.transactional_id)

    async def producers(self, cluster: ClusterMeta, partitions: Iterable[tuple[str, int]]
                        ) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """DescribeProducers at each partition's leader: the active producers of each partition."""
        answers = await self.ask_each({leader: (ApiKey.DESCRIBE_PRODUCERS, {
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic(tps)]})
            for leader, tps in by_leader(cluster, partitions).items()})
        return {(t.name, p.partition_index): [
            {"producer_id": a.producer_id, "producer_epoch": a.producer_epoch, "last_sequence": a.last_sequence,
             "last_timestamp": a.last_timestamp, "coordinator_epoch": a.coordinator_epoch,
             "current_txn_start_offset": a.current_txn_start_offset} for a in p.active_producers]
            for answer in answers.values() for t in answer.topics for p in t.partitions if not p.error_code}

    # -- security ----------------------------------------------------------------------------------------------
    async def acls(self) -> list[dict[str, Any]]:
        answer = await self.call(self.node_id, ApiKey.DESCRIBE_ACLS, {
            "resource_type_filter": ACL_ANY, "resource_name_filter": None, "pattern_type_filter": ACL_ANY,
            "principal_filter": None, "host_filter": None, "operation": ACL_ANY, "permission_type": ACL_ANY})
        check(answer.error_code, "DescribeAcls", answer.error_message)
        return [{"resource_type": r.resource_type, "resource_name": r.resource_name, "pattern_type": r.pattern_type,
                 "principal": a.principal, "host": a.host, "operation": a.operation,
                 "permission_type": a.permission_type} for r in answer.resources for a in r.acls]

    async def scram_users(self) -> list[dict[str, Any]]:
        answer = await self.call(self.node_id, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": None})
        check(answer.error_code, "DescribeUserScramCredentials", answer.error_message)
        return [{"user": r.user, "credentials": [(c.mechanism, c.iterations) for c in r.credential_infos]}
                for r in answer.results if not r.error_code]


class Session:
    """A connection of the console's own to one broker (a live tail's): Fetch long polls."""

    def __init__(self, connection: _NodeConnection) -> None:
        self._connection = connection

    async def fetch(self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 0,
                    max_bytes: int = 1024 * 1024, committed: bool = False) -> Any:
        """One partition's Fetch answer (its records, high watermark, aborted transactions)."""
        try:
            answer = await self._connection.request(ApiKey.FETCH, {
                "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
                "isolation_level": 1 if committed else 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [{
                    "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                    "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
                "forgotten_topics_data": [], "rack_id": ""}, max_wait_ms / 1000 + TIMEOUT_S)
        except BrokerUnavailable as exc:
            raise AdminError(f"Fetch {topic}-{partition}: {exc}") from None
        check(answer.error_code, f"Fetch {topic}-{partition}")
        result = answer.responses[0].partitions[0]
        check(result.error_code, f"Fetch {topic}-{partition}")
        return result

    async def aborted(self, topic: str, partition: int, offset: int, max_bytes: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions from `offset` on: a read_committed Fetch's list
        (Kafka gives it to read_committed fetches only)."""
        result = await self.fetch(topic, partition, offset, max_bytes=max_bytes, committed=True)
        return [(a.producer_id, a.first_offset) for a in result.aborted_transactions or []]

    async def aclose(self) -> None:
        await self._connection.client.aclose()


def by_leader(cluster: ClusterMeta, partitions: Iterable[tuple[str, int]]) -> dict[int, list[tuple[str, int]]]:
    """The partitions grouped by their leader (those without one left out)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for topic, index in partitions:
        meta = cluster.topics.get(topic)
        leader = next((p.leader for p in meta.partitions if p.index == index), -1) if meta is not None else -1
        if leader >= 0:
            out.setdefault(leader, []).append((topic, index))
    return out


def by_topic(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """(topic, its partitions), topics in first-seen order."""
    out: dict[str, list[int]] = {}
    for topic, index in partitions:
        out.setdefault(topic, []).append(index)
    return list(out.items())


async def gather(calls: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run the calls concurrently (one per broker) and wait for all."""
    if not calls:
        return
    if len(calls) == 1:
        await calls[0]()
        return
    async with trio.open_nursery() as nursery:
        for call in calls:
            nursery.start_soon(call)


def consumer_assignment(data: bytes | None) -> list[tuple[str, int]]:
    """The partitions of a classic consumer group member's assignment (Kafka's ConsumerProtocolAssignment)."""
    if not data or len(data) < 2:
        return []
    from protocol.schema import message

    try:
        version = int.from_bytes(data[:2], "big", signed=True)
        assignment = message("ConsumerProtocolAssignment").decode(min(max(version, 0), 3), bytes(data), 2)
    except Exception:  # noqa: BLE001 - a member's own bytes (another protocol's): shown as unknown
        return []
    return sorted((t.topic, p) for t in assignment.assigned_partitions for p in t.partitions)


def _name(code: int) -> str | None:
    if not code:
        return None
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else f"error {code}"


_CONFIG_SOURCES = {1: "dynamic topic", 2: "dynamic broker", 3: "dynamic default broker", 4: "static broker",
                   5: "default", 6: "dynamic broker logger", 7: "client metrics", 8: "group"}


def _config_source(code: int) -> str:
    return _CONFIG_SOURCES.get(code, "unknown")


def _client_side(broker: Broker) -> tuple[Any, str | None, str | None]:
    """TLS and SASL of the console's connections (the cluster's own, as the brokers connect to each other), the
    listener they go to, and why they cannot be made (None: they can)."""
    if broker.zk_cluster is not None:
        return broker.zk_cluster.client_security, broker.zk_cluster.metadata.inter_broker_listener, None
    config = broker.config
    try:
        listener = config.inter_broker_listener()
    except ValueError:  # a single broker with no listener of security.inter.broker.protocol: its first one
        listener = config.listeners[0]
    protocol = config.listener_protocol(listener)
    if protocol == "PLAINTEXT":
        return None, listener.name, None
    from broker.security.client_side import client_security
    from broker.security.listener_security import SecurityConfigError, SecurityProtocol

    try:
        return client_security(listener.name, SecurityProtocol(protocol), config.security), listener.name, None
    except SecurityConfigError as exc:
        return None, listener.name, f"the console connects to listener {listener.name} as the broker's own " \
                                    f"connections do, and cannot: {exc}"
