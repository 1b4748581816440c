"""A ZooKeeper session for trio code.

kazoo does the protocol in its own threads; this module is the one way trio code talks to it:

    async with await ZkSession.connect("127.0.0.1:2181/kafka", timeout=10) as zk:
        data, stat = await zk.get("/brokers/ids/1")
        events = zk.subscribe()              # SessionEvent: CONNECTED, SUSPENDED, EXPIRED, NEW_SESSION, CLOSED
        send, receive = trio.open_memory_channel(math.inf)
        children = await zk.get_children("/brokers/ids", watch=send)   # WatchEvent(CHILD, "/brokers/ids") later

- The chroot of the address is created on connect (kazoo's own chroot handling does not create it).
- Every call waits for the connection and for its answer within `timeout` seconds, then raises
  ZooKeeperUnavailableError; a call cut by a lost connection is sent again until then (as Kafka's
  retryRequestsUntilConnected does). kazoo's exceptions for answers (NoNodeError, NodeExistsError,
  BadVersionError, NotEmptyError) come through unchanged and are re-exported here.
- Watches are one-shot, as in ZooKeeper. kazoo drops every watch when the connection drops (it does not set
  them again on reconnection) and tells each with an event of its own: that arrives as WatchKind.DROPPED,
  meaning "read again, with a new watch".
- A session that expired loses its ephemeral znodes; kazoo then connects with a new session, which is
  announced as NEW_SESSION: re-register ephemerals (broker, controller) and re-read what you watch.
- `pipeline` sends many independent operations at once (one thread hop, answers in order, each a result or
  an exception); `multi` applies several atomically (ZooKeeper's transaction), raising MultiOpError.
"""

from __future__ import annotations

import enum
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio
from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

from zk.errors import MultiOpError, ZooKeeperUnavailableError

__all__ = [
    "BadVersionError", "CheckOp", "CreateOp", "DeleteOp", "ExistsOp", "GetChildrenOp", "GetDataOp", "MultiOp",
    "NoNodeError", "NodeExistsError", "NotEmptyError", "SessionEvent", "SessionState", "SetDataOp", "Stat",
    "WatchEvent", "WatchKind", "ZkSession", "parse_address",
]

log = logging.getLogger(__name__)

Stat = ZnodeStat
ANY_VERSION = -1  # a conditional write that matches any version (ZooKeeper's own -1)

# Errors after which a call is sent again once connected: the request may or may not have been applied.
_RETRIABLE = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)


def parse_address(address: str) -> tuple[str, str]:
    """`HOST:PORT[,HOST:PORT...][/chroot]` -> (hosts, chroot) with chroot "" or "/a/b"."""
    hosts, slash, chroot = address.partition("/")
    return hosts, ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""


class SessionState(enum.Enum):
    CONNECTED = "CONNECTED"      # connected: the first time, or the same session again after SUSPENDED
    SUSPENDED = "SUSPENDED"      # connection lost; the session (and its ephemerals) may still be alive
    EXPIRED = "EXPIRED"          # the session is gone, and with it its ephemerals and watches (kazoo's LOST)
    NEW_SESSION = "NEW_SESSION"  # connected again with a new session after EXPIRED: re-create ephemerals
    CLOSED = "CLOSED"            # aclose() was called


@dataclass(frozen=True, slots=True)
class SessionEvent:
    state: SessionState
    session_id: int | None


class WatchKind(enum.Enum):
    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"    # the znode's data changed
    CHILD = "CHILD"        # a child was added or removed
    DROPPED = "DROPPED"    # the connection dropped and the watch with it: read again with a new watch


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: WatchKind
    path: str  # the watched path (relative to the chroot)


Watch = trio.MemorySendChannel  # where a watch's one event is sent (give it room: math.inf is the usual)


# Operations for `pipeline` (independent) and `multi` (atomic: Create, SetData, Delete and Check only).
@dataclass(frozen=True, slots=True)
class GetDataOp:
    path: str
    watch: Watch | None = None


@dataclass(frozen=True, slots=True)
class GetChildrenOp:
    path: str
    watch: Watch | None = None


@dataclass(frozen=True, slots=True)
class ExistsOp:
    path: str
    watch: Watch | None = None


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes | None = None  # None: no data at all (ZooKeeper's null, what Kafka gives its containers)
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class MultiOp:
    """An atomic transaction inside a pipeline; its result is the list of its results, or a MultiOpError."""
    ops: tuple[CreateOp | SetDataOp | DeleteOp | CheckOp, ...]


Op = GetDataOp | GetChildrenOp | ExistsOp | CreateOp | SetDataOp | DeleteOp | CheckOp | MultiOp


class ZkSession:
    """One ZooKeeper session (kazoo client) used from trio. Create with `await ZkSession.connect(...)`."""

    def __init__(self, client: KazooClient, address: str, chroot: str, timeout: float,
                 token: trio.lowlevel.TrioToken) -> None:
        self._client = client
        self.address = address
        self.chroot = chroot
        self.timeout = timeout
        self._token = token
        self._subscribers: list[trio.MemorySendChannel[SessionEvent]] = []
        self._closed = False
        self._expired = False
        self._session_id: int | None = None
        self._lock = threading.Lock()  # kazoo's listener runs in its thread

    # -- connecting and closing --

    @classmethod
    async def connect(cls, address: str, *, timeout: float = 10.0, session_timeout: float = 18.0) -> ZkSession:
        """Connect to `HOST:PORT[,...][/chroot]`, creating the chroot if needed; raises
        ZooKeeperUnavailableError when no server answers within `timeout` seconds."""
        hosts, chroot = parse_address(address)
        # Short reconnection delays: kazoo's defaults can leave a client disconnected for tens of seconds
        # after ZooKeeper comes back.
        client = KazooClient(hosts=hosts, timeout=session_timeout,
                             connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=1.5, max_delay=1.0))
        session = cls(client, address, chroot, timeout, trio.lowlevel.current_trio_token())
        client.add_listener(session._on_state)
        started = client.start_async()
        await trio.to_thread.run_sync(started.wait, timeout, abandon_on_cancel=True)
        if not client.connected:
            await trio.to_thread.run_sync(session._stop_client)
            raise ZooKeeperUnavailableError(f"could not connect to ZooKeeper at {hosts} within {timeout:g} s")
        if chroot:
            # Created without the chroot, then every path is prefixed with it (kazoo's chroot is client-side).
            await session.ensure_path(chroot)
            client.chroot = chroot
        return session

    async def aclose(self) -> None:
        """Close the session: its ephemeral znodes go at once; subscribers get CLOSED and end."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self._stop_client)
        for channel in self._subscribers:
            try:
                channel.send_nowait(SessionEvent(SessionState.CLOSED, self._session_id))
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            channel.close()
        self._subscribers.clear()

    async def __aenter__(self) -> ZkSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _stop_client(self) -> None:
        try:
            self._client.stop()
            self._client.close()
        except Exception:  # closing a client whose server is gone must not fail shutdown
            log.debug("closing the ZooKeeper client failed", exc_info=True)

    # -- state --

    @property
    def connected(self) -> bool:
        return self._client.connected

    @property
    def session_id(self) -> int | None:
        """The current session's id (ephemeralOwner of the znodes it created), None when there is none."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    @property
    def session_password(self) -> bytes | None:
        """The current session's password: with its id, what another client needs to take the session over
        (how a test expires a broker's session: broker.testkit.zookeeper.expire_session)."""
        client_id = self._client.client_id
        return client_id[1] if client_id else None

    async def wait_connected(self, timeout: float = math.inf) -> None:
        """Return once connected (at once if connected now); ZooKeeperUnavailableError after `timeout`."""
        with trio.move_on_after(timeout):
            while not self._client.connected:
                if self._closed:
                    raise ZooKeeperUnavailableError("the ZooKeeper session is closed")
                await trio.sleep(0.02)
            return
        raise ZooKeeperUnavailableError(f"not connected to ZooKeeper at {self.address} within {timeout:g} s")

    def subscribe(self) -> trio.MemoryReceiveChannel[SessionEvent]:
        """A channel of the session's state changes from now on (unbounded; close it when done)."""
        send, receive = trio.open_memory_channel[SessionEvent](math.inf)
        self._subscribers.append(send)
        return receive

    def _on_state(self, state: str) -> None:
        # kazoo's connection thread: note the change and hand it to trio, never block.
        with self._lock:
            session_id = self.session_id
            if state == KazooState.CONNECTED:
                if self._expired or (self._session_id is not None and session_id != self._session_id):
                    event_state = SessionState.NEW_SESSION
                else:
                    event_state = SessionState.CONNECTED
                self._expired = False
                self._session_id = session_id
            elif state == KazooState.SUSPENDED:
                event_state = SessionState.SUSPENDED
            else:
                if self._closed or self._session_id is None:
                    return  # a stop, or the start before the first connection: not an expiry
                event_state = SessionState.EXPIRED
                self._expired = True
        self._to_trio(self._publish, SessionEvent(event_state, session_id))

    def _publish(self, event: SessionEvent) -> None:
        log.info("ZooKeeper session %s (0x%x)", event.state.value, event.session_id or 0)
        for channel in list(self._subscribers):
            try:
                channel.send_nowait(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.remove(channel)

    def _to_trio(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self._token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            pass

    def _watcher(self, path: str, channel: Watch) -> Callable[[WatchedEvent], None]:
        def fire(event: WatchedEvent) -> None:  # kazoo's thread
            kind = WatchKind.DROPPED if event.type == EventType.NONE else WatchKind(event.type)
            self._to_trio(_deliver, channel, WatchEvent(kind, path))
        return fire

    # -- calls --

    async def get(self, path: str, *, watch: Watch | None = None) -> tuple[bytes, Stat]:
        """(data, stat); NoNodeError when absent. A watch fires on CHANGED or DELETED."""
        return await self._one(GetDataOp(path, watch))

    async def get_or_none(self, path: str, *, watch: Watch | None = None) -> tuple[bytes, Stat] | None:
        """(data, stat), or None when absent (then the watch, if any, is an exists watch: fires on CREATED)."""
        try:
            return await self.get(path, watch=watch)
        except NoNodeError:
            if watch is None:
                return None
            # Set an exists watch so the creation is seen; it may have been created meanwhile.
            if await self.exists(path, watch=watch) is None:
                return None
            return await self.get_or_none(path)

    async def exists(self, path: str, *, watch: Watch | None = None) -> Stat | None:
        """The stat, or None; a watch fires on CREATED, CHANGED or DELETED."""
        return await self._one(ExistsOp(path, watch))

    async def get_children(self, path: str, *, watch: Watch | None = None) -> list[str]:
        """Child names (not sorted); NoNodeError when absent. A watch fires on CHILD or DELETED."""
        return await self._one(GetChildrenOp(path, watch))

    async def create(self, path: str, data: bytes | None = None, *, ephemeral: bool = False, sequence: bool = False,
                     makepath: bool = False) -> str:
        """Create a znode; returns its path (with the sequence number). NodeExistsError, or NoNodeError when the
        parent is missing and not `makepath`. No data (None) is ZooKeeper's null, not b"": Kafka reads the two
        differently (an empty /latest_producer_id_block is unreadable to it, a null one is "no block yet")."""
        if makepath:
            parent = path.rsplit("/", 1)[0]
            try:
                return await self._one(CreateOp(path, data, ephemeral, sequence))
            except NoNodeError:
                if parent:
                    await self.ensure_path(parent)
        return await self._one(CreateOp(path, data, ephemeral, sequence))

    async def set(self, path: str, data: bytes, *, version: int = ANY_VERSION) -> Stat:
        """Write data if the znode's version is `version` (-1: any); BadVersionError, NoNodeError."""
        return await self._one(SetDataOp(path, data, version))

    async def delete(self, path: str, *, version: int = ANY_VERSION, recursive: bool = False) -> None:
        """Delete a znode (and its children with `recursive`); NoNodeError, NotEmptyError, BadVersionError."""
        if recursive:
            try:
                children = await self.get_children(path)
            except NoNodeError:
                return
            for child in children:
                await self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
            try:
                await self._one(DeleteOp(path, version))
            except NoNodeError:
                pass
            return
        await self._one(DeleteOp(path, version))

    async def ensure_path(self, path: str) -> None:
        """Create `path` and its missing parents, persistent and without data (null, as Kafka's)."""
        parts = [p for p in path.split("/") if p]
        prefixes = ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        # One session's requests are applied in order: each parent exists before its child is created.
        for answer in await self.pipeline([CreateOp(p) for p in prefixes]):
            if isinstance(answer, Exception) and not isinstance(answer, NodeExistsError):
                raise answer

    async def multi(self, ops: Sequence[CreateOp | SetDataOp | DeleteOp | CheckOp]) -> list[Any]:
        """Apply `ops` atomically: every result (created path, Stat, True), or MultiOpError (none applied)."""
        return await self._one(MultiOp(tuple(ops)))

    async def pipeline(self, ops: Sequence[Op]) -> list[Any]:
        """Send independent operations together; each answer is its result or the exception it got
        (NoNodeError, BadVersionError, MultiOpError, ...). Raises ZooKeeperUnavailableError only when some
        answers could not be had within the timeout."""
        if not ops:
            return []
        return await self._run(list(ops))

    async def _one(self, op: Op) -> Any:
        (result,) = await self._run([op])
        if isinstance(result, Exception):
            raise result
        return result

    async def _run(self, ops: list[Op]) -> list[Any]:
        deadline = time.monotonic() + self.timeout
        submits = [self._submitter(op) for op in ops]
        results = None
        with trio.move_on_after(self.timeout + 1):  # the thread gives up at the deadline; this is a backstop
            results = await trio.to_thread.run_sync(self._wait_all, submits, deadline, abandon_on_cancel=True)
        if results is None:
            raise ZooKeeperUnavailableError(f"ZooKeeper did not answer within {self.timeout:g} s")
        return results

    def _wait_all(self, submits: list[Callable[[], Any]], deadline: float) -> list[Any]:
        """Worker thread: submit every call, collect every answer, send again those cut by a lost connection."""
        results: list[Any] = [None] * len(submits)
        pending = list(range(len(submits)))
        while pending:
            self._wait_connected(deadline)
            in_flight = []
            for i in pending:
                try:
                    in_flight.append((i, submits[i]()))
                except Exception as exc:  # noqa: BLE001 - kazoo raises some errors on submission
                    in_flight.append((i, exc))
            pending = []
            for i, call in in_flight:
                if isinstance(call, Exception):
                    outcome: Any = call
                else:
                    try:
                        outcome = call.get(timeout=max(0.0, deadline - time.monotonic()))
                    except Exception as exc:  # noqa: BLE001 - returned to the caller as the answer
                        outcome = exc
                if isinstance(outcome, _RETRIABLE) and time.monotonic() < deadline:
                    pending.append(i)
                elif isinstance(outcome, (*_RETRIABLE, ConnectionClosedError)):
                    results[i] = ZooKeeperUnavailableError(f"ZooKeeper call failed: {type(outcome).__name__}")
                else:
                    results[i] = outcome
            if pending:
                time.sleep(0.05)
        return results

    def _wait_connected(self, deadline: float) -> None:
        # A kazoo call made while disconnected waits for the reconnection; bound that wait.
        while not self._client.connected:
            if self._closed:
                raise ZooKeeperUnavailableError("the ZooKeeper session is closed")
            if time.monotonic() >= deadline:
                raise ZooKeeperUnavailableError(f"not connected to ZooKeeper at {self.address}")
            time.sleep(0.02)

    def _submitter(self, op: Op) -> Callable[[], Any]:
        client = self._client
        if isinstance(op, GetDataOp):
            watch = self._watcher(op.path, op.watch) if op.watch is not None else None
            return lambda: client.get_async(op.path, watch=watch)
        if isinstance(op, GetChildrenOp):
            watch = self._watcher(op.path, op.watch) if op.watch is not None else None
            return lambda: client.get_children_async(op.path, watch=watch)
        if isinstance(op, ExistsOp):
            watch = self._watcher(op.path, op.watch) if op.watch is not None else None
            return lambda: client.exists_async(op.path, watch=watch)
        if isinstance(op, CreateOp):
            return lambda: client.create_async(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequence)
        if isinstance(op, SetDataOp):
            return lambda: client.set_async(op.path, op.data, version=op.version)
        if isinstance(op, DeleteOp):
            return lambda: client.delete_async(op.path, version=op.version)
        if isinstance(op, MultiOp):
            return lambda: _Transaction(client, op.ops)
        raise TypeError(f"{type(op).__name__} is valid only inside a multi")


class _Transaction:
    """A kazoo transaction with the `.get(timeout)` of an async result; failure -> MultiOpError."""

    def __init__(self, client: KazooClient, ops: tuple[CreateOp | SetDataOp | DeleteOp | CheckOp, ...]) -> None:
        transaction = client.transaction()
        for op in ops:
            if isinstance(op, CreateOp):  # kazoo's transactions take bytes only
                transaction.create(op.path, op.data or b"", ephemeral=op.ephemeral, sequence=op.sequence)
            elif isinstance(op, SetDataOp):
                transaction.set_data(op.path, op.data, version=op.version)
            elif isinstance(op, DeleteOp):
                transaction.delete(op.path, version=op.version)
            elif isinstance(op, CheckOp):
                transaction.check(op.path, op.version)
            else:
                raise TypeError(f"{type(op).__name__} cannot be part of a multi")
        self._result = transaction.commit_async()

    def get(self, timeout: float) -> list[Any]:
        results = self._result.get(timeout=timeout)
        for index, result in enumerate(results):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise MultiOpError(index, result)
        return results


def _deliver(channel: Watch, event: WatchEvent) -> None:
    try:
        channel.send_nowait(event)
    except trio.WouldBlock:
        trio.lowlevel.spawn_system_task(_send_later, channel, event)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # nobody listens any more


async def _send_later(channel: Watch, event: WatchEvent) -> None:
    try:
        await channel.send(event)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
