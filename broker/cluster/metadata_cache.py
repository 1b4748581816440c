"""What a broker of a ZooKeeper-mode cluster knows of the other brokers (Kafka's ZkMetadataCache, its broker
side): the live brokers with their address per listener and the controller, as the controller's
UpdateMetadata requests tell it, and how to reach another broker (its inter-broker listener, with this
broker's client-side TLS and SASL). The partitions' leaders and ISRs go to the TopicManager."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import trio

from broker.config.options import BrokerConfig
from broker.security.client_side import ClientSecurity
from broker.services.cluster_view import Node


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A live broker as the controller announced it: its address per listener name."""

    broker_id: int
    endpoints: Mapping[str, tuple[str, int]]
    rack: str | None


class MetadataCache:
    def __init__(self, config: BrokerConfig, client_security: ClientSecurity | None) -> None:
        """`client_security`: TLS and SASL of this broker's own connections to the others (None: PLAINTEXT)."""
        self.config = config
        self.client_security = client_security
        self.live: dict[int, LiveBroker] = {}
        self.controller_id = -1
        self.controller_epoch = -1  # the newest controller epoch seen in a control request
        self.first_metadata = trio.Event()
        self.metadata_changed = trio.Event()  # set (and replaced) at every UpdateMetadata

    @property
    def inter_broker_listener(self) -> str:
        """inter.broker.listener.name, or Kafka's rule (the listener of security.inter.broker.protocol)."""
        return self.config.inter_broker_listener().name

    def stale_controller(self, controller_epoch: int) -> bool:
        """A control request from an older controller than the newest seen is refused; a newer one is
        remembered."""
        if controller_epoch < self.controller_epoch:
            return True
        self.controller_epoch = controller_epoch
        return False

    def update_brokers(self, req: Any) -> None:
        """The controller and the live brokers of an UpdateMetadata request."""
        self.controller_id = req.controller_id
        self.live = {b.id: LiveBroker(b.id, {e.listener: (e.host, e.port) for e in b.endpoints}, b.rack)
                     for b in req.live_brokers}

    def published(self) -> bool:
        """An UpdateMetadata is applied: wake whoever waits for a change. True for the first one."""
        self.metadata_changed.set()
        self.metadata_changed = trio.Event()
        first = not self.first_metadata.is_set()
        self.first_metadata.set()
        return first

    async def wait_metadata(self) -> None:
        """Until the controller has told this broker what the cluster is (its first UpdateMetadata), at most
        zookeeper.connection.timeout.ms. The listeners are open before (the registration names their ports):
        a client asking meanwhile would hear of no brokers and no topics, which librdkafka takes for a cluster
        without brokers (it drops every broker it knows: confluentinc/librdkafka#5301)."""
        if not self.first_metadata.is_set():
            with trio.move_on_after(self.config.zookeeper_connection_timeout_ms / 1000):
                await self.first_metadata.wait()

    def _listener_of(self, endpoint: Any) -> str:
        return self.config.listeners[endpoint.listener].name

    def nodes(self, endpoint: Any) -> list[Node]:
        listener = self._listener_of(endpoint)
        out = []
        for broker in sorted(self.live.values(), key=lambda b: b.broker_id):
            address = broker.endpoints.get(listener)
            if address is not None:  # Kafka leaves out brokers without the client's listener
                out.append(Node(broker.broker_id, address[0], address[1], broker.rack))
        return out

    def is_alive(self, node_id: int) -> bool:
        return node_id in self.live

    def node(self, node_id: int, endpoint: Any) -> Node | None:
        broker = self.live.get(node_id)
        if broker is None:
            return None
        address = broker.endpoints.get(self._listener_of(endpoint))
        return Node(node_id, address[0], address[1], broker.rack) if address is not None else None

    def inter_broker_address(self, node_id: int) -> tuple[str, int] | None:
        broker = self.live.get(node_id)
        if broker is None:
            return None
        return broker.endpoints.get(self.inter_broker_listener) or next(iter(broker.endpoints.values()), None)
