"""Producer ids for InitProducerId: the block manager (ZooKeeper or the local store) with its failures as
the error codes InitProducerId answers."""

from __future__ import annotations

import logging

from protocol.header import ErrorCode
from zk.pid_blocks import ProducerIdsExhaustedError
from zk.producer_id_manager import ProducerIdManager, ProducerIdUnavailableError
from zk.store import BlockStore

log = logging.getLogger(__name__)


class ProducerIds:
    def __init__(self, store: BlockStore, broker_id: int, claim_timeout: float) -> None:
        self.manager = ProducerIdManager(store, broker_id, claim_timeout=claim_timeout)

    async def new_id(self) -> tuple[ErrorCode, int]:
        """A fresh producer id from the current block, or the error InitProducerId answers without one."""
        try:
            return ErrorCode.NONE, await self.manager.generate()
        except ProducerIdUnavailableError as exc:
            log.warning("no producer id available: %s", exc)
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1  # retriable: ZooKeeper is back soon
        except ProducerIdsExhaustedError:
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1
