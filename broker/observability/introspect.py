"""What a test may want to see inside a running broker, as plain data (dicts, lists, numbers, strings):
topics with their offsets, consumer groups with their members, assignments, committed offsets and a
timeline of why they rebalanced, transactions, and the producers of a partition.

Each function reads the broker's state; call them in the broker's trio thread (`BrokerThread.call` does),
and the result is safe to keep in the test's thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.app import Broker


def topics(broker: Broker, include_internal: bool = False) -> dict[str, dict[str, Any]]:
    out = {}
    for topic in broker.topics:
        if topic.is_internal and not include_internal:
            continue
        partitions = []
        for partition in topic.partitions:
            entry = {"partition": partition.index, "leader": partition.leader,
                     "leader_epoch": partition.leader_epoch, "replicas": list(partition.replicas),
                     "isr": list(partition.isr)}
            log = partition.log
            if log is not None:  # this broker holds a replica
                hw = partition.high_watermark
                entry.update(log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                             high_watermark=hw,
                             last_stable_offset=partition.producers.last_stable_offset(hw, log.log_start_offset),
                             size_bytes=log.size_bytes)
            partitions.append(entry)
        out[topic.name] = {"topic_id": str(topic.topic_id), "internal": topic.is_internal, "partitions": partitions}
    return out


def groups(broker: Broker) -> dict[str, dict[str, Any]]:
    service = broker.__dict__.get("groups")  # None until the group coordinator has started
    if service is None:
        return {}
    out = {}
    consumer_groups = service.consumer.groups
    for group in service.coordinator.groups.values():
        if group.group_id in consumer_groups:
            continue  # the committed offsets of a KIP-848 group: shown with it below
        out[group.group_id] = {
            "type": "classic", "state": group.state.value, "generation": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol": group.protocol_name, "leader": group.leader_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "session_timeout_ms": m.session_timeout_ms, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                         "assignment": bytes(m.assignment)} for m in group.members.values()],
            "offsets": {f"{topic}-{partition}": value.offset for (topic, partition), value in group.offsets.items()},
            "timeline": [{"time_ms": t, "event": what} for t, what in group.events],
        }
    topics = broker.topics

    def named(assignment: Any) -> list[str]:
        found = ((topics.get_by_id(tid), parts) for tid, parts in assignment.items())
        return sorted(f"{t.name}-{p}" for t, parts in found if t is not None for p in parts)

    for share in service.share.groups.values():
        out[share.group_id] = {
            "type": "share", "state": share.state.value, "group_epoch": share.group_epoch,
            "assignment_epoch": share.assignment_epoch, "assignor": "simple",
            "members": [{"member_id": m.member_id, "member_epoch": m.member_epoch, "client_id": m.client_id,
                         "client_host": m.client_host, "subscribed_topics": list(m.subscribed_topic_names),
                         "assigned": named(m.assigned_partitions)} for m in share.members.values()],
            "timeline": [{"time_ms": t, "event": what} for t, what in share.events],
        }
    for group in consumer_groups.values():
        holder = service.coordinator.groups.get(group.group_id)

        out[group.group_id] = {
            "type": "consumer", "state": group.state.value, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor": group.preferred_assignor() or service.consumer.config.assignors[0],
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "member_epoch": m.member_epoch,
                         "state": m.state.name, "protocol": "classic" if m.uses_classic_protocol else "consumer",
                         "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topics": list(m.subscribed_topic_names),
                         "subscribed_regex": m.subscribed_topic_regex,
                         "assigned": named(m.assigned_partitions),
                         "revoking": named(m.partitions_pending_revocation),
                         "target": named(group.target_assignment.get(m.member_id, {}))}
                        for m in group.members.values()],
            "offsets": {} if holder is None else
            {f"{topic}-{partition}": value.offset for (topic, partition), value in holder.offsets.items()},
            "timeline": [{"time_ms": t, "event": what} for t, what in group.events],
        }
    return out


def share_partitions(broker: Broker) -> dict[str, dict[str, dict[str, Any]]]:
    """{share group: {"topic-p": {"start_offset", "end_offset", "in_flight": {state: count}}}} of the share
    partitions this broker leads and holds in memory (while the group has share sessions here)."""
    service = broker.__dict__.get("share_partitions")
    if service is None:
        return {}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (group_id, topic_id, index), sp in service.cached():
        topic = broker.topics.get_by_id(topic_id)
        name = f"{topic.name if topic else topic_id}-{index}"
        out.setdefault(group_id, {})[name] = {"start_offset": sp.start_offset, "end_offset": sp.end_offset,
                                              "in_flight": sp.counts()}
    return out


def transactions(broker: Broker) -> dict[str, dict[str, Any]]:
    service = broker.__dict__.get("txns")
    if service is None:
        return {}
    return {txn.transactional_id: {
        "state": txn.state.value, "producer_id": txn.producer_id, "producer_epoch": txn.producer_epoch,
        "partitions": sorted(f"{t}-{p}" for t, p in txn.partitions), "timeout_ms": txn.timeout_ms,
        "start_ms": txn.start_ms, "pending": txn.pending.value if txn.pending else None,
        "client_transaction_version": txn.client_transaction_version,
    } for txn in service.coordinator.txns.values()}


def fetch_sessions(broker: Broker) -> list[dict[str, Any]]:
    """The fetch sessions (KIP-227) the broker keeps."""
    cache = broker.__dict__.get("fetch_sessions")
    if cache is None:
        return []
    return [{"session_id": s.id, "epoch": s.epoch, "partitions": len(s.partitions), "privileged": s.privileged,
             "uses_topic_ids": s.uses_topic_ids, "created_ms": s.creation_ms, "last_used_ms": s.last_used_ms}
            for shard in cache.shards for s in shard.sessions.values()]


def producers(broker: Broker, topic: str, partition: int) -> list[dict[str, Any]]:
    found = broker.topics.get(topic)
    if found is None or not 0 <= partition < len(found.partitions):
        raise KeyError(f"no partition {topic}-{partition}")
    out = []
    for entry in found.partitions[partition].producers.producers.values():
        last = entry.batches[-1] if entry.batches else None
        out.append({"producer_id": entry.producer_id, "epoch": entry.epoch,
                    "last_sequence": last.last_seq if last else -1, "last_offset": last.last_offset if last else -1,
                    "last_timestamp": entry.last_timestamp,
                    "open_transaction_first_offset": entry.current_txn_first_offset})
    return out


def zookeeper(broker: Broker) -> dict[str, Any]:
    """This broker's ZooKeeper session (empty for a single broker): its id and password (hex), so a test can
    expire it from outside, whether it is connected, and the broker epoch of its registration."""
    cluster = broker.zk_cluster
    if cluster is None:
        return {}
    session = cluster.session
    password = session.session_password
    return {"session_id": session.session_id, "session_password": password.hex() if password else None,
            "connected": session.connected, "broker_epoch": cluster.broker_epoch,
            "controller": cluster.controller is not None}
