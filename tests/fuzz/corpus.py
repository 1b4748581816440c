"""Fuzzing inputs: valid requests of every API and version the broker serves (random values built from
Kafka's JSON definitions, encoded with our schemas), valid record batches, and mutations of both that
keep most of their structure (bit flips, truncations, extreme length fields, spliced bytes)."""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

from broker.server.dispatch import table
from protocol.header import RequestHeader, encode_request_header
from protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    Record,
    build_batch,
)
from protocol.schema import in_versions, message, parse_versions, snake_case

_INT_BITS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def _scalar(type_name: str, rng: random.Random) -> Any:
    if type_name in _INT_BITS:
        bits = _INT_BITS[type_name]
        return rng.choice([0, 1, -1, 3, (1 << bits) - 1, -(1 << bits), rng.randint(-(1 << bits), (1 << bits) - 1)])
    if type_name == "uint16":
        return rng.randint(0, 0xFFFF)
    if type_name == "uint32":
        return rng.randint(0, 0xFFFFFFFF)
    if type_name == "float64":
        return rng.uniform(-1e6, 1e6)
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if type_name == "string":
        return rng.choice(["", "t", "topic-" + str(rng.randint(0, 9)), "ü" * rng.randint(0, 3)])
    if type_name == "records":
        return random_batch(rng)
    if type_name == "bytes":
        return rng.randbytes(rng.randint(0, 12))
    raise AssertionError(type_name)


def _fields(fields: list[dict[str, Any]], version: int, rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if not in_versions(version, parse_versions(field.get("versions"))):
            continue
        if "tag" in field:
            continue  # tagged fields keep their defaults (absent)
        nullable = in_versions(version, parse_versions(field.get("nullableVersions")))
        name = snake_case(field["name"])
        if nullable and rng.random() < 0.15:
            out[name] = None
            continue
        type_name: str = field["type"]
        if type_name.startswith("[]"):
            count = rng.choice([0, 1, 1, 2, 3])
            if "fields" in field:
                out[name] = [_fields(field["fields"], version, rng) for _ in range(count)]
            else:
                out[name] = [_scalar(type_name[2:], rng) for _ in range(count)]
        elif "fields" in field:
            out[name] = _fields(field["fields"], version, rng)
        else:
            out[name] = _scalar(type_name, rng)
    return out


def random_batch(rng: random.Random) -> bytes:
    records = [Record(i, rng.randint(0, 1000), rng.choice([None, b"k", rng.randbytes(4)]),
                      rng.choice([None, b"", rng.randbytes(rng.randint(1, 40))]),
                      [("h", b"v")] if rng.random() < 0.3 else [])
               for i in range(rng.randint(1, 4))]
    idempotent = rng.random() < 0.5
    return build_batch(records, base_timestamp=1_700_000_000_000,
                       compression=rng.choice([COMPRESSION_NONE, COMPRESSION_NONE, COMPRESSION_GZIP,
                                                COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]),
                       producer_id=rng.randint(0, 5000) if idempotent else -1,
                       producer_epoch=0 if idempotent else -1, base_sequence=0 if idempotent else -1,
                       is_transactional=idempotent and rng.random() < 0.3)


def served_versions() -> list[tuple[int, int]]:
    """(api key, version) of every request the broker decodes."""
    out = []
    for api in table().values():
        valid = message(api.request_name).valid_versions
        for version in range(max(api.min_version, valid[0]), api.max_version + 1):
            out.append((int(api.key), version))
    return out


def valid_request(api_key: int, version: int, rng: random.Random, correlation_id: int = 1) -> bytes:
    """A framed request (size prefix included) with random field values."""
    api = table()[api_key]
    spec = message(api.request_name)
    body = spec.encode(version, _fields(spec.definition["fields"], version, rng))
    payload = encode_request_header(RequestHeader(api_key, version, correlation_id, "fuzz")) + body
    return struct.pack(">i", len(payload)) + payload


_EXTREMES_32 = [0, 1, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000]
_EXTREMES_16 = [0, -1, 0x7FFF, -0x8000, 1]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three mutations; the result is never empty unless truncated to nothing."""
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not buf:
            buf += rng.randbytes(rng.randint(1, 16))
            continue
        kind = rng.randrange(8)
        pos = rng.randrange(len(buf))
        if kind == 0:  # flip a bit
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:  # a random byte
            buf[pos] = rng.randrange(256)
        elif kind == 2:  # truncate
            del buf[pos:]
        elif kind == 3 and pos + 4 <= len(buf):  # an extreme int32 (array and bytes lengths)
            struct.pack_into(">i", buf, pos, rng.choice(_EXTREMES_32))
        elif kind == 4 and pos + 2 <= len(buf):  # an extreme int16 (string lengths, api version)
            struct.pack_into(">h", buf, pos, rng.choice(_EXTREMES_16))
        elif kind == 5:  # insert random bytes (a varint that never ends: 0xff...)
            buf[pos:pos] = rng.choice([rng.randbytes(rng.randint(1, 8)), b"\xff" * rng.randint(1, 10)])
        elif kind == 6:  # duplicate a slice
            end = min(len(buf), pos + rng.randint(1, 32))
            buf[pos:pos] = buf[pos:end]
        else:  # delete a slice
            del buf[pos:pos + rng.randint(1, 8)]
    return bytes(buf)


def reframe(frame: bytes) -> bytes:
    """A mutated frame with its size prefix made right again (so the body is what gets parsed)."""
    body = frame[4:] if len(frame) >= 4 else b""
    return struct.pack(">i", len(body)) + body
