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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.cluster.controller import Controller, ControllerSettings, Resigned
from broker.config.options import BrokerConfig
from broker.security.client_side import inter_broker_security
from broker.services.single_node import CreatedTopic, Node
from broker.services.topics import (
    INTERNAL_TOPICS,
    TRANSACTION_STATE_TOPIC,
    PartitionMetadata,
    Topic,
    TopicError,
    TopicManager,
)
from protocol.header import ApiKey, ErrorCode
from zk import znodes as z
from zk.errors import AdminError, ControllerMovedError, ZooKeeperError
from zk.kafka_zk import KafkaZkClient
from zk.session import SessionState, ZkSession
from zk.znodes import BrokerRegistration, ConfigType, Endpoint

log = logging.getLogger(__name__)

SECURITY_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONTROLLED_SHUTDOWN_VERSION = 3
ALTER_PARTITION_VERSION = 3


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A live broker as the controller announced it: its address per listener name."""

    broker_id: int
    endpoints: Mapping[str, tuple[str, int]]
    rack: str | None


class ZkCluster:
    def __init__(self, config: BrokerConfig, session: ZkSession, zk: KafkaZkClient) -> None:
        self.config = config
        self.session = session
        self.zk = zk
        self.node_id = config.broker_id
        self.topics: TopicManager | None = None  # set by attach()
        self.replicas: Any = None  # broker.cluster.replica_manager.ReplicaManager, set by attach()
        self.live: dict[int, LiveBroker] = {}
        self.controller_id = -1
        self.controller_epoch = -1  # the newest controller epoch seen in a control request
        self.broker_epoch = -1  # our registration's czxid
        self.controller: Controller | None = None  # while this broker is the controller
        self._registration: BrokerRegistration | None = None
        self._first_metadata = trio.Event()
        self.metadata_changed = trio.Event()  # set (and replaced) at every UpdateMetadata
        self._stopping = False
        self._pending_creations: set[str] = set()
        self.topic_configs: dict[str, dict[str, str]] = {}  # /config/topics/<t>, kept current
        self.on_topics_deleted: list[Any] = []  # callbacks(names): topics gone from the cluster
        self._verify_clients: dict[int, BrokerClient] = {}  # KIP-890 verification, per coordinator broker
        # TLS and SASL of this broker's own connections to the others (None: a PLAINTEXT inter-broker listener).
        security = inter_broker_security(config)
        self.client_security = security if security.ssl_context is not None or security.mechanism else None
        self._nursery: trio.Nursery | None = None

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
        except BaseException:
            await session.aclose()
            raise
        return cls(config, session, zk)

    def attach(self, topics: TopicManager, replicas: Any) -> None:
        self.topics = topics
        self.replicas = replicas

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
            nursery.start_soon(self._follow_config_changes)
            # Ready once the controller has told this broker what the cluster is (its first UpdateMetadata): a
            # client connecting then finds the brokers, the controller and the topics in Metadata.
            with trio.move_on_after(self.config.zookeeper_connection_timeout_ms / 1000):
                await self._first_metadata.wait()
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
                    election = trio.CancelScope()
                    nursery.start_soon(self._elect, election)
                elif event.state is SessionState.CLOSED:
                    break
            nursery.cancel_scope.cancel()

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
                    self.controller_id = current
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
            broker_id=self.node_id, inter_broker_listener=self.inter_broker_listener,
            unclean_leader_election=self._unclean_election_enabled,
            delete_topic_enable=self.config.delete_topic_enable,
            auto_leader_rebalance=self.config.auto_leader_rebalance_enable,
            rebalance_interval_s=self.config.leader_imbalance_check_interval_seconds,
            imbalance_percentage=self.config.leader_imbalance_per_broker_percentage,
            request_timeout_s=self.config.controller_socket_timeout_ms / 1000)
        controller = Controller(self.zk, settings, epoch, epoch_zk_version, self.client_security)
        self.controller = controller
        self.controller_id = self.node_id
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
            if self.controller_id == self.node_id:
                self.controller_id = -1

    def _unclean_election_enabled(self, topic: str) -> bool:
        found = self.topics.get(topic) if self.topics is not None else None
        value = found.configs.get("unclean.leader.election.enable") if found is not None else None
        return value == "true" if value is not None else self.config.unclean_leader_election_enable

    @property
    def inter_broker_listener(self) -> str:
        """inter.broker.listener.name, or Kafka's rule (the listener of security.inter.broker.protocol)."""
        return self.config.inter_broker_listener().name

    # -- the metadata cache -------------------------------------------------------------------------------------
    def stale_controller(self, controller_epoch: int) -> bool:
        """A control request from an older controller than the newest seen is refused; a newer one is
        remembered."""
        if controller_epoch < self.controller_epoch:
            return True
        self.controller_epoch = controller_epoch
        return False

    async def ensure_topic_configs(self, names: Iterable[str]) -> None:
        """Read the config overrides of topics this broker has not seen yet (Kafka's brokers read a topic's
        config when they first create its log)."""
        missing = sorted({n for n in names if n not in self.topic_configs})
        if not missing:
            return
        try:
            self.topic_configs.update(await self.zk.get_entity_configs(ConfigType.TOPIC, missing))
        except ZooKeeperError as exc:
            log.warning("reading the configs of %s: %s", missing, exc)

    async def _follow_config_changes(self) -> None:
        """Kafka's ZkConfigManager: each new /config/changes/config_change_N names an entity whose config
        changed; a topic's is read again and applied to its logs. (Dynamic broker configs stay each broker's
        own here: see docs/running/cluster.md.)"""
        seen: str | None = None
        while True:
            send, receive = trio.open_memory_channel[Any](math.inf)
            try:
                names = await self.zk.get_config_change_notifications(watch=send)
                if seen is None:  # at start: everything is read fresh anyway
                    seen = names[-1] if names else ""
                for name in [n for n in names if n > seen]:
                    seen = name
                    found = await self.zk.get_config_change_notification(name)
                    if found is None:
                        continue
                    entity_type, _, entity = found[0].partition("/")
                    if entity_type == ConfigType.TOPIC:
                        configs = await self.zk.get_entity_config(ConfigType.TOPIC, entity)
                        self.topic_configs[entity] = configs
                        if self.topics is not None:
                            self.topics.set_configs(entity, configs)
                        log.info("topic %s configs now %s", entity, configs)
                await receive.receive()
            except Exception as exc:  # ZooKeeper away, a malformed notification: read again later
                log.warning("following config changes: %r", exc)
                await trio.sleep(1)

    def apply_update_metadata(self, req: Any) -> ErrorCode:
        if self.stale_controller(req.controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.controller_id = req.controller_id
        self.live = {
            b.id: LiveBroker(b.id, {e.listener: (e.host, e.port) for e in b.endpoints}, b.rack)
            for b in req.live_brokers}
        assert self.topics is not None
        removed = []
        for topic_state in req.topic_states:
            name = topic_state.topic_name
            deleted = [p for p in topic_state.partition_states if p.leader == z.LEADER_DURING_DELETE]
            if deleted:
                if self.topics.get(name) is not None:
                    removed.append(name)
                    if self.replicas is not None:
                        self.replicas.topic_removed(name)
                self.topics.remove_topic(name)
                self.topic_configs.pop(name, None)
                continue
            states = {p.partition_index: PartitionMetadata(p.leader, p.leader_epoch, tuple(p.replicas),
                                                           tuple(p.isr), tuple(p.offline_replicas), p.zk_version)
                      for p in topic_state.partition_states}
            new = self.topics.get(name) is None
            self.topics.apply_metadata(name, topic_state.topic_id, states)
            if new and name in self.topic_configs:
                self.topics.set_configs(name, self.topic_configs[name])
            self._pending_creations.discard(name)
        if self.replicas is not None:
            self.replicas.metadata_updated()
        if removed:
            for callback in self.on_topics_deleted:
                callback(removed)
        self.metadata_changed.set()
        self.metadata_changed = trio.Event()
        if not self._first_metadata.is_set():
            self._first_metadata.set()
            self.topics.drop_unclaimed_not_in_metadata()
        return ErrorCode.NONE

    # -- what handlers ask (the same questions as services.single_node.SingleNode) -------------------------------
    def _listener_of(self, endpoint: Any) -> str:
        return self.config.listeners[endpoint.listener].name

    async def wait_metadata(self) -> None:
        """Until the controller has told this broker what the cluster is (its first UpdateMetadata), at most
        zookeeper.connection.timeout.ms. The listeners are open before (the registration names their ports):
        a client asking meanwhile would hear of no brokers and no topics, which librdkafka takes for a cluster
        without brokers (it drops every broker it knows: confluentinc/librdkafka#5301)."""
        if not self._first_metadata.is_set():
            with trio.move_on_after(self.config.zookeeper_connection_timeout_ms / 1000):
                await self._first_metadata.wait()

    def nodes(self, endpoint: Any) -> list[Node]:
        listener = self._listener_of(endpoint)
        out = []
        for broker in sorted(self.live.values(), key=lambda b: b.broker_id):
            address = broker.endpoints.get(listener)
            if address is not None:  # Kafka leaves out brokers without the client's listener
                out.append(Node(broker.broker_id, address[0], address[1], broker.rack))
        return out

    def is_alive(self, node_id: int) -> bool:
        return node_id in self.live

    def node(self, node_id: int, endpoint: Any) -> Node | None:
        broker = self.live.get(node_id)
        if broker is None:
            return None
        address = broker.endpoints.get(self._listener_of(endpoint))
        return Node(node_id, address[0], address[1], broker.rack) if address is not None else None

    def inter_broker_address(self, node_id: int) -> tuple[str, int] | None:
        broker = self.live.get(node_id)
        if broker is None:
            return None
        return broker.endpoints.get(self.inter_broker_listener) or next(iter(broker.endpoints.values()), None)

    def auto_create_topic(self, name: str) -> Topic | ErrorCode:
        """Kafka's AutoTopicCreationManager in ZooKeeper mode: the topic's znodes are written now (in the
        background); the controller creates its partitions and elects their leaders. Until this broker's
        metadata shows them: LEADER_NOT_AVAILABLE."""
        if not self.config.auto_create_topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if name not in self._pending_creations and self._nursery is not None:
            self._pending_creations.add(name)
            self._nursery.start_soon(self._create_in_background, name)
        return ErrorCode.LEADER_NOT_AVAILABLE

    def internal_topic(self, name: str) -> Topic | ErrorCode:
        """`__consumer_offsets` / `__transaction_state` once this broker's metadata has it with leaders; until
        then its creation is asked (whatever auto.create.topics.enable says, as Kafka's FindCoordinator)."""
        topic = self.topics.get(name) if self.topics is not None else None
        if topic is not None and topic.partitions:
            return topic
        if name not in self._pending_creations and self._nursery is not None:
            self._pending_creations.add(name)
            self._nursery.start_soon(self._create_in_background, name)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    async def _create_in_background(self, name: str) -> None:
        from broker.cluster.admin import create_topic_in_zk

        try:
            await create_topic_in_zk(self, name, -1, -1, None, {})
        except Exception as exc:  # TopicExists is fine: it exists
            log.info("auto-creating topic %s: %s", name, exc)
        finally:
            self._pending_creations.discard(name)

    def not_controller(self) -> bool:
        """CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders go to the controller in ZooKeeper
        mode (clients find it in Metadata); elsewhere they are NOT_CONTROLLER."""
        return self.controller is None or not self.controller.active

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Any] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False, timeout_s: float = 30.0) -> CreatedTopic:
        """CreateTopics (on the controller): the topic in ZooKeeper, then wait until its partitions have
        leaders in this broker's metadata (REQUEST_TIMED_OUT after `timeout_s`: it is created anyway)."""
        from broker.cluster.admin import create_topic_in_zk, wait_for_topic

        created = await create_topic_in_zk(self, name, num_partitions, replication_factor, assignments, configs,
                                           validate_only=validate_only)
        if not validate_only and not await wait_for_topic(self, name, timeout_s):
            raise TopicError("REQUEST_TIMED_OUT", f"Topic {name} was created but its partitions have no leader "
                                                  f"within {timeout_s:g} s.")
        return created

    async def elect_leaders(self, partitions: list[tuple[str, int]] | None, unclean: bool
                            ) -> dict[tuple[str, int], ErrorCode] | ErrorCode:
        result = await self.controller.call("elect_leaders", partitions, unclean)
        return ErrorCode.NOT_CONTROLLER if isinstance(result, Exception) else result

    async def alter_reassignments(self, targets: Mapping[tuple[str, int], list[int] | None]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]] | ErrorCode:
        result = await self.controller.call("alter_reassignments", dict(targets))
        return ErrorCode.NOT_CONTROLLER if isinstance(result, Exception) else result

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        if self.controller is None:
            return {}
        return {tp: (list(a.replicas), list(a.adding), list(a.removing))
                for tp, a in self.controller.reassignments().items()}

    async def delete_topic(self, name: str, timeout_s: float = 30.0) -> Any:
        """DeleteTopics (on the controller): the deletion marker in ZooKeeper, then wait until the topic is
        gone from this broker's metadata. Raises TopicError."""
        from broker.cluster.admin import wait_for_topic

        topic = self.topics.get(name)
        if name in INTERNAL_TOPICS and topic is not None:
            raise TopicError("INVALID_REQUEST", f"Topic {name} is a kafka internal topic and is not allowed to be "
                                                "deleted.")
        if not self.config.delete_topic_enable:
            raise TopicError("TOPIC_DELETION_DISABLED", "Topic deletion is disabled.")
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
        try:
            await self.zk.delete_topic(name)
        except AdminError as exc:
            if exc.error_code:
                raise TopicError(exc.error_code.name, str(exc)) from None
        except ZooKeeperError as exc:
            raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
        if not await wait_for_topic(self, name, timeout_s, gone=True):
            raise TopicError("REQUEST_TIMED_OUT", f"Topic {name} is being deleted; it was not gone within "
                                                  f"{timeout_s:g} s.")
        return topic.topic_id

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, *,
                                validate_only: bool = False, timeout_s: float = 30.0) -> None:
        """CreatePartitions (on the controller): the topic znode grows, the controller elects the new
        partitions' leaders; wait until this broker's metadata shows them. Raises TopicError."""
        from broker.services.single_node import _check_new_assignments

        topic = self.topics.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        if topic.is_internal:
            raise TopicError("INVALID_REQUEST", f"The number of partitions of the internal topic {name} cannot be "
                                                "changed.")
        current = len(topic.partitions)
        if count < current:
            raise TopicError("INVALID_PARTITIONS", f"The topic {name} currently has {current} partition(s); "
                                                   f"{count} would not be an increase.")
        if count == current:
            raise TopicError("INVALID_PARTITIONS", f"Topic already has {current} partition(s).")
        replicas = None
        if assignments is not None:
            _check_new_assignments(assignments, current, count, set(self.live),
                                   len(topic.partitions[0].replicas) if topic.partitions else 1)
            replicas = {current + i: ids for i, ids in enumerate(assignments)}
        try:
            await self.zk.add_partitions(name, count, replicas, validate_only=validate_only)
        except AdminError as exc:
            raise TopicError(exc.error_code.name, str(exc)) from None
        except ZooKeeperError as exc:
            raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
        if validate_only:
            return
        with trio.move_on_after(timeout_s):
            while True:
                changed = self.metadata_changed
                found = self.topics.get(name)
                if found is not None and len(found.partitions) >= count and all(
                        p.leader >= 0 for p in found.partitions):
                    return
                await changed.wait()
        raise TopicError("REQUEST_TIMED_OUT", f"The new partitions of {name} have no leader within {timeout_s:g} s.")

    async def topic_overrides(self, name: str) -> dict[str, str] | None:
        """The topic's config overrides (ZooKeeper's, when this broker has not heard of the topic yet)."""
        if self.topics.get(name) is not None and name in self.topic_configs:
            return dict(self.topic_configs[name])
        if not await self.zk.topic_exists(name):
            return None
        return await self.zk.get_entity_config(ConfigType.TOPIC, name)

    async def alter_topic_configs(self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
                                  ) -> None:
        """A topic's whole set of config overrides, in ZooKeeper with a change notification: every broker
        applies it (AdminZkClient.changeTopicConfig). Raises TopicError."""
        from broker.cluster.admin import set_topic_configs_in_zk
        from broker.config.topic import InvalidConfigError, validate_topic_configs

        if self.topics.get(name) is None and not await self.zk.topic_exists(name):
            # (ZooKeeper is asked too, as Kafka's AdminZkClient does: this broker may not have heard of a topic
            # created a moment ago.)
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        try:
            checked = validate_topic_configs(overrides)
        except InvalidConfigError as exc:
            raise TopicError("INVALID_CONFIG", str(exc)) from None
        if validate_only:
            return
        await set_topic_configs_in_zk(self, name, checked)
        self.topic_configs[name] = checked
        self.topics.set_configs(name, checked)

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
            controller = self.controller_id
            address = self.inter_broker_address(controller) if controller >= 0 else None
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

