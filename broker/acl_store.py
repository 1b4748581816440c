"""The ACLs on disk: `<data dir>/acls.json`, replaced atomically (temp file, fsync, rename, fsync of the dir)
so that a crash leaves either the old or the new set, as topic metadata is kept."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from broker.acls import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

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
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
