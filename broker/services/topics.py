"""Topics and their partitions: creation, deletion, lookup, and where they live on disk.

Layout under the data dir, as Kafka's: `<topic>-<partition>/` holds a partition's log; topic metadata
(id, partition count, config overrides) is kept in `meta/topics/<topic>.json`, written atomically.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from broker.config.options import BrokerConfig
from broker.config.topic import InvalidConfigError, effective_configs, log_config, validate_topic_configs
from broker.log.durable_file import write_atomically
from broker.log.partition_log import PartitionLog
from broker.log.producer_snapshot import load_producer_state, save_producer_state
from broker.log.producer_state import ProducerStateManager

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


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


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    log: PartitionLog
    producers: ProducerStateManager

    @property
    def high_watermark(self) -> int:
        # A single broker is its own in-sync replica set: everything appended is replicated.
        return self.log.log_end_offset


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)  # overrides only

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicManager:
    def __init__(self, config: BrokerConfig, now_ms: int) -> None:
        self.config = config
        self.data_dir = Path(config.data_dir)
        self._meta_dir = self.data_dir / "meta" / "topics"
        self._meta_dir.mkdir(parents=True, exist_ok=True)
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
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
            overrides = validate_topic_configs(configs)
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
        topic.partitions = [self._open_partition(topic, i, now_ms) for i in range(num_partitions)]
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
            p.log.close()
            doomed = p.log.directory.with_name(f"{p.log.directory.name}.{uuid.uuid4().hex}-delete")
            os.replace(p.log.directory, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
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
        new = [self._open_partition(topic, i, now_ms) for i in range(len(topic.partitions), count)]
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
            checked = validate_topic_configs(overrides)
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
        config = log_config(checked, self.config)
        for p in topic.partitions:
            p.log.config = config
        log.info("topic %s configs now %s", name, checked)
        return topic

    def refresh_log_configs(self) -> None:
        """The broker defaults changed (dynamic broker configs): every log takes its new effective config."""
        for topic in self._by_name.values():
            config = log_config(topic.configs, self.config)
            for p in topic.partitions:
                p.log.config = config

    def effective_configs(self, topic: Topic) -> dict[str, str]:
        return effective_configs(topic.configs, self.config)

    def close(self) -> None:
        for topic in self._by_name.values():
            for p in topic.partitions:
                try:
                    save_producer_state(p.log, p.producers)
                except OSError as exc:  # the next open rebuilds the state from the log
                    log.error("saving producer state of %s-%d failed: %s", p.topic, p.index, exc)
                p.log.close()

    # -- disk -----------------------------------------------------------------------------------
    def _open_partition(self, topic: Topic, index: int, now_ms: int) -> Partition:
        directory = self.data_dir / f"{topic.name}-{index}"
        plog = PartitionLog.open(directory, log_config(topic.configs, self.config), now_ms=now_ms)
        return Partition(topic.name, index, plog, load_producer_state(plog, f"{topic.name}-{index}"))

    def _write_meta(self, topic: Topic, num_partitions: int) -> None:
        data = {"name": topic.name, "topic_id": str(topic.topic_id), "partitions": num_partitions,
                "configs": topic.configs}
        write_atomically(self._meta_dir / f"{topic.name}.json", json.dumps(data))

    def _load(self, now_ms: int) -> None:
        for path in sorted(self._meta_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                topic = Topic(data["name"], uuid.UUID(data["topic_id"]), [], dict(data.get("configs", {})))
                count = int(data["partitions"])
            except (OSError, ValueError, KeyError) as exc:
                log.error("ignoring unreadable topic metadata %s: %s", path, exc)
                continue
            topic.partitions = [self._open_partition(topic, i, now_ms) for i in range(count)]
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
