# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The one ``main`` body every carla_hil node shares, and its dropped-input log."""

import os
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

#: Longest wait (s) of one executor pass, so a stop request is seen even
#: when no message arrives any more (Python runs signal handlers only
#: between its own bytecodes, not inside rcl_wait).
STOP_POLL = 0.25


class StopRequest:
    """
    SIGINT and SIGTERM set a flag instead of raising inside rclpy.

    rclpy's default handling raises KeyboardInterrupt wherever the main
    thread is, also inside a pybind11 call taking a message, which then
    surfaces as ``RuntimeError: Unable to convert call argument`` and a
    non-zero exit; with this, the spin loop ends after its current
    callback and the node shuts down cleanly (exit code 0).
    """

    def __init__(self, signums: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> None:
        """Install the handlers (main thread only); :meth:`restore` undoes it."""
        self.requested = False
        self._previous: Dict[int, Any] = {}
        for signum in signums:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.requested = True

    def restore(self) -> None:
        """Put the previous handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


class DropLog:
    """
    Count dropped inputs and log each kind of error at most every ``period`` s.

    rclpy's ``throttle_duration_sec`` throttles per call site, so one bad
    input would hide a different one for the whole period; here the kind
    is the input and the first 40 characters of the error, so a new kind
    shows at once and repeats are held back (wall clock).
    """

    def __init__(self, logger: Any, period: float = 5.0) -> None:
        """Log through ``logger`` (a node's ``get_logger()``)."""
        self.logger = logger
        self.period = float(period)
        self.count = 0
        self._last: Dict[str, float] = {}

    def __call__(self, what: str, err: Exception) -> None:
        """Count one dropped ``what`` and log ``bad <what> dropped: <err>``."""
        self.count += 1
        key = f'{what}: {str(err)[:40]}'
        now = time.monotonic()
        if now - self._last.get(key, -1e18) >= self.period:
            self._last[key] = now
            self.logger.error(f'bad {what} dropped: {err}')


#: Environment variable choosing the executor of :func:`run_node`.
EXECUTOR_ENV = 'CARLA_HIL_EXECUTOR'
#: Its values: ``auto`` (default: events where rclpy has it, else single),
#: ``events`` (``rclpy.experimental.EventsExecutor``, Jazzy 7.1.4+ and
#: Kilted; an error where missing) and ``single`` (``SingleThreadedExecutor``).
EXECUTOR_KINDS = ('auto', 'events', 'single')


def executor_kind(kind: Optional[str] = None) -> str:
    """
    Resolve ``kind`` (default: ``$CARLA_HIL_EXECUTOR``) to events or single.

    Raises ValueError for an unknown name, or for ``events`` where this
    rclpy has no events executor.
    """
    kind = (kind or os.environ.get(EXECUTOR_ENV, '') or 'auto').strip().lower()
    if kind not in EXECUTOR_KINDS:
        raise ValueError(f'{EXECUTOR_ENV}={kind!r}: expected one of '
                         f'{", ".join(EXECUTOR_KINDS)}')
    if kind == 'single':
        return kind
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        if kind == 'events':
            raise ValueError(f'{EXECUTOR_ENV}=events: this rclpy has no '
                             'rclpy.experimental.EventsExecutor') from None
        return 'single'
    return 'events'


def make_executor(kind: Optional[str] = None) -> Executor:
    """
    Return the executor that spins one node process (after rclpy.init).

    The events executor dispatches in C++ and costs about half the CPU
    per received message of the wait-set based SingleThreadedExecutor
    (0.5 vs 1.0 ms per Odometry on this machine; see README, CPU budget);
    Humble's rclpy has none, so ``auto`` falls back there.
    """
    if executor_kind(kind) == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    return SingleThreadedExecutor()


def run_node(make_node: Callable[[], Node], args: Optional[List[str]] = None,
             startup_errors: Tuple[Type[BaseException], ...] = (),
             name: str = '') -> int:
    """
    Initialise rclpy, build the node, spin until SIGINT/SIGTERM, clean up.

    Exceptions in ``startup_errors`` raised while building the node (for
    example a missing model file) are printed as one clear line naming the
    node and give exit code 1; SIGINT, SIGTERM and external shutdown give
    0 (see :class:`StopRequest`: the node's own ``finally`` code and
    ``destroy_node`` always run).
    """
    try:
        kind = executor_kind()
    except ValueError as err:
        print(f'[{name or "node"}] cannot start: {err}', file=sys.stderr, flush=True)
        return 1
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor: Optional[Executor] = None
    code = 0
    stop: Optional[StopRequest] = None
    try:
        stop = StopRequest()
        node = make_node()
        executor = make_executor(kind)
        executor.add_node(node)
        while not stop.requested and rclpy.ok():
            executor.spin_once(timeout_sec=STOP_POLL)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except startup_errors as err:
        label = name or (node.get_name() if node is not None else
                         getattr(make_node, '__name__', 'node'))
        print(f'[{label}] cannot start: {err}', file=sys.stderr, flush=True)
        code = 1
    finally:
        if stop is not None:
            stop.restore()
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code
