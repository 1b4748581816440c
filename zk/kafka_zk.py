"""What Kafka's brokers and controller do in ZooKeeper (KafkaZkClient and AdminZkClient of Kafka 3.x), over a
ZkSession: broker registration, ids, cluster id, controller election and epoch fencing, topics and partition
states, deletion and reassignment markers, configs and their change notifications.

Writes a controller makes take `expected_controller_epoch_zk_version` (the zkVersion of /controller_epoch its
election returned): each is then applied only together with a check of that version, and a controller that
lost its place gets ControllerMovedError instead of overwriting its successor's work. -1 writes unfenced.

    zk = KafkaZkClient(await ZkSession.connect(address))
    await zk.create_top_level_paths()
    cluster_id = await zk.create_or_get_cluster_id(proposed)
    broker_epoch = await zk.register_broker(BrokerRegistration(1, (Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)))
    epoch, epoch_zk_version = await zk.register_controller_and_increment_epoch(1)   # or ControllerMovedError
"""

from __future__ import annotations

import enum
import logging
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from zk import znodes as z
from zk.errors import (
    AdminOperationError,
    BrokerIdAlreadyRegisteredError,
    ControllerMovedError,
    InvalidTopicError,
    MultiOpError,
    ReassignmentInProgressError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from zk.pid_blocks import ProducerIdBlock, decode_block, encode_block, next_block
from zk.replica_assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    validate_topic_assignment,
)
from zk.session import (
    ANY_VERSION,
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    GetDataOp,
    MultiOp,
    NodeExistsError,
    NoNodeError,
    SetDataOp,
    Stat,
    Watch,
    ZkSession,
)
from zk.znodes import (
    BrokerRegistration,
    ConfigType,
    ControllerRegistration,
    FeatureZNode,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

INITIAL_CONTROLLER_EPOCH = 0
UNKNOWN_VERSION = -2  # Kafka's ZkVersion.UnknownVersion: the version of a znode that does not exist
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0
MAX_RESERVED_BROKER_ID = 1000  # reserved.broker.max.id's default
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249


class RackAwareMode(enum.Enum):
    ENFORCED = "Enforced"   # rack-aware; refuse when only some brokers have a rack
    SAFE = "Safe"           # rack-aware when every broker has a rack, else ignore racks
    DISABLED = "Disabled"   # ignore racks


@dataclass(frozen=True, slots=True)
class UpdateLeaderAndIsrResult:
    """Per partition: `finished` holds the written state (its new zk_version) or the exception that stopped
    it; `conflicts` the partitions whose znode version had moved on, with the state found there now (None if
    the znode is gone): someone else wrote first; decide again from that state."""
    finished: dict[TopicPartition, PartitionState | Exception] = field(default_factory=dict)
    conflicts: dict[TopicPartition, PartitionState | None] = field(default_factory=dict)


def validate_topic_name(topic: str) -> None:
    """Kafka's Topic.validate; InvalidTopicError."""
    if not topic:
        reason = "the empty string is not allowed"
    elif topic in (".", ".."):
        reason = f"'{topic}' is not allowed"
    elif len(topic) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{topic}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL_TOPIC.match(topic):
        reason = f"'{topic}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return
    raise InvalidTopicError(f"Topic name is invalid: {reason}")


def _unify(topic: str) -> str:
    return topic.replace(".", "_")


class KafkaZkClient:
    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self._ephemeral_sessions: set[int] = set()  # sessions this client created ephemerals with

    # -- generic ------------------------------------------------------------------------------------------

    async def create_top_level_paths(self) -> None:
        """The persistent paths a Kafka broker makes sure of at startup."""
        for path in z.PERSISTENT_PATHS:
            await self.session.ensure_path(path)

    async def _create_recursive(self, path: str, data: bytes | None = None, *, throw_if_exists: bool = True) -> None:
        try:
            await self.session.create(path, data, makepath=True)
        except NodeExistsError:
            if throw_if_exists:
                raise

    async def _get_data(self, path: str, watch: Watch | None = None) -> tuple[bytes, Stat] | None:
        return await self.session.get_or_none(path, watch=watch)

    async def _children(self, path: str, watch: Watch | None = None) -> list[str]:
        """Children, [] when the znode is absent (then a watch fires on its creation: read again)."""
        try:
            return await self.session.get_children(path, watch=watch)
        except NoNodeError:
            if watch is None or await self.session.exists(path, watch=watch) is None:
                return []
            return await self._children(path, watch)

    async def _fenced(self, ops: Sequence[CreateOp | SetDataOp | DeleteOp],
                      expected_epoch_zk_version: int) -> list[Any]:
        """Each op's result or exception; each op applied only while /controller_epoch still has the given
        zkVersion (-1: unfenced). ControllerMovedError when it has not."""
        if expected_epoch_zk_version == ANY_VERSION:
            return await self.session.pipeline(ops)
        if expected_epoch_zk_version < 0:
            raise ValueError(f"expected controller epoch zkVersion {expected_epoch_zk_version} should be >= 0 or -1")
        check = CheckOp(z.CONTROLLER_EPOCH, expected_epoch_zk_version)
        answers = await self.session.pipeline([MultiOp((check, op)) for op in ops])
        results = []
        for answer in answers:
            if isinstance(answer, MultiOpError):
                if answer.index == 0:
                    raise ControllerMovedError(
                        f"controller epoch zkVersion check fails: expected zkVersion {expected_epoch_zk_version}")
                results.append(answer.error)
            elif isinstance(answer, Exception):
                results.append(answer)
            else:
                results.append(answer[1])
        return results

    async def _fenced_one(self, op: CreateOp | SetDataOp | DeleteOp, expected_epoch_zk_version: int) -> Any:
        (result,) = await self._fenced([op], expected_epoch_zk_version)
        if isinstance(result, Exception):
            raise result
        return result

    async def _delete_recursive(self, path: str, expected_epoch_zk_version: int = ANY_VERSION) -> bool:
        """Delete `path` and everything under it; False if it was not there."""
        try:
            children = await self.session.get_children(path)
        except NoNodeError:
            return False
        for child in children:
            await self._delete_recursive(f"{path}/{child}", expected_epoch_zk_version)
        try:
            await self._fenced_one(DeleteOp(path), expected_epoch_zk_version)
        except NoNodeError:
            pass
        return True

    # -- cluster id and broker ids ------------------------------------------------------------------------

    async def get_cluster_id(self) -> str | None:
        found = await self._get_data(z.CLUSTER_ID)
        return z.decode_cluster_id(found[0]) if found else None

    async def create_or_get_cluster_id(self, proposed: str) -> str:
        """The cluster's id: `proposed` if this call created /cluster/id, else the one already there."""
        try:
            await self._create_recursive(z.CLUSTER_ID, z.encode_cluster_id(proposed))
            return proposed
        except NodeExistsError:
            existing = await self.get_cluster_id()
            if existing is None:
                raise AdminOperationError("Failed to get cluster id from ZooKeeper: /cluster/id was deleted") from None
            return existing

    async def generate_broker_sequence_id(self) -> int:
        """The next number of /brokers/seqid: its version after an unconditional write (1, 2, ...)."""
        while True:
            try:
                return (await self.session.set(z.BROKER_SEQUENCE_ID, b"")).version
            except NoNodeError:
                await self._create_recursive(z.BROKER_SEQUENCE_ID, throw_if_exists=False)

    async def generate_broker_id(self, max_reserved_broker_id: int = MAX_RESERVED_BROKER_ID) -> int:
        """An id for a broker without one (broker.id.generation.enable): above reserved.broker.max.id."""
        return max_reserved_broker_id + await self.generate_broker_sequence_id()

    # -- brokers ------------------------------------------------------------------------------------------

    async def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (the znode's czxid).
        BrokerIdAlreadyRegisteredError when another session holds the id."""
        path = z.broker_path(registration.broker_id)
        stat = await self._checked_ephemeral_create(path, z.encode_broker(registration),
                                                    lambda owner: BrokerIdAlreadyRegisteredError(
                                                        registration.broker_id, owner))
        log.info("registered broker %d at %s with %s, broker epoch %d", registration.broker_id, path,
                 ",".join(e.connection_string() for e in registration.endpoints), stat.czxid)
        return stat.czxid

    async def _checked_ephemeral_create(self, path: str, data: bytes, taken: Any) -> Stat:
        """Kafka's CheckedEphemeral: create empty then set, atomically (so the znode is at version 1 as
        Kafka's are); if it exists, it is ours only when this session owns it (a create retried after a lost
        connection). One left behind by our own previous session is deleted and created again."""
        while True:
            try:
                results = await self.session.multi([CreateOp(path, b"", ephemeral=True), SetDataOp(path, data, 0)])
                if self.session.session_id is not None:
                    self._ephemeral_sessions.add(self.session.session_id)
                return results[1]
            except MultiOpError as exc:
                if not isinstance(exc.error, NodeExistsError):
                    raise exc.error from None
            found = await self._get_data(path)
            if found is None:
                continue  # went away meanwhile
            owner = found[1].ephemeralOwner
            if owner == self.session.session_id:
                return found[1]
            if owner in self._ephemeral_sessions:
                log.info("%s is left from our previous session 0x%x; creating it again", path, owner)
                try:
                    await self.session.delete(path)
                except NoNodeError:
                    pass
                continue
            raise taken(owner)

    async def update_broker_info(self, registration: BrokerRegistration) -> None:
        await self.session.set(z.broker_path(registration.broker_id), z.encode_broker(registration))

    async def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        found = await self._get_data(z.broker_path(broker_id))
        return z.decode_broker(broker_id, found[0]) if found else None

    async def get_sorted_broker_list(self, watch: Watch | None = None) -> list[int]:
        """The ids of the registered (live) brokers; a watch fires when one comes or goes."""
        return sorted(int(c) for c in await self._children(z.BROKER_IDS, watch))

    async def get_all_brokers_and_epochs(self, watch: Watch | None = None) -> dict[int, tuple[BrokerRegistration, int]]:
        """Live broker id -> (registration, broker epoch)."""
        ids = await self.get_sorted_broker_list(watch)
        answers = await self.session.pipeline([GetDataOp(z.broker_path(i)) for i in ids])
        brokers = {}
        for broker_id, answer in zip(ids, answers, strict=True):
            if isinstance(answer, NoNodeError):
                continue  # went away meanwhile
            if isinstance(answer, Exception):
                raise answer
            brokers[broker_id] = (z.decode_broker(broker_id, answer[0]), answer[1].czxid)
        return brokers

    async def get_all_brokers(self, watch: Watch | None = None) -> dict[int, BrokerRegistration]:
        return {i: reg for i, (reg, _) in (await self.get_all_brokers_and_epochs(watch)).items()}

    async def get_broker_metadatas(self, rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
                                   broker_ids: Iterable[int] | None = None) -> list[BrokerMetadata]:
        """Live brokers (or those of `broker_ids`) with their racks as replica assignment wants them."""
        brokers = list((await self.get_all_brokers()).values())
        if broker_ids is not None:
            wanted = set(broker_ids)
            brokers = [b for b in brokers if b.broker_id in wanted]
        with_rack = [b for b in brokers if b.rack is not None]
        if rack_aware_mode == RackAwareMode.ENFORCED and with_rack and len(with_rack) < len(brokers):
            raise AdminOperationError("Not all brokers have rack information. Add --disable-rack-aware in "
                                      "command line to make replica assignment without rack information.")
        ignore_racks = rack_aware_mode == RackAwareMode.DISABLED or (
            rack_aware_mode == RackAwareMode.SAFE and len(with_rack) < len(brokers))
        return sorted((BrokerMetadata(b.broker_id, None if ignore_racks else b.rack) for b in brokers),
                      key=lambda m: m.broker_id)

    # -- controller ---------------------------------------------------------------------------------------

    async def register_controller_and_increment_epoch(self, controller_id: int) -> tuple[int, int]:
        """Become the controller: create the ephemeral /controller and increment /controller_epoch in one
        transaction. Returns (new controller epoch, its zkVersion: what fenced writes name). Raises
        ControllerMovedError when another broker got there first."""
        current = await self.get_controller_epoch()
        if current is None:
            current = await self._maybe_create_controller_epoch()
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        controller = z.encode_controller(ControllerRegistration(controller_id))
        try:
            results = await self.session.multi([
                CreateOp(z.CONTROLLER, controller, ephemeral=True),
                SetDataOp(z.CONTROLLER_EPOCH, z.encode_controller_epoch(new_epoch), epoch_zk_version)])
            if self.session.session_id is not None:
                self._ephemeral_sessions.add(self.session.session_id)
            return new_epoch, results[1].version
        except MultiOpError as exc:
            if not isinstance(exc.error, (NodeExistsError, BadVersionError)):
                raise exc.error from None
        # Lost, or won with an answer lost on the way: it is ours only if /controller names us and the epoch
        # is the one we wrote.
        current_controller = await self.get_controller_id()
        if current_controller is None:
            raise ControllerMovedError("/controller went away while checking whether the controller election "
                                       "succeeded; aborting controller startup")
        if current_controller == controller_id:
            found = await self.get_controller_epoch()
            if found is not None and found[0] == new_epoch:
                return found
        raise ControllerMovedError(f"controller moved to broker {current_controller}; aborting controller startup")

    async def _maybe_create_controller_epoch(self) -> tuple[int, int]:
        try:
            await self.session.create(z.CONTROLLER_EPOCH, z.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH))
            return INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        except NodeExistsError:
            found = await self.get_controller_epoch()
            if found is None:
                raise AdminOperationError("/controller_epoch existed but went away while reading it") from None
            return found

    async def get_controller(self, watch: Watch | None = None) -> ControllerRegistration | None:
        """The controller's registration; a watch fires when it is created, changed or deleted."""
        found = await self._get_data(z.CONTROLLER, watch)
        return z.decode_controller(found[0]) if found else None

    async def get_controller_id(self, watch: Watch | None = None) -> int | None:
        controller = await self.get_controller(watch)
        return controller.broker_id if controller else None

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, zkVersion of /controller_epoch), None before the first controller."""
        found = await self._get_data(z.CONTROLLER_EPOCH)
        return (z.decode_controller_epoch(found[0]), found[1].version) if found else None

    async def delete_controller(self, expected_epoch_zk_version: int) -> None:
        """Resign: delete /controller (only while still the controller)."""
        try:
            await self._fenced_one(DeleteOp(z.CONTROLLER), expected_epoch_zk_version)
        except NoNodeError:
            pass

    # -- topics -------------------------------------------------------------------------------------------

    async def get_all_topics(self, watch: Watch | None = None) -> set[str]:
        """Topic names; a watch fires when a topic is created or its znode deleted."""
        return set(await self._children(z.TOPICS, watch))

    async def topic_exists(self, topic: str) -> bool:
        return await self.session.exists(z.topic_path(topic)) is not None

    async def get_topic_assignment(self, topic: str, watch: Watch | None = None) -> TopicAssignment | None:
        """The topic's id and replicas; a watch fires when they change (new partitions, reassignment)."""
        found = await self._get_data(z.topic_path(topic), watch)
        return z.decode_topic(topic, found[0]) if found else None

    async def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        names = list(topics)
        answers = await self.session.pipeline([GetDataOp(z.topic_path(t)) for t in names])
        result = {}
        for topic, answer in zip(names, answers, strict=True):
            if isinstance(answer, NoNodeError):
                continue
            if isinstance(answer, Exception):
                raise answer
            result[topic] = z.decode_topic(topic, answer[0])
        return result

    async def create_topic_assignment(self, topic: str, assignment: TopicAssignment) -> None:
        """Write the new topic's znode; NodeExistsError when it exists."""
        await self._create_recursive(z.topic_path(topic), z.encode_topic(assignment))

    async def set_topic_assignment(self, topic: str, assignment: TopicAssignment,
                                   expected_controller_epoch_zk_version: int = ANY_VERSION) -> None:
        await self._fenced_one(SetDataOp(z.topic_path(topic), z.encode_topic(assignment)),
                               expected_controller_epoch_zk_version)

    async def create_topic(self, topic: str, assignment: Mapping[int, Sequence[int]],
                           config: Mapping[str, str] | None = None, *, topic_id: uuid.UUID | None = None,
                           validate: bool = True) -> uuid.UUID:
        """Create a topic as Kafka's AdminZkClient does: its config znode first (not transactional with the
        rest), then /brokers/topics/<topic>; the controller, watching, does the rest. Returns the topic id.
        TopicExistsError, InvalidTopicError, InvalidReplicaAssignmentError. (Config values are the caller's
        to validate.)"""
        if validate:
            await self.validate_topic_create(topic, assignment)
        topic_id = topic_id or z.random_uuid()
        await self.set_or_create_entity_config(ConfigType.TOPIC, topic, config or {})
        try:
            await self.create_topic_assignment(topic, TopicAssignment.of(assignment, topic_id))
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None
        return topic_id

    async def create_topic_auto_assigned(self, topic: str, partitions: int, replication_factor: int,
                                         config: Mapping[str, str] | None = None,
                                         rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
                                         **assign: Any) -> tuple[uuid.UUID, dict[int, list[int]]]:
        """Kafka's AdminZkClient.createTopic: replicas assigned over the live brokers, then create_topic.
        `assign` goes to assign_replicas_to_brokers (start_index, replica_shift, rng)."""
        brokers = await self.get_broker_metadatas(rack_aware_mode)
        assignment = assign_replicas_to_brokers(brokers, partitions, replication_factor, **assign)
        return await self.create_topic(topic, assignment, config), assignment

    async def validate_topic_create(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        validate_topic_name(topic)
        if await self.is_topic_marked_for_deletion(topic):
            raise TopicExistsError(f"Topic '{topic}' is marked for deletion.")
        if await self.topic_exists(topic):
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        if "." in topic or "_" in topic:
            topics = await self.get_all_topics()
            if topic in topics:
                raise TopicExistsError(f"Topic '{topic}' already exists.")
            colliding = sorted(t for t in topics if _unify(t) == _unify(topic))
            if colliding:
                raise InvalidTopicError(f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}")
        validate_topic_assignment(assignment)

    async def add_partitions(self, topic: str, num_partitions: int,
                             replica_assignment: Mapping[int, Sequence[int]] | None = None, *,
                             validate_only: bool = False) -> dict[int, list[int]]:
        """Grow a topic to `num_partitions` (CreatePartitions in ZooKeeper mode): the new partitions' replicas
        given or assigned, written into the topic znode (its id kept). Returns the whole assignment."""
        current = await self.get_topic_assignment(topic)
        if current is None or not current.partitions:
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        if any(a.is_being_reassigned for a in current.partitions.values()):
            raise ReassignmentInProgressError("A partition reassignment is in progress for the topic "
                                              f"'{topic}'.")
        brokers = await self.get_broker_metadatas()
        existing = {p: list(a.replicas) for p, a in current.partitions.items()}
        added = new_partitions_assignment(topic, existing, brokers, num_partitions, replica_assignment)
        combined = {**existing, **added}
        if not validate_only:
            partitions = dict(current.partitions)
            partitions.update({p: ReplicaAssignment(tuple(r)) for p, r in added.items()})
            await self.set_topic_assignment(topic, TopicAssignment(current.topic_id, partitions))
        return dict(sorted(combined.items()))

    async def set_topic_ids(self, topics: Mapping[str, TopicAssignment],
                            expected_controller_epoch_zk_version: int = ANY_VERSION) -> dict[str, TopicAssignment]:
        """Give topics created without an id (by an old tool) one, as Kafka's controller does."""
        updated = {}
        for topic, assignment in topics.items():
            if assignment.topic_id is not None:
                raise ValueError(f"topic {topic} already has a topic id")
            updated[topic] = replace(assignment, topic_id=z.random_uuid())
        results = await self._fenced([SetDataOp(z.topic_path(t), z.encode_topic(a)) for t, a in updated.items()],
                                     expected_controller_epoch_zk_version)
        for result in results:
            if isinstance(result, Exception):
                raise result
        return updated

    # -- partition states ---------------------------------------------------------------------------------

    async def get_partition_states(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionState]:
        """Each partition's state (with its zk_version), for those that have one."""
        wanted = list(partitions)
        answers = await self.session.pipeline([GetDataOp(z.partition_state_path(t, p)) for t, p in wanted])
        states = {}
        for tp, answer in zip(wanted, answers, strict=True):
            if isinstance(answer, NoNodeError):
                continue
            if isinstance(answer, Exception):
                raise answer
            states[tp] = z.decode_partition_state(answer[0], answer[1].version)
        return states

    async def get_partition_state(self, topic: str, partition: int,
                                  watch: Watch | None = None) -> PartitionState | None:
        found = await self._get_data(z.partition_state_path(topic, partition), watch)
        return z.decode_partition_state(found[0], found[1].version) if found else None

    async def get_partitions_with_state(self, topic: str) -> list[int]:
        return sorted(int(p) for p in await self._children(z.partitions_path(topic)))

    async def create_partition_states(self, states: Mapping[TopicPartition, PartitionState],
                                      expected_controller_epoch_zk_version: int = ANY_VERSION,
                                      ) -> dict[TopicPartition, PartitionState | Exception]:
        """Create the state znodes of new partitions (and their parents): each the written state (zk_version
        0) or its exception (NodeExistsError: it has one already)."""
        fence = expected_controller_epoch_zk_version
        topics = sorted({t for t, _ in states})
        await self._fenced([CreateOp(z.partitions_path(t)) for t in topics], fence)
        await self._fenced([CreateOp(z.partition_path(t, p)) for t, p in states], fence)
        results = await self._fenced(
            [CreateOp(z.partition_state_path(t, p), z.encode_partition_state(s)) for (t, p), s in states.items()],
            fence)
        return {tp: (r if isinstance(r, Exception) else replace(s, zk_version=0))
                for (tp, s), r in zip(states.items(), results, strict=True)}

    async def update_leader_and_isr(self, states: Mapping[TopicPartition, PartitionState], controller_epoch: int,
                                    expected_controller_epoch_zk_version: int = ANY_VERSION,
                                    ) -> UpdateLeaderAndIsrResult:
        """Write new partition states, each only if its znode is still at the state's zk_version (read with
        it). The written ones come back with their new zk_version; for those where another writer came first
        the current state is read again and reported in `conflicts`."""
        items = [(tp, replace(s, controller_epoch=controller_epoch)) for tp, s in states.items()]
        results = await self._fenced(
            [SetDataOp(z.partition_state_path(t, p), z.encode_partition_state(s), s.zk_version)
             for (t, p), s in items], expected_controller_epoch_zk_version)
        outcome = UpdateLeaderAndIsrResult()
        lost = []
        for (tp, state), result in zip(items, results, strict=True):
            if isinstance(result, BadVersionError):
                lost.append(tp)
            elif isinstance(result, Exception):
                outcome.finished[tp] = result
            else:
                outcome.finished[tp] = replace(state, zk_version=result.version)
        if lost:
            current = await self.get_partition_states(lost)
            outcome.conflicts.update({tp: current.get(tp) for tp in lost})
        return outcome

    # -- topic deletion -----------------------------------------------------------------------------------

    async def delete_topic(self, topic: str) -> None:
        """Mark a topic for deletion (/admin/delete_topics/<topic>), as AdminZkClient.deleteTopic;
        UnknownTopicOrPartitionError, TopicAlreadyMarkedForDeletionError."""
        if not await self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        try:
            await self._create_recursive(z.delete_topic_path(topic))
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(f"topic {topic} is already marked for deletion") from None

    async def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return await self.session.exists(z.delete_topic_path(topic)) is not None

    async def get_topic_deletions(self, watch: Watch | None = None) -> list[str]:
        """Topics marked for deletion; a watch fires when one is marked or unmarked."""
        return sorted(await self._children(z.DELETE_TOPICS, watch))

    async def delete_topic_deletions(self, topics: Iterable[str], expected_controller_epoch_zk_version: int) -> None:
        await self._fenced([DeleteOp(z.delete_topic_path(t)) for t in topics], expected_controller_epoch_zk_version)

    async def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int) -> None:
        """Remove /brokers/topics/<topic> and its partition states (the controller's last step)."""
        await self._delete_recursive(z.topic_path(topic), expected_controller_epoch_zk_version)

    async def delete_topic_configs(self, topics: Iterable[str], expected_controller_epoch_zk_version: int) -> None:
        await self._fenced([DeleteOp(z.config_path(ConfigType.TOPIC, t)) for t in topics],
                           expected_controller_epoch_zk_version)

    # -- log directory failures (Kafka's LogDirEventNotification) -------------------------------------------

    async def propagate_log_dir_event(self, broker_id: int) -> str:
        """A broker's log directory failed: a sequential znode under /log_dir_event_notification that the
        controller reads (and deletes)."""
        return await self.session.create(z.LOG_DIR_EVENT_NOTIFICATION + "/" + z.LOG_DIR_EVENT_PREFIX,
                                         z.encode_log_dir_event(broker_id), sequence=True, makepath=True)

    async def get_log_dir_events(self, watch: Watch | None = None) -> dict[str, int]:
        """{event znode name: broker id} of the pending events; a watch fires when one is added."""
        names = sorted(await self._children(z.LOG_DIR_EVENT_NOTIFICATION, watch))
        answers = await self.session.pipeline([GetDataOp(f"{z.LOG_DIR_EVENT_NOTIFICATION}/{n}") for n in names])
        events = {}
        for name, answer in zip(names, answers, strict=True):
            if not isinstance(answer, Exception):  # gone meanwhile: handled already
                try:
                    events[name] = z.decode_log_dir_event(answer[0])
                except ValueError:
                    log.warning("unreadable log dir event %s: %r", name, answer[0])
        return events

    async def delete_log_dir_events(self, names: Iterable[str], expected_controller_epoch_zk_version: int) -> None:
        await self._fenced([DeleteOp(f"{z.LOG_DIR_EVENT_NOTIFICATION}/{n}") for n in names],
                           expected_controller_epoch_zk_version)

    # -- reassignment and preferred leader election markers ------------------------------------------------

    async def create_partition_reassignment(self, reassignment: Mapping[TopicPartition, Iterable[int]]) -> None:
        """Write /admin/reassign_partitions (NodeExistsError while one runs)."""
        await self._create_recursive(z.REASSIGN_PARTITIONS, z.encode_reassignment(reassignment))

    async def get_partition_reassignment(self, watch: Watch | None = None) -> dict[TopicPartition, tuple[int, ...]]:
        """The reassignment asked for through the znode; {} if none (or unreadable, as Kafka ignores it)."""
        found = await self._get_data(z.REASSIGN_PARTITIONS, watch)
        if not found:
            return {}
        try:
            return z.decode_reassignment(found[0])
        except ValueError as exc:
            log.warning("ignoring partition reassignment due to invalid json: %s", exc)
            return {}

    async def set_or_create_partition_reassignment(self, reassignment: Mapping[TopicPartition, Iterable[int]],
                                                   expected_controller_epoch_zk_version: int) -> None:
        data = z.encode_reassignment(reassignment)
        try:
            await self._fenced_one(SetDataOp(z.REASSIGN_PARTITIONS, data), expected_controller_epoch_zk_version)
        except NoNodeError:
            await self._fenced_one(CreateOp(z.REASSIGN_PARTITIONS, data), expected_controller_epoch_zk_version)

    async def delete_partition_reassignment(self, expected_controller_epoch_zk_version: int) -> None:
        await self._delete_recursive(z.REASSIGN_PARTITIONS, expected_controller_epoch_zk_version)

    async def reassign_partitions_in_progress(self) -> bool:
        return await self.session.exists(z.REASSIGN_PARTITIONS) is not None

    async def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        await self._create_recursive(z.PREFERRED_REPLICA_ELECTION, z.encode_preferred_replica_election(partitions))

    async def get_preferred_replica_election(self, watch: Watch | None = None) -> set[TopicPartition]:
        found = await self._get_data(z.PREFERRED_REPLICA_ELECTION, watch)
        return z.decode_preferred_replica_election(found[0]) if found else set()

    async def delete_preferred_replica_election(self, expected_controller_epoch_zk_version: int) -> None:
        try:
            await self._fenced_one(DeleteOp(z.PREFERRED_REPLICA_ELECTION), expected_controller_epoch_zk_version)
        except NoNodeError:
            pass

    # -- configs and their change notifications -----------------------------------------------------------

    async def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """/config/<type>/<name> (names sanitized: see znodes.sanitize); {} when there is none."""
        found = await self._get_data(z.config_path(entity_type, entity_name))
        return z.decode_config(found[0]) if found else {}

    async def get_entity_configs(self, entity_type: str, entity_names: Iterable[str]) -> dict[str, dict[str, str]]:
        names = list(entity_names)
        answers = await self.session.pipeline([GetDataOp(z.config_path(entity_type, n)) for n in names])
        configs = {}
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, NoNodeError):
                configs[name] = {}
            elif isinstance(answer, Exception):
                raise answer
            else:
                configs[name] = z.decode_config(answer[0])
        return configs

    async def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        return sorted(await self._children(f"{z.CONFIG}/{entity_type}"))

    async def set_or_create_entity_config(self, entity_type: str, entity_name: str, config: Mapping[str, str]) -> None:
        """Replace the entity's whole config (no notification: see change_entity_config)."""
        path = z.config_path(entity_type, entity_name)
        data = z.encode_config(config)
        try:
            await self.session.set(path, data)
        except NoNodeError:
            try:
                await self.session.create(path, data, makepath=True)
            except NodeExistsError:
                await self.session.set(path, data)

    async def change_entity_config(self, entity_type: str, entity_name: str, config: Mapping[str, str]) -> None:
        """Replace the config and tell every broker (AdminZkClient.changeEntityConfig); `config` is the whole
        new config, validated by the caller."""
        await self.set_or_create_entity_config(entity_type, entity_name, config)
        await self.create_config_change_notification(f"{entity_type}/{entity_name}")

    async def create_config_change_notification(self, entity_path: str) -> str:
        """A sequential /config/changes/config_change_N naming `type/name`; returns its path."""
        await self.session.ensure_path(z.CONFIG_CHANGES)
        return await self.session.create(f"{z.CONFIG_CHANGES}/{z.CONFIG_CHANGE_PREFIX}",
                                         z.encode_config_change(entity_path), sequence=True)

    async def get_config_change_notifications(self, watch: Watch | None = None) -> list[str]:
        """Notification znode names in order; a watch fires when one is added."""
        children = await self._children(z.CONFIG_CHANGES, watch)
        return sorted(c for c in children if c.startswith(z.CONFIG_CHANGE_PREFIX))

    async def get_config_change_notification(self, name: str) -> tuple[str, int] | None:
        """(entity path, creation time in ms) of one notification, None if already purged."""
        found = await self._get_data(f"{z.CONFIG_CHANGES}/{name}")
        return (z.decode_config_change(found[0]), found[1].ctime) if found else None

    async def delete_config_change_notifications(self, names: Iterable[str]) -> None:
        """Purge processed notifications (Kafka drops those older than 15 minutes)."""
        await self.session.pipeline([DeleteOp(f"{z.CONFIG_CHANGES}/{n}") for n in names])

    # -- ACLs (AclAuthorizer's store: /kafka-acl, /kafka-acl-extended and their change notifications) --------

    async def create_acl_paths(self) -> None:
        """The ACL roots, one container per resource type, and the change notification roots."""
        for root in (z.KAFKA_ACL, f"{z.KAFKA_ACL_EXTENDED}/prefixed"):
            for resource_type in z.ACL_RESOURCE_TYPES:
                await self.session.ensure_path(f"{root}/{resource_type}")
        await self.session.ensure_path(z.KAFKA_ACL_CHANGES)
        await self.session.ensure_path(z.KAFKA_ACL_EXTENDED_CHANGES)

    async def get_acls(self, resource_type: str, name: str,
                       pattern_type: str = "LITERAL") -> tuple[set[z.AclEntry], int]:
        """The ACLs of one resource pattern and the znode's version (-2, Kafka's UnknownVersion, if none)."""
        found = await self._get_data(z.acl_path(resource_type, name, pattern_type))
        if found is None:
            return set(), UNKNOWN_VERSION
        return z.decode_acls(found[0]), found[1].version

    async def get_acl_resource_names(self, resource_type: str, pattern_type: str = "LITERAL") -> list[str]:
        return sorted(await self._children(z.acl_path(resource_type, "", pattern_type).rstrip("/")))

    async def set_acls(self, resource_type: str, name: str, acls: Iterable[z.AclEntry], expected_version: int,
                       pattern_type: str = "LITERAL") -> int | None:
        """Write a resource's ACLs if its znode is at `expected_version` (UNKNOWN_VERSION: create it); the new
        version, or None when another writer came first (read again and merge, as AclAuthorizer does)."""
        path = z.acl_path(resource_type, name, pattern_type)
        data = z.encode_acls(acls)
        try:
            if expected_version == UNKNOWN_VERSION:
                await self.session.create(path, data, makepath=True)
                return 0
            return (await self.session.set(path, data, version=expected_version)).version
        except (NodeExistsError, BadVersionError, NoNodeError):
            return None

    async def delete_acls(self, resource_type: str, name: str, expected_version: int,
                          pattern_type: str = "LITERAL") -> bool:
        """Delete a resource's ACL znode if still at `expected_version`; False when it moved on."""
        try:
            await self.session.delete(z.acl_path(resource_type, name, pattern_type), version=expected_version)
        except NoNodeError:
            pass
        except BadVersionError:
            return False
        return True

    async def create_acl_change_notification(self, resource_type: str, name: str,
                                             pattern_type: str = "LITERAL") -> str:
        """Tell every broker's authorizer to reload one resource's ACLs."""
        root = z.KAFKA_ACL_CHANGES if pattern_type.upper() == "LITERAL" else z.KAFKA_ACL_EXTENDED_CHANGES
        await self.session.ensure_path(root)
        return await self.session.create(f"{root}/{z.ACL_CHANGE_PREFIX}",
                                         z.encode_acl_change(resource_type, name, pattern_type), sequence=True)

    # -- delegation tokens (DelegationTokenManagerZk) ---------------------------------------------------------

    async def get_delegation_tokens(self) -> list[z.DelegationTokenZNode]:
        names = await self._children(z.DELEGATION_TOKENS)
        answers = await self.session.pipeline([GetDataOp(f"{z.DELEGATION_TOKENS}/{n}") for n in names])
        return [z.decode_delegation_token(a[0]) for a in answers if not isinstance(a, Exception)]

    async def set_delegation_token(self, token: z.DelegationTokenZNode) -> None:
        """Create or replace a token's znode, then tell every broker (a token_changes notification)."""
        path = f"{z.DELEGATION_TOKENS}/{token.token_id}"
        data = z.encode_delegation_token(token)
        try:
            await self.session.set(path, data)
        except NoNodeError:
            await self.session.create(path, data, makepath=True)
        await self._token_changed(token.token_id)

    async def delete_delegation_token(self, token_id: str) -> None:
        try:
            await self.session.delete(f"{z.DELEGATION_TOKENS}/{token_id}")
        except NoNodeError:
            pass
        await self._token_changed(token_id)

    async def _token_changed(self, token_id: str) -> None:
        await self.session.ensure_path(z.DELEGATION_TOKEN_CHANGES)
        await self.session.create(f"{z.DELEGATION_TOKEN_CHANGES}/{z.TOKEN_CHANGE_PREFIX}", token_id.encode(),
                                  sequence=True)

    async def get_token_change_notifications(self, watch: Watch | None = None) -> list[str]:
        return sorted(await self._children(z.DELEGATION_TOKEN_CHANGES, watch))

    # -- features and producer id blocks ------------------------------------------------------------------

    async def get_feature(self, watch: Watch | None = None) -> tuple[FeatureZNode, int] | None:
        found = await self._get_data(z.FEATURE, watch)
        return (z.decode_feature(found[0]), found[1].version) if found else None

    async def create_feature(self, node: FeatureZNode) -> None:
        await self.session.create(z.FEATURE, z.encode_feature(node))

    async def update_feature(self, node: FeatureZNode) -> int:
        return (await self.session.set(z.FEATURE, z.encode_feature(node))).version

    async def claim_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        """The next block of 1000 producer ids, claimed with a conditional write on the znode version."""
        while True:
            found = await self._get_data(z.PRODUCER_ID_BLOCK)
            block = next_block(decode_block(found[0]) if found and found[0] else None, broker_id)
            try:
                if found is None:
                    await self.session.create(z.PRODUCER_ID_BLOCK, encode_block(block), makepath=True)
                else:
                    await self.session.set(z.PRODUCER_ID_BLOCK, encode_block(block), version=found[1].version)
                return block
            except (BadVersionError, NodeExistsError):
                continue
