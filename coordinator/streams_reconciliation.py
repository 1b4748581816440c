"""Kafka 4.4's streams CurrentAssignmentBuilder: a member's next step towards its target assignment.

Tasks the member must give up are revoked first: it stays in its epoch (UNREVOKED_TASKS) until a heartbeat
reports them gone. A task is given only once nobody else holds it in a way that conflicts: an active task once
no member runs it anywhere, and no other member of the same process holds it as a standby or warm-up; a
standby or warm-up task once no other member of the same process holds it (a process never runs a task twice).
Until then the member waits in UNRELEASED_TASKS. A member's own task changes role in place: an active task
demoted to a standby is given as the standby at once, standby and warm-up turn into each other without a
revocation, and a standby (or warm-up) promoted to active is kept until the active task is granted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coordinator.group_interfaces import GroupError
from coordinator.streams_group import AssignedTasks, MemberState, StreamsGroupMember, TaskEpochs, TaskSet, TasksTuple
from protocol.header import ErrorCode

ProcessOf = Callable[[str, int], str | None]  # (subtopology, partition) -> process running it active, or None
ProcessesOf = Callable[[str, int], set[str]]  # -> processes holding it as a standby (or warm-up)


@dataclass(frozen=True, slots=True)
class Owners:
    """Who holds which task now, by process (the group's current assignment)."""

    active: ProcessOf
    standby: ProcessesOf
    warmup: ProcessesOf


def next_assignment(member: StreamsGroupMember, target_epoch: int, target: TasksTuple, owners: Owners,
                    owned: TasksTuple | None) -> StreamsGroupMember:
    """Kafka's CurrentAssignmentBuilder.build. `owned`: the tasks the heartbeat reported, None if it did not."""
    step = _Step(member, target_epoch, target, owners, owned)
    if member.state is MemberState.STABLE:
        return step.compute(member.member_epoch) if member.member_epoch != target_epoch else member
    if member.state is MemberState.UNREVOKED_TASKS:
        if step.not_released(member.pending_revocation):
            return member
        return step.compute(member.member_epoch + 1)
    if member.state is MemberState.UNRELEASED_TASKS:
        return step.compute(member.member_epoch)
    if owned is None or not owned.is_empty():
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The streams group member is in a unknown state. The member "
                         "must abandon all its tasks and rejoin.")
    return step.compute(target_epoch)


class _Step:
    def __init__(self, member: StreamsGroupMember, target_epoch: int, target: TasksTuple, owners: Owners,
                 owned: TasksTuple | None) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.owners = owners
        self.owned = owned
        self.process = member.process_id

    def not_released(self, pending: AssignedTasks) -> bool:
        """Revocation is acknowledged: only a heartbeat that reports its tasks without them proves it."""
        if self.owned is None:
            return True
        owned = self.owned
        return any(_overlap(owned.active, {s: frozenset(p) for s, p in pending.active.items()})
                   or _overlap(owned.standby, pending.standby) or _overlap(owned.warmup, pending.warmup)
                   for _ in (0,))

    # -- who blocks a task ------------------------------------------------------------------------------
    def _held_by_other_member_here(self, holders: ProcessesOf, mine: TaskSet, sub: str, p: int) -> bool:
        return self.process in holders(sub, p) and p not in mine.get(sub, ())

    def _unreleased_active(self, assigned: AssignedTasks, sub: str, p: int) -> bool:
        return (self.owners.active(sub, p) is not None
                or self._held_by_other_member_here(self.owners.standby, assigned.standby, sub, p)
                or self._held_by_other_member_here(self.owners.warmup, assigned.warmup, sub, p))

    def _unreleased_standby(self, assigned: AssignedTasks, sub: str, p: int) -> bool:
        run_here_by_other = self.owners.active(sub, p) == self.process and p not in assigned.active.get(sub, {})
        return (run_here_by_other or self.process in self.owners.standby(sub, p)
                or self._held_by_other_member_here(self.owners.warmup, assigned.warmup, sub, p))

    def _unreleased_warmup(self, assigned: AssignedTasks, sub: str, p: int) -> bool:
        return (self.owners.active(sub, p) == self.process
                or self._held_by_other_member_here(self.owners.standby, assigned.standby, sub, p)
                or self.process in self.owners.warmup(sub, p))

    # -- the step -------------------------------------------------------------------------------------
    def compute(self, member_epoch: int) -> StreamsGroupMember:
        assigned = self.member.assigned
        active_kept, active_revoked, active_new, unreleased_a = _diff_epochs(
            assigned.active, self.target.active, self.target_epoch,
            lambda s, p: self._unreleased_active(assigned, s, p))
        standby_kept, standby_revoked, standby_new, unreleased_s = _diff(
            assigned.standby, self.target.standby, lambda s, p: self._unreleased_standby(assigned, s, p))
        warmup_kept, warmup_revoked, warmup_new, unreleased_w = _diff(
            assigned.warmup, self.target.warmup, lambda s, p: self._unreleased_warmup(assigned, s, p))

        # Role changes of the member's own tasks take effect at once (the client recycles the task): a demoted
        # active task becomes a standby now (the active one stays to be revoked), standby and warm-up convert.
        for sub, parts in assigned.active.items():
            for p in parts:
                _grant_now(standby_new, standby_kept, sub, p)
        for sub, parts in assigned.standby.items():
            for p in parts:
                if _grant_now(warmup_new, warmup_kept, sub, p):
                    _remove(standby_revoked, sub, p)
        for sub, parts in assigned.warmup.items():
            for p in parts:
                if _grant_now(standby_new, standby_kept, sub, p):
                    _remove(warmup_revoked, sub, p)
        # A standby or warm-up promoted to active needs no revocation; it is kept until the active task is given.
        for held, revoked in ((assigned.standby, standby_revoked), (assigned.warmup, warmup_revoked)):
            for sub, parts in held.items():
                for p in parts:
                    if p in self.target.active.get(sub, ()):
                        _remove(revoked, sub, p)
        pending = AssignedTasks(active_revoked, _freeze(standby_revoked), _freeze(warmup_revoked))
        revoking = not pending.is_empty() and self.not_released(pending)
        for held, kept in ((assigned.standby, standby_kept), (assigned.warmup, warmup_kept)):
            for sub, parts in held.items():
                granted = active_new.get(sub, {})
                for p in parts:
                    if p in self.target.active.get(sub, ()) and (revoking or p not in granted):
                        kept.setdefault(sub, set()).add(p)

        new_assigned = AssignedTasks(active_kept, _freeze(standby_kept), _freeze(warmup_kept))
        new_pending = AssignedTasks(active_new, _freeze(standby_new), _freeze(warmup_new))
        unreleased = unreleased_a or unreleased_s or unreleased_w
        if revoking:
            return self.member.replace(state=MemberState.UNREVOKED_TASKS, assigned=new_assigned,
                                       pending_revocation=pending).with_epoch(member_epoch)
        if not new_pending.is_empty():
            state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
            return self.member.replace(state=state, assigned=new_assigned.merge(new_pending),
                                       pending_revocation=AssignedTasks()).with_epoch(self.target_epoch)
        state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        return self.member.replace(state=state, assigned=new_assigned,
                                   pending_revocation=AssignedTasks()).with_epoch(self.target_epoch)


def _overlap(a: TaskSet, b: TaskSet) -> bool:
    return any(parts & b.get(sub, frozenset()) for sub, parts in a.items())


def _diff(current: TaskSet, target: TaskSet, unreleased: Callable[[str, int], bool]
          ) -> tuple[dict[str, set[int]], dict[str, set[int]], dict[str, set[int]], bool]:
    """(kept, to revoke, to give now, whether some are not released yet)."""
    kept: dict[str, set[int]] = {}
    revoked: dict[str, set[int]] = {}
    given: dict[str, set[int]] = {}
    waiting = False
    for sub in set(current) | set(target):
        have, want = current.get(sub, frozenset()), target.get(sub, frozenset())
        if have & want:
            kept[sub] = set(have & want)
        if have - want:
            revoked[sub] = set(have - want)
        new = {p for p in want - have if not unreleased(sub, p)}
        waiting |= len(new) < len(want - have)
        if new:
            given[sub] = new
    return kept, revoked, given, waiting


def _diff_epochs(current: TaskEpochs, target: TaskSet, target_epoch: int, unreleased: Callable[[str, int], bool]
                 ) -> tuple[TaskEpochs, TaskEpochs, TaskEpochs, bool]:
    """As _diff for active tasks: kept and revoked ones keep their epoch, given ones get the target epoch."""
    kept: TaskEpochs = {}
    revoked: TaskEpochs = {}
    given: TaskEpochs = {}
    waiting = False
    for sub in set(current) | set(target):
        have, want = current.get(sub, {}), target.get(sub, frozenset())
        if keep := {p: e for p, e in have.items() if p in want}:
            kept[sub] = keep
        if revoke := {p: e for p, e in have.items() if p not in want}:
            revoked[sub] = revoke
        missing = [p for p in want if p not in have]
        new = {p: target_epoch for p in missing if not unreleased(sub, p)}
        waiting |= len(new) < len(missing)
        if new:
            given[sub] = new
    return kept, revoked, given, waiting


def _grant_now(pending: dict[str, set[int]], assigned: dict[str, set[int]], sub: str, p: int) -> bool:
    if p not in pending.get(sub, ()):
        return False
    _remove(pending, sub, p)
    assigned.setdefault(sub, set()).add(p)
    return True


def _remove(tasks: dict[str, set[int]], sub: str, p: int) -> None:
    parts = tasks.get(sub)
    if parts is not None and p in parts:
        parts.discard(p)
        if not parts:
            del tasks[sub]


def _freeze(tasks: dict[str, set[int]]) -> TaskSet:
    return {sub: frozenset(parts) for sub, parts in tasks.items() if parts}
