"""One broker's schema registry: the state it follows from `_schemas`, and its writes.

Reads are answered from this broker's replica of `_schemas` (every replica follows the topic up to its high
watermark); a broker without a replica forwards them. Writes run on the leader of `_schemas-0`, one at a time:
a leader that has just taken over first appends a NOOP and reads up to it (so it has every record the previous
leader wrote, as Confluent's new leader does), then checks the request against its state, appends the records
and waits until every in-sync replica has them, then reads them back into its state and answers. Other brokers
forward writes to it, as Confluent's followers forward to their leader.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio
from starlette.requests import Request
from starlette.responses import Response

from broker.http.registry import errors
from broker.http.registry.records import NOOP_RECORD, RecordError, decode
from broker.http.registry.schemas_topic import BrokerParts, NotReady, SchemasTopic
from broker.http.registry.state import Record, RegistryState
from broker.services.topics import Partition

if TYPE_CHECKING:
    from zk.session import ZkSession

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
LEADER_WAIT_S = 15.0  # how long a write waits for `_schemas` and its leader (a new topic, an election)
FORWARD_TIMEOUT_S = 30.0
FORWARDED_HEADER = "X-Minibroker-Forwarded"  # a forwarded request is not forwarded again

Operation = Callable[[RegistryState], tuple[list[Record], Any]]


class SchemaRegistry:
    def __init__(self, broker: BrokerParts) -> None:
        self.broker = broker
        self.topic = SchemasTopic(broker)
        self.state = RegistryState()
        self.url = ""  # this registry's URL (set once it listens)
        self._partition: Partition | None = None  # the replica the state was read from
        self._offset = 0  # the next offset to read
        self._write_lock = trio.Lock()
        self._synced_epoch: int | None = None  # the leader epoch whose NOOP this leader has read back
        self._nursery: trio.Nursery | None = None
        self._urls: dict[int, str] = {}

    async def run(self, url: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Create `_schemas` if needed (in a cluster, at the first write: by then every broker has registered,
        and the replication factor counts them), publish this registry's URL (in a cluster), then serve until
        cancelled."""
        self.url = url
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.topic.clustered:
                from zk.schema_registry import publish_url

                await publish_url(self._zk_session(), self.broker.node_id, url)
            else:
                try:
                    self.topic.ensure(nursery)
                except NotReady as exc:
                    log.error("schema registry: %s", exc)
            self.catch_up()
            task_status.started()
            await trio.sleep_forever()

    # -- following `_schemas` ------------------------------------------------------------------------------------
    def catch_up(self) -> bool:
        """Apply the records this broker's replica has up to its high watermark; False without a replica."""
        partition = self.topic.partition()
        if partition is None or partition.log is None:
            return False
        if partition is not self._partition:  # a replica new here (or the topic created anew): read it all
            self._partition, self._offset, self.state = partition, 0, RegistryState()
        for offset, key, value in self.topic.records(partition, self._offset):
            try:
                self.state.apply(decode(key, value))
            except RecordError as exc:
                log.warning("_schemas offset %d skipped: %s", offset, exc)
            self._offset = offset + 1
        return True

    # -- answering ------------------------------------------------------------------------------------------------
    async def read(self, request: Request, answer: Callable[[RegistryState], Any]) -> Response:
        """A read, from this broker's replica, or forwarded to the leader where this broker has none."""
        if not self.catch_up() and self.topic.clustered and FORWARDED_HEADER not in request.headers:
            leader = self.topic.leader()
            if leader is not None and leader != self.broker.node_id:
                return await self._forward(request, leader)
        return json_response(answer(self.state))

    async def write(self, request: Request, operation: Operation) -> Response:
        partition = await self._led_partition(request)
        if isinstance(partition, Response):
            return partition
        async with self._write_lock:
            try:
                if self._synced_epoch != partition.leader_epoch:
                    await self.topic.append(partition, [NOOP_RECORD])
                    self._synced_epoch = partition.leader_epoch
                self.catch_up()
                records, answer = operation(self.state)
                if records:
                    await self.topic.append(partition, records)
                    self.catch_up()
            except NotReady as exc:
                self._synced_epoch = None
                raise errors.store_error(f"Error while registering the change in {exc}") from None
        return json_response(answer)

    async def _led_partition(self, request: Request) -> Partition | Response:
        """`_schemas-0` when this broker leads it; the leader's answer when it forwarded the request there."""
        assert self._nursery is not None
        with trio.move_on_after(LEADER_WAIT_S):
            while True:
                try:
                    partition = self.topic.ensure(self._nursery)
                except NotReady as exc:
                    raise errors.store_error(str(exc)) from None
                if partition is not None and self.topic.leads(partition):
                    return partition
                leader = self.topic.leader()
                if leader is not None and leader != self.broker.node_id and self.topic.clustered:
                    if FORWARDED_HEADER in request.headers:
                        raise errors.unknown_leader(f"Broker {self.broker.node_id} is not the leader of "
                                                    "_schemas: the forwarded request went to a leader that moved")
                    return await self._forward(request, leader)
                await trio.sleep(0.05)
        raise errors.unknown_leader(f"No leader of _schemas within {LEADER_WAIT_S:g} s")

    async def _forward(self, request: Request, leader: int) -> Response:
        url = await self._url_of(leader)
        if url is None:
            raise errors.unknown_leader(f"The leader of _schemas (broker {leader}) has published no registry URL")
        body = await request.body()
        target = url + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        headers = {"Content-Type": request.headers.get("content-type", CONTENT_TYPE), FORWARDED_HEADER: "1"}
        try:
            status, data, content_type = await trio.to_thread.run_sync(
                _http_call, request.method, target, body, headers)
        except OSError as exc:
            self._urls.pop(leader, None)
            raise errors.forwarding_failed(f"Error while forwarding the request to the leader: {exc}") from None
        return Response(data, status_code=status, media_type=content_type or CONTENT_TYPE)

    def _zk_session(self) -> ZkSession:
        """The ZooKeeper session of this broker's cluster (a registry publishes its URL there)."""
        cluster = self.broker.zk_cluster
        assert cluster is not None, "only in a cluster"
        return cluster.zk.session

    async def _url_of(self, broker_id: int) -> str | None:
        if broker_id not in self._urls:
            from zk.schema_registry import registry_url

            found = await registry_url(self._zk_session(), broker_id)
            if found is None:
                return None
            self._urls[broker_id] = found
        return self._urls[broker_id]


def json_response(answer: Any, status: int = 200) -> Response:
    if isinstance(answer, Response):
        return answer
    return Response(json.dumps(answer, separators=(",", ":")), status_code=status, media_type=CONTENT_TYPE)


def _http_call(method: str, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
    """One HTTP exchange, in a worker thread (forwarded writes are rare): (status, body, content type)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body or None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT_S) as answer:
            return answer.status, answer.read(), answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")
