"""RecordBatch v2 (magic 2): header parsing, CRC32C, offset/timestamp rewriting, codecs, control batches.

Layout (Kafka's DefaultRecordBatch), 61-byte header then the records:
  0 base_offset int64 | 8 batch_length int32 | 12 partition_leader_epoch int32 | 16 magic int8
  17 crc uint32 | 21 attributes int16 | 23 last_offset_delta int32 | 27 base_timestamp int64
  35 max_timestamp int64 | 43 producer_id int64 | 51 producer_epoch int16 | 53 base_sequence int32
  57 records_count int32 | 61 records (compressed as one block when attributes & 7 != 0)
The CRC covers attributes to the end, so base offset and leader epoch can be set without recomputing it.

Hot path (produce, fetch, log append and recovery): `parse_batch_header`, `iter_batches`, `verify_crc`,
`set_base_offset`, `set_log_append_time`. The rest (`build_batch`, `decode_records`, `control_batch`)
decodes individual records and is for control markers, ListOffsets by timestamp, tests and compaction.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import cramjam

from protocol.crc32c import crc32c

Buffer = bytes | bytearray | memoryview

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the bytes batch_length does not count
BATCH_OVERHEAD = BATCH_HEADER_SIZE - LOG_OVERHEAD  # smallest valid batch_length
LEGACY_RECORD_OVERHEAD_V0 = 14  # smallest v0 message: what Kafka checks before it reads the magic
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
# KIP-534: set by the log cleaner on batches holding tombstones or markers it keeps for a while; the base
# timestamp then holds the delete horizon (when those may go), record timestamps stay base + delta.
DELETE_HORIZON_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_FRAME = struct.Struct(">qi")  # base_offset, batch_length
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT32 = struct.Struct(">i")


class CorruptRecordError(ValueError):
    """Malformed record data: Kafka's CorruptRecordException (CORRUPT_MESSAGE)."""


class DecompressionError(CorruptRecordError):
    """A compressed payload its codec cannot decompress."""


class TruncatedBatchError(CorruptRecordError):
    """The bytes end inside a batch (Kafka's batch iterator stops there rather than failing)."""


class InvalidMagicError(CorruptRecordError):
    """A v0/v1 message set where a v2 batch is required.

    Kafka frames v0/v1 message sets like v2 batches and rejects them in ProduceRequest.validateRecords
    with InvalidRecordException ("Produce requests with version N are only allowed to contain record
    batches with magic version 2"), i.e. INVALID_RECORD, not CORRUPT_MESSAGE: catch this one first.
    A magic outside 0..2 is plain corruption (CORRUPT_MESSAGE), as in Kafka.
    """

    def __init__(self, magic: int, message: str) -> None:
        super().__init__(message)
        self.magic = magic


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        # Sequences wrap at INT32 max (DefaultRecordBatch.incrementSequence).
        if self.base_sequence == -1:
            return -1
        return (self.base_sequence + self.last_offset_delta) % 2**31


def parse_batch_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The 61-byte header at `pos`; no validation (see iter_batches)."""
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: Buffer) -> Iterator[tuple[BatchHeader, int, int]]:
    """(header, start, end) of each batch in concatenated v2 batches, checking framing only (no CRC).

    Raises CorruptRecordError on a bad length or magic, or a negative record count, TruncatedBatchError (a
    CorruptRecordError) when the bytes end inside a batch, and InvalidMagicError (a CorruptRecordError) on
    a v0/v1 message.
    """
    n = len(buf)
    pos = 0
    while pos < n:
        remaining = n - pos
        if remaining < LOG_OVERHEAD:
            raise TruncatedBatchError(f"truncated batch at byte {pos}: {remaining} bytes left")
        length = _INT32.unpack_from(buf, pos + 8)[0]
        # Kafka's order (ByteBufferLogInputStream): size floor of any magic, then the magic itself.
        if length < LEGACY_RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"record size {length} is less than the minimum record overhead "
                                     f"({LEGACY_RECORD_OVERHEAD_V0})")
        if remaining <= MAGIC_OFFSET:
            raise TruncatedBatchError(f"truncated batch at byte {pos}: {remaining} bytes left")
        magic = buf[pos + MAGIC_OFFSET]
        if magic != 2:
            if magic in (0, 1):
                raise InvalidMagicError(magic, "record batches must have magic version 2, "
                                               f"found a v{magic} message set")
            raise CorruptRecordError(f"invalid magic found in record: {magic}")
        if length < BATCH_OVERHEAD:
            raise CorruptRecordError(f"record batch is corrupt (the size {length + LOG_OVERHEAD} is smaller "
                                     f"than the minimum allowed overhead {BATCH_HEADER_SIZE})")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            raise TruncatedBatchError(f"truncated batch at byte {pos}: needs {length + LOG_OVERHEAD} bytes, "
                                      f"{remaining} left")
        header = BatchHeader(*_HEADER.unpack_from(buf, pos))
        if header.records_count < 0:
            raise CorruptRecordError(f"found invalid record count {header.records_count}")
        yield header, pos, end
        pos = end


def compute_crc(buf: Buffer, start: int, end: int) -> int:
    return crc32c(memoryview(buf)[start + ATTRIBUTES_OFFSET:end])


def verify_crc(buf: Buffer, start: int, end: int) -> bool:
    """Whether the stored CRC32C of the batch at buf[start:end] matches its bytes."""
    return _UINT32.unpack_from(buf, start + CRC_OFFSET)[0] == compute_crc(buf, start, end)


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Outside the CRC: no recomputation."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Outside the CRC, like the base offset; the leader stamps its epoch on every appended batch."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Kafka's DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now): sets the timestamp-type bit and
    max_timestamp (base_timestamp and records stay as the producer wrote them; readers take every record's
    timestamp from max_timestamp), then recomputes the CRC. A no-op when nothing changes, as in Kafka."""
    attributes = struct.unpack_from(">h", buf, pos + ATTRIBUTES_OFFSET)[0]
    current = _INT64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)[0]
    if attributes & TIMESTAMP_TYPE_MASK and current == timestamp:
        return
    struct.pack_into(">h", buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    end = pos + LOG_OVERHEAD + _INT32.unpack_from(buf, pos + 8)[0]
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, end))


# --- codecs -------------------------------------------------------------------------------------------

# xerial snappy-java's stream header (SnappyOutputStream): magic, version 1, compatible version 1.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size, what the Java client writes


def compress(codec: int, data: Buffer) -> bytes:
    """Compress a records section as the Java client does."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == COMPRESSION_SNAPPY:
        # Java writes xerial-framed snappy (librdkafka writes one raw block); Kafka reads both.
        view = memoryview(data)
        out = bytearray(_XERIAL_HEADER)
        for i in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[i:i + _XERIAL_BLOCK]))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == COMPRESSION_LZ4:
        # LZ4 frame with independent blocks: Kafka's Lz4BlockInputStream decompresses each block alone.
        c = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
        c.compress(bytes(data))
        return bytes(c.finish())
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptRecordError(f"unknown compression type {codec}")


def decompress(codec: int, data: Buffer) -> bytes:
    try:
        if codec == COMPRESSION_NONE:
            return bytes(data)
        if codec == COMPRESSION_GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == COMPRESSION_SNAPPY:
            return _snappy_decompress(data)
        if codec == COMPRESSION_LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, ValueError, struct.error, DecompressionError) as exc:
        raise DecompressionError(f"{COMPRESSION_NAMES[codec]} decompression failed: {exc}") from None
    raise CorruptRecordError(f"unknown compression type {codec}")


def _snappy_decompress(data: Buffer) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    out = bytearray()
    pos, n = len(_XERIAL_HEADER), len(view)
    if n < pos:
        raise DecompressionError("truncated xerial snappy header")
    while pos < n:
        size = _INT32.unpack_from(view, pos)[0]
        pos += 4
        if size < 0 or pos + size > n:
            raise DecompressionError("truncated xerial snappy block")
        out += cramjam.snappy.decompress_raw(view[pos:pos + size])
        pos += size
    return bytes(out)


# --- records ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def _write_varint(out: bytearray, value: int) -> None:
    v = (value << 1) ^ (value >> 63)  # zigzag
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise CorruptRecordError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint is too long")


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def encode_record(record: Record) -> bytes:
    body = bytearray(b"\x00")  # record attributes: unused, always 0
    _write_varint(body, record.timestamp_delta)
    _write_varint(body, record.offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    _write_varint(body, len(record.headers))
    for name, value in record.headers:
        _write_bytes(body, name.encode())
        _write_bytes(body, value)
    out = bytearray()
    _write_varint(out, len(body))
    return bytes(out + body)


def build_batch(records: Sequence[Record], *, base_offset: int = 0, base_timestamp: int = 0,
                max_timestamp: int | None = None, compression: int = COMPRESSION_NONE,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1, base_sequence: int = -1,
                is_transactional: bool = False, is_control: bool = False, partition_leader_epoch: int = -1,
                timestamp_type: int = CREATE_TIME, last_offset_delta: int | None = None,
                delete_horizon: bool = False) -> bytes:
    """One v2 batch with a valid CRC. max_timestamp defaults to the largest record timestamp (CreateTime);
    last_offset_delta to the last record's (an empty batch, as compaction leaves, must give it).
    delete_horizon: base_timestamp is the cleaner's delete horizon (KIP-534)."""
    body = b"".join(encode_record(r) for r in records)
    if compression != COMPRESSION_NONE:
        body = compress(compression, body)
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset_delta if records else 0
    attributes = (compression & COMPRESSION_MASK) | (TIMESTAMP_TYPE_MASK if timestamp_type else 0) \
        | (TRANSACTIONAL_MASK if is_transactional else 0) | (CONTROL_MASK if is_control else 0) \
        | (DELETE_HORIZON_MASK if delete_horizon else 0)
    buf = bytearray(BATCH_HEADER_SIZE + len(body))
    _HEADER.pack_into(buf, 0, base_offset, len(buf) - LOG_OVERHEAD, partition_leader_epoch, 2, 0, attributes,
                      last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                      base_sequence, len(records))
    buf[BATCH_HEADER_SIZE:] = body
    _UINT32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
    return bytes(buf)


def decode_records(batch: Buffer) -> list[Record]:
    """The records of one whole batch (decompressed). Raises CorruptRecordError when malformed
    (DecompressionError when its codec cannot decompress the payload)."""
    header = parse_batch_header(batch)
    view = memoryview(batch)[:header.size]
    if len(view) < header.size:
        raise CorruptRecordError("truncated batch")
    data: Buffer = view[BATCH_HEADER_SIZE:]
    if header.compression:
        data = decompress(header.compression, data)
    records = []
    pos, n = 0, len(data)
    for _ in range(header.records_count):
        length, pos = _read_varint(data, pos, n)
        end = pos + length
        if length < 1 or end > n:
            raise CorruptRecordError(f"invalid record size {length}")
        pos += 1  # attributes
        timestamp_delta, pos = _read_varint(data, pos, end)
        offset_delta, pos = _read_varint(data, pos, end)
        key, pos = _read_bytes(data, pos, end)
        value, pos = _read_bytes(data, pos, end)
        count, pos = _read_varint(data, pos, end)
        if count < 0:
            raise CorruptRecordError(f"invalid number of record headers {count}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(count):
            name, pos = _read_bytes(data, pos, end)
            if name is None:
                raise CorruptRecordError("null record header key")
            hvalue, pos = _read_bytes(data, pos, end)
            try:
                headers.append((name.decode(), hvalue))
            except UnicodeDecodeError:
                raise CorruptRecordError("record header key is not UTF-8") from None
        if pos != end:
            raise CorruptRecordError(f"invalid record size: expected {length} bytes, "
                                     f"read {length - end + pos}")
        records.append(Record(offset_delta, timestamp_delta, key, value, headers))
    if pos != n:
        raise CorruptRecordError(f"{n - pos} unconsumed bytes after all records consumed")
    return records


def check_records(batch: Buffer) -> None:
    """What decode_records checks of a whole batch (decompressed), without building the records: each record's
    length, fields and headers must fill it exactly, as many records as the batch claims, nothing after them
    (Kafka's LogValidator walks a compressed batch the same way, skipping keys and values). Raises
    CorruptRecordError (DecompressionError when its codec cannot decompress the payload)."""
    header = parse_batch_header(batch)
    view = memoryview(batch)[:header.size]
    if len(view) < header.size:
        raise CorruptRecordError("truncated batch")
    data = decompress(header.compression, view[BATCH_HEADER_SIZE:]) if header.compression \
        else bytes(view[BATCH_HEADER_SIZE:])
    pos, n = 0, len(data)
    for _ in range(header.records_count):
        b = data[pos] if pos < n else 0x80
        if b < 0x80:  # one-byte varints, the common case, read inline: this loop runs once per record
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            length, pos = _read_varint(data, pos, n)
        end = pos + length
        if length < 1 or end > n:
            raise CorruptRecordError(f"invalid record size {length}")
        p = pos + 1  # attributes
        for _delta in (0, 1):  # timestamp and offset deltas
            b = data[p] if p < end else 0x80
            p = p + 1 if b < 0x80 else _read_varint(data, p, end)[1]
        for _field in (0, 1):  # key and value
            b = data[p] if p < end else 0x80
            if b < 0x80:
                size, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                size, p = _read_varint(data, p, end)
            if size < -1:
                raise CorruptRecordError(f"invalid negative length {size}")
            if size > 0:
                p += size
                if p > end:
                    raise CorruptRecordError("field runs past the end of its record")
        count, p = _read_varint(data, p, end)
        if count < 0:
            raise CorruptRecordError(f"invalid number of record headers {count}")
        for _ in range(count):
            name, p = _read_bytes(data, p, end)
            if name is None:
                raise CorruptRecordError("null record header key")
            try:
                name.decode()
            except UnicodeDecodeError:
                raise CorruptRecordError("record header key is not UTF-8") from None
            _, p = _read_bytes(data, p, end)
        if p != end:
            raise CorruptRecordError(f"invalid record size: expected {length} bytes, read {p - pos}")
        pos = end
    if pos != n:
        raise CorruptRecordError(f"{n - pos} unconsumed bytes after all records consumed")


def _read_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    size, pos = _read_varint(buf, pos, end)
    if size < 0:
        if size != -1:
            raise CorruptRecordError(f"invalid negative length {size}")
        return None, pos
    if pos + size > end:
        raise CorruptRecordError("field runs past the end of its record")
    return bytes(buf[pos:pos + size]), pos + size


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """With LogAppendTime every record's timestamp is the batch's max timestamp (DefaultRecordBatch)."""
    if header.attributes & TIMESTAMP_TYPE_MASK:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


# --- control batches (transaction markers) ------------------------------------------------------------

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_MARKER_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch


def control_batch(commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                  timestamp: int, *, base_offset: int = 0, partition_leader_epoch: int = -1) -> bytes:
    """Kafka's EndTransactionMarker batch: transactional + control, one record."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch([Record(0, 0, key, value)], base_offset=base_offset, base_timestamp=timestamp,
                       producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
                       is_control=True, partition_leader_epoch=partition_leader_epoch)


def parse_control_record(record: Record) -> tuple[int, int | None]:
    """(control type, coordinator epoch or None) of a control record; CONTROL_COMMIT / CONTROL_ABORT."""
    return _control_type_and_epoch(record.key, record.value)


def _control_type_and_epoch(key: bytes | None, value: bytes | None) -> tuple[int, int | None]:
    if key is None or len(key) < 4:
        raise CorruptRecordError("invalid control record key")
    _version, kind = _CONTROL_KEY.unpack_from(key)
    epoch = None
    if kind in (CONTROL_ABORT, CONTROL_COMMIT) and value is not None and len(value) >= 6:
        epoch = _MARKER_VALUE.unpack_from(value)[1]
    return kind, epoch


def end_marker(batch: Buffer, pos: int = 0, header: BatchHeader | None = None) -> tuple[int, int] | None:
    """(CONTROL_COMMIT or CONTROL_ABORT, coordinator epoch) of the control batch at `pos` (whose `header` the
    caller may have parsed already) when its record is an end-transaction marker (Kafka's
    EndTransactionMarker.deserialize); None for another control record or a batch the cleaner emptied. Reads the
    one record in place (a marker is appended at every transaction's end). Raises CorruptRecordError."""
    if header is None:
        header = parse_batch_header(batch, pos)
    if header.records_count < 1:
        return None
    end = pos + header.size
    if header.compression or len(batch) < end:
        records = decode_records(memoryview(batch)[pos:end])
        key, value = records[0].key, records[0].value
    else:
        length, at = _read_varint(batch, pos + BATCH_HEADER_SIZE, end)
        record_end = at + length
        if length < 1 or record_end > end:
            raise CorruptRecordError(f"invalid record size {length}")
        _timestamp_delta, at = _read_varint(batch, at + 1, record_end)  # after the attributes byte
        _offset_delta, at = _read_varint(batch, at, record_end)
        key, at = _read_bytes(batch, at, record_end)
        value, at = _read_bytes(batch, at, record_end)
    kind, coordinator_epoch = _control_type_and_epoch(key, value)
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT) or coordinator_epoch is None:
        return None
    return kind, coordinator_epoch
