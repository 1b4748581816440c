"""KIP-951: a Produce (v10+) or Fetch (v12+) partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
names the partition's current leader, and the response carries that broker's address (node endpoints), so the
client goes there without waiting for a Metadata round trip."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from protocol.header import ErrorCode

HINTED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def add_leader_hints(ctx: Any, partitions: Iterable[tuple[str | None, dict[str, Any], str]]) -> list[dict[str, Any]]:
    """`partitions`: (topic name, partition response, the response's key of the partition index). Sets
    `current_leader` where the error calls for it; returns the node endpoints of those leaders."""
    broker = ctx.broker
    nodes: dict[int, dict[str, Any]] = {}
    for name, response, index_key in partitions:
        if response["error_code"] not in HINTED or name is None:
            continue
        partition = broker.topics.partition(name, response[index_key])
        if partition is None or partition.leader < 0 or partition.leader == broker.node_id:
            continue
        node = broker.cluster.node(partition.leader, ctx.endpoint)
        if node is None:
            continue
        response["current_leader"] = {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}
        nodes[node.node_id] = {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
    return list(nodes.values())
