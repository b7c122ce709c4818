# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""TCP helpers the RPC and streaming servers share (listening, hanging up)."""

import socket


def listener(host: str, port: int, backlog: int = 16) -> socket.socket:
    """Return a socket listening on ``host:port`` (``port`` 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(backlog)
    return sock


def hang_up(conn: socket.socket, shutdown: bool = True) -> None:
    """Shut a connection down (wakes its reader) and close it, quietly."""
    if shutdown:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    try:
        conn.close()
    except OSError:
        pass
