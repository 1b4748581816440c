"""Kafka's request decoders' limits: a collection of more than 1,000,000 elements and a tagged-field section of
more than 10,000 fields are refused by the releases that have the limits (their generated message classes),
a count larger than the bytes left by every release. Each request is well formed otherwise, so a broker
without the limit answers it."""

from __future__ import annotations

import struct
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import FETCH, METADATA, fetch_body

DESCRIBE_LOG_DIRS = 35
RELEASES = ("4.1", "4.2", "4.3", "4.4")


def uvarint(n: int) -> bytes:
    from protocol.primitives import encode_uvarint

    return encode_uvarint(n)


def log_dirs_body(partitions: int, claimed: int | None = None) -> bytes:
    """DescribeLogDirs v4 of one (absent) topic with `partitions` partition indexes; `claimed`: the count the
    compact array's length says, when it lies."""
    count = partitions if claimed is None else claimed
    return (uvarint(2) + uvarint(len(b"no-such-topic") + 1) + b"no-such-topic" + uvarint(count + 1)
            + struct.pack(f">{partitions}i", *range(partitions)) + b"\x00" + b"\x00")


def tags(count: int) -> bytes:
    """A tagged-field section of `count` empty unknown fields (tags 1000 and up, which no request defines)."""
    return uvarint(count) + b"".join(uvarint(tag + 1000) + b"\x00" for tag in range(count))


def metadata_body(section: bytes) -> bytes:
    """Metadata v12 of no topic, with its body's tagged-field section replaced by `section`."""
    from protocol.schema import message

    body = message("MetadataRequest").encode(12, {"topics": [], "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
    return body[:-1] + section


def _log_dirs_view(step: str, answer: Any) -> Any:
    """The log directory's path and its volume's size are each broker's own."""
    if isinstance(answer, dict) and "results" in answer:
        return {**answer, "results": [{**r, "log_dir": "<log dir>", "total_bytes": "<set>", "usable_bytes": "<set>"}
                                      for r in answer["results"]]}
    return answer


@scenario(releases=RELEASES, both_view=_log_dirs_view)
def request_decoder_limits(s: Session) -> None:
    """Arrays of 1,000,000 and 1,000,001 elements, an array longer than the bytes left, 10,000 and 10,001
    tagged fields in a request body and in a request header (and in a Fetch, decoded by the hot codec), a
    tagged-field count longer than the bytes left."""
    s.send_raw("1,000,000 partition indexes", DESCRIBE_LOG_DIRS, 4, log_dirs_body(1_000_000))
    s.receive()
    s.send_raw("1,000,001 partition indexes", DESCRIBE_LOG_DIRS, 4, log_dirs_body(1_000_001))
    s.receive()
    s.send_raw("an array count past the end", DESCRIBE_LOG_DIRS, 4, log_dirs_body(3, claimed=2_000_000))
    s.receive()
    s.send_raw("10,000 tagged fields in the body", METADATA, 12, metadata_body(tags(10_000)))
    s.receive()
    s.send_raw("10,001 tagged fields in the body", METADATA, 12, metadata_body(tags(10_001)))
    s.receive()
    s.send_raw("10,000 tagged fields in the header", METADATA, 12, metadata_body(b"\x00"), header_tags=tags(10_000))
    s.receive()
    s.send_raw("10,001 tagged fields in the header", METADATA, 12, metadata_body(b"\x00"), header_tags=tags(10_001))
    s.receive()
    s.send_raw("a tagged-field count past the end", METADATA, 12, metadata_body(uvarint(100)))
    s.receive()
    from protocol.schema import message

    fetch = message("FetchRequest").encode(12, fetch_body("no-such-topic", 0))
    s.send_raw("Fetch with 10,001 tagged fields", FETCH, 12, fetch[:-1] + tags(10_001))
    s.receive()
    s.send_raw("Fetch with 10,000 tagged fields", FETCH, 12, fetch[:-1] + tags(10_000))
    s.receive()
