"""The request versions Kafka 4.2-4.4 added to existing APIs: OffsetCommit/OffsetFetch v10 and TxnOffsetCommit
v6 (topics by id), ListOffsets v11 (KIP-1023's earliest pending upload offset), DescribeLogDirs v5
(IsCordoned), DeleteGroups v3 (per-group error messages), ApiVersions v5 (KIP-1242: the cluster and node the
client means)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    ADD_OFFSETS_TO_TXN,
    DELETE_GROUPS,
    END_TXN,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    TXN_OFFSET_COMMIT,
    batch,
    create_topic,
    metadata_body,
    produce,
)
from tests.reference.scenarios.consumer_groups import MEMBER_A, join, owned, settle
from tests.reference.scenarios.consumer_groups import find_coordinator as find_consumer_coordinator
from tests.reference.scenarios.groups import find_coordinator, join_new_member
from tests.reference.scenarios.transactions import find_txn_coordinator
from tests.reference.scenarios.versions import served_view

API_VERSIONS, DESCRIBE_LOG_DIRS = 18, 35
UNKNOWN_ID = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


def topic_id(s: Session, topic: str) -> uuid.UUID:
    answer = s.request("topic id", METADATA, 12, metadata_body(topic), record=False) or {}
    return uuid.UUID((answer.get("topics") or [{}])[0].get("topic_id") or str(uuid.UUID(int=0)))


def commit_v10(s: Session, step: str, group: str, topics: list[tuple[uuid.UUID, int]], offset: int,
               epoch: int = -1, member: str = "") -> dict[str, Any]:
    return s.request(step, OFFSET_COMMIT, 10, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member, "group_instance_id": None,
        "topics": [{"topic_id": tid, "partitions": [
            {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": f"m{p}"}]} for tid, p in topics]}) or {}


def fetch_v10(s: Session, step: str, group: str, topics: list[tuple[uuid.UUID, list[int]]] | None,
              member: str | None = None, epoch: int = -1) -> dict[str, Any]:
    return s.request(step, OFFSET_FETCH, 10, {"groups": [{
        "group_id": group, "member_id": member, "member_epoch": epoch,
        "topics": None if topics is None else [{"topic_id": tid, "partition_indexes": parts}
                                               for tid, parts in topics]}], "require_stable": False}) or {}


@scenario(releases=("4.2", "4.3", "4.4"))
def offsets_by_topic_id(s: Session) -> None:
    """OffsetCommit and OffsetFetch v10 name topics by id: commits of a simple group (admin commits), of an
    unknown and the zero topic id, fetches by id, of every topic (null) and of an unknown id; the same offsets
    by name (v9); a consumer-protocol member's commit by id with its epoch."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    tid = topic_id(s, topic)
    find_coordinator(s, group)
    commit_v10(s, "commit by topic id", group, [(tid, 0), (tid, 1)], 5)
    commit_v10(s, "commit an unknown topic id", group, [(UNKNOWN_ID, 0)], 5)
    commit_v10(s, "commit the zero topic id", group, [(uuid.UUID(int=0), 0)], 5)
    commit_v10(s, "commit a partition the topic lacks", group, [(tid, 7)], 5)
    fetch_v10(s, "fetch by topic id", group, [(tid, [0, 1, 2])])
    fetch_v10(s, "fetch an unknown topic id", group, [(UNKNOWN_ID, [0])])
    fetch_v10(s, "fetch every topic", group, None)
    s.request("fetch by name (v9)", OFFSET_FETCH, 9, {"groups": [{
        "group_id": group, "member_id": None, "member_epoch": -1,
        "topics": [{"name": topic, "partition_indexes": [0, 1]}]}], "require_stable": False})
    fetch_v10(s, "fetch of an unknown group", s.name("nogroup"), [(tid, [0])])
    consumers = s.name("cg")
    find_consumer_coordinator(s, consumers)
    joined = join(s, "member joins", consumers, MEMBER_A, [topic])
    epoch, _ = settle(s, "member settles", consumers, MEMBER_A, joined.get("member_epoch", 0), owned(joined))
    commit_v10(s, "member commits by id", consumers, [(tid, 0)], 9, epoch, MEMBER_A)
    commit_v10(s, "member commits with a stale epoch", consumers, [(tid, 0)], 9, epoch - 1, MEMBER_A)
    fetch_v10(s, "member fetches by id", consumers, [(tid, [0])], MEMBER_A, epoch)
    fetch_v10(s, "member fetches with a stale epoch", consumers, [(tid, [0])], MEMBER_A, epoch - 1)


@scenario(releases=("4.2", "4.3", "4.4"))
def list_offsets_v11(s: Session) -> None:
    """ListOffsets v11 of every special timestamp (latest, earliest, max timestamp, earliest local, latest
    tiered, earliest pending upload) on a topic without tiered storage, and of an unknown topic."""
    topic = s.name("t")
    create_topic(s, "create", topic)
    produce(s, "produce", topic, batch([b"a", b"b", b"c"], step_ms=10))
    for step, ts in (("latest", -1), ("earliest", -2), ("max timestamp", -3), ("earliest local", -4),
                     ("latest tiered", -5), ("earliest pending upload", -6), ("unknown special -7", -7)):
        s.request(step, LIST_OFFSETS, 11, {"replica_id": -1, "isolation_level": 0, "timeout_ms": 30000,
                                          "topics": [{"name": topic, "partitions": [
                                              {"partition_index": 0, "timestamp": ts,
                                               "current_leader_epoch": -1}]}]})
    s.request("unknown topic", LIST_OFFSETS, 11, {"replica_id": -1, "isolation_level": 0, "timeout_ms": 30000,
                                                  "topics": [{"name": s.name("none"), "partitions": [
                                                      {"partition_index": 0, "timestamp": -6,
                                                       "current_leader_epoch": -1}]}]})


def _log_dirs_view(step: str, answer: Any) -> Any:
    """The log directory's path and its volume's size are each broker's own; only this scenario's topic is
    compared (a shared broker holds others)."""
    if isinstance(answer, dict) and "results" in answer:
        return {**answer, "results": [
            {**r, "log_dir": "<log dir>", "total_bytes": "<set>" if r.get("total_bytes", -1) >= 0 else -1,
             "usable_bytes": "<set>" if r.get("usable_bytes", -1) >= 0 else -1,
             "topics": [{**t, "partitions": [{**p, "partition_size": "<set>" if p["partition_size"] > 0 else 0}
                                             for p in t["partitions"]]}
                        for t in r["topics"] if t["name"].startswith("describe-log-dirs")]}
            for r in answer["results"]]}
    return answer


@scenario(releases=("4.3", "4.4"), both_view=_log_dirs_view)
def describe_log_dirs_v5(s: Session) -> None:
    """DescribeLogDirs v5 (IsCordoned) of a topic, of all topics, and v4 for comparison."""
    topic = s.name("t")
    create_topic(s, "create", topic, partitions=2)
    produce(s, "produce", topic, batch([b"x"]))
    body = {"topics": [{"topic": topic, "partitions": [0, 1, 5]}]}
    s.request("v5 of the topic", DESCRIBE_LOG_DIRS, 5, body)
    s.request("v4 of the topic", DESCRIBE_LOG_DIRS, 4, body)
    s.request("v5 of every topic", DESCRIBE_LOG_DIRS, 5, {"topics": None})


@scenario(releases=("4.4",))
def delete_groups_v3(s: Session) -> None:
    """DeleteGroups v3 (an error message per group): an empty group with offsets, an unknown group, a group
    with a member, an invalid (empty) group id, and v2 of the same for comparison."""
    empty, busy = s.name("empty"), s.name("busy")
    topic = s.name("t")
    create_topic(s, "create", topic)
    find_coordinator(s, empty)
    find_coordinator(s, busy)
    s.request("commit to the empty group", OFFSET_COMMIT, 9, {
        "group_id": empty, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    join_new_member(s, "a member joins", busy, topic=topic)
    s.request("v3: empty, unknown, busy, empty id", DELETE_GROUPS, 3,
              {"groups_names": [empty, s.name("unknown"), busy, ""]})
    s.request("v2: the same", DELETE_GROUPS, 2, {"groups_names": [empty, s.name("unknown"), busy, ""]})


@scenario(releases=("4.4",))
def txn_offset_commit_v6(s: Session) -> None:
    """TxnOffsetCommit v6 names topics by id: a transaction's offsets of a known, an unknown and the zero topic
    id, committed, then fetched by id."""
    topic, group, txn = s.name("t"), s.name("g"), s.name("txn")
    create_topic(s, "create", topic)
    tid = topic_id(s, topic)
    find_txn_coordinator(s, txn)
    find_coordinator(s, group)
    first = s.wait_for("init", 22, 5, {"transactional_id": txn, "transaction_timeout_ms": 60000, "producer_id": -1,
                                       "producer_epoch": -1, "enable2_pc": False, "keep_prepared_txn": False},
                       until=lambda a: a["error_code"] not in (14, 15, 16, 51), timeout=60)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    s.request("add offsets", ADD_OFFSETS_TO_TXN, 4, {"transactional_id": txn, "producer_id": pid,
                                                     "producer_epoch": epoch, "group_id": group})
    body = {"transactional_id": txn, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None}

    def offsets(tid_: uuid.UUID, offset: int) -> list[dict[str, Any]]:
        return [{"topic_id": tid_, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": "x"}]}]

    s.request("txn commit by topic id", TXN_OFFSET_COMMIT, 6, {**body, "topics": offsets(tid, 3)})
    s.request("txn commit of an unknown topic id", TXN_OFFSET_COMMIT, 6, {**body, "topics": offsets(UNKNOWN_ID, 3)})
    s.request("txn commit of the zero topic id", TXN_OFFSET_COMMIT, 6,
              {**body, "topics": offsets(uuid.UUID(int=0), 3)})
    ended = s.request("commit the transaction", END_TXN, 5, {"transactional_id": txn, "producer_id": pid,
                                                             "producer_epoch": epoch, "committed": True}) or {}
    s.note("ended", {"error_code": ended.get("error_code")})
    s.wait_for("offsets committed", OFFSET_FETCH, 10, {"groups": [{
        "group_id": group, "member_id": None, "member_epoch": -1,
        "topics": [{"topic_id": tid, "partition_indexes": [0]}]}], "require_stable": True},
               until=lambda a: all(p["error_code"] == 0 and p["committed_offset"] >= 0 for g in a["groups"]
                                   for t in g["topics"] for p in t["partitions"]), timeout=30)


@scenario(releases=("4.4",), kafka_view=served_view)
def api_versions_v5(s: Session) -> None:
    """ApiVersions v5 (KIP-1242): without a cluster and node id, with the right ones, a wrong cluster id, a
    wrong node id, only one of the two."""
    meta = s.request("metadata", METADATA, 12, metadata_body(), record=False) or {}
    cluster, node = meta.get("cluster_id"), (meta.get("brokers") or [{}])[0].get("node_id", 0)
    soft = {"client_software_name": "reference-harness", "client_software_version": "1.0"}
    cases = (("no cluster or node id", None, -1), ("the right cluster and node", cluster, node),
             ("another cluster id", "AAAAAAAAAAAAAAAAAAAAAA", node), ("another node id", cluster, node + 17),
             ("the cluster id only", cluster, -1), ("the node id only", None, node),
             ("another cluster id only", "AAAAAAAAAAAAAAAAAAAAAA", -1))
    for step, cluster_id, node_id in cases:
        s.request(step, API_VERSIONS, 5, {**soft, "cluster_id": cluster_id, "node_id": node_id}, conn=step)
