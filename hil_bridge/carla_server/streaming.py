# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CARLA's streaming protocol over TCP (``streaming/detail/tcp``), server side.

A client connects to the port its token names, sends the u32 stream id
(little-endian) and then reads messages framed as u32 size + payload. Any
number of sessions may listen to one stream (a new ``carla.World`` after
``load_world`` opens a second episode session before the first closes).

Each session has its own sender thread and a short queue: in synchronous
mode :meth:`StreamServer.publish` waits (up to ``sync_timeout`` seconds)
for room, as CARLA's server waits for the previous message to be written;
in asynchronous mode a message for a session that is still busy is
dropped ("connection too slow"), as CARLA does. A stream has listeners
while at least one session is open: the world renders a sensor only then.
"""

import logging
import queue
import socket
import struct
import threading
from typing import Callable, Dict, List, Optional, Set, Union

from hil_bridge.carla_server.tcp import hang_up, listener

_LOG = logging.getLogger('carla_server.streaming')
Payload = Union[bytes, bytearray, memoryview]


class _Session:
    """One client connection to one stream, with its sender thread."""

    def __init__(self, conn: socket.socket, stream_id: int, depth: int,
                 on_close: 'StreamServer') -> None:
        self.conn = conn
        self.stream_id = stream_id
        self.queue: 'queue.Queue[Optional[List[Payload]]]' = queue.Queue(depth)
        self.closed = threading.Event()
        self.sent = 0
        self._server = on_close
        threading.Thread(target=self._send_loop, name=f'stream-{stream_id}',
                         daemon=True).start()
        threading.Thread(target=self._watch, name=f'stream-watch-{stream_id}',
                         daemon=True).start()

    def _send_loop(self) -> None:
        try:
            while not self.closed.is_set():
                parts = self.queue.get()
                if parts is None:
                    return
                size = sum(memoryview(p).nbytes for p in parts)
                self.conn.sendall(struct.pack('<I', size))
                for p in parts:
                    self.conn.sendall(p)
                self.sent += 1
        except OSError:
            pass
        finally:
            self.close()

    def _watch(self) -> None:
        """Notice the client closing its end (it never sends after the id)."""
        try:
            while not self.closed.is_set():
                if not self.conn.recv(4096):
                    break
        except OSError:
            pass
        self.close()

    def offer(self, parts: List[Payload], block: bool, timeout: float) -> bool:
        """Queue a message; False when it was dropped."""
        if self.closed.is_set():
            return False
        try:
            self.queue.put(parts, block=block, timeout=timeout if block else None)
            return True
        except queue.Full:
            return False

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.closed.is_set():
            return
        self.closed.set()
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass
        hang_up(self.conn)
        self._server._forget(self)


class StreamServer:
    """
    The streaming port: sessions by stream id.

    Streams are registered with :meth:`open_stream` or accepted by the
    ``known`` predicate (unknown ids are refused: the socket is closed and
    the client retries); ``port`` 0 picks a free port.
    """

    def __init__(self, host: str = '0.0.0.0', port: int = 2001,
                 depth: int = 2, sync_timeout: float = 10.0) -> None:
        self._sock = listener(host, port, 64)
        self.port = self._sock.getsockname()[1]
        self.depth = int(depth)
        self.sync_timeout = float(sync_timeout)
        self.synchronous = False
        self._lock = threading.Lock()
        self._streams: Set[int] = set()
        self._sessions: Dict[int, List[_Session]] = {}
        self.dropped = 0
        self.known: Callable[[int], bool] = lambda sid: False
        self._stop = threading.Event()

    def start(self) -> None:
        """Accept connections on a daemon thread."""
        threading.Thread(target=self._accept, name='stream-accept',
                         daemon=True).start()

    def close(self) -> None:
        """Stop accepting and close every session."""
        self._stop.set()
        hang_up(self._sock, shutdown=False)
        with self._lock:
            sessions = [s for ss in self._sessions.values() for s in ss]
        for s in sessions:
            s.close()

    def open_stream(self, stream_id: int) -> None:
        """Allow clients to subscribe to ``stream_id``."""
        with self._lock:
            self._streams.add(int(stream_id))

    def close_stream(self, stream_id: int) -> None:
        """Refuse new sessions for ``stream_id`` and close its sessions."""
        with self._lock:
            self._streams.discard(int(stream_id))
            sessions = self._sessions.pop(int(stream_id), [])
        for s in sessions:
            s.close()

    def has_stream(self, stream_id: int) -> bool:
        """Return True when ``stream_id`` is open."""
        with self._lock:
            return int(stream_id) in self._streams

    def listeners(self, stream_id: int) -> int:
        """Return the number of sessions on ``stream_id``."""
        with self._lock:
            return sum(1 for s in self._sessions.get(int(stream_id), ())
                       if not s.closed.is_set())

    def publish(self, stream_id: int, parts: List[Payload]) -> int:
        """
        Send one message (the concatenation of ``parts``) to every session.

        Returns how many sessions took it.
        """
        with self._lock:
            sessions = list(self._sessions.get(int(stream_id), ()))
        taken = 0
        for s in sessions:
            if s.offer(parts, self.synchronous, self.sync_timeout):
                taken += 1
            else:
                self.dropped += 1
        return taken

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _addr = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handshake, args=(conn,),
                             daemon=True).start()

    def _handshake(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(10.0)
        data = b''
        try:
            while len(data) < 4:
                chunk = conn.recv(4 - len(data))
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        if len(data) != 4:
            conn.close()
            return
        (stream_id,) = struct.unpack('<I', data)
        conn.settimeout(None)
        with self._lock:
            known = stream_id in self._streams
        if not (known or self.known(stream_id)):
            _LOG.info('stream %d: no such stream, session refused', stream_id)
            conn.close()
            return
        session = _Session(conn, stream_id, self.depth, self)
        with self._lock:
            self._sessions.setdefault(stream_id, []).append(session)

    def _forget(self, session: _Session) -> None:
        with self._lock:
            ss = self._sessions.get(session.stream_id)
            if ss and session in ss:
                ss.remove(session)
