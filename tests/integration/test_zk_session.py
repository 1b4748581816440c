"""zk.session against a real ZooKeeper: calls, conditional writes, transactions, watches delivered into trio,
and the session's life (suspension, expiry with its ephemerals gone, a new session, close)."""

from __future__ import annotations

import math
import uuid

import pytest
import trio
from kazoo.client import KazooClient

from broker.testkit.zookeeper import ZooKeeperServer, available, expire_session
from zk.errors import MultiOpError, ZooKeeperUnavailableError
from zk.session import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    GetDataOp,
    MultiOp,
    NodeExistsError,
    NoNodeError,
    SessionState,
    SetDataOp,
    WatchEvent,
    WatchKind,
    ZkSession,
)


@pytest.fixture
def zk_address(zookeeper) -> str:
    return f"{zookeeper.address}/t-{uuid.uuid4().hex[:12]}/kafka"


async def _next(receive: trio.MemoryReceiveChannel, timeout: float = 30.0):
    with trio.fail_after(timeout):
        return await receive.receive()


async def _next_state(events, wanted: SessionState, timeout: float = 60.0):
    """Session events until `wanted` (others on the way are returned too, for the test to look at)."""
    seen = []
    with trio.fail_after(timeout):
        while True:
            event = await events.receive()
            seen.append(event.state)
            if event.state == wanted:
                return seen


def _expire(zk: ZkSession) -> None:
    """ZooKeeper's way to expire a session from outside: connect with its id and password, then close."""
    assert zk.session_id is not None and zk.session_password is not None
    expire_session(zk.address.partition("/")[0], zk.session_id, zk.session_password)


def test_chroot_created_and_basic_calls(zookeeper, zk_address):
    async def main():
        async with await ZkSession.connect(zk_address, timeout=10) as zk:
            assert await zk.exists("/") is not None
            assert await zk.get_children("/") == []
            assert await zk.create("/a", b"1") == "/a"
            with pytest.raises(NodeExistsError):
                await zk.create("/a", b"2")
            with pytest.raises(NoNodeError):
                await zk.create("/x/y", b"")
            assert await zk.create("/x/y/z", b"deep", makepath=True) == "/x/y/z"
            data, stat = await zk.get("/a")
            assert (data, stat.version) == (b"1", 0)
            stat = await zk.set("/a", b"2", version=0)
            assert stat.version == 1
            with pytest.raises(BadVersionError):
                await zk.set("/a", b"3", version=0)
            assert await zk.get_or_none("/missing") is None
            with pytest.raises(NoNodeError):
                await zk.get("/missing")
            first = await zk.create("/seq/n_", b"", sequence=True, makepath=True)
            second = await zk.create("/seq/n_", b"", sequence=True)
            assert (first, second) == ("/seq/n_0000000000", "/seq/n_0000000001")
            await zk.delete("/x", recursive=True)
            assert await zk.exists("/x") is None
        # The chroot is a real znode of the server, everything under it.
        outside = KazooClient(hosts=zookeeper.address)
        outside.start(timeout=30)
        try:
            assert sorted(outside.get_children("/" + zk_address.partition("/")[2])) == ["a", "seq"]
        finally:
            outside.stop()
            outside.close()

    trio.run(main)


def test_multi_is_atomic_and_pipeline_answers_each(zk_address):
    async def main():
        async with await ZkSession.connect(zk_address, timeout=10) as zk:
            await zk.create("/epoch", b"1")
            results = await zk.multi([CheckOp("/epoch", 0), CreateOp("/c", b"x"), SetDataOp("/epoch", b"2", 0)])
            assert results[1] == "/c" and results[2].version == 1
            with pytest.raises(MultiOpError) as failed:
                await zk.multi([CreateOp("/d", b""), CheckOp("/epoch", 0)])
            assert failed.value.index == 1 and isinstance(failed.value.error, BadVersionError)
            assert await zk.exists("/d") is None  # nothing of a failed multi is applied
            answers = await zk.pipeline([
                GetDataOp("/epoch"), GetDataOp("/nope"), SetDataOp("/c", b"y", 5), DeleteOp("/c"),
                MultiOp((CheckOp("/epoch", 0), CreateOp("/e"))),
            ])
            assert answers[0][0] == b"2"
            assert isinstance(answers[1], NoNodeError)
            assert isinstance(answers[2], BadVersionError)
            assert answers[3] is True or answers[3] is None
            assert isinstance(answers[4], MultiOpError) and isinstance(answers[4].error, BadVersionError)
            assert await zk.exists("/c") is None

    trio.run(main)


def test_watches_arrive_in_trio(zk_address):
    async def main():
        async with await ZkSession.connect(zk_address, timeout=10) as zk, \
                await ZkSession.connect(zk_address, timeout=10) as other:
            send, receive = trio.open_memory_channel(math.inf)
            await zk.create("/brokers/ids", makepath=True)
            assert await zk.get_children("/brokers/ids", watch=send) == []
            await other.create("/brokers/ids/1", b"{}", ephemeral=True)
            assert await _next(receive) == WatchEvent(WatchKind.CHILD, "/brokers/ids")

            await zk.get("/brokers/ids/1", watch=send)
            await other.set("/brokers/ids/1", b'{"v":2}')
            assert await _next(receive) == WatchEvent(WatchKind.CHANGED, "/brokers/ids/1")

            assert await zk.get_or_none("/controller", watch=send) is None
            await other.create("/controller", b"{}", ephemeral=True)
            assert await _next(receive) == WatchEvent(WatchKind.CREATED, "/controller")

            await zk.get("/controller", watch=send)
            await other.aclose()  # its ephemerals go with it
            assert await _next(receive) == WatchEvent(WatchKind.DELETED, "/controller")
            assert await zk.get_children("/brokers/ids") == []

    trio.run(main)


def test_session_expiry_drops_ephemerals_and_a_new_session_follows(zk_address):
    async def main():
        async with await ZkSession.connect(zk_address, timeout=20, session_timeout=6) as zk, \
                await ZkSession.connect(zk_address, timeout=20) as observer:
            events = zk.subscribe()
            send, receive = trio.open_memory_channel(math.inf)
            await zk.create("/brokers/ids/7", b"{}", ephemeral=True, makepath=True)
            old_session = zk.session_id
            stat = await observer.exists("/brokers/ids/7")
            assert stat.ephemeralOwner == old_session
            await zk.get("/brokers/ids/7", watch=send)

            await trio.to_thread.run_sync(_expire, zk)
            seen = await _next_state(events, SessionState.NEW_SESSION)
            assert SessionState.EXPIRED in seen
            assert zk.session_id != old_session
            # The watch was dropped with the connection: told so, to read again.
            assert await _next(receive) == WatchEvent(WatchKind.DROPPED, "/brokers/ids/7")
            assert await observer.exists("/brokers/ids/7") is None  # the ephemeral went with the session
            # The new session works and owns what it creates.
            await zk.create("/brokers/ids/7", b"{}", ephemeral=True)
            assert (await observer.exists("/brokers/ids/7")).ephemeralOwner == zk.session_id

            await zk.aclose()
            assert (await _next(events)).state == SessionState.CLOSED
            assert await observer.exists("/brokers/ids/7") is None

    trio.run(main)


@pytest.mark.skipif(not available(), reason="ZooKeeper is not installed")
def test_outage_suspends_calls_time_out_and_the_session_resumes():
    server = ZooKeeperServer().start()

    async def main():
        async with await ZkSession.connect(server.address + "/outage", timeout=3, session_timeout=30) as zk:
            events = zk.subscribe()
            await zk.create("/eph", b"", ephemeral=True)
            session = zk.session_id
            await trio.to_thread.run_sync(server.stop)
            assert (await _next(events)).state == SessionState.SUSPENDED
            with trio.fail_after(10):
                with pytest.raises(ZooKeeperUnavailableError):
                    await zk.get("/eph")
                with pytest.raises(ZooKeeperUnavailableError):
                    await zk.wait_connected(timeout=0.5)
            await trio.to_thread.run_sync(server.start)
            with trio.fail_after(60):
                await zk.wait_connected()
            seen = await _next_state(events, SessionState.CONNECTED)
            assert SessionState.EXPIRED not in seen
            assert zk.session_id == session
            assert (await zk.exists("/eph")).ephemeralOwner == session  # the same session kept its ephemeral

    try:
        trio.run(main)
    finally:
        server.cleanup()


def test_connect_to_nothing_fails_clearly():
    async def main():
        with pytest.raises(ZooKeeperUnavailableError, match="could not connect"):
            await ZkSession.connect("127.0.0.1:1/x", timeout=1)

    trio.run(main)
