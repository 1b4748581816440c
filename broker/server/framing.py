"""Kafka's framing: a 4-byte size, then the request (header and body); a response is its size, its header
(the correlation id, and from header v1 empty tagged fields) and its body. One parser for both read loops
of a connection (plain sockets and TLS)."""

from __future__ import annotations

import struct

SIZE = struct.Struct(">i")
_CORRELATION_V0 = struct.Struct(">i")
_CORRELATION_V1 = struct.Struct(">ib")  # correlation id + empty tagged fields


class FrameTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"frame of {size} bytes")
        self.size = size


def frame_size(buf: bytearray, max_frame: int) -> int | None:
    """The size of the frame at the head of `buf` (None: fewer than 4 bytes yet); FrameTooLarge beyond
    `max_frame` (or negative)."""
    if len(buf) < 4:
        return None
    (size,) = SIZE.unpack_from(buf)
    if size < 0 or size > max_frame:
        raise FrameTooLarge(size)
    return size


def take_frame(buf: bytearray, size: int) -> bytes:
    """The whole frame of `size` bytes at the head of `buf`, removed from it."""
    with memoryview(buf) as view:
        frame = bytes(view[4:4 + size])
    del buf[:4 + size]
    return frame


def frame_response(correlation_id: int, header_version: int, body: bytes) -> bytes:
    header = _CORRELATION_V0.pack(correlation_id) if header_version == 0 else \
        _CORRELATION_V1.pack(correlation_id, 0)
    return SIZE.pack(len(header) + len(body)) + header + body
