"""pytest fixtures: Apache Kafka beside the `minibroker` fixture.

    def test_same_answer(kafka_reference, minibroker):
        kafka = kafka_reference(release="4.1", brokers=1)      # a KafkaReference: .bootstrap, .topics(), ...
        kafka.create_topic("t", partitions=3)

References are started on first use and shared by the tests of a session (use topic and group names of
your own); `fresh=True` gives one of your own, and one whose nodes a test stopped or killed is not shared
again. A release that cannot be fetched here skips the test with the reason, also under CI: the reason is
printed in the summary (`-ra`), the test is never passed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from broker.testkit.zookeeper import ZooKeeperServer, available
from tests import kafka_jars
from tests.reference.reference import KafkaReference, ReferencePool


class _ZooKeeper:
    """The session's `zookeeper` fixture when there is one, else a server of the pool's own."""

    def __init__(self) -> None:
        self.address: str | None = None
        self.own: ZooKeeperServer | None = None

    def get(self, request: pytest.FixtureRequest) -> str:
        if self.address is None:
            try:
                self.address = request.getfixturevalue("zookeeper").address
            except pytest.FixtureLookupError:
                if not available():
                    pytest.skip("ZooKeeper is not installed (Debian: apt-get install zookeeper)")
                self.own = ZooKeeperServer().start()
                self.address = self.own.address
        return self.address

    def close(self) -> None:
        if self.own is not None:
            self.own.cleanup()


@pytest.fixture(scope="session")
def kafka_reference_pool() -> Iterator[tuple[ReferencePool, _ZooKeeper]]:
    zookeeper = _ZooKeeper()
    pool = ReferencePool()
    try:
        yield pool, zookeeper
    finally:
        pool.close()
        zookeeper.close()


@pytest.fixture
def kafka_reference(request: pytest.FixtureRequest,
                    kafka_reference_pool: tuple[ReferencePool, _ZooKeeper]) -> Iterator[Callable[..., KafkaReference]]:
    """Factory: `kafka_reference(release="4.1", brokers=1, config=None, fresh=False)` -> KafkaReference."""
    pool, zookeeper = kafka_reference_pool
    used: list[KafkaReference] = []

    def factory(release: str = "4.1", brokers: int = 1, config: dict[str, str] | None = None,
                fresh: bool = False) -> KafkaReference:
        from tests.reference import releases

        if releases.uses_zookeeper(release):
            pool.zookeeper = lambda: zookeeper.get(request)
        try:
            reference = pool.get(release, brokers, config, fresh)
        except kafka_jars.Unavailable as exc:
            pytest.skip(f"Apache Kafka reference unavailable: {exc}")
        used.append(reference)
        return reference

    yield factory
    for reference in used:
        pool.give_back(reference)


def unavailable_reason(release: str) -> str | None:
    """Why `release` cannot be run here, or None (fetches it when missing)."""
    from tests.reference import releases

    try:
        releases.classpath(release)
    except kafka_jars.Unavailable as exc:
        return str(exc)
    return None


__all__ = ["kafka_reference", "kafka_reference_pool", "unavailable_reason"]
