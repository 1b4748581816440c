"""Producer-id blocks through a real ZooKeeper: racing allocators, the znode format, and a broker that
keeps working through a ZooKeeper outage."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from broker.testing import BrokerProcess
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient, idempotent_batch
from tests.zookeeper_server import ZooKeeperServer, available

COORDINATOR_LOAD_IN_PROGRESS = 14

_ALLOCATOR = """
import sys, time
from zk.store import ZooKeeperBlockStore
store = ZooKeeperBlockStore(sys.argv[1], timeout=10)
blocks = [store.claim_next_block(int(sys.argv[2])) for _ in range(int(sys.argv[3]))]
store.close()
print(" ".join(f"{b.first}-{b.last}" for b in blocks))
"""


def _run_allocators(address: str, processes: int, claims: int) -> list[tuple[int, int]]:
    procs = [subprocess.Popen([sys.executable, "-c", _ALLOCATOR, address, str(i), str(claims)],
                              stdout=subprocess.PIPE, text=True) for i in range(processes)]
    blocks = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        blocks += [tuple(int(x) for x in item.split("-")) for item in out.split()]
    return blocks


def test_racing_allocators_never_overlap(zookeeper):
    chroot = f"{zookeeper.address}/race-{uuid.uuid4().hex[:8]}"
    blocks = sorted(_run_allocators(chroot, 4, 15))
    assert len(blocks) == 60
    # Every block is 1000 ids, none shared, none skipped: exactly 0..59999.
    assert blocks == [(i * 1000, i * 1000 + 999) for i in range(60)]


def test_znode_holds_kafkas_json(zookeeper):
    from kazoo.client import KazooClient

    root = f"/fmt-{uuid.uuid4().hex[:8]}"
    _run_allocators(zookeeper.address + root, 1, 2)
    zk = KazooClient(hosts=zookeeper.address)
    zk.start(timeout=30)
    try:
        data, _ = zk.get(root + "/latest_producer_id_block")
    finally:
        zk.stop()
    assert json.loads(data) == {"version": 1, "broker": 0, "block_start": "1000", "block_end": "1999"}


@pytest.mark.skipif(not available(), reason="ZooKeeper is not installed")
def test_broker_rides_out_a_zookeeper_outage(tmp_path, topic_name):
    zk = ZooKeeperServer().start()
    broker = BrokerProcess(tmp_path / "data", "--zookeeper", zk.address + "/outage").start()
    try:
        with WireClient(broker.bootstrap) as c:
            c.create_topic(topic_name)
            first = c.init_producer_id()
            assert (first.error_code, first.producer_id) == (0, 0)
            zk.stop()
            # The rest of the current block is still handed out; then a retriable error.
            ids = [first.producer_id]
            while True:
                resp = c.init_producer_id()
                if resp.error_code:
                    assert resp.error_code == COORDINATOR_LOAD_IN_PROGRESS
                    break
                ids.append(resp.producer_id)
            assert ids == list(range(1000))
            # Producers that already have an id keep producing.
            for seq in range(3):
                assert c.produce(topic_name, 0, idempotent_batch(0, 0, seq, [b"v"])).error_code == 0
            zk.start()

            def allocated() -> bool:
                resp = c.init_producer_id()
                assert resp.error_code in (0, COORDINATOR_LOAD_IN_PROGRESS)
                return resp.error_code == 0 and resp.producer_id >= 1000

            wait_until(allocated, timeout=60)
    finally:
        broker.stop()
        zk.cleanup()
