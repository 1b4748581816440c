"""KIP-848's online migration survives restarts: a classic group upgraded by a consumer-protocol member (its classic
member kept, served by the consumer group) and downgraded again is what a restarted broker loads from
`__consumer_offsets` (the 4.4 profile, raw requests over the wire)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from broker.testkit import BrokerThread
from protocol.consumer_protocol import decode_assignment
from tests.kafka_wire import WireClient

JOIN, SYNC, HEARTBEAT, DESCRIBE_GROUPS, CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = 11, 14, 12, 15, 68, 69
TOPIC, GROUP, MEMBER_B = "migrating", "migrating-group", "member-b-0000000000000"


def subscription() -> bytes:
    return struct.pack(">hih", 0, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">i", -1)


def join(c: WireClient, member: str) -> object:
    return c.request(JOIN, 9, {"group_id": GROUP, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
                               "member_id": member, "group_instance_id": None, "protocol_type": "consumer",
                               "protocols": [{"name": "range", "metadata": subscription()}], "reason": None})


def sync(c: WireClient, member: str, generation: int, assignments: list[dict]) -> object:
    return c.request(SYNC, 5, {"group_id": GROUP, "generation_id": generation, "member_id": member,
                               "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                               "assignments": assignments})


def heartbeat(c: WireClient, member: str, generation: int) -> int:
    return c.request(HEARTBEAT, 4, {"group_id": GROUP, "generation_id": generation, "member_id": member,
                                    "group_instance_id": None}).error_code


def consumer_heartbeat(c: WireClient, epoch: int) -> object:
    joining = epoch == 0
    return c.request(CONSUMER_HEARTBEAT, 1, {
        "group_id": GROUP, "member_id": MEMBER_B, "member_epoch": epoch, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000 if joining else -1, "subscribed_topic_names": [TOPIC] if joining else None,
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": [] if joining else None})


def started(data: Path) -> BrokerThread:
    return BrokerThread(data, kafka_version="4.4", num_partitions=2).start()


def described(c: WireClient) -> object:
    """DescribeGroups v5 once the groups are loaded (COORDINATOR_LOAD_IN_PROGRESS until then)."""
    deadline = time.monotonic() + 30
    while True:
        group = c.request(DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": False}).groups[0]
        if group.error_code != 14 or time.monotonic() > deadline:
            return group
        time.sleep(0.05)


def test_the_upgraded_and_downgraded_groups_survive_restarts(tmp_path: Path) -> None:
    broker = started(tmp_path)
    try:
        with WireClient(broker.bootstrap) as c:
            c.request(19, 7, {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1,
                                          "assignments": [], "configs": []}], "timeout_ms": 30000,
                              "validate_only": False})
            member = join(c, "").member_id
            joined = join(c, member)
            both = struct.pack(">hih", 0, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">iiii", 2, 0, 1, -1)
            assert sync(c, member, joined.generation_id, [{"member_id": member, "assignment": both}]).error_code == 0
            assert consumer_heartbeat(c, 0).member_epoch == 2
        broker.stop()
        broker = started(tmp_path)
        with WireClient(broker.bootstrap) as c:
            assert described(c).group_state == "Dead"  # v5: a consumer group is not a classic one
            mixed = c.request(CONSUMER_DESCRIBE, 1, {"group_ids": [GROUP],
                                                     "include_authorized_operations": False}).groups[0]
            assert (mixed.error_code, mixed.group_epoch) == (0, 2)
            assert {m.member_id: (m.member_type, m.member_epoch) for m in mixed.members} == \
                {member: (0, 1), MEMBER_B: (1, 2)}
            assert heartbeat(c, member, 1) == 27  # REBALANCE_IN_PROGRESS: the classic member rejoins
            rejoined = join(c, member)
            assert (rejoined.error_code, rejoined.generation_id, rejoined.leader) == (0, 2, "")
            synced = sync(c, member, 2, [])
            assert decode_assignment(bytes(synced.assignment)).partitions == {TOPIC: [0]}
            assert consumer_heartbeat(c, -1).error_code == 0  # the last consumer-protocol member leaves
        broker.stop()
        broker = started(tmp_path)
        with WireClient(broker.bootstrap) as c:
            group = described(c)
            assert (group.group_state, group.protocol_type, group.protocol_data) == ("Stable", "consumer", "range")
            assert [m.member_id for m in group.members] == [member]
            assert decode_assignment(bytes(group.members[0].member_assignment)).partitions == {TOPIC: [0]}
            assert heartbeat(c, member, 2) == 0  # a member of the classic group at its generation
            gone = c.request(CONSUMER_DESCRIBE, 1, {"group_ids": [GROUP], "include_authorized_operations": False})
            assert gone.groups[0].error_code == 69  # GROUP_ID_NOT_FOUND: not a consumer group
    finally:
        broker.stop()
