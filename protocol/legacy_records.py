"""Message format v0 and v1 (magic 0 and 1, Kafka before 0.11): message sets, CRC32, wrapper messages.

A message set is a sequence of log entries, each one message (Kafka's LegacyRecord):
  offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
  | timestamp int64 (magic 1 only) | key bytes (int32 length, -1 null) | value bytes (int32 length, -1 null)
The CRC32 (zlib's, not the CRC32C of v2) covers magic to the end. Attributes: bits 0-2 the codec, bit 3
(magic 1) LogAppendTime. A compressed set is one "wrapper" message whose value holds the compressed inner
message set; with magic 1 the inner offsets are relative (0..n-1) and the wrapper carries the absolute
offset of the last one (KIP-31) and the max (or, with LogAppendTime, the append) timestamp. Magic 0 has
no timestamps (-1) and absolute inner offsets.

LZ4 quirk (KAFKA-3160): Kafka before 0.10 computed the LZ4 frame descriptor checksum over the frame magic
too. Kafka still writes that broken checksum in magic 0 wrappers and ignores it when reading them; old
clients expect both. Decoding individual messages is only for the old request versions, never the v2 path.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import cramjam

from protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NAMES,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CorruptRecordError,
    compress,
    decompress,
)

MAGIC_V0 = 0
MAGIC_V1 = 1
LOG_OVERHEAD = 12  # offset + message size
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # and the timestamp
MAGIC_OFFSET = LOG_OVERHEAD + 4  # in a log entry
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

_ENTRY = struct.Struct(">qi")
_HEADER_V0 = struct.Struct(">Ibb")  # crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


class InvalidLegacyRecordError(CorruptRecordError):
    """Kafka's InvalidRecordException on a message set (INVALID_RECORD), as opposed to corruption."""


@dataclass(slots=True)
class LegacyMessage:
    """One message; `timestamp` is what Kafka's LegacyRecord.timestamp() answers (the wrapper's for an
    inner magic 1 message of a LogAppendTime wrapper, -1 for magic 0)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    size: int = 0  # the message's bytes without the log overhead
    wrapper_log_append_time: bool = False
    crc_valid: bool = True  # of an inner message (inner_messages); Kafka checks it while validating

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int | None:
        """LOG_APPEND_TIME / CREATE_TIME; None for magic 0 (Kafka's NO_TIMESTAMP_TYPE)."""
        if self.magic == MAGIC_V0:
            return None
        if self.wrapper_log_append_time or self.attributes & TIMESTAMP_TYPE_MASK:
            return LOG_APPEND_TIME
        return CREATE_TIME


def record_overhead(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


def iter_entries(buf: Buffer, max_message_size: int = 0x7FFFFFFF) -> Iterator[tuple[int, int, int]]:
    """(offset, start, end) of each log entry, as Kafka's ByteBufferLogInputStream frames them: a message
    shorter than the v0 overhead or longer than `max_message_size` is corrupt; a partial entry at the end is
    left out (a fetch may end in one)."""
    n = len(buf)
    pos = 0
    while n - pos >= LOG_OVERHEAD:
        offset, size = _ENTRY.unpack_from(buf, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"Record size {size} is less than the minimum record overhead "
                                     f"({RECORD_OVERHEAD_V0})")
        if size > max_message_size:
            raise CorruptRecordError(f"Record size {size} exceeds the largest allowable message size "
                                     f"({max_message_size}).")
        end = pos + LOG_OVERHEAD + size
        if end > n:
            return
        yield offset, pos, end
        pos = end


def entry_magic(buf: Buffer, start: int = 0) -> int | None:
    """The magic byte of the entry (or v2 batch) at `start`; None when too short to tell."""
    return buf[start + MAGIC_OFFSET] if len(buf) > start + MAGIC_OFFSET else None


def crc_is_valid(buf: Buffer, start: int, end: int) -> bool:
    """The stored CRC32 of the message of the entry at buf[start:end] matches its bytes."""
    stored = _UINT32.unpack_from(buf, start + LOG_OVERHEAD)[0]
    return stored == zlib.crc32(memoryview(buf)[start + MAGIC_OFFSET:end])


def stored_crc(buf: Buffer, start: int) -> int:
    return _UINT32.unpack_from(buf, start + LOG_OVERHEAD)[0]


def parse_entry(buf: Buffer, start: int, end: int) -> LegacyMessage:
    """The message of the log entry at buf[start:end] (framed by iter_entries; the CRC is not checked)."""
    offset = _INT64.unpack_from(buf, start)[0]
    pos = start + LOG_OVERHEAD
    size = end - pos
    magic = buf[pos + 4]
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptRecordError(f"Invalid magic found in record: {magic}")
    if size < record_overhead(magic):
        raise CorruptRecordError(f"Record is corrupt (crc could not be retrieved as the record is too small, "
                                 f"size = {size})")
    attributes = buf[pos + 5]
    pos += 6
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        timestamp = _INT64.unpack_from(buf, pos)[0]
        pos += 8
    key, pos = _read_bytes(buf, pos, end)
    value, pos = _read_bytes(buf, pos, end)
    if pos != end:
        raise CorruptRecordError(f"Record is corrupt: {end - pos} bytes after the value")
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, size)


def _read_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("Record is corrupt: truncated length")
    length = _INT32.unpack_from(buf, pos)[0]
    pos += 4
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"Record is corrupt: invalid length {length}")
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"Record is corrupt: a field of {length} bytes runs past the message")
    return bytes(buf[pos:pos + length]), pos + length


def inner_messages(wrapper: LegacyMessage) -> list[LegacyMessage]:
    """The messages inside a compressed wrapper with absolute offsets and the timestamps Kafka reads
    (AbstractLegacyRecordBatch's deep iterator). Inner magic and CRCs (`crc_valid`) are the caller's to check,
    in Kafka's order.
    Raises InvalidLegacyRecordError / CorruptRecordError."""
    codec = wrapper.compression
    if codec == COMPRESSION_ZSTD or codec > COMPRESSION_ZSTD:
        raise InvalidLegacyRecordError(f"Invalid wrapper compressionType found in legacy deep record iterator "
                                       f"{wrapper.magic}")
    if wrapper.value is None:
        raise InvalidLegacyRecordError(f"Found invalid compressed record set with null value "
                                       f"(magic = {wrapper.magic})")
    data = decompress_legacy(codec, wrapper.value, wrapper.magic)
    lat = wrapper.magic == MAGIC_V1 and bool(wrapper.attributes & TIMESTAMP_TYPE_MASK)
    inner = []
    for _offset, start, end in iter_entries(data):
        message = parse_entry(data, start, end)
        message.crc_valid = crc_is_valid(data, start, end)
        if message.magic == MAGIC_V1 and lat:
            message.timestamp = wrapper.timestamp
            message.wrapper_log_append_time = True
        inner.append(message)
    if not inner:
        raise InvalidLegacyRecordError("Found invalid compressed record set with no inner records")
    if wrapper.magic == MAGIC_V1:
        last_inner = inner[-1].offset
        if wrapper.offset == 0:
            base = 0  # some librdkafka versions produce a zero wrapper offset
        elif wrapper.offset < last_inner:
            raise InvalidLegacyRecordError(
                f"Found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper.offset}' is "
                f"less than the last inner message offset '{last_inner}' and it is not zero.")
        else:
            base = wrapper.offset - last_inner
        for message in inner:
            message.offset += base
    return inner


# --- building -----------------------------------------------------------------------------------------

def _message(magic: int, attributes: int, timestamp: int, key: bytes | None, value: Buffer | None) -> bytes:
    body = bytearray(_HEADER_V0.pack(0, magic, attributes))
    if magic == MAGIC_V1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += b"\xff\xff\xff\xff"
        else:
            body += _INT32.pack(len(field))
            body += field
    _UINT32.pack_into(body, 0, zlib.crc32(memoryview(body)[4:]))
    return bytes(body)


def build_entry(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
                value: Buffer | None) -> bytes:
    """One log entry (offset, size, message) with its CRC32."""
    message = _message(magic, attributes, timestamp, key, value)
    return _ENTRY.pack(offset, len(message)) + message


def build_message_set(messages: Sequence[tuple[int, int, bytes | None, bytes | None]], magic: int, *,
                      compression: int = COMPRESSION_NONE, timestamp_type: int = CREATE_TIME,
                      log_append_time: int = NO_TIMESTAMP) -> bytes:
    """(offset, timestamp, key, value) messages as Kafka's MemoryRecordsBuilder writes them in format
    `magic`: one entry each, or one wrapper of `compression` around them. With LogAppendTime (magic 1) every
    message carries `log_append_time` and the timestamp-type bit."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"not a legacy magic: {magic}")
    lat = magic == MAGIC_V1 and timestamp_type == LOG_APPEND_TIME
    attributes = TIMESTAMP_TYPE_MASK if lat else 0
    if compression == COMPRESSION_NONE:
        return b"".join(build_entry(offset, magic, attributes, log_append_time if lat else ts, key, value)
                        for offset, ts, key, value in messages)
    if not messages:
        return b""
    if compression not in (COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4):
        raise CorruptRecordError(f"{COMPRESSION_NAMES.get(compression, compression)} cannot be used with "
                                 f"message format v{magic}")
    base = messages[0][0]
    inner = b"".join(
        build_entry(offset - base if magic == MAGIC_V1 else offset, magic, attributes,
                    log_append_time if lat else ts, key, value)
        for offset, ts, key, value in messages)
    wrapper_ts = log_append_time if lat else max(ts for _, ts, _, _ in messages)
    return build_entry(messages[-1][0], magic, compression | attributes, wrapper_ts, None,
                       compress_legacy(compression, inner, magic))


# --- codecs: LZ4 as Kafka frames it for magic 0/1 -------------------------------------------------------

_LZ4_MAGIC = 0x184D2204
_LZ4_FLG = 0x60  # version 01, independent blocks, no block or content checksum, no content size
_LZ4_BD = 0x40  # 64 KiB blocks (Kafka's Lz4BlockOutputStream default)
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000


def compress_legacy(codec: int, data: Buffer, magic: int) -> bytes:
    if codec == COMPRESSION_LZ4:
        return lz4_frame(data, broken_checksum=magic == MAGIC_V0)
    return compress(codec, data)


def decompress_legacy(codec: int, data: Buffer, magic: int) -> bytes:
    if codec == COMPRESSION_LZ4 and magic == MAGIC_V0:
        data = _fix_lz4_descriptor_checksum(data)
    return decompress(codec, data)


def lz4_frame(data: Buffer, *, broken_checksum: bool = False) -> bytes:
    """An LZ4 frame as Kafka's Lz4BlockOutputStream writes it: 64 KiB independent blocks, an end mark, no
    checksums; `broken_checksum` computes the descriptor checksum over the frame magic too (magic 0)."""
    header = bytearray(struct.pack("<IBB", _LZ4_MAGIC, _LZ4_FLG, _LZ4_BD))
    header.append((xxh32(header if broken_checksum else header[4:]) >> 8) & 0xFF)
    out = [bytes(header)]
    view = memoryview(data)
    for i in range(0, len(view), _LZ4_BLOCK):
        raw = view[i:i + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
        if len(block) >= len(raw):
            out.append(struct.pack("<I", len(raw) | _LZ4_UNCOMPRESSED) + bytes(raw))
        else:
            out.append(struct.pack("<I", len(block)) + block)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


def _fix_lz4_descriptor_checksum(data: Buffer) -> bytes:
    """The frame with a correct descriptor checksum, whatever it had (Kafka ignores it for magic 0)."""
    buf = bytearray(data)
    if len(buf) < 7 or struct.unpack_from("<I", buf)[0] != _LZ4_MAGIC:
        return bytes(buf)  # not a frame: let the decoder report it
    end = 6 + (8 if buf[4] & 0x08 else 0)  # FLG, BD, optional content size
    if len(buf) <= end:
        return bytes(buf)
    buf[end] = (xxh32(buf[4:end]) >> 8) & 0xFF
    return bytes(buf)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """xxHash32 (for the few bytes of an LZ4 frame descriptor; no C binding needed for that)."""
    data = bytes(data)
    n = len(data)
    pos = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        while pos + 16 <= n:
            lanes = struct.unpack_from("<4I", data, pos)
            v1 = _rotl((v1 + lanes[0] * _P2) & _M32, 13) * _P1 & _M32
            v2 = _rotl((v2 + lanes[1] * _P2) & _M32, 13) * _P1 & _M32
            v3 = _rotl((v3 + lanes[2] * _P2) & _M32, 13) * _P1 & _M32
            v4 = _rotl((v4 + lanes[3] * _P2) & _M32, 13) * _P1 & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = _rotl((h + struct.unpack_from("<I", data, pos)[0] * _P3) & _M32, 17) * _P4 & _M32
        pos += 4
    while pos < n:
        h = _rotl((h + data[pos] * _P5) & _M32, 11) * _P1 & _M32
        pos += 1
    h ^= h >> 15
    h = h * _P2 & _M32
    h ^= h >> 13
    h = h * _P3 & _M32
    h ^= h >> 16
    return h
