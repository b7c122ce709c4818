# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Test helper: one node under test in its own process, one probe node here.

``with node_under_test(module, params_file, context) as h:`` starts
``python -m module --ros-args --params-file ...``, creates a probe node
``h.node`` with an executor on the test's rclpy context, and on exit
destroys the probe, stops the process and keeps its output in ``h.output``.

The node runs on sim time (``use_sim_time``) by default: the probe
publishes ``/clock`` = ``h.now`` (s) before every spin, so inputs stamped
near ``h.now`` pass the nodes' stamp policy. ``sim_time=False`` runs the
node on wall-clock time instead.
"""

from contextlib import contextmanager
import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Iterator, List, Sequence


class Harness:
    """The running process, the probe node and its executor."""

    def __init__(self, proc: subprocess.Popen, node: Any,
                 executor: Any, clock_pub: Any = None) -> None:
        """Keep the handles; ``output`` is filled when the process ends."""
        self.proc, self.node, self.executor = proc, node, executor
        self.output = ''
        self.clock_pub = clock_pub
        self._now = 0.0

    @property
    def now(self) -> float:
        """Sim time (s) the probe publishes on /clock before each spin."""
        return self._now

    @now.setter
    def now(self, t: float) -> None:
        """Set the sim time and publish it at once (then wait 50 ms for it to arrive)."""
        self._now = float(t)
        self._publish_clock()
        time.sleep(0.05)

    def _publish_clock(self) -> None:
        if self.clock_pub is not None:
            from hil_bridge.interface.codecs import stamps
            from rosgraph_msgs.msg import Clock
            self.clock_pub.publish(Clock(clock=stamps.stamp_from_sec(self._now)))

    def spin_once(self, timeout: float) -> None:
        """Publish /clock (sim time) and spin the probe once."""
        self._publish_clock()
        self.executor.spin_once(timeout_sec=timeout)

    def spin_until(self, done: Callable[[], bool], timeout: float = 30.0,
                   each: Callable[[], None] = None,
                   period: float = 0.2) -> bool:
        """
        Spin until ``done()`` is true; call ``each()`` before every spin.

        Fails at once, with the process output, when the process dies.
        Returns ``done()`` (False on timeout).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done():
            if each is not None:
                each()
            self.spin_once(period)
            assert self.proc.poll() is None, self.proc.stdout.read()
        return done()

    def spin_for(self, seconds: float) -> None:
        """Spin for ``seconds``; fails at once when the process dies."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.spin_once(min(0.05, seconds))
            assert self.proc.poll() is None, self.proc.stdout.read()


def stop_process(proc: subprocess.Popen, signum: int = signal.SIGTERM,
                 timeout: float = 10.0) -> str:
    """
    Stop a test's child process; return its output (text, '' if not piped).

    Sends ``signum`` unless it has ended, waits ``timeout`` s, then kills
    it; ``proc.returncode`` holds the exit status (negative when killed).
    """
    if proc.poll() is None:
        proc.send_signal(signum)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    if isinstance(out, bytes):
        return out.decode(errors='replace')
    return out or ''


@contextmanager
def node_under_test(module: str, params_file: Any, context: Any,
                    params: Sequence[str] = (),
                    probe_name: str = 'probe', sim_time: bool = True) -> Iterator[Harness]:
    """Run ``module`` as a node process with ``-p`` overrides ``params``."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    argv: List[str] = [sys.executable, '-m', module, '--ros-args',
                       '--params-file', str(params_file),
                       '-p', f'use_sim_time:={"true" if sim_time else "false"}']
    for item in params:
        argv += ['-p', item]
    proc = subprocess.Popen(argv, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    node = rclpy.create_node(probe_name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    clock_pub = None
    if sim_time:
        from hil_bridge.interface.contract import create_publisher
        clock_pub = create_publisher(node, 'clock')
    harness = Harness(proc, node, executor, clock_pub)
    try:
        yield harness
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.output = stop_process(proc)
