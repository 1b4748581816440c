"""Who may use the console, and that a form was sent from its own pages.

Every browser gets a session (a random id in an HttpOnly, SameSite=Strict cookie). With a password
(`--console-password-file`) a session is let in once it has logged in at the login form, and a request with
HTTP Basic credentials (any user name, the password) is let in on its own, for scripts. Every request that
changes something (POST) carries a CSRF token: an HMAC of its session id under a key this process draws at
start, sent as the form's `csrf` field or the `X-CSRF-Token` header (htmx's requests).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from pathlib import Path

COOKIE = "minibroker_console"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MAX_SESSIONS = 10_000  # the oldest are forgotten beyond this (their browsers get a new one)
SESSION_IDLE_S = 12 * 3600


def read_password(path: str | Path) -> str:
    """The password: the file's first line (ValueError for an empty one)."""
    lines = Path(path).read_text().splitlines()
    password = lines[0].strip() if lines else ""
    if not password:
        raise ValueError(f"--console-password-file {path}: the first line is empty")
    return password


class Sessions:
    def __init__(self, password: str | None) -> None:
        self.password = password
        self._key = secrets.token_bytes(32)
        self._sessions: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # id -> (logged in, last seen)

    @property
    def required(self) -> bool:
        return self.password is not None

    def resolve(self, session_id: str | None, now: float | None = None) -> tuple[str, bool]:
        """(the session id, whether it is new): the cookie's session, or a new one."""
        now = time.monotonic() if now is None else now
        found = self._sessions.get(session_id or "")
        if session_id is not None and found is not None and now - found[1] < SESSION_IDLE_S:
            self._sessions[session_id] = (found[0], now)
            self._sessions.move_to_end(session_id)
            return session_id, False
        new = secrets.token_urlsafe(24)
        self._sessions[new] = (False, now)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return new, True

    def allowed(self, session_id: str, authorization: str | None) -> bool:
        """Whether the request may see the console: no password, a logged-in session, or HTTP Basic."""
        if self.password is None:
            return True
        found = self._sessions.get(session_id)
        if found is not None and found[0]:
            return True
        return authorization is not None and self._basic_ok(authorization)

    def login(self, session_id: str, password: str) -> bool:
        if self.password is None or not _same(password, self.password):
            return False
        self._sessions[session_id] = (True, time.monotonic())
        return True

    def logout(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def csrf_token(self, session_id: str) -> str:
        return hmac.new(self._key, session_id.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session_id: str, token: str | None) -> bool:
        return token is not None and _same(token, self.csrf_token(session_id))

    def _basic_ok(self, authorization: str) -> bool:
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            _user, _, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        assert self.password is not None
        return _same(password, self.password)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
