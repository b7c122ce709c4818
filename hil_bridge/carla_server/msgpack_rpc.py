# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
rpclib's msgpack-RPC over TCP, as CARLA's RPC port speaks it (no rclpy).

Framing (rpclib, no length prefix): a request is the msgpack array
``[0, msgid, method, params]``, the answer ``[1, msgid, error, result]``
with ``error`` nil on success. CARLA's client prepends a metadata
argument ``[is_async]`` (``rpc/Metadata.h``) to every call's ``params``;
the server strips it before the handler sees the arguments.

CARLA's own results are ``Response<T>`` objects (``rpc/Response.h``): a
value is ``[[1, value]]``, an error ``[[0, [message]]]``; ``Response<void>``
is ``[[False]]`` on success and ``[[True, [message]]]`` on error. The helpers
:func:`ok`, :func:`fail`, :func:`void_ok`, :func:`void_fail` build them.

Errors the protocol itself reports (unknown method, wrong argument count,
missing metadata) go back in the ``error`` slot as rpclib's messages do; a
connection that sends bytes that are not msgpack is closed. Neither stops
the server.
"""

import logging
import socket
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from hil_bridge.carla_server.tcp import hang_up, listener
import msgpack

REQUEST = 0
RESPONSE = 1
NOTIFY = 2

_LOG = logging.getLogger('carla_server.rpc')


class RpcError(Exception):
    """An error to answer in rpclib's error slot (not a CARLA Response)."""


def ok(value: Any) -> list:
    """Return the msgpack form of a successful ``Response<T>``."""
    return [[1, value]]


def fail(message: str) -> list:
    """Return the msgpack form of a failed ``Response<T>``."""
    return [[0, [str(message)]]]


def void_ok() -> list:
    """Return the msgpack form of a successful ``Response<void>``."""
    return [[False]]


def void_fail(message: str) -> list:
    """Return the msgpack form of a failed ``Response<void>``."""
    return [[True, [str(message)]]]


def pack(obj: Any) -> bytes:
    """Pack ``obj`` as the C++ side expects: bytes as bin, str as str."""
    return msgpack.packb(obj, use_bin_type=True)


class Handler:
    """A bound RPC function and the number of arguments it takes."""

    def __init__(self, func: Callable[..., Any], nargs: int) -> None:
        self.func = func
        self.nargs = int(nargs)


def strip_metadata(method: str, params: Any) -> Tuple[bool, List[Any]]:
    """
    Return ``(is_async, args)`` of CARLA call parameters.

    Raises ``RpcError`` when the metadata argument ``[is_async]`` is missing.
    """
    if not isinstance(params, (list, tuple)) or not params:
        raise RpcError(f"rpclib: function '{method}' called without CARLA's "
                       'metadata argument [is_async]')
    meta = params[0]
    if not (isinstance(meta, (list, tuple)) and len(meta) == 1
            and isinstance(meta[0], bool)):
        raise RpcError(f"rpclib: function '{method}': first argument must be "
                       f'the metadata [is_async], got {meta!r}')
    return bool(meta[0]), list(params[1:])


class RpcServer:
    """
    A threaded rpclib-compatible server; one thread per connection.

    ``handlers`` maps method names to :class:`Handler`; a handler returns
    the result object (already in CARLA's ``Response`` form where the
    client expects one) or raises ``RpcError``. Any other exception is
    answered as rpclib answers a throwing function.
    """

    def __init__(self, handlers: Dict[str, Handler], host: str = '0.0.0.0',
                 port: int = 2000) -> None:
        self.handlers = handlers
        self._sock = listener(host, port)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._conns: List[socket.socket] = []
        self._lock = threading.Lock()
        self.calls: Dict[str, int] = {}
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Accept connections on a daemon thread."""
        self._thread = threading.Thread(target=self._accept, name='rpc-accept',
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._stop.set()
        hang_up(self._sock, shutdown=False)
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            hang_up(conn)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, addr = self._sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn, addr),
                             name=f'rpc-{addr[1]}', daemon=True).start()

    def _serve(self, conn: socket.socket, addr: Any) -> None:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False,
                                    max_buffer_size=256 * 1024 * 1024)
        try:
            while not self._stop.is_set():
                data = conn.recv(1 << 16)
                if not data:
                    return
                unpacker.feed(data)
                for message in unpacker:
                    reply = self.dispatch(message)
                    if reply is not None:
                        conn.sendall(reply)
        except (msgpack.UnpackException, ValueError) as exc:
            _LOG.warning('rpc %s: not msgpack-RPC (%s); connection closed',
                         addr, exc)
        except OSError:
            pass
        finally:
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            conn.close()

    def dispatch(self, message: Any) -> Optional[bytes]:
        """
        Answer one decoded message; return the packed reply or None.

        Raises ``ValueError`` for a message that is not msgpack-RPC at all
        (the connection is then closed).
        """
        if not isinstance(message, (list, tuple)) or not message:
            raise ValueError(f'expected a msgpack-RPC array, got {message!r:.80}')
        kind = message[0]
        if kind == NOTIFY and len(message) == 3:
            self._call(message[1], message[2])
            return None
        if kind != REQUEST or len(message) != 4:
            raise ValueError(f'expected [0, msgid, method, params], got '
                             f'{message!r:.80}')
        msgid, method, params = message[1], message[2], message[3]
        if not isinstance(msgid, int) or isinstance(msgid, bool):
            raise ValueError(f'msgid must be an integer, got {msgid!r:.40}')
        error, result = self._call(method, params)
        try:
            return pack([RESPONSE, msgid, error, result])
        except (TypeError, ValueError, OverflowError) as exc:
            _LOG.error('rpc %s: result not packable: %s', method, exc)
            return pack([RESPONSE, msgid,
                         f"rpclib: function '{method}' returned a result that "
                         f'cannot be packed: {exc}', None])

    def _call(self, method: Any, params: Any) -> Tuple[Any, Any]:
        if not isinstance(method, str):
            return f'rpclib: method name must be a string, got {method!r:.40}', \
                None
        self.calls[method] = self.calls.get(method, 0) + 1
        handler = self.handlers.get(method)
        try:
            _async, args = strip_metadata(method, params)
            if handler is None:
                raise RpcError('rpclib: server could not find function '
                               f"'{method}' with argument count {len(args)}.")
            if len(args) != handler.nargs:
                raise RpcError(f"rpclib: function '{method}' (taking "
                               f'{handler.nargs} arg(s)) called with '
                               f'{len(args)} arg(s)')
            return None, handler.func(*args)
        except RpcError as exc:
            return str(exc), None
        except Exception as exc:  # noqa: B902 - a handler bug must not kill the server
            _LOG.exception('rpc %s failed', method)
            return (f"rpclib: function '{method}' (called with "
                    f'{len(params) - 1 if isinstance(params, list) else 0} '
                    f'arg(s)) threw an exception. The exception contained '
                    f'this information: {type(exc).__name__}: {exc}', None)
