"""Hand-written readers and writers for the hot codecs (Produce, Fetch), classic and compact.

They produce exactly the bytes of the construct specs in protocol.schema (tests compare them), several
times faster; anything unusual (non-default tagged fields) is left to the construct spec.
"""

from __future__ import annotations

import struct
import uuid

from protocol.errors import DecodeError, DecodeLimits

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")


class Reader:
    __slots__ = ("data", "pos", "end", "limits")

    def __init__(self, data: bytes, pos: int = 0, limits: DecodeLimits | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data)
        self.limits = limits

    def _take(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise DecodeError(f"needs {n} bytes at offset {pos}, {self.end - pos} left")
        self.pos = pos + n
        return pos

    def i8(self) -> int:
        return I8.unpack_from(self.data, self._take(1))[0]

    def i16(self) -> int:
        return I16.unpack_from(self.data, self._take(2))[0]

    def i32(self) -> int:
        return I32.unpack_from(self.data, self._take(4))[0]

    def i64(self) -> int:
        return I64.unpack_from(self.data, self._take(8))[0]

    def uuid(self) -> uuid.UUID:
        pos = self._take(16)
        return uuid.UUID(bytes=bytes(self.data[pos:pos + 16]))

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.data[self._take(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise DecodeError("unsigned varint longer than 5 bytes")

    def length(self, compact: bool, wide: bool) -> int:
        if compact:
            return self.uvarint() - 1
        return self.i32() if wide else self.i16()

    def string(self, compact: bool, nullable: bool) -> str | None:
        n = self.length(compact, False)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise DecodeError(f"invalid string length {n}")
        pos = self._take(n)
        try:
            return bytes(self.data[pos:pos + n]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"invalid UTF-8: {exc}") from None

    def bytes(self, compact: bool, nullable: bool) -> bytes | None:
        n = self.length(compact, True)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise DecodeError(f"invalid bytes length {n}")
        pos = self._take(n)
        return bytes(memoryview(self.data)[pos:pos + n])  # one copy, from bytes or a bytearray frame

    def count(self, compact: bool, nullable: bool = False) -> int:
        n = self.length(compact, True)
        if n < -1 or (n == -1 and not nullable):
            raise DecodeError(f"invalid array length {n}")
        if n > self.end - self.pos:
            raise DecodeError(f"array of {n} elements exceeds the remaining bytes")
        if self.limits is not None:
            self.limits.check_collection(n)
        return n

    def tag_count(self) -> int:
        """The number of fields of a tagged-field section."""
        n = self.uvarint()
        if n > self.end - self.pos:  # two bytes each at least
            raise DecodeError(f"{n} tagged fields, but only {self.end - self.pos} bytes remain")
        if self.limits is not None:
            self.limits.check_tagged_fields(n)
        return n

    def skip_tags(self) -> None:
        for _ in range(self.tag_count()):
            self.uvarint()
            self._take(self.uvarint())


def uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(value: str | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else b"\xff\xff"
    data = value.encode("utf-8")
    return (uvarint(len(data) + 1) if compact else I16.pack(len(data))) + data


def bytes_(value: bytes | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    return (uvarint(len(value) + 1) if compact else I32.pack(len(value))) + value


def count(n: int | None, compact: bool) -> bytes:
    if n is None:
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    return uvarint(n + 1) if compact else I32.pack(n)
