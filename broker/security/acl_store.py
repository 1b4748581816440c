"""The ACLs on disk: `<data dir>/acls.json`, replaced atomically (temp file, fsync, rename, fsync of the dir)
so that a crash leaves either the old or the new set, as topic metadata is kept."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from broker.log.durable_file import write_atomically

if TYPE_CHECKING:
    from broker.security.acls import AclBinding

FILE_NAME = "acls.json"


class AclStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> list[AclBinding]:
        """The stored ACLs (broker.security.acls loads with the first of them, or the first request that
        needs the authorizer: not at a start without ACLs)."""
        import json

        from broker.security.acls import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

        if not self.path.exists():
            return []
        data = json.loads(self.path.read_text())  # unreadable ACLs stop the broker: never run without them
        return [AclBinding(ResourceType[a["resource_type"]], a["name"], PatternType[a["pattern_type"]],
                           a["principal"], a["host"], AclOperation[a["operation"]],
                           AclPermissionType[a["permission_type"]])
                for a in data["acls"]]

    def save(self, acls: Iterable[AclBinding]) -> None:
        import json

        data = {"version": 1, "acls": [
            {"resource_type": a.resource_type.name, "name": a.name, "pattern_type": a.pattern_type.name,
             "principal": a.principal, "host": a.host, "operation": a.operation.name,
             "permission_type": a.permission.name} for a in acls]}
        write_atomically(self.path, json.dumps(data))
