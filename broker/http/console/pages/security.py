"""Security (view): the ACLs (DescribeAcls with a filter that matches all) and the SCRAM users with their
mechanisms and iterations (DescribeUserScramCredentials); passwords are never shown, Kafka does not return them."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import AdminError
from broker.http.console.app import Console, Ctx
from broker.security.acls import AclOperation, AclPermissionType, PatternType, ResourceType


def _name(enum: type, value: int) -> str:
    try:
        return str(enum(value).name)
    except ValueError:
        return str(value)


def routes(console: Console) -> list[BaseRoute]:
    async def security(ctx: Ctx) -> Response:
        errors = []
        acls: list[dict[str, str]] = []
        users: list[dict[str, object]] = []
        try:
            acls = [{"resource_type": _name(ResourceType, a["resource_type"]), "resource_name": a["resource_name"],
                     "pattern_type": _name(PatternType, a["pattern_type"]), "principal": a["principal"],
                     "host": a["host"], "operation": _name(AclOperation, a["operation"]),
                     "permission": _name(AclPermissionType, a["permission_type"])}
                    for a in await console.admin.acls()]
        except AdminError as exc:
            errors.append(str(exc))
        try:
            users = await console.admin.scram_users()
        except AdminError as exc:
            errors.append(str(exc))
        return console.render(ctx, "security.html", acls=sorted(acls, key=lambda a: tuple(a.values())), users=users,
                              errors=errors, listeners=[(li.name, console.broker.config.listener_protocol(li))
                                                        for li in console.broker.config.listeners],
                              super_users=console.broker.config.super_users,
                              allow_everyone=console.broker.config.allow_everyone_if_no_acl_found)

    return [console.page("/security", security)]
