"""The controller's channels to the brokers (Kafka's ControllerChannelManager): one queue and one sender
task per live broker, requests sent in order, each retried until it is answered or the broker leaves the
cluster. Responses go to the callback given with the request (on the controller's event loop)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable, Connector, tcp_connector
from protocol.header import ApiKey

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


@dataclass(slots=True)
class _Request:
    api_key: int
    version: int
    body: Mapping[str, Any]
    on_response: Callable[[int, Any], None] | None  # (broker id, response)


class _BrokerQueue:
    def __init__(self, broker_id: int, client: BrokerClient) -> None:
        self.broker_id = broker_id
        self.client = client
        self.send, self.receive = trio.open_memory_channel[_Request](math.inf)
        self.scope = trio.CancelScope()


class ControllerChannel:
    def __init__(self, controller_id: int, *, timeout: float, connector: Connector = tcp_connector,
                 security: Any = None) -> None:
        self.controller_id = controller_id
        self.timeout = timeout
        self._connector = connector
        self._security = security  # the inter-broker listener's TLS/SASL (broker.security.client_side)
        self._queues: dict[int, _BrokerQueue] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        queue = self._queues.get(broker_id)
        if queue is not None:
            queue.client.retarget(host, port)
            return
        client = BrokerClient(f"broker {broker_id}", host, port, client_id=f"controller-{self.controller_id}",
                              timeout=self.timeout, connector=self._connector, security=self._security)
        queue = self._queues[broker_id] = _BrokerQueue(broker_id, client)
        assert self._nursery is not None
        self._nursery.start_soon(self._sender, queue)

    def remove_broker(self, broker_id: int) -> None:
        """The broker left: its pending requests are dropped (the controller resends what matters when it
        comes back, as Kafka's does)."""
        queue = self._queues.pop(broker_id, None)
        if queue is not None:
            queue.scope.cancel()

    def send(self, broker_id: int, api_key: int, version: int, body: Mapping[str, Any],
             on_response: Callable[[int, Any], None] | None = None) -> None:
        queue = self._queues.get(broker_id)
        if queue is None:
            log.debug("not sending %s to broker %d: it is not live", ApiKey(api_key).name, broker_id)
            return
        queue.send.send_nowait(_Request(api_key, version, body, on_response))

    async def _sender(self, queue: _BrokerQueue) -> None:
        with queue.scope:
            try:
                async for request in queue.receive:
                    response = await self._send_until_answered(queue, request)
                    if request.on_response is not None:
                        try:
                            request.on_response(queue.broker_id, response)
                        except Exception:
                            log.exception("handling the response of %s from broker %d",
                                          ApiKey(request.api_key).name, queue.broker_id)
            finally:
                await queue.client.aclose()

    async def _send_until_answered(self, queue: _BrokerQueue, request: _Request) -> Any:
        warned = False
        while True:
            try:
                return await queue.client.request(request.api_key, request.version, request.body)
            except BrokerUnavailable as exc:
                if not warned:
                    log.warning("controller %d: %s to broker %d failed, retrying: %s", self.controller_id,
                                ApiKey(request.api_key).name, queue.broker_id, exc)
                    warned = True
                await trio.sleep(RETRY_BACKOFF_S)

    def close(self) -> None:
        for broker_id in list(self._queues):
            self.remove_broker(broker_id)
