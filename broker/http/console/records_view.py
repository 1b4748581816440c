"""Records as the messages page shows them: key, value and headers as text, JSON pretty-printed, bytes as hex,
or decoded through the schema registry when they start with Confluent's magic byte and a schema id it knows;
control batches (transaction markers) shown as markers, and records of aborted transactions marked as a
read_committed consumer would skip them (Kafka's consumer: a transactional batch is aborted when its producer
has an aborted transaction, from the Fetch answer's list, that started at or before the batch's last offset and
whose abort marker has not been reached yet). Pure functions of the Fetch answer.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from protocol import records as wire

FORMATS = ("auto", "text", "json", "hex")
MAX_SHOWN_BYTES = 64 * 1024  # a longer key or value is cut (with a note) so that one record cannot swamp a page


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as shown: its text, and how it was read ("text", "json", "hex", "null",
    "avro", "protobuf", "json-schema")."""

    text: str
    format: str
    note: str = ""  # the schema's subject and id, a cut


class SchemaDecoder(Protocol):
    def decode(self, data: bytes) -> Shown | None:
        """The payload decoded with the schema its Confluent header names; None when it has none known."""
        ...


@dataclass
class ShownRecord:
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime, LogAppendTime
    key: Shown
    value: Shown
    headers: list[tuple[str, Shown]] = field(default_factory=list)
    producer_id: int = -1
    transactional: bool = False
    aborted: bool = False  # a record of an aborted transaction
    open_transaction: bool = False  # past the last stable offset: its transaction is not decided yet
    marker: str | None = None  # "COMMIT" or "ABORT" for a control record

    @property
    def time(self) -> str:
        return format_ms(self.timestamp)


def format_ms(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def show(data: bytes | None, wanted: str = "auto", decoder: SchemaDecoder | None = None) -> Shown:
    """One key, value or header value, in the format asked for ("auto": the schema registry's decoding, else
    JSON, else text, else hex)."""
    if data is None:
        return Shown("null", "null")
    note = ""
    if len(data) > MAX_SHOWN_BYTES:
        note = f"first {MAX_SHOWN_BYTES} of {len(data)} bytes"
        data = data[:MAX_SHOWN_BYTES]
    if wanted == "hex":
        return Shown(hex_dump(data), "hex", note)
    if wanted == "auto" and decoder is not None:
        decoded = decoder.decode(data)
        if decoded is not None:
            return decoded
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Shown(hex_dump(data), "hex", note or "not UTF-8")
    if wanted in ("auto", "json"):
        try:
            return Shown(json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json", note)
        except ValueError:
            if wanted == "json":
                return Shown(text, "text", "not JSON")
    if wanted == "auto" and not _printable(text):
        return Shown(hex_dump(data), "hex", note)
    return Shown(text, "text", note)


def _printable(text: str) -> bool:
    return all(c.isprintable() or c in "\n\r\t" for c in text)


def hex_dump(data: bytes) -> str:
    """16 bytes a line: offset, hex, and the printable ASCII."""
    lines = []
    for start in range(0, len(data), 16):
        chunk = data[start:start + 16]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{start:08x}  {chunk.hex(' '):<47}  {ascii_}")
    return "\n".join(lines) or "(empty)"


def shown_records(data: bytes, aborted: Iterable[tuple[int, int]], last_stable_offset: int, *, start: int = 0,
                  limit: int = 100, wanted: str = "auto", decoder: SchemaDecoder | None = None) -> list[ShownRecord]:
    """The records of a Fetch answer's record set from offset `start` on (at most `limit`), control records
    included as markers. `aborted`: the answer's (producer id, first offset) of aborted transactions."""
    pending = sorted(aborted, key=lambda a: a[1])  # not yet reached, by first offset
    aborting: set[int] = set()  # producers whose aborted transaction the batches are in
    out: list[ShownRecord] = []
    for header, pos, end in _whole_batches(data):
        if len(out) >= limit:
            break
        batch = memoryview(data)[pos:end]
        aborted_batch = False
        if header.is_transactional:
            while pending and pending[0][1] <= header.last_offset:
                aborting.add(pending.pop(0)[0])
            aborted_batch = header.producer_id in aborting and not header.is_control
        try:
            records = wire.decode_records(batch)
        except wire.CorruptRecordError:
            continue
        for record in records:
            offset = header.base_offset + record.offset_delta
            if offset < start:
                continue
            if len(out) >= limit:
                break
            shown = ShownRecord(offset, wire.record_timestamp(header, record),
                                "LogAppendTime" if header.timestamp_type else "CreateTime",
                                show(record.key, wanted, decoder), show(record.value, wanted, decoder),
                                [(name, show(value, wanted, decoder)) for name, value in record.headers],
                                header.producer_id, header.is_transactional, aborted_batch,
                                header.is_transactional and offset >= last_stable_offset >= 0)
            if header.is_control:
                kind, _epoch = wire.parse_control_record(record)
                shown.marker = "COMMIT" if kind == wire.CONTROL_COMMIT else "ABORT" if kind == wire.CONTROL_ABORT \
                    else f"control {kind}"
                if kind == wire.CONTROL_ABORT:
                    aborting.discard(header.producer_id)
            out.append(shown)
    return out


def _whole_batches(data: bytes) -> Iterable[tuple[wire.BatchHeader, int, int]]:
    """The v2 batches of a Fetch answer, up to the one its size limit cut (or an unreadable one)."""
    try:
        yield from wire.iter_batches(data)
    except wire.CorruptRecordError:
        return


def next_offset(data: bytes) -> int | None:
    """The offset after the last whole batch of a Fetch answer's records (None: no whole batch)."""
    last = None
    for header, _pos, _end in _whole_batches(data):
        last = header.last_offset + 1
    return last
