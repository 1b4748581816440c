"""Topics and their partitions: creation, deletion, lookup, leadership, and where they live on disk.

Layout under the data dir, as Kafka's: `<topic>-<partition>/` holds a partition's log; topic metadata
(id, partition count, config overrides) is kept in `meta/topics/<topic>.json`, written atomically.

A single broker leads every partition of its topics, at leader epoch 0, and is their only replica. In a
cluster (broker.cluster) the topics are the controller's: this broker learns them from UpdateMetadata
(`apply_metadata`), hosts the logs of the partitions it is a replica of (`become_replica`, from
LeaderAndIsr), and answers for a partition only where it is the leader (`leader_partition`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from broker.config.options import BrokerConfig
from broker.config.topic import InvalidConfigError, effective_configs, log_config, validate_topic_configs
from broker.log.clean_shutdown import clear_clean_shutdown, had_clean_shutdown, mark_clean_shutdown
from broker.log.durable_file import write_atomically
from protocol.header import ErrorCode

if TYPE_CHECKING:
    # The log modules load with the first partition opened (`_open_partitions`): a broker with no topic answers
    # its first requests without them (startup time).
    from broker.log.partition_log import PartitionLog
    from broker.log.producer_state import ProducerStateManager

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"  # KIP-932 share-partition state (Kafka's share coordinator)
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})
_CLOSE_THREADS = 8


def share_state_topic_configs(config: BrokerConfig, replication_factor: int) -> dict[str, str]:
    """`__share_group_state`'s settings, as Kafka's ShareCoordinatorService gives them: records are deleted by
    the share coordinator's pruning, not by retention or compaction (KIP-932)."""
    return {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
            "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes),
            "min.insync.replicas": str(min(config.share_coordinator_state_topic_min_isr, replication_factor))}


class TopicError(Exception):
    """A topic operation failed with a Kafka error (name from protocol.header.ErrorCode)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def validate_topic_name(name: str | None) -> None:
    """Kafka's Topic.validate: INVALID_TOPIC_EXCEPTION for an illegal name."""
    if not name:
        raise TopicError("INVALID_TOPIC_EXCEPTION", "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise TopicError("INVALID_TOPIC_EXCEPTION", "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError("INVALID_TOPIC_EXCEPTION",
                         f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC.match(name):
        raise TopicError("INVALID_TOPIC_EXCEPTION",
                         f"Topic name \"{name}\" is illegal, it contains a character other than "
                         "ASCII alphanumerics, '.', '_' and '-'")


@dataclass(slots=True, eq=False)
class Partition:
    """One partition of a topic: its log and producer state where this broker holds a replica."""

    topic: str
    index: int
    log: PartitionLog | None  # None where this broker is not a replica
    producers: ProducerStateManager | None
    leader: int = -1  # the leader's broker id; -1: offline
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    offline_replicas: list[int] = field(default_factory=list)
    partition_epoch: int = 0  # the version of its state znode (AlterPartition's partition epoch)
    # The high watermark when the partition is replicated; None: everything appended is (one replica).
    replicated_hw: int | None = None

    @property
    def high_watermark(self) -> int:
        if self.replicated_hw is None:
            return self.log.log_end_offset
        return self.replicated_hw

    def save_producer_state(self) -> None:
        """Snapshot the producer state of the hosted log (it bounds the replay after a crash); raises OSError."""
        from broker.log.producer_snapshot import save_producer_state

        save_producer_state(self.log, self.producers)


@dataclass(slots=True)
class Topic:
    """A topic: its id, its partitions and its config overrides."""

    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)  # overrides only

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicManager:
    def __init__(self, config: BrokerConfig, now_ms: int, *, cluster: bool = False) -> None:
        self.config = config
        self.node_id = config.broker_id
        self.cluster = cluster
        self.data_dir = Path(config.data_dir)
        self.log_dir_offline = False  # its log directory failed: the partitions on it are not served
        self._meta_dir = self.data_dir / "meta" / "topics"
        self._meta_dir.mkdir(parents=True, exist_ok=True)
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        # In a cluster, the logs found at start wait here for the controller to say what they are.
        self._unclaimed: dict[tuple[str, int], Partition] = {}
        self._load(now_ms)

    # -- lookup -------------------------------------------------------------------------------
    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def partition(self, name: str, index: int) -> Partition | None:
        topic = self._by_name.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def leader_partition(self, name: str, index: int) -> Partition | ErrorCode:
        """The partition if this broker leads it; else UNKNOWN_TOPIC_OR_PARTITION (no such partition) or
        NOT_LEADER_OR_FOLLOWER (another broker leads it, or none does), as Kafka's
        ReplicaManager.getPartitionOrError."""
        topic = self._by_name.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = topic.partitions[index]
        if self.log_dir_offline and partition.log is not None:
            return ErrorCode.KAFKA_STORAGE_ERROR  # Kafka's HostedPartition.Offline
        if partition.leader != self.node_id or partition.log is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition

    @staticmethod
    def check_leader_epoch(partition: Partition, current_leader_epoch: int) -> ErrorCode:
        """A request's current leader epoch against ours (-1: not given): an older one is
        FENCED_LEADER_EPOCH (the client must refresh its metadata), a newer one UNKNOWN_LEADER_EPOCH (we
        have not heard of it yet)."""
        if current_leader_epoch < 0 or current_leader_epoch == partition.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < partition.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH

    def hosted(self) -> Iterator[Partition]:
        """Every partition this broker holds a log of."""
        for topic in list(self._by_name.values()):
            for partition in topic.partitions:
                if partition.log is not None:
                    yield partition

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    # -- changes ------------------------------------------------------------------------------
    def check_create(self, name: str, num_partitions: int, replication_factor: int,
                     configs: Mapping[str, str | None]) -> tuple[int, dict[str, str]]:
        """Validate a creation as Kafka does; returns (partitions, config overrides)."""
        validate_topic_name(name)
        if name in self._by_name:
            raise TopicError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
        if num_partitions == -1:
            num_partitions = self.config.num_partitions
        if num_partitions <= 0:
            raise TopicError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
        if replication_factor == -1:
            replication_factor = self.config.default_replication_factor
        if replication_factor <= 0:
            raise TopicError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0.")
        if replication_factor > 1:
            raise TopicError("INVALID_REPLICATION_FACTOR",
                             f"Unable to replicate the partition {replication_factor} time(s): "
                             "The target replication factor of "
                             f"{replication_factor} cannot be reached because only 1 broker(s) are registered.")
        try:
            overrides = validate_topic_configs(configs, self.config.kafka_version)
        except InvalidConfigError as exc:
            raise TopicError("INVALID_CONFIG", str(exc)) from None
        return num_partitions, overrides

    def create(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
               configs: Mapping[str, str | None] | None = None, *, now_ms: int) -> Topic:
        if name == OFFSETS_TOPIC and num_partitions == -1:
            # However it gets created (FindCoordinator, Metadata), Kafka's settings for it.
            num_partitions = self.config.offsets_topic_num_partitions
            configs = {"cleanup.policy": "compact",
                       "segment.bytes": str(self.config.offsets_topic_segment_bytes), **(configs or {})}
        elif name == SHARE_STATE_TOPIC and num_partitions == -1:
            num_partitions = self.config.share_coordinator_state_topic_num_partitions
            configs = {**share_state_topic_configs(self.config, 1), **(configs or {})}
        elif name == TRANSACTION_STATE_TOPIC and num_partitions == -1:
            num_partitions = self.config.transaction_state_log_num_partitions
            configs = {"cleanup.policy": "compact",
                       "segment.bytes": str(self.config.transaction_state_log_segment_bytes), **(configs or {})}
        num_partitions, overrides = self.check_create(name, num_partitions, replication_factor, configs or {})
        # Kafka forbids topics whose names collide once '.' and '_' are treated alike (metric names).
        folded = name.replace(".", "_")
        for other in self._by_name:
            if other.replace(".", "_") == folded:
                raise TopicError("INVALID_TOPIC_EXCEPTION",
                                 f"Topic '{name}' collides with existing topic: {other}")
        topic = Topic(name, uuid.uuid4(), [], overrides)
        self._write_meta(topic, num_partitions)
        topic.partitions = self._open_partitions(topic, range(num_partitions), now_ms)
        self._by_name[name] = topic
        self._by_id[topic.topic_id] = topic
        log.info("created topic %s with %d partition(s)", name, num_partitions)
        return topic

    def delete(self, name: str) -> Topic:
        if name in INTERNAL_TOPICS and name in self._by_name:
            # The coordinators own these logs; Kafka's tools refuse this too.
            raise TopicError("INVALID_REQUEST", f"Topic {name} is a kafka internal topic and is not allowed "
                                                "to be deleted.")
        topic = self._by_name.pop(name, None)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
        del self._by_id[topic.topic_id]
        # Metadata goes first: a crash mid-way leaves orphan partition dirs, which _load removes.
        (self._meta_dir / f"{name}.json").unlink(missing_ok=True)
        for p in topic.partitions:
            if p.log is not None:
                _remove_log(p.log)
        log.info("deleted topic %s", name)
        return topic

    def check_add_partitions(self, name: str, count: int) -> Topic:
        """Kafka's CreatePartitions validation (ReplicationControlManager.createPartitions)."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        if topic.is_internal:
            # The coordinators map keys to these partitions by their count.
            raise TopicError("INVALID_REQUEST", f"The number of partitions of the internal topic {name} "
                                                "cannot be changed.")
        current = len(topic.partitions)
        if count < current:
            raise TopicError("INVALID_PARTITIONS", f"The topic {name} currently has {current} partition(s); "
                                                   f"{count} would not be an increase.")
        if count == current:
            raise TopicError("INVALID_PARTITIONS", f"Topic already has {current} partition(s).")
        return topic

    def add_partitions(self, name: str, count: int, *, now_ms: int) -> Topic:
        """Grow the topic to `count` partitions: the new logs first, then the metadata that names them (a
        crash in between leaves empty partition directories that the next growth reuses)."""
        topic = self.check_add_partitions(name, count)
        new = self._open_partitions(topic, range(len(topic.partitions), count), now_ms)
        try:
            self._write_meta(topic, count)
        except OSError:
            for p in new:
                p.log.close()
            raise
        topic.partitions = [*topic.partitions, *new]
        log.info("topic %s now has %d partition(s)", name, count)
        return topic

    def alter_configs(self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False) -> Topic:
        """Replace the topic's config overrides (validated, persisted, applied to its logs: new values take
        effect for new appends, segments and the next retention run)."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        try:
            checked = validate_topic_configs(overrides, self.config.kafka_version)
        except InvalidConfigError as exc:
            raise TopicError("INVALID_CONFIG", str(exc)) from None
        if validate_only:
            return topic
        previous = topic.configs
        topic.configs = checked
        try:
            self._write_meta(topic, len(topic.partitions))
        except OSError:
            topic.configs = previous
            raise
        self._apply_log_config(topic)
        log.info("topic %s configs now %s", name, checked)
        return topic

    def refresh_log_configs(self) -> None:
        """The broker defaults changed (dynamic broker configs): every log takes its new effective config."""
        for topic in self._by_name.values():
            self._apply_log_config(topic)

    def _apply_log_config(self, topic: Topic) -> None:
        config = log_config(topic.configs, self.config)
        for p in topic.partitions:
            if p.log is not None:
                p.log.config = config

    def effective_configs(self, topic: Topic) -> dict[str, str]:
        return effective_configs(topic.configs, self.config)

    def close(self, durable: bool = True) -> None:
        """Close every log, then mark the shutdown clean (a log that fails to close leaves no mark: the
        next start recovers them all). Not `durable`: the logs are closed as they are, nothing is synced
        and no mark is written (the next start, if any, recovers them)."""
        from concurrent.futures import ThreadPoolExecutor  # a shutdown's alone: not imported at startup

        partitions = [*self.hosted(), *self._unclaimed.values()]
        if not durable:
            for partition in partitions:
                partition.log.close(sync=False)
            return
        # Kafka closes logs on num.recovery.threads.per.data.dir threads: concurrent fsyncs share journal
        # commits, so a thousand partitions' ~5 fsyncs each take a fraction of their time in sequence.
        with ThreadPoolExecutor(_CLOSE_THREADS, thread_name_prefix="close-log") as pool:
            for closing in [pool.submit(_close_partition, p) for p in partitions]:
                closing.result()  # a log that failed to close fails the shutdown: no clean mark
        mark_clean_shutdown(self.data_dir)

    # -- the cluster's topics (broker.cluster) ---------------------------------------------------------
    def apply_metadata(self, name: str, topic_id: uuid.UUID, states: Mapping[int, PartitionMetadata]) -> Topic:
        """What UpdateMetadata says of a topic: its id and each partition's leader, epoch, replicas and ISR
        (partitions this broker hosts keep their logs). A topic with a new id is another topic: the old
        one's logs are removed first."""
        topic = self._by_name.get(name)
        if topic is not None and topic.topic_id != topic_id:
            self.remove_topic(name)
            topic = None
        if topic is None:
            topic = Topic(name, topic_id, [], self._stored_configs(name, topic_id))
            self._by_name[name] = topic
            self._by_id[topic_id] = topic
        count = max(len(topic.partitions), max(states, default=-1) + 1)
        while len(topic.partitions) < count:
            topic.partitions.append(Partition(name, len(topic.partitions), None, None))
        for index, state in states.items():
            state.apply_to(topic.partitions[index])
        return topic

    def remove_topic(self, name: str) -> None:
        """The topic is gone from the cluster (or became another topic): forget it and remove its logs."""
        topic = self._by_name.pop(name, None)
        if topic is None:
            return
        self._by_id.pop(topic.topic_id, None)
        (self._meta_dir / f"{name}.json").unlink(missing_ok=True)
        for p in topic.partitions:
            if p.log is not None:
                _remove_log(p.log)
                p.log = p.producers = None
        log.info("removed topic %s", name)

    def become_replica(self, name: str, topic_id: uuid.UUID, index: int, configs: Mapping[str, str],
                       *, now_ms: int) -> Partition:
        """Host a log of the partition (LeaderAndIsr): the one found at start if it is this topic's, else a
        new empty one. Its leadership is set by the caller."""
        topic = self._by_name.get(name)
        if topic is None or topic.topic_id != topic_id:
            topic = self.apply_metadata(name, topic_id, {})
        while len(topic.partitions) <= index:
            topic.partitions.append(Partition(name, len(topic.partitions), None, None))
        topic.configs = dict(configs)
        partition = topic.partitions[index]
        if partition.log is None:
            found = self._unclaimed.pop((name, index), None)
            if found is not None and self._stored_topic_id(name) == topic_id:
                partition.log, partition.producers = found.log, found.producers
                partition.log.config = log_config(topic.configs, self.config)
            else:
                if found is not None:  # a log of an older topic of the same name
                    _remove_log(found.log)
                [opened] = self._open_partitions(topic, [index], now_ms)
                partition.log, partition.producers = opened.log, opened.producers
            self._write_hosted_meta(topic)
        return partition

    def stop_replica(self, name: str, index: int, *, delete: bool) -> None:
        """No longer a replica of the partition (StopReplica): close its log, and remove it when asked."""
        partition = self.partition(name, index)
        if partition is None or partition.log is None:
            return
        if not delete:
            try:
                partition.save_producer_state()
            except OSError as exc:
                log.error("saving producer state of %s-%d failed: %s", name, index, exc)
        plog = partition.log
        partition.log = partition.producers = None
        partition.replicated_hw = None
        if delete:
            _remove_log(plog)
        else:
            plog.close()
        topic = self._by_name[name]
        self._write_hosted_meta(topic)

    def drop_unclaimed_not_in_metadata(self) -> None:
        """The first metadata after a start: logs of topics deleted meanwhile (another id, or none), or of
        partitions this broker is no longer a replica of, are removed (the controller could not tell a
        broker that was down)."""
        for (name, index), found in list(self._unclaimed.items()):
            topic = self._by_name.get(name)
            stale = topic is None or self._stored_topic_id(name) != topic.topic_id or index >= len(topic.partitions) \
                or self.node_id not in topic.partitions[index].replicas
            if stale:
                log.info("removing the log of %s-%d: its topic or replica is gone from the cluster", name, index)
                del self._unclaimed[(name, index)]
                _remove_log(found.log)

    def set_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """The topic's config overrides changed in the cluster (its /config/topics znode)."""
        topic = self._by_name.get(name)
        if topic is not None:
            topic.configs = dict(configs)
            self._apply_log_config(topic)
            if any(p.log is not None for p in topic.partitions):
                self._write_hosted_meta(topic)

    def _stored_configs(self, name: str, topic_id: uuid.UUID) -> dict[str, str]:
        data = self._read_meta(name)
        if data is not None and data.get("topic_id") == str(topic_id):
            return dict(data.get("configs", {}))
        return {}

    def _stored_topic_id(self, name: str) -> uuid.UUID | None:
        data = self._read_meta(name)
        return uuid.UUID(data["topic_id"]) if data is not None else None

    def _read_meta(self, name: str) -> dict | None:
        try:
            return json.loads((self._meta_dir / f"{name}.json").read_text())
        except (OSError, ValueError):
            return None

    def _write_hosted_meta(self, topic: Topic) -> None:
        hosted = [p.index for p in topic.partitions if p.log is not None]
        path = self._meta_dir / f"{topic.name}.json"
        if not hosted:
            path.unlink(missing_ok=True)
            return
        data = {"name": topic.name, "topic_id": str(topic.topic_id), "hosted": hosted, "configs": topic.configs}
        write_atomically(path, json.dumps(data), sync=self.config.durable_data_dir)

    # -- disk -----------------------------------------------------------------------------------
    def _open_partitions(self, topic: Topic, indexes: Iterable[int], now_ms: int, *,
                         clean_shutdown: bool = False) -> list[Partition]:
        from broker.log.partition_log import PartitionLog
        from broker.log.producer_snapshot import load_producer_state

        config = log_config(topic.configs, self.config)  # one for all (AlterConfigs replaces it for all)
        # A single broker leads its partitions and is their only replica; a cluster's controller says.
        leader, replicas = (-1, []) if self.cluster else (self.node_id, [self.node_id])
        opened = []
        for index in indexes:
            name = f"{topic.name}-{index}"
            plog = PartitionLog.open(self.data_dir / name, config, now_ms=now_ms, track_epochs=self.cluster,
                                     clean_shutdown=clean_shutdown)
            opened.append(Partition(topic.name, index, plog, load_producer_state(plog, name), leader=leader,
                                    replicas=list(replicas), isr=list(replicas)))
        return opened

    def _write_meta(self, topic: Topic, num_partitions: int) -> None:
        data = {"name": topic.name, "topic_id": str(topic.topic_id), "partitions": num_partitions,
                "configs": topic.configs}
        write_atomically(self._meta_dir / f"{topic.name}.json", json.dumps(data), sync=self.config.durable_data_dir)

    def _load(self, now_ms: int) -> None:
        clean = had_clean_shutdown(self.data_dir)
        for path in sorted(self._meta_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                topic = Topic(data["name"], uuid.UUID(data["topic_id"]), [], dict(data.get("configs", {})))
                count = int(data.get("partitions", 0))
            except (OSError, ValueError, KeyError) as exc:
                log.error("ignoring unreadable topic metadata %s: %s", path, exc)
                continue
            if self.cluster:
                for p in self._open_partitions(topic, data.get("hosted", []), now_ms, clean_shutdown=clean):
                    self._unclaimed[(topic.name, p.index)] = p
                continue
            topic.partitions = self._open_partitions(topic, range(count), now_ms, clean_shutdown=clean)
            self._by_name[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        # Partition dirs of a topic whose metadata is gone were left by a deletion cut short.
        metas = {path.stem for path in self._meta_dir.glob("*.json")}
        for entry in self.data_dir.iterdir():
            if not entry.is_dir():
                continue
            if entry.name.endswith("-delete"):
                shutil.rmtree(entry, ignore_errors=True)
                continue
            m = re.match(r"^(.+)-\d+$", entry.name)
            if m and m.group(1) not in metas:
                log.warning("removing partition dir %s of a deleted topic", entry.name)
                shutil.rmtree(entry, ignore_errors=True)
        clear_clean_shutdown(self.data_dir)  # from here on the logs may change: a crash must be recovered


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """A partition's state as the controller publishes it (UpdateMetadata, LeaderAndIsr)."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    partition_epoch: int = 0

    def apply_to(self, partition: Partition) -> None:
        partition.leader = self.leader
        partition.leader_epoch = self.leader_epoch
        partition.replicas = list(self.replicas)
        partition.isr = list(self.isr)
        partition.offline_replicas = list(self.offline_replicas)
        partition.partition_epoch = self.partition_epoch


def _close_partition(p: Partition) -> None:
    try:
        p.save_producer_state()
    except OSError as exc:  # the next open rebuilds the state from the log
        log.error("saving producer state of %s-%d failed: %s", p.topic, p.index, exc)
    p.log.close()


def _remove_log(plog: PartitionLog) -> None:
    """Close the log and remove its directory (renamed first, so a crash leaves a `-delete` dir that the
    next start removes, never a half-deleted log under the partition's name)."""
    plog.close()
    doomed = plog.directory.with_name(f"{plog.directory.name}.{uuid.uuid4().hex}-delete")
    try:
        os.replace(plog.directory, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def check_new_assignments(assignments: list[list[int]], current: int, count: int, brokers: set[int],
                          replication_factor: int) -> None:
    """Kafka's checks of the replicas given for new partitions (CreatePartitions); raises TopicError."""
    if len(assignments) != count - current:
        raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                         f"Attempted to add {count - current} additional partition(s), but only {len(assignments)} "
                         "assignment(s) were specified.")
    for ids in assignments:
        if not ids:
            raise TopicError("INVALID_REPLICA_ASSIGNMENT", "Replica assignment of a partition must not be empty.")
        if len(set(ids)) != len(ids):
            raise TopicError("INVALID_REPLICA_ASSIGNMENT", f"Duplicate brokers in replica assignment: {ids}")
        if any(b not in brokers for b in ids):
            raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                             f"The manual partition assignment includes broker(s) that are not registered: {ids}")
        if len(ids) != replication_factor:
            raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                             f"The manual partition assignment includes a partition with {len(ids)} replica(s), but "
                             f"this is not consistent with previous partitions, which have {replication_factor} "
                             "replica(s).")
