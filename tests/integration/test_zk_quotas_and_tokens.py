"""Client quotas and delegation tokens where Kafka's ZooKeeper mode keeps them, on a real ZooKeeper: quotas set
through one broker of a cluster land in /config/clients/<id> as Kafka writes them and the other brokers follow
the change notification; delegation tokens in /delegation_token/tokens/<id> (Kafka's version-3 znode) with a
token_changes notification, read back by another broker's loader, gone when expired."""

from __future__ import annotations

import json
import uuid

import pytest
import trio

from broker.services import delegation_tokens
from broker.services.delegation_tokens import DelegationTokens, ZkTokenStore
from broker.testkit.wire import WireClient
from tests.integration.conftest import wait_until
from zk import znodes as z
from zk.kafka_zk import KafkaZkClient
from zk.session import ZkSession

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49


def _described(bootstrap: str, client: str) -> list:
    with WireClient(bootstrap) as c:
        answer = c.request(DESCRIBE_CLIENT_QUOTAS, 1, {"strict": True, "components": [
            {"entity_type": "client-id", "match_type": 0, "match": client}]})
    return [{v.key: v.value for v in e["values"]} for e in answer.entries]


@pytest.mark.minibroker_cluster(brokers=2)
def test_quotas_set_through_one_broker_are_kafkas_znodes_and_reach_the_other(minibroker_cluster) -> None:
    first, second = (minibroker_cluster.broker(i).bootstrap for i in sorted(minibroker_cluster.brokers))
    client = f"app-{uuid.uuid4().hex[:6]}"
    with WireClient(first) as c:
        answer = c.request(ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
            {"entity": [{"entity_type": "client-id", "entity_name": client}],
             "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}]})
    assert answer.entries[0].error_code == 0

    async def znode() -> dict:
        session = await ZkSession.connect(minibroker_cluster.zookeeper, timeout=10)
        try:
            data, _ = await session.get(f"/config/clients/{client}")
            changes = await session.get_children(z.CONFIG_CHANGES)
            notes = [json.loads((await session.get(f"{z.CONFIG_CHANGES}/{n}"))[0]) for n in changes]
            return {"config": json.loads(data), "notes": notes}
        finally:
            await session.aclose()

    found = trio.run(znode)
    assert found["config"] == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    assert {"version": 2, "entity_path": f"clients/{client}"} in found["notes"]
    wait_until(lambda: _described(second, client) == [{"producer_byte_rate": 1024.0}], timeout=30,
               message="the other broker follows the quota change")


def test_delegation_tokens_in_zookeeper(zookeeper) -> None:
    address = f"{zookeeper.address}/t-{uuid.uuid4().hex[:12]}"
    settings = {"delegation.token.secret.key": "cluster-secret"}

    async def main() -> None:
        session = await ZkSession.connect(address, timeout=10)
        zk = KafkaZkClient(session)
        try:
            await zk.create_top_level_paths()
            tokens = DelegationTokens(settings, ZkTokenStore(zk, []))
            created = await tokens.create("User:alice", "User:alice", ["User:bob"], -1, 1_000)
            token = created.token
            assert token is not None
            data, _ = await session.get(f"/delegation_token/tokens/{token.token_id}")
            assert json.loads(data) == {
                "version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aalice", "renewers": ["User%3Abob"],
                "issueTimestamp": 1_000, "maxTimestamp": token.max_ms, "expiryTimestamp": token.expiry_ms,
                "tokenId": token.token_id}
            changes = await zk.get_token_change_notifications()
            assert [(await session.get(f"{z.DELEGATION_TOKEN_CHANGES}/{n}"))[0] for n in changes] == \
                [token.token_id.encode()]
            # Another broker reads it, derives the same HMAC from the shared secret, and can renew it.
            other = DelegationTokens(settings, ZkTokenStore(zk, await delegation_tokens.load_from_zookeeper(zk)))
            assert other.tokens == tokens.tokens
            error, expiry = await other.renew(created.hmac, "User:bob", 5_000, 2_000)
            assert (error, expiry) == (0, 7_000)
            assert [t.expiry_ms for t in await delegation_tokens.load_from_zookeeper(zk)] == [7_000]
            await other.expire(created.hmac, "User:alice", -1, 3_000)
            assert await delegation_tokens.load_from_zookeeper(zk) == []
            assert len(await zk.get_token_change_notifications()) == 3
        finally:
            await session.aclose()

    trio.run(main)
