"""The topics of a ConsumerProtocolSubscription (the member metadata of groups of protocol type "consumer").

The coordinator reads them to know which topics a group consumes: OffsetDelete refuses those
(GROUP_SUBSCRIBED_TO_TOPIC) and offset expiry keeps them. Every version (0-3) starts with the same
fields: int16 version, then an int32-counted array of int16-length topic names.
"""

from __future__ import annotations

import struct

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class SubscriptionError(ValueError):
    pass


def subscription_topics(metadata: bytes) -> list[str]:
    try:
        (version,) = _INT16.unpack_from(metadata, 0)
        if version < 0:
            raise SubscriptionError(f"unknown subscription version {version}")
        (count,) = _INT32.unpack_from(metadata, 2)
        if count < 0 or count > len(metadata):
            raise SubscriptionError(f"invalid topic count {count}")
        pos = 6
        topics = []
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, pos)
            pos += 2
            if size < 0 or pos + size > len(metadata):
                raise SubscriptionError("invalid topic name length")
            topics.append(metadata[pos:pos + size].decode())
            pos += size
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise SubscriptionError(f"malformed subscription: {exc}") from None
