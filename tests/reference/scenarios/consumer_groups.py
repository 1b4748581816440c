"""Kafka 4's consumer group protocol (KIP-848) and transaction version 2 (KIP-890 part 2): the error paths of
ConsumerGroupHeartbeat (missing or invalid fields on join, unknown members, fenced epochs, static members,
leaving), ConsumerGroupDescribe, OffsetCommit with member epochs, and EndTxn v5's epoch bumps, retries and
fencing. One member per group, so the assignment is forced (every partition to it)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DESCRIBE_GROUPS,
    END_TXN,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    batch,
    create_topic,
    fetch,
    produce,
)
from tests.reference.scenarios.transactions import describe_txn, find_txn_coordinator, wait_state

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
K4 = ("4.1", "4.4")
MEMBER_A = "member-a-0000000000000"  # KIP-1082 (v1): the client makes up its member id
MEMBER_B = "member-b-0000000000000"


def find_coordinator(s: Session, group: str) -> None:
    """Until the coordinator answers for the group (Kafka creates __consumer_offsets on the first lookup)."""
    s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60)
    s.wait_for("coordinator loaded", CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group],
                                                                  "include_authorized_operations": False},
               until=lambda a: a["groups"][0]["error_code"] not in (14, 15, 16), timeout=60, record=False)


def heartbeat(s: Session, step: str, group: str, member: str, epoch: int, *, topics: list[str] | None = None,
              rebalance_ms: int = -1, owned: list[dict[str, Any]] | None = None, instance: str | None = None,
              assignor: str | None = None, conn: str = "main", version: int = 1, record: bool = True
              ) -> dict[str, Any]:
    return s.request(step, CONSUMER_GROUP_HEARTBEAT, version, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance, "rack_id": None,
        "rebalance_timeout_ms": rebalance_ms, "subscribed_topic_names": topics, "subscribed_topic_regex": None,
        "server_assignor": assignor, "topic_partitions": owned}, conn, record=record) or {}


def join(s: Session, step: str, group: str, member: str, topics: list[str], **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("rebalance_ms", 30000)
    kwargs.setdefault("owned", [])
    return heartbeat(s, step, group, member, 0, topics=topics, **kwargs)


def owned(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assignment = answer.get("assignment") or {}
    return [{"topic_id": uuid.UUID(t["topic_id"]), "partitions": t["partitions"]}
            for t in assignment.get("topic_partitions") or []]


def describe(s: Session, step: str, *groups: str) -> None:
    s.request(step, CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": list(groups), "include_authorized_operations": False})


def commit(s: Session, step: str, group: str, topic: str, offset: int, epoch: int, member: str,
           version: int = 9) -> None:
    s.request(step, OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})


@scenario(releases=K4)
def consumer_group_heartbeat_errors(s: Session) -> None:
    """ConsumerGroupHeartbeat of one member: invalid joins, the join, heartbeats with wrong ids and epochs,
    OffsetCommit with member epochs, ConsumerGroupDescribe, leaving with epoch -1."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    join(s, "join: empty member id (v1)", group, "", [topic])
    join(s, "join: no rebalance timeout", group, MEMBER_A, [topic], rebalance_ms=-1)
    join(s, "join: no subscription", group, MEMBER_A, None)  # type: ignore[arg-type]
    join(s, "join: owned partitions null", group, MEMBER_A, [topic], owned=None)
    join(s, "join: unknown assignor", group, MEMBER_A, [topic], assignor="nope")
    join(s, "join: empty group id", "", MEMBER_A, [topic])
    heartbeat(s, "heartbeat: negative epoch -3", group, MEMBER_A, -3)
    heartbeat(s, "heartbeat: unknown member", group, MEMBER_A, 1)
    joined = join(s, "join", group, MEMBER_A, [topic])
    epoch = joined.get("member_epoch", -1)
    answer = joined
    if not owned(answer):  # the assignment may come with a later heartbeat
        answer = s.wait_for("assignment", CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": MEMBER_A, "member_epoch": epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None},
                            until=lambda a: a["error_code"] != 0 or bool(owned(a)), timeout=20)
        epoch = answer.get("member_epoch", epoch)
    mine = owned(answer)
    heartbeat(s, "heartbeat", group, MEMBER_A, epoch, owned=mine)
    heartbeat(s, "heartbeat: nothing changed, fields left out", group, MEMBER_A, epoch)
    heartbeat(s, "heartbeat: unknown member id", group, MEMBER_B, epoch)
    heartbeat(s, "heartbeat: epoch ahead (fenced)", group, MEMBER_A, epoch + 5)
    heartbeat(s, "heartbeat: epoch 0 (a rejoin) without rebalance timeout", group, MEMBER_A, 0, owned=mine)
    heartbeat(s, "rejoin with epoch 0", group, MEMBER_A, 0, topics=[topic], rebalance_ms=30000, owned=[])
    heartbeat(s, "heartbeat after the rejoin", group, MEMBER_A, epoch, owned=mine)
    heartbeat(s, "heartbeat: same subscription again", group, MEMBER_A, epoch, topics=[topic], owned=mine)
    commit(s, "commit: member's epoch", group, topic, 5, epoch, MEMBER_A)
    commit(s, "commit: stale member epoch", group, topic, 6, epoch - 1, MEMBER_A)
    commit(s, "commit: epoch ahead", group, topic, 6, epoch + 1, MEMBER_A)
    commit(s, "commit: unknown member", group, topic, 6, epoch, MEMBER_B)
    commit(s, "commit: no member (admin) to an active group", group, topic, 6, -1, "")
    commit(s, "commit v8 by a consumer-protocol member", group, topic, 6, epoch, MEMBER_A, version=8)
    s.request("fetch offsets with the member epoch", OFFSET_FETCH, 9, {"groups": [
        {"group_id": group, "member_id": MEMBER_A, "member_epoch": epoch,
         "topics": [{"name": topic, "partition_indexes": [0]}]}], "require_stable": False})
    s.request("fetch offsets, stale member epoch", OFFSET_FETCH, 9, {"groups": [
        {"group_id": group, "member_id": MEMBER_A, "member_epoch": epoch - 1,
         "topics": [{"name": topic, "partition_indexes": [0]}]}], "require_stable": False})
    describe(s, "describe the group and an unknown one", group, s.name("nogroup"))
    s.request("DescribeGroups of a consumer group", DESCRIBE_GROUPS, 5, {"groups": [group],
                                                                        "include_authorized_operations": False})
    heartbeat(s, "leave (epoch -1)", group, MEMBER_A, -1)
    heartbeat(s, "heartbeat after leaving", group, MEMBER_A, epoch)
    heartbeat(s, "leave again", group, MEMBER_A, -1)
    describe(s, "describe after leaving", group)


@scenario(releases=K4)
def consumer_group_static_member(s: Session) -> None:
    """A static member (instance id) of a consumer group: a second member with the same instance id, leaving
    with epoch -2 (temporarily) and coming back under a new member id."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic)
    find_coordinator(s, group)
    first = join(s, "static member joins", group, MEMBER_A, [topic], instance="instance-1")
    epoch = first.get("member_epoch", -1)
    join(s, "another member, same instance id", group, MEMBER_B, [topic], instance="instance-1")
    heartbeat(s, "static member leaves for now (epoch -2)", group, MEMBER_A, -2, instance="instance-1")
    describe(s, "describe while away", group)
    back = join(s, "back under a new member id", group, MEMBER_B, [topic], instance="instance-1")
    s.note("epoch kept", {"same": back.get("member_epoch") == epoch})
    heartbeat(s, "old member id heartbeats", group, MEMBER_A, epoch, instance="instance-1")
    heartbeat(s, "leave with epoch -2 and a wrong instance id", group, MEMBER_B, -2, instance="instance-9")
    heartbeat(s, "leave for good (epoch -1)", group, MEMBER_B, -1, instance="instance-1")
    describe(s, "describe after leaving", group)


# ---- transaction version 2 -------------------------------------------------------------------------
def init_v5(s: Session, step: str, txn: str, pid: int = -1, epoch: int = -1) -> dict[str, Any]:
    body = {"transactional_id": txn, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": epoch,
            "enable2_pc": False, "keep_prepared_txn": False}
    return s.wait_for(step, INIT_PRODUCER_ID, 5, body, until=lambda a: a["error_code"] not in (14, 15, 16, 51),
                      timeout=60)


def end_v5(s: Session, step: str, txn: str, pid: int, epoch: int, commit: bool) -> dict[str, Any]:
    return s.request(step, END_TXN, 5, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
                                        "committed": commit}) or {}


def txn_produce(s: Session, step: str, topic: str, txn: str, values: list[bytes], pid: int, epoch: int,
                sequence: int) -> None:
    produce(s, step, topic, batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                                  is_transactional=True), transactional_id=txn, version=12)


@scenario(releases=K4)
def txn_v2_end_txn(s: Session) -> None:
    """Transaction version 2: Produce v12 adds the partition itself, EndTxn v5 answers the bumped epoch; a
    retried EndTxn, an EndTxn with an old or a future epoch (PRODUCER_FENCED), an empty transaction."""
    topic, txn = s.name("t"), s.name("txn")
    create_topic(s, "create", topic)
    find_txn_coordinator(s, txn)
    first = init_v5(s, "init v5", txn)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    txn_produce(s, "produce v12 without AddPartitionsToTxn", topic, txn, [b"c1"], pid, epoch, 0)
    describe_txn(s, "describe ongoing", txn)
    committed = end_v5(s, "commit v5", txn, pid, epoch, True)
    epoch2 = committed.get("producer_epoch", -1)
    s.note("commit bumped the epoch", {"by": epoch2 - epoch, "same_producer_id": committed.get("producer_id") == pid})
    wait_state(s, "commit completed", txn, {"CompleteCommit"})
    end_v5(s, "commit retried with the old epoch", txn, pid, epoch, True)
    end_v5(s, "abort with the old epoch after the commit", txn, pid, epoch, False)
    end_v5(s, "commit with a future epoch", txn, pid, epoch2 + 3, True)
    end_v5(s, "commit with nothing in the transaction", txn, pid, epoch2, True)
    end_v5(s, "abort with nothing in the transaction", txn, pid, epoch2, False)
    after_empty = wait_state(s, "abort of the empty transaction completed", txn, {"CompleteAbort"})
    states = after_empty.get("transaction_states") or [{}]
    epoch3 = states[0].get("producer_epoch", epoch2)
    s.note("epoch after the empty ends", {"by": epoch3 - epoch2})
    txn_produce(s, "produce with the epoch before the commit", topic, txn, [b"zombie"], pid, epoch, 1)
    txn_produce(s, "second transaction", topic, txn, [b"a1"], pid, epoch3, 0)
    aborted = end_v5(s, "abort v5", txn, pid, epoch3, False)
    s.note("abort bumped the epoch", {"by": aborted.get("producer_epoch", -1) - epoch3})
    wait_state(s, "abort completed", txn, {"CompleteAbort"})
    end_v5(s, "abort retried", txn, pid, epoch3, False)
    end_v5(s, "commit retried as the other outcome", txn, pid, epoch3, True)
    end_v5(s, "end with an epoch two behind", txn, pid, epoch, True)
    fetch(s, "read_committed", topic, 0, isolation_level=1)
    fetch(s, "read_uncommitted", topic, 0)
    end_v5(s, "unknown transactional id", s.name("other"), pid, 0, True)


# ---- epochs: how each release numbers them ---------------------------------------------------------
K4_ALL = ("4.1", "4.2", "4.3", "4.4")


def group_epoch(s: Session, group: str) -> int:
    answer = s.request("group epoch", CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                                  "include_authorized_operations": False},
                       record=False) or {}
    return ((answer.get("groups") or [{}])[0]).get("group_epoch", -1)


def settle(s: Session, step: str, group: str, member: str, epoch: int, mine: list[dict[str, Any]],
           conn: str = "main", timeout: float = 30.0) -> tuple[int, list[dict[str, Any]]]:
    """Heartbeat (reporting what the member owns, taking what it is given) until the member has reconciled to
    the group's epoch: its epoch is the group epoch and the coordinator hands over or takes back nothing more.
    A coordinator that batches assignments (Kafka 4.3+: group.consumer.assignment.interval.ms) answers some
    heartbeats with nothing new first, so only the last answer is recorded. (epoch, owned) after."""
    import time

    deadline = time.monotonic() + timeout
    answer: dict[str, Any] = {}
    while time.monotonic() < deadline:
        answer = heartbeat(s, step, group, member, epoch, owned=mine, conn=conn, record=False)
        if answer.get("error_code"):
            break
        epoch = answer.get("member_epoch", epoch)
        given = answer.get("assignment")
        if given is not None and owned(answer) != mine:
            mine = owned(answer)  # took or gave back partitions: report it with the next heartbeat
            continue
        if epoch == group_epoch(s, group):
            break
        time.sleep(0.05)
    s.note(step, {"error_code": answer.get("error_code"), "member_epoch": epoch,
                  "owned": sorted(p for t in mine for p in t["partitions"])})
    return epoch, mine


@scenario(releases=K4_ALL)
def consumer_group_epochs(s: Session) -> None:
    """The epochs of a consumer group through its life: the first member's join (4.4 starts a group at epoch
    1, so the first assignment is epoch 2), a second member, leaving one by one, the empty group's target
    assignment epoch, and a join of the empty group again."""
    topic, group = s.name("t"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_coordinator(s, group)
    a = join(s, "first member joins", group, MEMBER_A, [topic])
    epoch_a, mine_a = settle(s, "first member settles", group, MEMBER_A, a.get("member_epoch", 0), owned(a))
    describe(s, "one member", group)
    b = join(s, "second member joins", group, MEMBER_B, [topic], conn="b")
    epoch_b = b.get("member_epoch", 0)
    epoch_a, mine_a = settle(s, "first member gives a partition up", group, MEMBER_A, epoch_a, mine_a)
    epoch_b, _ = settle(s, "second member takes it", group, MEMBER_B, epoch_b, owned(b), conn="b")
    describe(s, "two members", group)
    heartbeat(s, "second member leaves", group, MEMBER_B, -1, conn="b")
    epoch_a, mine_a = settle(s, "first member takes every partition again", group, MEMBER_A, epoch_a, mine_a)
    describe(s, "one member again", group)
    heartbeat(s, "last member leaves", group, MEMBER_A, -1)
    describe(s, "empty", group)
    again = join(s, "a member joins the empty group", group, MEMBER_A, [topic])
    settle(s, "it settles", group, MEMBER_A, again.get("member_epoch", 0), owned(again))
    describe(s, "one member after the empty group", group)
    heartbeat(s, "it leaves", group, MEMBER_A, -1)
    describe(s, "empty again", group)
