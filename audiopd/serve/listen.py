"""The server's listening socket, bound before the voice loads (so a busy port fails at once, not after it)."""

from __future__ import annotations

import socket

from audiopd.errors import AudiopdError


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port), or a one-line AudiopdError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and accepted ones copy the
    # listener's protocol. Without it Nagle held each small response's body for the client's delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:  # port in use, no such address, permission denied
        sock.close()
        raise AudiopdError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
