"""Metadata: brokers, cluster id, controller, and topics with their partitions (auto-creating topics).

Authorization as Kafka's KafkaApis.handleTopicMetadataRequest: DESCRIBE on a topic to see it (all-topics
requests leave the others out; named ones answer TOPIC_AUTHORIZATION_FAILED without saying whether the
topic exists), CREATE on the cluster or the topic to auto-create it."""

from __future__ import annotations

import uuid
from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, ResourceType, authorized, authorized_operations, cluster_authorized
from broker.services.topics import Partition, Topic, TopicError, validate_topic_name
from protocol.header import ErrorCode

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    # A cluster broker just started answers once the controller has told it what the cluster is.
    await ctx.broker.cluster.wait_metadata()
    return _answer(ctx, req)


def _answer(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    version = ctx.header.api_version
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    all_topics = req.topics is None or (version == 0 and not req.topics)
    allow_create = broker.config.auto_create_topics and (version < 4 or req.allow_auto_topic_creation)
    include_ops = version >= 8 and req.include_topic_authorized_operations
    topics: list[dict[str, Any]] = []
    if not all_topics and version < 12 and any(
            t.name is None or (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID for t in req.topics):
        # KafkaApis: "Topic IDs are not supported in requests for version 10/11" (and a null name with
        # them): InvalidRequestException, answered as MetadataRequest.getErrorResponse does, every topic
        # INVALID_REQUEST, a null name written as "" (the response has no null names before v12).
        topics = [topic_error(ErrorCode.INVALID_REQUEST, t.name or "", getattr(t, "topic_id", None) or ZERO_UUID)
                  for t in req.topics]
    elif all_topics:
        topics = [topic_metadata(ctx, t, include_ops) for t in broker.topics
                  if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
    else:
        # KafkaApis: a request that names any topic by id is answered by id, the names ignored (the Java
        # client sends "", the field's default, beside an id), and so are the topics given without an id.
        by_id = [t for t in req.topics if (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID]
        for wanted in by_id or req.topics:
            topics.append(_requested(ctx, wanted, allow_create, include_ops, bool(by_id)))
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if 8 <= version <= 10 and req.include_cluster_authorized_operations:
        cluster_ops = authorized_operations(ctx, ResourceType.CLUSTER, "kafka-cluster") \
            if cluster_authorized(ctx, AclOperation.DESCRIBE) else 0
    cluster = broker.cluster
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
                    for n in cluster.nodes(ctx.endpoint)],
        "cluster_id": broker.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_ops,
    }


def _requested(ctx: RequestContext, wanted: Any, allow_create: bool, include_ops: bool,
               by_id: bool) -> dict[str, Any]:
    broker = ctx.broker
    name = wanted.name
    topic_id = getattr(wanted, "topic_id", ZERO_UUID) or ZERO_UUID
    if by_id or name is None:
        topic = broker.topics.get_by_id(topic_id)
        if topic is None:
            return topic_error(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id)
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            return topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id)  # ids are not secret
        return topic_metadata(ctx, topic, include_ops)
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    topic = broker.topics.get(name)
    if topic is not None:
        return topic_metadata(ctx, topic, include_ops)
    try:
        validate_topic_name(name)
    except TopicError:
        return topic_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    if not allow_create:
        return topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    if not (cluster_authorized(ctx, AclOperation.CREATE)
            or authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
        return topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    topic = broker.cluster.auto_create_topic(name)
    if isinstance(topic, ErrorCode):  # in a cluster: LEADER_NOT_AVAILABLE while the controller creates it
        return topic_error(topic, name)
    return topic_metadata(ctx, topic, include_ops)


def topic_error(code: ErrorCode, name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    """A topic entry carrying only an error (Metadata, DescribeTopicPartitions)."""
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def partition_metadata(p: Partition, alive: Any) -> dict[str, Any]:
    """A partition as Metadata describes it (Kafka's MetadataCache): a leader that is not a live broker
    (offline, or being elected) is LEADER_NOT_AVAILABLE with leader -1."""
    leader = p.leader if p.leader >= 0 and alive(p.leader) else -1
    return {"error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": p.index, "leader_id": leader, "leader_epoch": p.leader_epoch,
            "replica_nodes": p.replicas, "isr_nodes": p.isr, "offline_replicas": p.offline_replicas}


def topic_metadata(ctx: RequestContext, topic: Topic, include_ops: bool) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [partition_metadata(p, ctx.broker.cluster.is_alive) for p in topic.partitions],
        "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, topic.name)
        if include_ops else AUTHORIZED_OPERATIONS_OMITTED,
    }
