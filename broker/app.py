"""The Broker: every part of one broker, composed once from its config.

The server builds it when it starts and hands it to each request's handler (`ctx.broker`); the services
get what they need in their constructors (a clock, the topics, the flusher, the append signal, ...) and
never see the Broker. The background tasks start in `run`.
"""

from __future__ import annotations

import base64
import functools
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from broker.clock import Clock, VirtualClock, WallClock
from broker.config.dynamic import DynamicConfigs
from broker.config.kafka_versions import VersionProfile
from broker.config.options import BrokerConfig
from broker.log.durable_file import write_atomically
from broker.log.flusher import GroupFlusher
from broker.security.acl_store import AclStore
from broker.services.appends import AppendSignal
from broker.services.cluster_view import ClusterView
from broker.services.durability import Durability
from broker.services.retention import run_producer_expiration, run_retention
from broker.services.single_node import SingleNode
from broker.services.topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTION_STATE_TOPIC, Topic, TopicManager
from protocol.header import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.replica_manager import ReplicaManager
    from broker.cluster.zk_cluster import ZkCluster
    from broker.log.append import Appender
    from broker.security.acls import Authorizer
    from broker.security.listener_security import ListenerSecurity
    from broker.security.scram_credentials import ScramCredentialStore
    from broker.services.client_quotas import ClientQuotas
    from broker.services.delegation_tokens import DelegationTokens
    from broker.services.features import FeatureLevels
    from broker.services.groups import GroupService
    from broker.services.legacy_offsets import LegacyOffsets
    from broker.services.log_cleaner import LogCleaner
    from broker.services.marker_writer import MarkerWriter
    from broker.services.producer_ids import ProducerIds
    from broker.services.share_coordinator import ShareCoordinatorService
    from broker.services.share_persister import SharePersister
    from broker.services.transactions import TxnService
    from zk.store import BlockStore

log = logging.getLogger(__name__)


class _Service(Protocol):
    async def run(self) -> None: ...


_S = TypeVar("_S", bound=_Service)


@dataclass(slots=True)
class Endpoint:
    """What Metadata tells clients for the listener they came in on; shared by its connections, and
    updated when advertised.listeners changes (dynamic broker config)."""

    host: str
    port: int
    listener: int = 0  # index in config.listeners
    bound_host: str = ""  # advertised when the listener has no advertised address of its own
    bound_port: int = 0
    # broker.security.listener_security.ListenerSecurity of an SSL or SASL listener; None: PLAINTEXT
    security: ListenerSecurity | None = None


class Broker:
    def __init__(self, config: BrokerConfig, versions: VersionProfile, cluster: ZkCluster | None = None) -> None:
        """`cluster`: the broker's ZooKeeper-mode cluster (broker.cluster.zk_cluster.ZkCluster, already
        connected: it settled the broker id and cluster id); None for the embedded single broker."""
        config.validate()
        self.config = config
        self.node_id = config.broker_id
        self.versions = versions  # what ApiVersions advertises and the connections accept
        data_dir = Path(config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self.clock: Clock = VirtualClock() if config.virtual_time else WallClock()
        self.cluster_id = _load_cluster_id(data_dir, config)
        # Before the topics: their logs take the broker defaults, dynamic ones included.
        self.dynamic = DynamicConfigs(config, data_dir / "meta" / "dynamic-broker-configs.json")
        self.topics = TopicManager(config, self.clock.now_ms(), cluster=cluster is not None)
        self.endpoints: list[Endpoint] = []  # registered by the server's listeners
        self.dynamic.on_change += [self.topics.refresh_log_configs, self.readvertise]
        self.acl_store = AclStore(data_dir)
        if self.acl_store.exists():
            _ = self.authorizer  # unreadable ACLs stop the broker at start: it never runs without them
        self.flusher = GroupFlusher(config.fsync, root=data_dir)
        self.appends = AppendSignal()
        self._services: trio.Nursery | None = None
        # The cluster as this broker sees it: itself alone, or (broker.cluster) one of several on ZooKeeper,
        # whose replicas (leaders and followers) the replica manager keeps; the controller's requests to this
        # broker need those two (`zk_cluster`, `replicas`: None for a single broker).
        self.zk_cluster = cluster
        self.replicas: ReplicaManager | None = None
        self.cluster: ClusterView
        if cluster is None:
            self.cluster = SingleNode(config.broker_id, self.topics, self.clock, lambda: config.auto_create_topics,
                                      config.broker_rack)
        else:
            from broker.cluster.replica_manager import ReplicaManager

            self.cluster = cluster
            self.replicas = ReplicaManager(config.broker_id, self.topics, self.appends, self.appender, self.clock,
                                           config, cluster)
            self.appender.on_leader_append = self.replicas.leader_appended
            cluster.attach(self.topics, self.replicas)
            self.replicas.on_leadership.append(self._leadership)
            cluster.on_topics_deleted.append(self._topics_deleted)
        self.durability = Durability(self.flusher, self.replicas)
        if self.replicas is not None:  # a failed write takes the log directory offline (Durability.storage_failed)
            self.appender.on_storage_error = self.durability.storage_failed

    @functools.cached_property
    def authorizer(self) -> Authorizer:
        """The ACLs and the decisions made from them (built at start when ACLs are stored, else on first use)."""
        from broker.security.acls import Authorizer, parse_super_users

        return Authorizer(self.acl_store.load(), super_users=parse_super_users(self.config.super_users),
                          allow_if_no_acl=self.config.allow_everyone_if_no_acl_found)

    @functools.cached_property
    def block_store(self) -> BlockStore:
        """Where producer-id blocks are claimed: ZooKeeper, or a file in the data dir for a single broker."""
        return _block_store(self.config, Path(self.config.data_dir), self.zk_cluster)

    @functools.cached_property
    def producer_ids(self) -> ProducerIds:
        """InitProducerId's ids (built on first use, with the block store)."""
        from broker.services.producer_ids import ProducerIds

        return ProducerIds(self.block_store, self.config.broker_id,
                           claim_timeout=self.config.zookeeper_session_timeout_ms / 1000)

    @functools.cached_property
    def appender(self) -> Appender:
        """Every append to a partition goes through it (built on first use: the log modules load with the first
        partition, not at startup)."""
        from broker.log.append import Appender

        return Appender(self.appends.notify)

    # The coordinators are built, and started, on first use (or by the server a moment after start):
    # their modules cost ~100 ms of imports, which would otherwise delay the first answers (startup time).
    @functools.cached_property
    def groups(self) -> GroupService:
        from broker.services.groups import GroupService

        return self._start(GroupService(self.config, self.topics, self.clock, self.durability, self.appender,
                                        self.internal_topic, per_partition=self.cluster.replicated,
                                        group_config=lambda group_id, name: self.group_configs.get(group_id, name),
                                        share_persister=lambda: self.share_persister))

    @functools.cached_property
    def fetch_sessions(self) -> Any:
        """KIP-227: the fetch session cache (broker.services.fetch_sessions.FetchSessionCache)."""
        from broker.services.fetch_sessions import FetchSessionCache

        return FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots)

    @functools.cached_property
    def group_configs(self) -> Any:
        """Per-group configs (ConfigResource GROUP: share.auto.offset.reset, ...)."""
        from broker.config.group_configs import GroupConfigs

        path = Path(self.config.data_dir) / "meta" / "group-configs.json"
        if self.zk_cluster is None:
            return GroupConfigs(self.config, path, self.versions.release)
        configs = GroupConfigs(self.config, path, self.versions.release, initial=self.zk_cluster.group_configs)
        configs.store = self.zk_cluster.follow_group_configs(configs.replace)  # (a cluster's: in ZooKeeper)
        return configs

    @functools.cached_property
    def share_coordinator(self) -> ShareCoordinatorService:
        """KIP-932: the share coordinator (the share-partition states in `__share_group_state`)."""
        from broker.services.share_coordinator import ShareCoordinatorService

        return self._start(ShareCoordinatorService(self.config, self.topics, self.clock, self.durability,
                                                   self.appender, self.internal_topic,
                                                   per_partition=self.cluster.replicated))

    @functools.cached_property
    def share_persister(self) -> SharePersister:
        """How the share partitions and the group coordinator reach the share coordinator: this broker's own, or
        (in a cluster) the leader of the key's `__share_group_state` partition over the network."""
        from broker.services.share_persister import SharePersister

        return SharePersister(self.node_id, self.topics, lambda: self.share_coordinator,
                              self.cluster.share_coordinators(self.versions), self.internal_topic)

    @functools.cached_property
    def share_partitions(self) -> Any:
        """KIP-932: the share groups' partitions and sessions on the partitions this broker leads."""
        from broker.services.share_partitions import SharePartitions

        service = SharePartitions(self.config, self.topics, self.clock, self.appends, self.share_persister,
                                  self.group_configs.get)
        self.groups.share.on_member_gone = service.member_gone
        return self._start(service)

    @functools.cached_property
    def markers(self) -> MarkerWriter:
        """Transaction markers on this broker's partitions (the WriteTxnMarkers handler's)."""
        from broker.services.marker_writer import MarkerWriter

        return MarkerWriter(self.topics, self.durability, self.appender, self.clock, lambda: self.groups)

    @functools.cached_property
    def txns(self) -> TxnService:
        from broker.services.transactions import TxnService

        return self._start(TxnService(self.config, self.topics, self.clock, self.durability, self.appender,
                                      self.producer_ids, self.cluster.transaction_markers(self.markers),
                                      self.internal_topic, per_partition=self.cluster.replicated))

    def internal_topic(self, name: str) -> Topic | ErrorCode:
        """`__consumer_offsets` or `__transaction_state`, created on first use with Kafka's settings for it
        (in a cluster, through the controller: COORDINATOR_NOT_AVAILABLE until this broker knows it)."""
        return self.cluster.internal_topic(name)

    def _topics_deleted(self, names: list[str]) -> None:
        """Topics gone from the cluster: the groups coordinated here forget their offsets."""
        groups = self.__dict__.get("groups")  # a coordinator not started yet holds no group
        if groups is not None and self._services is not None:
            self._services.start_soon(groups.forget_topics, names)

    def _leadership(self, topic: str, index: int, leader_epoch: int | None) -> None:
        """The replica manager's news of a partition led here (or no longer): the coordinators load (or unload)
        theirs; the share partitions of a partition no longer led here go (its next leader reads their state)."""
        if topic == OFFSETS_TOPIC:
            self.groups.runtime.on_partition(index, leader_epoch)
        elif topic == TRANSACTION_STATE_TOPIC:
            self.txns.runtime.on_partition(index, leader_epoch)
        elif topic == SHARE_STATE_TOPIC:
            self.share_coordinator.runtime.on_partition(index, leader_epoch)
        elif leader_epoch is None and "share_partitions" in self.__dict__:
            self.share_partitions.leadership_lost(topic, index)

    @functools.cached_property
    def log_cleaner(self) -> LogCleaner:
        from broker.services.log_cleaner import LogCleaner

        return LogCleaner(self.config, self.topics, self.clock)

    @functools.cached_property
    def client_quotas(self) -> ClientQuotas:
        """Quotas of users, client ids and IPs (Alter/DescribeClientQuotas) and their enforcement: in the data
        dir for a single broker, in ZooKeeper for a cluster (read by its config change follower)."""
        from broker.services.client_quotas import ClientQuotas, FileQuotaStore, ZkQuotaStore

        kraft = self.versions.since("4.0")
        if self.replicas is None:
            store: Any = FileQuotaStore(Path(self.config.data_dir) / "meta" / "client-quotas.json")
        else:
            store = ZkQuotaStore(self.cluster.zk, self.cluster.client_quotas_at_start)
        quotas = ClientQuotas(store, kraft, self.config.quota_window_num, self.config.quota_window_size_seconds)
        if self.replicas is not None:
            self.cluster.on_quotas_changed = quotas.replace
        return quotas

    @functools.cached_property
    def delegation_tokens(self) -> DelegationTokens:
        """Delegation tokens (delegation.token.* settings): in the data dir for a single broker, in ZooKeeper's
        /delegation_token for a cluster (read by its token change follower)."""
        from broker.services.delegation_tokens import DelegationTokens, FileTokenStore, ZkTokenStore

        if self.replicas is None:
            store: Any = FileTokenStore(Path(self.config.data_dir) / "meta" / "delegation-tokens.json")
        else:
            store = ZkTokenStore(self.cluster.zk, self.cluster.delegation_tokens_at_start)
        tokens = DelegationTokens(self.config.security, store)
        if self.replicas is not None:
            self.cluster.on_tokens_changed = tokens.replace
        return tokens

    @functools.cached_property
    def features(self) -> FeatureLevels:
        """The finalized feature levels (ApiVersions, UpdateFeatures; group.version turns KIP-848 on)."""
        from broker.services.features import FeatureLevels

        return FeatureLevels(self.versions, Path(self.config.data_dir) / "meta" / "features.json", self.node_id)

    @functools.cached_property
    def scram_credentials(self) -> ScramCredentialStore:
        from broker.security.scram_credentials import ScramCredentialStore

        return ScramCredentialStore(Path(self.config.data_dir) / "meta" / "scram-credentials.json")

    @functools.cached_property
    def legacy_offsets(self) -> LegacyOffsets:
        """OffsetCommit/OffsetFetch v0's store (ZooKeeper's in a ZooKeeper-mode Kafka)."""
        from broker.services.legacy_offsets import LegacyOffsets

        return LegacyOffsets(Path(self.config.data_dir) / "meta" / "legacy-consumer-offsets.json")

    def _start(self, service: _S) -> _S:
        if self._services is not None:
            self._services.start_soon(service.run)
        return service

    async def run(self, nursery: trio.Nursery) -> None:
        """Start the background tasks in `nursery`; coordinators built from now on start there too."""
        self._services = nursery
        if self.replicas is not None:
            await nursery.start(self.replicas.run)
        nursery.start_soon(run_retention, self.topics, self.clock, self.config)
        nursery.start_soon(run_producer_expiration, self.topics, self.clock, self.config)
        if self.config.log_cleaner_enable:
            nursery.start_soon(self.log_cleaner.run)
        if self.config.security.get("delegation.token.secret.key") or \
                self.config.security.get("delegation.token.master.key"):
            nursery.start_soon(self._expire_delegation_tokens)

    async def _expire_delegation_tokens(self) -> None:
        """Kafka's expireTokens task: every delegation.token.expiry.check.interval.ms, expired tokens go."""
        tokens = self.delegation_tokens
        while True:
            await self.clock.sleep(tokens.check_interval_ms / 1000)
            try:
                await tokens.remove_expired(self.now_ms())
            except Exception:  # ZooKeeper away: the next round tries again
                log.exception("removing expired delegation tokens")

    def start_coordinators(self) -> None:
        _ = self.groups, self.txns  # first use starts them
        if self.features.level("share.version") > 0:
            _ = self.share_coordinator, self.share_partitions  # share groups: their state is loaded at start

    def readvertise(self) -> None:
        """Apply the listeners' advertised addresses to the endpoints Metadata reports."""
        for endpoint in self.endpoints:
            listener = self.config.listeners[endpoint.listener]
            endpoint.host = listener.advertised_host or endpoint.bound_host
            endpoint.port = listener.advertised_port or endpoint.bound_port

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def flush_all(self) -> None:
        for partition in self.topics.hosted():
            partition.log.flush()

    def close(self) -> None:
        if self.config.durable_data_dir:
            self.flush_all()
        self.topics.close(durable=self.config.durable_data_dir)
        block_store = self.__dict__.get("block_store")  # claimed no block: nothing to close
        if block_store is not None:
            block_store.close()


def _block_store(config: BrokerConfig, data_dir: Path, cluster: ZkCluster | None) -> BlockStore:
    from zk.store import LocalBlockStore, SessionBlockStore, ZooKeeperBlockStore

    if cluster is not None:
        return SessionBlockStore(cluster.zk)
    if config.zookeeper_connect:
        return ZooKeeperBlockStore(config.zookeeper_connect, timeout=config.zookeeper_session_timeout_ms / 1000)
    return LocalBlockStore(data_dir / "producer_id_block.json", sync=config.durable_data_dir)


def _load_cluster_id(data_dir: Path, config: BrokerConfig) -> str:
    """Kafka keeps cluster.id in meta.properties; a configured one must match the stored one."""
    path = data_dir / "meta.properties"
    stored: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                k, _, v = line.partition("=")
                stored[k.strip()] = v.strip()
    if "cluster.id" in stored:
        if config.cluster_id and config.cluster_id != stored["cluster.id"]:
            raise ValueError(f"cluster.id {config.cluster_id} does not match {stored['cluster.id']} "
                             f"stored in {path}")
        return stored["cluster.id"]
    cluster_id = config.cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={config.broker_id}\n",
                     sync=config.durable_data_dir)
    return cluster_id
