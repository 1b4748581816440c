"""Idempotent produce over a raw socket: duplicates get their original offsets and are stored once,
sequence and epoch errors are Kafka's, and deduplication survives a restart and a SIGKILL."""

from __future__ import annotations

import pytest

from broker.testkit import BrokerProcess
from tests.kafka_wire import WireClient, idempotent_batch

NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
UNKNOWN_PRODUCER_ID = 59
INVALID_REQUEST = 42


def _new_producer(client: WireClient) -> tuple[int, int]:
    resp = client.init_producer_id()
    assert resp.error_code == NONE
    return resp.producer_id, resp.producer_epoch


@pytest.mark.parametrize("version", [0, 2, 3, 4, 5])
def test_init_producer_id_gives_distinct_ids(minibroker, version):
    with WireClient(minibroker) as c:
        ids = set()
        for _ in range(5):
            resp = c.init_producer_id(version=version)
            assert (resp.error_code, resp.producer_epoch) == (NONE, 0)
            ids.add(resp.producer_id)
        assert len(ids) == 5 and min(ids) >= 0


def test_init_producer_id_bumps_epoch_for_known_producer(minibroker):
    with WireClient(minibroker) as c:
        pid, epoch = _new_producer(c)
        bumped = c.init_producer_id(version=4, producer_id=pid, epoch=epoch)
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (NONE, pid, epoch + 1)
        exhausted = c.init_producer_id(version=4, producer_id=pid, epoch=32766)
        assert exhausted.error_code == NONE
        assert exhausted.producer_id != pid and exhausted.producer_epoch == 0
        half = c.init_producer_id(version=4, producer_id=pid, epoch=-1)
        assert half.error_code == INVALID_REQUEST


def test_duplicate_batch_gets_original_offset_and_is_stored_once(minibroker, topic_name):
    with WireClient(minibroker) as c:
        c.create_topic(topic_name)
        pid, epoch = _new_producer(c)
        first = idempotent_batch(pid, epoch, 0, [b"a", b"b", b"c"])
        second = idempotent_batch(pid, epoch, 3, [b"d"])
        r1 = c.produce(topic_name, 0, first)
        r2 = c.produce(topic_name, 0, second)
        assert (r1.error_code, r1.base_offset, r2.error_code, r2.base_offset) == (NONE, 0, NONE, 3)
        again = c.produce(topic_name, 0, first)
        assert (again.error_code, again.base_offset) == (NONE, 0)
        assert (c.produce(topic_name, 0, second).base_offset) == 3
        assert c.list_latest(topic_name) == 4


def test_sequence_gap_is_out_of_order(minibroker, topic_name):
    with WireClient(minibroker) as c:
        c.create_topic(topic_name)
        pid, epoch = _new_producer(c)
        assert c.produce(topic_name, 0, idempotent_batch(pid, epoch, 0, [b"a"])).error_code == NONE
        gap = c.produce(topic_name, 0, idempotent_batch(pid, epoch, 2, [b"c"]))
        assert gap.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert c.list_latest(topic_name) == 1
        assert c.produce(topic_name, 0, idempotent_batch(pid, epoch, 1, [b"b"])).base_offset == 1


def test_unknown_producer_and_stale_epoch(minibroker, topic_name):
    with WireClient(minibroker) as c:
        c.create_topic(topic_name)
        pid, epoch = _new_producer(c)
        assert c.produce(topic_name, 0, idempotent_batch(pid, epoch, 7, [b"x"])).error_code == UNKNOWN_PRODUCER_ID
        bumped = c.init_producer_id(producer_id=pid, epoch=epoch).producer_epoch
        assert c.produce(topic_name, 0, idempotent_batch(pid, bumped, 0, [b"x"])).error_code == NONE
        stale = c.produce(topic_name, 0, idempotent_batch(pid, epoch, 1, [b"y"]))
        assert stale.error_code == INVALID_PRODUCER_EPOCH
        assert c.list_latest(topic_name) == 1


@pytest.mark.parametrize("stop", ["clean", "sigkill"])
def test_dedup_survives_restart(tmp_path, topic_name, stop):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with WireClient(broker.bootstrap) as c:
            c.create_topic(topic_name)
            pid, epoch = _new_producer(c)
            batches = [idempotent_batch(pid, epoch, i * 2, [b"%d" % i, b"x"]) for i in range(8)]
            offsets = [c.produce(topic_name, 0, b).base_offset for b in batches]  # acks=all: on disk
        if stop == "clean":
            assert broker.stop() == 0
        else:
            broker.kill()
        broker.start()
        with WireClient(broker.bootstrap) as c:
            for batch, offset in zip(batches[-5:], offsets[-5:], strict=True):
                resp = c.produce(topic_name, 0, batch)
                assert (resp.error_code, resp.base_offset) == (NONE, offset)
            assert c.list_latest(topic_name) == 16
            nxt = c.produce(topic_name, 0, idempotent_batch(pid, epoch, 16, [b"next"]))
            assert (nxt.error_code, nxt.base_offset) == (NONE, 16)
            # Producer ids are never handed out twice, even across restarts.
            assert c.init_producer_id().producer_id >= 1000
    finally:
        broker.stop()
