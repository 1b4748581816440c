"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-546): what AlterClientQuotas sets, DescribeClientQuotas shows, and
the broker enforces.

An entity is a user, a client id, a user's client id, or an IP, each by name or the default (None). Its quotas
are kept as Kafka's ZooKeeper mode keeps them: under /config/users/<user>, /config/clients/<client>,
/config/users/<user>/clients/<client> and /config/ips/<ip> (names sanitized, `<default>` for the default), in
ZooKeeper for a cluster (with /config/changes notifications, so every broker follows) and in the data dir's
`meta/client-quotas.json` for a single broker.

Enforcement is Kafka's ClientQuotaManager: a request's bytes (produce), its answer's bytes (fetch) and the time
spent on it (request_percentage) are recorded against the quota entity that applies to the client (its
user's and client id's most specific quota, Kafka's precedence), as a rate over `quota.window.num` samples of
`quota.window.size.seconds` (at least the whole window but one); beyond the quota the answer carries a throttle
time, (rate - quota) / quota * window, and the connection reads no further request until it has passed
(KIP-219). IP quotas (connection_creation_rate) and controller_mutation_rate are kept and described but not
enforced.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from broker.log.durable_file import write_atomically
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# The keys each kind of entity takes (Kafka's QuotaConfig: client quotas for users and client ids, the
# connection rate for IPs); the byte rates are whole numbers.
CLIENT_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE})
IP_KEYS = frozenset({CONNECTION_CREATION_RATE})
WHOLE = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONNECTION_CREATION_RATE})
EXACT, DEFAULT, ANY = 0, 1, 2
_PRODUCE, _FETCH = 0, 1  # api keys

# An entity: ((entity type, name or None for the default), ...) in type order (user before client-id).
Entity = tuple[tuple[str, str | None], ...]


def entity_of(components: Iterable[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(components, key=lambda c: (c[0] != USER, c[0])))


@dataclass(frozen=True, slots=True)
class AlterEntry:
    entity: list[tuple[str, str | None]]  # as the request lists it (a type may repeat: the last one counts)
    ops: list[tuple[str, float, bool]]  # (key, value, remove)


class QuotaStore(Protocol):
    """Where the quotas are kept: the data dir (a single broker) or ZooKeeper (a cluster)."""

    def load(self) -> dict[Entity, dict[str, float]]: ...

    async def save(self, changed: Mapping[Entity, dict[str, float]]) -> None: ...


class FileQuotaStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._all: dict[Entity, dict[str, float]] = {}

    def load(self) -> dict[Entity, dict[str, float]]:
        if self.path.exists():
            for item in json.loads(self.path.read_text())["entities"]:
                self._all[entity_of((c[0], c[1]) for c in item["entity"])] = dict(item["quotas"])
        return dict(self._all)

    async def save(self, changed: Mapping[Entity, dict[str, float]]) -> None:
        for entity, quotas in changed.items():
            if quotas:
                self._all[entity] = dict(quotas)
            else:
                self._all.pop(entity, None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps({"entities": [
            {"entity": [list(c) for c in entity], "quotas": quotas} for entity, quotas in self._all.items()]},
            sort_keys=True))


# -- validation (AlterClientQuotas): Kafka 4's ControllerConfigurationValidator and Kafka 3.9's ZkAdminManager ----
def _entity_error(entity: list[tuple[str, str | None]], kraft: bool) -> str | None:
    if not entity:
        return "Invalid empty client quota entity"
    types = {kind for kind, _ in entity}
    for kind, name in entity:
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        if kind == USER and name == "":
            return "Empty user not supported"
    if IP in types and types != {IP}:
        return ("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId" if kraft
                else "Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
    for kind, name in entity:
        if kind == IP and name is not None and not _valid_ip(name):
            return f"{name} is not a valid IP or resolvable host."
    return None


def _valid_ip(name: str) -> bool:
    import ipaddress  # only when an IP quota is set

    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _op_error(key: str, value: float, remove: bool, is_ip: bool, kraft: bool) -> str | None:
    if key not in (IP_KEYS if is_ip else CLIENT_KEYS):
        return f"Invalid configuration key {key}"
    if remove:
        return None
    if not kraft and key in WHOLE and (value != int(value) or value < 0):
        return f"Configuration {key} must be a LONG value"
    if value <= 0 and kraft:
        return f"Quota {key} must be greater than 0"
    if kraft and key in WHOLE and value != int(value):
        return f"{key} cannot be a fractional value."
    return None


@dataclass
class Rate:
    """Kafka's Rate over SampledStat: `samples` windows of `window_ms`; the rate is their sum over the time they
    cover, at least (samples - 1) windows (so a burst at start is not an infinite rate)."""

    samples: int
    window_ms: int
    _windows: list[list[float]] = field(default_factory=list)  # [start ms, value]

    def record(self, value: float, now_ms: int) -> None:
        if not self._windows or now_ms >= self._windows[-1][0] + self.window_ms:
            self._windows.append([now_ms, 0.0])
        self._windows[-1][1] += value
        self._purge(now_ms)

    def _purge(self, now_ms: int) -> None:
        horizon = now_ms - self.samples * self.window_ms
        while self._windows and self._windows[0][0] + self.window_ms <= horizon:
            self._windows.pop(0)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._windows[0][0] if self._windows else 0
        return max(elapsed, (self.samples - 1) * self.window_ms)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        total = sum(v for _, v in self._windows)
        return total / (self.window_size_ms(now_ms) / 1000)


class ClientQuotas:
    def __init__(self, store: QuotaStore, kraft: bool, samples: int = 11, window_s: int = 1) -> None:
        self.store = store
        self.kraft = kraft  # a 4.x profile answers with Kafka 4's controller's checks and messages
        self.quotas: dict[Entity, dict[str, float]] = store.load()
        self.samples, self.window_ms = samples, window_s * 1000
        self._rates: dict[tuple[str, str, str], Rate] = {}

    @property
    def active(self) -> bool:
        """Whether any client quota is set (else nothing is recorded: the common case costs nothing)."""
        return bool(self.quotas)

    def replace(self, quotas: Mapping[Entity, dict[str, float]]) -> None:
        """Another broker changed them (a cluster's /config/changes)."""
        self.quotas = {e: dict(q) for e, q in quotas.items() if q}

    # -- AlterClientQuotas ------------------------------------------------------------------------------
    async def alter(self, entries: list[AlterEntry],
                    validate_only: bool) -> list[tuple[ErrorCode, str | None, list[tuple[str, str | None]]]]:
        """Each entry's (error, message, entity as answered); every valid entry applies (an invalid one leaves
        the others be). A type named twice in an entity: the last name counts, as in Kafka."""
        outcomes: list[tuple[ErrorCode, str | None, list[tuple[str, str | None]]]] = []
        changed: dict[Entity, dict[str, float]] = {}
        for entry in entries:
            components = dict(entry.entity)
            echo = list(components.items())
            error = _entity_error(echo, self.kraft)
            is_ip = IP in components
            if error is None:
                error = next((e for key, value, remove in entry.ops
                              if (e := _op_error(key, value, remove, is_ip, self.kraft)) is not None), None)
            if error is not None:
                outcomes.append((ErrorCode.INVALID_REQUEST, error, echo))
                continue
            outcomes.append((ErrorCode.NONE, None, echo))
            entity = entity_of(components.items())
            quotas = dict(changed.get(entity, self.quotas.get(entity, {})))
            for key, value, remove in entry.ops:
                if remove:
                    quotas.pop(key, None)
                else:
                    quotas[key] = value
            changed[entity] = quotas
        if changed and not validate_only:
            await self.store.save(changed)
            for entity, quotas in changed.items():
                if quotas:
                    self.quotas[entity] = quotas
                else:
                    self.quotas.pop(entity, None)
            log.info("client quotas now %s", self.quotas)
        return outcomes

    # -- DescribeClientQuotas ---------------------------------------------------------------------------
    def describe(self, components: list[tuple[str, int, str | None]],
                 strict: bool) -> tuple[ErrorCode, str | None, list[tuple[Entity, dict[str, float]]] | None]:
        """(error, message, [(entity, quotas)]) for a filter: each component matches an entity type by name
        (EXACT), the default (DEFAULT) or any (ANY); strict: the entity has no other types."""
        error = self._filter_error(components)
        if error is not None:
            return (*error, None)
        wanted = {kind: (match, name) for kind, match, name in components}
        out = []
        for entity, quotas in self.quotas.items():
            kinds = dict(entity)
            if strict and set(kinds) != set(wanted):
                continue
            if not all(kind in kinds and (match == ANY or (match == DEFAULT and kinds[kind] is None) or
                                          (match == EXACT and kinds[kind] == name))
                       for kind, (match, name) in wanted.items()):
                continue
            out.append((entity, dict(quotas)))
        return ErrorCode.NONE, "", out

    def _filter_error(self, components: list[tuple[str, int, str | None]]) -> tuple[ErrorCode, str | None] | None:
        kinds = [kind for kind, _, _ in components]
        for kind in kinds:
            if kind not in (USER, CLIENT_ID, IP):
                return ErrorCode.UNSUPPORTED_VERSION, (f"Unsupported entity type {kind}" if self.kraft else
                                                       f"Custom entity type '{kind}' not supported")
        for kind in set(kinds):
            if kinds.count(kind) > 1:
                return ErrorCode.INVALID_REQUEST, (f"Entity type {kind} cannot appear more than once in the filter."
                                                   if self.kraft else f"Duplicate {kind} filter component entity type")
        if IP in kinds and len(set(kinds)) > 1:
            return ErrorCode.INVALID_REQUEST, (
                "Invalid entity filter component combination" + (". " if self.kraft else ", ") +
                "IP filter component should not be used with user or clientId filter component.")
        for _kind, match, name in components:
            if match not in (EXACT, DEFAULT, ANY):
                return (ErrorCode.INVALID_REQUEST, f"Unknown match type {match}") if self.kraft else \
                    (ErrorCode.UNKNOWN_SERVER_ERROR, None)
            if match == EXACT and name is None:
                return (ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to "
                                                   "null.") if self.kraft else (ErrorCode.UNKNOWN_SERVER_ERROR, None)
            if match == DEFAULT and name is not None and self.kraft:
                return ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a " \
                                                  "match string."
        return None

    # -- enforcement (ClientQuotaManager) ---------------------------------------------------------------
    def _applying(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """The quota of `key` that applies to the client, and whose rate it is: Kafka's precedence, from a
        user's client id down to the default client id; a default applies to each user or client apart."""
        precedence: list[tuple[Entity, tuple[str, str]]] = [
            (((USER, user), (CLIENT_ID, client_id)), (user, client_id)),
            (((USER, user), (CLIENT_ID, None)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((USER, None), (CLIENT_ID, client_id)), (user, client_id)),
            (((USER, None), (CLIENT_ID, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        ]
        for entity, tags in precedence:
            value = self.quotas.get(entity, {}).get(key)
            if value is not None:
                return value, tags
        return None

    def throttle(self, api_key: int, user: str, client_id: str, request_bytes: int, response_bytes: int,
                 seconds: float, now_ms: int) -> int:
        """A request's throttle time in ms: its bytes against the producer (Produce) or consumer (Fetch) byte
        rate, its time against the request percentage; the longer of the two, as Kafka's KafkaApis takes."""
        throttle = self.record(REQUEST_PERCENTAGE, user, client_id, seconds * 100, now_ms)
        if api_key == _PRODUCE:
            throttle = max(throttle, self.record(PRODUCER_BYTE_RATE, user, client_id, request_bytes, now_ms))
        elif api_key == _FETCH:
            throttle = max(throttle, self.record(CONSUMER_BYTE_RATE, user, client_id, response_bytes, now_ms))
        return throttle

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` (bytes, or request time as a percentage of a second) against the client's quota of
        `key`; the throttle time in ms (0 within the quota)."""
        applying = self._applying(key, user, client_id)
        if applying is None:
            return 0
        bound, tags = applying
        rate = self._rates.get((key, *tags))
        if rate is None:
            rate = self._rates[(key, *tags)] = Rate(self.samples, self.window_ms)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        throttle = (observed - bound) / bound * rate.window_size_ms(now_ms)
        return int(min(math.ceil(throttle), self.samples * self.window_ms))


# -- a cluster's store: ZooKeeper, as Kafka's ZooKeeper mode -------------------------------------------------
def znode_of(entity: Entity) -> tuple[str, str]:
    """(config type, entity path below it) of an entity: ("users", "alice/clients/app"), ("ips", "<default>")."""
    from zk.znodes import DEFAULT_ENTITY, sanitize

    names = {kind: (DEFAULT_ENTITY if name is None else sanitize(name)) for kind, name in entity}
    if IP in names:
        return "ips", names[IP]
    if USER in names and CLIENT_ID in names:
        return "users", f"{names[USER]}/clients/{names[CLIENT_ID]}"
    if USER in names:
        return "users", names[USER]
    return "clients", names[CLIENT_ID]


def entity_from_path(config_type: str, path: str) -> Entity:
    from zk.znodes import DEFAULT_ENTITY, desanitize

    def name(text: str) -> str | None:
        return None if text == DEFAULT_ENTITY else desanitize(text)

    if config_type == "ips":
        return ((IP, name(path)),)
    if config_type == "clients":
        return ((CLIENT_ID, name(path)),)
    user, _, client = path.partition("/clients/")
    return ((USER, name(user)), (CLIENT_ID, name(client))) if client else ((USER, name(user)),)


def client_quota_keys(config: Mapping[str, str]) -> dict[str, float]:
    """The quota keys of an entity's /config znode (a user's may hold SCRAM credentials too)."""
    return {k: float(v) for k, v in config.items() if k in CLIENT_KEYS | IP_KEYS}


class ZkQuotaStore:
    """The quotas in ZooKeeper (`/config/<type>/<entity>`, changes announced under /config/changes): written by
    the broker that takes the AlterClientQuotas, read by every broker at start and on each notification."""

    def __init__(self, zk: Any, initial: Mapping[Entity, dict[str, float]]) -> None:
        self.zk = zk
        self._initial = dict(initial)

    def load(self) -> dict[Entity, dict[str, float]]:
        return dict(self._initial)

    async def save(self, changed: Mapping[Entity, dict[str, float]]) -> None:
        for entity, quotas in changed.items():
            config_type, path = znode_of(entity)
            current = await self.zk.get_entity_config(config_type, path)
            kept = {k: v for k, v in current.items() if k not in CLIENT_KEYS | IP_KEYS}  # SCRAM credentials stay
            kept.update({k: _text(v) for k, v in quotas.items()})
            await self.zk.change_entity_config(config_type, path, kept)


def _text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


async def load_from_zookeeper(zk: Any) -> dict[Entity, dict[str, float]]:
    """Every entity's quotas under /config/users, /config/clients and /config/ips."""
    found: dict[Entity, dict[str, float]] = {}
    for config_type in ("users", "clients", "ips"):
        for name in await zk.get_all_entities_with_config(config_type):
            paths = [name]
            if config_type == "users":
                paths += [f"{name}/clients/{c}" for c in await zk.get_all_entities_with_config(f"users/{name}/clients")]
            for path in paths:
                quotas = client_quota_keys(await zk.get_entity_config(config_type, path))
                if quotas:
                    found[entity_from_path(config_type, path)] = quotas
    return found
