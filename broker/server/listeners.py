"""Binding a listener's addresses, and the host Metadata advertises for it."""

from __future__ import annotations

import socket

import trio

from broker.config.options import Listener


def advertised_host(configured: str, bound: str) -> str:
    if configured in ("", "0.0.0.0", "::"):
        return socket.gethostname()
    return configured


async def open_listeners(listener: Listener) -> list[trio.SocketListener]:
    """Bind every address the host resolves to (localhost: 127.0.0.1 and ::1) on one port."""
    host = listener.host or None
    if listener.port != 0:
        return await trio.open_tcp_listeners(listener.port, host=host)
    # Port 0: let the kernel pick for the first address, then reuse that port for the others.
    infos = await trio.socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    listeners: list[trio.SocketListener] = []
    port = 0
    for family, _type, proto, _canon, sockaddr in infos:
        sock = trio.socket.socket(family, socket.SOCK_STREAM, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            await sock.bind((sockaddr[0], port, *sockaddr[2:]))
            sock.listen(socket.SOMAXCONN)
        except OSError:
            sock.close()
            if listeners:
                continue  # e.g. no IPv6 on this machine
            raise
        port = sock.getsockname()[1]
        listeners.append(trio.SocketListener(sock))
    return listeners
