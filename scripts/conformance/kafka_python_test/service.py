"""Copied into kafka-python's test/ as test/service.py, which its sdist leaves out and its fixtures import.
The conformance run always gives the suite a broker of its own (KAFKA_URI), so the fixtures only hold an
ExternalService; a SpawnedService (a Kafka or ZooKeeper the fixtures would start) is refused with a message."""

from __future__ import annotations


class ExternalService:
    """A broker the suite did not start: its address, nothing to stop."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def stop(self) -> None:
        pass

    def dump_logs(self) -> None:
        pass


class SpawnedService:
    """Starting Kafka or ZooKeeper from the suite is not supported here: set KAFKA_URI."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        raise RuntimeError("scripts/conformance runs kafka-python's suite against an external broker only "
                           "(KAFKA_URI=tcp://host:port); this test wanted to start a server of its own")
