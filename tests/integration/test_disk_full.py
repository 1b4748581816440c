"""Writes that fail (a full disk, here the broker process's file size limit, RLIMIT_FSIZE, which makes a
write past it fail with EFBIG as ENOSPC would): Produce answers KAFKA_STORAGE_ERROR for what it could not
store, the broker stays up and serves everything else, nothing half-written is left in the log, and once
writes succeed again producing goes on where it stopped, across a restart too."""

from __future__ import annotations

import resource
import time

from broker.testkit import BrokerProcess
from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient, idempotent_batch

KAFKA_STORAGE_ERROR = 56
IDEM = b"idem" + b"." * 2000


def _batch(i: int) -> bytes:
    # Current timestamps: an old one would roll the segment (segment.ms), and a new file has room again.
    return build_batch([Record(0, 0, None, b"%06d" % i + b"." * 2000)], base_timestamp=int(time.time() * 1000))


def _fetch_values(client: WireClient, topic: str) -> list[bytes]:
    from protocol.records import decode_records, iter_batches

    values: list[bytes] = []
    offset = 0
    while True:
        response = client.request(1, 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24,
                                         "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                                             {"partition": 0, "fetch_offset": offset,
                                              "partition_max_bytes": 1 << 24}]}]})
        partition = response.responses[0].partitions[0]
        assert partition.error_code == 0
        records = partition.records or b""
        if not records:
            return values
        for header, start, end in iter_batches(records):
            values += [r.value for r in decode_records(memoryview(records)[start:end])]
            offset = header.base_offset + header.last_offset_delta + 1


def _segment_size(broker: BrokerProcess, topic: str) -> int:
    return sum(p.stat().st_size for p in (broker.data_dir / f"{topic}-0").glob("*.log"))


def test_storage_errors_then_recovery(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        assert broker.proc is not None
        pid = broker.proc.pid
        with WireClient(broker.bootstrap) as client:
            client.create_topic(topic_name)
            acked = []
            for i in range(5):
                assert client.produce(topic_name, 0, _batch(i)).error_code == 0
                acked.append(i)
            # Room for a few more batches, then the "disk" is full.
            limit = _segment_size(broker, topic_name) + 3 * 2100
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
            errors = 0
            i = 5
            while errors < 3:
                response = client.produce(topic_name, 0, _batch(i))
                if response.error_code == 0:
                    acked.append(i)
                else:
                    assert response.error_code == KAFKA_STORAGE_ERROR
                    errors += 1
                i += 1
                assert i < 100, "the size limit never made a write fail"
            # Up, and serving other requests, reads included.
            assert client.list_latest(topic_name) == len(acked)
            assert _fetch_values(client, topic_name) == [b"%06d" % n + b"." * 2000 for n in acked]
            # An idempotent producer's batch refused for storage is accepted when retried later.
            pid_response = client.init_producer_id()
            assert client.produce(topic_name, 0, idempotent_batch(pid_response.producer_id, 0, 0, [IDEM])
                                  ).error_code == KAFKA_STORAGE_ERROR
            # Space returns.
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            retry = client.produce(topic_name, 0, idempotent_batch(pid_response.producer_id, 0, 0, [IDEM]))
            assert (retry.error_code, retry.base_offset) == (0, len(acked))
            after = client.produce(topic_name, 0, _batch(1000))
            assert (after.error_code, after.base_offset) == (0, len(acked) + 1)
        broker.kill()
        broker.start()
        with WireClient(broker.bootstrap) as client:
            values = _fetch_values(client, topic_name)
            assert values == [b"%06d" % n + b"." * 2000 for n in acked] + [IDEM, b"%06d" % 1000 + b"." * 2000]
    finally:
        broker.stop()
