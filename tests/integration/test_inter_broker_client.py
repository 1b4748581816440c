"""The inter-broker client (broker.cluster.client.BrokerClient) against a real broker over a real socket: a
connection the other broker closed while idle (its connections.max.idle.ms) is noticed before the next request,
which goes on a new connection, as Kafka's NetworkClient does. Sending into the closed one failed that request
(EOFError): a KIP-890 verification among them, which made librdkafka's 0137 lose a record on three brokers."""

from __future__ import annotations

import trio

from broker.cluster.client import BrokerClient
from broker.testkit import BrokerThread
from protocol.header import ApiKey
from tests.integration.conftest import wait_until

API_VERSIONS = {"client_software_name": "inter-broker-test", "client_software_version": "1"}


def test_a_request_after_the_peer_closed_the_idle_connection_reconnects(tmp_path):
    with BrokerThread(tmp_path, connections_max_idle_ms=500) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        client = BrokerClient("broker", host, int(port), client_id="inter-broker-test", timeout=30)

        async def request() -> int:
            return (await client.request(ApiKey.API_VERSIONS, 3, API_VERSIONS)).error_code

        assert trio.run(request) == 0
        assert broker.open_connections() == 1
        wait_until(lambda: broker.open_connections() == 0, timeout=30)  # closed by the broker, idle
        assert trio.run(request) == 0  # noticed, and sent on a new connection
        assert broker.open_connections() == 1
