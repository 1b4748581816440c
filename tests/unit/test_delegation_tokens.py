"""Delegation tokens (broker/services/delegation_tokens.py): lifetimes, renewals and expiry as Kafka's
DelegationTokenManager computes them, who may renew, persistence, the znode format Kafka's ZooKeeper mode
writes, and a SCRAM login with a token (tokenauth=true) through the broker's SCRAM server."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import scramp
import trio

from broker.security.sasl import SaslError, ScramServer
from broker.services.delegation_tokens import DelegationTokens, FileTokenStore
from protocol.header import ErrorCode
from zk.znodes import DelegationTokenZNode, decode_delegation_token, encode_delegation_token

DAY, WEEK = 86_400_000, 7 * 86_400_000
SETTINGS = {"delegation.token.secret.key": "secret"}


def tokens(tmp_path: Path, **settings: str) -> DelegationTokens:
    return DelegationTokens({**SETTINGS, **settings}, FileTokenStore(tmp_path / "meta" / "delegation-tokens.json"))


def test_off_without_a_secret_key(tmp_path: Path) -> None:
    off = DelegationTokens({}, FileTokenStore(tmp_path / "t.json"))
    assert not off.enabled
    assert trio.run(off.create, "User:a", "User:a", [], -1, 0).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert trio.run(off.renew, b"x", "User:a", -1, 0) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, -1)


def test_lifetimes_renewals_and_expiry(tmp_path: Path) -> None:
    t = tokens(tmp_path)
    created = trio.run(t.create, "User:alice", "User:alice", ["User:bob"], -1, 1000)
    token = created.token
    assert created.error == ErrorCode.NONE and token is not None
    assert (token.issue_ms, token.expiry_ms, token.max_ms) == (1000, 1000 + DAY, 1000 + WEEK)
    assert created.hmac == t.hmac(token.token_id) and len(created.hmac) == 64  # HmacSHA512
    short = trio.run(t.create, "User:alice", "User:alice", [], 3600_000, 0).token
    assert short is not None and short.max_ms == short.expiry_ms == 3600_000  # asked for less than a day
    assert trio.run(t.renew, created.hmac, "User:carol", -1, 2000) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, -1)
    assert trio.run(t.renew, created.hmac, "User:bob", 5000, 2000) == (ErrorCode.NONE, 7000)
    assert trio.run(t.renew, created.hmac, "User:alice", -1, 3000) == (ErrorCode.NONE, 3000 + DAY)
    assert trio.run(t.renew, created.hmac, "User:alice", 10 * WEEK, 3000) == (ErrorCode.NONE, 1000 + WEEK)
    assert trio.run(t.renew, b"no such token", "User:alice", -1, 0) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, -1)
    assert trio.run(t.expire, created.hmac, "User:bob", 100, 4000) == (ErrorCode.NONE, 4100)
    assert trio.run(t.renew, created.hmac, "User:alice", -1, 5000) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, -1)
    assert trio.run(t.remove_expired, 5000) == [token.token_id]
    assert trio.run(t.expire, short.token_id.encode(), "User:alice", -1, 0)[0] == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert trio.run(t.expire, t.hmac(short.token_id), "User:alice", -1, 10) == (ErrorCode.NONE, 10)
    assert t.tokens == {}


def test_describe_filters_and_persistence(tmp_path: Path) -> None:
    t = tokens(tmp_path)
    a = trio.run(t.create, "User:alice", "User:alice", ["User:bob"], -1, 0).token
    b = trio.run(t.create, "User:dave", "User:admin", [], -1, 0).token
    assert a is not None and b is not None
    everyone = lambda _token: True  # noqa: E731
    assert {x.token_id for x in t.describe(None, everyone)} == {a.token_id, b.token_id}
    assert [x.token_id for x in t.describe(["User:bob"], everyone)] == [a.token_id]  # a renewer's too
    assert [x.token_id for x in t.describe(["User:admin"], everyone)] == [b.token_id]  # the requester's
    assert t.describe([], everyone) == []
    assert t.describe(None, lambda token: token.owner == "User:dave") == [b]
    again = tokens(tmp_path)  # a restart
    assert again.tokens == t.tokens and again.hmac(a.token_id) == t.hmac(a.token_id)
    other_key = tokens(tmp_path, **{"delegation.token.secret.key": "another"})
    assert other_key.hmac(a.token_id) != t.hmac(a.token_id)


def test_the_znode_is_kafkas() -> None:
    node = DelegationTokenZNode("tok", "User:alice", "User:admin", ("User:bob",), 1, 3, 2)
    data = json.loads(encode_delegation_token(node))
    assert data == {"version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aadmin",
                    "renewers": ["User%3Abob"], "issueTimestamp": 1, "maxTimestamp": 3, "expiryTimestamp": 2,
                    "tokenId": "tok"}
    assert decode_delegation_token(encode_delegation_token(node)) == node


def _login(server: ScramServer, user: str, password: str, extensions: str = "") -> None:
    client = scramp.ScramClient(["SCRAM-SHA-256"], user, password)
    first = client.get_client_first()
    if extensions:  # what Kafka's client sends: its extensions are part of the signed messages
        first += extensions
        client.client_first_bare += extensions
    server_first = server.evaluate(first.encode()).decode()
    client.set_server_first(server_first)
    client.set_server_final(server.evaluate(client.get_client_final().encode()).decode())


def test_a_scram_login_with_a_token(tmp_path: Path) -> None:
    t = tokens(tmp_path)
    created = trio.run(t.create, "User:alice", "User:alice", [], -1, 0)
    token = created.token
    assert token is not None
    server = ScramServer("SCRAM-SHA-256", lambda user, mech: None, t.scram_keys)
    _login(server, token.token_id, base64.b64encode(created.hmac).decode(), ",tokenauth=true")
    assert server.complete and server.authorization_id == "alice" and server.token_authenticated
    assert server.credential_expiry_ms == token.expiry_ms
    wrong = ScramServer("SCRAM-SHA-256", lambda user, mech: None, t.scram_keys)
    with pytest.raises(SaslError):
        _login(wrong, token.token_id, "not the hmac", ",tokenauth=true")
    plain = ScramServer("SCRAM-SHA-256", lambda user, mech: None, t.scram_keys)  # no tokenauth: a user login
    with pytest.raises(SaslError):
        _login(plain, token.token_id, base64.b64encode(created.hmac).decode())
    odd = ScramServer("SCRAM-SHA-256", lambda user, mech: None, t.scram_keys)
    with pytest.raises(SaslError, match="Unsupported extensions"):
        _login(odd, token.token_id, base64.b64encode(created.hmac).decode(), ",tokenauth=true,other=1")
