"""KIP-932 share groups, version 2 of ShareFetch and ShareAcknowledge (Kafka 4.2+): the acquire modes of
KIP-1206 (record limit, batch-optimized) over record batches larger than MaxRecords, RENEW acknowledgements
(KIP-1222) and their rules, the acknowledgement batches Kafka refuses, and the share group configs of each
release with their bounds. Members pick their own ids (ShareGroupHeartbeat v1); one partition, so every
fetch reads the same log."""

from __future__ import annotations

import uuid
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DESCRIBE_CONFIGS,
    FIND_COORDINATOR,
    INCREMENTAL_ALTER_CONFIGS,
    METADATA,
    batch,
    create_topic,
    produce,
)
from tests.reference.scenarios.transactions import (
    add_partitions,
    end,
    find_txn_coordinator,
    first_init,
    txn_batch,
    wait_state,
)

SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 78, 79
GROUP = 32  # ConfigResource type
GAP, ACCEPT, RELEASE, REJECT, RENEW = range(5)
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
V2 = ("4.2", "4.4")


class Member:
    """A share consumer by hand: its id, its share session's next epoch, its requests."""

    def __init__(self, s: Session, group: str, topic: str, topic_id: uuid.UUID, name: str) -> None:
        self.s, self.group, self.topic_id = s, group, topic_id
        self.id = (name * 22)[:22]
        self.epoch = 0
        s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
                   until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60, record=False)
        joined = s.wait_for("join", SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": self.id, "member_epoch": 0, "rack_id": None,
            "subscribed_topic_names": [topic]}, until=lambda a: a["error_code"] == 0, timeout=60, record=False)
        self.member_epoch = joined.get("member_epoch", 0)

    def heartbeat(self, member_epoch: int, topics: list[str] | None = None) -> dict[str, Any]:
        """Unrecorded: Kafka's group coordinator initializes a share partition's state when a heartbeat
        assigns it (again on a later heartbeat when that failed, as on a fresh cluster)."""
        return self.s.request("heartbeat", SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": self.group, "member_id": self.id, "member_epoch": member_epoch, "rack_id": None,
            "subscribed_topic_names": topics}, record=False) or {}

    def _next(self, answer: dict[str, Any] | None) -> dict[str, Any]:
        if answer and answer["error_code"] not in (122, 123):  # SHARE_SESSION_NOT_FOUND, INVALID_..._EPOCH
            self.epoch += 1
        return answer or {}

    def fetch_body(self, max_records: int, acks: list[dict[str, Any]] | None = None, *, mode: int = RECORD_LIMIT,
                   renew: bool = False, max_wait_ms: int = 0, max_bytes: int = 1 << 20, min_bytes: int = 1,
                   ) -> dict[str, Any]:
        return {"group_id": self.group, "member_id": self.id, "share_session_epoch": self.epoch,
                "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
                "max_records": max_records, "batch_size": max(max_records, 1), "share_acquire_mode": mode,
                "is_renew_ack": renew, "topics": [{"topic_id": self.topic_id, "partitions": [
                    {"partition_index": 0, "partition_max_bytes": 0, "acknowledgement_batches": acks or []}]}],
                "forgotten_topics_data": []}

    def fetch(self, step: str, max_records: int, acks: list[dict[str, Any]] | None = None, version: int = 2,
              **kwargs: Any) -> dict[str, Any]:
        return self._next(self.s.request(step, SHARE_FETCH, version, self.fetch_body(max_records, acks, **kwargs)))

    def first_fetch(self, step: str, max_records: int, **kwargs: Any) -> dict[str, Any]:
        """The session's first fetch, repeated (each try opens a new session) with heartbeats between until
        records come: Kafka hands out none before the group coordinator initialized the share partition."""
        def ready(answer: dict[str, Any]) -> bool:
            if acquired(answer):
                return True
            self.member_epoch = self.heartbeat(self.member_epoch).get("member_epoch", self.member_epoch)
            return False
        answer = self.s.wait_for(step, SHARE_FETCH, 2, self.fetch_body(max_records, **kwargs), until=ready,
                                 timeout=60)
        return self._next(answer)

    def acknowledge(self, step: str, acks: list[dict[str, Any]], renew: bool = False,
                    version: int = 2) -> dict[str, Any]:
        return self._next(self.s.request(step, SHARE_ACKNOWLEDGE, version, {
            "group_id": self.group, "member_id": self.id, "share_session_epoch": self.epoch, "is_renew_ack": renew,
            "topics": [{"topic_id": self.topic_id, "partitions": [
                {"partition_index": 0, "acknowledgement_batches": acks}]}]}))


def ack(first: int, last: int, *types: int) -> dict[str, Any]:
    return {"first_offset": first, "last_offset": last, "acknowledge_types": list(types)}


def acquired(answer: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [(r["first_offset"], r["last_offset"], r["delivery_count"])
            for t in answer.get("responses") or [] for p in t["partitions"] for r in p["acquired_records"]]


def setup(s: Session, topic: str, group: str, batches: tuple[int, ...]) -> uuid.UUID:
    """A one-partition topic holding `batches` (record counts), the group reading it from the start."""
    create_topic(s, "create", topic)
    alter_group(s, "group from the earliest offset", group, {"share.auto.offset.reset": "earliest"})
    for i, count in enumerate(batches):
        produce(s, f"produce batch {i} of {count}", topic, batch([b"v%d" % n for n in range(count)]))
    answer = s.request("topic id", METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}, record=False)
    return uuid.UUID(str(answer["topics"][0]["topic_id"]))


def alter_group(s: Session, step: str, group: str, configs: dict[str, str], validate_only: bool = False) -> None:
    s.request(step, INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
        "resource_type": GROUP, "resource_name": group,
        "configs": [{"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}],
        "validate_only": validate_only})


@scenario(releases=V2)
def share_fetch_v2_acquire_modes(s: Session) -> None:
    """ShareFetch v2's acquire modes over a 67-record batch: record-limit hands out MaxRecords records (the
    batch goes out whole each time), batch-optimized the rest of the batch, then whole batches until
    MaxRecords is reached; a record released inside a batch comes back alone, with its batch; an unknown
    mode fails the request; ShareFetch v1 is batch-optimized."""
    topic, group = s.name("t"), s.name("g")
    topic_id = setup(s, topic, group, (67, 5, 30, 100))
    a = Member(s, group, topic, topic_id, "a")
    a.first_fetch("a: record limit 20", 20)
    a.fetch("a: record limit 20 again", 20)
    a.fetch("a: batch optimized 3: the rest of the batch", 3, mode=BATCH_OPTIMIZED)
    a.fetch("a: accept 0-66 but release 5; batch optimized 20: whole batches", 20,
            [ack(0, 4, ACCEPT), ack(5, 5, RELEASE), ack(6, 66, ACCEPT)], mode=BATCH_OPTIMIZED)
    a.fetch("a: unknown acquire mode", 20, mode=7)
    a.fetch("a: record limit 1: the released record", 1)
    a.fetch("a: v1 fetch", 1, version=1)
    a.fetch("a: record limit 0", 0)


@scenario(releases=V2)
def share_acknowledge_v2_renew(s: Session) -> None:
    """RENEW (KIP-1222): in ShareAcknowledge v2 with IsRenewAck, alone and mixed with ACCEPT; refused without
    the flag, in v1, and in a ShareFetch that also asks for records; a ShareFetch that only renews fetches
    nothing. The acknowledgement batches Kafka refuses (types out of range, ranges out of order, counts that
    do not match, offsets never acquired or held by another member)."""
    topic, group = s.name("t"), s.name("g")
    topic_id = setup(s, topic, group, (67, 5))
    a = Member(s, group, topic, topic_id, "a")
    a.first_fetch("a: record limit 40", 40)
    a.acknowledge("a: renew 0-4", [ack(0, 4, RENEW)], renew=True)
    a.acknowledge("a: renew 5, accept 6", [ack(5, 6, RENEW, ACCEPT)], renew=True)
    a.acknowledge("a: renew type without IsRenewAck", [ack(7, 7, RENEW)])
    a.acknowledge("a: v1 with the renew type", [ack(7, 7, RENEW)], version=1)
    a.acknowledge("a: type 5", [ack(7, 7, 5)])
    a.acknowledge("a: type -1", [ack(7, 7, -1)])
    a.acknowledge("a: first offset after last", [ack(8, 7, ACCEPT)])
    a.acknowledge("a: ranges out of order", [ack(8, 10, ACCEPT), ack(9, 9, ACCEPT)])
    a.acknowledge("a: no types", [ack(8, 8)])
    a.acknowledge("a: two types for three offsets", [ack(8, 10, ACCEPT, ACCEPT)])
    a.acknowledge("a: past the records acquired", [ack(60, 61, ACCEPT)])
    a.acknowledge("a: accept with IsRenewAck", [ack(8, 8, ACCEPT)], renew=True)
    a.fetch("a: renew in a fetch that asks for records", 5, [ack(9, 9, RENEW)], renew=True)
    a.fetch("a: renew only: nothing fetched", 0, [ack(9, 9, RENEW)], renew=True, max_bytes=0, min_bytes=0)
    a.fetch("a: IsRenewAck with nothing to renew", 0, renew=True, max_bytes=0, min_bytes=0)
    a.fetch("a: renew type in a fetch without IsRenewAck", 5, [ack(10, 10, RENEW)])
    b = Member(s, group, topic, topic_id, "b")
    b.first_fetch("b: record limit 2", 2)
    b.acknowledge("b: a's records", [ack(11, 11, ACCEPT)])
    b.acknowledge("b: renew a's records", [ack(11, 11, RENEW)], renew=True)


SHARE_CONFIGS = ["share.auto.offset.reset", "share.isolation.level", "share.record.lock.duration.ms",
                 "share.session.timeout.ms", "share.heartbeat.interval.ms", "share.delivery.count.limit",
                 "share.partition.max.record.locks", "share.renew.acknowledge.enable", "share.assignment.interval.ms",
                 "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "consumer.assignment.interval.ms",
                 "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"]


@scenario(releases=V2)
def share_group_configs(s: Session) -> None:
    """The share (and consumer) group configs of the release, described with their defaults, and the values
    IncrementalAlterConfigs refuses: below the type's own minimum, outside the range the broker allows,
    not a boolean, names the release does not have."""
    group = s.name("g")
    s.request("describe the group's configs", DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": SHARE_CONFIGS}],
        "include_synonyms": False, "include_documentation": False})
    checks = {
        "share.record.lock.duration.ms": ["999", "14999", "15000", "60000", "60001"],
        "share.session.timeout.ms": ["44999", "45000", "60000", "60001"],
        "share.heartbeat.interval.ms": ["4999", "5000", "15000", "15001"],
        "share.delivery.count.limit": ["1", "2", "10", "11"],
        "share.partition.max.record.locks": ["99", "100", "4000", "4001"],
        "share.renew.acknowledge.enable": ["false", "maybe"],
        "share.isolation.level": ["read_committed", "x"],
        "share.auto.offset.reset": ["by_duration:PT1H", "by_duration:-PT1H", "nope"],
        "consumer.session.timeout.ms": ["44999", "60001"],
        "consumer.heartbeat.interval.ms": ["4999", "15001"],
        "share.assignment.interval.ms": ["0"],
        "errors.deadletterqueue.topic.name": ["__dlq"],
        "errors.deadletterqueue.copy.record.enable": ["true"],
    }
    for name, values in checks.items():
        for value in values:
            alter_group(s, f"{name}={value}", group, {name: value}, validate_only=True)
    alter_group(s, "set two", group, {"share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "earliest"})
    s.wait_for("describe with synonyms", DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": SHARE_CONFIGS}],
        "include_synonyms": True, "include_documentation": False},
        until=lambda a: any(c["value"] == "20000" for c in a["results"][0]["configs"]), timeout=15)


DESCRIBE_SHARE_GROUP_OFFSETS = 90


def describe_offsets(s: Session, step: str, group: str, lag: int) -> None:
    """DescribeShareGroupOffsets v1 until the partition's lag is `lag` (Kafka answers from its share-group
    state, written a moment after the acknowledgement's answer)."""
    s.wait_for(step, DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]},
               until=lambda a: [p["lag"] for g in a["groups"] for t in g["topics"] for p in t["partitions"]] == [lag],
               timeout=15)


@scenario(releases=V2)
def share_group_offsets_and_lag(s: Session) -> None:
    """DescribeShareGroupOffsets v1 (KIP-1226) as acknowledgements move a share partition on: no state before
    the first acknowledgement, then the start offset Kafka's share-group state holds and the lag (records to
    the high watermark neither acknowledged nor archived)."""
    topic, group = s.name("t"), s.name("g")
    topic_id = setup(s, topic, group, (12,))
    a = Member(s, group, topic, topic_id, "a")
    a.first_fetch("a: fetch", 20, mode=BATCH_OPTIMIZED)
    describe_offsets(s, "after the first fetch", group, -1)
    a.acknowledge("a: accept 0-5", [ack(0, 5, ACCEPT)])
    describe_offsets(s, "after accepting 0-5", group, 6)
    a.acknowledge("a: accept 6-10, reject 11", [ack(6, 11, ACCEPT, ACCEPT, ACCEPT, ACCEPT, ACCEPT, REJECT)])
    describe_offsets(s, "after accepting all", group, 0)
    produce(s, "produce 5 more", topic, batch([b"w%d" % n for n in range(5)]))
    describe_offsets(s, "after 5 more records", group, 5)
    a.fetch("a: fetch the new records", 20, mode=BATCH_OPTIMIZED)
    a.acknowledge("a: release 12-16", [ack(12, 16, RELEASE)])
    describe_offsets(s, "after releasing them", group, 5)
    a.fetch("a: fetch them again", 20, mode=BATCH_OPTIMIZED)
    a.acknowledge("a: accept 12-16", [ack(12, 16, ACCEPT)])
    describe_offsets(s, "after accepting them", group, 0)


ALTER_SHARE_GROUP_OFFSETS, SHARE_GROUP_DESCRIBE = 91, 77


@scenario(releases=V2)
def alter_share_group_offsets_of_a_new_group(s: Session) -> None:
    """AlterShareGroupOffsets of a group that does not exist: Kafka creates the share group, empty, with the
    start offset; a request naming only an unknown topic creates none. Then the offsets, the group as
    ShareGroupDescribe and ListGroups see it."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic)
    produce(s, "produce 20", topic, batch([b"v%d" % n for n in range(20)]))
    s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60, record=False)
    s.wait_for("coordinator loaded", SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                               "include_authorized_operations": False},
               until=lambda a: a["groups"][0]["error_code"] not in (14, 15, 16), timeout=60, record=False)
    s.request("alter a new group's start offset", ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 8}]}]})
    s.request("alter, unknown topic only", ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": s.name("g2"), "topics": [
        {"topic_name": s.name("none"), "partitions": [{"partition_index": 0, "start_offset": 8}]}]})
    describe_offsets(s, "the new group's offsets", group, 12)
    s.request("describe the groups", SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group, s.name("g2")],
                                                               "include_authorized_operations": False})


@scenario(releases=V2)
def share_fetch_isolation_levels(s: Session) -> None:
    """share.isolation.level: a read_committed share group gets the records up to the last stable offset and
    none of an aborted transaction; a read_uncommitted one gets them all (the transaction markers are in the
    acquired ranges of both: clients acknowledge them as gaps)."""
    topic, txn = s.name("t"), s.name("txn")
    committed, uncommitted = s.name("committed"), s.name("uncommitted")
    create_topic(s, "create", topic)
    for group, level in ((committed, "read_committed"), (uncommitted, "read_uncommitted")):
        alter_group(s, f"{level} group", group, {"share.auto.offset.reset": "earliest",
                                                 "share.isolation.level": level})
    find_txn_coordinator(s, txn)
    first = first_init(s, "init", txn)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    produce(s, "plain 0", topic, batch([b"p0"]))
    add_partitions(s, "add", txn, pid, epoch, topic)
    produce(s, "txn 1-2 (to abort)", topic, txn_batch([b"a1", b"a2"], pid, epoch, 0), transactional_id=txn)
    produce(s, "plain 3", topic, batch([b"p3"]))
    end(s, "abort", txn, pid, epoch, False)
    wait_state(s, "abort completed", txn, {"CompleteAbort"})
    add_partitions(s, "add again", txn, pid, epoch, topic)
    produce(s, "txn 5 (to commit)", topic, txn_batch([b"c1"], pid, epoch, 2), transactional_id=txn)
    end(s, "commit", txn, pid, epoch, True)
    wait_state(s, "commit completed", txn, {"CompleteCommit"})
    add_partitions(s, "add a third time", txn, pid, epoch, topic)
    produce(s, "txn 7 (left open)", topic, txn_batch([b"o1"], pid, epoch, 3), transactional_id=txn)
    answer = s.request("topic id", METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}, record=False)
    topic_id = uuid.UUID(str(answer["topics"][0]["topic_id"]))
    for group, name in ((committed, "rc"), (uncommitted, "ru")):
        member = Member(s, group, topic, topic_id, name)
        member.first_fetch(f"{name}: fetch", 100, mode=BATCH_OPTIMIZED)
        member.acknowledge(f"{name}: accept 0-7", [ack(0, 7, ACCEPT)])
        describe_offsets(s, f"{name}: offsets", group, 1 if group == committed else 0)
    end(s, "abort the open transaction", txn, pid, epoch, False)
