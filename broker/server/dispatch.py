"""{ApiKey: Api}: which versions the broker serves and which handler answers them.

The ApiVersions response is derived from this table, so an API is advertised exactly when it is served.
Handlers take (ctx, request) and return the response as a mapping (or None for acks=0 produce); a
handler may be `async` when it waits (durability, long poll), otherwise it runs inline on the
connection's task; an async one may also offer `handle_now`, which answers inline when nothing is to be
awaited (broker.handlers.context.LATER otherwise). What the connection must treat differently for an API
(Produce's large frames and its release of the connection, Fetch's long poll, ApiVersions' answer to an
unknown version) is an attribute of the API here, not a test of its key there.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from broker.config import kafka_versions
from protocol.errors import DecodeLimits
from protocol.header import ApiKey


@dataclass(eq=False)
class Api:
    """One API of the dispatch table: its key, its version range and the module that answers it."""

    key: ApiKey
    min_version: int
    max_version: int
    module: str  # broker.handlers.<module>.handle answers; imported on the API's first request (startup time)
    request_name: str
    response_name: str
    # protocol.messages.<codec>: a hand-written decode_request/encode_response used instead of the construct
    # specs (the hot APIs); imported on first use too.
    codec: str | None = None
    # The decoder takes the frame as a bytearray too (a large Produce is read into its own buffer, not copied).
    takes_bytearray: bool = False
    # The handler lets its connection's next request start itself (ctx.release: a Produce, once appended);
    # other handlers let it start as soon as they start.
    releases_connection: bool = False
    # The handler may only wait (a Fetch long poll, up to 2^31 ms): it ends with the connection.
    long_poll: bool = False
    # Requests that get no response at all (a Produce with acks=0), even an error.
    unanswered: Callable[[Any], bool] | None = None

    @cached_property
    def handler(self) -> Callable[..., Any]:
        handler: Callable[..., Any] = importlib.import_module(f"broker.handlers.{self.module}").handle
        return handler

    @cached_property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)

    @cached_property
    def handler_now(self) -> Callable[..., Any] | None:
        """An async handler's synchronous try (`handle_now`): the answer, or LATER to run `handle`."""
        return getattr(importlib.import_module(f"broker.handlers.{self.module}"), "handle_now", None)

    @cached_property
    def unsupported_version_body(self) -> Callable[..., Any] | None:
        """The handler's answer to a version it does not know (`unsupported_version_body(versions)`, KIP-511's
        for ApiVersions, encoded as v0), or None: the connection closes."""
        return getattr(importlib.import_module(f"broker.handlers.{self.module}"), "unsupported_version_body", None)

    @cached_property
    def client_software(self) -> Callable[[int, Any], str | None] | None:
        """Where a request names the client's software (`client_software(version, request)`: ApiVersions v3+),
        for the protocol trace."""
        return getattr(importlib.import_module(f"broker.handlers.{self.module}"), "client_software", None)

    @cached_property
    def request(self):  # noqa: ANN201 - protocol.schema.MessageSpec
        from protocol.schema import message  # construct loads on first use, not at startup

        return message(self.request_name)

    @cached_property
    def response(self):  # noqa: ANN201
        from protocol.schema import message

        return message(self.response_name)

    @cached_property
    def decode_request(self) -> Callable[[int, bytes, int, DecodeLimits | None], Any]:
        """(version, frame, offset, limits) -> the request."""
        if self.codec is not None:
            decode: Callable[[int, bytes, int, DecodeLimits | None], Any] = self._codec.decode_request
            return decode
        return self.request.decode

    @cached_property
    def encode_response(self) -> Callable[[int, Mapping[str, Any]], bytes]:
        """(version, body) -> the response's bytes."""
        if self.codec is not None:
            encode: Callable[[int, Mapping[str, Any]], bytes] = self._codec.encode_response
            return encode
        return self.response.encode

    @property
    def _codec(self) -> Any:
        return importlib.import_module(f"protocol.messages.{self.codec}")

    @property
    def advertised_range(self) -> tuple[int, int]:
        return self.min_version, self.max_version


def _acks_zero(request: Any) -> bool:
    return bool(request.acks == 0)


def _build_table() -> dict[int, Api]:
    apis = [
        # Every version from v0 (the 3.x profiles); the 4.x profiles accept what Kafka 4 does
        # (broker.config.kafka_versions): Produce v0-2, which they still advertise, close the connection as there.
        Api(ApiKey.PRODUCE, 0, 13, "produce", "ProduceRequest", "ProduceResponse", codec="produce",
            takes_bytearray=True, releases_connection=True, unanswered=_acks_zero),
        Api(ApiKey.FETCH, 0, 18, "fetch", "FetchRequest", "FetchResponse", codec="fetch", long_poll=True),
        Api(ApiKey.LIST_OFFSETS, 0, 11, "list_offsets", "ListOffsetsRequest", "ListOffsetsResponse"),
        Api(ApiKey.METADATA, 0, 13, "metadata", "MetadataRequest", "MetadataResponse"),
        Api(ApiKey.API_VERSIONS, 0, 5, "api_versions", "ApiVersionsRequest", "ApiVersionsResponse",
            codec="api_versions"),
        # Answered by the connection during an authentication (broker.security.authenticator); the handlers
        # answer the other cases (ILLEGAL_SASL_STATE), as Kafka's KafkaApis does.
        Api(ApiKey.SASL_HANDSHAKE, 0, 1, "sasl_handshake", "SaslHandshakeRequest", "SaslHandshakeResponse"),
        Api(ApiKey.SASL_AUTHENTICATE, 0, 2, "sasl_authenticate", "SaslAuthenticateRequest",
            "SaslAuthenticateResponse"),
        Api(ApiKey.CREATE_TOPICS, 0, 7, "create_topics", "CreateTopicsRequest", "CreateTopicsResponse"),
        Api(ApiKey.DELETE_TOPICS, 0, 6, "delete_topics", "DeleteTopicsRequest", "DeleteTopicsResponse"),
        Api(ApiKey.DESCRIBE_CONFIGS, 0, 4, "describe_configs", "DescribeConfigsRequest",
            "DescribeConfigsResponse"),
        Api(ApiKey.ALTER_CONFIGS, 0, 2, "alter_configs", "AlterConfigsRequest", "AlterConfigsResponse"),
        Api(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, "incremental_alter_configs",
            "IncrementalAlterConfigsRequest", "IncrementalAlterConfigsResponse"),
        Api(ApiKey.LIST_CONFIG_RESOURCES, 0, 1, "list_config_resources", "ListConfigResourcesRequest",
            "ListConfigResourcesResponse"),
        Api(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, "describe_topic_partitions", "DescribeTopicPartitionsRequest",
            "DescribeTopicPartitionsResponse"),
        Api(ApiKey.DESCRIBE_CLUSTER, 0, 2, "describe_cluster", "DescribeClusterRequest",
            "DescribeClusterResponse"),
        Api(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, "offset_for_leader_epoch", "OffsetForLeaderEpochRequest",
            "OffsetForLeaderEpochResponse"),
        # What a single broker truthfully answers about leaders, replicas and log directories.
        Api(ApiKey.ELECT_LEADERS, 0, 2, "elect_leaders", "ElectLeadersRequest", "ElectLeadersResponse"),
        Api(ApiKey.DESCRIBE_LOG_DIRS, 0, 5, "describe_log_dirs", "DescribeLogDirsRequest",
            "DescribeLogDirsResponse"),
        Api(ApiKey.ALTER_REPLICA_LOG_DIRS, 0, 2, "alter_replica_log_dirs", "AlterReplicaLogDirsRequest",
            "AlterReplicaLogDirsResponse"),
        Api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, "alter_partition_reassignments",
            "AlterPartitionReassignmentsRequest", "AlterPartitionReassignmentsResponse"),
        Api(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, "list_partition_reassignments",
            "ListPartitionReassignmentsRequest", "ListPartitionReassignmentsResponse"),
        Api(ApiKey.DELETE_RECORDS, 0, 2, "delete_records", "DeleteRecordsRequest", "DeleteRecordsResponse"),
        Api(ApiKey.CREATE_PARTITIONS, 0, 3, "create_partitions", "CreatePartitionsRequest",
            "CreatePartitionsResponse"),
        Api(ApiKey.INIT_PRODUCER_ID, 0, 5, "init_producer_id", "InitProducerIdRequest",
            "InitProducerIdResponse", codec="init_producer_id"),
        Api(ApiKey.FIND_COORDINATOR, 0, 6, "find_coordinator", "FindCoordinatorRequest",
            "FindCoordinatorResponse"),
        Api(ApiKey.JOIN_GROUP, 0, 9, "join_group", "JoinGroupRequest", "JoinGroupResponse"),
        Api(ApiKey.SYNC_GROUP, 0, 5, "sync_group", "SyncGroupRequest", "SyncGroupResponse"),
        Api(ApiKey.HEARTBEAT, 0, 4, "heartbeat", "HeartbeatRequest", "HeartbeatResponse"),
        Api(ApiKey.LEAVE_GROUP, 0, 5, "leave_group", "LeaveGroupRequest", "LeaveGroupResponse"),
        Api(ApiKey.OFFSET_COMMIT, 0, 10, "offset_commit", "OffsetCommitRequest", "OffsetCommitResponse"),
        Api(ApiKey.OFFSET_FETCH, 0, 10, "offset_fetch", "OffsetFetchRequest", "OffsetFetchResponse"),
        Api(ApiKey.LIST_GROUPS, 0, 5, "list_groups", "ListGroupsRequest", "ListGroupsResponse"),
        Api(ApiKey.DESCRIBE_GROUPS, 0, 6, "describe_groups", "DescribeGroupsRequest",
            "DescribeGroupsResponse"),
        Api(ApiKey.DELETE_GROUPS, 0, 3, "delete_groups", "DeleteGroupsRequest", "DeleteGroupsResponse"),
        # KIP-848 consumer groups: offered by the 4.x profiles only (kafka_versions.KAFKA4_APIS).
        Api(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, "consumer_group_heartbeat", "ConsumerGroupHeartbeatRequest",
            "ConsumerGroupHeartbeatResponse"),
        Api(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, "consumer_group_describe", "ConsumerGroupDescribeRequest",
            "ConsumerGroupDescribeResponse"),
        # KIP-1071 streams groups: the 4.2-4.4 profiles (v1 and KIP-1331's topology description update: 4.4).
        Api(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, "streams_group_heartbeat", "StreamsGroupHeartbeatRequest",
            "StreamsGroupHeartbeatResponse"),
        Api(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 1, "streams_group_describe", "StreamsGroupDescribeRequest",
            "StreamsGroupDescribeResponse"),
        Api(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, "streams_group_topology_description_update",
            "StreamsGroupTopologyDescriptionUpdateRequest", "StreamsGroupTopologyDescriptionUpdateResponse"),
        # KIP-932 share groups: the 4.1 to 4.4 profiles.
        Api(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, "share_group_heartbeat", "ShareGroupHeartbeatRequest",
            "ShareGroupHeartbeatResponse"),
        Api(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, "share_group_describe", "ShareGroupDescribeRequest",
            "ShareGroupDescribeResponse"),
        Api(ApiKey.SHARE_FETCH, 1, 2, "share_fetch", "ShareFetchRequest", "ShareFetchResponse"),
        Api(ApiKey.SHARE_ACKNOWLEDGE, 1, 2, "share_acknowledge", "ShareAcknowledgeRequest",
            "ShareAcknowledgeResponse"),
        Api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, "describe_share_group_offsets",
            "DescribeShareGroupOffsetsRequest", "DescribeShareGroupOffsetsResponse"),
        Api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, "alter_share_group_offsets", "AlterShareGroupOffsetsRequest",
            "AlterShareGroupOffsetsResponse"),
        Api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, "delete_share_group_offsets", "DeleteShareGroupOffsetsRequest",
            "DeleteShareGroupOffsetsResponse"),
        # The share coordinator's state APIs (the partition leaders' and group coordinator's persister).
        Api(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0, "initialize_share_group_state",
            "InitializeShareGroupStateRequest", "InitializeShareGroupStateResponse"),
        Api(ApiKey.READ_SHARE_GROUP_STATE, 0, 0, "read_share_group_state", "ReadShareGroupStateRequest",
            "ReadShareGroupStateResponse"),
        Api(ApiKey.WRITE_SHARE_GROUP_STATE, 0, 1, "write_share_group_state", "WriteShareGroupStateRequest",
            "WriteShareGroupStateResponse"),
        Api(ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0, "delete_share_group_state", "DeleteShareGroupStateRequest",
            "DeleteShareGroupStateResponse"),
        Api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, "read_share_group_state_summary",
            "ReadShareGroupStateSummaryRequest", "ReadShareGroupStateSummaryResponse"),
        Api(ApiKey.OFFSET_DELETE, 0, 0, "offset_delete", "OffsetDeleteRequest", "OffsetDeleteResponse"),
        Api(ApiKey.DESCRIBE_PRODUCERS, 0, 0, "describe_producers", "DescribeProducersRequest",
            "DescribeProducersResponse"),
        Api(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, "add_partitions_to_txn", "AddPartitionsToTxnRequest",
            "AddPartitionsToTxnResponse", codec="add_partitions_to_txn"),
        Api(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, "add_offsets_to_txn", "AddOffsetsToTxnRequest",
            "AddOffsetsToTxnResponse", codec="add_offsets_to_txn"),
        # v5: transaction version 2 (KIP-890 part 2), in the 4.x profiles' ranges only.
        Api(ApiKey.END_TXN, 0, 5, "end_txn", "EndTxnRequest", "EndTxnResponse", codec="end_txn"),
        Api(ApiKey.WRITE_TXN_MARKERS, 0, 2, "write_txn_markers", "WriteTxnMarkersRequest",
            "WriteTxnMarkersResponse"),
        Api(ApiKey.TXN_OFFSET_COMMIT, 0, 6, "txn_offset_commit", "TxnOffsetCommitRequest",
            "TxnOffsetCommitResponse", codec="txn_offset_commit"),
        Api(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, "describe_transactions", "DescribeTransactionsRequest",
            "DescribeTransactionsResponse"),
        Api(ApiKey.LIST_TRANSACTIONS, 0, 2, "list_transactions", "ListTransactionsRequest",
            "ListTransactionsResponse"),
        Api(ApiKey.DESCRIBE_ACLS, 0, 3, "describe_acls", "DescribeAclsRequest", "DescribeAclsResponse"),
        Api(ApiKey.CREATE_ACLS, 0, 3, "create_acls", "CreateAclsRequest", "CreateAclsResponse"),
        Api(ApiKey.DELETE_ACLS, 0, 3, "delete_acls", "DeleteAclsRequest", "DeleteAclsResponse"),
        # The cluster's own requests (ZooKeeper mode): from the controller, and to it.
        Api(ApiKey.LEADER_AND_ISR, 0, 7, "leader_and_isr", "LeaderAndIsrRequest", "LeaderAndIsrResponse"),
        Api(ApiKey.STOP_REPLICA, 0, 4, "stop_replica", "StopReplicaRequest", "StopReplicaResponse"),
        Api(ApiKey.UPDATE_METADATA, 0, 8, "update_metadata", "UpdateMetadataRequest", "UpdateMetadataResponse"),
        Api(ApiKey.CONTROLLED_SHUTDOWN, 0, 3, "controlled_shutdown", "ControlledShutdownRequest",
            "ControlledShutdownResponse"),
        Api(ApiKey.ALTER_PARTITION, 0, 3, "alter_partition", "AlterPartitionRequest", "AlterPartitionResponse"),
        # Delegation tokens (KIP-48): a 4.x profile from v1 (KIP-896), the 3.x ones from v0.
        Api(ApiKey.CREATE_DELEGATION_TOKEN, 0, 3, "create_delegation_token", "CreateDelegationTokenRequest",
            "CreateDelegationTokenResponse"),
        Api(ApiKey.RENEW_DELEGATION_TOKEN, 0, 2, "renew_delegation_token", "RenewDelegationTokenRequest",
            "RenewDelegationTokenResponse"),
        Api(ApiKey.EXPIRE_DELEGATION_TOKEN, 0, 2, "expire_delegation_token", "ExpireDelegationTokenRequest",
            "ExpireDelegationTokenResponse"),
        Api(ApiKey.DESCRIBE_DELEGATION_TOKEN, 0, 3, "describe_delegation_token", "DescribeDelegationTokenRequest",
            "DescribeDelegationTokenResponse"),
        Api(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, "describe_client_quotas", "DescribeClientQuotasRequest",
            "DescribeClientQuotasResponse"),
        Api(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, "alter_client_quotas", "AlterClientQuotasRequest",
            "AlterClientQuotasResponse"),
        Api(ApiKey.UPDATE_FEATURES, 0, 2, "update_features", "UpdateFeaturesRequest", "UpdateFeaturesResponse"),
        Api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, "describe_user_scram_credentials",
            "DescribeUserScramCredentialsRequest", "DescribeUserScramCredentialsResponse"),
        Api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, "alter_user_scram_credentials",
            "AlterUserScramCredentialsRequest", "AlterUserScramCredentialsResponse"),
    ]
    return {int(api.key): api for api in apis}


_TABLE: dict[int, Api] | None = None


def table() -> dict[int, Api]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _build_table()
    return _TABLE


def load_handlers() -> None:
    """Import every handler and hand-written codec now (after startup), so that a broker never loads code long
    after it started (an upgrade of the installed package under a running broker must not mix versions)."""
    for api in table().values():
        _ = api.handler
        if api.codec is not None:
            _ = api.decode_request, api.encode_response


def lookup(api_key: int) -> Api | None:
    return table().get(api_key)


def served() -> dict[int, tuple[int, int, int]]:
    """{api_key: (min accepted, max, min advertised)} of every API this broker serves."""
    return {key: (api.min_version, api.max_version, api.advertised_range[0]) for key, api in table().items()}


def version_profile(kafka_version: str = kafka_versions.DEFAULT, *,
                    cluster: bool = False) -> kafka_versions.VersionProfile:
    """What the broker advertises and accepts when it looks like `kafka_version` (--kafka-version); a
    cluster's brokers also accept the cluster's own requests (whatever release they look like to clients)."""
    profile = kafka_versions.resolve(served(), kafka_version)
    return profile.with_inter_broker(served()) if cluster else profile
