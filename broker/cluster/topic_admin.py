"""Topic administration in a ZooKeeper-mode cluster (Kafka's AdminZkClient and the ZooKeeper side of
KafkaApis' CreateTopics, DeleteTopics, CreatePartitions and topic AlterConfigs, and its
AutoTopicCreationManager): what the request asks is validated, written to ZooKeeper, and the controller,
watching, does the rest; the request then waits until this broker's metadata shows the result (Kafka's
DelayedCreatePartitions / DelayedDeleteTopics), at most its timeout. Topic config overrides are followed
through /config/changes (Kafka's ZkConfigManager)."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import trio

from broker.cluster.metadata_cache import MetadataCache
from broker.config.options import BrokerConfig
from broker.config.topic import InvalidConfigError, validate_topic_configs
from broker.services.cluster_view import CreatedTopic
from broker.services.topics import (
    INTERNAL_TOPICS,
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    Topic,
    TopicError,
    TopicManager,
    check_new_assignments,
    share_state_topic_configs,
    validate_topic_name,
)
from protocol.header import ErrorCode
from zk.errors import AdminError, ZooKeeperError
from zk.kafka_zk import KafkaZkClient, RackAwareMode
from zk.replica_assignment import validate_replica_assignment
from zk.znodes import ConfigType

log = logging.getLogger(__name__)


def internal_topic_settings(config: BrokerConfig, name: str, live_brokers: int) -> tuple[int, int, dict[str, str]]:
    """Partitions, replication factor and configs of `__consumer_offsets`, `__transaction_state` and
    `__share_group_state`, however they get created: the configured replication factor, at most the live brokers
    (a cluster smaller than the default of 3 still gets its coordinators)."""
    if name == OFFSETS_TOPIC:
        rf = min(config.offsets_topic_replication_factor, max(1, live_brokers))
        return config.offsets_topic_num_partitions, rf, {
            "cleanup.policy": "compact", "segment.bytes": str(config.offsets_topic_segment_bytes),
            "compression.type": "producer"}
    if name == SHARE_STATE_TOPIC:
        rf = min(config.share_coordinator_state_topic_replication_factor, max(1, live_brokers))
        return config.share_coordinator_state_topic_num_partitions, rf, share_state_topic_configs(config, rf)
    rf = min(config.transaction_state_log_replication_factor, max(1, live_brokers))
    return config.transaction_state_log_num_partitions, rf, {
        "cleanup.policy": "compact", "segment.bytes": str(config.transaction_state_log_segment_bytes),
        "min.insync.replicas": str(min(config.transaction_state_log_min_isr, rf))}


class ZkTopicAdmin:
    def __init__(self, config: BrokerConfig, zk: KafkaZkClient, metadata: MetadataCache, topics: TopicManager) -> None:
        self.config = config
        self.zk = zk
        self.metadata = metadata
        self.topics = topics
        self.topic_configs: dict[str, dict[str, str]] = {}  # /config/topics/<t>, kept current
        self._pending_creations: set[str] = set()
        self._nursery: trio.Nursery | None = None
        # A client quota changed (/config/users, /config/clients, /config/ips): the cluster reads them again.
        self.on_quota_config_changed: Callable[[], Awaitable[None]] | None = None
        # A group's configs changed (/config/groups/<group>): (group id, its configs).
        self.on_group_config_changed: Callable[[str, dict[str, str]], None] | None = None

    async def run(self) -> None:
        """Follow the topics' config changes; auto-created topics are written in the background meanwhile."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._follow_config_changes()

    def created(self, name: str) -> None:
        """The controller announced the topic: a creation asked for it is done."""
        self._pending_creations.discard(name)

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
                    if entity_type in (ConfigType.USER, ConfigType.CLIENT, ConfigType.IP) and \
                            self.on_quota_config_changed is not None:
                        await self.on_quota_config_changed()
                    if entity_type == ConfigType.GROUP and self.on_group_config_changed is not None:
                        configs = await self.zk.get_entity_config(ConfigType.GROUP, entity)
                        self.on_group_config_changed(entity, configs)
                    if entity_type == ConfigType.TOPIC:
                        configs = await self.zk.get_entity_config(ConfigType.TOPIC, entity)
                        self.topic_configs[entity] = configs
                        self.topics.set_configs(entity, configs)
                        log.info("topic %s configs now %s", entity, configs)
                await receive.receive()
            except Exception as exc:  # ZooKeeper away, a malformed notification: read again later
                log.warning("following config changes: %r", exc)
                await trio.sleep(1)

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
        topic = self.topics.get(name)
        if topic is not None and topic.partitions:
            return topic
        if name not in self._pending_creations and self._nursery is not None:
            self._pending_creations.add(name)
            self._nursery.start_soon(self._create_in_background, name)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def create_internal_topics(self, topics: Sequence[tuple[str, int, int, Mapping[str, str]]]) -> None:
        """Kafka's AutoTopicCreationManager.createStreamsInternalTopics: (name, partitions, replication factor,
        configs) written to ZooKeeper in the background, as auto-created topics are."""
        for name, partitions, replication_factor, configs in topics:
            if name not in self._pending_creations and self._nursery is not None and self.topics.get(name) is None:
                self._pending_creations.add(name)
                self._nursery.start_soon(self._create_in_background, name, partitions, replication_factor,
                                         dict(configs))

    async def _create_in_background(self, name: str, partitions: int = -1, replication_factor: int = -1,
                                    configs: Mapping[str, str] | None = None) -> None:
        try:
            await self.write_topic(name, partitions, replication_factor, None, configs or {})
        except Exception as exc:  # TopicExists is fine: it exists
            log.info("auto-creating topic %s: %s", name, exc)
        finally:
            self._pending_creations.discard(name)

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Any] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False, timeout_s: float = 30.0) -> CreatedTopic:
        """CreateTopics (on the controller): the topic in ZooKeeper, then wait until its partitions have
        leaders in this broker's metadata (REQUEST_TIMED_OUT after `timeout_s`: it is created anyway)."""
        created = await self.write_topic(name, num_partitions, replication_factor, assignments, configs,
                                          validate_only=validate_only)
        if not validate_only and not await self._wait_for_topic(name, timeout_s):
            raise TopicError("REQUEST_TIMED_OUT", f"Topic {name} was created but its partitions have no leader "
                                                  f"within {timeout_s:g} s.")
        return created

    async def delete_topic(self, name: str, timeout_s: float = 30.0) -> Any:
        """DeleteTopics (on the controller): the deletion marker in ZooKeeper, then wait until the topic is
        gone from this broker's metadata. Raises TopicError."""
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
        if not await self._wait_for_topic(name, timeout_s, gone=True):
            raise TopicError("REQUEST_TIMED_OUT", f"Topic {name} is being deleted; it was not gone within "
                                                  f"{timeout_s:g} s.")
        return topic.topic_id

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, *,
                                validate_only: bool = False, timeout_s: float = 30.0) -> None:
        """CreatePartitions (on the controller): the topic znode grows, the controller elects the new
        partitions' leaders; wait until this broker's metadata shows them. Raises TopicError."""
        topic = self.topics.check_add_partitions(name, count)
        current = len(topic.partitions)
        replicas = None
        if assignments is not None:
            check_new_assignments(assignments, current, count, set(self.metadata.live),
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
                changed = self.metadata.metadata_changed
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
        try:
            await self.zk.change_entity_config(ConfigType.TOPIC, name, checked)
        except ZooKeeperError as exc:
            raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
        self.topic_configs[name] = checked
        self.topics.set_configs(name, checked)

    async def write_topic(self, name: str, num_partitions: int, replication_factor: int,
                           assignments: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str | None], *,
                           validate_only: bool = False) -> CreatedTopic:
        """Validate and write a new topic (its config znode, then its assignment); raises TopicError."""
        config = self.config
        validate_topic_name(name)
        brokers = await self.zk.get_all_brokers()
        if name in INTERNAL_TOPICS and num_partitions == -1 and not assignments:
            num_partitions, replication_factor, defaults = internal_topic_settings(config, name, len(brokers))
            configs = {**defaults, **configs}
        if num_partitions == -1 and not assignments:
            num_partitions = config.num_partitions
        if replication_factor == -1 and not assignments:
            replication_factor = config.default_replication_factor
        try:
            overrides = validate_topic_configs(configs)
        except InvalidConfigError as exc:
            raise TopicError("INVALID_CONFIG", str(exc)) from None
        try:
            if assignments:
                replicas = {p: list(r) for p, r in assignments.items()}
                num_partitions, replication_factor = len(replicas), len(next(iter(replicas.values())))
                validate_replica_assignment(replicas, replication_factor, set(brokers))
                if validate_only:
                    await self.zk.validate_topic_create(name, replicas)
                    return CreatedTopic(None, num_partitions, replication_factor, overrides)
                topic_id = await self.zk.create_topic(name, replicas, overrides)
            else:
                if num_partitions <= 0:
                    raise TopicError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
                if replication_factor <= 0:
                    raise TopicError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0.")
                if replication_factor > len(brokers):
                    raise TopicError("INVALID_REPLICATION_FACTOR",
                                     f"Unable to replicate the partition {replication_factor} time(s): The target "
                                     f"replication factor of {replication_factor} cannot be reached because only "
                                     f"{len(brokers)} broker(s) are registered.")
                if validate_only:
                    from zk.replica_assignment import assign_replicas_to_brokers

                    metadatas = await self.zk.get_broker_metadatas(RackAwareMode.SAFE)
                    await self.zk.validate_topic_create(
                        name, assign_replicas_to_brokers(metadatas, num_partitions, replication_factor))
                    return CreatedTopic(None, num_partitions, replication_factor, overrides)
                topic_id, _ = await self.zk.create_topic_auto_assigned(
                    name, num_partitions, replication_factor, overrides, RackAwareMode.SAFE)
        except AdminError as exc:
            raise TopicError(exc.error_code.name, str(exc)) from None
        except ZooKeeperError as exc:
            raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
        log.info("created topic %s in ZooKeeper: %d partition(s), replication factor %d", name, num_partitions,
                 replication_factor)
        return CreatedTopic(topic_id, num_partitions, replication_factor, overrides)

    async def _wait_for_topic(self, name: str, timeout_s: float, *, gone: bool = False) -> bool:
        """Until this broker's metadata shows every partition of the topic with a leader (or, `gone`, no topic
        of that name); False at the timeout."""
        with trio.move_on_after(timeout_s):
            while True:
                changed = self.metadata.metadata_changed
                topic = self.topics.get(name)
                if gone and topic is None:
                    return True
                if not gone and topic is not None and topic.partitions and all(p.leader >= 0 for p in topic.partitions):
                    return True
                await changed.wait()
        return False
