"""Dynamic broker configs (Kafka's DynamicBrokerConfig): the settings (Incremental)AlterConfigs may change
while the broker runs, for this broker (resource name "<broker id>") or as the cluster-wide default
(resource name ""). They persist in the data dir (Kafka: ZooKeeper's /config/brokers) and take effect at
once: topic defaults for every log without its own override, the log cleaner, producer expiration, and
the addresses Metadata advertises. Precedence as in Kafka: per-broker dynamic, cluster default, static
(the command line), built-in default.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from broker.config.options import OPTIONS_BY_NAME, BrokerConfig, Listener, convert_option
from broker.config.topic import TOPIC_CONFIGS, InvalidConfigError, invalid_value_message
from broker.log.durable_file import write_atomically

log = logging.getLogger(__name__)

# Kafka's ConfigSource values for the dynamic levels.
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
BROKER_LEVEL, DEFAULT_LEVEL = "broker", "default"
ADVERTISED_LISTENERS = "advertised.listeners"

# Kafka's reconfigurable broker configs (DynamicLogConfig, LogCleaner, DynamicListenerConfig, ...) that this
# broker applies at run time. Listener configs are per broker only, as in Kafka.
RECONFIGURABLE = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.retention.ms", "log.retention.bytes", "log.index.interval.bytes",
    "log.message.timestamp.type", "log.cleanup.policy", "message.max.bytes",
    "log.cleaner.backoff.ms", "log.cleaner.min.cleanable.ratio", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
    "producer.id.expiration.ms", "transaction.partition.verification.enable", ADVERTISED_LISTENERS,
    # read where they act (acks=all, the controller's elections), so a change applies to the next request
    "min.insync.replicas", "unclean.leader.election.enable",
})
PER_BROKER_ONLY = frozenset({ADVERTISED_LISTENERS})


def _number(kind: type, low: float) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            n = kind(value)
        except ValueError:
            raise DynamicConfigError(f"Invalid value {value}: not a number") from None
        if n < low:
            raise DynamicConfigError(f"Invalid value {value}: Value must be at least {low}")
    return check


def _text(_value: str) -> None:
    pass


# Kafka's other reconfigurable broker configs: validated, stored and described as Kafka does, and without
# effect here, as on a Kafka broker without the feature (SASL listeners) or where minibroker has no such
# knob (thread pools, connection quotas, cleaner I/O tuning, metrics reporters). name -> (check, ConfigType)
INERT: dict[str, tuple[Callable[[str], None], int]] = {
    "sasl.kerberos.min.time.before.relogin": (_number(int, 0), 5),
    "sasl.kerberos.ticket.renew.jitter": (_number(float, 0), 6),
    "sasl.kerberos.ticket.renew.window.factor": (_number(float, 0), 6),
    "sasl.kerberos.kinit.cmd": (_text, 2),
    "sasl.kerberos.principal.to.local.rules": (_text, 7),
    "sasl.enabled.mechanisms": (_text, 7),
    "num.io.threads": (_number(int, 1), 3),
    "num.network.threads": (_number(int, 1), 3),
    "num.replica.fetchers": (_number(int, 1), 3),
    "num.recovery.threads.per.data.dir": (_number(int, 1), 3),
    "background.threads": (_number(int, 1), 3),
    "log.cleaner.threads": (_number(int, 0), 3),
    "log.cleaner.dedupe.buffer.size": (_number(int, 0), 5),
    "log.cleaner.io.buffer.size": (_number(int, 0), 3),
    "log.cleaner.io.buffer.load.factor": (_number(float, 0), 6),
    "log.cleaner.io.max.bytes.per.second": (_number(float, 0), 6),
    "max.connections": (_number(int, 0), 3),
    "max.connections.per.ip": (_number(int, 0), 3),
    "max.connections.per.ip.overrides": (_text, 2),
    "max.connection.creation.rate": (_number(int, 0), 3),
    "metric.reporters": (_text, 7),
}
RECONFIGURABLE = RECONFIGURABLE | INERT.keys()
# This broker's settings that cannot change at run time (Kafka refuses them; it keeps unknown names). The
# settings DescribeConfigs reports without an option are read-only or not dynamic here either.
KNOWN_STATIC = frozenset(OPTIONS_BY_NAME.keys() | {"listeners", "delete.topic.enable", "log.retention.hours",
                                                   "log.roll.hours", "compression.type"}) - RECONFIGURABLE
_TOPIC_CHECKS = {d.broker_synonym: d.check for d in TOPIC_CONFIGS.values() if d.broker_synonym}
_LISTENER = re.compile(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:,]*):(\d+)")


class DynamicConfigError(ValueError):
    """A change Kafka refuses (ZooKeeper mode: INVALID_REQUEST, "Invalid config value for resource ...")."""


def listeners_value(listeners: list[Listener], *, advertised: bool) -> str | None:
    """listeners / advertised.listeners as Kafka writes them (NAME://host:port, comma-separated); None
    for advertised.listeners when no listener advertises another address than it binds."""
    def url(name: str, host: str, port: int) -> str:
        return f"{name}://{'[' + host + ']' if ':' in host else host}:{port}"
    if not advertised:
        return ",".join(url(li.name, li.host, li.port) for li in listeners)
    if not any(li.advertised_host or li.advertised_port for li in listeners):
        return None
    return ",".join(url(li.name, li.advertised_host or li.host, li.advertised_port or li.port) for li in listeners)


def parse_advertised(value: str, listeners: list[Listener]) -> list[Listener]:
    """The listeners with the advertised addresses of `value`, one endpoint per listener, in order, each
    named as its listener."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if len(items) != len(listeners):
        raise DynamicConfigError(f"{ADVERTISED_LISTENERS} must name one endpoint per listener "
                                 f"({len(listeners)}), got {len(items)}")
    out = []
    for item, listener in zip(items, listeners, strict=True):
        match = _LISTENER.fullmatch(item)
        if match is None:
            raise DynamicConfigError(f"Error creating broker listeners from '{value}': Unable to parse {item} "
                                     "to a broker endpoint")
        name, host, port = match.group(1), match.group(2).strip("[]"), int(match.group(3))
        if name.upper() != listener.name:
            raise DynamicConfigError(f"Advertised listener must be specified for each listener, "
                                     f"unknown listener name {name} (this broker's listeners, in order: "
                                     f"{', '.join(li.name for li in listeners)})")
        if not 0 < port <= 65535:
            raise DynamicConfigError(f"port out of range in {item}")
        out.append(dataclasses.replace(listener, advertised_host=host or None, advertised_port=port))
    return out


class DynamicConfigs:
    """The two dynamic levels over the static config; `config` (shared with the whole broker) is updated in
    place, and `on_change` callbacks run after every applied change."""

    def __init__(self, config: BrokerConfig, path: Path) -> None:
        self.config = config
        self.static = dataclasses.replace(config, listeners=list(config.listeners))
        self.path = path
        self.levels: dict[str, dict[str, str]] = {BROKER_LEVEL: {}, DEFAULT_LEVEL: {}}
        self.on_change: list[Callable[[], None]] = []
        try:
            stored = json.loads(path.read_text())
            for level in self.levels:
                self.levels[level] = {k: str(v) for k, v in stored.get(level, {}).items() if k not in KNOWN_STATIC}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.error("ignoring unreadable dynamic broker configs %s: %s", path, exc)
        try:
            self._apply(self.levels)
        except DynamicConfigError as exc:  # e.g. fewer listeners than the stored advertised.listeners
            log.error("ignoring stored dynamic broker configs: %s", exc)
            self.levels = {BROKER_LEVEL: {}, DEFAULT_LEVEL: {}}

    def dynamic_value(self, name: str) -> tuple[str, int] | None:
        """(value, source) from the highest dynamic level that sets `name`, if any."""
        if name in self.levels[BROKER_LEVEL]:
            return self.levels[BROKER_LEVEL][name], DYNAMIC_BROKER_CONFIG
        if name in self.levels[DEFAULT_LEVEL]:
            return self.levels[DEFAULT_LEVEL][name], DYNAMIC_DEFAULT_BROKER_CONFIG
        return None

    def alter(self, level: str, overrides: Mapping[str, str], *, validate_only: bool = False) -> None:
        """Replace a level's dynamic configs (validated as a whole, persisted, applied). Names that are no
        setting of this broker are kept and have no effect, as Kafka keeps names it does not know; its own
        settings that cannot change at run time are refused."""
        refused = sorted(n for n in overrides if n not in RECONFIGURABLE and n in KNOWN_STATIC)
        if refused:
            raise DynamicConfigError(f"Cannot update these configs dynamically: Set({', '.join(refused)})")
        if level == DEFAULT_LEVEL and PER_BROKER_ONLY & overrides.keys():
            raise DynamicConfigError(f"Cannot update these configs at default cluster level, broker id must be "
                                     f"specified: Set({', '.join(sorted(PER_BROKER_ONLY & overrides.keys()))})")
        for name, value in overrides.items():
            if value is None:
                raise DynamicConfigError(f"Null value not supported for : {name}")
            if name in INERT:
                INERT[name][0](value)
            elif name in _TOPIC_CHECKS:
                try:
                    _TOPIC_CHECKS[name](value)
                except InvalidConfigError as exc:
                    raise DynamicConfigError(invalid_value_message(name, value, exc)) from None
        levels = {**self.levels, level: dict(overrides)}
        candidate = self._resolve(levels)  # raises on values the broker cannot take
        if validate_only:
            return
        self._persist(levels)
        self.levels = levels
        self._install(candidate)
        log.info("dynamic broker configs (%s level) now %s", level, dict(overrides))

    def _apply(self, levels: dict[str, dict[str, str]]) -> None:
        self._install(self._resolve(levels))

    def _resolve(self, levels: dict[str, dict[str, str]]) -> BrokerConfig:
        """The static config with the dynamic levels applied (a new object: nothing live changes)."""
        resolved = dataclasses.replace(self.static, listeners=list(self.static.listeners))
        for name in RECONFIGURABLE - INERT.keys():
            value = levels[BROKER_LEVEL].get(name, levels[DEFAULT_LEVEL].get(name))
            if value is None:
                continue
            if name == ADVERTISED_LISTENERS:
                resolved.listeners = parse_advertised(value, resolved.listeners)
                continue
            option = OPTIONS_BY_NAME[name]
            try:
                setattr(resolved, option.attr, convert_option(option, value))
            except ValueError as exc:
                raise DynamicConfigError(str(exc)) from None
        try:
            resolved.validate()
        except ValueError as exc:
            raise DynamicConfigError(str(exc)) from None
        return resolved

    def _install(self, resolved: BrokerConfig) -> None:
        self.config.listeners[:] = resolved.listeners
        for name in RECONFIGURABLE - INERT.keys() - {ADVERTISED_LISTENERS}:
            attr = OPTIONS_BY_NAME[name].attr
            setattr(self.config, attr, getattr(resolved, attr))
        for callback in self.on_change:
            callback()

    def _persist(self, levels: dict[str, dict[str, str]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(levels, indent=1, sort_keys=True))


__all__ = ["DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "INERT", "RECONFIGURABLE", "DynamicConfigError",
           "DynamicConfigs", "listeners_value", "parse_advertised"]
