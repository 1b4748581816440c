"""DescribeConfigs: topic configs (override or broker default, with Kafka's sources and synonyms), this
broker's own settings (static, or dynamic: see broker.dynamic_config; the others are read-only) and its
loggers' levels (BROKER_LOGGER, broker.config.loggers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.config import loggers
from broker.config.dynamic import (
    BROKER_LEVEL,
    DEFAULT_LEVEL,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    INERT,
    RECONFIGURABLE,
    DynamicConfigs,
    listeners_value,
)
from broker.config.group_configs import GROUP_CONFIGS
from broker.config.options import OPTIONS, BrokerConfig
from broker.config.topic import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING, config_type, topic_configs
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized, config_resource_error
from broker.services.topics import TopicError, validate_topic_name
from protocol.header import ErrorCode

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
# Kafka's ConfigSource
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_GROUP_CONFIG = 8
GROUP = 32
DYNAMIC_BROKER_LOGGER_CONFIG = 6

_DEFAULTS = BrokerConfig()
_BROKER_OPTIONS = {o.kafka_name: o for o in OPTIONS}
# Broker settings whose Kafka default is null: the coarser setting decides (log.retention.hours,
# log.roll.hours, ...). Unset, they are described with no value and list no default synonym.
NULL_DEFAULTS = {"log.retention.ms", "log.roll.ms", "log.flush.interval.ms", "log.roll.jitter.ms",
                 "zookeeper.connection.timeout.ms"}
# Once such a setting is set at some level, Kafka's synonyms go on to the coarser setting's default.
_SYNONYM_TAILS = {"log.retention.ms": ("log.retention.hours", "168"), "log.roll.ms": ("log.roll.hours", "168")}
# Kafka's config types of the broker options whose Python type does not say (DescribeConfigs v3+).
_LONG_OPTIONS = {"log.roll.ms", "log.retention.ms", "log.retention.bytes", "log.retention.check.interval.ms",
                 "log.cleaner.backoff.ms", "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
                 "log.cleaner.max.compaction.lag.ms", "connections.max.idle.ms",
                 "offsets.retention.check.interval.ms", "producer.id.expiration.check.interval.ms",
                 "controlled.shutdown.timeout.ms", "controlled.shutdown.retry.backoff.ms",
                 "leader.imbalance.check.interval.seconds", "replica.lag.time.max.ms"}
_SHORT_OPTIONS = {"offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                  "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr"}
# Types Kafka 4.0 changed, as the 3.x releases describe them: name -> (release of the change, older type).
_OLDER_KINDS = {"group.share.max.size": ("4.0", 4)}  # SHORT
_LIST_OPTIONS = {"log.cleanup.policy", "group.consumer.assignors"}
# Defaults Kafka 4.0 changed, as the 3.x releases describe them: name -> (release of the change, older value).
_OLDER_DEFAULTS = {
    "group.consumer.assignors": ("4.0", "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                                        "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
    "group.share.partition.max.record.locks": ("4.0", "200"),
}
# Listeners and log.dirs are described as a STRING up to Kafka 4.1 and as a LIST by 4.4 (recorded from both).
LISTS_SINCE_4_4 = {"listeners", "advertised.listeners", "log.dirs"}
LISTENERS_LIST_SINCE = "4.4"
# Settings minibroker has without an option to change them, described with Kafka's defaults (what this
# broker does): name -> (value, config type, read-only).
SHORT = 4
FIXED = {k: v for k, v in {
    "compression.type": ("producer", STRING, False),  # batches are stored as produced
    "delete.topic.enable": ("true", BOOLEAN, True),
    "log.retention.hours": ("168", INT, True),  # log.retention.ms decides when set
    "log.roll.hours": ("168", INT, True),
    "min.insync.replicas": ("1", INT, False),  # a single broker
    "unclean.leader.election.enable": ("false", BOOLEAN, False),
}.items() if k not in _BROKER_OPTIONS}  # (those that are options of the broker are described as options)
# Kafka 4.1 and later format a cluster with a cluster-wide min.insync.replicas (KIP-966's ELR), a dynamic
# default holding the broker's own setting at format time (4.0 does not: recorded from 4.0.2, 4.1.2 and 4.4.0
# started with min.insync.replicas=2).
FORMATTED_DEFAULTS_SINCE = ("4.1", ("min.insync.replicas",))


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    return None if value is None else str(value)


def _static_and_default(name: str, static: BrokerConfig, versions: Any) -> tuple[str | None, str | None]:
    """A broker setting's value at start (command line) and its built-in default (as the profile's release
    describes it)."""
    if name in ("listeners", "advertised.listeners"):
        advertised = name == "advertised.listeners"
        return (listeners_value(static.listeners, advertised=advertised),
                None if advertised else listeners_value(_DEFAULTS.listeners, advertised=False))
    attr = _BROKER_OPTIONS[name].attr
    static_value, default = _text(getattr(static, attr)), _text(getattr(_DEFAULTS, attr))
    if name in NULL_DEFAULTS:  # Kafka's default is null: unset, the setting has no value
        return (None if static_value == default else static_value), None
    if name in _OLDER_DEFAULTS:
        since, older = _OLDER_DEFAULTS[name]
        if not versions.since(since):
            return (older if static_value == default else static_value), older
    return static_value, default


def broker_chain(dynamic: DynamicConfigs, name: str, static_value: str | None, default_value: str | None
                 ) -> list[dict[str, Any]]:
    """Kafka's synonym order for a broker setting: per-broker dynamic, cluster default, static, default
    (levels that do not set it are left out, as is a null default)."""
    chain = []
    for level, source in ((BROKER_LEVEL, DYNAMIC_BROKER_CONFIG), (DEFAULT_LEVEL, DYNAMIC_DEFAULT_BROKER_CONFIG)):
        if name in dynamic.levels[level]:
            chain.append({"name": name, "value": dynamic.levels[level][name], "source": source})
    if static_value != default_value:
        chain.append({"name": name, "value": static_value, "source": STATIC_BROKER_CONFIG})
    if default_value is not None:
        chain.append({"name": name, "value": default_value, "source": DEFAULT_CONFIG})
    if chain and name in _SYNONYM_TAILS:
        tail, value = _SYNONYM_TAILS[name]
        chain.append({"name": tail, "value": value, "source": DEFAULT_CONFIG})
    return chain


def _entry(name: str, value: str | None, source: int, read_only: bool, synonyms: list[dict[str, Any]],
           kind: int, version: int) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": False, "is_sensitive": False,  # v0: Kafka 3.x never sets it
            "synonyms": synonyms if version >= 1 else [], "config_type": kind, "documentation": None}


def _formatted_defaults(ctx: RequestContext) -> dict[str, str]:
    release, names = FORMATTED_DEFAULTS_SINCE
    static = ctx.broker.dynamic.static
    return {name: str(_text(getattr(static, _BROKER_OPTIONS[name].attr))) for name in names} \
        if ctx.broker.versions.since(release) else {}


def _with_formatted(chain: list[dict[str, Any]], name: str, formatted: dict[str, str],
                    dynamic: DynamicConfigs) -> list[dict[str, Any]]:
    """The chain with a formatted cluster-wide default in the dynamic default's place, unless that level
    sets the setting itself."""
    if name not in formatted or name in dynamic.levels[DEFAULT_LEVEL]:
        return chain
    at = sum(1 for entry in chain if entry["source"] == DYNAMIC_BROKER_CONFIG)
    return [*chain[:at], {"name": name, "value": formatted[name], "source": DYNAMIC_DEFAULT_BROKER_CONFIG},
            *chain[at:]]


def topic_config_entries(ctx: RequestContext, overrides: dict[str, str], keys: set[str] | None, synonyms: bool,
                   version: int) -> list[dict[str, Any]]:
    """Kafka's synonyms of a topic config: its override, then its broker synonym at each level that sets
    it; none for configs without a broker synonym, and no default for one whose Kafka default is null."""
    config, dynamic = ctx.broker.config, ctx.broker.dynamic
    formatted = _formatted_defaults(ctx)
    out = []
    for name, definition in topic_configs(config.kafka_version).items():
        if keys is not None and name not in keys:
            continue
        chain: list[dict[str, Any]] = []
        if name in overrides:
            chain.append({"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG})
        broker_name = definition.broker_synonym
        default = definition.default(config)
        if broker_name in _BROKER_OPTIONS:
            static_default = None if broker_name in NULL_DEFAULTS else definition.default(_DEFAULTS)
            static = definition.default(dynamic.static)
            chain += _with_formatted(broker_chain(dynamic, broker_name, static if static != definition.default(
                _DEFAULTS) else static_default, static_default), broker_name, formatted, dynamic)
        elif broker_name is not None and broker_name not in NULL_DEFAULTS:
            if broker_name in formatted:
                chain.append({"name": broker_name, "value": formatted[broker_name],
                              "source": DYNAMIC_DEFAULT_BROKER_CONFIG})
            chain.append({"name": broker_name, "value": default, "source": DEFAULT_CONFIG})
        top = chain[0] if chain else {"value": default, "source": DEFAULT_CONFIG}
        out.append(_entry(name, top["value"], top["source"], False, chain if synonyms else [],
                          config_type(definition.check), version))
    return out


def _kind(name: str, versions: Any = None) -> int:
    if name in LISTS_SINCE_4_4:
        return LIST if versions is not None and versions.since(LISTENERS_LIST_SINCE) else STRING
    if name in _LIST_OPTIONS:
        return LIST
    if name in _OLDER_KINDS and versions is not None and not versions.since(_OLDER_KINDS[name][0]):
        return _OLDER_KINDS[name][1]
    if name in INERT:
        return INERT[name][1]
    if name in FIXED:
        return FIXED[name][1]
    option = _BROKER_OPTIONS[name]
    return BOOLEAN if option.kind is bool else STRING if option.kind in (str, Path) else \
        DOUBLE if option.kind is float else LONG if name in _LONG_OPTIONS else SHORT if name in _SHORT_OPTIONS \
        else INT


def _broker_configs(ctx: RequestContext, keys: set[str] | None, synonyms: bool, version: int) -> list[dict]:
    dynamic = ctx.broker.dynamic
    formatted = _formatted_defaults(ctx)
    out = []
    inert_set = sorted(n for n in INERT if dynamic.dynamic_value(n) is not None)
    for name in ("listeners", "advertised.listeners", *_BROKER_OPTIONS, *inert_set, *FIXED):
        if keys is not None and name not in keys:
            continue
        if name in FIXED:
            value, _kind_, read_only = FIXED[name]
            chain = [{"name": name, "value": value, "source": DEFAULT_CONFIG}]
            if name in formatted:
                chain.insert(0, {"name": name, "value": formatted[name], "source": DYNAMIC_DEFAULT_BROKER_CONFIG})
            out.append(_entry(name, chain[0]["value"], chain[0]["source"], read_only, chain if synonyms else [],
                              _kind(name), version))
            continue
        static_and_default = (None, None) if name in INERT else _static_and_default(name, dynamic.static,
                                                                                       ctx.broker.versions)
        chain = _with_formatted(broker_chain(dynamic, name, *static_and_default), name, formatted, dynamic)
        value, source = (chain[0]["value"], chain[0]["source"]) if chain else (None, DEFAULT_CONFIG)
        out.append(_entry(name, value, source, name not in RECONFIGURABLE, chain if synonyms else [],
                          _kind(name, ctx.broker.versions), version))
    return out


def _group_configs(ctx: RequestContext, group_id: str, keys: set[str] | None, synonyms: bool) -> list[dict]:
    """A group's configs: its own value or the default. Synonyms as the release lists them (live Kafka 4.2 and
    4.4): up to 4.2 one, the config itself; from 4.3 the group's value, then the default under the name of the
    broker setting it comes from (`group.share.record.lock.duration.ms`, ...)."""
    configs = ctx.broker.group_configs
    newer = ctx.broker.versions.since("4.3")
    out = []
    for name, (value, own) in configs.effective(group_id).items():
        if keys is not None and name not in keys:
            continue
        definition = GROUP_CONFIGS[name]
        source = DYNAMIC_GROUP_CONFIG if own else DEFAULT_CONFIG
        if not synonyms:
            chain = []
        elif newer:
            chain = [{"name": name, "value": value, "source": DYNAMIC_GROUP_CONFIG}] if own else []
            chain.append({"name": definition.broker_name or name, "value": definition.default(ctx.broker.config),
                          "source": DEFAULT_CONFIG})
        else:
            chain = [{"name": name, "value": value, "source": source}]
        out.append({"name": name, "value": value, "read_only": False, "config_source": source,
                    "is_default": not own, "is_sensitive": False, "synonyms": chain,
                    "config_type": definition.kind, "documentation": None})
    return out


def _default_level_configs(ctx: RequestContext, keys: set[str] | None, synonyms: bool, version: int
                           ) -> list[dict]:
    """The cluster-wide dynamic defaults (resource name ""): only what is set at that level, as Kafka."""
    out = []
    for name, value in sorted(ctx.broker.dynamic.levels[DEFAULT_LEVEL].items()):
        if keys is None or name in keys:
            chain = [{"name": name, "value": value, "source": DYNAMIC_DEFAULT_BROKER_CONFIG}]
            out.append(_entry(name, value, DYNAMIC_DEFAULT_BROKER_CONFIG, False, chain if synonyms else [],
                              _kind(name, ctx.broker.versions), version))
    return out


def _logger_configs(ctx: RequestContext, name: str, keys: set[str] | None) -> dict[str, Any]:
    """Kafka's ConfigHelper for BROKER_LOGGER: every logger and its level, DESCRIBE_CONFIGS on the cluster."""
    if not cluster_authorized(ctx, AclOperation.DESCRIBE_CONFIGS):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    if not name:
        return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": "Broker id must not be empty"}
    if name != str(ctx.broker.node_id):
        return {"error_code": ErrorCode.INVALID_REQUEST,
                "error_message": f"Unexpected broker id, expected {ctx.broker.node_id} but received {name}"}
    return {"configs": [{"name": logger, "value": level, "read_only": False,
                         "config_source": DYNAMIC_BROKER_LOGGER_CONFIG, "is_default": False, "is_sensitive": False,
                         "synonyms": [], "config_type": 0, "documentation": ""}
                        for logger, level in sorted(loggers.levels().items()) if keys is None or logger in keys]}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    synonyms = version >= 1 and req.include_synonyms
    results = []
    for r in req.resources:
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        result = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": r.resource_type,
                  "resource_name": r.resource_name, "configs": []}
        denied = config_resource_error(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        if denied != ErrorCode.NONE:
            result.update(error_code=denied)
        elif r.resource_type == TOPIC:
            topic = ctx.broker.topics.get(r.resource_name)
            try:
                validate_topic_name(r.resource_name)
            except TopicError as exc:
                result.update(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, error_message=exc.message)
                results.append(result)
                continue
            if topic is None:
                result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              error_message=f"Topic '{r.resource_name}' does not exist.")
            else:
                result["configs"] = topic_config_entries(ctx, topic.configs, keys, synonyms, version)
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.broker.node_id)):
                result.update(error_code=ErrorCode.INVALID_REQUEST,
                              error_message=f"Unexpected broker id, expected {ctx.broker.node_id} or empty "
                                            f"string, but received {r.resource_name}")
            elif r.resource_name == "":
                result["configs"] = _default_level_configs(ctx, keys, synonyms, version)
            else:
                result["configs"] = _broker_configs(ctx, keys, synonyms, version)
        elif r.resource_type == BROKER_LOGGER:
            result.update(_logger_configs(ctx, r.resource_name, keys))
        elif r.resource_type == GROUP and ctx.broker.versions.since("4.0"):  # as in alter_configs
            result["configs"] = _group_configs(ctx, r.resource_name, keys, synonyms)
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Unsupported resource type {r.resource_type}")
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


