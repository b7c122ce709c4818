# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The one ``main`` body every carla_hil node shares, and its dropped-input log.

Exit codes: 0 after SIGINT/SIGTERM or an external shutdown, 2 for a bad
configuration (a parameter of the wrong type or out of range, an unknown
parameter, a missing model or rig file: one line naming it, no traceback).
A stop request ends the process within :data:`STOP_DEADLINE` seconds
whatever the node is doing (a hard exit when a callback does not return).
"""

import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

from hil_bridge.interface.dds_shm import remove_own_files
from hil_bridge.interface.params import ParamError
import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

#: Longest wait (s) of one executor pass, so a stop request is seen even
#: when no message arrives any more (Python runs signal handlers only
#: between its own bytecodes, not inside rcl_wait).
STOP_POLL = 0.1
#: Wall seconds after SIGINT/SIGTERM within which the process is gone: a
#: node still busy then (a callback that does not return) is ended hard.
STOP_DEADLINE = 1.0
#: Exit code of a bad configuration (README, exit codes).
EXIT_CONFIG = 2


class StopRequest:
    """
    SIGINT and SIGTERM set a flag instead of raising inside rclpy.

    rclpy's default handling raises KeyboardInterrupt wherever the main
    thread is, also inside a pybind11 call taking a message, which then
    surfaces as ``RuntimeError: Unable to convert call argument`` and a
    non-zero exit; with this, the spin loop ends after its current
    callback and the node shuts down cleanly (exit code 0).

    Python runs signal handlers only between bytecodes of the main thread,
    so a long callback would delay even the flag. The C-level handler also
    writes the signal number to a wake-up pipe (``signal.set_wakeup_fd``);
    a watcher thread blocked on it starts a ``deadline`` timer at once and
    ends the process with ``os._exit(exit_code)`` if :meth:`done` was not
    called by then (``deadline`` <= 0: no hard exit), after removing the
    Fast DDS shared-memory files it holds (they would be zombies).
    """

    def __init__(self, signums: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                 deadline: float = STOP_DEADLINE, exit_code: int = 0,
                 on_request: Optional[Callable[[], None]] = None) -> None:
        """Install the handlers (main thread only); :meth:`restore` undoes it."""
        self.requested = False
        #: signals received so far (a second one can cut a drain short)
        self.count = 0
        self.deadline = float(deadline)
        self.exit_code = int(exit_code)
        self.on_request = on_request
        self._signums = tuple(signums)
        self._finished = threading.Event()
        self._previous: Dict[int, Any] = {}
        self._wakeup_previous: Optional[int] = None
        self._pipe: Optional[Tuple[int, int]] = None
        for signum in signums:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        if self.deadline > 0.0:
            read_fd, write_fd = os.pipe()
            os.set_blocking(write_fd, False)
            self._pipe = (read_fd, write_fd)
            self._wakeup_previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
            threading.Thread(target=self._watch, name='stop-deadline', daemon=True).start()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.requested = True
        self.count += 1
        if self.on_request is not None:
            self.on_request()

    def _watch(self) -> None:
        assert self._pipe is not None
        read_fd = self._pipe[0]
        while not self._finished.is_set():
            try:
                data = os.read(read_fd, 16)
            except OSError:
                return
            if not data:
                return
            if any(b in self._signums for b in data):
                break
        if self._finished.wait(self.deadline):
            return
        try:  # the runner may be gone (broken pipe): exit anyway
            os.write(2, f'did not stop within {self.deadline:g} s of the signal: '
                     'exiting now\n'.encode())
        except OSError:
            pass
        remove_own_files()  # no zombie shared memory after the hard exit
        os._exit(self.exit_code)

    def done(self) -> None:
        """Mark the clean shutdown as complete (no hard exit any more)."""
        self._finished.set()

    def restore(self) -> None:
        """Put the previous handlers back (the hard-exit watch stays armed)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        if self._wakeup_previous is not None:
            try:
                signal.set_wakeup_fd(self._wakeup_previous)
            except ValueError:
                pass
            self._wakeup_previous = None


class DropLog:
    """
    Count dropped inputs and log each input at most every ``period`` s.

    One line per input (``what``) and period whatever the kinds of error,
    with the count dropped so far, so a flood of varied bad messages
    cannot flood the log (wall clock).
    """

    def __init__(self, logger: Any, period: float = 5.0) -> None:
        """Log through ``logger`` (a node's ``get_logger()``)."""
        self.logger = logger
        self.period = float(period)
        self.count = 0
        self.dropped: Dict[str, int] = {}
        self._last: Dict[str, float] = {}

    def __call__(self, what: str, err: Exception) -> None:
        """Count one dropped ``what`` and log ``bad <what> dropped: <err>``."""
        self.count += 1
        self.dropped[what] = self.dropped.get(what, 0) + 1
        now = time.monotonic()
        if now - self._last.get(what, -1e18) >= self.period:
            self._last[what] = now
            self.logger.error(f'bad {what} dropped: {err} '
                              f'({self.dropped[what]} dropped so far)')


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
             startup_errors: Tuple[Type[BaseException], ...] = (ValueError, FileNotFoundError),
             name: str = '') -> int:
    """
    Initialise rclpy, build the node, spin until SIGINT/SIGTERM, clean up.

    Exceptions in ``startup_errors`` raised while building the node (by
    default ValueError and FileNotFoundError: a missing model or rig file,
    a bad value) and any :class:`ParamError` are printed
    as one clear line naming the node and give exit code 2 (bad
    configuration); SIGINT, SIGTERM and external shutdown give 0 (see
    :class:`StopRequest`: the node's own ``finally`` code and
    ``destroy_node`` run unless they take longer than
    :data:`STOP_DEADLINE`).
    """
    try:
        kind = executor_kind()
    except ValueError as err:
        print(f'[{name or "node"}] cannot start: {err}', file=sys.stderr, flush=True)
        return EXIT_CONFIG
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
    except (ParamError,) + tuple(startup_errors) as err:
        label = name or (node.get_name() if node is not None else
                         getattr(make_node, '__name__', 'node'))
        text = str(err).split('\n')[0]
        if isinstance(err, ParamError):
            print(f'bad configuration: {text}', file=sys.stderr, flush=True)
        else:
            print(f'[{label}] cannot start: {text}', file=sys.stderr, flush=True)
        code = EXIT_CONFIG
    finally:
        if stop is not None:
            stop.restore()
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        if stop is not None:
            stop.done()
    return code
