"""A minimal Kafka client over a raw socket for tests that need exact requests (duplicates, bad
sequences, InitProducerId arguments): frames built with protocol.schema and protocol.header."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from broker.testkit.wire import WireClient as BaseWireClient
from protocol.records import Record, build_batch


class WireClient(BaseWireClient):
    # --- conveniences ---------------------------------------------------------------------------

    def sasl_plain(self, user: str, password: str, handshake_version: int = 1, version: int = 2) -> Any:
        """Authenticate on a SASL listener with PLAIN; returns the SaslAuthenticate response."""
        handshake = self.request(17, handshake_version, {"mechanism": "PLAIN"})
        assert handshake.error_code == 0, handshake
        return self.request(36, version, {"auth_bytes": f"\x00{user}\x00{password}".encode()})

    def init_producer_id(self, version: int = 4, producer_id: int = -1, epoch: int = -1) -> Any:
        return self.request(22, version, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                          "producer_id": producer_id, "producer_epoch": epoch})

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1, version: int = 9) -> Any:
        resp = self.request(0, version, {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
                                         "topic_data": [{"name": topic, "partition_data": [
                                             {"index": partition, "records": batch}]}]})
        return resp.responses[0].partition_responses[0]

    def create_topic(self, name: str, partitions: int = 1) -> None:
        resp = self.request(19, 5, {"topics": [{"name": name, "num_partitions": partitions,
                                                "replication_factor": 1}], "timeout_ms": 30000})
        assert resp.topics[0].error_code in (0, 36), resp

    def list_latest(self, topic: str, partition: int = 0) -> int:
        resp = self.request(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
        return resp.topics[0].partitions[0].offset


_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, -1)


def api_versions_round_trip(sock: socket.socket) -> float:
    """One ApiVersions v0 request and its answer on a raw socket; returns the seconds it took."""
    started = time.perf_counter()
    sock.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
    head = _recv_exactly(sock, 4)
    _recv_exactly(sock, struct.unpack(">i", head)[0])
    return time.perf_counter() - started


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed by the broker")
        out += chunk
    return bytes(out)


def idempotent_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=now,
                       producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
