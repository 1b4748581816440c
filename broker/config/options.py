"""Broker configuration: Kafka's option names, our defaults, parsing of `name=value` overrides."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config.kafka_versions import DEFAULT as DEFAULT_KAFKA_VERSION
from broker.config.kafka_versions import check_release

FSYNC_POLICIES = ("none", "grouped", "always")


@dataclass(frozen=True, slots=True)
class Listener:
    """One bound address, the address clients are told to use for it (Metadata), and its name, which
    `listener.security.protocol.map` maps to a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."""

    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None
    name: str = "PLAINTEXT"


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_]+")


def parse_listener(text: str, *, default_port: int | None = None) -> tuple[str | None, str, int]:
    """`NAME://HOST:PORT` (Kafka's listener form; the name upper-cased) or `HOST:PORT` (no name) ->
    (name, host, port)."""
    text = text.strip()
    name = None
    if "://" in text:
        name, _, text = text.partition("://")
        if not _LISTENER_NAME.fullmatch(name):
            raise ValueError(f"bad listener name {name!r} (letters, digits and _)")
        name = name.upper()
    host, port = parse_host_port(text, default_port=default_port)
    return name, host, port


def parse_protocol_map(text: str) -> dict[str, str]:
    """`listener.security.protocol.map`: `NAME:PROTOCOL` pairs, comma-separated."""
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.strip().partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not _LISTENER_NAME.fullmatch(name):
            raise ValueError(f"listener.security.protocol.map: bad entry {item.strip()!r} (NAME:PROTOCOL)")
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"listener.security.protocol.map: unknown security protocol {protocol} for {name} "
                             f"(one of {', '.join(SECURITY_PROTOCOLS)})")
        out[name] = protocol
    return out


def is_security_setting(name: str) -> bool:
    """Settings of listeners' security (docs/running/security.md), kept by name in BrokerConfig.security: `ssl.*`,
    `sasl.*`, the re-authentication and failure timings, the JAAS file, any `listener.name.<name>.*` prefixed
    setting, and the delegation tokens' `delegation.token.*`."""
    return name.startswith(("ssl.", "sasl.", "listener.name.", "delegation.token.")) or name in SECURITY_SETTINGS


SECURITY_SETTINGS = ("connections.max.reauth.ms", "connection.failed.authentication.delay.ms",
                     "java.security.auth.login.config")


CONSOLE_PORT = 8080  # --console's port when none is given


def is_loopback(host: str) -> bool:
    """Whether an address to bind to is reachable from this machine only."""
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name (or the wildcard ""): other machines may reach it


def parse_host_port(text: str, *, default_port: int | None = None) -> tuple[str, int]:
    """`HOST:PORT`, `[v6]:PORT` or `:PORT` (all interfaces)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" not in text:
        host, port_text = text, ""
    else:  # bare IPv6 address without port
        host, port_text = text, ""
    if not port_text:
        if default_port is None:
            raise ValueError(f"missing port in {text!r}")
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bad port in {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range in {text!r}")
    return host, port


@dataclass(frozen=True, slots=True)
class Option:
    """A Kafka-named setting: its attribute on BrokerConfig, type and meaning (the manual's configuration
    reference is generated from this table: docs/hooks.py)."""

    kafka_name: str
    attr: str
    kind: type
    doc: str


# Every setting the broker honours, by its Kafka name. `--override NAME=VALUE` takes any of them.
OPTIONS: tuple[Option, ...] = (
    Option("broker.id", "broker_id", int,
           "This broker's node id; -1: 0 for a single broker, generated in a cluster (broker.id.generation.enable)."),
    Option("log.dirs", "data_dir", Path, "Directory holding partition logs and broker state."),
    Option("auto.create.topics.enable", "auto_create_topics", bool,
           "Create unknown topics when Metadata asks for them (Produce never creates one, as in Kafka)."),
    Option("num.partitions", "num_partitions", int, "Partitions of an auto-created topic."),
    Option("default.replication.factor", "default_replication_factor", int,
           "Replication factor reported for topics (a single broker: 1)."),
    Option("socket.request.max.bytes", "socket_request_max_bytes", int,
           "Largest request frame; a larger one closes the connection."),
    Option("message.max.bytes", "message_max_bytes", int,
           "Largest record batch accepted (topic override: max.message.bytes)."),
    Option("log.segment.bytes", "log_segment_bytes", int, "Segment size before rolling."),
    Option("log.roll.ms", "log_roll_ms", int, "Segment age before rolling."),
    Option("log.retention.ms", "log_retention_ms", int, "Delete segments older than this (-1: never)."),
    Option("log.retention.bytes", "log_retention_bytes", int,
           "Delete oldest segments while a partition is larger (-1: no limit)."),
    Option("log.retention.check.interval.ms", "log_retention_check_interval_ms", int,
           "How often retention runs."),
    Option("log.index.interval.bytes", "log_index_interval_bytes", int, "Bytes between offset index entries."),
    Option("log.message.timestamp.type", "log_message_timestamp_type", str,
           "CreateTime or LogAppendTime, for topics without their own setting."),
    Option("log.cleanup.policy", "log_cleanup_policy", str, "delete or compact, for new topics."),
    Option("log.cleaner.enable", "log_cleaner_enable", bool, "Run the log cleaner (compaction)."),
    Option("log.cleaner.backoff.ms", "log_cleaner_backoff_ms", int,
           "How long the cleaner sleeps when no compacted partition needs cleaning."),
    Option("log.cleaner.min.cleanable.ratio", "log_cleaner_min_cleanable_ratio", float,
           "Dirty share of a compacted log above which it is cleaned (topic: min.cleanable.dirty.ratio)."),
    Option("log.cleaner.delete.retention.ms", "log_cleaner_delete_retention_ms", int,
           "How long tombstones and transaction markers stay after cleaning (topic: delete.retention.ms)."),
    Option("log.cleaner.min.compaction.lag.ms", "log_cleaner_min_compaction_lag_ms", int,
           "Records younger than this are not compacted (topic: min.compaction.lag.ms)."),
    Option("log.cleaner.max.compaction.lag.ms", "log_cleaner_max_compaction_lag_ms", int,
           "Records older than this are compacted whatever the dirty ratio (topic: max.compaction.lag.ms)."),
    Option("log.cleaner.dedupe.buffer.entries", "log_cleaner_dedupe_buffer_entries", int,
           "Most keys one cleaning pass maps (minibroker's own; Kafka sizes this in bytes: "
           "log.cleaner.dedupe.buffer.size). A log with more distinct dirty keys is cleaned in several passes."),
    Option("log.flush.policy", "fsync", str,
           "none | grouped | always: when acks=all answers relative to fdatasync (minibroker's own)."),
    Option("fetch.max.bytes", "fetch_max_bytes", int, "Upper bound on a Fetch response's size."),
    Option("max.incremental.fetch.session.cache.slots", "max_incremental_fetch_session_cache_slots", int,
           "Fetch sessions (KIP-227) kept at once, split over 8 shards as Kafka does (below 8: none)."),
    Option("connections.max.idle.ms", "connections_max_idle_ms", int, "Idle connections are closed after this."),
    Option("controlled.shutdown.timeout.ms", "shutdown_timeout_ms", int,
           "On SIGTERM/SIGINT, how long in-flight requests may take (minibroker's own)."),
    Option("cluster.id", "cluster_id", str, "Cluster id; generated and stored in the data dir when unset."),
    Option("zookeeper.connect", "zookeeper_connect", str,
           "HOST:PORT[/chroot] of ZooKeeper: the broker is one of a cluster in Kafka's ZooKeeper mode (--zookeeper); "
           "unset: a single broker, its state (producer-id blocks too) in the data dir."),
    Option("zookeeper.session.timeout.ms", "zookeeper_session_timeout_ms", int,
           "ZooKeeper session timeout; also bounds each ZooKeeper call."),
    Option("producer.id.expiration.ms", "producer_id_expiration_ms", int,
           "A partition forgets an idempotent producer this long after its last write."),
    Option("producer.id.expiration.check.interval.ms", "producer_id_expiration_check_interval_ms", int,
           "How often expired producer ids are removed (and producer state is snapshotted)."),
    Option("offsets.topic.num.partitions", "offsets_topic_num_partitions", int,
           "Partitions of `__consumer_offsets`, fixed when it is created (a group's coordinator partition "
           "depends on it)."),
    Option("offsets.topic.segment.bytes", "offsets_topic_segment_bytes", int,
           "Segment size of `__consumer_offsets`."),
    Option("offsets.retention.minutes", "offsets_retention_minutes", int,
           "Committed offsets of a group expire this long after it became empty (or after the commit, for "
           "groups without members and topics no longer consumed)."),
    Option("offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms", int,
           "How often expired offsets and empty groups are removed."),
    Option("offset.metadata.max.bytes", "offset_metadata_max_bytes", int,
           "Longest metadata string of a committed offset (OFFSET_METADATA_TOO_LARGE above)."),
    Option("group.min.session.timeout.ms", "group_min_session_timeout_ms", int,
           "Smallest session timeout a member may ask for (INVALID_SESSION_TIMEOUT below)."),
    Option("group.max.session.timeout.ms", "group_max_session_timeout_ms", int,
           "Largest session timeout a member may ask for (INVALID_SESSION_TIMEOUT above)."),
    Option("group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", int,
           "How long the first rebalance of an empty group waits for more members. 0 here (Kafka: 3000) so "
           "that a lone consumer starts at once; raise it for groups that start many members together."),
    Option("group.max.size", "group_max_size", int, "Most members a group may have (GROUP_MAX_SIZE_REACHED)."),
    Option("quota.window.num", "quota_window_num", int,
           "Client quotas: the samples a client's rates are measured over (Kafka's default 11)."),
    Option("quota.window.size.seconds", "quota_window_size_seconds", int,
           "Client quotas: the length of each sample, in seconds."),
    Option("group.consumer.session.timeout.ms", "group_consumer_session_timeout_ms", int,
           "KIP-848 consumer groups (4.x profiles): a member silent for this long is fenced."),
    Option("group.consumer.heartbeat.interval.ms", "group_consumer_heartbeat_interval_ms", int,
           "KIP-848 consumer groups: the heartbeat interval the coordinator tells members."),
    Option("group.consumer.max.size", "group_consumer_max_size", int,
           "KIP-848 consumer groups: most members (GROUP_MAX_SIZE_REACHED)."),
    Option("group.consumer.assignors", "group_consumer_assignors", str,
           "KIP-848 consumer groups: server-side assignors clients may choose, the first the default "
           "(uniform, range)."),
    Option("group.consumer.migration.policy", "group_consumer_migration_policy", str,
           "Conversion between classic and consumer groups: bidirectional, upgrade, downgrade or disabled."),
    Option("group.consumer.regex.refresh.interval.ms", "group_consumer_regex_refresh_interval_ms", int,
           "KIP-848 consumer groups: regular expression subscriptions are resolved again at least this often."),
    Option("group.share.session.timeout.ms", "group_share_session_timeout_ms", int,
           "Share groups (KIP-932): a member silent for this long is fenced."),
    Option("group.share.heartbeat.interval.ms", "group_share_heartbeat_interval_ms", int,
           "Share groups: the heartbeat interval the coordinator tells members."),
    Option("group.share.max.size", "group_share_max_size", int, "Share groups: most members."),
    Option("group.share.record.lock.duration.ms", "group_share_record_lock_duration_ms", int,
           "Share groups: how long a consumer holds fetched records before they are offered again."),
    Option("group.share.delivery.count.limit", "group_share_delivery_count_limit", int,
           "Share groups: deliveries of a record before it is archived (never delivered again)."),
    Option("group.share.partition.max.record.locks", "group_share_partition_max_record_locks", int,
           "Share groups: most records of a partition in flight (acquired) at once."),
    Option("share.coordinator.state.topic.num.partitions", "share_coordinator_state_topic_num_partitions", int,
           "Partitions of `__share_group_state` (the share coordinator's), fixed when it is created."),
    Option("share.coordinator.state.topic.segment.bytes", "share_coordinator_state_topic_segment_bytes", int,
           "Segment size of `__share_group_state`."),
    Option("share.coordinator.snapshot.update.records.per.snapshot",
           "share_coordinator_snapshot_update_records_per_snapshot", int,
           "Share coordinator: a share partition's state is written whole again after this many updates."),
    Option("share.coordinator.state.topic.prune.interval.ms", "share_coordinator_state_topic_prune_interval_ms", int,
           "Share coordinator: how often the records of `__share_group_state` no state needs are deleted."),
    Option("share.coordinator.write.timeout.ms", "share_coordinator_write_timeout_ms", int,
           "Share coordinator: how long a state write waits to be replicated."),
    Option("transaction.state.log.num.partitions", "transaction_state_log_num_partitions", int,
           "Partitions of `__transaction_state`, fixed when it is created."),
    Option("transaction.state.log.segment.bytes", "transaction_state_log_segment_bytes", int,
           "Segment size of `__transaction_state`."),
    Option("transaction.max.timeout.ms", "transaction_max_timeout_ms", int,
           "Largest transaction timeout a producer may ask for (INVALID_TRANSACTION_TIMEOUT above)."),
    Option("transactional.id.expiration.ms", "transactional_id_expiration_ms", int,
           "A transactional id without an open transaction is forgotten this long after its last update."),
    Option("transaction.partition.verification.enable", "transaction_partition_verification_enable", bool,
           "Refuse a transactional batch for a partition not added to the producer's transaction "
           "(INVALID_TXN_STATE, KIP-890)."),
    Option("transaction.abort.timed.out.transaction.cleanup.interval.ms",
           "transaction_abort_timed_out_interval_ms", int,
           "Upper bound on how late a transaction past its timeout is aborted (minibroker also wakes at "
           "the earliest deadline)."),
    Option("allow.everyone.if.no.acl.found", "allow_everyone_if_no_acl_found", bool,
           "A resource without any ACL is open to everyone (true here; Kafka's default is false, but a Kafka "
           "broker without an authorizer allows everything)."),
    Option("super.users", "super_users", str,
           "Principals allowed everything whatever the ACLs, separated by semicolons (User:alice;User:bob)."),
    Option("listener.security.protocol.map", "listener_security_protocol_map", str,
           "Security protocol of each listener name, NAME:PROTOCOL comma-separated (PLAINTEXT, SSL, SASL_PLAINTEXT, "
           "SASL_SSL; each of these names maps to itself by default)."),
    Option("inter.broker.listener.name", "inter_broker_listener_name", str,
           "The listener other brokers connect to (and this broker's own connections use); default: the first "
           "listener of security.inter.broker.protocol."),
    Option("security.inter.broker.protocol", "security_inter_broker_protocol", str,
           "Security protocol between brokers when inter.broker.listener.name is unset."),
    # The cluster (ZooKeeper mode; docs/running/cluster.md).
    Option("broker.rack", "broker_rack", str, "This broker's rack, for rack-aware replica assignment."),
    Option("broker.id.generation.enable", "broker_id_generation_enable", bool,
           "With ZooKeeper and no broker.id: take an id from /brokers/seqid (above reserved.broker.max.id)."),
    Option("reserved.broker.max.id", "reserved_broker_max_id", int,
           "Generated broker ids start above this."),
    Option("zookeeper.connection.timeout.ms", "zookeeper_connection_timeout_ms", int,
           "How long a broker waits for ZooKeeper at start."),
    Option("controlled.shutdown.enable", "controlled_shutdown_enable", bool,
           "On SIGTERM, ask the controller to move this broker's leaderships away first."),
    Option("controlled.shutdown.max.retries", "controlled_shutdown_max_retries", int,
           "Attempts of a controlled shutdown before stopping anyway."),
    Option("controlled.shutdown.retry.backoff.ms", "controlled_shutdown_retry_backoff_ms", int,
           "Wait between controlled shutdown attempts."),
    Option("delete.topic.enable", "delete_topic_enable", bool, "DeleteTopics deletes (false: refused)."),
    Option("auto.leader.rebalance.enable", "auto_leader_rebalance_enable", bool,
           "The controller moves leaderships back to the preferred replicas when too many are elsewhere."),
    Option("leader.imbalance.check.interval.seconds", "leader_imbalance_check_interval_seconds", int,
           "How often the controller checks the preferred leaders."),
    Option("leader.imbalance.per.broker.percentage", "leader_imbalance_per_broker_percentage", int,
           "Share of a broker's partitions led elsewhere above which they are moved back."),
    Option("offsets.topic.replication.factor", "offsets_topic_replication_factor", int,
           "Replication factor of __consumer_offsets (at most the live brokers when it is created)."),
    Option("transaction.state.log.replication.factor", "transaction_state_log_replication_factor", int,
           "Replication factor of __transaction_state."),
    Option("transaction.state.log.min.isr", "transaction_state_log_min_isr", int,
           "min.insync.replicas of __transaction_state."),
    Option("share.coordinator.state.topic.replication.factor", "share_coordinator_state_topic_replication_factor",
           int, "Replication factor of __share_group_state."),
    Option("share.coordinator.state.topic.min.isr", "share_coordinator_state_topic_min_isr", int,
           "min.insync.replicas of __share_group_state."),
    Option("min.insync.replicas", "min_insync_replicas", int,
           "With acks=all, fewer in-sync replicas than this refuse the write (NOT_ENOUGH_REPLICAS)."),
    Option("unclean.leader.election.enable", "unclean_leader_election_enable", bool,
           "Elect a leader outside the ISR when none of it is alive (loses acknowledged data)."),
    Option("replica.lag.time.max.ms", "replica_lag_time_max_ms", int,
           "A follower that has not caught up for this long leaves the ISR."),
    Option("replica.fetch.max.bytes", "replica_fetch_max_bytes", int, "A follower's fetch size per partition."),
    Option("replica.fetch.response.max.bytes", "replica_fetch_response_max_bytes", int,
           "A follower's fetch size per request."),
    Option("replica.fetch.wait.max.ms", "replica_fetch_wait_max_ms", int, "A follower's fetch long poll."),
    Option("replica.fetch.backoff.ms", "replica_fetch_backoff_ms", int,
           "A follower's wait after a failed fetch."),
    Option("replica.socket.timeout.ms", "replica_socket_timeout_ms", int,
           "Timeout of a broker's requests to another broker."),
    Option("controller.socket.timeout.ms", "controller_socket_timeout_ms", int,
           "Timeout of the controller's requests to a broker."),
)
OPTIONS_BY_NAME = {o.kafka_name: o for o in OPTIONS}


@dataclass(slots=True)
class BrokerConfig:
    """Every setting of one broker: the command line's options and the Kafka-named ones (OPTIONS)."""

    admin_listen: str | None = None  # HOST:PORT of the admin HTTP endpoint (fault rules); None: off
    schema_registry: str | None = None  # HOST:PORT of the schema registry (Confluent's REST API); None: off
    console: str | None = None  # HOST:PORT of the web console (broker/http/console); None: off
    console_password_file: str | None = None  # the console's password (first line); required off loopback
    trace_file: str | None = None  # the decoded protocol trace (JSON lines); None: off
    virtual_time: bool = False  # tests: the broker's clock moves only by BrokerThread.advance (broker/clock.py)
    # The data dir outlives the broker: a stop flushes every log and marks the shutdown clean, and its metadata
    # (meta.properties, the topics, the producer-id block) is fsynced as written. Off for a test's throwaway
    # data dir (the fixture brokers): nothing is synced, logs are closed as they are, no mark (a restart would
    # recover them by scanning).
    durable_data_dir: bool = True
    kafka_version: str = DEFAULT_KAFKA_VERSION  # advertise this release's API versions (config/kafka_versions.py)
    listeners: list[Listener] = field(default_factory=lambda: [Listener("127.0.0.1", 9092)])
    data_dir: Path = Path("./data")
    broker_id: int = -1  # -1: 0 for a single broker; with ZooKeeper, generated (broker.id.generation.enable)
    cluster_id: str | None = None
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    socket_request_max_bytes: int = 100 * 1024 * 1024
    message_max_bytes: int = 1048588
    log_segment_bytes: int = 1024 * 1024 * 1024
    log_roll_ms: int = 7 * 24 * 3600 * 1000
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_index_interval_bytes: int = 4096
    log_message_timestamp_type: str = "CreateTime"
    log_cleanup_policy: str = "delete"
    log_cleaner_enable: bool = True
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_min_cleanable_ratio: float = 0.5
    log_cleaner_delete_retention_ms: int = 86_400_000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = 2**63 - 1
    log_cleaner_dedupe_buffer_entries: int = 1_000_000
    fsync: str = "grouped"
    fetch_max_bytes: int = 55 * 1024 * 1024
    max_incremental_fetch_session_cache_slots: int = 1000
    connections_max_idle_ms: int = 600_000
    shutdown_timeout_ms: int = 5_000
    zookeeper_connect: str | None = None
    zookeeper_session_timeout_ms: int = 18_000
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 0
    group_max_size: int = 2**31 - 1
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_max_size: int = 2**31 - 1
    group_consumer_assignors: str = "uniform,range"
    group_consumer_migration_policy: str = "bidirectional"
    group_consumer_regex_refresh_interval_ms: int = 600_000
    group_share_session_timeout_ms: int = 45_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_max_size: int = 200
    group_share_record_lock_duration_ms: int = 30_000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2_000
    share_coordinator_state_topic_num_partitions: int = 50
    share_coordinator_state_topic_segment_bytes: int = 100 * 1024 * 1024
    share_coordinator_snapshot_update_records_per_snapshot: int = 500
    share_coordinator_state_topic_prune_interval_ms: int = 5 * 60_000
    share_coordinator_write_timeout_ms: int = 5_000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_interval_ms: int = 10_000
    transaction_partition_verification_enable: bool = True
    allow_everyone_if_no_acl_found: bool = True
    super_users: str = ""
    listener_security_protocol_map: str = DEFAULT_PROTOCOL_MAP
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str = "PLAINTEXT"
    # Listeners' security settings by their Kafka names (ssl.*, sasl.*, listener.name.<name>.*: see
    # is_security_setting); read by broker.security when a listener is not PLAINTEXT.
    security: dict[str, str] = field(default_factory=dict)
    broker_rack: str | None = None
    broker_id_generation_enable: bool = True
    reserved_broker_max_id: int = 1000
    zookeeper_connection_timeout_ms: int = 18_000
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5_000
    delete_topic_enable: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    offsets_topic_replication_factor: int = 3
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    share_coordinator_state_topic_replication_factor: int = 3
    share_coordinator_state_topic_min_isr: int = 2
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_backoff_ms: int = 1_000
    replica_socket_timeout_ms: int = 30_000
    controller_socket_timeout_ms: int = 30_000

    def set_option(self, kafka_name: str, value: str, *, validate: bool = True) -> None:
        """Apply one `name=value` override, with Kafka's option name (validate=False: the caller validates
        once all are applied, as settings that name each other may come in any order)."""
        if kafka_name == "listeners":
            self.listeners = [Listener(host, port, name=name or "PLAINTEXT")
                              for name, host, port in (parse_listener(v, default_port=9092)
                                                       for v in value.split(",") if v.strip())]
        elif kafka_name == "advertised.listeners":
            self.listeners = advertise(self.listeners, [v for v in value.split(",") if v.strip()])
        elif is_security_setting(kafka_name):
            self.security[kafka_name] = value
        else:
            opt = OPTIONS_BY_NAME.get(kafka_name)
            if opt is None:
                raise ValueError(f"unknown option {kafka_name!r}")
            setattr(self, opt.attr, convert_option(opt, value))
        if validate:
            self.validate()

    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.listener_security_protocol_map)

    def listener_protocol(self, listener: Listener) -> str:
        """The security protocol of a listener (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)."""
        return self.protocol_map()[listener.name]

    def inter_broker_listener(self) -> Listener:
        """The listener the cluster's own connections use: inter.broker.listener.name, else the first
        listener of security.inter.broker.protocol (Kafka's rule)."""
        if self.inter_broker_listener_name:
            wanted = self.inter_broker_listener_name.upper()
            for listener in self.listeners:
                if listener.name == wanted:
                    return listener
            raise ValueError(f"inter.broker.listener.name {wanted} is not a listener "
                             f"({', '.join(li.name for li in self.listeners)})")
        for listener in self.listeners:
            if self.listener_protocol(listener) == self.security_inter_broker_protocol:
                return listener
        raise ValueError(f"no listener uses security.inter.broker.protocol {self.security_inter_broker_protocol}: "
                         "set inter.broker.listener.name")

    @property
    def cluster_mode(self) -> bool:
        """A broker of a ZooKeeper-mode cluster (possibly of one), rather than the embedded single broker."""
        return bool(self.zookeeper_connect)

    def validate(self) -> None:
        check_release(self.kafka_version)
        if self.console is not None:
            host, port = parse_host_port(self.console, default_port=CONSOLE_PORT)
            others = {"--admin-listen": (self.admin_listen, 0), "--schema-registry": (self.schema_registry, 8081)}
            for flag, (address, default_port) in others.items():
                # Its pages' paths (/topics, /groups ...) are the admin endpoint's too: an address of its own.
                if address and port and parse_host_port(address, default_port=default_port) == (host, port):
                    raise ValueError(f"--console {self.console} is also {flag}'s address: give it one of its own")
            if not is_loopback(host) and not self.console_password_file:
                raise ValueError(f"--console {self.console} is reachable from other machines and the console can "
                                 "change data: give it a password with --console-password-file FILE (or bind it "
                                 "to 127.0.0.1)")
        if self.broker_id < 0 and not self.zookeeper_connect:
            self.broker_id = 0  # the embedded single broker is node 0
        names = [listener.name for listener in self.listeners]
        if self.zookeeper_connect and len(set(names)) != len(names):
            # A cluster's brokers find each other's addresses by listener name (Kafka requires unique names).
            raise ValueError(f"with --zookeeper every listener needs a name of its own, not {names}: e.g. "
                             "--listen INTERNAL://0.0.0.0:29092 --listen EXTERNAL://0.0.0.0:9092 -o "
                             "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT -o "
                             "inter.broker.listener.name=INTERNAL")

        if self.fsync not in FSYNC_POLICIES:
            raise ValueError(f"log.flush.policy must be one of {FSYNC_POLICIES}, not {self.fsync!r}")
        if self.log_message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError("log.message.timestamp.type must be CreateTime or LogAppendTime")
        if self.num_partitions < 1:
            raise ValueError("num.partitions must be at least 1")
        if self.max_incremental_fetch_session_cache_slots < 0:
            raise ValueError("max.incremental.fetch.session.cache.slots must be at least 0")
        if self.offsets_topic_num_partitions < 1:
            raise ValueError("offsets.topic.num.partitions must be at least 1")
        if self.transaction_state_log_num_partitions < 1:
            raise ValueError("transaction.state.log.num.partitions must be at least 1")
        if self.share_coordinator_state_topic_num_partitions < 1:
            raise ValueError("share.coordinator.state.topic.num.partitions must be at least 1")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        if not self.listeners:
            raise ValueError("at least one listener is needed")
        assignors = [a.strip() for a in self.group_consumer_assignors.split(",") if a.strip()]
        unknown = [a for a in assignors if a not in ("uniform", "range")]
        if not assignors or unknown:
            raise ValueError(f"group.consumer.assignors: unknown assignor(s) {unknown} (uniform, range)")
        if self.group_consumer_migration_policy.lower() not in ("bidirectional", "upgrade", "downgrade",
                                                                 "disabled"):
            raise ValueError("group.consumer.migration.policy must be bidirectional, upgrade, downgrade or disabled")
        if not 2 <= self.group_share_delivery_count_limit <= 10:
            raise ValueError("group.share.delivery.count.limit must be between 2 and 10")
        protocols = self.protocol_map()
        for listener in self.listeners:
            if listener.name not in protocols:
                raise ValueError(f"listener {listener.name} has no security protocol in listener.security.protocol.map "
                                 f"({self.listener_security_protocol_map})")
        if self.security_inter_broker_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.inter.broker.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.inter_broker_listener_name and self.security_inter_broker_protocol != "PLAINTEXT":
            raise ValueError("set only one of inter.broker.listener.name and security.inter.broker.protocol")
        if self.inter_broker_listener_name:
            self.inter_broker_listener()  # names an existing listener

    def replace(self, **changes: Any) -> BrokerConfig:
        return dataclasses.replace(self, **changes)


def advertise(listeners: list[Listener], addresses: list[str]) -> list[Listener]:
    """The listeners with advertised addresses: `NAME://HOST:PORT` go to the listener of that name, plain
    `HOST:PORT` to the listeners in order."""
    out = list(listeners)
    for i, text in enumerate(addresses):
        name, host, port = parse_listener(text)
        if name is None:
            if i >= len(out):
                raise ValueError("more advertised addresses than listeners")
            index = i
        else:
            matches = [j for j, li in enumerate(out) if li.name == name]
            if not matches:
                raise ValueError(f"advertised listener {name} is not a listener "
                                 f"({', '.join(li.name for li in out)})")
            index = matches[0]
        out[index] = dataclasses.replace(out[index], advertised_host=host or None, advertised_port=port)
    return out


def convert_option(opt: Option, value: str) -> Any:
    if opt.kind is bool:
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError(f"{opt.kafka_name} takes true or false, not {value!r}")
        return lowered == "true"
    try:
        return opt.kind(value)
    except ValueError:
        raise ValueError(f"{opt.kafka_name}: bad value {value!r}") from None
