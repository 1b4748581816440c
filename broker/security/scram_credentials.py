"""SCRAM credentials (KIP-554): what DescribeUserScramCredentials and AlterUserScramCredentials manage.

Kept as Kafka keeps them (ScramCredential: salt, stored key, server key, iterations; the salted password
itself is not stored) in `<data dir>/meta/scram-credentials.json`, replaced atomically. SCRAM logins on SASL
listeners check them (broker.security.sasl.ScramServer, through listener_security.scram_lookup_from).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections import Counter
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from broker.log.durable_file import write_atomically
from protocol.header import ErrorCode


class ScramMechanism(IntEnum):
    """Kafka's ScramMechanism type codes; iteration bounds are Kafka's (ScramMechanism.minIterations...)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"


MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                             iterations: int) -> ScramCredential:
        """Kafka's ScramFormatter.generateCredential (RFC 5802's ClientKey, StoredKey and ServerKey)."""
        digest = mechanism.hash_name
        client_key = hmac.new(salted_password, b"Client Key", digest).digest()
        server_key = hmac.new(salted_password, b"Server Key", digest).digest()
        return cls(salt, hashlib.new(digest, client_key).digest(), server_key, iterations)


@dataclass(frozen=True, slots=True)
class UserError:
    error: ErrorCode
    message: str


def _mechanism(code: int) -> ScramMechanism | None:
    try:
        return ScramMechanism(code)
    except ValueError:
        return None


class ScramCredentialStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.users: dict[str, dict[ScramMechanism, ScramCredential]] = {}
        if path.exists():  # unreadable credentials stop the broker, as unreadable ACLs do
            for user, creds in json.loads(path.read_text())["users"].items():
                self.users[user] = {ScramMechanism[m]: ScramCredential(
                    base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                    base64.b64decode(c["server_key"]), c["iterations"]) for m, c in creds.items()}

    def describe(self, users: list[str] | None) -> list[tuple[str, UserError | None, list[tuple[int, int]]]]:
        """(user, error, [(mechanism, iterations)]) per user asked for (all users with credentials when none
        is named), as ZkAdminManager.describeUserScramCredentials."""
        if not users:
            return [(u, None, self._infos(u)) for u in sorted(self.users)]
        counts = Counter(users)
        out = []
        for user in dict.fromkeys(users):
            if counts[user] > 1:
                out.append((user, UserError(ErrorCode.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for "
                                            f"the same user twice in a single request: {user}"), []))
            elif user not in self.users:
                out.append((user, UserError(ErrorCode.RESOURCE_NOT_FOUND,
                                            f"Attempt to describe a user credential that does not exist: {user}"),
                            []))
            else:
                out.append((user, None, self._infos(user)))
        return out

    def _infos(self, user: str) -> list[tuple[int, int]]:
        return [(int(m), c.iterations) for m, c in sorted(self.users[user].items())]

    def alter(self, deletions: list[Any], upsertions: list[Any]) -> dict[str, UserError | None]:
        """Apply the deletions and upsertions of every user without an error (ZkAdminManager's checks, in its
        order); returns each user's outcome. Persists before answering."""
        pairs = Counter([(d.name, d.mechanism) for d in deletions] + [(u.name, u.mechanism) for u in upsertions])
        errors: dict[str, UserError] = {}

        def refuse(user: str, error: ErrorCode, message: str) -> None:
            errors.setdefault(user, UserError(error, message))

        for item in [*deletions, *upsertions]:
            if not item.name:
                refuse(item.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            elif pairs[(item.name, item.mechanism)] > 1:
                refuse(item.name, ErrorCode.DUPLICATE_RESOURCE,
                       "A user credential cannot be altered twice in the same request")
            elif _mechanism(item.mechanism) is None:
                refuse(item.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        for u in upsertions:
            if u.iterations < MIN_ITERATIONS:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif u.iterations > MAX_ITERATIONS:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif not u.salt or not u.salted_password:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
        for d in deletions:
            mechanism = _mechanism(d.mechanism)
            if mechanism is not None and mechanism not in self.users.get(d.name, {}):
                refuse(d.name, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        users = {**self.users}
        for d in deletions:
            if d.name not in errors:
                creds = {**users[d.name]}
                del creds[ScramMechanism(d.mechanism)]
                users[d.name] = creds
        for u in upsertions:
            if u.name not in errors:
                mechanism = ScramMechanism(u.mechanism)
                users[u.name] = {**users.get(u.name, {}), mechanism: ScramCredential.from_salted_password(
                    mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations)}
        users = {user: creds for user, creds in users.items() if creds}
        if users != self.users:
            self._save(users)
            self.users = users
        return {item.name: errors.get(item.name) for item in [*deletions, *upsertions]}

    def _save(self, users: dict[str, dict[ScramMechanism, ScramCredential]]) -> None:
        data = {"version": 1, "users": {user: {m.name: {
            "salt": base64.b64encode(c.salt).decode(), "stored_key": base64.b64encode(c.stored_key).decode(),
            "server_key": base64.b64encode(c.server_key).decode(), "iterations": c.iterations}
            for m, c in creds.items()} for user, creds in users.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(data))
