"""Producer-id block arithmetic (pure): which block comes next, and its JSON form in ZooKeeper.

Kafka's ZK-mode ProducerIdManager hands each broker blocks of 1000 ids recorded in the znode
`/latest_producer_id_block` as `{"version":1,"broker":ID,"block_start":"N","block_end":"M"}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

BLOCK_SIZE = 1000
INT64_MAX = 2**63 - 1
ZNODE_PATH = "/latest_producer_id_block"


class ProducerIdsExhaustedError(RuntimeError):
    """The next block would pass INT64 max: no producer id can ever be handed out again."""


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """A block of producer ids a broker claimed: `size` ids from `first`."""

    broker_id: int
    first: int
    size: int = BLOCK_SIZE

    @property
    def last(self) -> int:
        return self.first + self.size - 1


def next_block(current: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
    """The block after `current` (the first block, 0-999, when there is none)."""
    if current is None:
        return ProducerIdBlock(broker_id, 0)
    if current.last > INT64_MAX - BLOCK_SIZE:
        raise ProducerIdsExhaustedError(
            f"Have exhausted all producerIds: the block after {current.first}-{current.last} would end past "
            f"{INT64_MAX}")
    return ProducerIdBlock(broker_id, current.last + 1)


def encode_block(block: ProducerIdBlock) -> bytes:
    return json.dumps({"version": 1, "broker": block.broker_id, "block_start": str(block.first),
                       "block_end": str(block.last)}, separators=(",", ":")).encode()


def decode_block(data: bytes) -> ProducerIdBlock | None:
    """Parse the znode's data; None for an empty znode (created but never written)."""
    if not data:
        return None
    try:
        obj = json.loads(data)
        first, last = int(obj["block_start"]), int(obj["block_end"])
        broker = int(obj["broker"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"unreadable producer id block {data!r}: {exc}") from None
    if obj.get("version") != 1 or last < first:
        raise ValueError(f"unsupported producer id block {data!r}")
    return ProducerIdBlock(broker, first, last - first + 1)
