"""Errors of the ZooKeeper layer: connection trouble, fencing, and the admin errors that map onto Kafka's error
codes (`error_code`) so a handler can answer with them directly."""

from __future__ import annotations

from protocol.header import ErrorCode


class ZooKeeperError(Exception):
    """Something went wrong talking to ZooKeeper."""


class ZooKeeperUnavailableError(ZooKeeperError, ConnectionError):
    """Not connected to ZooKeeper within the call's timeout (kazoo keeps reconnecting in the background)."""


class MultiOpError(ZooKeeperError):
    """One operation of an atomic multi failed (so none was applied): `index` says which, `error` is why
    (a kazoo NoNodeError, NodeExistsError, BadVersionError, ...)."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(f"operation {index} of the transaction failed: {type(error).__name__} {error}")
        self.index = index
        self.error = error


class ControllerMovedError(ZooKeeperError):
    """Kafka's ControllerMovedException: the controller election was lost, or a write fenced by the controller
    epoch's zkVersion found /controller_epoch changed (another controller took over)."""


class BrokerIdAlreadyRegisteredError(ZooKeeperError):
    """/brokers/ids/<id> exists and belongs to another session: another live broker has this id."""

    def __init__(self, broker_id: int, owner_session: int) -> None:
        super().__init__(
            f"broker id {broker_id} is already registered in ZooKeeper by another broker (its znode "
            f"/brokers/ids/{broker_id} belongs to session 0x{owner_session:x}); give this broker another "
            "--broker-id or stop the other one")
        self.broker_id = broker_id


class AdminError(Exception):
    """A refused admin operation; `error_code` is Kafka's answer for it."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


class AdminOperationError(AdminError):
    """Kafka's AdminOperationException (e.g. rack information on some brokers only)."""


class TopicExistsError(AdminError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidTopicError(AdminError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitionsError(AdminError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(AdminError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(AdminError):
    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class BrokerNotAvailableError(AdminError):
    error_code = ErrorCode.BROKER_NOT_AVAILABLE


class UnknownTopicOrPartitionError(AdminError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class TopicAlreadyMarkedForDeletionError(AdminError):
    """Kafka's TopicAlreadyMarkedForDeletionException; DeleteTopics answers success for it (the topic is going)."""

    error_code = ErrorCode.NONE


class ReassignmentInProgressError(AdminError):
    error_code = ErrorCode.REASSIGNMENT_IN_PROGRESS
