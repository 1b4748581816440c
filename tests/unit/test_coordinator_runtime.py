"""The coordinator runtime (broker/services/coordinator_runtime.py): Kafka's CoordinatorState transitions, loading
and unloading a coordinator partition as leadership comes and goes, the answers for a key in each state, and
writes. Real logs in a temporary data dir; the shard is a small coordinator keeping the last value of each key."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from broker.clock import VirtualClock
from broker.config.options import BrokerConfig
from broker.log.append import Appender
from broker.log.flusher import GroupFlusher
from broker.services.coordinator_runtime import (
    VALID_PREVIOUS,
    CoordinatorContext,
    CoordinatorRuntime,
    CoordinatorState,
    CoordinatorStateError,
    CoordinatorWriteError,
)
from broker.services.durability import Durability
from broker.services.internal_topics import internal_topic, partition_for
from broker.services.topics import OFFSETS_TOPIC, TopicManager
from protocol.header import ErrorCode
from protocol.records import BatchHeader, Record

T0 = 1_700_000_000_000
PARTITIONS = 4
S = CoordinatorState


class KeyValues:
    """A coordinator whose state is the last value of each key; it can be told to fail on a key."""

    def __init__(self) -> None:
        self.state: dict[str, bytes] = {}
        self.loads: list[int] = []  # partitions whose load completed, in order
        self.unloads = 0
        self.fail_on: bytes | None = None
        self.during_replay: Callable[[], None] | None = None

    def start_load(self, index: int) -> _Load:
        return _Load(self, index)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        gone = [k for k in self.state if belongs(k)]
        for key in gone:
            del self.state[key]
        self.unloads += 1
        return len(gone)

    def on_loaded(self, index: int, epoch: int) -> None:
        self.loads.append(index)


class _Load:
    def __init__(self, shard: KeyValues, index: int) -> None:
        self.shard, self.index, self.seen = shard, index, {}

    def replay(self, header: BatchHeader, records: list[Record]) -> None:
        if self.shard.during_replay is not None:
            self.shard.during_replay()
        for record in records:
            if record.key == self.shard.fail_on:
                raise ValueError("unreadable record")
            self.seen[record.key.decode()] = record.value

    def complete(self, now_ms: int) -> None:
        self.shard.state.update(self.seen)


def keys_of(index: int) -> list[str]:
    return [k for k in (f"key-{i}" for i in range(200)) if partition_for(k, PARTITIONS) == index]


@pytest.fixture
def topics(tmp_path: Path) -> TopicManager:
    topics = TopicManager(BrokerConfig(data_dir=tmp_path, offsets_topic_num_partitions=PARTITIONS), T0)
    yield topics
    topics.close()


def runtime(topics: TopicManager, shard: KeyValues, *, per_partition: bool) -> CoordinatorRuntime:
    return CoordinatorRuntime(OFFSETS_TOPIC, "key(s)", shard, topics, lambda name: internal_topic(topics, name, T0),
                              Appender(lambda: None), Durability(GroupFlusher("none")), VirtualClock(T0),
                              per_partition=per_partition)


def written(topics: TopicManager, values: dict[str, bytes]) -> None:
    """Records in the topic, as a single broker's coordinator writes them."""
    writer = runtime(topics, KeyValues(), per_partition=False)
    for key, value in values.items():
        writer.append(key, [(key.encode(), value)], timestamp=T0, now_ms=T0)


# -- the states ---------------------------------------------------------------------------------------------------

KAFKA_TRANSITIONS = {  # Kafka's CoordinatorState.canTransitionFrom, target <- sources
    S.INITIAL: set(),
    S.LOADING: {S.INITIAL, S.FAILED},
    S.ACTIVE: {S.ACTIVE, S.LOADING},
    S.FAILED: {S.LOADING, S.ACTIVE},
    S.CLOSED: set(S),
}


@pytest.mark.parametrize(("source", "target"), list(itertools.product(S, S)), ids=lambda s: s.name)
def test_transitions_are_kafkas(source, target):
    context = CoordinatorContext(0, state=source)
    assert (source in VALID_PREVIOUS[target]) == (source in KAFKA_TRANSITIONS[target])
    if source in KAFKA_TRANSITIONS[target]:
        context.transition_to(target)
        assert context.state is target
    else:
        with pytest.raises(CoordinatorStateError):
            context.transition_to(target)
        assert context.state is source


# -- a cluster's broker: per partition, as it becomes the leader ----------------------------------------------------

def test_a_partition_is_loaded_when_led_and_forgotten_when_not(topics):
    mine, other = keys_of(1)[:2], keys_of(2)[0]
    written(topics, {mine[0]: b"a", mine[1]: b"b", other: b"c"})
    shard = KeyValues()
    rt = runtime(topics, shard, per_partition=True)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await rt.start(nursery)
            assert rt.error_for(mine[0]) == ErrorCode.NOT_COORDINATOR
            rt.on_partition(1, 5)
            assert rt.contexts[1].state is S.LOADING
            assert rt.error_for(mine[0]) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await trio.testing.wait_all_tasks_blocked()
            assert rt.contexts[1].state is S.ACTIVE
            assert rt.error_for(mine[0]) is None and rt.epoch_of(mine[0]) == 5
            assert rt.error_for(other) == ErrorCode.NOT_COORDINATOR  # led elsewhere
            assert shard.state == {mine[0]: b"a", mine[1]: b"b"} and shard.loads == [1]

            rt.on_partition(1, 5)  # the same LeaderAndIsr again
            rt.on_partition(1, 7)  # a newer epoch, still the leader: stays ACTIVE, not reloaded
            await trio.testing.wait_all_tasks_blocked()
            assert (rt.contexts[1].state, rt.epoch_of(mine[0]), shard.loads) == (S.ACTIVE, 7, [1])

            rt.on_partition(1, None)
            assert 1 not in rt.contexts and shard.state == {}
            assert rt.error_for(mine[0]) == ErrorCode.NOT_COORDINATOR
            rt.on_partition(1, 8)  # led here again
            await trio.testing.wait_all_tasks_blocked()
            assert rt.error_for(mine[0]) is None and shard.state == {mine[0]: b"a", mine[1]: b"b"}
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_leaderships_taken_before_the_start_are_loaded_at_start(topics):
    written(topics, {keys_of(3)[0]: b"x"})
    shard = KeyValues()
    rt = runtime(topics, shard, per_partition=True)
    rt.on_partition(3, 1)
    assert rt.contexts[3].state is S.LOADING

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await rt.start(nursery)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert rt.contexts[3].state is S.ACTIVE and shard.state == {keys_of(3)[0]: b"x"}


def test_a_partition_unloaded_while_loading_keeps_nothing(topics):
    written(topics, {k: b"v" for k in keys_of(0)[:3]})
    shard = KeyValues()
    rt = runtime(topics, shard, per_partition=True)
    shard.during_replay = lambda: rt.on_partition(0, None)  # the leadership moves on mid-replay

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await rt.start(nursery)
            rt.on_partition(0, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert shard.state == {} and shard.loads == [] and 0 not in rt.contexts


def test_a_failed_load_is_failed_until_a_newer_epoch_loads_it(topics):
    keys = keys_of(2)[:2]
    written(topics, {keys[0]: b"good", keys[1]: b"bad"})
    shard = KeyValues()
    shard.fail_on = keys[1].encode()
    rt = runtime(topics, shard, per_partition=True)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await rt.start(nursery)
            rt.on_partition(2, 1)
            await trio.testing.wait_all_tasks_blocked()
            assert rt.contexts[2].state is S.FAILED
            assert rt.error_for(keys[0]) == ErrorCode.NOT_COORDINATOR and shard.state == {}
            with pytest.raises(CoordinatorWriteError) as refused:
                rt.append(keys[0], [(b"k", b"v")], timestamp=T0, now_ms=T0)
            assert refused.value.error == ErrorCode.NOT_COORDINATOR
            shard.fail_on = None
            rt.on_partition(2, 2)
            await trio.testing.wait_all_tasks_blocked()
            assert rt.contexts[2].state is S.ACTIVE and rt.error_for(keys[0]) is None
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_no_coordinator_topic_yet_in_a_cluster(tmp_path):
    topics = TopicManager(BrokerConfig(data_dir=tmp_path), T0, cluster=True)
    rt = CoordinatorRuntime(OFFSETS_TOPIC, "key(s)", KeyValues(), topics, lambda name: ErrorCode.LEADER_NOT_AVAILABLE,
                            Appender(lambda: None), Durability(GroupFlusher("none")), VirtualClock(T0),
                            per_partition=True)
    assert rt.error_for("g") == ErrorCode.COORDINATOR_NOT_AVAILABLE
    with pytest.raises(CoordinatorWriteError) as refused:
        rt.append("g", [(b"k", b"v")], timestamp=T0, now_ms=T0)
    assert refused.value.error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    topics.close()


# -- a single broker: everything at start ----------------------------------------------------------------------------

def test_a_single_broker_loads_every_partition_at_start(topics):
    values = {keys_of(i)[0]: b"%d" % i for i in range(PARTITIONS)}
    written(topics, values)
    shard = KeyValues()
    rt = runtime(topics, shard, per_partition=False)
    assert rt.error_for(keys_of(0)[0]) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await rt.start(nursery)
            assert rt.loaded.is_set()
            assert all(c.state is S.ACTIVE for c in rt.contexts.values()) and len(rt.contexts) == PARTITIONS
            assert all(rt.error_for(k) is None and rt.epoch_of(k) == 0 for k in values)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert shard.state == values and sorted(shard.loads) == list(range(PARTITIONS))


def test_a_single_broker_coordinates_a_topic_created_after_its_start(tmp_path):
    topics = TopicManager(BrokerConfig(data_dir=tmp_path, offsets_topic_num_partitions=PARTITIONS), T0)
    rt = runtime(topics, KeyValues(), per_partition=False)
    trio.run(rt.load_all)  # no topic yet: nothing to load
    assert rt.loaded.is_set() and rt.error_for("g") is None
    partition, offset = rt.append("g", [(b"g", b"v")], timestamp=T0, now_ms=T0)  # creates the topic
    assert partition.index == partition_for("g", PARTITIONS) and offset == 0
    assert rt.error_for("g") is None
    assert trio.run(rt.durable, partition, offset) == ErrorCode.NONE
    topics.close()


def test_a_single_broker_with_a_failed_partition_answers_for_it(topics):
    bad, good = keys_of(1)[0], keys_of(2)[0]
    written(topics, {bad: b"x", good: b"y"})
    shard = KeyValues()
    shard.fail_on = bad.encode()
    rt = runtime(topics, shard, per_partition=False)
    trio.run(rt.load_all)
    assert rt.contexts[1].state is S.FAILED
    assert rt.error_for(bad) == ErrorCode.NOT_COORDINATOR and rt.error_for(good) is None


def test_writes_are_read_back_by_the_next_load(topics):
    shard = KeyValues()
    rt = runtime(topics, shard, per_partition=False)
    trio.run(rt.load_all)
    key = keys_of(3)[0]
    rt.append(key, [(key.encode(), b"one")], timestamp=T0, now_ms=T0)
    rt.append(key, [(key.encode(), b"two")], timestamp=T0, now_ms=T0, producer_id=7, producer_epoch=0)
    partition = rt.partition_of(key)
    assert partition.producers.first_unstable_offset() == 1  # the transactional batch opened a transaction
    again = KeyValues()
    trio.run(runtime(topics, again, per_partition=False).load_all)
    assert again.state == {key: b"two"}
