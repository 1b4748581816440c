"""Mutated requests over real sockets to a real broker (a BrokerThread): each connection gets a few
inputs, then is closed; a witness connection must be answered throughout, no request may make a handler
fail (an exception the server logs), and every fuzzed connection must be gone from the broker after."""

from __future__ import annotations

import logging
import random
import socket
import tempfile
import time
from dataclasses import dataclass, field

from broker.testkit import BrokerThread
from protocol.header import ApiKey
from tests.fuzz import corpus
from tests.kafka_wire import api_versions_round_trip

# Creating topics or partitions from random counts (up to 2^31-1 partitions) is a resource exhaustion
# Kafka does not guard against either; those two APIs are fuzzed in-process only.
EXCLUDED = {int(ApiKey.CREATE_TOPICS), int(ApiKey.CREATE_PARTITIONS)}


@dataclass
class SocketReport:
    sent: int = 0
    answered_bytes: int = 0  # shows that inputs got past decoding to handlers
    connections: int = 0
    witness_answers: int = 0
    errors: list[str] = field(default_factory=list)
    left_open: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors and self.left_open == 0 and self.witness_answers > 0


class _ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}" +
                          (f" ({record.exc_info[1]!r})" if record.exc_info else ""))


def _drain(sock: socket.socket, seconds: float) -> int:
    """Read whatever the broker answers until it closes the connection or goes quiet."""
    sock.settimeout(seconds)
    received = 0
    try:
        while chunk := sock.recv(65536):
            received += len(chunk)
    except OSError:
        pass
    return received


def fuzz_broker(inputs: int, seed: int, per_connection: int = 4) -> SocketReport:
    rng = random.Random(seed)
    versions = [(k, v) for k, v in corpus.served_versions() if k not in EXCLUDED]
    frames = [corpus.valid_request(k, v, rng, i) for k, v in versions for i in range(2)]
    report = SocketReport()
    errors = _ErrorLog()
    logging.getLogger("broker").addHandler(errors)
    with tempfile.TemporaryDirectory() as data_dir, BrokerThread(data_dir) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        witness = socket.create_connection((host, int(port)), timeout=30)
        try:
            while report.sent < inputs:
                with socket.create_connection((host, int(port)), timeout=30) as sock:
                    report.connections += 1
                    batch = []
                    for _ in range(per_connection):
                        roll = rng.random()
                        if roll < 0.5:  # a valid request with fresh random values: reaches the handler
                            batch.append(corpus.valid_request(*rng.choice(versions), rng, report.sent))
                            continue
                        frame = corpus.mutate(rng.choice(frames), rng)
                        # Mostly well-framed bodies (so that decoders and handlers see them); sometimes raw.
                        batch.append(corpus.reframe(frame) if roll < 0.95 else frame)
                    try:
                        sock.sendall(b"".join(batch))
                        sock.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass  # the broker closed on an earlier input: as it should for bad frames
                    report.answered_bytes += _drain(sock, 2.0)
                    report.sent += len(batch)
                if report.connections % 50 == 0:
                    api_versions_round_trip(witness)
                    report.witness_answers += 1
            api_versions_round_trip(witness)
            report.witness_answers += 1
            # Every fuzzed connection closed on our side: the broker must let go of them all.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                report.left_open = broker.open_connections() - 1  # the witness stays
                if report.left_open <= 0:
                    report.left_open = 0
                    break
                time.sleep(0.05)
        finally:
            witness.close()
            logging.getLogger("broker").removeHandler(errors)
    report.errors = errors.lines
    return report

