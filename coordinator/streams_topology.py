"""A streams group's topology (KIP-1071) and its internal topics, as Kafka 4.4's StreamsTopology and
InternalTopicManager decide them.

A Kafka Streams application sends its topology when a member joins: subtopologies with their source topics,
the repartition topics they write to and read from, their state changelog topics and copartition groups. The
coordinator keeps it (StreamsGroupTopology record) and configures it against the cluster's topics: source
topics must exist, a repartition topic without a fixed partition count gets the largest count of the topics
feeding it, copartitioned topics must agree, a changelog topic gets one partition per task. Internal topics
that do not exist yet are to be created (the broker creates them and answers MISSING_INTERNAL_TOPICS until
they are there); one with the wrong partition count is INCORRECTLY_PARTITIONED_TOPICS. Pure: the topics are
looked up through a function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

PartitionCount = Callable[[str], int | None]  # a topic's partition count, None when it does not exist


class StreamsStatus(IntEnum):
    """StreamsGroupHeartbeatResponse.Status: conditions of the group a heartbeat reports (not errors)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class TopicConfigurationError(Exception):
    """Kafka's TopicConfigurationException: the topology cannot be configured against the topics now."""

    def __init__(self, status: StreamsStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: not fixed by the application
    replication_factor: int = 0  # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics, regexes and repartition source topics."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def stateful(self) -> bool:
        """Kafka's TopologyDescriber.isStateful: a subtopology with state has changelog topics."""
        return bool(self.state_changelog_topics)

    def input_topics(self) -> list[str]:
        """What its tasks read: the source topics and the repartition topics it consumes."""
        return list(self.source_topics) + [t.name for t in self.repartition_source_topics]

    def copartitioned_sets(self) -> list[set[str]]:
        return [{self.source_topics[i] for i in group.source_topics}
                | {self.repartition_source_topics[i].name for i in group.repartition_source_topics}
                for group in self.copartition_groups]


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def by_id(self) -> dict[str, Subtopology]:
        return {s.subtopology_id: s for s in self.subtopologies}

    def source_topic_subtopology(self) -> dict[str, Subtopology]:
        """Kafka's sourceTopicMap: every topic a subtopology reads, repartition topics included."""
        return {topic: s for s in self.subtopologies for topic in s.input_topics()}

    def required_topics(self) -> set[str]:
        return {t for s in self.subtopologies for t in s.input_topics()} | \
            {t.name for s in self.subtopologies for t in s.state_changelog_topics}

    # -- the request's and the record's form (same field names) ----------------------------------------
    @classmethod
    def from_fields(cls, value: Mapping[str, Any]) -> StreamsTopology:
        """From StreamsGroupHeartbeatRequest.Topology or StreamsGroupTopologyValue."""
        return cls(value["epoch"], tuple(Subtopology(
            s["subtopology_id"], tuple(s["source_topics"]), tuple(s["source_topic_regex"] or ()),
            tuple(_topic_info(t) for t in s["state_changelog_topics"]), tuple(s["repartition_sink_topics"]),
            tuple(_topic_info(t) for t in s["repartition_source_topics"]),
            tuple(CopartitionGroup(tuple(g["source_topics"]), tuple(g["source_topic_regex"]),
                                   tuple(g["repartition_source_topics"])) for g in s["copartition_groups"]))
            for s in value["subtopologies"]))

    def to_fields(self) -> dict[str, Any]:
        """StreamsGroupTopologyValue, in the request's order (as Kafka converts it)."""
        return {"epoch": self.epoch, "subtopologies": [{
            "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
            "source_topic_regex": list(s.source_topic_regex),
            "state_changelog_topics": [_topic_info_fields(t) for t in s.state_changelog_topics],
            "repartition_sink_topics": list(s.repartition_sink_topics),
            "repartition_source_topics": [_topic_info_fields(t) for t in s.repartition_source_topics],
            "copartition_groups": [{"source_topics": list(g.source_topics),
                                    "source_topic_regex": list(g.source_topic_regex),
                                    "repartition_source_topics": list(g.repartition_source_topics)}
                                   for g in s.copartition_groups]} for s in self.subtopologies]}


def _topic_info(value: Mapping[str, Any]) -> TopicInfo:
    return TopicInfo(value["name"], value["partitions"], value["replication_factor"],
                     tuple((c["key"], c["value"]) for c in value["topic_configs"] or ()))


def _topic_info_fields(info: TopicInfo) -> dict[str, Any]:
    return {"name": info.name, "partitions": info.partitions, "replication_factor": info.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in info.configs]}


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """An internal topic as it must be (Kafka's ConfiguredInternalTopic)."""

    name: str
    partitions: int
    replication_factor: int | None  # None: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    number_of_tasks: int
    stateful: bool
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[InternalTopic, ...]
    state_changelog_topics: tuple[InternalTopic, ...]

    def input_topics(self) -> list[str]:
        return list(self.source_topics) + [t.name for t in self.repartition_source_topics]


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The topology configured against the topics: its subtopologies with their task counts (None when it
    cannot be), what to create, and why it is not ready."""

    topology_epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None  # by subtopology id, sorted
    topics_to_create: dict[str, InternalTopic] = field(default_factory=dict)
    error: TopicConfigurationError | None = None

    @property
    def is_ready(self) -> bool:
        return self.subtopologies is not None and self.error is None


def configure_topics(topology: StreamsTopology, metadata_hash: int, partition_count: PartitionCount
                     ) -> ConfiguredTopology:
    """Kafka's InternalTopicManager.configureTopics."""
    try:
        _check_source_topics(topology, partition_count)
        decided = _decide_partition_counts(topology, partition_count)

        def count(topic: str) -> int:
            known = partition_count(topic)
            return known if known is not None else decided[topic]

        def internal(info: TopicInfo) -> InternalTopic:
            partitions = info.partitions if info.partitions else decided[info.name]
            return InternalTopic(info.name, partitions, info.replication_factor or None, info.configs)

        configured = {s.subtopology_id: ConfiguredSubtopology(
            max(count(t) for t in s.input_topics()), s.stateful, s.source_topics,
            tuple(internal(t) for t in s.repartition_source_topics),
            tuple(internal(t) for t in s.state_changelog_topics))
            for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)}
        to_create = _missing_internal_topics(configured.values(), partition_count)
    except TopicConfigurationError as exc:
        return ConfiguredTopology(topology.epoch, metadata_hash, None, {}, exc)
    error = None
    if to_create:
        error = TopicConfigurationError(StreamsStatus.MISSING_INTERNAL_TOPICS,
                                        f"Internal topics are missing: {summarize(sorted(to_create))}")
    return ConfiguredTopology(topology.epoch, metadata_hash, configured, to_create, error)


def summarize(topics: list[str]) -> str:
    """Kafka's summarizeTopics: at most three names."""
    if not topics:
        return "<none>"
    shown = ", ".join(topics[:3])
    return shown + (f" and {len(topics) - 3} additional topics" if len(topics) > 3 else "")


def _check_source_topics(topology: StreamsTopology, partition_count: PartitionCount) -> None:
    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if partition_count(t) is None})
    if missing:
        raise TopicConfigurationError(StreamsStatus.MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} "
                                      "are missing.")


def _decide_partition_counts(topology: StreamsTopology, partition_count: PartitionCount) -> dict[str, int]:
    decided: dict[str, int] = {}

    def count(topic: str) -> int | None:
        known = partition_count(topic)
        return known if known is not None else decided.get(topic)

    decided.update(_repartition_counts(topology, count))
    fixed = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if t.partitions}
    flexible = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if not t.partitions}
    for subtopology in topology.subtopologies:
        for group in subtopology.copartitioned_sets():
            decided.update(_enforce_copartitioning(group, fixed, flexible, count))
    for subtopology in topology.subtopologies:  # Kafka's ChangelogTopics: one partition per task
        if subtopology.state_changelog_topics:
            tasks = max(c for c in (count(t) for t in subtopology.input_topics()) if c is not None)
            for changelog in subtopology.state_changelog_topics:
                decided[changelog.name] = tasks
    return decided


def _repartition_counts(topology: StreamsTopology, count: PartitionCount) -> dict[str, int]:
    """Kafka's RepartitionTopics: a repartition topic without a fixed count gets the largest count of the
    topics read by the subtopologies that write to it, decided in as many rounds as the chain needs."""
    counts = {t.name: t.partitions for s in topology.subtopologies for t in s.repartition_source_topics
              if t.partitions}
    pending = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if not t.partitions}
    while pending:
        progress = False
        for topic in sorted(pending):
            candidates = []
            for writer in topology.subtopologies:
                if topic not in writer.repartition_sink_topics:
                    continue
                for upstream in writer.input_topics():
                    known = counts.get(upstream) if upstream in counts or upstream in pending else count(upstream)
                    if known is not None:
                        candidates.append(known)
            if candidates:
                counts[topic] = max(candidates)
                pending.discard(topic)
                progress = True
        if not progress:
            raise TopicConfigurationError(StreamsStatus.MISSING_SOURCE_TOPICS, "Failed to compute the number of "
                                          f"partitions of the repartition topics {summarize(sorted(pending))}.")
    return counts


def _enforce_copartitioning(group: set[str], fixed: set[str], flexible: set[str], count: PartitionCount
                            ) -> dict[str, int]:
    """Kafka's CopartitionedTopicsEnforcer: copartitioned topics get (or must have) one partition count."""
    if not group:
        return {}
    repartition = sorted(t for t in group if t in fixed or t in flexible)
    external = {t: count(t) for t in sorted(group) if t not in fixed and t not in flexible}
    if external:
        if len(set(external.values())) > 1:
            raise TopicConfigurationError(StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                          f"Following topics are not copartitioned: {external}")
        partitions = next(iter(external.values()))
    else:
        enforced = {t: count(t) for t in repartition if t in fixed}
        if enforced:
            if len(set(enforced.values())) > 1:
                raise TopicConfigurationError(StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS, "Following topics do "
                                              f"not have the same number of partitions: {enforced}")
            partitions = next(iter(enforced.values()))
        else:
            partitions = max(c for c in (count(t) for t in repartition) if c is not None)
    assert partitions is not None
    decided = {}
    for topic in repartition:
        if topic in flexible:
            decided[topic] = partitions
        elif count(topic) != partitions:
            raise TopicConfigurationError(StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS, f"Number of partitions "
                                          f"[{count(topic)}] of repartition topic [{topic}] doesn't match number of "
                                          f"partitions [{partitions}] of the source topic.")
    return decided


def _missing_internal_topics(subtopologies: Iterable[ConfiguredSubtopology], partition_count: PartitionCount
                             ) -> dict[str, InternalTopic]:
    wanted = {t.name: t for s in subtopologies for t in (*s.repartition_source_topics, *s.state_changelog_topics)}
    missing = {}
    for name, topic in sorted(wanted.items()):
        existing = partition_count(name)
        if existing is None:
            missing[name] = topic
        elif existing != topic.partitions:
            raise TopicConfigurationError(StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has "
                                          f"different number of partitions: expected {topic.partitions}, found "
                                          f"{existing}")
    return missing
