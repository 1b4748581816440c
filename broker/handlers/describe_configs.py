"""DescribeConfigs: topic configs (override or broker default, with Kafka's sources and synonyms) and this
broker's own settings (read-only: they are set at start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.access import AclOperation, config_resource_error
from broker.config import OPTIONS, BrokerConfig
from broker.dispatch import RequestContext
from broker.topic_config import BOOLEAN, INT, LIST, LONG, STRING, TOPIC_CONFIGS, config_type
from protocol.header import ErrorCode

TOPIC = 2
BROKER = 4
# Kafka's ConfigSource
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

_DEFAULTS = BrokerConfig()


def _broker_value(config: BrokerConfig, attr: str) -> str:
    value = getattr(config, attr)
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def _broker_source(config: BrokerConfig, attr: str) -> int:
    # Settings differing from the built-in default were given at start (--override, CLI flags).
    return STATIC_BROKER_CONFIG if getattr(config, attr) != getattr(_DEFAULTS, attr) else DEFAULT_CONFIG


_BROKER_ATTRS = {o.kafka_name: o for o in OPTIONS}


def _entry(name: str, value: str | None, source: int, read_only: bool, synonyms: list[dict[str, Any]],
           kind: int, version: int) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": source == DEFAULT_CONFIG and version == 0, "is_sensitive": False,
            "synonyms": synonyms if version >= 1 else [], "config_type": kind, "documentation": None}


def _topic_configs(ctx: RequestContext, overrides: dict[str, str], keys: set[str] | None, synonyms: bool,
                   version: int) -> list[dict[str, Any]]:
    config = ctx.state.config
    out = []
    for name, definition in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        chain: list[dict[str, Any]] = []
        if name in overrides:
            chain.append({"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG})
        broker_name = definition.broker_synonym
        default = definition.default(config)
        option = _BROKER_ATTRS.get(broker_name) if broker_name else None
        if option is not None and _broker_source(config, option.attr) == STATIC_BROKER_CONFIG:
            chain.append({"name": broker_name, "value": default, "source": STATIC_BROKER_CONFIG})
        else:
            chain.append({"name": broker_name or name, "value": default, "source": DEFAULT_CONFIG})
        top = chain[0]
        out.append(_entry(name, top["value"], top["source"], False, chain if synonyms else [],
                          config_type(definition.check), version))
    return out


def _listener_configs(config: BrokerConfig) -> list[tuple[str, str | None, int]]:
    """listeners / advertised.listeners as Kafka names them (PLAINTEXT://host:port, comma-separated)."""
    def url(host: str, port: int) -> str:
        return f"PLAINTEXT://{'[' + host + ']' if ':' in host else host}:{port}"
    listeners = ",".join(url(li.host, li.port) for li in config.listeners)
    advertised = [li for li in config.listeners if li.advertised_host or li.advertised_port]
    advertised_value = ",".join(url(li.advertised_host or li.host, li.advertised_port or li.port)
                                for li in config.listeners) if advertised else None
    return [("listeners", listeners, STATIC_BROKER_CONFIG),
            ("advertised.listeners", advertised_value, STATIC_BROKER_CONFIG if advertised else DEFAULT_CONFIG)]


def _broker_configs(ctx: RequestContext, keys: set[str] | None, synonyms: bool, version: int) -> list[dict]:
    config = ctx.state.config
    out = []
    for name, value, source in _listener_configs(config):
        if keys is None or name in keys:
            chain = [{"name": name, "value": value, "source": source}]
            out.append(_entry(name, value, source, True, chain if synonyms else [], LIST, version))
    for option in OPTIONS:
        if keys is not None and option.kafka_name not in keys:
            continue
        value = _broker_value(config, option.attr)
        source = _broker_source(config, option.attr)
        kind = BOOLEAN if option.kind is bool else STRING if option.kind in (str, Path) else \
            LONG if option.kafka_name.endswith(".ms") else INT
        chain = [{"name": option.kafka_name, "value": value, "source": source}]
        out.append(_entry(option.kafka_name, value, source, True, chain if synonyms else [], kind, version))
    return out


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
            topic = ctx.state.topics.get(r.resource_name)
            if topic is None:
                result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              error_message=f"Topic '{r.resource_name}' does not exist.")
            else:
                result["configs"] = _topic_configs(ctx, topic.configs, keys, synonyms, version)
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.state.node_id)):
                result.update(error_code=ErrorCode.INVALID_REQUEST,
                              error_message=f"Unexpected broker id, expected {ctx.state.node_id} or empty "
                                            f"string, but received {r.resource_name}")
            elif r.resource_name == "":
                result["configs"] = []  # no dynamic cluster-wide defaults: nothing is set at that level
            else:
                result["configs"] = _broker_configs(ctx, keys, synonyms, version)
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Unsupported resource type {r.resource_type}")
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


