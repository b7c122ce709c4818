# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""hil_bridge.interface.node_main: executor choice and run_node under each executor."""

import os
import signal
import subprocess
import sys
import time

from hil_bridge.interface import node_main
from node_harness import stop_process
import pytest


# A node process: counts Odometry messages on 'odom', prints the count when
# it is stopped (its own destroy_node), spins through run_node.
CHILD = """
import sys
from nav_msgs.msg import Odometry
from rclpy.node import Node
from hil_bridge.interface.node_main import run_node


class Counter(Node):
    def __init__(self):
        super().__init__('counter')
        self.count = 0
        self.create_subscription(Odometry, 'odom', self._on, 10)
        self.pub = self.create_publisher(Odometry, 'odom_echo', 10)

    def _on(self, msg):
        self.count += 1
        self.pub.publish(msg)

    def destroy_node(self):
        print('COUNT', self.count, flush=True)
        super().destroy_node()


sys.exit(run_node(Counter))
"""


def _has_events() -> bool:
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        return False
    return True


def test_executor_kind_resolves_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(node_main.EXECUTOR_ENV, raising=False)
    auto = 'events' if _has_events() else 'single'
    assert node_main.executor_kind() == auto
    assert node_main.executor_kind('single') == 'single'
    assert node_main.executor_kind(' Single ') == 'single'
    monkeypatch.setenv(node_main.EXECUTOR_ENV, 'single')
    assert node_main.executor_kind() == 'single'
    assert node_main.executor_kind('auto') == auto
    monkeypatch.setenv(node_main.EXECUTOR_ENV, 'multi')
    with pytest.raises(ValueError, match='CARLA_HIL_EXECUTOR'):
        node_main.executor_kind()
    if _has_events():
        assert node_main.executor_kind('events') == 'events'
    else:
        with pytest.raises(ValueError, match='no rclpy.experimental'):
            node_main.executor_kind('events')


def test_bad_executor_name_is_a_clear_start_error(ros_domain: int) -> None:
    env = dict(os.environ, **{node_main.EXECUTOR_ENV: 'fast'})
    out = subprocess.run([sys.executable, '-c', CHILD], env=env, text=True,
                         capture_output=True, timeout=60)
    assert out.returncode == 2
    assert "CARLA_HIL_EXECUTOR='fast'" in out.stderr
    assert 'Traceback' not in out.stderr


@pytest.mark.parametrize('kind', ['single', 'events'])
def test_run_node_serves_messages_and_stops_cleanly(
        kind: str, rclpy_context, ros_domain: int) -> None:
    if kind == 'events' and not _has_events():
        pytest.skip('this rclpy has no rclpy.experimental.EventsExecutor')
    from nav_msgs.msg import Odometry
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    env = dict(os.environ, **{node_main.EXECUTOR_ENV: kind})
    child = subprocess.Popen([sys.executable, '-c', CHILD], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    node = rclpy.create_node('probe', context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    echoes = []
    node.create_subscription(Odometry, 'odom_echo', echoes.append, 10)
    pub = node.create_publisher(Odometry, 'odom', 10)
    sent = 0
    try:
        deadline = time.monotonic() + 30.0
        while len(echoes) < 20 and time.monotonic() < deadline:
            assert child.poll() is None, child.stdout.read()
            msg = Odometry()
            msg.header.stamp.sec = sent
            pub.publish(msg)
            sent += 1
            executor.spin_once(timeout_sec=0.02)
        assert len(echoes) >= 20, f'{kind}: {len(echoes)} echoes of {sent}'
        # in order, every one an earlier message
        secs = [m.header.stamp.sec for m in echoes]
        assert secs == sorted(secs) and secs[-1] < sent
    finally:
        out = stop_process(child, signal.SIGINT)
        executor.shutdown()
        node.destroy_node()
    assert child.returncode == 0, out
    count = int(out.split('COUNT')[-1].split()[0])
    assert len(echoes) <= count <= sent


def test_drop_log_bounds_lines_per_input() -> None:
    """One line per input and period, whatever the errors; counts kept per input."""
    lines = []

    class Logger:

        def error(self, text: str) -> None:
            lines.append(text)

    log = node_main.DropLog(Logger(), period=60.0)
    log('scan', ValueError('angle_increment must be finite'))
    for n in range(100):  # a flood of varied errors on one input
        log('scan', ValueError(f'{n} ranges exceed max_points'))
    log('cloud', ValueError('angle_increment must be finite'))
    assert log.count == 102 and log.dropped == {'scan': 101, 'cloud': 1}
    assert lines == ['bad scan dropped: angle_increment must be finite (1 dropped so far)',
                     'bad cloud dropped: angle_increment must be finite (1 dropped so far)']
