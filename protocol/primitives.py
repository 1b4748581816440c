"""Kafka's wire types as construct objects.

Fixed-size integers are construct's own; strings, bytes, arrays and structs are small Construct classes
because their length prefix changes with the message version (INT16/INT32 classic, unsigned varint + 1
compact) and -1 / 0 means null. A `KafkaStruct` holds its tagged-field section (KIP-482) itself, so tagged
fields appear as ordinary fields of the decoded Container.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from construct import (
    Construct,
    Container,
    ExplicitError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    ListContainer,
    StreamError,
    stream_read,
)

from protocol.errors import DecodeLimits

INT8 = Int8sb
INT16 = Int16sb
INT32 = Int32sb
INT64 = Int64sb
UINT16 = Int16ub
UINT32 = Int32ub
FLOAT64 = Float64b
BOOLEAN = Flag
ZERO_UUID = uuid.UUID(int=0)


class EncodeError(ExplicitError):
    """A value cannot be written in the requested version (null where not nullable, out of range)."""


def _remaining(stream: Any) -> int:
    if isinstance(stream, io.BytesIO):
        return stream.getbuffer().nbytes - stream.tell()
    return 1 << 62


class UnsignedVarInt(Construct):
    """Unsigned LEB128, at most 5 bytes (Kafka's ByteUtils.readUnsignedVarint)."""

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        for shift in range(0, 35, 7):
            (byte,) = stream_read(stream, 1, path)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise StreamError("unsigned varint longer than 5 bytes", path=path)

    def _build(self, obj: int, stream: Any, context: Any, path: str) -> int:
        stream.write(encode_uvarint(obj))
        return obj


def encode_uvarint(value: int) -> bytes:
    if not 0 <= value <= 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


UNSIGNED_VARINT = UnsignedVarInt()


def _read_length(stream: Any, compact: bool, wide: bool, path: str) -> int:
    """Length or count; -1 means null."""
    if compact:
        return UNSIGNED_VARINT._parsereport(stream, None, path) - 1
    return (INT32 if wide else INT16)._parsereport(stream, None, path)


def _write_length(stream: Any, n: int, compact: bool, wide: bool, path: str) -> None:
    if compact:
        stream.write(encode_uvarint(n + 1))
    else:
        (INT32 if wide else INT16)._build(n, stream, None, path)


class KafkaBytesLike(Construct):
    """STRING / COMPACT_STRING / BYTES / COMPACT_BYTES / RECORDS, optionally nullable."""

    def __init__(self, *, text: bool, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.text = text
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = _read_length(stream, self.compact, not self.text, path)
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise StreamError(f"invalid length {n}", path=path)
        if n > _remaining(stream):
            raise StreamError(f"length {n} exceeds the remaining bytes", path=path)
        data = stream_read(stream, n, path)
        if self.text:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise StreamError(f"invalid UTF-8: {exc}", path=path) from None
        return data

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            if not self.nullable:
                raise EncodeError(f"null is not allowed for {path}", path=path)
            _write_length(stream, -1, self.compact, not self.text, path)
            return obj
        data = obj.encode("utf-8") if self.text else bytes(obj)
        if self.text and not self.compact and len(data) > 0x7FFF:
            raise EncodeError(f"string of {len(data)} bytes is too long", path=path)
        _write_length(stream, len(data), self.compact, not self.text, path)
        stream.write(data)
        return obj


def string(*, compact: bool, nullable: bool) -> KafkaBytesLike:
    return KafkaBytesLike(text=True, compact=compact, nullable=nullable)


def bytes_(*, compact: bool, nullable: bool) -> KafkaBytesLike:
    return KafkaBytesLike(text=False, compact=compact, nullable=nullable)


class UuidType(Construct):
    def _parse(self, stream: Any, context: Any, path: str) -> uuid.UUID:
        return uuid.UUID(bytes=stream_read(stream, 16, path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        value = ZERO_UUID if obj is None else obj if isinstance(obj, uuid.UUID) else uuid.UUID(bytes=bytes(obj))
        stream.write(value.bytes)
        return obj


UUID = UuidType()


class KafkaArray(Construct):
    """ARRAY / COMPACT_ARRAY of one element type, optionally nullable."""

    def __init__(self, element: Construct, *, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = _read_length(stream, self.compact, True, path)
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise StreamError(f"invalid array length {n}", path=path)
        if n > _remaining(stream):  # every element takes at least one byte: reject absurd counts early
            raise StreamError(f"array of {n} elements exceeds the remaining bytes", path=path)
        if isinstance(context, DecodeLimits) and n > context.max_collection:  # given to the decoder
            raise StreamError(f"a collection of {n} elements exceeds the maximum allowed size of "
                              f"{context.max_collection}", path=path)
        parse = self.element._parsereport
        return ListContainer(parse(stream, context, path) for _ in range(n))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            if not self.nullable:
                raise EncodeError(f"null is not allowed for {path}", path=path)
            _write_length(stream, -1, self.compact, True, path)
            return obj
        _write_length(stream, len(obj), self.compact, True, path)
        build = self.element._build
        for item in obj:
            build(item, stream, context, path)
        return obj


class Field:
    """One field of a struct in one version: its construct and how to make its default value."""

    __slots__ = ("name", "con", "default", "tag")

    def __init__(self, name: str, con: Construct | None, default: Callable[[], Any], tag: int | None = None) -> None:
        self.name = name
        self.con = con
        self.default = default
        self.tag = tag


# A tagged field's null: the unsigned varint 0 of a compact string, bytes or array, and the marker of a struct.
TAGGED_NULL = b"\x00"


class KafkaStruct(Construct):
    """A struct of one version: regular fields in order, then (flexible versions) the tagged fields.

    `absent` lists fields of other versions; decoding fills them with their defaults so handlers can
    read any field of any version. Encoding takes a mapping, uses defaults for missing keys and ignores
    keys this version does not have.
    """

    def __init__(self, fields: list[Field], tagged: list[Field] | None, absent: list[Field]) -> None:
        super().__init__()
        self.fields = fields
        self.tagged = sorted(tagged, key=lambda f: f.tag) if tagged is not None else None
        self.by_tag = {f.tag: f for f in self.tagged or ()}
        self.absent = absent

    def _parse(self, stream: Any, context: Any, path: str) -> Container:
        obj = Container()
        for f in self.fields:
            obj[f.name] = f.con._parsereport(stream, context, path)
        if self.tagged is not None:
            for f in self.tagged:
                obj[f.name] = f.default()
            count = UNSIGNED_VARINT._parsereport(stream, context, path)
            if count > _remaining(stream):  # two bytes each at least
                raise StreamError(f"{count} tagged fields exceed the remaining bytes", path=path)
            if isinstance(context, DecodeLimits) and count > context.max_tagged_fields:
                raise StreamError(f"{count} tagged fields exceed the maximum allowed count of "
                                  f"{context.max_tagged_fields}", path=path)
            for _ in range(count):
                tag = UNSIGNED_VARINT._parsereport(stream, context, path)
                size = UNSIGNED_VARINT._parsereport(stream, context, path)
                if size > _remaining(stream):
                    raise StreamError(f"tagged field of {size} bytes exceeds the remaining bytes", path=path)
                data = stream_read(stream, size, path)
                f = self.by_tag.get(tag)
                if f is not None:  # unknown tags are skipped, as Kafka does
                    obj[f.name] = f.con._parsereport(io.BytesIO(data), context, path)
        for f in self.absent:
            obj[f.name] = f.default()
        return obj

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if not isinstance(obj, Mapping):
            raise EncodeError(f"expected a mapping for a struct, got {type(obj).__name__}", path=path)
        for f in self.fields:
            value = obj[f.name] if f.name in obj else f.default()
            f.con._build(value, stream, context, f"{path} -> {f.name}")
        if self.tagged is not None:
            present = []
            for f in self.tagged:
                if f.name in obj:
                    value = obj[f.name]
                    # A null is written when the field does not default to null (Kafka's generated writers).
                    if (value is None and f.default() is not None) or (value is not None and value != f.default()):
                        present.append((f, value))
            stream.write(encode_uvarint(len(present)))
            for f, value in present:
                data = TAGGED_NULL if value is None else f.con.build(value)
                stream.write(encode_uvarint(f.tag) + encode_uvarint(len(data)) + data)
        return obj
