"""Kafka's generated-message encoding for the internal topics' keys and values.

A bounds-checked Reader and a Writer with the checked helpers the encoders share.

`__consumer_offsets` (protocol.group_records) and `__transaction_state` (protocol.txn_records) store keys and
values the way Kafka's message generator (MessageDataGenerator) serializes its JSON-defined messages: an int16
version, then the fields in order. Classic versions use int16-length strings, int32-length bytes and
int32-count arrays, -1 meaning null. Flexible versions use an unsigned varint holding length + 1 (0 = null)
and end every struct with a tagged-field section: a varint count, then per field a varint tag, a varint size
and the payload. Kafka rejects strings over 32767 UTF-8 bytes on both read and write, even in compact form.

Reader and Writer take the exception class to raise, so that each record module raises only its own error
type (GroupRecordError, TxnRecordError) for truncated or malformed data and for values it cannot encode.
Whether a struct is flexible is the caller's call: it sets `flexible` once it knows the version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

Buffer = bytes | bytearray | memoryview

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")

MAX_STRING_BYTES = 0x7FFF  # Kafka rejects longer strings on both read and write, even in compact form
_MAX_JAVA_INT = 0x7FFFFFFF


class Reader:
    """Cursor over one key or value; every read checks bounds so garbage raises only `error`."""

    __slots__ = ("_data", "_error", "_pos", "flexible")

    def __init__(self, data: Buffer, error: type[ValueError]) -> None:
        self._data = memoryview(data).cast("B")
        self._error = error
        self._pos = 0
        self.flexible = False

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def take(self, n: int, what: str) -> memoryview:
        if n > self.remaining:
            raise self._error(f"truncated: {what} needs {n} bytes, {self.remaining} left")
        view = self._data[self._pos : self._pos + n]
        self._pos += n
        return view

    def fixed(self, st: struct.Struct, what: str) -> tuple[int, ...]:
        if st.size > self.remaining:
            raise self._error(f"truncated: {what} needs {st.size} bytes, {self.remaining} left")
        values = st.unpack_from(self._data, self._pos)
        self._pos += st.size
        return values

    def int16(self, what: str) -> int:
        return self.fixed(INT16, what)[0]

    def int32(self, what: str) -> int:
        return self.fixed(INT32, what)[0]

    def int64(self, what: str) -> int:
        return self.fixed(INT64, what)[0]

    def int32s(self, count: int, what: str) -> tuple[int, ...]:
        if 4 * count > self.remaining:
            raise self._error(f"truncated: {what} needs {4 * count} bytes, {self.remaining} left")
        values = struct.unpack_from(f">{count}i", self._data, self._pos)
        self._pos += 4 * count
        return values

    def uvarint(self, what: str) -> int:
        """Unsigned LEB128 of at most 5 bytes holding a uint32, as Kafka's ByteUtils.readUnsignedVarint."""
        value = 0
        for shift in range(0, 35, 7):
            if self._pos >= len(self._data):
                raise self._error(f"truncated: varint {what}")
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0xFFFFFFFF:
                    raise self._error(f"varint {what} exceeds 32 bits")
                return value
        raise self._error(f"varint {what} is longer than 5 bytes")

    def int_varint(self, what: str) -> int:
        """A varint Kafka reads into a Java int: past 2^31 - 1 it would be negative, i.e. nonsense."""
        value = self.uvarint(what)
        if value > _MAX_JAVA_INT:
            raise self._error(f"{what} has invalid value {value}")
        return value

    def _length(self, classic: struct.Struct, what: str) -> int:
        """Length prefix; negative means null. Compact lengths are stored + 1, so 0 is null."""
        if self.flexible:
            stored = self.uvarint(what)
            # Java reads the varint into an int: anything past 2^31 - 1 is nonsense either way.
            if stored > _MAX_JAVA_INT:
                raise self._error(f"{what} has invalid length {stored - 1}")
            return stored - 1
        return self.fixed(classic, what)[0]

    def nullable_string(self, what: str) -> str | None:
        length = self._length(INT16, what)
        if length < 0:
            return None
        if length > MAX_STRING_BYTES:
            raise self._error(f"string field {what} had invalid length {length}")
        raw = self.take(length, what)
        try:
            # Java would substitute U+FFFD for bad UTF-8; a Java-written record never has any, so garbage it is.
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise self._error(f"field {what} is not valid UTF-8: {exc}") from None

    def string(self, what: str) -> str:
        value = self.nullable_string(what)
        if value is None:
            raise self._error(f"non-nullable field {what} was serialized as null")
        return value

    def bytes_(self, what: str) -> bytes:
        length = self._length(INT32, what)
        if length < 0:
            raise self._error(f"non-nullable field {what} was serialized as null")
        return bytes(self.take(length, what))

    def nullable_array_count(self, what: str) -> int | None:
        count = self._length(INT32, what)
        if count < 0:
            return None
        # Kafka's check: every element takes at least one byte, so a bigger count cannot be honest.
        if count > self.remaining:
            raise self._error(f"{what} claims {count} elements, only {self.remaining} bytes left")
        return count

    def array_count(self, what: str) -> int:
        count = self.nullable_array_count(what)
        if count is None:
            raise self._error(f"non-nullable field {what} was serialized as null")
        return count

    def tagged_fields(self, what: str) -> dict[int, memoryview]:
        """A flexible struct's tagged-field section as {tag: payload}; the caller picks the tags it knows.

        Count, tags and sizes must fit a Java int. The last occurrence of a repeated tag wins.
        """
        if not self.flexible:
            return {}
        fields: dict[int, memoryview] = {}
        for _ in range(self.int_varint(f"{what} tagged field count")):
            tag = self.int_varint(f"{what} tag")
            size = self.int_varint(f"{what} tagged field size")
            fields[tag] = self.take(size, f"{what} tagged field {tag}")
        return fields

    def skip_tagged_fields(self, what: str) -> None:
        """A flexible struct's tagged-field section when no tags are defined for it: every tag is skipped.

        Count, tags and sizes are read as the uint32 varints they are; a count or size no data can honour
        still ends in a truncation error.
        """
        if not self.flexible:
            return
        for _ in range(self.uvarint(f"{what} tagged field count")):
            self.uvarint(f"{what} tag")
            size = self.uvarint(f"{what} tagged field size")
            self.take(size, f"{what} tagged field")


class Writer:
    """Builds one key or value; a value the encoding cannot represent raises only `error`."""

    __slots__ = ("_error", "_out", "flexible")

    def __init__(self, error: type[ValueError], *, flexible: bool = False) -> None:
        self._error = error
        self._out = bytearray()
        self.flexible = flexible

    def getvalue(self) -> bytes:
        return bytes(self._out)

    def pack(self, st: struct.Struct, *values: int) -> bytes:
        """st.pack, out-of-range integers raising `error`."""
        try:
            return st.pack(*values)
        except struct.error as exc:
            raise self._error(f"integer out of range: {values}: {exc}") from None

    def fixed(self, st: struct.Struct, *values: int) -> None:
        self._out += self.pack(st, *values)

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self._out.append(value & 0x7F | 0x80)
            value >>= 7
        self._out.append(value)

    def _length(self, classic: struct.Struct, length: int | None) -> None:
        """Length prefix, None writing null: int16/int32 (classic, -1) or varint length + 1 (compact, 0)."""
        if self.flexible:
            self.uvarint(0 if length is None else length + 1)
        else:
            self.fixed(classic, -1 if length is None else length)

    def nullable_string(self, value: str | None, name: str) -> None:
        if value is None:
            self._length(INT16, None)
            return
        try:
            data = value.encode("utf-8")
        except (UnicodeEncodeError, AttributeError) as exc:
            raise self._error(f"field {name} is not encodable as UTF-8: {exc}") from None
        if len(data) > MAX_STRING_BYTES:
            raise self._error(f"field {name} is too long to be serialized ({len(data)} bytes)")
        self._length(INT16, len(data))
        self._out += data

    def string(self, value: str, name: str) -> None:
        if value is None:
            raise self._error(f"non-nullable field {name} is None")
        self.nullable_string(value, name)

    def bytes_(self, value: bytes, name: str) -> None:
        """Non-nullable bytes."""
        if value is None:
            raise self._error(f"non-nullable field {name} is None")
        self._length(INT32, len(value))
        self._out += value

    def array_length(self, count: int | None) -> None:
        """Array element count; None writes a null array."""
        self._length(INT32, count)

    def tagged_fields(self, fields: Sequence[tuple[int, bytes]]) -> None:
        """A flexible struct's tagged-field section, fields as (tag, payload) in ascending tag order.

        Classic versions have no such section: nothing is written, and a field there raises `error`.
        """
        if not self.flexible:
            if fields:
                raise self._error(f"tagged fields {[tag for tag, _ in fields]} need a flexible version")
            return
        self.uvarint(len(fields))
        for tag, payload in fields:
            self.uvarint(tag)
            self.uvarint(len(payload))
            self._out += payload
