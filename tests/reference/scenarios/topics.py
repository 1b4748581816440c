"""CreateTopics, DeleteTopics and CreatePartitions with good and bad input: names, partition counts,
replication factors, assignments, configs, validate_only; their error codes (and whether a message comes)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    METADATA,
    create_topic,
    metadata_body,
    wait_leaders,
)


def _create(s: Session, step: str, topics: list[dict[str, Any]], validate_only: bool = False,
            version: int = 7) -> dict[str, Any] | None:
    full = [{"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [], **t} for t in topics]
    return s.request(step, CREATE_TOPICS, version, {"topics": full, "timeout_ms": 30000,
                                                    "validate_only": validate_only})


@scenario()
def create_topics(s: Session) -> None:
    """CreateTopics: a good topic (its configs in the answer), defaults, bad counts, names, configs."""
    good = s.name("good")
    create_topic(s, "good, 3 partitions", good, partitions=3, config={"retention.ms": "3600000"})
    _create(s, "already exists", [{"name": good}])
    name = s.name("defaults")
    _create(s, "defaults (-1, -1)", [{"name": name, "num_partitions": -1, "replication_factor": -1}])
    wait_leaders(s, name)
    s.request("defaults applied", METADATA, 12, metadata_body(name))
    _create(s, "zero partitions", [{"name": s.name("p0"), "num_partitions": 0}])
    _create(s, "partitions -2", [{"name": s.name("pm2"), "num_partitions": -2}])
    _create(s, "replication factor 0", [{"name": s.name("rf0"), "replication_factor": 0}])
    _create(s, "replication factor 2 on one broker", [{"name": s.name("rf2"), "replication_factor": 2}])
    _create(s, "replication factor -2", [{"name": s.name("rfm2"), "replication_factor": -2}])
    for label, bad in [("empty name", ""), ("dot", "."), ("dot dot", ".."), ("space", "has space"),
                       ("slash", "a/b"), ("249 chars", "n" * 249), ("250 chars", "n" * 250)]:
        _create(s, f"name: {label}", [{"name": bad}], validate_only=True)
    _create(s, "unknown config", [{"name": s.name("cfg1"), "configs": [{"name": "no.such.config", "value": "1"}]}])
    _create(s, "bad number", [{"name": s.name("cfg2"), "configs": [{"name": "retention.ms", "value": "soon"}]}])
    _create(s, "bad enum", [{"name": s.name("cfg3"), "configs": [{"name": "cleanup.policy", "value": "bogus"}]}])
    _create(s, "below minimum", [{"name": s.name("cfg4"), "configs": [{"name": "segment.bytes", "value": "10"}]}])
    _create(s, "null config value", [{"name": s.name("cfg5"), "configs": [{"name": "retention.ms", "value": None}]}])
    _create(s, "same topic twice", [{"name": s.name("twice")}, {"name": s.name("twice")}])
    _create(s, "assignment", [{"name": s.name("assigned"), "num_partitions": -1, "replication_factor": -1,
                               "assignments": [{"partition_index": 0, "broker_ids": [0]},
                                               {"partition_index": 1, "broker_ids": [0]}]}])
    wait_leaders(s, s.name("assigned"))
    _create(s, "assignment to an unknown broker", [{
        "name": s.name("badassign"), "num_partitions": -1, "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [7]}]}])
    _create(s, "assignment and a count", [{
        "name": s.name("both"), "num_partitions": 2, "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [0]}]}])
    _create(s, "assignment skips a partition", [{
        "name": s.name("gap"), "num_partitions": -1, "replication_factor": -1,
        "assignments": [{"partition_index": 1, "broker_ids": [0]}]}])
    _create(s, "assignment repeats a broker", [{
        "name": s.name("dup"), "num_partitions": -1, "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [0, 0]}]}])
    only = s.name("validate")
    _create(s, "validate only", [{"name": only, "num_partitions": 2,
                                  "configs": [{"name": "cleanup.policy", "value": "compact"}]}], validate_only=True)
    s.request("validate only created nothing", METADATA, 12, metadata_body(only))
    _create(s, "v4 (no configs in the answer)", [{"name": s.name("v4")}], version=4)
    wait_leaders(s, s.name("v4"))


@scenario()
def create_topic_name_collision(s: Session) -> None:
    """Topic names that differ only in '.' and '_' collide in metric names: Kafka refuses the second."""
    create_topic(s, "create with underscore", s.name("a_b"))
    _create(s, "create with dot", [{"name": s.name("a.b")}])


@scenario()
def delete_topics(s: Session) -> None:
    """DeleteTopics by name and by id (v6): unknown, both given, deleted twice."""
    by_name, by_id = s.name("by-name"), s.name("by-id")
    create_topic(s, "create", by_name)
    create_topic(s, "create", by_id)
    meta = s.request("ids", METADATA, 12, metadata_body(by_id))
    topic_id = uuid.UUID(meta["topics"][0]["topic_id"]) if meta else uuid.uuid4()
    s.request("unknown name", DELETE_TOPICS, 6, {"topics": [{"name": s.name("nope")}], "timeout_ms": 30000})
    s.request("unknown id", DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": uuid.UUID(int=7)}],
                                               "timeout_ms": 30000})
    s.request("name and id", DELETE_TOPICS, 6, {"topics": [{"name": by_name, "topic_id": topic_id}],
                                                "timeout_ms": 30000})
    s.request("neither", DELETE_TOPICS, 6, {"topics": [{"name": None}], "timeout_ms": 30000})
    s.request("by name", DELETE_TOPICS, 6, {"topics": [{"name": by_name}], "timeout_ms": 30000})
    s.request("by id", DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": topic_id}], "timeout_ms": 30000})
    s.wait_for("gone", METADATA, 12, metadata_body(by_name, by_id),
               until=lambda a: all(t["error_code"] == 3 for t in a["topics"]))
    s.request("v4 by name, deleted already", DELETE_TOPICS, 4, {"topic_names": [by_name], "timeout_ms": 30000})


def _partitions(s: Session, step: str, topics: list[dict[str, Any]], validate_only: bool = False) -> None:
    s.request(step, CREATE_PARTITIONS, 3, {"topics": [{"assignments": None, **t} for t in topics],
                                           "timeout_ms": 30000, "validate_only": validate_only})


@scenario()
def create_partitions(s: Session) -> None:
    """CreatePartitions: more, the same, fewer, unknown topic, assignments, validate_only."""
    name = s.name("grow")
    create_topic(s, "create", name, partitions=1)
    _partitions(s, "validate 1 -> 4", [{"name": name, "count": 4}], validate_only=True)
    _partitions(s, "1 -> 2", [{"name": name, "count": 2}])
    wait_leaders(s, name)
    s.wait_for("two partitions", METADATA, 12, metadata_body(name),
               until=lambda a: len(a["topics"][0]["partitions"]) == 2)
    _partitions(s, "2 -> 2", [{"name": name, "count": 2}])
    _partitions(s, "2 -> 1", [{"name": name, "count": 1}])
    _partitions(s, "unknown topic", [{"name": s.name("nope"), "count": 2}])
    _partitions(s, "assignments", [{"name": name, "count": 3, "assignments": [{"broker_ids": [0]}]}])
    _partitions(s, "wrong number of assignments", [{"name": name, "count": 5,
                                                    "assignments": [{"broker_ids": [0]}]}])
    _partitions(s, "assignment to an unknown broker", [{"name": name, "count": 4,
                                                        "assignments": [{"broker_ids": [9]}]}])
    _partitions(s, "same topic twice", [{"name": name, "count": 6}, {"name": name, "count": 7}])
    s.wait_for("three partitions", METADATA, 12, metadata_body(name),
               until=lambda a: len(a["topics"][0]["partitions"]) == 3)
