"""Between message format v0/v1 and record batch v2, as a Kafka 3.x broker converts.

Up (Produce v0-2, Kafka's LogValidator): a message set of magic 0 or 1 is validated (CRC32, inner magic,
compacted-topic keys, timestamps) and rebuilt as one v2 batch with offsets from 0, no producer id (an old
message set cannot be deduplicated), and the timestamps Kafka keeps: magic 1 messages their own (or their
LogAppendTime wrapper's), magic 0 none (-1). LogAppendTime topics get the append time from the log.

Down (Fetch v0-3, RecordsUtil.downConvert and KIP-283's LazyDownConversionRecords): stored v2 batches are
rewritten as message sets of the magic the fetch version reads, without control batches (v0/v1 have no
transaction markers), keeping each batch's codec; zstd cannot be down-converted. The size the response
carries is fixed before converting (the stored size, or the first converted batch if larger): converted
data is cut to it, and what is left is filled with an "overflow" entry that clients skip as a partial
message.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from protocol import legacy_records as legacy
from protocol.header import ErrorCode
from protocol.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_NAMES,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    Buffer,
    CorruptRecordError,
    Record,
    build_batch,
    decode_records,
    parse_batch_header,
    record_timestamp,
)

NO_TIMESTAMP = -1
LOG_OVERHEAD = 12
_INT32 = struct.Struct(">i")
_CODECS = {"uncompressed": COMPRESSION_NONE, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass
class ConversionError(Exception):
    """A produce partition's answer when its message set is refused: Kafka's error, its message and the
    per-record errors (batch_index, message)."""

    error: ErrorCode
    message: str
    record_errors: list[tuple[int, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.error.name}: {self.message}"


class UnsupportedCompressionError(Exception):
    """zstd batches cannot be down-converted (UNSUPPORTED_COMPRESSION_TYPE)."""


def target_codec(compression_type: str, source_codec: int) -> int:
    """The codec a topic's compression.type asks for ("producer": the producer's own)."""
    if compression_type == "producer":
        return source_codec
    return _CODECS[compression_type]


# --- up ------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class UpConverted:
    batch: bytes  # one v2 batch, base offset 0
    magic: int  # the producer's message format
    count: int


def up_convert(records: Buffer, *, now_ms: int, log_append_time: bool, compression_type: str = "producer",
               compacted: bool = False, timestamp_before_max_ms: int = 2**63 - 1,
               timestamp_after_max_ms: int = 2**63 - 1, max_message_bytes: int = 0x7FFFFFFF,
               topic_partition: str = "") -> UpConverted | None:
    """A magic 0/1 message set as the v2 batch Kafka appends for it; raises ConversionError. None when it
    holds no whole message (Kafka appends nothing and answers NONE with offset -1)."""
    try:
        entries = list(legacy.iter_entries(records))
    except CorruptRecordError as exc:
        raise ConversionError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if not entries:
        return None
    # UnifiedLog.analyzeAndValidateRecords: each shallow message's size, then its CRC.
    source_codec = COMPRESSION_NONE
    for _offset, start, end in entries:
        size = end - start
        if size > max_message_bytes:
            raise ConversionError(ErrorCode.MESSAGE_TOO_LARGE,
                                  f"The record batch size in the append to {topic_partition} is {size} bytes "
                                  f"which exceeds the maximum configured value of {max_message_bytes}.")
        if legacy.entry_magic(records, start) not in (legacy.MAGIC_V0, legacy.MAGIC_V1):
            break  # LogValidator reports the magic mismatch below
        if not legacy.crc_is_valid(records, start, end):
            raise ConversionError(ErrorCode.CORRUPT_MESSAGE,
                                  f"Record is corrupt (stored crc = {legacy.stored_crc(records, start)}) in topic "
                                  f"partition {topic_partition}.")
        codec = records[start + legacy.MAGIC_OFFSET + 1] & legacy.COMPRESSION_MASK
        if codec != COMPRESSION_NONE:
            source_codec = codec
    # LogValidator.validateMessagesAndAssignOffsets (the target magic is always 2 here).
    target = target_codec(compression_type, source_codec)
    if source_codec != COMPRESSION_NONE and len(entries) > 1:
        raise ConversionError(ErrorCode.INVALID_RECORD, "Compressed outer record has more than one batch")
    first_magic = legacy.entry_magic(records, entries[0][1])
    out: list[Record] = []
    timestamps: list[int] = []
    for _offset, start, end in entries:
        magic = legacy.entry_magic(records, start)
        if magic != first_magic:
            raise ConversionError(ErrorCode.INVALID_RECORD,
                                  f"Batch magic {magic} is not the same as the first batch's magic byte "
                                  f"{first_magic} in topic partition {topic_partition}")
        try:
            shallow = legacy.parse_entry(records, start, end)
            messages = legacy.inner_messages(shallow) if shallow.compression else [shallow]
        except legacy.InvalidLegacyRecordError as exc:
            raise ConversionError(ErrorCode.INVALID_RECORD, str(exc)) from None
        except CorruptRecordError as exc:
            raise ConversionError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        errors: list[tuple[int, str, ErrorCode]] = []
        for index, message in enumerate(messages):
            error = _validate(shallow, message, index, now_ms, log_append_time, compacted, timestamp_before_max_ms,
                              timestamp_after_max_ms, topic_partition)
            if error is not None:
                errors.append(error)
            elif not errors:
                timestamps.append(message.timestamp)
                out.append(Record(len(out), 0, message.key, message.value))
        if errors:
            _raise_record_errors(errors)
    base_timestamp = timestamps[0]
    for record, timestamp in zip(out, timestamps, strict=True):
        record.timestamp_delta = timestamp - base_timestamp
    batch = build_batch(out, base_timestamp=base_timestamp, max_timestamp=max(timestamps), compression=target)
    return UpConverted(batch, first_magic, len(out))


def _validate(shallow: legacy.LegacyMessage, message: legacy.LegacyMessage, index: int, now_ms: int,
              log_append_time: bool, compacted: bool, before_max_ms: int, after_max_ms: int,
              topic_partition: str) -> tuple[int, str, ErrorCode] | None:
    """LogValidator's checks of one record, in its order; a record error or None, CorruptRecord raised."""
    if shallow.compression and message.compression:
        return index, ("Compressed outer record should not have an inner record with a compression attribute "
                       "set"), ErrorCode.INVALID_RECORD
    if message.magic != shallow.magic:
        return index, (f"Record's magic does not match outer magic {shallow.magic} in topic partition "
                       f"{topic_partition}"), ErrorCode.INVALID_RECORD
    if shallow.compression and not message.crc_valid:
        raise ConversionError(ErrorCode.CORRUPT_MESSAGE, "Record is corrupt (inner message CRC mismatch) in "
                                                         f"topic partition {topic_partition}")
    if compacted and message.key is None:
        return index, (f"Compacted topic cannot accept message without key in topic partition "
                       f"{topic_partition}"), ErrorCode.INVALID_RECORD
    if not log_append_time and message.timestamp != NO_TIMESTAMP:
        diff = now_ms - message.timestamp
        if diff > before_max_ms or -diff > after_max_ms:
            return index, (f"Timestamp {message.timestamp} of message with offset {message.offset} is out of "
                           f"range. The timestamp should be within [{now_ms - before_max_ms}, "
                           f"{now_ms + after_max_ms}]"), ErrorCode.INVALID_TIMESTAMP
    elif shallow.timestamp_type == legacy.LOG_APPEND_TIME:
        return index, ("Invalid timestamp type in message. Producer should not set timestamp type to "
                       "LogAppendTime."), ErrorCode.INVALID_TIMESTAMP
    return None


def _raise_record_errors(errors: list[tuple[int, str, ErrorCode]]) -> None:
    record_errors = [(index, message) for index, message, _ in errors]
    if any(code == ErrorCode.INVALID_TIMESTAMP for _, _, code in errors):
        raise ConversionError(ErrorCode.INVALID_TIMESTAMP,
                              "One or more records have been rejected due to invalid timestamp", record_errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
    raise ConversionError(ErrorCode.INVALID_RECORD,
                          f"One or more records have been rejected due to {len(errors)} record errors in total, "
                          f"and only showing the first three errors at most: [{shown}]", record_errors)


# --- down ----------------------------------------------------------------------------------------------

MAX_READ_SIZE = 128 * 1024  # LazyDownConversionRecordsSend: stored bytes converted per chunk
MIN_OVERFLOW_MESSAGE_LENGTH = legacy.LOG_OVERHEAD


def down_convert(records: Buffer, spans: list[tuple[int, int]], to_magic: int, first_offset: int) -> bytes:
    """RecordsUtil.downConvert of the v2 batches at `spans` of `records` to `to_magic` (0 or 1)."""
    out = []
    view = memoryview(records)
    for start, end in spans:
        header = parse_batch_header(view, start)
        if header.is_control:
            continue
        if header.compression == COMPRESSION_ZSTD:
            raise UnsupportedCompressionError("Down-conversion of zstandard-compressed batches is not supported")
        compressed = header.compression != COMPRESSION_NONE
        messages = []
        for record in decode_records(view[start:end]):
            offset = header.base_offset + record.offset_delta
            # Uncompressed v0/v1 messages are single: the ones before the fetch offset are left out.
            if compressed or offset >= first_offset:
                messages.append((offset, record_timestamp(header, record), record.key, record.value))
        if messages:
            out.append(legacy.build_message_set(
                messages, to_magic, compression=header.compression, timestamp_type=header.timestamp_type,
                log_append_time=header.max_timestamp if header.timestamp_type else NO_TIMESTAMP))
    return b"".join(out)


def lazy_down_convert(records: Buffer, to_magic: int, first_offset: int) -> bytes:
    """The records of a Fetch v0-3 partition as Kafka 3.x sends them (KIP-283). `records` are stored v2
    batches (a partial one at the end is left out, as Kafka's file iterator does). Raises
    UnsupportedCompressionError when the first batch to convert is zstd."""
    spans = _whole_batches(records)
    # LazyDownConversionRecords: the size is fixed by the first batch that converts to something.
    first: bytes | None = None
    for start, end in spans:
        first = down_convert(records, [(start, end)], to_magic, first_offset) or None
        if first is not None:
            break
    if first is None:
        size = MIN_OVERFLOW_MESSAGE_LENGTH if spans else 0
        return _overflow_fill(size)
    size = max(len(records), len(first))
    out = bytearray()
    for converted in _chunks(records, spans, to_magic, first_offset, first):
        out += converted[:size - len(out)]
        if len(out) == size:
            return bytes(out)
    return bytes(out) + _overflow_fill(size - len(out))


def _whole_batches(records: Buffer) -> list[tuple[int, int]]:
    spans = []
    pos, n = 0, len(records)
    while n - pos >= LOG_OVERHEAD:
        end = pos + LOG_OVERHEAD + _INT32.unpack_from(records, pos + 8)[0]
        if end > n or end <= pos + LOG_OVERHEAD:
            break
        spans.append((pos, end))
        pos = end
    return spans


def _chunks(records: Buffer, spans: list[tuple[int, int]], to_magic: int, first_offset: int,
            first: bytes) -> Iterator[bytes]:
    """LazyDownConversionRecordsSend's iterator: the first converted batch, then chunks of up to
    MAX_READ_SIZE stored bytes from the second stored batch on (Kafka skips exactly one stored batch after
    its cached first conversion); a zstd batch ends the conversion (the rest is overflow)."""
    yield first
    i = 1
    while i < len(spans):
        chunk = [spans[i]]
        size = spans[i][1] - spans[i][0]
        i += 1
        while i < len(spans) and size + spans[i][1] - spans[i][0] <= MAX_READ_SIZE:
            chunk.append(spans[i])
            size += spans[i][1] - spans[i][0]
            i += 1
        try:
            converted = down_convert(records, chunk, to_magic, first_offset)
        except UnsupportedCompressionError:
            return
        if converted:
            yield converted


def _overflow_fill(remaining: int) -> bytes:
    """What LazyDownConversionRecordsSend writes when converted data ends before the promised size: entries
    with offset -1 whose length runs past the response, which consumers drop as a partial message."""
    out = bytearray()
    while remaining > 0:
        chunk = bytearray(max(MIN_OVERFLOW_MESSAGE_LENGTH, min(remaining + 1, MAX_READ_SIZE)))
        chunk[:12] = (-1).to_bytes(8, "big", signed=True) + max(remaining + 1, BATCH_HEADER_SIZE).to_bytes(4, "big")
        take = chunk[:remaining]
        out += take
        remaining -= len(take)
    return bytes(out)


def compression_name(codec: int) -> str:
    return COMPRESSION_NAMES.get(codec, str(codec))
