"""Topic administration in a ZooKeeper-mode cluster (Kafka's AdminZkClient and the ZooKeeper side of
KafkaApis' CreateTopics, DeleteTopics, CreatePartitions and topic AlterConfigs): what the request asks is
validated, written to ZooKeeper, and the controller, watching, does the rest; the request then waits
until this broker's metadata shows the result (Kafka's DelayedCreatePartitions / DelayedDeleteTopics),
at most its timeout."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from broker.config.topic import InvalidConfigError, validate_topic_configs
from broker.services.single_node import CreatedTopic
from broker.services.topics import (
    INTERNAL_TOPICS,
    OFFSETS_TOPIC,
    TopicError,
    validate_topic_name,
)
from zk.errors import AdminError, ZooKeeperError
from zk.kafka_zk import RackAwareMode
from zk.replica_assignment import validate_replica_assignment
from zk.znodes import ConfigType

log = logging.getLogger(__name__)


def internal_topic_settings(config: Any, name: str, live_brokers: int) -> tuple[int, int, dict[str, str]]:
    """Partitions, replication factor and configs of `__consumer_offsets` / `__transaction_state`, however
    they get created: the configured replication factor, at most the live brokers (a cluster smaller than
    the default of 3 still gets its coordinators)."""
    if name == OFFSETS_TOPIC:
        rf = min(config.offsets_topic_replication_factor, max(1, live_brokers))
        return config.offsets_topic_num_partitions, rf, {
            "cleanup.policy": "compact", "segment.bytes": str(config.offsets_topic_segment_bytes),
            "compression.type": "producer"}
    rf = min(config.transaction_state_log_replication_factor, max(1, live_brokers))
    return config.transaction_state_log_num_partitions, rf, {
        "cleanup.policy": "compact", "segment.bytes": str(config.transaction_state_log_segment_bytes),
        "min.insync.replicas": str(min(config.transaction_state_log_min_isr, rf))}


async def create_topic_in_zk(cluster: Any, name: str, num_partitions: int, replication_factor: int,
                             assignments: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str | None], *,
                             validate_only: bool = False) -> CreatedTopic:
    """Validate and write a new topic (its config znode, then its assignment); raises TopicError."""
    config = cluster.config
    validate_topic_name(name)
    brokers = await cluster.zk.get_all_brokers()
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
                await cluster.zk.validate_topic_create(name, replicas)
                return CreatedTopic(None, num_partitions, replication_factor, overrides)
            topic_id = await cluster.zk.create_topic(name, replicas, overrides)
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

                metadatas = await cluster.zk.get_broker_metadatas(RackAwareMode.SAFE)
                await cluster.zk.validate_topic_create(
                    name, assign_replicas_to_brokers(metadatas, num_partitions, replication_factor))
                return CreatedTopic(None, num_partitions, replication_factor, overrides)
            topic_id, _ = await cluster.zk.create_topic_auto_assigned(
                name, num_partitions, replication_factor, overrides, RackAwareMode.SAFE)
    except AdminError as exc:
        raise TopicError(exc.error_code.name, str(exc)) from None
    except ZooKeeperError as exc:
        raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
    log.info("created topic %s in ZooKeeper: %d partition(s), replication factor %d", name, num_partitions,
             replication_factor)
    return CreatedTopic(topic_id, num_partitions, replication_factor, overrides)


async def wait_for_topic(cluster: Any, name: str, timeout_s: float, *, gone: bool = False) -> bool:
    """Until this broker's metadata shows every partition of the topic with a leader (or, `gone`, no topic
    of that name); False at the timeout."""
    with trio.move_on_after(timeout_s):
        while True:
            changed = cluster.metadata_changed
            topic = cluster.topics.get(name)
            if gone and topic is None:
                return True
            if not gone and topic is not None and topic.partitions and all(p.leader >= 0 for p in topic.partitions):
                return True
            await changed.wait()
    return False


async def set_topic_configs_in_zk(cluster: Any, name: str, overrides: Mapping[str, str]) -> None:
    """A topic's whole config, with the change notification every broker follows."""
    try:
        await cluster.zk.change_entity_config(ConfigType.TOPIC, name, overrides)
    except ZooKeeperError as exc:
        raise TopicError("REQUEST_TIMED_OUT", f"ZooKeeper: {exc}") from None
