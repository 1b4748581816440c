"""The broker's producer-id generator: hands out ids from the current block, claims the next block
ahead of time in a worker thread, and says when no id can be had (ZooKeeper unreachable)."""

from __future__ import annotations

import logging

import trio

from zk.pid_blocks import ProducerIdBlock, ProducerIdsExhaustedError
from zk.store import BlockStore

log = logging.getLogger(__name__)

PREFETCH_AT = 0.9  # claim the next block once 90% of the current one is used, as Kafka does


class ProducerIdUnavailableError(Exception):
    """No block could be claimed right now; retriable (COORDINATOR_LOAD_IN_PROGRESS)."""


class ProducerIdManager:
    def __init__(self, store: BlockStore, broker_id: int, *, claim_timeout: float = 10.0) -> None:
        self.store = store
        self.broker_id = broker_id
        self.claim_timeout = claim_timeout
        self._block: ProducerIdBlock | None = None
        self._next_id = 0
        self._prefetched: ProducerIdBlock | None = None
        self._lock = trio.Lock()  # one claim at a time
        self._prefetching = False
        self.fatal: Exception | None = None

    async def generate(self) -> int:
        """Next producer id; raises ProducerIdUnavailableError when no block can be claimed now."""
        if self.fatal is not None:
            raise self.fatal
        if self._block is None or self._next_id > self._block.last:
            if self._prefetched is not None:
                self._install(self._prefetched)
                self._prefetched = None
            else:
                async with self._lock:
                    if self._block is None or self._next_id > self._block.last:
                        if self._prefetched is not None:
                            self._install(self._prefetched)
                            self._prefetched = None
                        else:
                            self._install(await self._claim())
        pid = self._next_id
        self._next_id += 1
        assert self._block is not None
        used = (self._next_id - self._block.first) / self._block.size
        if used >= PREFETCH_AT and self._prefetched is None and not self._prefetching:
            self._prefetching = True
            trio.lowlevel.spawn_system_task(self._prefetch)
        return pid

    def _install(self, block: ProducerIdBlock) -> None:
        self._block = block
        self._next_id = block.first

    async def _prefetch(self) -> None:
        try:
            async with self._lock:
                if self._prefetched is None:
                    self._prefetched = await self._claim()
        except ProducerIdUnavailableError as exc:
            log.warning("could not claim the next producer id block ahead of time: %s", exc)
        except Exception:
            log.exception("claiming the next producer id block failed")
        finally:
            self._prefetching = False

    async def _claim(self) -> ProducerIdBlock:
        try:
            with trio.fail_after(self.claim_timeout):
                # abandon_on_cancel: kazoo's call may hang while ZooKeeper is away; let the waiter go.
                return await trio.to_thread.run_sync(self.store.claim_next_block, self.broker_id,
                                                     abandon_on_cancel=True)
        except ProducerIdsExhaustedError as exc:
            log.critical("%s", exc)
            self.fatal = exc
            raise
        except trio.TooSlowError:
            raise ProducerIdUnavailableError("timed out claiming a producer id block") from None
        except Exception as exc:
            raise ProducerIdUnavailableError(f"claiming a producer id block failed: {exc}") from exc
