"""Topic-level configuration: Kafka's topic config names, validation and the broker-wide defaults.

Values are kept as Kafka's strings (what DescribeConfigs and CreateTopics v5+ report); `log_config`
turns the effective values into the typed `LogConfig` the partition log uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.config.options import BrokerConfig
from broker.log.config import LogConfig

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class InvalidConfigError(ValueError):
    """A topic config Kafka would reject with INVALID_CONFIG."""


# Kafka's ConfigDef types, as DescribeConfigs v3+ reports them (ConfigType).
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7


def _typed(check: Callable[[str], None], config_type: int) -> Callable[[str], None]:
    check.config_type = config_type  # type: ignore[attr-defined]
    return check


def config_type(check: Callable[[str], None]) -> int:
    return getattr(check, "config_type", 0)


def _int(lo: int, hi: int) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            n = int(value)
        except ValueError:
            raise InvalidConfigError(f"value {value!r} is not a number") from None
        if not lo <= n <= hi:
            raise InvalidConfigError(f"value {n} must be in [{lo}, {hi}]")
    return _typed(check, INT if hi <= INT32_MAX else LONG)


def _choice(*allowed: str, many: bool = False) -> Callable[[str], None]:
    def check(value: str) -> None:
        items = [v.strip() for v in value.split(",")] if many else [value]
        if not items or any(v not in allowed for v in items):
            raise InvalidConfigError(f"value {value!r} must be {'some of' if many else 'one of'} {allowed}")
    return _typed(check, LIST if many else STRING)


def _float(lo: float, hi: float) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            x = float(value)
        except ValueError:
            raise InvalidConfigError(f"value {value!r} is not a number") from None
        if not lo <= x <= hi:
            raise InvalidConfigError(f"value {x} must be in [{lo}, {hi}]")
    return _typed(check, DOUBLE)


_bool = _typed(_choice("true", "false"), BOOLEAN)


def _version(value: str) -> None:
    """A Kafka release/IBP version string ("0.10.0", "2.8-IV1", "3.0-IV1")."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+){0,2}(-IV\d+)?", value):
        raise InvalidConfigError(f"Version `{value}` is not a valid version")


def _replica_list(value: str) -> None:
    """"*" or "partition:broker,..." (Kafka's ThrottledReplicaListValidator)."""
    if value.strip() in ("", "*"):
        return
    if not all(re.fullmatch(r"\s*\d+:\d+\s*", item) for item in value.split(",")):
        raise InvalidConfigError(f"{value} must be the literal '*' or a list of replicas in the following "
                                 "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    check: Callable[[str], None]
    default: Callable[[BrokerConfig], str]
    broker_synonym: str | None = None  # the broker config it defaults from (DescribeConfigs synonyms)


def _const(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _cfg: value


# Kafka's topic configs. All are validated and stored; those the log uses are marked in log_config().
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in (
    TopicConfigDef("cleanup.policy", _choice("delete", "compact", many=True),
                   lambda c: c.log_cleanup_policy, "log.cleanup.policy"),
    TopicConfigDef("compression.type", _choice("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
                   _const("producer"), "compression.type"),
    TopicConfigDef("delete.retention.ms", _int(0, INT64_MAX), lambda c: str(c.log_cleaner_delete_retention_ms),
                   "log.cleaner.delete.retention.ms"),
    TopicConfigDef("file.delete.delay.ms", _int(0, INT64_MAX), _const("60000"), "log.segment.delete.delay.ms"),
    TopicConfigDef("flush.messages", _int(1, INT64_MAX), _const(str(INT64_MAX)), "log.flush.interval.messages"),
    TopicConfigDef("flush.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)), "log.flush.interval.ms"),
    TopicConfigDef("index.interval.bytes", _int(0, INT32_MAX),
                   lambda c: str(c.log_index_interval_bytes), "log.index.interval.bytes"),
    TopicConfigDef("max.compaction.lag.ms", _int(1, INT64_MAX), lambda c: str(c.log_cleaner_max_compaction_lag_ms),
                   "log.cleaner.max.compaction.lag.ms"),
    TopicConfigDef("max.message.bytes", _int(0, INT32_MAX), lambda c: str(c.message_max_bytes), "message.max.bytes"),
    TopicConfigDef("message.timestamp.after.max.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)),
                   "log.message.timestamp.after.max.ms"),
    TopicConfigDef("message.timestamp.before.max.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)),
                   "log.message.timestamp.before.max.ms"),
    TopicConfigDef("message.timestamp.type", _choice("CreateTime", "LogAppendTime"),
                   lambda c: c.log_message_timestamp_type, "log.message.timestamp.type"),
    TopicConfigDef("min.cleanable.dirty.ratio", _float(0.0, 1.0), lambda c: str(c.log_cleaner_min_cleanable_ratio),
                   "log.cleaner.min.cleanable.ratio"),
    TopicConfigDef("min.compaction.lag.ms", _int(0, INT64_MAX), lambda c: str(c.log_cleaner_min_compaction_lag_ms),
                   "log.cleaner.min.compaction.lag.ms"),
    TopicConfigDef("min.insync.replicas", _int(1, INT32_MAX), _const("1"), "min.insync.replicas"),
    TopicConfigDef("preallocate", _bool, _const("false"), "log.preallocate"),
    TopicConfigDef("retention.bytes", _int(-1, INT64_MAX), lambda c: str(c.log_retention_bytes),
                   "log.retention.bytes"),
    TopicConfigDef("retention.ms", _int(-1, INT64_MAX), lambda c: str(c.log_retention_ms), "log.retention.ms"),
    TopicConfigDef("segment.bytes", _int(14, INT32_MAX), lambda c: str(c.log_segment_bytes), "log.segment.bytes"),
    TopicConfigDef("segment.index.bytes", _int(4, INT32_MAX), _const("10485760"), "log.index.size.max.bytes"),
    TopicConfigDef("segment.jitter.ms", _int(0, INT64_MAX), _const("0"), "log.roll.jitter.ms"),
    TopicConfigDef("segment.ms", _int(1, INT64_MAX), lambda c: str(c.log_roll_ms), "log.roll.ms"),
    TopicConfigDef("unclean.leader.election.enable", _bool, _const("false"), "unclean.leader.election.enable"),
    # Kafka 3.x accepts these and, on a 3.x log format, ignores them (message.format.version since KIP-724;
    # message.downconversion.enable does apply: to Fetch v0-3);
    # tiered storage (KIP-405) and replication throttles are kept and reported, and have no effect here.
    TopicConfigDef("message.format.version", _typed(_version, STRING), _const("3.0-IV1"),
                   "log.message.format.version"),
    TopicConfigDef("message.downconversion.enable", _bool, _const("true"), "log.message.downconversion.enable"),
    TopicConfigDef("message.timestamp.difference.max.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)),
                   "log.message.timestamp.difference.max.ms"),
    TopicConfigDef("follower.replication.throttled.replicas", _typed(_replica_list, LIST), _const(""),
                   "follower.replication.throttled.replicas"),
    TopicConfigDef("leader.replication.throttled.replicas", _typed(_replica_list, LIST), _const(""),
                   "leader.replication.throttled.replicas"),
    TopicConfigDef("remote.storage.enable", _bool, _const("false"), None),
    TopicConfigDef("local.retention.ms", _int(-2, INT64_MAX), _const("-2"), "log.local.retention.ms"),
    TopicConfigDef("local.retention.bytes", _int(-2, INT64_MAX), _const("-2"), "log.local.retention.bytes"),
)}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Check names and values as Kafka does; returns the non-null overrides."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfigError(f"Null value not supported for topic configs: {name}")
        try:
            definition.check(value)
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: {exc}") from None
        out[name] = value
    return out


def effective_configs(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """Every topic config with its effective value (override, else the broker default)."""
    return {name: overrides.get(name, d.default(broker)) for name, d in TOPIC_CONFIGS.items()}


def log_config(overrides: Mapping[str, str], broker: BrokerConfig) -> LogConfig:
    values = effective_configs(overrides, broker)
    return LogConfig(
        segment_bytes=int(values["segment.bytes"]),
        segment_ms=int(values["segment.ms"]),
        retention_ms=int(values["retention.ms"]),
        retention_bytes=int(values["retention.bytes"]),
        max_message_bytes=int(values["max.message.bytes"]),
        index_interval_bytes=int(values["index.interval.bytes"]),
        message_timestamp_type=values["message.timestamp.type"],
        compression_type=values["compression.type"],
        message_timestamp_before_max_ms=int(values["message.timestamp.before.max.ms"]),
        message_timestamp_after_max_ms=int(values["message.timestamp.after.max.ms"]),
        message_downconversion_enable=values["message.downconversion.enable"].lower() == "true",
        cleanup_policy=values["cleanup.policy"],
        min_cleanable_dirty_ratio=float(values["min.cleanable.dirty.ratio"]),
        delete_retention_ms=int(values["delete.retention.ms"]),
        min_compaction_lag_ms=int(values["min.compaction.lag.ms"]),
        max_compaction_lag_ms=int(values["max.compaction.lag.ms"]),
    )
