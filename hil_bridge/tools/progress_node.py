# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The live progress line's ROS shell: ``python -m hil_bridge.tools.progress_node``.

Subscribes to ``/clock``, the ego's odometry and the referee events of the
contract, feeds a :class:`hil_bridge.tools.progress.RunProgress` and
writes ``PROGRESS_PREFIX + line`` to stdout every ``--period`` wall
seconds. It runs in its own process, started by the runner beside the
nodes, not in the runner: a DDS shutdown that hangs in C++ while holding
the GIL (issue 17: rclpy ``destroy_publisher`` in the runner's closer
thread kept a finished run alive until its batch killed it 28 min later)
can then be ended with a signal like any node.
"""

import argparse
import math
import sys
import time
from typing import Any, List, Optional, TextIO

from hil_bridge.interface import contract
from hil_bridge.interface.node_main import run_node
from hil_bridge.tools.progress import PROGRESS_PREFIX, RunProgress
from rclpy.node import Node

#: wall seconds between two lines
PERIOD = 0.5


class ProgressNode(Node):
    """Feed a :class:`RunProgress` from DDS and print its line."""

    def __init__(self, laps: int = 0, role: str = contract.DEFAULT_ROLE,
                 period: float = PERIOD, out: Optional[TextIO] = None) -> None:
        """Subscribe; print every ``period`` s to ``out`` (stdout); ``laps`` 0: no laps."""
        super().__init__('carla_hil_progress')
        self.progress = RunProgress(laps)
        self._out = out if out is not None else sys.stdout
        contract.create_subscription(self, 'clock', self._on_clock, role)
        contract.create_subscription(self, 'odometry', self._on_odom, role)
        contract.create_subscription(self, 'referee_events', self._on_events, role)
        self.create_timer(period, self._print)

    def _on_clock(self, msg: Any) -> None:
        self.progress.on_clock(msg.clock.sec + msg.clock.nanosec * 1e-9, time.monotonic())

    def _on_odom(self, msg: Any) -> None:
        self.progress.on_speed(msg.twist.twist.linear.x)

    def _on_events(self, msg: Any) -> None:
        for st in msg.status:
            self.progress.on_event(st.name.split('/', 1)[-1],
                                   {kv.key: kv.value for kv in st.values})

    def _print(self) -> None:
        self._out.write(PROGRESS_PREFIX + self.progress.line() + '\n')
        self._out.flush()


def _period(text: str) -> float:
    """Return a period (s) from the command line: finite and > 0."""
    value = float(text)
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f'must be finite and > 0, got {text}')
    return value


def main(argv: Optional[List[str]] = None) -> int:
    """Command line: ``--laps N [--role R] [--period S]``; runs until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog='python -m hil_bridge.tools.progress_node',
                                     description='print the live progress line of a run')
    parser.add_argument('--laps', type=int, default=0, help='laps of the mission (0: none)')
    parser.add_argument('--role', default=contract.DEFAULT_ROLE)
    parser.add_argument('--period', type=_period, default=PERIOD, help='wall s between lines')
    args = parser.parse_args(argv)
    return run_node(lambda: ProgressNode(args.laps, args.role, args.period), name='progress')


if __name__ == '__main__':
    sys.exit(main())
