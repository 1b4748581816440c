"""Kafka's decoder caps (protocol.errors.DecodeLimits): more than 1,000,000 elements in a collection or more than
10,000 tagged fields are refused where the limits are given (the 4.2 and 4.4 profiles), in the request header,
in construct-decoded bodies and in the hand-written Produce and Fetch codecs; a count larger than the bytes
left is refused always. What the real releases do: tests/reference/recorded/*/request_decoder_limits.json."""

from __future__ import annotations

import struct

import pytest

from broker.config.kafka_versions import resolve
from broker.server.dispatch import served
from protocol.errors import KAFKA_LIMITS, DecodeError
from protocol.header import RequestHeader, encode_request_header, parse_request_header
from protocol.messages import fetch, produce
from protocol.primitives import encode_uvarint
from protocol.schema import message


def tags(count: int) -> bytes:
    return encode_uvarint(count) + b"".join(encode_uvarint(1000 + t) + b"\x00" for t in range(count))


def log_dirs(partitions: int) -> bytes:
    topic = b"t"
    return (encode_uvarint(2) + encode_uvarint(len(topic) + 1) + topic + encode_uvarint(partitions + 1)
            + struct.pack(f">{partitions}i", *range(partitions)) + b"\x00\x00")


def metadata(section: bytes) -> bytes:
    body = message("MetadataRequest").encode(12, {"topics": [], "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
    return body[:-1] + section


def test_the_profiles_of_releases_with_the_caps_have_them() -> None:
    limited = {release for release in ("3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
               if resolve(served(), release).decode_limits is not None}
    assert limited == {"4.2", "4.4"}  # 4.3.1 predates the fix (recorded)


@pytest.mark.parametrize(("count", "refused"), [(1_000_000, False), (1_000_001, True)])
def test_collection_cap(count: int, refused: bool) -> None:
    spec, body = message("DescribeLogDirsRequest"), log_dirs(count)
    assert len(spec.decode(4, body).topics[0].partitions) == count  # no limits: only the bytes count
    if refused:
        with pytest.raises(DecodeError, match="maximum allowed size of 1000000"):
            spec.decode(4, body, 0, KAFKA_LIMITS)
    else:
        assert len(spec.decode(4, body, 0, KAFKA_LIMITS).topics[0].partitions) == count


@pytest.mark.parametrize(("count", "refused"), [(10_000, False), (10_001, True)])
def test_tagged_field_cap_in_a_body(count: int, refused: bool) -> None:
    spec, body = message("MetadataRequest"), metadata(tags(count))
    assert spec.decode(12, body).topics == []
    if refused:
        with pytest.raises(DecodeError, match="maximum allowed count of 10000"):
            spec.decode(12, body, 0, KAFKA_LIMITS)
    else:
        spec.decode(12, body, 0, KAFKA_LIMITS)


@pytest.mark.parametrize(("count", "refused"), [(10_000, False), (10_001, True)])
def test_tagged_field_cap_in_the_header(count: int, refused: bool) -> None:
    frame = encode_request_header(RequestHeader(3, 12, 7, "c"))[:-1] + tags(count) + metadata(b"\x00")
    header, offset = parse_request_header(frame)
    assert header.correlation_id == 7 and frame[offset:] == metadata(b"\x00")
    if refused:
        with pytest.raises(DecodeError, match="maximum allowed count"):
            parse_request_header(frame, KAFKA_LIMITS)
    else:
        assert parse_request_header(frame, KAFKA_LIMITS) == (header, offset)


@pytest.mark.parametrize("codec", [fetch, produce])
def test_hot_codecs_cap_tagged_fields(codec: object) -> None:
    if codec is fetch:
        body = message("FetchRequest").encode(12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                                   "max_bytes": 1, "isolation_level": 0, "session_id": 0,
                                                   "session_epoch": -1, "topics": [], "forgotten_topics_data": [],
                                                   "rack_id": ""})
        version = 12
    else:
        body = message("ProduceRequest").encode(9, {"transactional_id": None, "acks": 1, "timeout_ms": 1,
                                                    "topic_data": []})
        version = 9
    decode = codec.decode_request  # type: ignore[attr-defined]
    decode(version, body[:-1] + tags(10_001))
    decode(version, body[:-1] + tags(10_000), 0, KAFKA_LIMITS)
    with pytest.raises(DecodeError, match="maximum allowed count"):
        decode(version, body[:-1] + tags(10_001), 0, KAFKA_LIMITS)


def test_counts_past_the_end_are_refused_without_limits() -> None:
    with pytest.raises(DecodeError):
        message("MetadataRequest").decode(12, metadata(encode_uvarint(100)))
    frame = encode_request_header(RequestHeader(3, 12, 7, "c"))[:-1] + encode_uvarint(100)
    with pytest.raises(DecodeError, match="bytes remain"):
        parse_request_header(frame)
    body = log_dirs(3)
    with pytest.raises(DecodeError):
        message("DescribeLogDirsRequest").decode(4, body.replace(encode_uvarint(4), encode_uvarint(2_000_001), 1))
