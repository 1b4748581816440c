"""Where each broker's schema registry listens, so that a broker forwards a write to the registry of the broker
that leads `_schemas` (Confluent's registries tell each other their URLs in their group's member metadata;
minibroker's brokers already share ZooKeeper). A persistent znode per broker, rewritten at each start:
`/minibroker/schema_registry/<broker id>` = `{"version":1,"url":"http://host:port"}`."""

from __future__ import annotations

import json

from zk.session import NodeExistsError, ZkSession

REGISTRY_URLS = "/minibroker/schema_registry"


async def publish_url(session: ZkSession, broker_id: int, url: str) -> None:
    path = f"{REGISTRY_URLS}/{broker_id}"
    data = json.dumps({"version": 1, "url": url}).encode()
    await session.ensure_path(REGISTRY_URLS)
    try:
        await session.create(path, data)
    except NodeExistsError:
        await session.set(path, data)


async def registry_url(session: ZkSession, broker_id: int) -> str | None:
    found = await session.get_or_none(f"{REGISTRY_URLS}/{broker_id}")
    if found is None:
        return None
    try:
        return str(json.loads(found[0])["url"])
    except (ValueError, KeyError, TypeError):
        return None
