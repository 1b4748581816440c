"""What the broker does with untrusted bytes before any state changes, as plain functions: a finding is
any exception other than the errors these parsers are meant to raise (DecodeError for requests,
CorruptRecordError for record batches), which the server turns into a closed connection or an error
code. Anything else would reach the server's catch-all: a bug."""

from __future__ import annotations

from broker.handlers.produce import validate
from broker.server.dispatch import lookup
from protocol.errors import DecodeError
from protocol.header import ApiKey, parse_request_header
from protocol.records import CorruptRecordError, decode_records, iter_batches

EXPECTED = (DecodeError,)


def request_frame(frame: bytes) -> None:
    """A framed request (size prefix included) through the server's decoding steps; Produce payloads
    also through the broker's record batch checks (validate), and every batch they hold decoded."""
    body = frame[4:]
    header, offset = parse_request_header(body)
    api = lookup(header.api_key)
    if api is None:
        return
    version = header.api_version
    if not api.min_version <= version <= api.max_version:
        return
    request = api.decode_request(version, body, offset)
    if api.key == ApiKey.PRODUCE:
        for topic in request.topic_data:
            for partition in topic.partition_data:
                validate(partition.records, version, 1 << 20)
                if partition.records:
                    record_batches(bytes(partition.records))


def record_batches(data: bytes) -> None:
    """A produce payload or log bytes: batch framing, headers, decompression and records."""
    try:
        for _header, start, end in iter_batches(data):
            decode_records(memoryview(data)[start:end])
    except CorruptRecordError:
        pass
