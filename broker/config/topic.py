"""Topic-level configuration: Kafka's topic config names, validation and the broker-wide defaults.

Values are kept as Kafka's strings (what DescribeConfigs and CreateTopics v5+ report); `log_config`
turns the effective values into the typed `LogConfig` the partition log uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

from broker.config.kafka_versions import DEFAULT, check_release, release_key
from broker.config.options import BrokerConfig
from broker.log.config import LogConfig

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class InvalidConfigError(ValueError):
    """A topic config Kafka would reject with INVALID_CONFIG."""


class InvalidValueError(InvalidConfigError):
    """Kafka's ConfigException(name, value, message): "Invalid value <value> for configuration <name>:
    <message>", where the value shown may be one element of a list and the message may name the config."""

    def __init__(self, shown: str, message: str) -> None:
        super().__init__(message)
        self.shown = shown
        self.message = message

    def describe(self, name: str) -> str:
        return f"Invalid value {self.shown} for configuration {name}: {self.message.replace('{name}', name)}"


def invalid_value_message(name: str, value: str, exc: InvalidConfigError) -> str:
    if isinstance(exc, InvalidValueError):
        return exc.describe(name)
    return f"Invalid value {value} for configuration {name}: {exc}"


def parse_list(value: str) -> list[str]:
    """Kafka's ConfigDef LIST parsing: trimmed, split on commas with the whitespace around them, empty
    elements kept (a trailing comma leaves ""), nothing at all an empty list."""
    trimmed = value.strip()
    return [] if not trimmed else re.split(r"\s*,\s*", trimmed)


def normalize_list(value: str) -> str:
    return ",".join(parse_list(value))


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
    """ValidString, or (many) ValidList: every element one of the allowed strings; an empty list is
    accepted (Kafka 3.7-4.1 alike: a SUBTRACT of the last element of cleanup.policy leaves "")."""
    def check(value: str) -> None:
        for item in (parse_list(value) if many else [value]):
            if item not in allowed:
                raise InvalidValueError(item, f"String must be one of: {', '.join(allowed)}")
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


def _one_of_range(special: int, lo: int, hi: int) -> Callable[[str], None]:
    """`special` or a number in [lo, hi] (compression.gzip.level: -1 or 1..9)."""
    within = _int(lo, hi)

    def check(value: str) -> None:
        if value.strip() != str(special):
            within(value)
    return check


def _version(value: str) -> None:
    """A Kafka release/IBP version string ("0.10.0", "2.8-IV1", "3.0-IV1")."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+){0,2}(-IV\d+)?", value):
        raise InvalidConfigError(f"Version `{value}` is not a valid version")


def _replica_list(value: str) -> None:
    """"*" or "partition:broker,..." (Kafka's ThrottledReplicaListValidator)."""
    items = parse_list(value)
    if items in ([], ["*"]):
        return
    if not all(re.fullmatch(r"\d+:\d+", item) for item in items):
        raise InvalidValueError(f"[{', '.join(items)}]", "{name} must be the literal '*' or a list of replicas "
                                "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config: its check, its default from the broker's config and that config's name."""

    name: str
    check: Callable[[str], None]
    default: Callable[[BrokerConfig], str]
    broker_synonym: str | None = None  # the broker config it defaults from (DescribeConfigs synonyms)
    since: str | None = None  # the first Kafka release that has it (None: every profile)
    until: str | None = None  # the first Kafka release that no longer has it
    missing_in: tuple[str, ...] = ()  # releases in between that lack it


def _const(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _cfg: value


def _since(release: str, then: str, before: str) -> Callable[[BrokerConfig], str]:
    """A default that changed in `release` (the profile's release decides)."""
    return lambda cfg: then if release_key(check_release(cfg.kafka_version)) >= release_key(release) else before


# Kafka's topic configs. All are validated and stored; those the log uses are marked in log_config().
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in (
    TopicConfigDef("cleanup.policy", _choice("compact", "delete", many=True),
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
    # Kafka 4.0 refuses records more than an hour ahead by default (KIP-1067).
    TopicConfigDef("message.timestamp.after.max.ms", _int(0, INT64_MAX), _since("4.0", "3600000", str(INT64_MAX)),
                   "log.message.timestamp.after.max.ms"),
    TopicConfigDef("message.timestamp.before.max.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)),
                   "log.message.timestamp.before.max.ms"),
    TopicConfigDef("message.timestamp.type", _choice("CreateTime", "LogAppendTime"),
                   lambda c: c.log_message_timestamp_type, "log.message.timestamp.type"),
    TopicConfigDef("min.cleanable.dirty.ratio", _float(0.0, 1.0), lambda c: str(c.log_cleaner_min_cleanable_ratio),
                   "log.cleaner.min.cleanable.ratio"),
    TopicConfigDef("min.compaction.lag.ms", _int(0, INT64_MAX), lambda c: str(c.log_cleaner_min_compaction_lag_ms),
                   "log.cleaner.min.compaction.lag.ms"),
    TopicConfigDef("min.insync.replicas", _int(1, INT32_MAX), lambda c: str(c.min_insync_replicas),
                   "min.insync.replicas"),
    TopicConfigDef("preallocate", _bool, _const("false"), "log.preallocate"),
    TopicConfigDef("retention.bytes", _int(-1, INT64_MAX), lambda c: str(c.log_retention_bytes),
                   "log.retention.bytes"),
    TopicConfigDef("retention.ms", _int(-1, INT64_MAX), lambda c: str(c.log_retention_ms), "log.retention.ms"),
    TopicConfigDef("segment.bytes", _int(14, INT32_MAX), lambda c: str(c.log_segment_bytes), "log.segment.bytes"),
    TopicConfigDef("segment.index.bytes", _int(4, INT32_MAX), _const("10485760"), "log.index.size.max.bytes"),
    TopicConfigDef("segment.jitter.ms", _int(0, INT64_MAX), _const("0"), "log.roll.jitter.ms"),
    TopicConfigDef("segment.ms", _int(1, INT64_MAX), lambda c: str(c.log_roll_ms), "log.roll.ms"),
    TopicConfigDef("unclean.leader.election.enable", _bool, lambda c: str(c.unclean_leader_election_enable).lower(),
                   "unclean.leader.election.enable"),
    # Kafka 3.x accepts these and, on a 3.x log format, ignores them (message.format.version since KIP-724;
    # message.downconversion.enable does apply: to Fetch v0-3); Kafka 4.0 removed them (KIP-724, KIP-937).
    # Compression levels (KIP-390), tiered storage (KIP-405, KIP-950), replication throttles and the rest are
    # kept and reported, and have no effect here.
    TopicConfigDef("message.format.version", _typed(_version, STRING), _const("3.0-IV1"),
                   "log.message.format.version", until="4.0"),
    TopicConfigDef("message.downconversion.enable", _bool, _const("true"), "log.message.downconversion.enable",
                   until="4.0"),
    TopicConfigDef("message.timestamp.difference.max.ms", _int(0, INT64_MAX), _const(str(INT64_MAX)),
                   "log.message.timestamp.difference.max.ms", until="4.0"),
    TopicConfigDef("compression.gzip.level", _typed(_one_of_range(-1, 1, 9), INT), _const("-1"),
                   "compression.gzip.level", since="3.8"),
    TopicConfigDef("compression.lz4.level", _int(1, 17), _const("9"), "compression.lz4.level", since="3.8"),
    TopicConfigDef("compression.zstd.level", _int(-131072, 22), _const("3"), "compression.zstd.level",
                   since="3.8"),
    TopicConfigDef("follower.replication.throttled.replicas", _typed(_replica_list, LIST), _const(""), None),
    TopicConfigDef("leader.replication.throttled.replicas", _typed(_replica_list, LIST), _const(""), None),
    TopicConfigDef("remote.storage.enable", _bool, _const("false"), None),
    TopicConfigDef("local.retention.ms", _int(-2, INT64_MAX), _const("-2"), "log.local.retention.ms"),
    TopicConfigDef("local.retention.bytes", _int(-2, INT64_MAX), _const("-2"), "log.local.retention.bytes"),
    TopicConfigDef("remote.log.copy.disable", _bool, _const("false"), None, since="3.9"),
    TopicConfigDef("remote.log.delete.on.disable", _bool, _const("false"), None, since="3.9"),
    TopicConfigDef("remote.copy.lag.ms", _int(0, INT64_MAX), _const("0"), "log.remote.copy.lag.ms", since="4.4"),
    TopicConfigDef("remote.copy.lag.bytes", _int(-1, INT64_MAX), _const("-1"), "log.remote.copy.lag.bytes",
                   since="4.4"),
    # In 4.2.2 and 4.4.0, not in 4.3.1 (the pinned releases, recorded).
    TopicConfigDef("max.decompressed.message.bytes", _int(0, INT32_MAX), _const("2147483639"),
                   "max.decompressed.message.bytes", since="4.2", missing_in=("4.3",)),
    TopicConfigDef("errors.deadletterqueue.group.enable", _bool, _const("false"), None, since="4.4"),
)}


def _available(definition: TopicConfigDef, release: str) -> bool:
    key = release_key(release)
    return ((definition.since is None or key >= release_key(definition.since))
            and (definition.until is None or key < release_key(definition.until))
            and release not in definition.missing_in)


@cache
def topic_configs(kafka_version: str = DEFAULT) -> dict[str, TopicConfigDef]:
    """The topic configs of a Kafka release (its version profile): Kafka refuses the others as unknown."""
    release = check_release(kafka_version)
    return {name: d for name, d in TOPIC_CONFIGS.items() if _available(d, release)}


def validate_topic_configs(configs: Mapping[str, str | None], kafka_version: str = DEFAULT) -> dict[str, str]:
    """Check names and values as Kafka (the profile's release) does; returns the non-null overrides."""
    known = topic_configs(kafka_version)
    out: dict[str, str] = {}
    for name, value in configs.items():
        definition = known.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfigError(f"Null value not supported for topic configs: {name}")
        try:
            definition.check(value)
        except InvalidConfigError as exc:
            raise InvalidConfigError(invalid_value_message(name, value, exc)) from None
        # Kafka keeps a list as its parsed elements: "compact, delete" is stored as "compact,delete".
        out[name] = normalize_list(value) if config_type(definition.check) == LIST else value
    return out


def effective_configs(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """Every topic config of the profile's release with its effective value (override, else the broker
    default)."""
    return {name: overrides.get(name, d.default(broker)) for name, d in topic_configs(broker.kafka_version).items()}


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
        # A 4.x profile has no such config (and no down-conversion to do).
        message_downconversion_enable=values.get("message.downconversion.enable", "true").lower() == "true",
        cleanup_policy=values["cleanup.policy"],
        min_cleanable_dirty_ratio=float(values["min.cleanable.dirty.ratio"]),
        delete_retention_ms=int(values["delete.retention.ms"]),
        min_compaction_lag_ms=int(values["min.compaction.lag.ms"]),
        max_compaction_lag_ms=int(values["max.compaction.lag.ms"]),
    )
