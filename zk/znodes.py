"""Kafka 3.x's znodes (ZooKeeper mode): their paths and the JSON they hold, encoded and decoded as Kafka does
(kafka/zk/ZkData.scala). Pure: no I/O. Decoders accept what Kafka accepts (older versions, absent optional
keys) and raise ValueError for what Kafka would refuse.

Encoded JSON is compact UTF-8, like Kafka's Jackson output; key order carries no meaning.
"""

from __future__ import annotations

import base64
import enum
import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# -- paths --------------------------------------------------------------------------------------------------

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
BROKER_SEQUENCE_ID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
FEATURE = "/feature"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONSUMERS = "/consumers"  # the old consumers' path, still created by Kafka 3.x
KAFKA_ACL = "/kafka-acl"
KAFKA_ACL_CHANGES = "/kafka-acl-changes"
KAFKA_ACL_EXTENDED = "/kafka-acl-extended"
KAFKA_ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
DELEGATION_TOKEN = "/delegation_token"
MIGRATION = "/migration"


class ConfigType:
    """The entity types under /config (kafka.server.ConfigType)."""
    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    GROUP = "groups"  # share/consumer/streams group configs: KRaft keeps them in its metadata log, minibroker here
    ALL = ("topics", "clients", "users", "brokers", "ips")


DEFAULT_ENTITY = "<default>"  # /config/brokers/<default>, /config/users/<default>, ...

# The persistent paths a Kafka broker makes sure of at startup (ZkData.PersistentZkPaths).
PERSISTENT_PATHS = (CONSUMERS, BROKER_IDS, TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQUENCE_ID,
                    ISR_CHANGE_NOTIFICATION, PRODUCER_ID_BLOCK, LOG_DIR_EVENT_NOTIFICATION,
                    *(f"{CONFIG}/{t}" for t in ConfigType.ALL))


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def config_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _decode(data: bytes | None, what: str) -> Any:
    if not data:
        raise ValueError(f"{what}: empty znode")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what}: not JSON: {data[:200]!r} ({exc})") from None


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: {key!r} is not an integer: {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{what}: not a list of integers: {value!r}")
    return tuple(value)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- Kafka's Uuid (topic ids, cluster ids): 16 bytes shown as URL-safe base64 without padding ----------------

_ZERO_UUID = uuid.UUID(int=0)
_METADATA_TOPIC_ID = uuid.UUID(int=1)


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def uuid_from_str(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a Kafka uuid: {text!r}") from exc
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid (16 bytes): {text!r}")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never the zero or metadata-topic id, never one whose text starts with '-'."""
    while True:
        value = uuid.uuid4()
        if value not in (_ZERO_UUID, _METADATA_TOPIC_ID) and not uuid_to_str(value).startswith("-"):
            return value


# -- /brokers/ids/<id> ---------------------------------------------------------------------------------------

_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
# Kafka's default listener -> protocol map, used when a registration has none (version 2 and 3).
_DEFAULT_PROTOCOLS = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str            # the listener name, upper case ("PLAINTEXT", "INTERNAL")
    host: str | None         # None: Kafka's empty host (all interfaces)
    port: int
    security_protocol: str   # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL

    def connection_string(self) -> str:
        if self.host is None:
            return f"{self.listener}://:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


def parse_endpoint(text: str, protocols: Mapping[str, str] | None = None) -> Endpoint:
    """`LISTENER://host:port` with the listener's protocol from `protocols` (Kafka's default map when None)."""
    match = _ENDPOINT.match(text)
    if match is None:
        raise ValueError(f"unable to parse {text!r} to a broker endpoint")
    listener = match.group(1).upper()
    protocol_map = _DEFAULT_PROTOCOLS if protocols is None else protocols
    if listener not in protocol_map:
        raise ValueError(f"no security protocol defined for listener {listener} ({text!r})")
    return Endpoint(listener, match.group(2) or None, int(match.group(3)), protocol_map[listener])


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The ephemeral /brokers/ids/<id>: a live broker's addresses. Kafka writes version 5 from IBP 2.7 on."""
    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # name -> (min_version, max_version)
    jmx_port: int = -1
    timestamp: int = 0  # ms; 0 -> now, when encoded
    version: int = 5

    @property
    def host(self) -> str | None:
        """The top-level host: the first PLAINTEXT endpoint's, for old clients."""
        return next((e.host for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)

    @property
    def port(self) -> int:
        return next((e.port for e in self.endpoints if e.security_protocol == "PLAINTEXT"), -1)

    def endpoint(self, listener: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.listener == listener.upper()), None)


def encode_broker(reg: BrokerRegistration) -> bytes:
    obj: dict[str, Any] = {
        "version": reg.version,
        "host": reg.host,
        "port": reg.port,
        "endpoints": [e.connection_string() for e in reg.endpoints],
        "jmx_port": reg.jmx_port,
        "timestamp": str(reg.timestamp or now_ms()),
    }
    if reg.rack is not None and reg.version >= 3:
        obj["rack"] = reg.rack
    if reg.version >= 4:
        obj["listener_security_protocol_map"] = {e.listener: e.security_protocol for e in reg.endpoints}
    if reg.version >= 5:
        obj["features"] = {name: {"min_version": lo, "max_version": hi} for name, (lo, hi) in reg.features.items()}
    return _encode(obj)


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    what = f"broker registration {broker_id}"
    obj = _decode(data, what)
    version = _int(obj, "version", what)
    jmx_port = _int(obj, "jmx_port", what)
    if version < 1:
        raise ValueError(f"unsupported version of broker registration: {data!r}")
    if version == 1:
        endpoints: tuple[Endpoint, ...] = (Endpoint("PLAINTEXT", obj["host"], int(obj["port"]), "PLAINTEXT"),)
    else:
        protocols = obj.get("listener_security_protocol_map")
        if protocols is not None:
            protocols = {k.upper(): v for k, v in protocols.items()}
        endpoints = tuple(parse_endpoint(e, protocols) for e in obj.get("endpoints") or [])
    features = {name: (int(r.get("min_version", 1)), int(r["max_version"]))
                for name, r in (obj.get("features") or {}).items()}
    timestamp = obj.get("timestamp")
    return BrokerRegistration(broker_id, endpoints, obj.get("rack"), features, jmx_port,
                              int(timestamp) if timestamp is not None else 0, version)


# -- /brokers/topics/<topic> --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas, with those being added and removed while a reassignment runs (Kafka's
    kafka.controller.ReplicaAssignment)."""
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def from_origin_and_target(cls, origin: Iterable[int], target: Iterable[int]) -> ReplicaAssignment:
        origin, target = tuple(origin), tuple(target)
        replicas = tuple(dict.fromkeys(target + origin))
        return cls(replicas, tuple(r for r in target if r not in origin), tuple(r for r in origin if r not in target))

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """/brokers/topics/<topic> (version 3): the topic id and each partition's replicas."""
    topic_id: uuid.UUID | None
    partitions: Mapping[int, ReplicaAssignment]

    @classmethod
    def of(cls, replicas: Mapping[int, Iterable[int]], topic_id: uuid.UUID | None = None) -> TopicAssignment:
        return cls(topic_id, {p: ReplicaAssignment(tuple(r)) for p, r in replicas.items()})

    def replicas(self) -> dict[int, tuple[int, ...]]:
        return {p: a.replicas for p, a in sorted(self.partitions.items())}


def encode_topic(assignment: TopicAssignment) -> bytes:
    parts = sorted(assignment.partitions.items())
    obj: dict[str, Any] = {
        "version": 3,
        "partitions": {str(p): list(a.replicas) for p, a in parts},
        "adding_replicas": {str(p): list(a.adding) for p, a in parts if a.adding},
        "removing_replicas": {str(p): list(a.removing) for p, a in parts if a.removing},
    }
    if assignment.topic_id is not None:
        obj["topic_id"] = uuid_to_str(assignment.topic_id)
    return _encode(obj)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    what = f"topic znode {topic}"
    obj = _decode(data, what)
    topic_id = uuid_from_str(obj["topic_id"]) if obj.get("topic_id") is not None else None
    adding = obj.get("adding_replicas") or {}
    removing = obj.get("removing_replicas") or {}
    partitions = {
        int(p): ReplicaAssignment(_int_list(r, what), _int_list(adding.get(p, []), what),
                                  _int_list(removing.get(p, []), what))
        for p, r in (obj.get("partitions") or {}).items()
    }
    return TopicAssignment(topic_id, partitions)


# -- /brokers/topics/<topic>/partitions/<p>/state -----------------------------------------------------------

NO_LEADER = -1
LEADER_DURING_DELETE = -2
INITIAL_LEADER_EPOCH = 0


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1  # elected uncleanly, not yet recovered (KIP-704)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's leader, leader epoch, ISR and the controller epoch that wrote it (Kafka's
    LeaderIsrAndControllerEpoch). `zk_version` is the znode's version when read: the partition epoch, which a
    conditional update must name."""
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    zk_version: int = 0

    def new_leader(self, leader: int) -> PartitionState:
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1)

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> PartitionState:
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr))

    def new_recovering_leader_and_isr(self, leader: int, isr: Iterable[int]) -> PartitionState:
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr),
                       leader_recovery_state=LeaderRecoveryState.RECOVERING)

    def new_epoch(self) -> PartitionState:
        return replace(self, leader_epoch=self.leader_epoch + 1)


def encode_partition_state(state: PartitionState) -> bytes:
    obj: dict[str, Any] = {"controller_epoch": state.controller_epoch, "leader": state.leader, "version": 1,
                           "leader_epoch": state.leader_epoch, "isr": list(state.isr)}
    if state.leader_recovery_state != LeaderRecoveryState.RECOVERED:
        obj["leader_recovery_state"] = int(state.leader_recovery_state)
    return _encode(obj)


def decode_partition_state(data: bytes, zk_version: int = 0) -> PartitionState:
    what = "partition state"
    obj = _decode(data, what)
    recovery = obj.get("leader_recovery_state", 0)
    try:
        recovery_state = LeaderRecoveryState(recovery)
    except ValueError:
        raise ValueError(f"{what}: value {recovery!r} is not a valid leader recovery state") from None
    return PartitionState(_int(obj, "leader", what), _int(obj, "leader_epoch", what),
                          _int_list(obj.get("isr"), what), _int(obj, "controller_epoch", what),
                          recovery_state, zk_version)


# -- /controller, /controller_epoch, /cluster/id ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    broker_id: int
    timestamp: int = 0
    kraft_controller_epoch: int = -1  # set by a KRaft controller during a migration; -1 for a ZK controller


def encode_controller(reg: ControllerRegistration) -> bytes:
    return _encode({"version": 2, "brokerid": reg.broker_id, "timestamp": str(reg.timestamp or now_ms()),
                    "kraftControllerEpoch": reg.kraft_controller_epoch})


def decode_controller(data: bytes) -> ControllerRegistration:
    obj = _decode(data, "controller znode")
    timestamp = obj.get("timestamp")
    return ControllerRegistration(_int(obj, "brokerid", "controller znode"),
                                  int(timestamp) if timestamp is not None else 0,
                                  int(obj.get("kraftControllerEpoch", -1)))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode())
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise ValueError(f"controller epoch znode holds no integer: {data!r}") from None


def encode_cluster_id(cluster_id: str) -> bytes:
    return _encode({"version": "1", "id": cluster_id})  # the version is a string here, as Kafka writes it


def decode_cluster_id(data: bytes) -> str:
    obj = _decode(data, "cluster id")
    if not isinstance(obj.get("id"), str):
        raise ValueError(f"failed to parse the cluster id json {data!r}")
    return obj["id"]


# -- /config/<type>/<name> and /config/changes ---------------------------------------------------------------

def encode_config(config: Mapping[str, str]) -> bytes:
    return _encode({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def decode_config(data: bytes | None) -> dict[str, str]:
    """Kafka reads a missing or empty config znode as no config."""
    if not data:
        return {}
    obj = _decode(data, "config znode")
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict):
        return {}
    for key, value in config.items():
        if not isinstance(value, str):
            raise ValueError(f"config znode: {key!r} is not a string: {value!r}")
    return dict(config)


def encode_config_change(entity_path: str) -> bytes:
    """A /config/changes/config_change_N notification naming `type/name` (e.g. "topics/orders",
    "brokers/<default>", "users/alice")."""
    return _encode({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The entity path of a notification (version 2, or version 1's entity_type + entity_name)."""
    obj = _decode(data, "config change notification")
    version = obj.get("version")
    if version == 2 and isinstance(obj.get("entity_path"), str):
        return obj["entity_path"]
    if version == 1 and isinstance(obj.get("entity_type"), str) and isinstance(obj.get("entity_name"), str):
        return f"{obj['entity_type']}/{obj['entity_name']}"
    raise ValueError(f"unsupported config change notification {data!r}")


# -- /admin -------------------------------------------------------------------------------------------------

def encode_reassignment(reassignment: Mapping[tuple[str, int], Iterable[int]]) -> bytes:
    """/admin/reassign_partitions (the pre-2.4 tool's way, still executed by Kafka 3.x's controller)."""
    return _encode({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(reassignment.items())]})


def decode_reassignment(data: bytes) -> dict[tuple[str, int], tuple[int, ...]]:
    obj = _decode(data, "partition reassignment")
    try:
        return {(e["topic"], int(e["partition"])): _int_list(e["replicas"], "reassignment")
                for e in obj["partitions"]}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"partition reassignment: unreadable {data!r} ({exc})") from None


def _encode_partition_list(partitions: Iterable[tuple[str, int]]) -> bytes:
    return _encode({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)]})


def _decode_partition_list(data: bytes, what: str) -> set[tuple[str, int]]:
    obj = _decode(data, what)
    try:
        return {(e["topic"], int(e["partition"])) for e in obj["partitions"]}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{what}: unreadable {data!r} ({exc})") from None


def encode_preferred_replica_election(partitions: Iterable[tuple[str, int]]) -> bytes:
    return _encode_partition_list(partitions)


def decode_preferred_replica_election(data: bytes) -> set[tuple[str, int]]:
    return _decode_partition_list(data, "preferred replica election")


def encode_isr_change(partitions: Iterable[tuple[str, int]]) -> bytes:
    """/isr_change_notification/isr_change_N: brokers before IBP 2.7 (no AlterPartition) announce ISR writes."""
    return _encode_partition_list(partitions)


def decode_isr_change(data: bytes) -> set[tuple[str, int]]:
    return _decode_partition_list(data, "ISR change notification")


def encode_log_dir_event(broker_id: int) -> bytes:
    return _encode({"version": 1, "broker": broker_id, "event": 1})  # 1: a log directory failed


def decode_log_dir_event(data: bytes) -> int:
    return _int(_decode(data, "log dir event"), "broker", "log dir event")


# -- /feature -----------------------------------------------------------------------------------------------

class FeatureStatus(enum.IntEnum):
    DISABLED = 0
    ENABLED = 1


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """/feature: the cluster's finalized features (KIP-584); version 2 from IBP 3.3 on."""
    status: FeatureStatus
    features: Mapping[str, int] = field(default_factory=dict)  # name -> finalized max version level
    version: int = 2


def encode_feature(node: FeatureZNode) -> bytes:
    if node.version == 1:
        features = {n: {"max_version_level": v, "min_version_level": v} for n, v in node.features.items()}
    else:
        features = {n: {"max_version_level": v} for n, v in node.features.items()}
    return _encode({"version": node.version, "status": int(node.status), "features": features})


def decode_feature(data: bytes) -> FeatureZNode:
    obj = _decode(data, "feature znode")
    version = _int(obj, "version", "feature znode")
    if version not in (1, 2):
        raise ValueError(f"unsupported version {version} of feature information: {data!r}")
    try:
        status = FeatureStatus(obj["status"])
    except (KeyError, ValueError):
        raise ValueError(f"malformed or absent status in feature information: {data!r}") from None
    if not isinstance(obj.get("features"), dict):
        raise ValueError(f"features map can not be absent in: {data!r}")
    features = {}
    for name, levels in obj["features"].items():
        if "max_version_level" not in levels or (version == 1 and "min_version_level" not in levels):
            raise ValueError(f"feature {name}: version levels missing in {levels}")
        if levels["max_version_level"] < 1:
            raise ValueError(f"feature {name}: expected max_version_level >= 1 in {levels}")
        features[name] = int(levels["max_version_level"])
    return FeatureZNode(status, features, version)


# -- user and client names in znode names; SCRAM credentials under /config/users -----------------------------

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: Java's URL encoding, with '*' as %2A and space as %20."""
    out = []
    for byte in name.encode():
        out.append(chr(byte) if byte in _URL_SAFE else f"%{byte:02X}")
    return "".join(out)


def desanitize(name: str) -> str:
    from urllib.parse import unquote_plus

    return unquote_plus(name, errors="strict")


SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def encode_scram_credential(cred: ScramCredential) -> str:
    """The value of a SCRAM-SHA-* key in /config/users/<user> (ScramCredentialUtils.credentialToString)."""
    b64 = base64.b64encode
    return (f"salt={b64(cred.salt).decode()},stored_key={b64(cred.stored_key).decode()},"
            f"server_key={b64(cred.server_key).decode()},iterations={cred.iterations}")


def decode_scram_credential(text: str) -> ScramCredential:
    props = {}
    for token in text.split(","):
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise ValueError(f"credentials not valid: {text!r}")
        props[key] = value
    if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError(f"credentials not valid: {text!r}")
    b64 = base64.b64decode
    return ScramCredential(b64(props["salt"]), b64(props["stored_key"]), b64(props["server_key"]),
                           int(props["iterations"]))


# -- delegation tokens (DelegationTokenManagerZk) ------------------------------------------------------------
DELEGATION_TOKENS = "/delegation_token/tokens"
DELEGATION_TOKEN_CHANGES = "/delegation_token/token_changes"
TOKEN_CHANGE_PREFIX = "token_change_"


@dataclass(frozen=True, slots=True)
class DelegationTokenZNode:
    """/delegation_token/tokens/<token id>: a token's information (its HMAC is not kept: every broker derives it
    from the token id and delegation.token.secret.key). Principals as "User:alice"."""
    token_id: str
    owner: str
    token_requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int


def encode_delegation_token(token: DelegationTokenZNode) -> bytes:
    """DelegationTokenInfoZNode.encode, version 3 (with the requester, KIP-373); principals sanitized."""
    return _encode({"version": 3, "owner": sanitize(token.owner), "tokenRequester": sanitize(token.token_requester),
                    "renewers": [sanitize(r) for r in token.renewers], "issueTimestamp": token.issue_timestamp,
                    "maxTimestamp": token.max_timestamp, "expiryTimestamp": token.expiry_timestamp,
                    "tokenId": token.token_id})


def decode_delegation_token(data: bytes | None) -> DelegationTokenZNode:
    obj = _decode(data, "delegation token")
    if obj.get("version") not in (1, 2, 3) or not isinstance(obj.get("tokenId"), str):
        raise ValueError(f"delegation token: unsupported version or no token id: {data!r}")
    renewers = obj.get("renewers")
    if not isinstance(renewers, list) or not all(isinstance(r, str) for r in renewers):
        raise ValueError(f"delegation token: renewers is not a list of principals: {renewers!r}")
    owner = desanitize(str(obj.get("owner", "")))
    return DelegationTokenZNode(obj["tokenId"], owner, desanitize(str(obj.get("tokenRequester") or obj.get("owner"))),
                                tuple(desanitize(r) for r in renewers), _int(obj, "issueTimestamp", "token"),
                                _int(obj, "maxTimestamp", "token"), _int(obj, "expiryTimestamp", "token"))


# -- ACLs (AclAuthorizer's store) ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AclEntry:
    """One ACL of a resource znode, with Kafka's names: "User:alice", "*", "Read", "Allow"."""
    principal: str
    host: str
    operation: str
    permission_type: str


# The resource types with a container under each ACL root (their names as in the paths).
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")


def acl_path(resource_type: str, name: str, pattern_type: str = "LITERAL") -> str:
    """/kafka-acl/Topic/orders for literal patterns, /kafka-acl-extended/prefixed/Topic/ord for the others."""
    if pattern_type.upper() == "LITERAL":
        return f"{KAFKA_ACL}/{resource_type}/{name}"
    return f"{KAFKA_ACL_EXTENDED}/{pattern_type.lower()}/{resource_type}/{name}"


def encode_acls(acls: Iterable[AclEntry]) -> bytes:
    return _encode({"version": 1, "acls": [
        {"principal": a.principal, "permissionType": a.permission_type, "operation": a.operation, "host": a.host}
        for a in acls]})


def decode_acls(data: bytes) -> set[AclEntry]:
    if not data:
        return set()
    obj = _decode(data, "acl znode")
    try:
        return {AclEntry(a["principal"], a["host"], a["operation"], a["permissionType"]) for a in obj["acls"]}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"acl znode: unreadable {data!r} ({exc})") from None


def encode_acl_change(resource_type: str, name: str, pattern_type: str = "LITERAL") -> bytes:
    """An ACL change notification: "TOPIC:orders" for literal patterns (the resource type's enum name, unlike
    the znode paths' "Topic"), JSON for the others."""
    if pattern_type.upper() == "LITERAL":
        return f"{resource_type.upper()}:{name}".encode()
    return _encode({"version": 1, "resourceType": resource_type.upper(), "name": name,
                    "patternType": pattern_type.upper()})


def decode_acl_change(data: bytes, extended: bool) -> tuple[str, str, str]:
    """(resource type, name, pattern type) of a notification under /kafka-acl(-extended)-changes."""
    if not extended:
        resource_type, sep, name = data.decode().partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName, got {data!r}")
        return resource_type, name, "LITERAL"
    obj = _decode(data, "acl change")
    return obj["resourceType"], obj["name"], obj["patternType"]


# -- any znode, by its path ---------------------------------------------------------------------------------

_PARTITION_STATE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")


def decode_any(path: str, data: bytes | None, zk_version: int = 0) -> Any:
    """Decode whatever Kafka keeps at `path` (relative to the chroot): the decoded value, or None for a znode
    that is only a container or a marker. ValueError for a path Kafka does not use or data it cannot read."""
    from zk.pid_blocks import decode_block

    parts = path.strip("/").split("/")
    if path == "/":
        return None
    if path in PERSISTENT_PATHS or path in (BROKERS, CLUSTER, CONFIG, ADMIN, KAFKA_ACL, KAFKA_ACL_CHANGES,
                                            KAFKA_ACL_EXTENDED, KAFKA_ACL_EXTENDED_CHANGES, DELEGATION_TOKEN):
        if path == PRODUCER_ID_BLOCK:
            return decode_block(data or b"")
        return None
    if path == CONTROLLER:
        return decode_controller(data)
    if path == CONTROLLER_EPOCH:
        return decode_controller_epoch(data)
    if path == CLUSTER_ID:
        return decode_cluster_id(data)
    if path == FEATURE:
        return decode_feature(data)
    if path == REASSIGN_PARTITIONS:
        return decode_reassignment(data)
    if path == PREFERRED_REPLICA_ELECTION:
        return decode_preferred_replica_election(data)
    if parts[:2] == ["brokers", "ids"] and len(parts) == 3:
        return decode_broker(int(parts[2]), data)
    if parts[:2] == ["brokers", "topics"]:
        if len(parts) == 3:
            return decode_topic(parts[2], data)
        if len(parts) in (4, 5) and parts[3] == "partitions":
            return None  # containers of the state znodes
        if _PARTITION_STATE.match(path):
            return decode_partition_state(data, zk_version)
    if parts[0] == "config" and len(parts) >= 3:
        if parts[1] == "changes":
            return decode_config_change(data)
        if parts[1] in ConfigType.ALL:
            return decode_config(data)
    if parts[:2] == ["admin", "delete_topics"] and len(parts) == 3:
        return None  # a marker: the topic is to be deleted
    if parts[0] == "isr_change_notification" and len(parts) == 2:
        return decode_isr_change(data)
    if parts[0] == "log_dir_event_notification" and len(parts) == 2:
        return decode_log_dir_event(data)
    if parts[0] == "kafka-acl" and len(parts) in (2, 3):
        return decode_acls(data) if len(parts) == 3 else None
    if parts[0] == "kafka-acl-extended" and len(parts) in (2, 3, 4):
        return decode_acls(data) if len(parts) == 4 else None
    if parts[0] in ("kafka-acl-changes", "kafka-acl-extended-changes") and len(parts) == 2:
        return decode_acl_change(data, parts[0] == "kafka-acl-extended-changes")
    if parts[0] == "delegation_token" and len(parts) == 2:
        return None  # token_changes and tokens containers
    if path.startswith(DELEGATION_TOKENS + "/") and len(parts) == 3:
        return decode_delegation_token(data)
    if path.startswith(DELEGATION_TOKEN_CHANGES + "/") and len(parts) == 3:
        return (data or b"").decode()  # the token id that changed
    raise ValueError(f"not a znode Kafka uses: {path}")
