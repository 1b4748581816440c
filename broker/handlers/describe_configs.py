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
from broker.config.options import OPTIONS, BrokerConfig
from broker.config.topic import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING, TOPIC_CONFIGS, config_type
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized, config_resource_error
from protocol.header import ErrorCode

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
# Kafka's ConfigSource
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_BROKER_LOGGER_CONFIG = 6

_DEFAULTS = BrokerConfig()
_BROKER_OPTIONS = {o.kafka_name: o for o in OPTIONS}


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    return None if value is None else str(value)


def _static_and_default(name: str, static: BrokerConfig) -> tuple[str | None, str | None]:
    """A broker setting's value at start (command line) and its built-in default."""
    if name in ("listeners", "advertised.listeners"):
        advertised = name == "advertised.listeners"
        return (listeners_value(static.listeners, advertised=advertised),
                None if advertised else listeners_value(_DEFAULTS.listeners, advertised=False))
    attr = _BROKER_OPTIONS[name].attr
    return _text(getattr(static, attr)), _text(getattr(_DEFAULTS, attr))


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
    return chain


def _entry(name: str, value: str | None, source: int, read_only: bool, synonyms: list[dict[str, Any]],
           kind: int, version: int) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": False, "is_sensitive": False,  # v0: Kafka 3.x never sets it
            "synonyms": synonyms if version >= 1 else [], "config_type": kind, "documentation": None}


def _topic_configs(ctx: RequestContext, overrides: dict[str, str], keys: set[str] | None, synonyms: bool,
                   version: int) -> list[dict[str, Any]]:
    config, dynamic = ctx.broker.config, ctx.broker.dynamic
    out = []
    for name, definition in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        chain: list[dict[str, Any]] = []
        if name in overrides:
            chain.append({"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG})
        broker_name = definition.broker_synonym
        if broker_name in _BROKER_OPTIONS:
            chain += broker_chain(dynamic, broker_name, definition.default(dynamic.static),
                                  definition.default(_DEFAULTS))
        else:
            chain.append({"name": broker_name or name, "value": definition.default(config),
                          "source": DEFAULT_CONFIG})
        top = chain[0]
        out.append(_entry(name, top["value"], top["source"], False, chain if synonyms else [],
                          config_type(definition.check), version))
    return out


def _kind(name: str) -> int:
    if name in ("listeners", "advertised.listeners"):
        return LIST
    if name in INERT:
        return INERT[name][1]
    option = _BROKER_OPTIONS[name]
    return BOOLEAN if option.kind is bool else STRING if option.kind in (str, Path) else \
        DOUBLE if option.kind is float else LONG if name.endswith(".ms") else INT


def _broker_configs(ctx: RequestContext, keys: set[str] | None, synonyms: bool, version: int) -> list[dict]:
    dynamic = ctx.broker.dynamic
    out = []
    inert_set = sorted(n for n in INERT if dynamic.dynamic_value(n) is not None)
    for name in ("listeners", "advertised.listeners", *_BROKER_OPTIONS, *inert_set):
        if keys is not None and name not in keys:
            continue
        static_and_default = (None, None) if name in INERT else _static_and_default(name, dynamic.static)
        chain = broker_chain(dynamic, name, *static_and_default)
        value, source = (chain[0]["value"], chain[0]["source"]) if chain else (None, DEFAULT_CONFIG)
        out.append(_entry(name, value, source, name not in RECONFIGURABLE, chain if synonyms else [],
                          _kind(name), version))
    return out


def _default_level_configs(ctx: RequestContext, keys: set[str] | None, synonyms: bool, version: int
                           ) -> list[dict]:
    """The cluster-wide dynamic defaults (resource name ""): only what is set at that level, as Kafka."""
    out = []
    for name, value in sorted(ctx.broker.dynamic.levels[DEFAULT_LEVEL].items()):
        if keys is None or name in keys:
            chain = [{"name": name, "value": value, "source": DYNAMIC_DEFAULT_BROKER_CONFIG}]
            out.append(_entry(name, value, DYNAMIC_DEFAULT_BROKER_CONFIG, False, chain if synonyms else [],
                              _kind(name), version))
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
                         "synonyms": [], "config_type": 0, "documentation": None}
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
            if topic is None:
                result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              error_message=f"Topic '{r.resource_name}' does not exist.")
            else:
                result["configs"] = _topic_configs(ctx, topic.configs, keys, synonyms, version)
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
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Unsupported resource type {r.resource_type}")
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


