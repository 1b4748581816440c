"""The share coordinator (KIP-932; Kafka 4.2+'s ShareCoordinatorService): FindCoordinator with key type SHARE
(key "group:topicId:partition", the topic id as Kafka prints a Uuid) and the five state APIs the partition
leaders and the group coordinator send it, Initialize/Read/Write/DeleteShareGroupState and
ReadShareGroupStateSummary, with the errors Kafka gives: uninitialized share partitions, stale leader and state
epochs, negative partitions and leader epochs, unknown topics, empty requests; how writes merge into the state
(ShareUpdate batches laid over the state, -1 for "unchanged") and how initializing again replaces it.

And the share groups' epochs as each release numbers them (share_group_epochs): the first member's join, the
assignment that waits until the share partitions' state is initialized, a second member, leaving, the empty
group; the state the group coordinator initializes (at the group's epoch), alters, and deletes with the group."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import DELETE_GROUPS, FIND_COORDINATOR, METADATA, create_topic

INITIALIZE, READ, WRITE, DELETE, SUMMARY = 83, 84, 85, 86, 87
SHARE_KEY = 2  # FindCoordinator key type
ACKED, ARCHIVED, AVAILABLE = 2, 4, 0
STATE_RELEASES = ("4.2", "4.3", "4.4")


def kafka_uuid(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def topic_id_of(s: Session, topic: str) -> uuid.UUID:
    answer = s.request("topic id", METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}, record=False)
    assert answer is not None
    return uuid.UUID(str(answer["topics"][0]["topic_id"]))


def ready(s: Session, group: str, topic_id: uuid.UUID, partitions: range) -> None:
    """Unrecorded: until the share coordinator of each key is found and loaded (Kafka creates
    `__share_group_state` on the first FindCoordinator(SHARE) and loads its partitions a moment later)."""
    keys = [f"{group}:{kafka_uuid(topic_id)}:{p}" for p in partitions]
    s.wait_for("find the share coordinators", FIND_COORDINATOR, 6, {"key_type": SHARE_KEY, "coordinator_keys": keys},
               until=lambda a: all(c["error_code"] == 0 for c in a["coordinators"]), timeout=60, record=False)
    s.wait_for("share coordinators loaded", SUMMARY, 0, state_body(group, topic_id, [
        {"partition": p, "leader_epoch": 0} for p in partitions]),
        until=lambda a: all(p["error_code"] not in (14, 15, 16) for r in a["results"] for p in r["partitions"]),
        timeout=60, record=False)


def state_body(group: str, topic_id: uuid.UUID, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"group_id": group, "topics": [{"topic_id": topic_id, "partitions": partitions}]}


def batch(first: int, last: int, state: int, count: int) -> dict[str, int]:
    return {"first_offset": first, "last_offset": last, "delivery_state": state, "delivery_count": count}


def write(s: Session, step: str, group: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int,
          leader_epoch: int, start_offset: int, complete: int = -1, batches: list[dict[str, int]] | None = None
          ) -> None:
    s.request(step, WRITE, 1, state_body(group, topic_id, [{
        "partition": partition, "state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
        "delivery_complete_count": complete, "state_batches": batches or []}]))


def read(s: Session, step: str, group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int) -> None:
    s.request(step, READ, 0, state_body(group, topic_id, [{"partition": partition, "leader_epoch": leader_epoch}]))


def summary(s: Session, step: str, group: str, topic_id: uuid.UUID, partitions: list[int], version: int = 1) -> None:
    s.request(step, SUMMARY, version, state_body(group, topic_id, [{"partition": p, "leader_epoch": 0}
                                                                  for p in partitions]))


def initialize(s: Session, step: str, group: str, topic_id: uuid.UUID, *partitions: tuple[int, int, int]) -> None:
    """(partition, state epoch, start offset) each."""
    s.request(step, INITIALIZE, 0, state_body(group, topic_id, [
        {"partition": p, "state_epoch": epoch, "start_offset": start} for p, epoch, start in partitions]))


_TOPIC_IN_KEY = re.compile(r"^(.*?):([A-Za-z0-9_-]{22}|[0-9a-f-]{36}):(.*)$")


def keys_view(step: str, answer: Any) -> Any:
    """The topic ids in share coordinator keys, which each broker makes up, left out."""
    for found in (answer or {}).get("coordinators") or []:
        found["key"] = _TOPIC_IN_KEY.sub(r"\1:<topic id>:\3", found["key"])
    return answer


@scenario(releases=STATE_RELEASES, both_view=keys_view)
def find_share_coordinator(s: Session) -> None:
    """FindCoordinator with key type SHARE: only from v6, keys checked as Kafka's SharePartitionKey does
    (a hyphenated UUID, a missing part, an empty group id are refused; a negative partition is not), then the
    coordinator of a valid key."""
    topic = s.name("t")
    create_topic(s, "create", topic, partitions=2)
    topic_id = topic_id_of(s, topic)
    key = f"g:{kafka_uuid(topic_id)}:0"
    s.request("v4", FIND_COORDINATOR, 4, {"key_type": SHARE_KEY, "coordinator_keys": [key]})
    s.request("v5", FIND_COORDINATOR, 5, {"key_type": SHARE_KEY, "coordinator_keys": [key]})
    s.request("v3, one key", FIND_COORDINATOR, 3, {"key_type": SHARE_KEY, "key": key})
    s.wait_for("v6", FIND_COORDINATOR, 6, {"key_type": SHARE_KEY, "coordinator_keys": [key]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60)
    s.request("v6, bad keys", FIND_COORDINATOR, 6, {"key_type": SHARE_KEY, "coordinator_keys": [
        f"g:{topic_id}:0", "g:x:0", "nocolon", "g::0", f":{kafka_uuid(topic_id)}:0", f"g:{kafka_uuid(topic_id)}:x",
        f"g:{kafka_uuid(topic_id)}:0:1"]})
    s.wait_for("v6, a negative partition", FIND_COORDINATOR, 6, {"key_type": SHARE_KEY, "coordinator_keys": [
        f"g:{kafka_uuid(topic_id)}:-1"]}, until=lambda a: a["coordinators"][0]["error_code"] != 15, timeout=30)
    s.request("v6, unknown key type", FIND_COORDINATOR, 6, {"key_type": 3, "coordinator_keys": [key]})


@scenario(releases=STATE_RELEASES)
def share_coordinator_state_apis(s: Session) -> None:
    """The share coordinator's state APIs, as a partition leader and the group coordinator use them."""
    topic = s.name("t")
    create_topic(s, "create", topic, partitions=2)
    t = topic_id_of(s, topic)
    unknown = uuid.uuid5(uuid.NAMESPACE_URL, s.name("unknown"))
    g, g2, g3 = s.name("g"), s.name("g2"), s.name("g3")
    for group in (g, g2, g3):
        ready(s, group, t, range(-1, 2))
    ready(s, g2, unknown, range(1))
    read(s, "read, uninitialized", g, t, 0, 0)
    read(s, "read, uninitialized, leader epoch -1", g, t, 0, -1)
    summary(s, "summary, uninitialized", g, t, [0])
    write(s, "write, uninitialized", g, t, 0, state_epoch=0, leader_epoch=0, start_offset=5, complete=0)
    initialize(s, "initialize, start offset -1 and 7", g2, t, (0, 0, -1), (1, 3, 7))
    read(s, "read p0", g2, t, 0, 0)
    read(s, "read p1 as leader epoch 2", g2, t, 1, 2)
    summary(s, "summary v0", g2, t, [1], version=0)
    summary(s, "summary v1", g2, t, [0, 1])
    read(s, "read, an older leader epoch", g2, t, 1, 1)
    write(s, "write the state", g2, t, 1, state_epoch=3, leader_epoch=2, start_offset=8, complete=2,
          batches=[batch(8, 9, ACKED, 1), batch(10, 12, AVAILABLE, 2)])
    read(s, "read after the write", g2, t, 1, 2)
    write(s, "write an update, start offset unchanged", g2, t, 1, state_epoch=3, leader_epoch=2, start_offset=-1,
          batches=[batch(11, 11, ARCHIVED, 3)])
    read(s, "read the merged state", g2, t, 1, 2)
    summary(s, "summary after the update", g2, t, [1])
    write(s, "write, an older leader epoch", g2, t, 1, state_epoch=3, leader_epoch=1, start_offset=9)
    write(s, "write, an older state epoch", g2, t, 1, state_epoch=2, leader_epoch=2, start_offset=9)
    write(s, "write, older leader and state epochs", g2, t, 1, state_epoch=2, leader_epoch=1, start_offset=9)
    write(s, "write, a newer state epoch and leader epoch", g2, t, 1, state_epoch=4, leader_epoch=3, start_offset=9)
    read(s, "read after it", g2, t, 1, 3)
    write(s, "write, leader epoch -1", g2, t, 1, state_epoch=3, leader_epoch=-1, start_offset=10)
    read(s, "read, leader epoch -1", g2, t, 1, -1)
    initialize(s, "initialize again, an older state epoch", g2, t, (1, 2, 1))
    initialize(s, "initialize again, a newer state epoch", g2, t, (1, 5, 1))
    read(s, "read after initializing again", g2, t, 1, 3)
    initialize(s, "initialize again, the same state epoch", g2, t, (1, 5, 2))
    read(s, "read after that", g2, t, 1, 3)
    s.request("delete", DELETE, 0, state_body(g2, t, [{"partition": 1}, {"partition": 0}]))
    read(s, "read after the delete", g2, t, 1, 3)
    summary(s, "summary after the delete", g2, t, [0, 1])
    s.request("delete again", DELETE, 0, state_body(g2, t, [{"partition": 1}]))
    read(s, "read, an unknown topic", g2, unknown, 0, 0)
    initialize(s, "initialize, an unknown topic", g2, unknown, (0, 0, 0))
    initialize(s, "initialize, an unknown partition", g2, t, (9, 0, 0))
    initialize(s, "initialize, a negative partition", g2, t, (-1, 0, 0))
    read(s, "read, a negative partition", g2, t, -1, 0)
    s.request("delete, a negative partition", DELETE, 0, state_body(g2, t, [{"partition": -1}]))
    write(s, "write two partitions, uninitialized", g3, t, 0, state_epoch=0, leader_epoch=0, start_offset=0)
    s.request("read, no group id", READ, 0, state_body("", t, [{"partition": 0, "leader_epoch": 0}]))
    s.request("read, no topics", READ, 0, {"group_id": g2, "topics": []})
    s.request("read, no partitions", READ, 0, state_body(g2, t, []))
    s.request("write, no group id", WRITE, 1, state_body("", t, [{
        "partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "state_batches": []}]))
    s.request("initialize, no group id", INITIALIZE, 0, state_body("", t, [
        {"partition": 0, "state_epoch": 0, "start_offset": 0}]))
    s.request("delete, no group id", DELETE, 0, state_body("", t, [{"partition": 0}]))
    s.request("summary, no group id", SUMMARY, 1, state_body("", t, [{"partition": 0, "leader_epoch": 0}]))


SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = 76, 77, 91, 92
UPDATE_FEATURES = 57
EPOCH_RELEASES = ("4.1", "4.2", "4.3", "4.4")


class ShareMember:
    """A share group member by hand (ShareGroupHeartbeat v1: it picks its own id)."""

    def __init__(self, s: Session, group: str, name: str) -> None:
        self.s, self.group, self.id, self.epoch = s, group, (name * 22)[:22], 0

    def heartbeat(self, step: str, epoch: int | None = None, topics: list[str] | None = None,
                  record: bool = True) -> dict[str, Any]:
        answer = self.s.request(step, SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": self.group, "member_id": self.id, "member_epoch": self.epoch if epoch is None else epoch,
            "rack_id": None, "subscribed_topic_names": topics}, record=record) or {}
        if answer.get("error_code") == 0 and answer.get("member_epoch", -1) >= 0:
            self.epoch = answer["member_epoch"]
        return answer

    def join(self, step: str, topics: list[str]) -> dict[str, Any]:
        return self.heartbeat(step, 0, topics)

    def leave(self, step: str) -> dict[str, Any]:
        return self.heartbeat(step, -1)


def describe_body(group: str) -> dict[str, Any]:
    return {"group_ids": [group], "include_authorized_operations": False}


def settle(s: Session, step: str, group: str, members: list[ShareMember], timeout: float = 30.0) -> None:
    """The members heartbeat (unrecorded) until every one has the group's assignment at its epoch and the
    group's assignment is at its epoch; then ShareGroupDescribe, recorded."""
    def settled(answer: dict[str, Any]) -> bool:
        for member in members:
            member.heartbeat("heartbeat", record=False)
        found = answer["groups"][0]
        return found["error_code"] == 0 and found["group_epoch"] == found["assignment_epoch"] and \
            all(m["member_epoch"] == found["assignment_epoch"] and m["assignment"]["topic_partitions"]
                for m in found["members"]) and len(found["members"]) == len(members)
    s.wait_for(step, SHARE_GROUP_DESCRIBE, 1, describe_body(group), until=settled, timeout=timeout)


def partition_counts(step: str, answer: Any) -> Any:
    """Which member gets which partition: the members' partition counts only. Kafka 4.2+'s simple assignor
    orders topic partitions by their topic id's hash (a random id: between two members, which partition goes
    where changes from run to run, on Kafka too); how many each member gets is the assignor's balance."""
    assignments = [m["assignment"] for g in (answer or {}).get("groups") or [] for m in g.get("members") or []]
    assignments += [answer["assignment"]] if (answer or {}).get("assignment") else []
    for assignment in assignments:
        for topic in assignment.get("topic_partitions") or []:
            topic["partitions"] = len(topic["partitions"])
    return answer


@scenario(releases=EPOCH_RELEASES, both_view=partition_counts)
def share_group_epochs(s: Session) -> None:
    """The epochs of a share group through its life: the first member's join (nothing assigned before the
    share partitions' state is initialized), the heartbeat that assigns them, a second member, the assignment
    interval of 4.3+, leaving one by one, the empty group, a join of the empty group. Then the state the group
    coordinator initialized (its state epoch is the group's epoch), altered (AlterShareGroupOffsets), deleted
    with the topic's offsets, and with the group."""
    topic, group = s.name("t"), s.name("g")
    if s.release == "4.1":  # a Kafka 4.1 cluster leaves share groups off until kafka-features turns them on
        s.request("turn share groups on", UPDATE_FEATURES, 1, {"timeout_ms": 30000, "feature_updates": [
            {"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}], "validate_only": False},
            record=False)
    create_topic(s, "create", topic, partitions=2)
    topic_id = topic_id_of(s, topic)
    s.wait_for("find the group coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60, record=False)
    s.wait_for("group coordinator loaded", SHARE_GROUP_DESCRIBE, 1, describe_body(group),
               until=lambda a: a["groups"][0]["error_code"] not in (14, 15, 16), timeout=60, record=False)
    a, b = ShareMember(s, group, "a"), ShareMember(s, group, "b")
    a.join("a joins", [topic])
    s.request("after the first join", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    settle(s, "a has the partitions once their state is initialized", group, [a])
    ready(s, group, topic_id, range(2))
    summary(s, "the state the group coordinator initialized", group, topic_id, [0, 1],
            version=0 if s.release == "4.1" else 1)
    b.join("b joins", [topic])
    s.request("after b joined", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    settle(s, "both settled", group, [a, b])
    b.leave("b leaves")
    s.request("after b left", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    settle(s, "a settled alone", group, [a])
    a.leave("a leaves")
    s.request("empty", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    a.join("a joins the empty group", [topic])
    s.request("one member again", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    a.leave("a leaves again")
    s.request("empty again", SHARE_GROUP_DESCRIBE, 1, describe_body(group))
    s.request("alter the start offset of partition 0", ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
    summary(s, "the altered state", group, topic_id, [0, 1], version=0 if s.release == "4.1" else 1)
    s.request("delete the topic's offsets", DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": group,
                                                                           "topics": [{"topic_name": topic}]})
    summary(s, "the state after deleting the offsets", group, topic_id, [0, 1],
            version=0 if s.release == "4.1" else 1)
    a.join("a joins once more", [topic])
    settle(s, "a has the partitions again", group, [a])
    summary(s, "the state initialized again", group, topic_id, [0, 1], version=0 if s.release == "4.1" else 1)
    a.leave("a leaves for good")
    s.request("delete the group", DELETE_GROUPS, 2, {"groups_names": [group]})
    summary(s, "the state after deleting the group", group, topic_id, [0, 1],
            version=0 if s.release == "4.1" else 1)
