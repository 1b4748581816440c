"""Requests pipelined on one connection take effect in the order they were sent, and their responses come
back in that order, however many arrive in one read and whether the handler waits (acks=all) or not."""

from __future__ import annotations

import struct

from protocol.header import RequestHeader, encode_request_header
from protocol.records import Record, build_batch
from protocol.schema import request_spec
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
