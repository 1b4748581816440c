"""ConsumerGroupDescribe's view of consumer groups: each group's state, epochs, assignor and members with their
target assignments, or why a group id is not described."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from coordinator.assignors import Assignment
from coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember
from protocol.header import ErrorCode


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member: ConsumerGroupMember
    target: Assignment


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[DescribedMember] = field(default_factory=list)


def describe_groups(groups: Mapping[str, ConsumerGroup], group_ids: Iterable[str],
                    other_group_type: Callable[[str], str | None] | None, default_assignor: str
                    ) -> list[DescribedGroup]:
    """`other_group_type(group_id)`: what a group id no consumer group holds is elsewhere (a classic or share
    group: "not a consumer group"; unknown or offsets only: "not found")."""
    out = []
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is None:
            other = other_group_type(group_id) if other_group_type is not None else None
            message = f"Group {group_id} is not a consumer group." if other not in (None, "simple") \
                else f"Group {group_id} not found."
            out.append(DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
            continue
        out.append(DescribedGroup(
            group_id, state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor=group.preferred_assignor() or default_assignor,
            members=[DescribedMember(m, group.target_assignment.get(mid, {})) for mid, m in group.members.items()]))
    return out
