"""Delegation tokens (KIP-48, KIP-373): what Create/Renew/Expire/DescribeDelegationToken manage, and the SCRAM
credentials a client logs in with (`tokenauth=true`: username the token id, password the base64 of its HMAC).

As Kafka's DelegationTokenManager: the feature is on when `delegation.token.secret.key` (or its old name
`delegation.token.master.key`) is set; a token's HMAC is HmacSHA512 of its id under that key, so any broker of
the cluster derives it; a token lives until its expiry (issue + `delegation.token.expiry.time.ms`, moved on by
each renewal) and at most until its max lifetime (`delegation.token.max.lifetime.ms`, or less if the creator
asks); expired tokens are removed every `delegation.token.expiry.check.interval.ms`. Tokens are kept where
Kafka's ZooKeeper mode keeps them: /delegation_token/tokens/<token id> (changes announced under
/delegation_token/token_changes, which every broker follows) in a cluster, `meta/delegation-tokens.json` for a
single broker. The SCRAM credentials of a token are made per broker (random salt, 4096 iterations), as Kafka's
token cache does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from broker.log.durable_file import write_atomically
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

SECRET_KEY, OLD_SECRET_KEY = "delegation.token.secret.key", "delegation.token.master.key"
MAX_LIFETIME, EXPIRY_TIME = "delegation.token.max.lifetime.ms", "delegation.token.expiry.time.ms"
EXPIRY_CHECK_INTERVAL = "delegation.token.expiry.check.interval.ms"
DEFAULTS = {MAX_LIFETIME: 7 * 24 * 3_600_000, EXPIRY_TIME: 24 * 3_600_000, EXPIRY_CHECK_INTERVAL: 3_600_000}
SETTINGS = (SECRET_KEY, OLD_SECRET_KEY, MAX_LIFETIME, EXPIRY_TIME, EXPIRY_CHECK_INTERVAL)
SCRAM_ITERATIONS = 4096
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True, slots=True)
class Token:
    token_id: str
    owner: str  # principals as "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's TokenInformation.ownerOrRenewer: may renew, expire and see the token."""
        return principal in (self.owner, self.requester) or principal in self.renewers


@dataclass(frozen=True, slots=True)
class TokenKeys:
    """A token's SCRAM credentials for one mechanism, and whose it is."""
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int
    owner: str
    expiry_ms: int


class TokenStore(Protocol):
    def load(self) -> list[Token]: ...

    async def put(self, token: Token) -> None: ...

    async def delete(self, token_id: str) -> None: ...


def _token_json(t: Token) -> dict[str, Any]:
    return {"token_id": t.token_id, "owner": t.owner, "requester": t.requester, "renewers": list(t.renewers),
            "issue_ms": t.issue_ms, "expiry_ms": t.expiry_ms, "max_ms": t.max_ms}


class FileTokenStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._tokens: dict[str, Token] = {}

    def load(self) -> list[Token]:
        if self.path.exists():
            for item in json.loads(self.path.read_text())["tokens"]:
                token = Token(item["token_id"], item["owner"], item["requester"], tuple(item["renewers"]),
                              item["issue_ms"], item["expiry_ms"], item["max_ms"])
                self._tokens[token.token_id] = token
        return list(self._tokens.values())

    async def put(self, token: Token) -> None:
        self._tokens[token.token_id] = token
        self._save()

    async def delete(self, token_id: str) -> None:
        if self._tokens.pop(token_id, None) is not None:
            self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps({"tokens": [_token_json(t) for t in self._tokens.values()]}))


class ZkTokenStore:
    """/delegation_token/tokens in a cluster's ZooKeeper (zk.kafka_zk.KafkaZkClient)."""

    def __init__(self, zk: Any, initial: Iterable[Token]) -> None:
        self.zk = zk
        self._initial = list(initial)

    def load(self) -> list[Token]:
        return list(self._initial)

    async def put(self, token: Token) -> None:
        from zk.znodes import DelegationTokenZNode

        await self.zk.set_delegation_token(DelegationTokenZNode(
            token.token_id, token.owner, token.requester, token.renewers, token.issue_ms, token.max_ms,
            token.expiry_ms))

    async def delete(self, token_id: str) -> None:
        await self.zk.delete_delegation_token(token_id)


async def load_from_zookeeper(zk: Any) -> list[Token]:
    return [Token(t.token_id, t.owner, t.token_requester, t.renewers, t.issue_timestamp, t.expiry_timestamp,
                  t.max_timestamp) for t in await zk.get_delegation_tokens()]


@dataclass(frozen=True, slots=True)
class Created:
    error: ErrorCode
    token: Token | None = None
    hmac: bytes = b""


class DelegationTokens:
    def __init__(self, settings: Mapping[str, str], store: TokenStore) -> None:
        secret = settings.get(SECRET_KEY) or settings.get(OLD_SECRET_KEY) or ""
        self._secret = secret.encode()
        self.max_lifetime_ms = int(settings.get(MAX_LIFETIME, DEFAULTS[MAX_LIFETIME]))
        self.expiry_time_ms = int(settings.get(EXPIRY_TIME, DEFAULTS[EXPIRY_TIME]))
        self.check_interval_ms = int(settings.get(EXPIRY_CHECK_INTERVAL, DEFAULTS[EXPIRY_CHECK_INTERVAL]))
        self.store = store
        self.tokens: dict[str, Token] = {t.token_id: t for t in store.load()}
        self._keys: dict[tuple[str, str], TokenKeys] = {}

    @property
    def enabled(self) -> bool:
        return bool(self._secret)

    def hmac(self, token_id: str) -> bytes:
        return hmac.new(self._secret, token_id.encode(), hashlib.sha512).digest()

    def _by_hmac(self, mac: bytes) -> Token | None:
        return next((t for t in self.tokens.values() if hmac.compare_digest(self.hmac(t.token_id), mac)), None)

    def replace(self, tokens: Iterable[Token]) -> None:
        """Another broker changed them (/delegation_token/token_changes)."""
        self.tokens = {t.token_id: t for t in tokens}
        self._keys = {k: v for k, v in self._keys.items() if k[0] in self.tokens}

    # -- the requests ---------------------------------------------------------------------------------------
    async def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int,
                     now_ms: int) -> Created:
        if not self.enabled:
            return Created(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
        max_ms = now_ms + lifetime
        token_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")  # Kafka's UUID as base64
        token = Token(token_id, owner, requester, tuple(renewers), now_ms, min(max_ms, now_ms + self.expiry_time_ms),
                      max_ms)
        await self.store.put(token)
        self.tokens[token_id] = token
        return Created(ErrorCode.NONE, token, self.hmac(token_id))

    async def renew(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry) of a renewal: by an owner or renewer, of a token not expired yet."""
        return await self._change(mac, principal, period_ms, now_ms, renew=True)

    async def expire(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry): a negative period expires the token at once (it is removed)."""
        return await self._change(mac, principal, period_ms, now_ms, renew=False)

    async def _change(self, mac: bytes, principal: str, period_ms: int, now_ms: int,
                      renew: bool) -> tuple[ErrorCode, int]:
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, -1
        token = self._by_hmac(mac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, -1
        if not token.owner_or_renewer(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, -1
        if token.expiry_ms < now_ms or (renew and token.max_ms < now_ms):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, -1
        if not renew and period_ms < 0:
            await self.store.delete(token.token_id)
            self._forget(token.token_id)
            return ErrorCode.NONE, now_ms
        period = self.expiry_time_ms if renew and period_ms < 0 else period_ms
        changed = replace(token, expiry_ms=min(token.max_ms, now_ms + period))
        await self.store.put(changed)
        self.tokens[token.token_id] = changed
        return ErrorCode.NONE, changed.expiry_ms

    def describe(self, owners: list[str] | None, may_describe: Callable[[Token], bool]) -> list[Token]:
        """The tokens of `owners` (None: every owner; []: none) the caller may see."""
        if owners is not None and not owners:
            return []
        return [t for t in self.tokens.values()
                if (owners is None or any(t.owner_or_renewer(o) for o in owners)) and may_describe(t)]

    async def remove_expired(self, now_ms: int) -> list[str]:
        gone = [t.token_id for t in self.tokens.values() if t.expiry_ms < now_ms]
        for token_id in gone:
            await self.store.delete(token_id)
            self._forget(token_id)
        if gone:
            log.info("delegation tokens expired: %s", gone)
        return gone

    def _forget(self, token_id: str) -> None:
        self.tokens.pop(token_id, None)
        for key in [k for k in self._keys if k[0] == token_id]:
            del self._keys[key]

    # -- SCRAM logins with a token ----------------------------------------------------------------------------
    def scram_keys(self, token_id: str, mechanism: str) -> TokenKeys | None:
        """The SCRAM credentials of a live token (None: unknown, expired, or tokens off)."""
        token = self.tokens.get(token_id)
        digest = _HASHES.get(mechanism)
        if token is None or digest is None or not self.enabled:
            return None
        keys = self._keys.get((token_id, mechanism))
        if keys is None:
            password = base64.b64encode(self.hmac(token_id))
            salt = os.urandom(16)
            salted = hashlib.pbkdf2_hmac(digest, password, salt, SCRAM_ITERATIONS)
            client_key = hmac.new(salted, b"Client Key", digest).digest()
            keys = self._keys[(token_id, mechanism)] = TokenKeys(
                salt, hashlib.new(digest, client_key).digest(), hmac.new(salted, b"Server Key", digest).digest(),
                SCRAM_ITERATIONS, token.owner, token.expiry_ms)
        return replace(keys, owner=token.owner, expiry_ms=token.expiry_ms)
