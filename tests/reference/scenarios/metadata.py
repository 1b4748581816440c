"""Metadata (auto-creation on and off, unknown and invalid topics, topic ids) and DescribeCluster."""

from __future__ import annotations

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DESCRIBE_CLUSTER,
    METADATA,
    batch,
    create_topic,
    metadata_body,
    produce,
)


@scenario()
def metadata_auto_create(s: Session) -> None:
    """Metadata creates a topic it is asked about (allow_auto_topic_creation), not an invalid one."""
    name = s.name("auto")
    s.request("first ask creates", METADATA, 12, metadata_body(name, auto_create=True))
    s.wait_for("created", METADATA, 12, metadata_body(name),
               until=lambda a: a["topics"][0]["error_code"] == 0 and bool(a["topics"][0]["partitions"]))
    s.request("not allowed: unknown", METADATA, 12, metadata_body(s.name("not-allowed")))
    s.request("invalid name", METADATA, 12, metadata_body("bad name!", auto_create=True))
    s.request("name too long", METADATA, 12, metadata_body("x" * 250, auto_create=True))
    s.request("internal prefix allowed", METADATA, 12, metadata_body(s.name("__x"), auto_create=False))
    s.request("no topics", METADATA, 12, {"topics": [], "allow_auto_topic_creation": True})
    s.request("v4 created as asked", METADATA, 4, {"topics": [{"name": s.name("v4")}],
                                                   "allow_auto_topic_creation": True})


@scenario()
def metadata_topics(s: Session) -> None:
    """Metadata of created topics: partitions, leaders, epochs, topic ids, authorized operations, by id."""
    name = s.name("three")
    create_topic(s, "create", name, partitions=3)
    answer = s.request("three partitions", METADATA, 12, metadata_body(name))
    s.request("with authorized operations", METADATA, 12, {
        "topics": [{"name": name}], "allow_auto_topic_creation": False, "include_topic_authorized_operations": True})
    s.request("v8 cluster authorized operations", METADATA, 8, {
        "topics": [{"name": name}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True, "include_topic_authorized_operations": True})
    s.request("v1 (non-flexible, no topic ids)", METADATA, 1, {"topics": [{"name": name}]})
    topic_id = answer["topics"][0]["topic_id"] if answer else None
    import uuid

    if topic_id:
        s.request("by topic id", METADATA, 12, {"topics": [{"topic_id": uuid.UUID(topic_id), "name": None}],
                                                 "allow_auto_topic_creation": False})
    s.request("unknown and known together", METADATA, 12, metadata_body(name, s.name("nope")))
    produce(s, "produce", name, batch([b"a", b"b"]), partition=1)
    s.request("after produce", METADATA, 12, metadata_body(name))


@scenario(config={"auto.create.topics.enable": "false"})
def metadata_no_auto_create(s: Session) -> None:
    """auto.create.topics.enable=false: asking creates nothing, producing to an unknown topic fails."""
    name = s.name("never")
    s.request("allowed but disabled", METADATA, 12, metadata_body(name, auto_create=True))
    s.request("still unknown", METADATA, 12, metadata_body(name))
    produce(s, "produce to unknown", name, batch([b"x"]))
    s.request("v4 disabled", METADATA, 4, {"topics": [{"name": name}], "allow_auto_topic_creation": True})


@scenario()
def produce_does_not_create(s: Session) -> None:
    """Produce to an unknown topic with auto-creation on: only Metadata creates topics."""
    name = s.name("unasked")
    produce(s, "produce to unknown", name, batch([b"x"]))
    s.request("unknown afterwards", METADATA, 12, metadata_body(name))


@scenario(fresh=True)
def metadata_all_topics(s: Session) -> None:
    """Metadata of every topic on a broker that has two, and of none."""
    create_topic(s, "create a", s.name("a"), partitions=2)
    create_topic(s, "create b", s.name("b"))
    s.request("all topics (null)", METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    s.request("all topics v0 (empty list)", METADATA, 0, {"topics": []})


@scenario()
def describe_cluster(s: Session) -> None:
    """DescribeCluster: brokers, controller, authorized operations, endpoint types."""
    s.request("v0", DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    s.request("v1 with authorized operations", DESCRIBE_CLUSTER, 1,
              {"include_cluster_authorized_operations": True, "endpoint_type": 1})
    s.request("v1 controllers from a broker", DESCRIBE_CLUSTER, 1,
              {"include_cluster_authorized_operations": False, "endpoint_type": 2})
    s.request("v1 unknown endpoint type", DESCRIBE_CLUSTER, 1,
              {"include_cluster_authorized_operations": False, "endpoint_type": 7})
