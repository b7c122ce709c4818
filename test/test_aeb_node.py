# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The aeb_controller node over DDS (subprocess) with fake sensor input."""

import os
from pathlib import Path
import subprocess
import sys
import time
from typing import Any, Callable, List

from hil_bridge.interface.codecs import clouds, stamps
from node_harness import stop_process
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / 'config' / 'aeb_controller.yaml')
V = 50.0 / 3.6


def _start_node(*overrides: str, passenger: bool = True
                ) -> subprocess.Popen:
    extra = []
    if passenger:
        extra += ['-p', 'vehicle_profile:=passenger_car', '-p',
                  'rig:=car_rig.yaml']
    for item in overrides:
        extra += ['-p', item]
    return subprocess.Popen(
        [sys.executable, '-m', 'aeb_control.aeb_node', '--ros-args',
         '--params-file', PARAMS] + extra,
        cwd=str(ROOT), env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> str:
    return stop_process(proc)


class _Harness:
    """In-process publisher of clock/odometry/lidar; records brake requests."""

    def __init__(self, context: Any) -> None:
        from geometry_msgs.msg import AccelStamped
        from hil_bridge.interface.contract import create_publisher, create_subscription
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        self.node = Node('aeb_test_harness', context=context)
        self.clock = create_publisher(self.node, 'clock')
        self.odom = create_publisher(self.node, 'odometry')
        self.lidar = create_publisher(self.node, 'lidar')
        self.brakes: List[AccelStamped] = []
        self.status: List[Any] = []
        create_subscription(self.node, 'brake_request', self.brakes.append)
        create_subscription(self.node, 'aeb_status', self.status.append)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def spin(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def wait(self, cond: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)
            if cond():
                return True
        return False

    def wait_connected(self, timeout: float = 30.0) -> bool:
        return self.wait(lambda: self.lidar.get_subscription_count() > 0
                         and self.node.count_publishers(
                             '/carla/ego_vehicle/brake_request') > 0,
                         timeout)

    def send_clock(self, t: float) -> None:
        from rosgraph_msgs.msg import Clock
        self.clock.publish(Clock(clock=stamps.stamp_from_sec(t)))

    def send_odom(self, t: float, speed: float, qw: float = 1.0) -> None:
        from nav_msgs.msg import Odometry
        msg = Odometry()
        msg.header = stamps.make_header(t, 'map')
        msg.child_frame_id = 'ego_vehicle'
        msg.pose.pose.position.x = speed * t
        msg.pose.pose.orientation.w = qw
        msg.twist.twist.linear.x = float(speed)
        self.odom.publish(msg)

    def send_cloud(self, t: float, pts: np.ndarray) -> None:
        self.lidar.publish(clouds.xyzi_to_cloud(pts, t, 'ego_vehicle/lidar'))

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


def _wall(x: float) -> np.ndarray:
    """Return a car-like wall x m ahead of the lidar (sensor frame)."""
    y, z = np.meshgrid(np.linspace(-0.9, 0.9, 19), np.linspace(-1.2, -0.4, 5))
    n = y.size
    ground = np.stack([np.linspace(5, 30, 50), np.zeros(50),
                       np.full(50, -1.75), np.ones(50)], axis=1)
    wall = np.stack([np.full(n, x), y.ravel(), z.ravel(), np.ones(n)], 1)
    return np.vstack([wall, ground]).astype(np.float32)


def _warm_up(h: _Harness) -> float:
    """Send free-road frames until one is answered; return its stamp."""
    for k in range(100):
        t = round(0.5 + 0.05 * k, 6)
        h.send_clock(t)
        h.send_odom(t, V)
        h.send_cloud(t, _wall(200.0))
        if h.wait(lambda: t in _stamps(h.brakes), 0.3):
            assert h.brakes[-1].accel.linear.x == 0.0
            return t
    raise AssertionError('aeb_controller never answered a cloud')


def _stamps(msgs: List[Any]) -> List[float]:
    return [round(stamps.sec_from_stamp(m.header.stamp), 6) for m in msgs]


@pytest.mark.dds
def test_brake_request_stamped_and_bad_clouds(ros_domain: int,
                                              rclpy_context: Any) -> None:
    """Obstacle ahead at 50 km/h: brake request with the cloud's stamp."""
    proc = _start_node()
    h = _Harness(rclpy_context)
    try:
        assert h.wait_connected(), 'aeb_controller did not come up'
        t = _warm_up(h)
        t0 = t + 0.05
        onset = None
        for k in range(30):
            t = round(t0 + 0.05 * k, 6)
            h.send_clock(t)
            h.send_odom(t, V)
            h.send_cloud(t, _wall(28.0 - V * 0.05 * k))
            h.wait(lambda: t in _stamps(h.brakes), 3.0)
            got = [m for m in h.brakes
                   if round(stamps.sec_from_stamp(m.header.stamp), 6) == t]
            assert got, f'no brake_request stamped {t}'
            if got[-1].accel.linear.x < 0.0:
                onset = t
                break
        assert onset is not None, 'never braked for a wall ahead'
        assert h.wait(lambda: onset in _stamps(h.status), 5.0)
        msg = [m for m in h.status if _stamps([m])[0] == onset][-1]
        assert msg.status[0].message in ('partial', 'full')
        keys = {kv.key for kv in msg.status[0].values}
        assert {'ttc', 'distance', 'closing_speed',
                'required_decel'} <= keys
        # a cloud of NaNs and a cloud with missing fields: handled, answered
        from sensor_msgs.msg import PointField
        t_nan = round(t + 0.05, 6)
        h.send_clock(t_nan)
        h.send_odom(t_nan, V)
        h.send_cloud(t_nan, np.full((100, 4), np.nan, np.float32))
        assert h.wait(lambda: t_nan in _stamps(h.brakes), 5.0)
        t_bad = round(t_nan + 0.05, 6)
        fields = clouds.make_fields([('x', 0, PointField.FLOAT32),
                                     ('y', 4, PointField.FLOAT32)])
        h.lidar.publish(clouds.create_cloud(
            stamps.make_header(t_bad, 'ego_vehicle/lidar'), fields,
            np.zeros((10, 2), np.float32)))
        assert h.wait(lambda: t_bad in _stamps(h.brakes), 5.0)
        # odometry with a zero quaternion (an estimator before its first
        # fix): its pose is ignored, the cloud still answered
        t_q = round(t_bad + 0.05, 6)
        h.send_clock(t_q)
        h.send_odom(t_q, V, qw=0.0)
        h.send_cloud(t_q, _wall(28.0 - V * 0.05 * 31))
        assert h.wait(lambda: t_q in _stamps(h.brakes), 5.0)
        # still braking: the brake is held while the wall is still ahead
        assert h.brakes[-1].accel.linear.x < 0.0
        assert proc.poll() is None, 'node died on bad input'
    finally:
        h.close()
        out = _stop(proc)
    assert 'Traceback' not in out, out


@pytest.mark.dds
def test_no_lidar_requests_stop(ros_domain: int, rclpy_context: Any) -> None:
    """
    Odometry and clock but no lidar: the timer requests a stop.

    The node runs with the default (FS car) rig while the warm-up clouds
    come from a roof lidar: the wrong mount is reported.
    """
    proc = _start_node(passenger=False)
    h = _Harness(rclpy_context)
    try:
        assert h.wait_connected(), 'aeb_controller did not come up'
        _warm_up(h)
        stop = []
        for k in range(60):
            t = 10.0 + 0.05 * k
            h.send_clock(t)
            h.send_odom(t, V)
            h.spin(0.05)
            stop = [m for m in h.brakes if m.accel.linear.x < 0.0]
            if stop:
                break
        assert stop, 'no stop request without lidar'
        assert stop[0].accel.linear.x == pytest.approx(-6.0)
        assert any(s.status[0].message == 'stale' for s in h.status)
    finally:
        h.close()
        out = _stop(proc)
    assert 'Traceback' not in out, out
    assert 'below the ground' in out, out


@pytest.mark.dds
def test_ground_truth_fixed_ttc(ros_domain: int, rclpy_context: Any) -> None:
    """Strategy fixed_ttc on actor odometry brakes once TTC < 3 s."""
    from hil_bridge.interface.contract import create_publisher
    from nav_msgs.msg import Odometry
    proc = _start_node('mode:=ground_truth', 'strategy:=fixed_ttc')
    h = _Harness(rclpy_context)
    target = create_publisher(h.node, 'actor_odometry', actor='target')
    try:
        assert h.wait(lambda: target.get_subscription_count() > 0
                      and h.node.count_publishers(
                          '/carla/ego_vehicle/brake_request') > 0, 30.0)
        x_target = 60.0
        onset = None
        for k in range(200):
            t = round(1.0 + 0.05 * k, 6)
            msg = Odometry()
            msg.header = stamps.make_header(t, 'map')
            msg.pose.pose.position.x = x_target
            msg.pose.pose.orientation.w = 1.0
            target.publish(msg)
            h.spin(0.01)
            h.send_clock(t)
            h.send_odom(t, V)
            if h.wait(lambda: t in _stamps(h.brakes), 0.5):
                got = [m for m in h.brakes if _stamps([m])[0] == t]
                if got[-1].accel.linear.x < 0.0:
                    onset = t
                    break
        assert onset is not None, 'fixed_ttc never braked'
        ttc = (x_target - V * onset) / V     # actor origins, as the tutorial
        assert 2.7 < ttc < 3.0
    finally:
        h.close()
        out = _stop(proc)
    assert 'Traceback' not in out, out


def test_params_match_config() -> None:
    """PARAMS and config/aeb_controller.yaml list the same names."""
    from aeb_control.aeb_node import PARAMS
    from hil_bridge.interface.params import check_specs
    defaults = check_specs(PARAMS, 'aeb_controller')
    assert defaults['strategy'] == 'ttc_staged'
    assert defaults['mode'] == 'perception'
