"""The share coordinators of the other brokers of the cluster, as a partition leader's or the group
coordinator's persister reaches them (Kafka's PersisterStateManager sends the share coordinator's state APIs to
the broker FindCoordinator(SHARE) names; here the metadata cache knows the leader of every `__share_group_state`
partition): one connection per broker, each request one share partition's."""

from __future__ import annotations

import logging
from typing import Any

from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.cluster.metadata_cache import MetadataCache
from broker.config.kafka_versions import VersionProfile
from broker.services.share_persister import StateResult, remote_result
from protocol.header import ApiKey, ErrorCode

log = logging.getLogger(__name__)


class ShareStateChannel:
    def __init__(self, node_id: int, metadata: MetadataCache, versions: VersionProfile, timeout_s: float) -> None:
        """`versions`: the cluster's profile; each request goes at the highest version it accepts."""
        self.node_id = node_id
        self.metadata = metadata
        self.versions = versions
        self.timeout_s = timeout_s
        self._clients: dict[int, BrokerClient] = {}

    async def request(self, broker_id: int, api_key: ApiKey, body: dict[str, Any]) -> StateResult:
        """One share partition's request to `broker_id`; an unreachable broker answers COORDINATOR_NOT_AVAILABLE
        (the persister asks again, by then maybe another broker)."""
        address = self.metadata.inter_broker_address(broker_id)
        accepted = self.versions.accepted.get(api_key)
        if address is None or accepted is None:
            return StateResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {broker_id} is not available")
        client = self._clients.get(broker_id)
        if client is None:
            client = self._clients[broker_id] = BrokerClient(f"broker {broker_id}", *address,
                                                             client_id=f"share-persister-{self.node_id}",
                                                             timeout=self.timeout_s,
                                                             security=self.metadata.client_security)
        else:
            client.retarget(*address)
        try:
            response = await client.request(api_key, accepted[1], body)
        except BrokerUnavailable as exc:
            log.info("%s to broker %d: %s", api_key.name, broker_id, exc)
            return StateResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc))
        return remote_result(api_key, response)
