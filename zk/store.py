"""Where producer-id blocks are claimed: ZooKeeper (kazoo, conditional writes on the znode version)
or, for a single broker without ZooKeeper, a file in the data dir with the same block semantics.

Both are blocking; the broker calls `claim_next_block` from a worker thread (see zk/producer_id_manager.py).
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from zk.pid_blocks import ZNODE_PATH, ProducerIdBlock, decode_block, encode_block, next_block

if TYPE_CHECKING:
    from zk.kafka_zk import KafkaZkClient

log = logging.getLogger(__name__)

CONNECT_WAIT_S = 2.0


class BlockStore(Protocol):
    def claim_next_block(self, broker_id: int) -> ProducerIdBlock: ...

    def close(self) -> None: ...


class LocalBlockStore:
    """The embedded default: `<data dir>/producer_id_block.json`, replaced atomically and fsynced before
    any id of the new block is handed out, so a block is never reused across restarts. An flock makes
    concurrent processes on one data dir take turns, like ZooKeeper's version check does. (`sync=False`: a
    data dir thrown away after the broker, which no restart reads: not fsynced.)"""

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        self.path = Path(path)
        self.sync = sync
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def claim_next_block(self, broker_id: int) -> ProducerIdBlock:
        lock_path = self.path.with_suffix(".lock")
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = decode_block(self.path.read_bytes()) if self.path.exists() else None
                block = next_block(current, broker_id)
                tmp = self.path.with_suffix(".tmp")
                with open(tmp, "wb") as f:
                    f.write(encode_block(block))
                    if self.sync:
                        f.flush()
                        os.fsync(f.fileno())
                os.replace(tmp, self.path)
                if self.sync:
                    dir_fd = os.open(self.path.parent, os.O_RDONLY)
                    try:
                        os.fsync(dir_fd)
                    finally:
                        os.close(dir_fd)
                return block
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def close(self) -> None:
        pass


def parse_zookeeper_address(address: str) -> tuple[str, str]:
    """`HOST:PORT[,HOST:PORT...][/chroot]` -> (hosts, chroot)."""
    hosts, slash, chroot = address.partition("/")
    return hosts, ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""


class ZooKeeperUnavailableError(ConnectionError):
    """Not connected to ZooKeeper right now (kazoo keeps reconnecting in the background)."""


class ZooKeeperBlockStore:
    """Kafka's ZkProducerIdManager loop: read (data, version), compute the next block, write it only if
    the version is unchanged (create when absent), retry on a conflict.

    Every ZooKeeper call has a timeout (a kazoo call made while disconnected would otherwise wait for the
    reconnection), and a claim fails at once while the session is not connected.
    """

    def __init__(self, address: str, *, timeout: float = 10.0) -> None:
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry

        hosts, chroot = parse_zookeeper_address(address)
        self.address = address
        self.timeout = timeout
        # The chroot is a prefix of our own: kazoo's client-side chroot cannot create a chroot of two levels
        # (/a/b) that does not exist yet.
        self.znode = chroot + ZNODE_PATH
        # Short reconnection delays: kazoo's defaults can leave the client disconnected for tens of seconds
        # after ZooKeeper comes back.
        self.client = KazooClient(hosts=hosts, timeout=timeout,
                                  connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=1.5, max_delay=1.0))
        # Not blocking: a broker starts (and serves everything but new producer ids) without ZooKeeper.
        self.client.start_async()

    def claim_next_block(self, broker_id: int) -> ProducerIdBlock:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        self._wait_connected(min(self.timeout, CONNECT_WAIT_S))
        while True:
            try:
                data, stat = self.client.get_async(self.znode).get(timeout=self.timeout)
            except NoNodeError:
                data, stat = None, None
            block = next_block(decode_block(data) if data else None, broker_id)
            payload = encode_block(block)
            try:
                if stat is None:
                    self.client.create_async(self.znode, payload, makepath=True).get(timeout=self.timeout)
                else:
                    self.client.set_async(self.znode, payload, version=stat.version).get(timeout=self.timeout)
            except (BadVersionError, NodeExistsError):
                log.debug("producer id block conflict, retrying")
                continue
            log.info("claimed producer id block %d-%d from ZooKeeper", block.first, block.last)
            return block

    def _wait_connected(self, timeout: float) -> None:
        """Right after start or a ZooKeeper restart the session may be moments away; beyond that, fail
        fast so InitProducerId answers a retriable error instead of hanging."""
        deadline = time.monotonic() + timeout
        while not self.client.connected:
            if time.monotonic() >= deadline:
                raise ZooKeeperUnavailableError(f"not connected to ZooKeeper at {self.address}")
            time.sleep(0.05)

    def close(self) -> None:
        try:
            self.client.stop()
            self.client.close()
        except Exception:  # closing a client whose server is gone must not fail shutdown
            log.debug("closing the ZooKeeper client failed", exc_info=True)


class SessionBlockStore:
    """Blocks claimed through a broker's own ZooKeeper session (zk.session.ZkSession, as the cluster's brokers
    hold one): the same znode and conditional writes, no second connection. `claim_next_block` is called from
    a worker thread of the broker's trio run (ProducerIdManager does) and runs the claim back in trio."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def claim_next_block(self, broker_id: int) -> ProducerIdBlock:
        import trio

        if not self.zk.session.connected:
            # Fail at once while ZooKeeper is away, as a plain kazoo call does: InitProducerId answers the
            # retriable COORDINATOR_LOAD_IN_PROGRESS instead of holding the client past its request timeout.
            raise ZooKeeperUnavailableError("not connected to ZooKeeper")
        return trio.from_thread.run(self.zk.claim_producer_id_block, broker_id)

    def close(self) -> None:
        pass  # the session is the broker's, closed with it
