"""Kafka 4.4's StickyTaskAssignor for streams groups: active tasks spread evenly over the members, each kept by
its previous owner (or by a member that held it as a standby) while that member is below its share; standby
replicas of stateful tasks on other processes than the task's active one, again sticky first, then on the least
loaded process. Loads are per process (a Kafka Streams instance runs one member per stream thread): a process's
load is its task count over its member count.

The algorithm is Kafka's; where Kafka breaks ties by Java hash map and priority queue order, members are taken in
join order and equal loads in the order the processes were first seen, so a single task may land on another
member than on Kafka (the balance is the same).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

TaskId = tuple[str, int]  # (subtopology id, partition)
TaskSet = Mapping[str, frozenset[int]]  # subtopology id -> partitions


class TaskAssignorError(Exception):
    """Kafka's TaskAssignorException."""


@dataclass(frozen=True, slots=True)
class AssignmentMember:
    """What the assignor knows of a member: its process, its target assignment so far, its task offsets."""

    process_id: str
    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    task_offsets: Mapping[TaskId, int] = field(default_factory=dict)  # changelog offset sums it reported


@dataclass(frozen=True, slots=True)
class AssignedTasks:
    active: dict[str, frozenset[int]]
    standby: dict[str, frozenset[int]]


class _Process:
    """Kafka's ProcessState: one Streams instance's members and what they were given."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.task_counts: dict[str, int] = {}  # member -> tasks (active and standby)
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self.task_count = 0

    @property
    def load(self) -> float:
        return self.task_count / len(self.task_counts) if self.task_counts else -1.0

    def add_member(self, member_id: str) -> None:
        self.task_counts[member_id] = 0

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.task_counts[member_id] += 1
        return self.task_counts[member_id]

    def add_task_to_least_loaded_member(self, task: TaskId, active: bool) -> int:
        if not self.task_counts:
            return -1
        member_id = min(self.task_counts, key=lambda m: self.task_counts[m])  # first of the least loaded
        return self.add_task(member_id, task, active)


class _State:
    def __init__(self, members: Mapping[str, AssignmentMember], subtopologies: Mapping[str, tuple[int, bool]],
                 num_standby_replicas: int) -> None:
        self.num_standby = num_standby_replicas
        self.total_active = sum(n for n, _ in subtopologies.values())
        self.total_tasks = sum(n * (1 + (num_standby_replicas if stateful else 0))
                               for n, stateful in subtopologies.values())
        self.members_with_active_capacity = len(members)
        self.members_with_capacity = len(members)
        self.active_per_member = _per_member(self.total_active, len(members))
        self.tasks_per_member = _per_member(self.total_tasks, len(members))
        self.processes: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, tuple[str, str]] = {}  # task -> (process, member)
        candidates: dict[TaskId, list[tuple[int, int, int, tuple[str, str]]]] = {}
        order = itertools.count()
        for member_id, member in members.items():
            self.processes.setdefault(member.process_id, _Process(member.process_id)).add_member(member_id)
            who = (member.process_id, member_id)
            for sub, parts in member.active.items():
                for p in parts:
                    self.prev_active[(sub, p)] = who
            # Standbys of the target rank first, then members that only report state for the task; within
            # each, the most caught-up first (Kafka's STANDBY_CANDIDATE_ORDER).
            for sub, parts in member.standby.items():
                for p in sorted(parts):
                    candidates.setdefault((sub, p), []).append(
                        (0, -member.task_offsets.get((sub, p), 0), next(order), who))
            for task, offset in member.task_offsets.items():
                if task[1] not in member.standby.get(task[0], ()):
                    candidates.setdefault(task, []).append((1, -offset, next(order), who))
        self.prev_standby = {task: [who for *_, who in sorted(c)] for task, c in candidates.items()}

    def member_count(self, who: tuple[str, str]) -> int:
        return self.processes[who[0]].task_counts[who[1]]

    def took_active(self, count: int) -> None:
        if count == self.active_per_member:  # Kafka's maybeUpdateActiveTasksPerMember
            self.members_with_active_capacity -= 1
            self.total_active -= count
            self.active_per_member = _per_member(self.total_active, self.members_with_active_capacity)

    def took_task(self, count: int) -> None:
        if count == self.tasks_per_member:  # Kafka's maybeUpdateTotalTasksPerMember
            self.members_with_capacity -= 1
            self.total_tasks -= count
            self.tasks_per_member = _per_member(self.total_tasks, self.members_with_capacity)

    def prev_member_with_least_load(self, members: list[tuple[str, str]] | None, task: TaskId | None
                                    ) -> tuple[str, str] | None:
        """Kafka's findPrevMemberWithLeastLoad: a later candidate wins only if both its process and its member
        are less loaded; with `task`, processes that already have it are skipped."""
        best: tuple[str, str] | None = None
        best_process = best_member = float("inf")
        for who in members or ():
            process = self.processes[who[0]]
            if task is not None and task in process.tasks:
                continue
            load, count = process.load, process.task_counts[who[1]]
            if best is None or (load < best_process and count < best_member):
                best, best_process, best_member = who, load, count
        return best


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


def assign(members: Mapping[str, AssignmentMember], subtopologies: Mapping[str, tuple[int, bool]],
           num_standby_replicas: int) -> dict[str, AssignedTasks]:
    """The target assignment of every member. `subtopologies`: id -> (number of tasks, stateful), in order."""
    state = _State(members, subtopologies, num_standby_replicas)
    active = [(sub, p) for sub, (n, _) in subtopologies.items() for p in range(n)]
    _assign_active(state, active)
    if num_standby_replicas > 0:
        _assign_standby(state, [(sub, p) for sub, (n, stateful) in subtopologies.items() if stateful
                                for p in range(n)])
    out: dict[str, AssignedTasks] = {}
    for process in state.processes.values():
        for member_id in process.task_counts:
            out[member_id] = AssignedTasks(_compact(process.active.get(member_id, ())),
                                           _compact(process.standby.get(member_id, ())))
    return {m: out.get(m, AssignedTasks({}, {})) for m in members}


def _compact(tasks: set[TaskId] | tuple[()]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for sub, p in tasks:
        out.setdefault(sub, set()).add(p)
    return {sub: frozenset(parts) for sub, parts in sorted(out.items())}


def _assign_active(state: _State, tasks: list[TaskId]) -> None:
    remaining = sorted(tasks, key=lambda t: (t[1], t[0]))  # partition first: a range-like current assignment
    for previous in (lambda t: state.prev_active.get(t),
                     lambda t: state.prev_member_with_least_load(state.prev_standby.get(t), None)):
        left = []
        for task in remaining:
            who = previous(task)
            if who is not None and state.member_count(who) < state.active_per_member:
                count = state.processes[who[0]].add_task(who[1], task, True)
                state.took_active(count)
                state.took_task(count)
            else:
                left.append(task)
        remaining = left
    heap = _ProcessHeap(state.processes.values())
    for task in sorted(remaining):  # by subtopology: an initially range-based assignment
        process = heap.pop()
        if process is None:
            raise TaskAssignorError(f"No process available to assign active task {task}.")
        count = process.add_task_to_least_loaded_member(task, True)
        if count == -1:
            raise TaskAssignorError(f"No member available to assign active task {task}.")
        state.took_active(count)
        state.took_task(count)
        heap.push(process)


def _assign_standby(state: _State, tasks: list[TaskId]) -> None:
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(state.num_standby):
            who = state.prev_active.get(task)
            if who is not None:
                process = state.processes[who[0]]
                if task not in process.tasks and state.member_count(who) < state.tasks_per_member:
                    state.took_task(process.add_task(who[1], task, False))
                    continue
            who = state.prev_member_with_least_load(state.prev_standby.get(task), task)
            if who is not None and state.member_count(who) < state.tasks_per_member:
                state.took_task(state.processes[who[0]].add_task(who[1], task, False))
                continue
            to_least_loaded.append((task, state.num_standby - i))
            break
    heap = _ProcessHeap(state.processes.values())
    for task, replicas in sorted(to_least_loaded, reverse=True):
        for i in range(replicas):
            if not _standby_to_least_loaded(state, heap, task):
                log.warning("Unable to assign %d of %d standby tasks for task [%s_%d]. There is not enough available "
                            "capacity. You should increase the number of threads and/or application instances to "
                            "maintain the requested number of standby replicas.", replicas - i, state.num_standby,
                            task[0], task[1])
                break


def _standby_to_least_loaded(state: _State, heap: _ProcessHeap, task: TaskId) -> bool:
    """The least loaded process that does not have the task yet gets it (Kafka's
    assignStandbyToMemberWithLeastLoad, whose recursion sets the skipped processes aside)."""
    skipped = []
    found = False
    while (process := heap.pop()) is not None:
        skipped.append(process)
        if task not in process.tasks:
            count = process.add_task_to_least_loaded_member(task, False)
            if count != -1:
                found = True
                state.took_task(count)
            break
    for process in skipped:
        heap.push(process)
    return found


class _ProcessHeap:
    """Processes by load (Kafka's PriorityQueue); equal loads in the order the processes were first seen."""

    def __init__(self, processes: object) -> None:
        self._rank = {}
        self._heap: list[tuple[float, int, _Process]] = []
        for i, process in enumerate(processes):  # type: ignore[call-overload]
            self._rank[process.process_id] = i
            self.push(process)

    def push(self, process: _Process) -> None:
        heapq.heappush(self._heap, (process.load, self._rank[process.process_id], process))

    def pop(self) -> _Process | None:
        return heapq.heappop(self._heap)[2] if self._heap else None
