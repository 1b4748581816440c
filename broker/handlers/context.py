"""What a handler is given with its request: the request header, the broker it runs in, the listener
endpoint and peer the request came from, and the authenticated principal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.app import Broker, Endpoint
    from protocol.header import RequestHeader

# Without SASL or SSL every client is Kafka's anonymous principal.
ANONYMOUS = "User:ANONYMOUS"

# What an async handler's `handle_now` returns when it cannot answer without awaiting: the connection then
# runs `handle` in a task of its own.
LATER = object()


@dataclass(slots=True)
class AnswerThen:
    """A handler's answer and the work that follows it: the connection sends `response`, then calls `then()`
    before it reads another request or lets any other task run, so that no request sees the state between the
    two (an EndTxn's markers and CompleteCommit, which Kafka writes after its answer)."""

    response: Any
    then: Callable[[], None]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a handler gets beside its request: the header, the broker, the listener and the client."""

    header: RequestHeader
    broker: Broker  # its topics, coordinators, config, authorizer, and the cluster as it sees it
    endpoint: Endpoint  # the listener the client connected to
    peer: str
    principal: str = ANONYMOUS
    token_authenticated: bool = False  # the principal logged in with a delegation token
    # Lets the connection start its next request. A Produce calls it once its appends are done: a Produce
    # that must wait first (KIP-890 verification by another broker) keeps its connection's later requests
    # behind it, so they still take effect in order. Other handlers release when they start.
    release: Callable[[], None] = lambda: None
    io_error: bool = False  # a fault rule (IO_ERROR): this request's log appends fail as a failing disk's would

    @property
    def client_host(self) -> str:
        """The client's address as ACL hosts name it ("127.0.0.1", "::1")."""
        return self.peer.rpartition(":")[0] if ":" in self.peer else self.peer

    @property
    def authorizer(self) -> Any:
        return self.broker.authorizer
