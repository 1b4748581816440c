"""Requests pipelined on one connection take effect in the order they were sent, and their responses come
back in that order, however many arrive in one read and whether the handler waits (acks=all) or not."""

from __future__ import annotations

import struct

from protocol.header import RequestHeader, encode_request_header, request_spec
from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient

PRODUCE, METADATA = 0, 3


def _frame(api_key: int, version: int, correlation: int, body: dict) -> bytes:
    spec = request_spec(api_key)
    assert spec is not None
    payload = encode_request_header(RequestHeader(api_key, version, correlation, "pipeline")) + \
        spec.encode(version, body)
    return struct.pack(">i", len(payload)) + payload


def _produce_body(topic: str, value: bytes, acks: int) -> dict:
    batch = build_batch([Record(0, 0, None, value)], base_timestamp=1_700_000_000_000)
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def test_pipelined_requests_keep_their_order(minibroker, topic_name):
    with WireClient(minibroker) as client:
        client.create_topic(topic_name)
        # One write holding 200 requests: produces with acks=1 and acks=all, and Metadata in between.
        kinds = []
        frames = []
        for i in range(200):
            correlation = 1000 + i
            if i % 10 == 9:
                kinds.append((METADATA, 12, correlation))
                frames.append(_frame(METADATA, 12, correlation, {"topics": [{"name": topic_name,
                                                                              "topic_id": None}],
                                                                  "allow_auto_topic_creation": False,
                                                                  "include_topic_authorized_operations": False}))
            else:
                kinds.append((PRODUCE, 9, correlation))
                frames.append(_frame(PRODUCE, 9, correlation, _produce_body(topic_name, b"%d" % i,
                                                                           -1 if i % 2 else 1)))
        client.sock.sendall(b"".join(frames))
        offsets = []
        for api_key, version, correlation in kinds:  # receive() checks each correlation id in turn
            response = client.receive(api_key, version, correlation)
            if api_key == PRODUCE:
                partition = response.responses[0].partition_responses[0]
                assert partition.error_code == 0
                offsets.append(partition.base_offset)
    # The produces were appended in the order they were sent.
    assert offsets == list(range(len(offsets)))


def test_large_frames_arrive_in_pieces(minibroker, topic_name):
    """Frames from 256 KiB on are read into their own buffer (server.DIRECT_READ_MIN): one sent in small
    pieces, with the next requests in the same pieces, and a large non-Produce frame, are all answered."""
    big = bytes(range(256)) * 3600  # 900 KiB: a batch under message.max.bytes
    names = [{"name": f"t{i:06d}-" + "x" * 40, "topic_id": None} for i in range(6000)]  # ~300 KiB Metadata
    with WireClient(minibroker) as client:
        client.create_topic(topic_name)
        stream = (_frame(PRODUCE, 9, 1, _produce_body(topic_name, big, -1)) +
                  _frame(METADATA, 12, 2, {"topics": names, "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False}) +
                  _frame(PRODUCE, 9, 3, _produce_body(topic_name, b"small", 1)))
        assert len(stream) > 2 * 256 * 1024
        for start in range(0, len(stream), 7001):
            client.sock.sendall(stream[start:start + 7001])
        first = client.receive(PRODUCE, 9, 1).responses[0].partition_responses[0]
        metadata = client.receive(METADATA, 12, 2)
        third = client.receive(PRODUCE, 9, 3).responses[0].partition_responses[0]
    assert (first.error_code, first.base_offset) == (0, 0)
    assert len(metadata.topics) == len(names)
    assert (third.error_code, third.base_offset) == (0, 1)
    with WireClient(minibroker) as client:
        fetched = client.request(1, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                         "max_bytes": 4 << 20, "isolation_level": 0, "session_id": 0,
                                         "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                                         "topics": [{"topic": topic_name, "partitions": [
                                             {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 4 << 20}]}]})
        assert big in bytes(fetched.responses[0].partitions[0].records)


def test_connection_closing_inside_a_large_frame(minibroker, topic_name):
    frame = _frame(PRODUCE, 9, 1, _produce_body(topic_name, b"y" * (1 << 20), -1))
    with WireClient(minibroker) as client:
        client.sock.sendall(frame[: len(frame) // 2])  # then the client goes away
    with WireClient(minibroker) as client:  # the broker serves on
        client.create_topic(topic_name)
        assert client.list_latest(topic_name) == 0
