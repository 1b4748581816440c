"""The producer-id manager over the embedded store: ids in order, the next block claimed ahead."""

from __future__ import annotations

import trio
import trio.testing

from zk.pid_blocks import decode_block
from zk.producer_id_manager import ProducerIdManager
from zk.store import LocalBlockStore


def test_ids_in_order_and_next_block_prefetched(tmp_path) -> None:
    path = tmp_path / "producer_id_block.json"

    async def main() -> None:
        manager = ProducerIdManager(LocalBlockStore(path), 0)
        ids = [await manager.generate() for _ in range(899)]
        assert ids == list(range(899))
        assert decode_block(path.read_bytes()).first == 0
        await manager.generate()  # the 900th id: 90% used, the next block is claimed in the background
        await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(10):
            while decode_block(path.read_bytes()).first != 1000:
                await trio.sleep(0.01)
        rest = [await manager.generate() for _ in range(1100)]
        assert rest == list(range(900, 2000))

    trio.run(main)


def test_concurrent_callers_share_one_claim(tmp_path) -> None:
    path = tmp_path / "producer_id_block.json"

    async def main() -> None:
        manager = ProducerIdManager(LocalBlockStore(path), 0)
        got: list[int] = []

        async def take() -> None:
            got.append(await manager.generate())

        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(take)
        assert sorted(got) == list(range(50))

    trio.run(main)
