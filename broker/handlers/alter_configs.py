"""AlterConfigs: replace a topic's overrides, or this broker's dynamic configs (per broker, or the cluster
default with resource name ""); they are validated, persisted and take effect at once. `alter` also
serves IncrementalAlterConfigs, which also sets the levels of the broker's loggers (BROKER_LOGGER)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from broker.config import loggers
from broker.config.dynamic import BROKER_LEVEL, DEFAULT_LEVEL, DynamicConfigError, listeners_value
from broker.config.options import OPTIONS_BY_NAME
from broker.config.topic import LIST, TOPIC_CONFIGS, config_type, effective_configs
from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized, config_resource_error
from broker.services.topics import TopicError
from protocol.header import ErrorCode

TOPIC = 2
BROKER = 4
GROUP = 32  # KIP-848/KIP-932 group configs (IncrementalAlterConfigs only, as Kafka)
BROKER_LOGGER = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class _Refused(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _topic_list(name: str) -> bool:
    definition = TOPIC_CONFIGS.get(name)
    return definition is not None and config_type(definition.check) == LIST


def _broker_list(name: str) -> bool:
    return name in ("advertised.listeners", "log.cleanup.policy")


def _incremental(current: dict[str, str], ops: Any, defaults: Callable[[str], str | None],
                 is_list: Callable[[str], bool]) -> dict[str, str]:
    """Kafka's ConfigAdminManager.prepareIncrementalConfigs over the current overrides."""
    names = [c.name for c in ops]
    if len(names) != len(set(names)):
        raise _Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    out = dict(current)
    for c in ops:
        op, name, value = c.config_operation, c.name, c.value
        if op in (APPEND, SUBTRACT) and not is_list(name):
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Config value append is not allowed for config key: {name}"
                           if op == APPEND else f"Config value subtract is not allowed for config key: {name}")
        if op == SET:
            if value is None:
                raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            items = [v.strip() for v in (out.get(name) or defaults(name) or "").split(",") if v.strip()]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            out[name] = ",".join(items)
        else:
            # Kafka fails on an operation id it does not know (UNKNOWN_SERVER_ERROR, no message).
            raise _Refused(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return out


async def _alter(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool
                 ) -> tuple[ErrorCode, str | None]:
    if resource.resource_type == BROKER:
        return _alter_broker(ctx, resource, incremental, validate_only)
    if resource.resource_type == GROUP and incremental and ctx.broker.versions.since("4.0"):
        # Group configs came with KRaft's group coordinator; a ZooKeeper-mode 3.x broker refuses the type.
        return await _alter_group(ctx, resource, validate_only)
    if resource.resource_type == BROKER_LOGGER and incremental:  # legacy AlterConfigs does not know it
        return _alter_loggers(ctx, resource, validate_only)
    if resource.resource_type != TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}"
    name = resource.resource_name
    current = await ctx.broker.cluster.topic_overrides(name)
    if current is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
    try:
        if incremental:
            effective = effective_configs(current, ctx.broker.config)
            overrides = _incremental(current, resource.configs, effective.get, _topic_list)
        else:
            overrides = {c.name: c.value for c in resource.configs}
        await ctx.broker.cluster.alter_topic_configs(name, overrides, validate_only=validate_only)
    except _Refused as exc:
        return exc.error, exc.message
    except TopicError as exc:
        return ErrorCode[exc.error], exc.message
    except OSError as exc:
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    return ErrorCode.NONE, None


def _alter_broker(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool
                  ) -> tuple[ErrorCode, str | None]:
    name = resource.resource_name
    if name not in ("", str(ctx.broker.node_id)):
        return ErrorCode.INVALID_REQUEST, (f"Unexpected broker id, expected {ctx.broker.node_id} or empty string, "
                                           f"but received {name}")
    dynamic = ctx.broker.dynamic
    level = DEFAULT_LEVEL if name == "" else BROKER_LEVEL
    try:
        if incremental:
            current = {n: v for n, v in dynamic.levels[level].items()}
            overrides = _incremental(current, resource.configs, lambda n: _current_value(ctx, n), _broker_list)
        else:
            overrides = {c.name: c.value for c in resource.configs}
        dynamic.alter(level, overrides, validate_only=validate_only)
    except _Refused as exc:
        return exc.error, exc.message
    except DynamicConfigError as exc:
        # ZooKeeper-mode Kafka (ZkAdminManager.alterConfigs) answers a ConfigException so.
        return ErrorCode.INVALID_REQUEST, f"Invalid config value for resource ConfigResource(type=BROKER, " \
                                          f"name='{name}'): {exc}"
    except OSError as exc:
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    return ErrorCode.NONE, None


async def _alter_group(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[ErrorCode, str | None]:
    from broker.config.group_configs import GroupConfigError, GroupConfigStoreError

    configs = ctx.broker.group_configs
    try:
        current = dict(configs.overrides.get(resource.resource_name, {}))
        overrides = _incremental(current, resource.configs, lambda n: None, lambda n: False)
        configs.alter(resource.resource_name, overrides, validate_only=validate_only)
        if not validate_only:
            await configs.save(resource.resource_name)  # a cluster's: for every broker
    except _Refused as exc:
        return exc.error, exc.message
    except GroupConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    except OSError as exc:
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    except GroupConfigStoreError as exc:  # the cluster's store (ZooKeeper) did not take it: nothing changed
        configs.replace(resource.resource_name, current)
        return ErrorCode.REQUEST_TIMED_OUT, str(exc)
    return ErrorCode.NONE, None


def _alter_loggers(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Kafka's RuntimeLoggerManager: ALTER_CONFIGS on the cluster, this broker's id, SET and DELETE only."""
    if not cluster_authorized(ctx, AclOperation.ALTER_CONFIGS):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    nulls = [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    if not resource.resource_name.isdigit():
        return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource.resource_name}"
    if int(resource.resource_name) != ctx.broker.node_id:
        return ErrorCode.INVALID_REQUEST, (f"Unexpected node id. Expected {ctx.broker.node_id}, but received "
                                           f"{resource.resource_name}")
    changes = [loggers.LevelChange(c.config_operation, c.name, c.value) for c in resource.configs]
    try:
        loggers.validate(changes)
    except loggers.LoggerConfigError as exc:
        return ErrorCode[exc.error], exc.message
    if not validate_only:
        loggers.apply(changes)
    return ErrorCode.NONE, None


def _current_value(ctx: RequestContext, name: str) -> str | None:
    if name == "advertised.listeners":
        return listeners_value(ctx.broker.config.listeners, advertised=True)
    option = OPTIONS_BY_NAME.get(name)
    return None if option is None else str(getattr(ctx.broker.config, option.attr))


async def alter(ctx: RequestContext, req: Any, incremental: bool) -> dict[str, Any]:
    seen = Counter((r.resource_type, r.resource_name) for r in req.resources)
    responses = []
    for r in req.resources:
        if seen[(r.resource_type, r.resource_name)] > 1:
            error, message = ErrorCode.INVALID_REQUEST, f"Duplicate resource {r.resource_name}"
        elif (denied := config_resource_error(ctx, AclOperation.ALTER_CONFIGS, r.resource_type,
                                              r.resource_name)) != ErrorCode.NONE:
            error, message = denied, None
        else:
            error, message = await _alter(ctx, r, incremental, req.validate_only)
        responses.append({"error_code": error, "error_message": message, "resource_type": r.resource_type,
                          "resource_name": r.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return await alter(ctx, req, incremental=False)
