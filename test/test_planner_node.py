# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""cone_drive_planner over DDS: stamped cmd_vel, path, markers, safe stops."""

import math
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.params import check_specs
from node_harness import stop_process
import numpy as np
from path_planning.planner_node import NODE_NAME, PARAMS, WATCHDOG_LAG
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_params_match_config() -> None:
    defaults = check_specs(PARAMS, NODE_NAME)
    assert defaults['mode'] == 'lane'


def test_markers_and_path_messages() -> None:
    from path_planning.planner import Planner
    from path_planning.planner_node import make_markers, make_path
    from path_planning.tools.closed_loop import default_config
    from std_msgs.msg import Header
    from visualization_msgs.msg import Marker
    xy = corridor()[:, :2]
    out = Planner(default_config('cone_drive')).plan(1.0, xy,
                                                     np.zeros(len(xy)))
    header = Header(frame_id='ego_vehicle')
    msg = make_markers(out, header, 1.53)
    assert msg.markers[0].action == Marker.DELETEALL
    spaces = [m.ns for m in msg.markers[1:]]
    assert spaces.count('free') == out.cone_drive.free_ranges.shape[0]
    assert spaces.count('blocked') == out.cone_drive.blocked_ranges.shape[0]
    assert 'chosen' in spaces
    fan = next(m for m in msg.markers if m.ns == 'free')
    assert len(fan.points) % 3 == 0 and len(fan.points) >= 3
    path = make_path(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]), header)
    assert len(path.poses) == 3
    q = path.poses[0].pose.orientation
    assert 2.0 * math.atan2(q.z, q.w) == pytest.approx(math.pi / 4)
    assert make_path(np.zeros((0, 2)), header).poses == []


def corridor() -> np.ndarray:
    x = np.arange(1.0, 18.0, 2.5)
    return np.concatenate([np.stack([x, np.full_like(x, 1.6), 0 * x], 1),
                           np.stack([x, np.full_like(x, -1.6), 0 * x], 1)])


@pytest.mark.dds
def test_planner_node_stamps_and_stops(rclpy_context) -> None:
    """Commands carry the cone stamp; no cones, NaN or stale input stops."""
    from hil_bridge.interface.contract import create_publisher, create_subscription
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rosgraph_msgs.msg import Clock

    child = subprocess.Popen(
        [sys.executable, '-m', 'path_planning.planner_node', '--ros-args',
         '--params-file', str(ROOT / 'config' / 'cone_drive_planner.yaml')],
        cwd=str(ROOT), env=dict(os.environ))
    node = rclpy.create_node('planner_probe', context=rclpy_context)
    cmds, paths, markers = [], [], []
    create_subscription(node, 'cmd_vel', cmds.append)
    create_subscription(node, 'path', paths.append)
    create_subscription(node, 'planning_markers', markers.append)
    pub = create_publisher(node, 'cones')
    clock_pub = create_publisher(node, 'clock')
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)

    def spin_until(cond, timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            assert child.poll() is None, 'planner process died'
            if cond():
                return True
        return False

    def cmd_stamps() -> set:
        return {round(stamps.sec_from_stamp(c.header.stamp), 6) for c in cmds}

    def send(xyz: np.ndarray, t: float, cls: int = 0) -> None:
        # sim time first: the stamp policy drops clouds ahead of the clock
        clock_pub.publish(Clock(clock=stamps.stamp_from_sec(t)))
        executor.spin_once(timeout_sec=0.01)
        n = xyz.shape[0]
        pub.publish(clouds.cones_to_cloud(xyz, np.full(n, cls, np.uint8),
                                          np.ones(n, np.float32), t,
                                          'ego_vehicle'))

    try:
        # No cones at all yet: the watchdog commands a stop (once sim time
        # has started: a stop stamped 0 would answer lockstep frame 0).
        def clock_then_cmds() -> bool:
            clock_pub.publish(Clock(clock=stamps.stamp_from_sec(12.0)))
            return len(cmds) > 0
        assert spin_until(clock_then_cmds), 'no cmd_vel without cones'
        assert cmds[0].twist.linear.x == 0.0
        assert stamps.sec_from_stamp(cmds[0].header.stamp) == pytest.approx(12.0 - WATCHDOG_LAG)
        # A corridor: each cloud gives a cmd_vel with the same stamp.
        sent = []
        t = 12.5
        for _ in range(40):
            send(corridor(), t)
            sent.append(round(t, 6))
            if spin_until(lambda: len(set(sent[-3:]) & cmd_stamps()) > 0, 0.2) \
                    and len(set(sent) & cmd_stamps()) >= 5:
                break
            t += 0.1
        matched = set(sent) & cmd_stamps()
        assert len(matched) >= 5, f'stamps {sorted(cmd_stamps())[:5]} vs sent'
        driving = [c for c in cmds
                   if round(stamps.sec_from_stamp(c.header.stamp), 6) in sent]
        assert driving[-1].twist.linear.x > 0.0
        assert math.isfinite(driving[-1].twist.angular.z)
        assert abs(driving[-1].twist.angular.z) < 0.05  # straight corridor
        assert driving[-1].header.frame_id == 'ego_vehicle'
        assert spin_until(lambda: len(paths) > 0 and len(markers) > 0, 5.0)
        assert len(paths[-1].poses) > 2
        assert any(m.ns == 'free' for m in markers[-1].markers)
        # An empty cloud, NaN-only cones and cones behind: stop, same stamp.
        for i, cones in enumerate([np.zeros((0, 3)),
                                   np.full((4, 3), np.nan),
                                   np.array([[-2.0, 1.0, 0.0],
                                             [-3.0, -1.0, 0.0]])]):
            ts = 100.0 + i
            send(cones, ts)
            assert spin_until(lambda: round(ts, 6) in cmd_stamps(), 10.0), \
                f'no cmd_vel for case {i}'
            cmd = [c for c in cmds
                   if round(stamps.sec_from_stamp(c.header.stamp), 6) == ts]
            assert cmd[-1].twist.linear.x == 0.0
            assert cmd[-1].twist.angular.z == 0.0
        # Stale cones: sim time moves on (/clock) without clouds -> stop
        # commands stamped 1 ms behind the node's (sim) time (so they never
        # answer a lockstep frame).
        lag = round(200.0 - WATCHDOG_LAG, 6)

        def stale_stop() -> bool:
            clock_pub.publish(Clock(clock=stamps.stamp_from_sec(200.0)))
            return lag in cmd_stamps()
        assert spin_until(stale_stop, 10.0), 'no stop on stale cones'
        assert 200.0 not in cmd_stamps()
        late = [c for c in cmds
                if round(stamps.sec_from_stamp(c.header.stamp), 6) == lag]
        assert late[-1].twist.linear.x == 0.0
    finally:
        stop_process(child, signal.SIGINT)
        rc = child.returncode
        executor.shutdown()
        node.destroy_node()
    assert rc == 0, f'planner exited with {rc}'


def test_a_resent_frame_is_answered_again_not_replanned(rclpy_context) -> None:
    """
    Lockstep start-up re-sends frame 0 until the bridge has an answer.

    The planner plans on the first copy only (the same state whatever the
    number of copies) and sends that command again for each copy: its
    first answer may have gone out before the bridge's subscription had
    matched (Jazzy: a run waited 30 s for it, a lockstep timeout).
    """
    from fuzz_inputs import corridor, odometry
    from inprocess import NodeUnderTest
    from path_planning.planner_node import ConeDrivePlannerNode
    h = NodeUnderTest(ConeDrivePlannerNode, rclpy_context)
    node = h.node
    try:
        h.at(0.0)
        node._on_odom(odometry(0.0, 0.0))
        node._on_cones(corridor(0.0))
        assert node.counts['cycles'] == 1 and len(h.topic('cmd_vel')) == 1
        for _ in range(3):  # the re-sent copies
            node._on_odom(odometry(0.0, 0.0))
            node._on_cones(corridor(0.0))
        assert node.counts['cycles'] == 1
        cmds = h.topic('cmd_vel')
        assert len(cmds) == 4
        assert {(stamps.sec_from_stamp(m.header.stamp), m.twist.linear.x, m.twist.angular.z)
                for m in cmds} == {(0.0, cmds[0].twist.linear.x, cmds[0].twist.angular.z)}
        assert len(h.topic('path')) == 4
        h.at(0.05)
        node._on_odom(odometry(0.05, 0.5))
        node._on_cones(corridor(0.05))
        assert node.counts['cycles'] == 2
        node._on_cones(corridor(0.0))  # an older cloud (out of order): planned as any other
        assert node.counts['cycles'] == 3 and len(h.topic('cmd_vel')) == 6
    finally:
        h.close()


def test_no_watchdog_stop_at_sim_time_zero(rclpy_context) -> None:
    """
    At sim time 0 (lockstep frame 0, or no /clock yet) the watchdog sends no stop.

    It could only be stamped 0 and would answer frame 0 before the planner
    has planned on any cones: on Jazzy the bridge then went on to frame 1
    while the planner's cones subscription had not matched, and waited
    for it until the lockstep timeout. Once sim time runs: a stop.
    """
    from inprocess import NodeUnderTest
    from path_planning.planner_node import ConeDrivePlannerNode
    h = NodeUnderTest(ConeDrivePlannerNode, rclpy_context)
    try:
        h.at(0.0)
        h.node._watchdog()
        assert h.topic('cmd_vel') == []
        h.at(0.05)
        h.node._watchdog()
        assert [m.twist.linear.x for m in h.topic('cmd_vel')] == [0.0]
        assert h.stamps('cmd_vel') == [pytest.approx(0.05 - WATCHDOG_LAG)]
    finally:
        h.close()


def test_the_first_cloud_waits_for_the_first_odometry(rclpy_context) -> None:
    """
    Before any odometry a cone cloud waits for it while a publisher is matched.

    In lockstep a reader that matched the bridge's odometry writer late
    misses frame 0's first copy; the cloud of frame 0 was then planned
    without odometry (no pose, no speed) in one run and with it in another.
    Now it waits for the re-sent copy (no wall-clock fallback before the
    first odometry); without any odometry publisher it is planned at once.
    """
    from fuzz_inputs import corridor, odometry
    from hil_bridge.interface.contract import create_publisher
    from inprocess import NodeUnderTest
    from path_planning.planner_node import ConeDrivePlannerNode
    import rclpy
    h = NodeUnderTest(ConeDrivePlannerNode, rclpy_context)
    node = h.node
    probe = rclpy.create_node('odometry_probe', context=rclpy_context)
    try:
        h.at(0.0)
        node._on_cones(corridor(0.0))  # no odometry publisher: planned at once
        assert h.stamps('cmd_vel') == [0.0]
        create_publisher(probe, 'odometry')
        deadline = time.monotonic() + 20.0
        while node.odom_sub.get_publisher_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert node.odom_sub.get_publisher_count() > 0
        h.at(5.0)  # a new time line: no odometry yet
        node._on_cones(corridor(5.0))
        time.sleep(0.4)  # longer than ODOM_WAIT: still waiting
        node._watchdog()
        assert node.counts['cycles'] == 1 and h.stamps('cmd_vel')[1:] == []
        node._on_odom(odometry(5.0, 2.0))
        assert node.counts['cycles'] == 2 and h.stamps('cmd_vel')[1:] == [5.0]
    finally:
        probe.destroy_node()
        h.close()
