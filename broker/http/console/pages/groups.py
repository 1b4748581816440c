"""Consumer groups of every type the brokers serve (classic, consumer, share, streams): state, members and their
assignments, committed offset and lag per partition (ListGroups to every broker; the describe API of the group's
type, OffsetFetch and ListOffsets as kafka-consumer-groups.sh does); an empty group's offsets reset (OffsetCommit
outside a generation) or deleted (OffsetDelete)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import EARLIEST, LATEST, AdminError, ClusterMeta, GroupListing
from broker.http.console.app import Console, Ctx
from broker.http.console.pages.messages import parse_timestamp
from broker.http.stack import HttpError

MAX_GROUPS_WITH_LAG = 100  # the list shows each group's total lag up to this many groups


async def lag_rows(console: Console, cluster: ClusterMeta, group: GroupListing) -> list[dict[str, Any]]:
    """Per partition the group has an offset for: committed, log end, lag."""
    committed = await console.admin.committed(group.group_id, group.group_type)
    ends = await console.admin.offsets(cluster, list(committed), LATEST)
    return [{"topic": t, "partition": p, "committed": offset, "end": ends.get((t, p)),
             "lag": max(ends[(t, p)] - offset, 0) if ends.get((t, p)) is not None else None}
            for (t, p), offset in sorted(committed.items())]


def routes(console: Console) -> list[BaseRoute]:
    async def groups(ctx: Ctx) -> Response:
        cluster = await console.admin.metadata()
        listed = await console.admin.list_groups(cluster)
        lags: dict[str, int | None] = {}
        for group in listed[:MAX_GROUPS_WITH_LAG]:
            try:
                rows = await lag_rows(console, cluster, group)
                lags[group.group_id] = sum(r["lag"] or 0 for r in rows)
            except AdminError:
                lags[group.group_id] = None
        return console.render(ctx, "groups.html", groups=listed, lags=lags)

    async def find(group_id: str, cluster: ClusterMeta) -> GroupListing:
        for group in await console.admin.list_groups(cluster):
            if group.group_id == group_id:
                return group
        raise HttpError(404, f"No group {group_id}.")

    async def group(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        group_id = ctx.request.path_params["group"]
        cluster = await console.admin.metadata()
        listing = await find(group_id, cluster)
        description = await console.admin.describe_group(group_id, listing.group_type)
        rows = await lag_rows(console, cluster, listing)
        owners = {tp: m.member_id for m in description.members for tp in m.assigned}
        for row in rows:
            row["owner"] = owners.get((row["topic"], row["partition"]))
        topics = sorted({r["topic"] for r in rows} | {t for t, _ in owners})
        return console.render(ctx, "group.html", status=status, group=description, listing=listing, rows=rows,
                              total_lag=sum(r["lag"] or 0 for r in rows), error=error, topics=topics,
                              all_topics=[n for n, t in cluster.topics.items() if not t.internal],
                              empty=description.state.lower() in ("empty", "dead"), form=ctx.form)

    async def reset(ctx: Ctx) -> Response:
        group_id = ctx.request.path_params["group"]
        try:
            cluster = await console.admin.metadata()
            listing = await find(group_id, cluster)
            topic = ctx.arg("topic")
            meta = cluster.topics.get(topic)
            if meta is None:
                raise AdminError(f"No topic {topic!r}.")
            chosen = ctx.arg("partition")
            tps = [(topic, p.index) for p in meta.partitions if not chosen or str(p.index) == chosen]
            to = ctx.arg("to", "earliest")
            if to == "offset":
                text = ctx.arg("offset")
                if not text.strip().lstrip("-").isdigit():
                    raise AdminError(f"The offset is a whole number, not {text!r}.")
                targets: dict[tuple[str, int], int | None] = dict.fromkeys(tps, int(text))
            else:
                timestamp = {"earliest": EARLIEST, "latest": LATEST}.get(to)
                if timestamp is None:
                    timestamp = parse_timestamp(ctx.arg("timestamp"))
                targets = await console.admin.offsets(cluster, tps, timestamp)
                if to not in ("earliest", "latest"):  # no record at or after it: the end, as Kafka's tool does
                    ends = await console.admin.offsets(cluster, tps, LATEST)
                    targets = {tp: o if o is not None else ends.get(tp) for tp, o in targets.items()}
            missing = sorted(f"{t}-{p}" for (t, p), o in targets.items() if o is None)
            if missing:
                raise AdminError(f"No offset for {', '.join(missing)} (no leader?).")
            if listing.group_type == "share":
                raise AdminError("A share group's start offsets are not reset from the console.")
            await console.admin.commit_offsets(group_id, {tp: o for tp, o in targets.items() if o is not None})
        except AdminError as exc:
            return await group(ctx, str(exc), 400)
        return console.redirect(f"/groups/{group_id}", f"Reset {group_id}'s offsets of {topic}.")

    async def delete_offsets(ctx: Ctx) -> Response:
        group_id = ctx.request.path_params["group"]
        topic = ctx.arg("topic")
        try:
            cluster = await console.admin.metadata()
            listing = await find(group_id, cluster)
            committed = await console.admin.committed(group_id, listing.group_type)
            tps = [tp for tp in committed if tp[0] == topic]
            if not tps:
                raise AdminError(f"{group_id} has no offsets of {topic!r}.")
            await console.admin.delete_offsets(group_id, tps)
            remaining = await console.admin.list_groups(cluster)
        except AdminError as exc:
            return await group(ctx, str(exc), 400)
        if all(g.group_id != group_id for g in remaining):  # an empty group without offsets is gone, as in Kafka
            return console.redirect("/groups", f"Deleted {group_id}'s offsets of {topic}: the group is gone.")
        return console.redirect(f"/groups/{group_id}", f"Deleted {group_id}'s offsets of {topic}.")

    return [console.page("/groups", groups), console.page("/groups/{group}", group),
            console.page("/groups/{group}/reset", reset, methods=("POST",)),
            console.page("/groups/{group}/delete-offsets", delete_offsets, methods=("POST",))]
