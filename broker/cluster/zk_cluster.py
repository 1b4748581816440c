"""A broker of a ZooKeeper-mode cluster (`--zookeeper`): its membership, the metadata it learns from the
controller, and what it does when told (Kafka 3.x's KafkaServer with its KafkaZkClient, MetadataCache and
the control-request side of ReplicaManager).

- Start: connect to ZooKeeper, make sure of the persistent paths, take or create /cluster/id (it must match
  meta.properties), and take the broker id (configured, stored in meta.properties, or generated from
  /brokers/seqid).
- Once the listeners are bound: register the ephemeral /brokers/ids/<id> (an id another live broker holds
  is refused with a clear error) and run for controller through /controller; the controller
  (broker.cluster.controller) then runs in this broker while it holds the place.
- UpdateMetadata fills the metadata cache (live brokers and their endpoints per listener, every partition's
  leader, epoch, replicas and ISR); LeaderAndIsr makes this broker a partition's leader or follower
  (ReplicaManager: replica_manager.py); StopReplica stops (and maybe deletes) a replica. Each is refused
  from a controller older than the newest one seen (STALE_CONTROLLER_EPOCH).
- A lost ZooKeeper session (expired) registers again and runs for controller again; a broker that stops
  cleanly asks the controller to move its leaderships first (ControlledShutdown).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.cluster.controller import Controller, ControllerSettings, Resigned
from broker.cluster.controller_events import AlterReassignments, ElectLeaders
from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.topic_admin import ZkTopicAdmin
from broker.config.options import BrokerConfig
from broker.security.client_side import inter_broker_security
from broker.services.cluster_view import CreatedTopic
from broker.services.topics import TRANSACTION_STATE_TOPIC, PartitionMetadata, Topic, TopicManager
from protocol.header import ApiKey, ErrorCode
from zk import znodes as z
from zk.errors import ControllerMovedError, ZooKeeperError
from zk.kafka_zk import KafkaZkClient
from zk.session import SessionState, ZkSession
from zk.znodes import BrokerRegistration, Endpoint

if TYPE_CHECKING:
    from broker.cluster.marker_channel import MarkerChannel
    from broker.cluster.share_state_channel import ShareStateChannel
    from broker.config.group_configs import GroupConfigStore
    from broker.config.kafka_versions import VersionProfile
    from broker.services.marker_writer import MarkerWriter

log = logging.getLogger(__name__)

SECURITY_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


class ZkGroupConfigStore:
    """Group configs in ZooKeeper (/config/groups/<group>, changes announced under /config/changes)."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    async def save(self, group_id: str, overrides: Mapping[str, str]) -> None:
        from broker.config.group_configs import GroupConfigStoreError

        try:
            await self.zk.change_entity_config(z.ConfigType.GROUP, group_id, overrides)
        except ZooKeeperError as exc:
            raise GroupConfigStoreError(f"ZooKeeper: {exc}") from exc
CONTROLLED_SHUTDOWN_VERSION = 3
ALTER_PARTITION_VERSION = 3


class ReplicaHooks(Protocol):
    """What the cluster tells the replica manager (broker.cluster.replica_manager) of new metadata, and asks it."""

    log_dir_offline: str | None  # why this broker's log directory failed (None: online)

    def topic_removed(self, name: str) -> None: ...

    def metadata_updated(self) -> None: ...


class ZkCluster:
    def __init__(self, config: BrokerConfig, session: ZkSession, zk: KafkaZkClient) -> None:
        self.config = config
        self.session = session
        self.zk = zk
        self.node_id = config.broker_id
        self.broker_epoch = -1  # our registration's czxid
        self.controller: Controller | None = None  # while this broker is the controller
        self._registration: BrokerRegistration | None = None
        self._stopping = False
        self._nursery: trio.Nursery | None = None  # run()'s: tasks that live as long as the registration
        self.on_topics_deleted: list[Callable[[list[str]], None]] = []  # topics gone from the cluster
        # Client quotas (/config/users, /config/clients, /config/ips): read at start, then at each change.
        self.client_quotas_at_start: dict[Any, dict[str, float]] = {}
        self.on_quotas_changed: Any = None  # callback(all quotas), set by the broker's quota service
        # Delegation tokens (/delegation_token/tokens): read at start, then at each token change notification.
        self.delegation_tokens_at_start: list[Any] = []
        self.on_tokens_changed: Any = None  # callback(all tokens), set by the broker's token service
        # Group configs (/config/groups): read at start, kept current at each change (for the broker's
        # GroupConfigs, built on first use, which `follow_group_configs` also tells).
        self.group_configs: dict[str, dict[str, str]] = {}
        self._group_configs_changed: Callable[[str, dict[str, str]], None] | None = None
        self._verify_clients: dict[int, BrokerClient] = {}  # KIP-890 verification, per coordinator broker
        # TLS and SASL of this broker's own connections to the others (None: a PLAINTEXT inter-broker listener).
        security = inter_broker_security(config)
        self.client_security = security if security.ssl_context is not None or security.mechanism else None
        self.metadata = MetadataCache(config, self.client_security)
        # Set by attach(): the broker's topics, its replica manager, and the topic admin on them.
        self._topics: TopicManager | None = None
        self._replicas: ReplicaHooks | None = None
        self._admin: ZkTopicAdmin | None = None
        # Who is there, as the controller tells it (ClusterView).
        self.wait_metadata = self.metadata.wait_metadata
        self.nodes = self.metadata.nodes
        self.node = self.metadata.node
        self.is_alive = self.metadata.is_alive
        self.inter_broker_address = self.metadata.inter_broker_address

    # -- start ------------------------------------------------------------------------------------------------
    @classmethod
    async def connect(cls, config: BrokerConfig) -> ZkCluster:
        """Join the cluster's ZooKeeper: cluster id and broker id settled (written into `config`)."""
        if config.broker_id > config.reserved_broker_max_id and config.broker_id_generation_enable:
            # Kafka's check of a configured id: generated ids are above reserved.broker.max.id.
            raise ValueError(f"broker.id {config.broker_id} must be between 0 and {config.reserved_broker_max_id} "
                             "(reserved.broker.max.id) when broker.id.generation.enable is true")
        timeout = config.zookeeper_connection_timeout_ms / 1000
        session = await ZkSession.connect(config.zookeeper_connect, timeout=timeout,
                                          session_timeout=config.zookeeper_session_timeout_ms / 1000)
        try:
            zk = KafkaZkClient(session)
            await zk.create_top_level_paths()
            stored = _read_meta_properties(Path(config.data_dir))
            proposed = stored.get("cluster.id") or config.cluster_id or _new_cluster_id()
            cluster_id = await zk.create_or_get_cluster_id(proposed)
            if stored.get("cluster.id") and stored["cluster.id"] != cluster_id:
                raise ValueError(f"The cluster id {cluster_id} in ZooKeeper does not match the cluster id "
                                 f"{stored['cluster.id']} stored in {config.data_dir}/meta.properties: this data "
                                 "directory belongs to another cluster")
            config.cluster_id = cluster_id
            if config.broker_id < 0:
                if "broker.id" in stored or "node.id" in stored:
                    config.broker_id = int(stored.get("broker.id") or stored["node.id"])
                elif config.broker_id_generation_enable:
                    config.broker_id = await zk.generate_broker_id(config.reserved_broker_max_id)
                    log.info("generated broker id %d", config.broker_id)
                else:
                    raise ValueError("broker.id is not set and broker.id.generation.enable is false")
            elif "broker.id" in stored and int(stored["broker.id"]) != config.broker_id:
                raise ValueError(f"Configured broker.id {config.broker_id} doesn't match stored broker.id "
                                 f"{stored['broker.id']} in {config.data_dir}/meta.properties")
            from broker.services import client_quotas, delegation_tokens

            quotas = await client_quotas.load_from_zookeeper(zk)
            tokens = await delegation_tokens.load_from_zookeeper(zk)
            groups = {group: await zk.get_entity_config(z.ConfigType.GROUP, group)
                      for group in await zk.get_all_entities_with_config(z.ConfigType.GROUP)}
        except BaseException:
            await session.aclose()
            raise
        cluster = cls(config, session, zk)
        cluster.client_quotas_at_start = quotas
        cluster.delegation_tokens_at_start = tokens
        cluster.group_configs = groups
        return cluster

    def attach(self, topics: TopicManager, replicas: ReplicaHooks) -> None:
        self._topics = topics
        self._replicas = replicas
        self._admin = ZkTopicAdmin(self.config, self.zk, self.metadata, topics)
        self._admin.on_quota_config_changed = self._reload_client_quotas
        self._admin.on_group_config_changed = self._group_config_changed

    def _group_config_changed(self, group_id: str, configs: dict[str, str]) -> None:
        self.group_configs[group_id] = configs
        if self._group_configs_changed is not None:
            self._group_configs_changed(group_id, configs)

    def follow_group_configs(self, changed: Callable[[str, dict[str, str]], None]) -> GroupConfigStore:
        """Group configs kept in ZooKeeper for the whole cluster: `changed(group id, configs)` at each change
        another broker makes from now on; the store this broker's changes go to."""
        self._group_configs_changed = changed
        return ZkGroupConfigStore(self.zk)

    @property
    def topics(self) -> TopicManager:
        assert self._topics is not None, "attach() first"
        return self._topics

    @property
    def admin(self) -> ZkTopicAdmin:
        assert self._admin is not None, "attach() first"
        return self._admin

    @property
    def controller_id(self) -> int:
        return self.metadata.controller_id

    @property
    def topic_configs(self) -> dict[str, dict[str, str]]:
        return self.admin.topic_configs

    async def run(self, endpoints: list[Endpoint], *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Register, run for controller and follow the session; until cancelled."""
        self._registration = BrokerRegistration(self.node_id, tuple(endpoints), self.config.broker_rack,
                                                {}, -1, 0)
        events = self.session.subscribe()
        self.broker_epoch = await self.zk.register_broker(self._registration)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            election = trio.CancelScope()
            nursery.start_soon(self._elect, election)
            nursery.start_soon(self.admin.run)
            nursery.start_soon(self._follow_token_changes)
            # Ready once the controller has told this broker what the cluster is (its first UpdateMetadata): a
            # client connecting then finds the brokers, the controller and the topics in Metadata.
            await self.metadata.wait_metadata()
            task_status.started()
            async for event in events:
                if event.state is SessionState.EXPIRED:
                    log.warning("ZooKeeper session expired: this broker's registration is gone")
                    election.cancel()
                elif event.state is SessionState.NEW_SESSION and not self._stopping:
                    log.info("new ZooKeeper session: registering broker %d again", self.node_id)
                    try:
                        self.broker_epoch = await self.zk.register_broker(self._registration)
                    except ZooKeeperError as exc:
                        log.error("registering again failed: %s", exc)
                    if self._replicas is not None and self._replicas.log_dir_offline:
                        self.log_dir_failed()  # a new registration is a restart to the controller: tell it again
                    election = trio.CancelScope()
                    nursery.start_soon(self._elect, election)
                elif event.state is SessionState.CLOSED:
                    break
            nursery.cancel_scope.cancel()

    def log_dir_failed(self) -> None:
        """Tell the controller that this broker's log directory failed (Kafka's LogDirEventNotification)."""
        if self._nursery is not None:
            self._nursery.start_soon(self._propagate_log_dir_event)

    async def _propagate_log_dir_event(self) -> None:
        try:
            await self.zk.propagate_log_dir_event(self.node_id)
        except ZooKeeperError as exc:
            log.error("telling the controller of the failed log directory: %s", exc)

    async def _elect(self, scope: trio.CancelScope) -> None:
        """Kafka's controller election: try to create /controller; while another broker holds it, wait for
        it to go, then try again. While we hold it, run the controller."""
        with scope:
            while not self._stopping:
                send, receive = trio.open_memory_channel[Any](math.inf)
                try:
                    current = await self.zk.get_controller_id(watch=send)
                    if current is None:
                        epoch, epoch_zk_version = await self.zk.register_controller_and_increment_epoch(
                            self.node_id)
                        await self._be_controller(epoch, epoch_zk_version)
                        continue
                    if current == self.node_id and self.controller is None:
                        # Ours, from before a ZooKeeper outage that stopped our controller: give it up and run
                        # again (a new epoch fences whatever the old one still had in flight).
                        await self.zk.session.delete(z.CONTROLLER)
                        continue
                    self.metadata.controller_id = current
                    await receive.receive()  # /controller changed or went: run again
                except ControllerMovedError:
                    continue
                except (ZooKeeperError, BrokerUnavailable) as exc:
                    log.warning("controller election: %s", exc)
                    await trio.sleep(0.5)
                except Exception as exc:  # NoNodeError of a delete that raced, and the like
                    log.warning("controller election: %r", exc)
                    await trio.sleep(0.5)

    async def _be_controller(self, epoch: int, epoch_zk_version: int) -> None:
        settings = ControllerSettings(
            broker_id=self.node_id, inter_broker_listener=self.metadata.inter_broker_listener,
            unclean_leader_election=self._unclean_election_enabled,
            delete_topic_enable=self.config.delete_topic_enable,
            auto_leader_rebalance=self.config.auto_leader_rebalance_enable,
            rebalance_interval_s=self.config.leader_imbalance_check_interval_seconds,
            imbalance_percentage=self.config.leader_imbalance_per_broker_percentage,
            request_timeout_s=self.config.controller_socket_timeout_ms / 1000)
        controller = Controller(self.zk, settings, epoch, epoch_zk_version, self.client_security)
        self.controller = controller
        self.metadata.controller_id = self.node_id
        watch, moved = trio.open_memory_channel[Any](math.inf)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(controller.run)
                # Resign when /controller stops naming us.
                while True:
                    current = await self.zk.get_controller_id(watch=watch)
                    if current != self.node_id:
                        log.info("broker %d is no longer the controller (now %s)", self.node_id, current)
                        nursery.cancel_scope.cancel()
                        break
                    await moved.receive()
        except* Resigned as group:
            log.info("broker %d resigns as controller: %s", self.node_id, group.exceptions[0])
        except* (ZooKeeperError, ControllerMovedError) as group:
            log.warning("broker %d stops being the controller: ZooKeeper: %s", self.node_id, group.exceptions[0])
        finally:
            self.controller = None
            if self.metadata.controller_id == self.node_id:
                self.metadata.controller_id = -1

    def _unclean_election_enabled(self, topic: str) -> bool:
        found = self.topics.get(topic)
        value = found.configs.get("unclean.leader.election.enable") if found is not None else None
        return value == "true" if value is not None else self.config.unclean_leader_election_enable

    async def _follow_token_changes(self) -> None:
        """Kafka's token change listener: a new /delegation_token/token_changes notification means a token was
        created, renewed or removed by some broker: every token is read again (they are few)."""
        from broker.services.delegation_tokens import load_from_zookeeper

        seen: str | None = None
        while True:
            send, receive = trio.open_memory_channel[Any](math.inf)
            try:
                names = await self.zk.get_token_change_notifications(watch=send)
                if seen is None:
                    seen = names[-1] if names else ""
                elif names and names[-1] > seen:
                    seen = names[-1]
                    tokens = await load_from_zookeeper(self.zk)
                    if self.on_tokens_changed is not None:
                        self.on_tokens_changed(tokens)
                    else:
                        self.delegation_tokens_at_start = tokens
                await receive.receive()
            except Exception as exc:  # ZooKeeper away: read again later
                log.warning("following delegation token changes: %r", exc)
                await trio.sleep(1)

    async def _reload_client_quotas(self) -> None:
        """Another broker changed a client quota: read them all again (rare, and few)."""
        from broker.services.client_quotas import load_from_zookeeper

        quotas = await load_from_zookeeper(self.zk)
        if self.on_quotas_changed is not None:
            self.on_quotas_changed(quotas)
        else:
            self.client_quotas_at_start = quotas


    # -- UpdateMetadata ----------------------------------------------------------------------------------------
    def apply_update_metadata(self, req: Any) -> ErrorCode:
        if self.metadata.stale_controller(req.controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.metadata.update_brokers(req)
        topics, replicas, admin = self.topics, self._replicas, self.admin
        assert replicas is not None
        removed = []
        for topic_state in req.topic_states:
            name = topic_state.topic_name
            deleted = [p for p in topic_state.partition_states if p.leader == z.LEADER_DURING_DELETE]
            if deleted:
                if topics.get(name) is not None:
                    removed.append(name)
                    replicas.topic_removed(name)
                topics.remove_topic(name)
                admin.topic_configs.pop(name, None)
                continue
            states = {p.partition_index: PartitionMetadata(p.leader, p.leader_epoch, tuple(p.replicas),
                                                           tuple(p.isr), tuple(p.offline_replicas), p.zk_version)
                      for p in topic_state.partition_states}
            new = topics.get(name) is None
            topics.apply_metadata(name, topic_state.topic_id, states)
            if new and name in admin.topic_configs:
                topics.set_configs(name, admin.topic_configs[name])
            admin.created(name)
        replicas.metadata_updated()
        if removed:
            for callback in self.on_topics_deleted:
                callback(removed)
        if self.metadata.published():
            topics.drop_unclaimed_not_in_metadata()
        return ErrorCode.NONE

    # -- what handlers ask (ClusterView: the same questions as services.single_node.SingleNode) -----------------
    replicated = True  # partitions have replicas on other brokers

    def auto_create_topic(self, name: str) -> Topic | ErrorCode:
        return self.admin.auto_create_topic(name)

    def internal_topic(self, name: str) -> Topic | ErrorCode:
        return self.admin.internal_topic(name)

    def create_internal_topics(self, topics: Sequence[tuple[str, int, int, Mapping[str, str]]]) -> None:
        self.admin.create_internal_topics(topics)

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False, timeout_s: float = 30.0) -> CreatedTopic:
        return await self.admin.create_topic(name, num_partitions, replication_factor, assignments, configs,
                                             validate_only=validate_only, timeout_s=timeout_s)

    async def delete_topic(self, name: str, timeout_s: float = 30.0) -> uuid.UUID:
        return await self.admin.delete_topic(name, timeout_s)

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, *,
                                validate_only: bool = False, timeout_s: float = 30.0) -> None:
        await self.admin.create_partitions(name, count, assignments, validate_only=validate_only,
                                           timeout_s=timeout_s)

    async def topic_overrides(self, name: str) -> dict[str, str] | None:
        return await self.admin.topic_overrides(name)

    async def alter_topic_configs(self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
                                  ) -> None:
        await self.admin.alter_topic_configs(name, overrides, validate_only=validate_only)

    def transaction_markers(self, local: MarkerWriter) -> MarkerChannel:
        """Markers go to each partition's leader, wherever it is (this broker's own partitions: `local`)."""
        from broker.cluster.marker_channel import MarkerChannel

        return MarkerChannel(self.node_id, self.topics, local, self.metadata,
                             self.config.replica_socket_timeout_ms / 1000)

    def share_coordinators(self, versions: VersionProfile) -> ShareStateChannel:
        """The other brokers' share coordinators, as the share persister reaches them."""
        from broker.cluster.share_state_channel import ShareStateChannel

        return ShareStateChannel(self.node_id, self.metadata, versions, self.config.replica_socket_timeout_ms / 1000)

    def not_controller(self) -> bool:
        """CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders go to the controller in ZooKeeper
        mode (clients find it in Metadata); elsewhere they are NOT_CONTROLLER."""
        return self.controller is None or not self.controller.active

    async def elect_leaders(self, partitions: list[tuple[str, int]] | None, unclean: bool
                            ) -> dict[tuple[str, int], ErrorCode] | ErrorCode:
        result = await self.controller.call(ElectLeaders(partitions, unclean))
        return ErrorCode.NOT_CONTROLLER if isinstance(result, Exception) else result

    async def alter_reassignments(self, targets: Mapping[tuple[str, int], list[int] | None]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]] | ErrorCode:
        result = await self.controller.call(AlterReassignments(dict(targets)))
        return ErrorCode.NOT_CONTROLLER if isinstance(result, Exception) else result

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        if self.controller is None:
            return {}
        return {tp: (list(a.replicas), list(a.adding), list(a.removing))
                for tp, a in self.controller.reassignments.in_progress().items()}

    async def verify_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 partitions: list[tuple[str, int]], *, verify_only: bool = True,
                                 ) -> dict[tuple[str, int], ErrorCode]:
        """KIP-890 by the transaction's coordinator on another broker: AddPartitionsToTxn v4, verify_only (or,
        for transaction version 2, adding the partitions). Its errors as Kafka's AddPartitionsToTxnManager gives
        them to the producer: an unreachable or moved coordinator is the retriable NOT_ENOUGH_REPLICAS, a
        fenced producer INVALID_PRODUCER_EPOCH."""
        retry = dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
        state = self.topics.get(TRANSACTION_STATE_TOPIC)
        if state is None or not state.partitions:
            return dict.fromkeys(partitions, ErrorCode.INVALID_TXN_STATE)  # no transaction was ever begun
        from broker.services.internal_topics import partition_for

        leader = state.partitions[partition_for(transactional_id, len(state.partitions))].leader
        address = self.inter_broker_address(leader) if leader >= 0 else None
        if address is None:
            return retry
        client = self._verify_clients.get(leader)
        if client is None:
            client = self._verify_clients[leader] = BrokerClient(
                f"transaction coordinator {leader}", *address, client_id=f"broker-{self.node_id}-verify",
                timeout=self.config.replica_socket_timeout_ms / 1000, security=self.client_security)
        else:
            client.retarget(*address)
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        try:
            response = await client.request(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [{
                "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": producer_epoch,
                "verify_only": verify_only, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}]})
        except BrokerUnavailable:
            return retry
        if response.error_code or not response.results_by_transaction:
            return retry
        out = {}
        for topic in response.results_by_transaction[0].topic_results:
            for p in topic.results_by_partition:
                error = ErrorCode(p.partition_error_code)
                if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
                    error = ErrorCode.NOT_ENOUGH_REPLICAS
                elif error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING) and not verify_only:
                    error = ErrorCode.INVALID_PRODUCER_EPOCH
                out[(topic.name, p.partition_index)] = error
        return {tp: out.get(tp, ErrorCode.NOT_ENOUGH_REPLICAS) for tp in partitions}

    # -- stopping ------------------------------------------------------------------------------------------------
    async def controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leaderships elsewhere before it stops (Kafka's
        controlled.shutdown.enable), retrying as configured; then stop anyway."""
        self._stopping = True
        if not self.config.controlled_shutdown_enable:
            return
        for attempt in range(1, self.config.controlled_shutdown_max_retries + 1):
            controller = self.metadata.controller_id
            address = self.metadata.inter_broker_address(controller) if controller >= 0 else None
            if address is None:
                log.info("controlled shutdown: no controller known")
                return
            client = BrokerClient(f"controller {controller}", *address, client_id=f"broker-{self.node_id}",
                                  timeout=self.config.controller_socket_timeout_ms / 1000,
                                  security=self.client_security)
            try:
                response = await client.request(ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION,
                                                 {"broker_id": self.node_id, "broker_epoch": self.broker_epoch})
                if response.error_code == ErrorCode.NONE:
                    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
                    log.info("controlled shutdown succeeded; %d partition(s) stay led here (no other replica)",
                             len(remaining))
                    return
                log.warning("controlled shutdown attempt %d: %s", attempt, ErrorCode(response.error_code).name)
            except BrokerUnavailable as exc:
                log.warning("controlled shutdown attempt %d: %s", attempt, exc)
            finally:
                await client.aclose()
            await trio.sleep(self.config.controlled_shutdown_retry_backoff_ms / 1000)

    async def aclose(self) -> None:
        self._stopping = True
        await self.session.aclose()



def _read_meta_properties(data_dir: Path) -> dict[str, str]:
    stored: dict[str, str] = {}
    try:
        text = (data_dir / "meta.properties").read_text()
    except FileNotFoundError:
        return stored
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            stored[key.strip()] = value.strip()
    return stored


def _new_cluster_id() -> str:
    return z.uuid_to_str(z.random_uuid())

