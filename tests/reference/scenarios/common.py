"""Request bodies and record batches the scenarios share. Versions are ones every diff release (3.9, 4.1, 4.4)
and minibroker serve, so one scenario runs unchanged against each."""

from __future__ import annotations

import time
from typing import Any

from protocol.records import Record, build_batch
from tests.reference.harness import Session

METADATA, PRODUCE, FETCH, LIST_OFFSETS = 3, 0, 1, 2
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DELETE_RECORDS = 19, 20, 37, 21
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP = 10, 11, 14, 12, 13
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 8, 9, 15, 16, 42, 47
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, DESCRIBE_PRODUCERS = 65, 66, 61
OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CLUSTER = 23, 60

def now_ms() -> int:
    return int(time.time() * 1000)


def batch(values: list[bytes | None], keys: list[bytes | None] | None = None, *, timestamp: int | None = None,
          step_ms: int = 0, **kwargs: Any) -> bytes:
    """One v2 batch; record i has key keys[i] (None: keyless) and timestamp `timestamp + i * step_ms`
    (default: the run's base time, Session.t0: recent enough that Kafka's retention keeps the records, and
    the same for Kafka and minibroker, so the answers that carry timestamps compare)."""
    from tests.reference.harness import current_t0

    timestamp = current_t0() if timestamp is None else timestamp
    keys = keys or [None] * len(values)
    return build_batch([Record(i, i * step_ms, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))],
                       base_timestamp=timestamp, **kwargs)


def create_topic(s: Session, step: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 replication_factor: int = 1, validate_only: bool = False, **extra: Any) -> dict[str, Any] | None:
    """CreateTopics v7 of one topic, then (when created) wait until Metadata gives every partition a leader."""
    topic = {"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
             "assignments": [], "configs": [{"name": k, "value": v} for k, v in (config or {}).items()], **extra}
    answer = s.request(step, CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 30000,
                                                 "validate_only": validate_only})
    if answer and answer["topics"][0]["error_code"] == 0 and not validate_only:
        wait_leaders(s, name)
    return answer


def metadata_body(*names: str, auto_create: bool = False) -> dict[str, Any]:
    return {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": auto_create,
            "include_topic_authorized_operations": False}


def wait_leaders(s: Session, name: str, timeout: float = 30.0) -> None:
    """Unrecorded: until Metadata shows the topic with a leader for each partition and each leader answers
    ListOffsets (KRaft publishes a new topic to the metadata cache a moment before the partition's leader
    takes requests: NOT_LEADER_OR_FOLLOWER meanwhile)."""
    import time as _time

    deadline = _time.monotonic() + timeout
    while _time.monotonic() < deadline:
        answer = s.request("wait", METADATA, 12, metadata_body(name), record=False)
        topics = (answer or {}).get("topics") or []
        if topics and topics[0]["error_code"] == 0 and topics[0]["partitions"] and all(
                p["leader_id"] >= 0 for p in topics[0]["partitions"]):
            indexes = [p["partition_index"] for p in topics[0]["partitions"]]
            offsets = s.request("wait", LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": name, "partitions": [{"partition_index": i, "timestamp": -1, "current_leader_epoch": -1}
                                              for i in indexes]}]}, record=False)
            if offsets and all(p["error_code"] == 0 for t in offsets["topics"] for p in t["partitions"]):
                return
        _time.sleep(0.05)


def produce_body(topic: str, records: bytes | None, partition: int = 0, acks: int = -1,
                 transactional_id: str | None = None) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def produce(s: Session, step: str, topic: str, records: bytes | None, partition: int = 0, acks: int = -1,
            transactional_id: str | None = None, version: int = 9) -> dict[str, Any] | None:
    return s.request(step, PRODUCE, version, produce_body(topic, records, partition, acks, transactional_id))


def fetch_body(topic: str, offset: int, partition: int = 0, *, max_bytes: int = 50 * 1024 * 1024,
               partition_max_bytes: int = 1024 * 1024, isolation_level: int = 0, max_wait_ms: int = 0,
               current_leader_epoch: int = -1, session_id: int = 0, session_epoch: int = -1,
               partitions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    parts = partitions or [{"partition": partition, "current_leader_epoch": current_leader_epoch,
                            "fetch_offset": offset, "last_fetched_epoch": -1, "log_start_offset": -1,
                            "partition_max_bytes": partition_max_bytes}]
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 0, "max_bytes": max_bytes,
            "isolation_level": isolation_level, "session_id": session_id, "session_epoch": session_epoch,
            "topics": [{"topic": topic, "partitions": parts}], "forgotten_topics_data": [], "rack_id": ""}


def fetch(s: Session, step: str, topic: str, offset: int, partition: int = 0, **kwargs: Any) -> dict[str, Any] | None:
    return s.request(step, FETCH, 12, fetch_body(topic, offset, partition, **kwargs))


def list_offsets(s: Session, step: str, topic: str, timestamp: int, partition: int = 0, isolation_level: int = 0,
                 current_leader_epoch: int = -1) -> dict[str, Any] | None:
    return s.request(step, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": isolation_level, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                        "current_leader_epoch": current_leader_epoch}]}]})


def describe_configs(s: Session, step: str, resource_type: int, name: str, keys: list[str] | None = None,
                     synonyms: bool = True) -> dict[str, Any] | None:
    return s.request(step, DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": synonyms, "include_documentation": False})


TOPIC, BROKER = 2, 4  # config resource types
