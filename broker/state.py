"""The broker's shared state: configuration, identity, topics, and the signals handlers wait on."""

from __future__ import annotations

import base64
import functools
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker import kafka_versions
from broker.acl_store import AclStore
from broker.acls import Authorizer, parse_super_users
from broker.clock import Clock, VirtualClock, WallClock
from broker.config import BrokerConfig
from broker.durable_file import write_atomically
from broker.dynamic_config import DynamicConfigs
from broker.log.flusher import GroupFlusher
from broker.log.producer_snapshot import save_producer_state
from broker.topics import TopicManager
from protocol.header import ErrorCode
from zk.pid_blocks import ProducerIdsExhaustedError
from zk.producer_ids import ProducerIdManager, ProducerIdUnavailableError
from zk.store import BlockStore, LocalBlockStore, ZooKeeperBlockStore

if TYPE_CHECKING:
    from broker.groups import GroupService
    from broker.log_cleaner import LogCleaner
    from broker.scram_credentials import ScramCredentialStore
    from broker.transactions import TxnService

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Endpoint:
    """What Metadata tells clients for the listener they came in on; shared by its connections, and
    updated when advertised.listeners changes (dynamic broker config)."""

    host: str
    port: int
    listener: int = 0  # index in config.listeners
    bound_host: str = ""  # advertised when the listener has no advertised address of its own
    bound_port: int = 0


class BrokerState:
    def __init__(self, config: BrokerConfig) -> None:
        config.validate()
        self.config = config
        self.node_id = config.broker_id
        data_dir = Path(config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self.clock: Clock = VirtualClock() if config.virtual_time else WallClock()
        self.cluster_id = _load_cluster_id(data_dir, config)
        self.versions = kafka_versions.resolve(config.kafka_version)  # what ApiVersions advertises
        # Before the topics: their logs take the broker defaults, dynamic ones included.
        self.dynamic = DynamicConfigs(config, data_dir / "meta" / "dynamic-broker-configs.json")
        self.topics = TopicManager(config, self.now_ms())
        self.endpoints: list[Endpoint] = []  # registered by the server's listeners
        self.dynamic.on_change += [self.topics.refresh_log_configs, self.readvertise]
        self.acl_store = AclStore(data_dir)
        self.authorizer = Authorizer(self.acl_store.load(), super_users=parse_super_users(config.super_users),
                                     allow_if_no_acl=config.allow_everyone_if_no_acl_found)
        self.flusher = GroupFlusher(config.fsync)
        self._appended = trio.Event()
        self.block_store = _block_store(config, data_dir)
        self.producer_ids = ProducerIdManager(self.block_store, config.broker_id,
                                              claim_timeout=config.zookeeper_session_timeout_ms / 1000)

    # The coordinators are built, and started in the services nursery, on first use (or by the server a
    # moment after start): loading their modules does not delay the first answers (startup time).
    services: trio.Nursery | None = None

    @functools.cached_property
    def groups(self) -> GroupService:
        from broker.groups import GroupService

        service = GroupService(self)
        if self.services is not None:
            self.services.start_soon(service.run)
        return service

    @functools.cached_property
    def txns(self) -> TxnService:
        from broker.transactions import TxnService

        service = TxnService(self)
        if self.services is not None:
            self.services.start_soon(service.run)
        return service

    @functools.cached_property
    def log_cleaner(self) -> LogCleaner:
        from broker.log_cleaner import LogCleaner

        return LogCleaner(self)

    @functools.cached_property
    def scram_credentials(self) -> ScramCredentialStore:
        from broker.scram_credentials import ScramCredentialStore

        return ScramCredentialStore(Path(self.config.data_dir) / "meta" / "scram-credentials.json")

    async def new_producer_id(self) -> tuple[ErrorCode, int]:
        """A fresh producer id from the current block, or the error InitProducerId answers without one."""
        try:
            return ErrorCode.NONE, await self.producer_ids.generate()
        except ProducerIdUnavailableError as exc:
            log.warning("no producer id available: %s", exc)
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1  # retriable: ZooKeeper is back soon
        except ProducerIdsExhaustedError:
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1

    def readvertise(self) -> None:
        """Apply the listeners' advertised addresses to the endpoints Metadata reports."""
        for endpoint in self.endpoints:
            listener = self.config.listeners[endpoint.listener]
            endpoint.host = listener.advertised_host or endpoint.bound_host
            endpoint.port = listener.advertised_port or endpoint.bound_port

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # Fetch long polls sleep on this; every append wakes them to re-check their partitions.
    def notify_append(self) -> None:
        self._appended.set()
        self._appended = trio.Event()

    @property
    def append_event(self) -> trio.Event:
        return self._appended

    async def run_retention(self) -> None:
        """Background task: delete old segments per topic retention settings."""
        interval = self.config.log_retention_check_interval_ms / 1000
        while True:
            await self.clock.sleep(interval)
            now = self.now_ms()
            for topic in self.topics:
                for partition in topic.partitions:
                    try:
                        deleted = partition.log.apply_retention(now)
                    except OSError as exc:
                        log.error("retention of %s-%d failed: %s", topic.name, partition.index, exc)
                        continue
                    if deleted:
                        log.info("retention deleted %d segment(s) of %s-%d", deleted, topic.name, partition.index)

    async def run_producer_expiration(self) -> None:
        """Background task: forget expired producer ids and snapshot producer state (bounds the replay
        after a crash)."""
        interval = self.config.producer_id_expiration_check_interval_ms / 1000
        while True:
            await self.clock.sleep(interval)
            now = self.now_ms()
            for topic in self.topics:
                for partition in topic.partitions:
                    partition.producers.expire(now, self.config.producer_id_expiration_ms)
                    partition.producers.remove_before(partition.log.log_start_offset)
                    try:
                        partition.log.flush()  # the snapshot must not cover data that a crash could lose
                        save_producer_state(partition.log, partition.producers)
                    except OSError as exc:
                        log.error("snapshot of %s-%d failed: %s", topic.name, partition.index, exc)

    def flush_all(self) -> None:
        for topic in self.topics:
            for partition in topic.partitions:
                partition.log.flush()

    def close(self) -> None:
        self.flush_all()
        self.topics.close()
        self.block_store.close()


def _block_store(config: BrokerConfig, data_dir: Path) -> BlockStore:
    if config.zookeeper_connect:
        return ZooKeeperBlockStore(config.zookeeper_connect, timeout=config.zookeeper_session_timeout_ms / 1000)
    return LocalBlockStore(data_dir / "producer_id_block.json")


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
    write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={config.broker_id}\n")
    return cluster_id
