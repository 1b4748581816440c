"""Fuzzed requests over real sockets (a short run; `make fuzz` sends more), and the findings it made."""

from __future__ import annotations

import socket
import struct
import time
import uuid

from tests.fuzz.socket_fuzz import fuzz_broker
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient


def test_fuzzed_connections_leave_the_broker_serving():
    report = fuzz_broker(3000, seed=3)
    assert report.sent >= 3000 and report.answered_bytes > 0
    assert report.witness_answers > 10
    assert report.errors == []
    assert report.left_open == 0


def test_metadata_topic_ids_before_v12_are_an_invalid_request(minibroker):
    """Found by fuzzing: a v10/v11 Metadata request naming a topic by id (null name) closed the connection
    (the response cannot carry a null name before v12). Kafka answers INVALID_REQUEST per topic."""
    with WireClient(minibroker) as client:
        for version in (10, 11):
            response = client.request(3, version, {"topics": [{"topic_id": uuid.uuid4(), "name": None}],
                                                   "allow_auto_topic_creation": False})
            assert [(t.name, t.error_code) for t in response.topics] == [("", 42)]
        response = client.request(3, 12, {"topics": [{"topic_id": uuid.uuid4(), "name": None}],
                                          "allow_auto_topic_creation": False})
        assert [(t.name, t.error_code) for t in response.topics] == [(None, 100)]  # UNKNOWN_TOPIC_ID


def test_a_long_poll_ends_with_its_connection(minibroker_server, topic_name):
    """Found by fuzzing: a Fetch waiting max_wait_ms (2^31-1 here) kept its connection's task after the
    client had gone, until the wait ended."""
    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
        topic_id = client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                          "allow_auto_topic_creation": False}).topics[0].topic_id
        client.send(1, 13, {"replica_id": -1, "max_wait_ms": 2**31 - 1, "min_bytes": 1, "max_bytes": 1 << 20,
                            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                            "topics": [{"topic_id": topic_id, "partitions": [
                                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
                            "forgotten_topics_data": [], "rack_id": ""})
        time.sleep(0.2)  # not a wait for a condition: gives the broker time to park the long poll
        assert minibroker_server.open_connections() == 1
    wait_until(lambda: minibroker_server.open_connections() == 0, timeout=30)


def test_half_a_frame_then_silence_is_closed_when_idle(tmp_path):
    """A client that sends half a frame and stalls holds nothing but its connection, which
    connections.max.idle.ms closes; others are served meanwhile."""
    from broker.testkit import BrokerThread

    with BrokerThread(tmp_path, connections_max_idle_ms=500) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        stalled = socket.create_connection((host, int(port)), timeout=30)
        stalled.sendall(struct.pack(">i", 100) + b"\x00\x12\x00")  # 3 of 100 bytes
        with WireClient(broker.bootstrap) as other:
            assert other.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
        stalled.settimeout(30)
        assert stalled.recv(10) == b""  # closed by the broker
        stalled.close()


def test_offset_commit_retention_near_2_63(minibroker, topic_name):
    """Found by fuzzing: OffsetCommit v2-4 with retention_time_ms near 2^63 overflowed the expiry
    timestamp, and the failed encoding closed the connection."""
    with WireClient(minibroker) as client:
        client.create_topic(topic_name)
        response = client.request(8, 2, {"group_id": "fuzz-retention", "generation_id_or_member_epoch": -1,
                                         "member_id": "", "retention_time_ms": 2**63 - 1, "topics": [
                                             {"name": topic_name, "partitions": [
                                                 {"partition_index": 0, "committed_offset": 5,
                                                  "committed_metadata": ""}]}]})
        assert response.topics[0].partitions[0].error_code == 0
        fetched = client.request(9, 1, {"group_id": "fuzz-retention", "topics": [
            {"name": topic_name, "partition_indexes": [0]}]})
        assert fetched.topics[0].partitions[0].committed_offset == 5
