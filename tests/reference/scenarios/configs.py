"""DescribeConfigs of every topic and broker config (value, source, synonyms, read-only, sensitive, type) and
IncrementalAlterConfigs / AlterConfigs: SET, DELETE, APPEND, SUBTRACT on list configs, bad values."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    ALTER_CONFIGS,
    BROKER,
    INCREMENTAL_ALTER_CONFIGS,
    TOPIC,
    create_topic,
    describe_configs,
)
from tests.reference.scenarios.versions import PROFILE_RELEASES

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_LOGGER = 8


def _alter(s: Session, step: str, resource_type: int, name: str, ops: list[tuple[str, int, str | None]],
           validate_only: bool = False) -> dict[str, Any] | None:
    return s.request(step, INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": validate_only})


@scenario(releases=PROFILE_RELEASES)  # each release's own set of topic configs
def describe_topic_configs(s: Session) -> None:
    """Every config of a topic with two overrides, with synonyms; chosen keys; an unknown topic."""
    name = s.name("described")
    create_topic(s, "create", name, config={"retention.ms": "3600000", "cleanup.policy": "compact"})
    describe_configs(s, "all, with synonyms", TOPIC, name)
    describe_configs(s, "all, without synonyms", TOPIC, name, synonyms=False)
    describe_configs(s, "chosen keys", TOPIC, name, ["retention.ms", "segment.bytes", "no.such.config"])
    describe_configs(s, "unknown topic", TOPIC, s.name("nope"))
    describe_configs(s, "invalid topic name", TOPIC, "bad name!")
    s.request("v1", 32, 1, {"resources": [{"resource_type": TOPIC, "resource_name": name,
                                            "configuration_keys": ["retention.ms", "cleanup.policy"]}],
                            "include_synonyms": True})


@scenario()
def describe_broker_configs(s: Session) -> None:
    """The broker's configs by key (those a client reads), a non-numeric and an unknown broker, the cluster
    default resource, and broker loggers."""
    keys = ["log.retention.ms", "log.retention.hours", "log.segment.bytes", "message.max.bytes", "num.partitions",
            "default.replication.factor", "auto.create.topics.enable", "log.cleanup.policy",
            "offsets.topic.num.partitions", "transaction.max.timeout.ms", "group.min.session.timeout.ms",
            "group.max.session.timeout.ms", "min.insync.replicas", "compression.type", "unclean.leader.election.enable",
            "log.message.timestamp.type", "delete.topic.enable", "no.such.config"]
    describe_configs(s, "chosen keys", BROKER, "0", keys)
    describe_configs(s, "unknown broker", BROKER, "7", ["num.partitions"])
    describe_configs(s, "non-numeric broker", BROKER, "zero", ["num.partitions"])
    describe_configs(s, "cluster default resource", BROKER, "", ["num.partitions", "log.retention.ms"])
    describe_configs(s, "broker loggers", BROKER_LOGGER, "0", ["root"])


# Settings of this very broker's setup (its addresses, paths, id, ZooKeeper; the reference's own settings,
# tests/reference/kafka.py): how each broker was started, not how it answers. Compared by name only.
_SETUP = {"listeners", "advertised.listeners", "log.dirs", "zookeeper.connect", "zookeeper.session.timeout.ms",
          "broker.id", "node.id", "group.initial.rebalance.delay.ms", "log.retention.check.interval.ms",
          "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
          "transaction.state.log.min.isr", "inter.broker.listener.name", "listener.security.protocol.map",
          "controller.listener.names", "process.roles", "share.coordinator.state.topic.replication.factor",
          "share.coordinator.state.topic.min.isr"}


def _setup_values(_step: str, answer: Any) -> Any:
    for result in (answer or {}).get("results") or []:
        for config in result.get("configs") or []:
            if config["name"] in _SETUP:
                config.update(value="<setup>", config_source="<setup>", synonyms=[])
    return answer


@scenario(both_view=_setup_values)
def describe_all_broker_configs(s: Session) -> None:
    """Every config of the broker: the names, and for each its source, read-only and sensitive flags, type."""
    describe_configs(s, "all", BROKER, "0", None, synonyms=True)


def _settled(s: Session, step: str, resource_type: int, name: str, keys: list[str],
             expected: dict[str, str | None]) -> None:
    """DescribeConfigs until the alteration shows (Kafka 4 applies a config change a moment after answering
    it, through its metadata log); only the final answer is recorded."""
    body = {"resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": True, "include_documentation": False}

    def done(answer: dict[str, Any]) -> bool:
        values = {c["name"]: c["value"] for c in answer["results"][0]["configs"]}
        return all(values.get(k) == v for k, v in expected.items())

    s.wait_for(step, 32, 4, body, until=done, timeout=30)


@scenario()
def alter_topic_configs(s: Session) -> None:
    """IncrementalAlterConfigs on a topic: SET, DELETE, APPEND and SUBTRACT on the list config
    cleanup.policy, bad values, unknown names, read-only ones, validate_only; and the legacy AlterConfigs."""
    name = s.name("altered")
    create_topic(s, "create", name)
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes"]

    def after(step: str, **expected: str | None) -> None:
        _settled(s, step, TOPIC, name, keys, {k.replace("_", "."): v for k, v in expected.items()})

    _alter(s, "set retention.ms", TOPIC, name, [("retention.ms", SET, "1000")])
    after("after set", retention_ms="1000")
    _alter(s, "append compact", TOPIC, name, [("cleanup.policy", APPEND, "compact")])
    after("after append", cleanup_policy="delete,compact")
    _alter(s, "append compact again", TOPIC, name, [("cleanup.policy", APPEND, "compact")])
    _alter(s, "subtract delete", TOPIC, name, [("cleanup.policy", SUBTRACT, "delete")])
    after("after subtract", cleanup_policy="compact")
    _alter(s, "subtract what is not there", TOPIC, name, [("cleanup.policy", SUBTRACT, "delete")])
    _alter(s, "subtract the last", TOPIC, name, [("cleanup.policy", SUBTRACT, "compact")])
    after("after subtracting the last", cleanup_policy="")
    _alter(s, "append to a non-list config", TOPIC, name, [("retention.ms", APPEND, "5")])
    _alter(s, "subtract from a non-list config", TOPIC, name, [("max.message.bytes", SUBTRACT, "5")])
    _alter(s, "delete", TOPIC, name, [("retention.ms", DELETE, None)])
    after("after delete", retention_ms="604800000")
    _alter(s, "delete what is not set", TOPIC, name, [("retention.ms", DELETE, None)])
    _alter(s, "bad value", TOPIC, name, [("retention.ms", SET, "soon")])
    _alter(s, "value below minimum", TOPIC, name, [("segment.bytes", SET, "10")])
    _alter(s, "bad enum value", TOPIC, name, [("cleanup.policy", SET, "bogus")])
    _alter(s, "unknown config", TOPIC, name, [("no.such.config", SET, "1")])
    _alter(s, "same config twice", TOPIC, name, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])
    _alter(s, "set null", TOPIC, name, [("retention.ms", SET, None)])
    _alter(s, "unknown operation", TOPIC, name, [("retention.ms", 9, "1")])
    _alter(s, "validate only", TOPIC, name, [("retention.ms", SET, "2000")], validate_only=True)
    describe_configs(s, "validate only changed nothing", TOPIC, name, keys)
    _alter(s, "unknown topic", TOPIC, s.name("nope"), [("retention.ms", SET, "1000")])
    _alter(s, "several at once", TOPIC, name, [("retention.ms", SET, "7000"), ("max.message.bytes", SET, "2000"),
                                               ("cleanup.policy", SET, "delete,compact")])
    after("after several", retention_ms="7000", max_message_bytes="2000", cleanup_policy="delete,compact")
    s.request("legacy AlterConfigs replaces every override", ALTER_CONFIGS, 2, {"resources": [{
        "resource_type": TOPIC, "resource_name": name, "configs": [{"name": "retention.ms", "value": "9000"}]}],
        "validate_only": False})
    after("after legacy alter", retention_ms="9000", max_message_bytes="1048588", cleanup_policy="delete")
    s.request("legacy AlterConfigs bad value", ALTER_CONFIGS, 2, {"resources": [{
        "resource_type": TOPIC, "resource_name": name, "configs": [{"name": "retention.ms", "value": "x"}]}],
        "validate_only": False})


@scenario(fresh=True)
def alter_broker_configs(s: Session) -> None:
    """IncrementalAlterConfigs on the broker and the cluster default: dynamic ones, read-only ones,
    bad values; DescribeConfigs shows the source of each level."""
    keys = ["log.retention.ms", "message.max.bytes", "log.cleaner.backoff.ms"]

    def settled(step: str, resource: str, expected: dict[str, str | None]) -> None:
        _settled(s, step, BROKER, resource, keys, expected)

    _alter(s, "per broker", BROKER, "0", [("log.retention.ms", SET, "7200000")])
    _alter(s, "cluster default", BROKER, "", [("log.retention.ms", SET, "3600000"),
                                              ("message.max.bytes", SET, "2000000")])
    settled("both levels", "0", {"log.retention.ms": "7200000", "message.max.bytes": "2000000"})
    settled("the cluster default level", "", {"log.retention.ms": "3600000"})
    _alter(s, "read-only config", BROKER, "0", [("broker.id", SET, "5")])
    _alter(s, "static config", BROKER, "0", [("auto.create.topics.enable", SET, "false")])
    _alter(s, "bad value", BROKER, "0", [("log.retention.ms", SET, "soon")])
    _alter(s, "unknown config", BROKER, "0", [("no.such.config", SET, "1")])
    _alter(s, "another broker", BROKER, "7", [("log.retention.ms", SET, "1000")])
    _alter(s, "delete per broker", BROKER, "0", [("log.retention.ms", DELETE, None)])
    settled("after delete", "0", {"log.retention.ms": "3600000"})
    _alter(s, "delete cluster default", BROKER, "", [("log.retention.ms", DELETE, None),
                                                     ("message.max.bytes", DELETE, None)])
    settled("back to static", "0", {"log.retention.ms": None, "message.max.bytes": "1048588"})


# Broker settings that topic configs default from, set when the broker starts (STATIC_BROKER_CONFIG).
BROKER_TOPIC_DEFAULTS = {"min.insync.replicas": "2", "unclean.leader.election.enable": "true",
                         "log.retention.bytes": "1073741824", "log.segment.bytes": "536870912",
                         "message.max.bytes": "2000000", "log.cleanup.policy": "compact"}


@scenario(releases=("3.9", "4.4"), config=BROKER_TOPIC_DEFAULTS, fresh=True)
def describe_topic_defaults_from_the_broker(s: Session) -> None:
    """A topic without overrides on a broker started with topic-level defaults of its own: each is reported
    with the broker's value and source (STATIC_BROKER_CONFIG, under a cluster-wide dynamic default once one is
    set) and its synonyms; an override still comes first."""
    keys = ["min.insync.replicas", "unclean.leader.election.enable", "retention.bytes", "segment.bytes",
            "max.message.bytes", "cleanup.policy", "retention.ms"]
    name = s.name("defaults")
    create_topic(s, "create", name)
    describe_configs(s, "the broker's defaults", TOPIC, name, keys)
    _alter(s, "cluster-wide default", BROKER, "", [("min.insync.replicas", SET, "3")])
    _settled(s, "under a dynamic default", TOPIC, name, keys, {"min.insync.replicas": "3"})
    _alter(s, "override", TOPIC, name, [("min.insync.replicas", SET, "1")])
    _settled(s, "with an override", TOPIC, name, keys, {"min.insync.replicas": "1"})
