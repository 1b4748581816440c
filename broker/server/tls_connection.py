"""A connection over TLS (SSL and SASL_SSL listeners): the same framing, ordering and SASL handling as a
plain connection (broker.server.connection), with reads and writes through trio's SSLStream instead of the
plain path's system calls."""

from __future__ import annotations

import logging

import trio

from broker.server.connection import RECV_SIZE, Connection

log = logging.getLogger(__name__)


class TlsConnection(Connection):
    CLOSE_NOTIFY_TIMEOUT_S = 1.0
    DIRECT_READS = False

    def _socket_fd(self) -> int:
        return -1  # never read or written directly

    async def _close_stream(self) -> None:
        # A peer that stops reading must not keep this task: close_notify gets a second, then the socket goes.
        with trio.move_on_after(self.CLOSE_NOTIFY_TIMEOUT_S):
            await self.stream.aclose()
        await trio.aclose_forcefully(self.stream)

    async def _receive(self) -> bytes | None:
        return await self.stream.receive_some(RECV_SIZE)

    def _send(self, out: list[bytes]) -> None:
        self._unsent.extend(out)
        self._writer_wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._writer_wake.wait()
            self._writer_wake = trio.Event()
            while self._unsent:
                count = len(self._unsent)  # what is sent stays queued until sent: run() waits for it
                data = self._unsent[0] if count == 1 else b"".join(self._unsent)
                await self.stream.send_all(data)
                del self._unsent[:count]
                self._made_progress()
            if self._close_when_sent:
                self._abort()
                return
