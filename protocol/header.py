"""Request/response headers, API keys and error codes.

Request header v1 (api_key, api_version, correlation_id, client_id) and v2 (v1 + tagged fields, used by
flexible request versions); response header v0 (correlation_id) and v1 (+ tagged fields). The request
header is parsed by hand: it is on every request's path. `client_id` stays a classic INT16 string in v2.
An ApiVersions response always uses header v0 so a client can read it whatever version it sent.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import TYPE_CHECKING

from protocol.errors import DecodeError, DecodeLimits

if TYPE_CHECKING:
    from protocol.schema import MessageSpec


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 93
    UNREGISTER_CONTROLLER = 94


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133
    GROUP_DELETION_FAILED = 134
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135


_HEADER = struct.Struct(">hhih")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A request's header (v0-v2): the API, its version, the correlation id and the client id."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@cache
def request_spec(api_key: int) -> MessageSpec | None:
    """The request definition of an api key, or None if the definitions lack it."""
    from protocol.schema import message  # construct and the JSON definitions load on first use

    try:
        key = ApiKey(api_key)
    except ValueError:
        return None
    try:
        return message("".join(part.capitalize() for part in key.name.split("_")) + "Request")
    except FileNotFoundError:
        return None


# The first flexible version (KIP-482: request header v2) of each request, from Kafka's message definitions
# (tests/protocol/test_header.py checks it against them): the first request's header is read without loading
# construct and the definitions, which only the generic codecs need.
FLEXIBLE_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 9, ApiKey.FETCH: 12, ApiKey.LIST_OFFSETS: 6, ApiKey.METADATA: 9, ApiKey.LEADER_AND_ISR: 4,
    ApiKey.STOP_REPLICA: 2, ApiKey.UPDATE_METADATA: 6, ApiKey.CONTROLLED_SHUTDOWN: 3, ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 6, ApiKey.FIND_COORDINATOR: 3, ApiKey.JOIN_GROUP: 6, ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4, ApiKey.SYNC_GROUP: 4, ApiKey.DESCRIBE_GROUPS: 5, ApiKey.LIST_GROUPS: 3,
    ApiKey.API_VERSIONS: 3, ApiKey.CREATE_TOPICS: 5, ApiKey.DELETE_TOPICS: 4, ApiKey.DELETE_RECORDS: 2,
    ApiKey.INIT_PRODUCER_ID: 2, ApiKey.OFFSET_FOR_LEADER_EPOCH: 4, ApiKey.ADD_PARTITIONS_TO_TXN: 3,
    ApiKey.ADD_OFFSETS_TO_TXN: 3, ApiKey.END_TXN: 3, ApiKey.WRITE_TXN_MARKERS: 1, ApiKey.TXN_OFFSET_COMMIT: 3,
    ApiKey.DESCRIBE_ACLS: 2, ApiKey.CREATE_ACLS: 2, ApiKey.DELETE_ACLS: 2, ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.ALTER_CONFIGS: 2, ApiKey.ALTER_REPLICA_LOG_DIRS: 2, ApiKey.DESCRIBE_LOG_DIRS: 2,
    ApiKey.SASL_AUTHENTICATE: 2, ApiKey.CREATE_PARTITIONS: 2, ApiKey.DELETE_GROUPS: 2, ApiKey.ELECT_LEADERS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1, ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0, ApiKey.DESCRIBE_CLIENT_QUOTAS: 1, ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0, ApiKey.DESCRIBE_QUORUM: 0,
    ApiKey.ALTER_PARTITION: 0, ApiKey.UPDATE_FEATURES: 0, ApiKey.DESCRIBE_CLUSTER: 0, ApiKey.DESCRIBE_PRODUCERS: 0,
    ApiKey.DESCRIBE_TRANSACTIONS: 0, ApiKey.LIST_TRANSACTIONS: 0, ApiKey.CONSUMER_GROUP_HEARTBEAT: 0,
    ApiKey.CONSUMER_GROUP_DESCRIBE: 0, ApiKey.LIST_CONFIG_RESOURCES: 0, ApiKey.DESCRIBE_TOPIC_PARTITIONS: 0,
    ApiKey.SHARE_GROUP_HEARTBEAT: 0, ApiKey.SHARE_GROUP_DESCRIBE: 0, ApiKey.SHARE_FETCH: 0,
    ApiKey.SHARE_ACKNOWLEDGE: 0, ApiKey.INITIALIZE_SHARE_GROUP_STATE: 0, ApiKey.READ_SHARE_GROUP_STATE: 0,
    ApiKey.WRITE_SHARE_GROUP_STATE: 0, ApiKey.DELETE_SHARE_GROUP_STATE: 0, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: 0,
    ApiKey.STREAMS_GROUP_HEARTBEAT: 0, ApiKey.STREAMS_GROUP_DESCRIBE: 0, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: 0,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: 0, ApiKey.DELETE_SHARE_GROUP_OFFSETS: 0,
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: 0, ApiKey.CREATE_DELEGATION_TOKEN: 2,
    ApiKey.RENEW_DELEGATION_TOKEN: 2, ApiKey.EXPIRE_DELEGATION_TOKEN: 2, ApiKey.DESCRIBE_DELEGATION_TOKEN: 2,
    ApiKey.UNREGISTER_BROKER: 0, ApiKey.ADD_RAFT_VOTER: 0, ApiKey.REMOVE_RAFT_VOTER: 0,
    ApiKey.UNREGISTER_CONTROLLER: 0,
}


def request_header_version(api_key: int, api_version: int) -> int:
    flexible_from = FLEXIBLE_FROM.get(api_key)
    return 2 if flexible_from is not None and api_version >= flexible_from else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if request_header_version(api_key, api_version) == 2 else 0


def parse_request_header(frame: bytes, limits: DecodeLimits | None = None) -> tuple[RequestHeader, int]:
    """(header, offset of the body); raises DecodeError on a truncated or malformed header (or one beyond
    `limits`)."""
    if len(frame) < _HEADER.size:
        raise DecodeError(f"request header needs {_HEADER.size} bytes, got {len(frame)}")
    api_key, api_version, correlation_id, n = _HEADER.unpack_from(frame)
    offset = _HEADER.size
    client_id = None
    if n >= 0:
        if offset + n > len(frame):
            raise DecodeError("client_id runs past the end of the frame")
        try:
            client_id = bytes(frame[offset:offset + n]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"client_id is not UTF-8: {exc}") from None
        offset += n
    elif n != -1:
        raise DecodeError(f"invalid client_id length {n}")
    if request_header_version(api_key, api_version) == 2:
        offset = skip_tagged_fields(frame, offset, limits)
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def _uvarint(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 35, 7):
        if offset >= len(data):
            raise DecodeError("truncated unsigned varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
    raise DecodeError("unsigned varint longer than 5 bytes")


def skip_tagged_fields(data: bytes, offset: int, limits: DecodeLimits | None = None) -> int:
    count, offset = _uvarint(data, offset)
    if count > len(data) - offset:  # each field takes two bytes at least
        raise DecodeError(f"{count} tagged fields, but only {len(data) - offset} bytes remain")
    if limits is not None:
        limits.check_tagged_fields(count)
    for _ in range(count):
        _tag, offset = _uvarint(data, offset)
        size, offset = _uvarint(data, offset)
        offset += size
        if offset > len(data):
            raise DecodeError("tagged field runs past the end of the frame")
    return offset


def encode_request_header(header: RequestHeader) -> bytes:
    """Used by tests and tools that speak to the broker directly."""
    client_id = header.client_id.encode() if header.client_id is not None else None
    out = _HEADER.pack(header.api_key, header.api_version, header.correlation_id,
                       -1 if client_id is None else len(client_id)) + (client_id or b"")
    if request_header_version(header.api_key, header.api_version) == 2:
        out += b"\x00"
    return out


def encode_response_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    if response_header_version(api_key, api_version) == 0:
        return struct.pack(">i", correlation_id)
    return struct.pack(">ib", correlation_id, 0)
