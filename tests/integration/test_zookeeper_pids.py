"""Producer-id blocks through a real ZooKeeper: racing allocators, the znode format, and a broker that
keeps working through a ZooKeeper outage."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from broker.testkit import BrokerProcess
from broker.testkit.zookeeper import ZooKeeperServer, available
from tests.integration.conftest import wait_until
from tests.kafka_wire import WireClient, idempotent_batch

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


def test_thirty_second_outage_under_load(tmp_path, topic_name):
    """ZooKeeper stopped for 30 s while an idempotent producer works: production goes on, the ids left in
    the current block are still handed out, and after ZooKeeper returns the next block follows the old
    one without overlap; every acknowledged message is there once."""
    import threading
    import time

    from confluent_kafka import Producer

    zk = ZooKeeperServer().start()
    broker = BrokerProcess(tmp_path / "data", "--zookeeper", zk.address + "/long-outage").start()
    acked: list[tuple[int, bytes]] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5})
        n = 0
        while not stop.is_set():
            producer.produce(topic_name, b"%d" % n, partition=0,
                             on_delivery=lambda err, msg: err is None and acked.append((msg.offset(), msg.value())))
            n += 1
            producer.poll(0.002)
        producer.flush(60)

    thread = threading.Thread(target=produce)
    try:
        with WireClient(broker.bootstrap) as c:
            c.create_topic(topic_name)
            thread.start()
            wait_until(lambda: len(acked) > 100, timeout=60)
            zk.stop()
            during = len(acked)
            outage_end = time.monotonic() + 30
            ids = []
            while time.monotonic() < outage_end:  # the outage lasts 30 s: that is the scenario, not a wait
                response = c.init_producer_id()
                if response.error_code == 0:
                    ids.append(response.producer_id)
                else:
                    assert response.error_code == COORDINATOR_LOAD_IN_PROGRESS
                time.sleep(0.1)
            assert len(acked) > during + 100, "production stalled while ZooKeeper was down"
            assert ids and max(ids) < 1000  # from the block claimed before the outage
            zk.start()

            def next_block() -> bool:
                for _ in range(100):  # use up the old block quickly
                    response = c.init_producer_id()
                    assert response.error_code in (0, COORDINATOR_LOAD_IN_PROGRESS)
                    if response.error_code:
                        return False
                    ids.append(response.producer_id)
                    if response.producer_id >= 1000:
                        return True
                return False

            wait_until(next_block, timeout=120)
            assert len(ids) == len(set(ids))
        stop.set()
        thread.join(120)
        with WireClient(broker.bootstrap) as c:
            assert c.list_latest(topic_name) >= len(acked)
        assert len({offset for offset, _ in acked}) == len(acked)
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(120)
        broker.stop()
        zk.cleanup()
