"""Old protocol versions and message formats v0/v1 (Kafka before 0.11) against Kafka 3.9, whose ZooKeeper
brokers still serve every version from v0: Produce v0-2 of message sets, Fetch v0-3 (down-converted),
ListOffsets v0, OffsetCommit/OffsetFetch v0-1, Metadata v0, CreateTopics v0. Kafka 4 refuses them."""

from __future__ import annotations

from typing import Any

from protocol.legacy_records import MAGIC_V0, MAGIC_V1, build_message_set
from protocol.records import COMPRESSION_GZIP
from tests.reference.harness import Session, current_t0, scenario
from tests.reference.scenarios.common import (
    CREATE_TOPICS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    batch,
    create_topic,
    produce,
)
from tests.reference.scenarios.groups import GROUP_CONFIG, find_coordinator


def message_set(magic: int, values: list[bytes | None], keys: list[bytes | None] | None = None,
                compression: int = 0, step_ms: int = 1) -> bytes:
    """Messages 0..n-1 in format `magic`; with magic 1, timestamps from the run's base time."""
    keys = keys or [None] * len(values)
    t0 = current_t0()
    return build_message_set([(i, t0 + i * step_ms if magic == MAGIC_V1 else -1, k, v)
                              for i, (k, v) in enumerate(zip(keys, values, strict=True))], magic,
                             compression=compression)


def old_fetch(s: Session, step: str, version: int, topic: str, offset: int, max_bytes: int = 1024 * 1024) -> None:
    s.request(step, FETCH, version, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 * 1024 * 1024, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                             "partition_max_bytes": max_bytes}]}]})


def list_offsets_v0(s: Session, step: str, topic: str, timestamp: int, max_num: int = 10,
                    partition: int = 0) -> None:
    s.request(step, LIST_OFFSETS, 0, {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "timestamp": timestamp, "max_num_offsets": max_num}]}]})


@scenario(releases=("3.9",))
def legacy_produce_fetch(s: Session) -> None:
    """Produce v0-2 of message sets v0/v1 (plain and gzip) and Produce v9 of v2 batches; Fetch v0-3 of
    them all (down-converted to v0 or v1), v12 (as stored); ListOffsets v0."""
    topic = s.name("t")
    create_topic(s, "create", topic)
    produce(s, "v0: magic 0, plain", topic, message_set(MAGIC_V0, [b"a0", b"a1"], [b"k0", None]), version=0)
    produce(s, "v1: magic 0, gzip", topic, message_set(MAGIC_V0, [b"b0", b"b1", b"b2"], compression=COMPRESSION_GZIP),
            version=1)
    produce(s, "v2: magic 1, plain", topic, message_set(MAGIC_V1, [b"c0", None], [b"k1", b"k2"]), version=2)
    produce(s, "v2: magic 1, gzip", topic, message_set(MAGIC_V1, [b"d0", b"d1"], [None, b"k3"],
                                                         compression=COMPRESSION_GZIP), version=2)
    produce(s, "v9: v2 batch, plain", topic, batch([b"e0", b"e1"], [b"k4", None], step_ms=2))
    produce(s, "v9: v2 batch, gzip", topic, batch([b"f0", b"f1"], compression=COMPRESSION_GZIP, step_ms=3))
    produce(s, "v2: a v2 batch", topic, batch([b"x"]), version=2)
    produce(s, "v3: a magic 1 message set", topic, message_set(MAGIC_V1, [b"x"]), version=3)
    bad = bytearray(message_set(MAGIC_V1, [b"crc"]))
    bad[-1] ^= 0xFF
    produce(s, "v2: corrupt CRC", topic, bytes(bad), version=2)
    produce(s, "v0: unknown partition", topic, message_set(MAGIC_V0, [b"x"]), partition=5, version=0)
    for version in range(4):
        old_fetch(s, f"fetch v{version} from 0", version, topic, 0)
    old_fetch(s, "fetch v3 from inside the gzip message set", 3, topic, 3)
    old_fetch(s, "fetch v1 from the v2 batches", 1, topic, 9)
    old_fetch(s, "fetch v2 past the end", 2, topic, 100)
    old_fetch(s, "fetch v0 of an unknown topic", 0, s.name("nope"), 0)
    s.request("fetch v12: as stored", FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 * 1024 * 1024, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1024 * 1024}]}], "forgotten_topics_data": [],
        "rack_id": ""})
    list_offsets_v0(s, "list offsets v0: latest", topic, -1)
    list_offsets_v0(s, "list offsets v0: earliest", topic, -2)
    list_offsets_v0(s, "list offsets v0: latest, one", topic, -1, max_num=1)
    list_offsets_v0(s, "list offsets v0: by time", topic, current_t0())
    list_offsets_v0(s, "list offsets v0: unknown partition", topic, -1, partition=3)


@scenario(releases=("3.9",), config=GROUP_CONFIG)
def legacy_apis(s: Session) -> None:
    """OffsetCommit v0/v1 and OffsetFetch v0/v1 of a simple group, Metadata v0, CreateTopics v0."""
    topic, group = s.name("t"), s.name("g")
    s.request("create topics v0", CREATE_TOPICS, 0, {"topics": [
        {"name": topic, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 30000})
    s.request("create topics v0: exists", CREATE_TOPICS, 0, {"topics": [
        {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 30000})
    s.request("create topics v0: invalid name and partitions", CREATE_TOPICS, 0, {"topics": [
        {"name": "bad name!", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []},
        {"name": s.name("zero"), "num_partitions": 0, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout_ms": 30000})
    s.wait_for("metadata v0", METADATA, 0, {"topics": [{"name": topic}]},
               until=lambda a: all(p["leader_id"] >= 0 for t in a["topics"] for p in t["partitions"])
               and a["topics"][0]["error_code"] == 0)
    s.request("metadata v0: unknown topic", METADATA, 0, {"topics": [{"name": s.name("nope")}]})
    find_coordinator(s, group)

    def commit(step: str, version: int, offset: int, partition: int = 0, generation: int = -1,
               member: str = "", name: str = topic) -> dict[str, Any] | None:
        return s.request(step, OFFSET_COMMIT, version, {
            "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "topics": [{"name": name, "partitions": [
                {"partition_index": partition, "committed_offset": offset, "commit_timestamp": -1,
                 "committed_metadata": f"v{version}"}]}]})

    def offsets(step: str, version: int, partitions: list[int], name: str = topic) -> None:
        s.request(step, OFFSET_FETCH, version, {"group_id": group, "topics": [
            {"name": name, "partition_indexes": partitions}]})

    commit("commit v1", 1, 7, partition=1)
    commit("commit v1 with a generation", 1, 8, partition=1, generation=3, member="someone")
    offsets("fetch v1", 1, [0, 1])
    commit("commit v0", 0, 5)
    offsets("fetch v0", 0, [0])
    commit("commit v1: an auto-created topic", 1, 1, name=s.name("nope"))
    offsets("fetch v1: an auto-created topic", 1, [0], name=s.name("nope"))
    commit("commit v1: unknown topic", 1, 1, name=s.name("absent"))
    offsets("fetch v1: unknown topic", 1, [0], name=s.name("absent"))
    s.request("fetch v1 of a group never seen", OFFSET_FETCH, 1, {"group_id": s.name("never"), "topics": [
        {"name": topic, "partition_indexes": [0]}]})


@scenario(releases=("4.1", "4.4"))
def legacy_refused(s: Session) -> None:
    """Kafka 4 serves no message format v0/v1: Produce v2 and Fetch v3 refused."""
    topic = s.name("t")
    create_topic(s, "create", topic)
    produce(s, "produce v2", topic, message_set(MAGIC_V1, [b"x"]), version=2)
    old_fetch(s, "fetch v3", 3, topic, 0)
    list_offsets_v0(s, "list offsets v0", topic, -1)
    s.request("metadata v0", METADATA, 0, {"topics": [{"name": topic}]})
