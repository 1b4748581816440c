"""Per-group configs (KIP-848/KIP-932, ConfigResource type GROUP): the settings a group overrides over the
broker's defaults, altered with IncrementalAlterConfigs and described with DescribeConfigs, as the GroupConfig of
the profile's Kafka release defines them (names, defaults and bounds checked against live Kafka 4.2, 4.3 and
4.4). Kept in `<data-dir>/meta/group-configs.json` (Kafka keeps them in its metadata log)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from broker.config.kafka_versions import release_key
from broker.config.options import BrokerConfig
from broker.log.durable_file import write_atomically

_DURATION = re.compile(r"^by_duration:P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$")


class GroupConfigError(ValueError):
    pass


def duration_ms(text: str) -> int:
    """An ISO-8601 duration of share.auto.offset.reset's `by_duration:` (PnDTnHnMn.nS, checked by _DURATION), in
    milliseconds."""
    found = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text)
    if found is None:
        raise GroupConfigError(f"not a duration: {text!r}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    default: Callable[[BrokerConfig], str]
    check: Callable[[str, BrokerConfig], str | None]  # an error message, or None
    kind: int  # DescribeConfigs ConfigType: 1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 7 LIST
    since: str = "4.0"  # the first Kafka release that has it
    described: bool = True  # DescribeConfigs lists it (Kafka 4.4 keeps a few streams settings internal)
    broker_name: str | None = None  # from 4.3, the synonym DescribeConfigs gives its default: the broker setting


def _int_between(lo: Callable[[BrokerConfig], int], hi: Callable[[BrokerConfig], int]
                 ) -> Callable[[str, BrokerConfig], str | None]:
    def check(value: str, config: BrokerConfig) -> str | None:
        try:
            n = int(value)
        except ValueError:
            return "Not a number of type INT"
        if not lo(config) <= n <= hi(config):
            if n < lo(config):
                return f"Value must be at least {lo(config)}"
            return f"Value must be no more than {hi(config)}"
        return None
    return check


def _int_in_range(name: str, at_least: int, lo: int, hi: int) -> Callable[[str, BrokerConfig], str | None]:
    """Kafka's GroupConfig: the type's own lower bound, then the range the broker's group.*.min/max settings
    allow (Kafka's defaults; minibroker has no settings for them)."""
    own = _int_between(lambda c: at_least, lambda c: 2**31 - 1)

    def check(value: str, config: BrokerConfig) -> str | None:
        problem = own(value, config)
        if problem is None and not lo <= int(value) <= hi:
            return f"{name} must be in the range {lo} to {hi} inclusive."
        return problem
    return check


def _one_of(*choices: str) -> Callable[[str, BrokerConfig], str | None]:
    def check(value: str, config: BrokerConfig) -> str | None:
        return None if value in choices else f"String must be one of: {', '.join(choices)}"
    return check


def _boolean(value: str, config: BrokerConfig) -> str | None:
    return None if value.lower() in ("true", "false") else "Expected value to be either true or false"


def _tags(value: str, config: BrokerConfig) -> str | None:
    tags = [t.strip() for t in value.split(",") if t.strip()]
    return "streams.rack.aware.assignment.tags must not contain duplicate tag keys." \
        if len(tags) != len(set(tags)) else None


def _reset(value: str, config: BrokerConfig) -> str | None:
    if value in ("latest", "earliest") or _DURATION.match(value):
        return None
    return (f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


def _dead_letter_topic(value: str, config: BrokerConfig) -> str | None:
    if value.startswith("__"):
        return "DLQ topic name must not start with '__'"
    if value:  # Kafka 4.4 copies archived records there (share.version 2); minibroker does not
        return "share group dead-letter queues (KIP-1191) are not served by minibroker"
    return None


GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (
    GroupConfigDef("consumer.session.timeout.ms", lambda c: str(c.group_consumer_session_timeout_ms),
                   _int_in_range("consumer.session.timeout.ms", 1, 45_000, 60_000), 3,
                   broker_name="group.consumer.session.timeout.ms"),
    GroupConfigDef("consumer.heartbeat.interval.ms", lambda c: str(c.group_consumer_heartbeat_interval_ms),
                   _int_in_range("consumer.heartbeat.interval.ms", 1, 5_000, 15_000), 3,
                   broker_name="group.consumer.heartbeat.interval.ms"),
    GroupConfigDef("share.session.timeout.ms", lambda c: str(c.group_share_session_timeout_ms),
                   _int_in_range("share.session.timeout.ms", 1, 45_000, 60_000), 3,
                   broker_name="group.share.session.timeout.ms"),
    GroupConfigDef("share.heartbeat.interval.ms", lambda c: str(c.group_share_heartbeat_interval_ms),
                   _int_in_range("share.heartbeat.interval.ms", 1, 5_000, 15_000), 3,
                   broker_name="group.share.heartbeat.interval.ms"),
    GroupConfigDef("share.record.lock.duration.ms", lambda c: str(c.group_share_record_lock_duration_ms),
                   _int_in_range("share.record.lock.duration.ms", 1000, 15_000, 60_000), 3,
                   broker_name="group.share.record.lock.duration.ms"),
    GroupConfigDef("share.auto.offset.reset", lambda c: "latest", _reset, 2),
    GroupConfigDef("share.isolation.level", lambda c: "read_uncommitted",
                   _one_of("read_committed", "read_uncommitted"), 2),
    # Kafka 4.3
    GroupConfigDef("consumer.assignment.interval.ms", lambda c: "1000",
                   _int_between(lambda c: 0, lambda c: 2**31 - 1), 3, "4.3",
                   broker_name="group.consumer.assignment.interval.ms"),
    GroupConfigDef("share.assignment.interval.ms", lambda c: "1000",
                   _int_between(lambda c: 0, lambda c: 2**31 - 1), 3, "4.3",
                   broker_name="group.share.assignment.interval.ms"),
    GroupConfigDef("share.delivery.count.limit", lambda c: str(c.group_share_delivery_count_limit),
                   _int_in_range("share.delivery.count.limit", 2, 2, 10), 3, "4.3",
                   broker_name="group.share.delivery.count.limit"),
    GroupConfigDef("share.partition.max.record.locks", lambda c: str(c.group_share_partition_max_record_locks),
                   _int_in_range("share.partition.max.record.locks", 100, 100, 4000), 3, "4.3",
                   broker_name="group.share.partition.max.record.locks"),
    GroupConfigDef("share.renew.acknowledge.enable", lambda c: "true", _boolean, 1, "4.3"),
    # Kafka 4.4 (KIP-1191, share.version 2)
    GroupConfigDef("errors.deadletterqueue.topic.name", lambda c: "", _dead_letter_topic, 2, "4.4"),
    GroupConfigDef("errors.deadletterqueue.copy.record.enable", lambda c: "false", _boolean, 1, "4.4"),
    # Streams groups (KIP-1071): Kafka's defaults and bounds of the broker's group.streams.* settings
    # (coordinator/streams_group_coordinator.StreamsGroupConfig); 4.4 keeps four of them out of DescribeConfigs.
    GroupConfigDef("streams.session.timeout.ms", lambda c: "45000",
                   _int_in_range("streams.session.timeout.ms", 1, 45_000, 60_000), 3, "4.1",
                   broker_name="group.streams.session.timeout.ms"),
    GroupConfigDef("streams.heartbeat.interval.ms", lambda c: "5000",
                   _int_in_range("streams.heartbeat.interval.ms", 1, 5_000, 15_000), 3, "4.1",
                   broker_name="group.streams.heartbeat.interval.ms"),
    GroupConfigDef("streams.num.standby.replicas", lambda c: "0", _int_between(lambda c: 0, lambda c: 2), 3, "4.1",
                   broker_name="group.streams.num.standby.replicas"),
    GroupConfigDef("streams.initial.rebalance.delay.ms", lambda c: "3000",
                   _int_between(lambda c: 0, lambda c: 2**31 - 1), 3, "4.2",
                   broker_name="group.streams.initial.rebalance.delay.ms"),
    GroupConfigDef("streams.assignment.interval.ms", lambda c: "1000",
                   _int_in_range("streams.assignment.interval.ms", 0, 0, 15_000), 3, "4.3",
                   broker_name="group.streams.assignment.interval.ms"),
    GroupConfigDef("streams.assignor.offload.enable", lambda c: "true", _boolean, 1, "4.3", described=False),
    GroupConfigDef("streams.rack.aware.assignment.tags", lambda c: "", _tags, 7, "4.4",
                   broker_name="group.streams.rack.aware.assignment.tags"),
    GroupConfigDef("streams.task.offset.interval.ms", lambda c: "60000",
                   _int_between(lambda c: 15_000, lambda c: 2**31 - 1), 3, "4.4", described=False),
    GroupConfigDef("streams.num.warmup.replicas", lambda c: "2", _int_between(lambda c: 0, lambda c: 20), 3, "4.4",
                   described=False),
    GroupConfigDef("streams.acceptable.recovery.lag", lambda c: "10000",
                   _int_between(lambda c: 0, lambda c: 2**63 - 1), 5, "4.4", described=False),
    GroupConfigDef("streams.assignor.name", lambda c: "sticky", _one_of("sticky"), 2, "4.4",
                   broker_name="group.streams.assignors"),
)}


def group_configs_of(release: str) -> dict[str, GroupConfigDef]:
    """The group configs a Kafka release has."""
    return {name: d for name, d in GROUP_CONFIGS.items() if release_key(release) >= release_key(d.since)}


class GroupConfigStoreError(Exception):
    """The cluster's store of group configs could not take a change."""


class GroupConfigStore(Protocol):
    """Where a cluster keeps its group configs (broker.cluster.zk_cluster.ZkGroupConfigStore)."""

    async def save(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """Raises GroupConfigStoreError when it cannot."""


class GroupConfigs:
    def __init__(self, config: BrokerConfig, path: Path, release: str, store: GroupConfigStore | None = None,
                 initial: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """A single broker keeps them in `path`; a cluster's brokers in `store`, shared (`initial`: what it holds
        now; `replace` follows the other brokers' changes)."""
        self.config = config
        self.path = path
        self.store = store
        self.definitions = group_configs_of(release)
        self.overrides: dict[str, dict[str, str]] = {}
        if initial is not None:
            self.overrides = {g: dict(c) for g, c in initial.items() if c}
        elif path.exists():
            self.overrides = json.loads(path.read_text())

    def replace(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """Another broker of the cluster changed the group's configs."""
        if overrides:
            self.overrides[group_id] = dict(overrides)
        else:
            self.overrides.pop(group_id, None)

    async def save(self, group_id: str) -> None:
        """A cluster's change goes to the store, for every broker (a single broker's is saved by `alter`)."""
        if self.store is not None:
            await self.store.save(group_id, self.overrides.get(group_id, {}))

    def get(self, group_id: str, name: str) -> str | None:
        return self.overrides.get(group_id, {}).get(name)

    def effective(self, group_id: str) -> dict[str, tuple[str, bool]]:
        """{name: (value, overridden)} of every group config DescribeConfigs lists."""
        own = self.overrides.get(group_id, {})
        return {name: (own[name], True) if name in own else (d.default(self.config), False)
                for name, d in self.definitions.items() if d.described}

    def alter(self, group_id: str, overrides: Mapping[str, str], *, validate_only: bool = False) -> None:
        for name, value in overrides.items():
            definition = self.definitions.get(name)
            if definition is None:
                raise GroupConfigError(f"Unknown group config name: {name}")
            problem = definition.check(value, self.config)
            if problem is not None:
                raise GroupConfigError(f"Invalid value {value} for configuration {name}: {problem}")
        if "streams.session.timeout.ms" in self.definitions:
            session = int(overrides.get("streams.session.timeout.ms", "45000"))
            heartbeat = int(overrides.get("streams.heartbeat.interval.ms", "5000"))
            if session <= heartbeat:  # Kafka's validateSessionExceedsHeartbeat
                raise GroupConfigError(f"streams.session.timeout.ms ({session}) must be greater than "
                                       f"streams.heartbeat.interval.ms ({heartbeat})")
        if validate_only:
            return
        self.replace(group_id, overrides)
        if self.store is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps(self.overrides, sort_keys=True))
