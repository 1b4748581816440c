"""The ACLs on disk: `<data dir>/acls.json`, replaced atomically (temp file, fsync, rename, fsync of the dir)
so that a crash leaves either the old or the new set, as topic metadata is kept."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from broker.log.durable_file import write_atomically
from broker.security.acls import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

FILE_NAME = "acls.json"


class AclStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def load(self) -> list[AclBinding]:
        if not self.path.exists():
            return []
        data = json.loads(self.path.read_text())  # unreadable ACLs stop the broker: never run without them
        return [AclBinding(ResourceType[a["resource_type"]], a["name"], PatternType[a["pattern_type"]],
                           a["principal"], a["host"], AclOperation[a["operation"]],
                           AclPermissionType[a["permission_type"]])
                for a in data["acls"]]

    def save(self, acls: Iterable[AclBinding]) -> None:
        data = {"version": 1, "acls": [
            {"resource_type": a.resource_type.name, "name": a.name, "pattern_type": a.pattern_type.name,
             "principal": a.principal, "host": a.host, "operation": a.operation.name,
             "permission_type": a.permission.name} for a in acls]}
        write_atomically(self.path, json.dumps(data))
