# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Fuzz suite: every node against bad input, clock jumps and silence.

Bad input: malformed, NaN/inf, oversized, out-of-order, future- and
past-stamped messages. The node classes run in this process (test/inprocess.py) on a sim clock the
test sets, their callbacks called directly: no DDS, no spinning, so each
test is exact and takes a second or two. Each test asserts that the node
lives, logs at most a few lines per second however many bad messages come
(the emitted stderr lines are counted), and that its output is safe: stamps
only from accepted inputs, a stop after silence, and the AEB still braking
for an obstacle placed after the bad input. Hypothesis adds random point
sets, values and stamp offsets (a fixed, small number of examples).
"""

import math
import time
from typing import Any, Callable, List

from builtin_interfaces.msg import Time
from fuzz_inputs import (bad_clouds, bad_images, bad_jpegs, bad_scans, cone_cloud,
                         corridor, lidar_cloud, odd_stamps, odometry, restamp, scan,
                         stamp_at, wall_points)
from hil_bridge.interface.codecs import images, stamps
from hil_bridge.interface.freshness import FUTURE_TOLERANCE
from hypothesis import given, HealthCheck, settings, strategies as st
from inprocess import NodeUnderTest
import numpy as np
import pytest

FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
#: values of a point coordinate: ordinary, extreme and non-finite
COORD = st.one_of(st.floats(-50.0, 50.0), st.sampled_from(
    [math.nan, math.inf, -math.inf, 3.4e38, -3.4e38, 0.0]))
#: stamp offsets from the node clock (s): inside and outside the policy
OFFSET = st.one_of(st.floats(-0.2, 0.2), st.sampled_from([-1e6, -60.0, -2.0, 0.3, 5.0, 1e6]))


def log_lines(capfd: pytest.CaptureFixture, node_name: str) -> List[str]:
    """Return the log lines of ``node_name`` and its child loggers so far (stderr)."""
    _out, err = capfd.readouterr()
    return [ln for ln in err.splitlines()
            if f'[{node_name}]' in ln or f'[{node_name}.' in ln]


def assert_quiet(lines: List[str], started: float, n_inputs: int) -> None:
    """At most a few lines per second, however many bad inputs came."""
    elapsed = max(time.monotonic() - started, 1.0)
    assert n_inputs >= 100, n_inputs
    assert len(lines) <= 12 + 4 * elapsed, '\n'.join(lines[-30:])


def feed(handler: Callable[[Any], None], inputs: List) -> int:
    """Call ``handler`` with every (label, message) pair; return how many."""
    for _label, msg in inputs:
        handler(msg)
    return len(inputs)


# ---------------------------------------------------------------- planner
def test_planner_fuzz(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """
    Planner: bad cone clouds and odometry never kill it, never reach cmd_vel.

    Issue 14 finding 2: one future cone cloud silenced the stop timer and
    stamped cmd_vel 1e6 s ahead. Now cmd_vel carries only accepted stamps,
    and silence after any bad input gives a stop.
    """
    from path_planning.planner_node import ConeDrivePlannerNode, WATCHDOG_LAG
    h = NodeUnderTest(ConeDrivePlannerNode, rclpy_context)
    node = h.node
    started, n = time.monotonic(), 0
    t = 10.0
    valid = []
    for _ in range(10):
        h.at(t)
        node._on_odom(odometry(t, 3.0))
        node._on_cones(corridor(t))
        valid.append(round(t, 6))
        n += feed(node._on_cones, bad_clouds(corridor(t), t))
        n += feed(node._on_odom, [(s, restamp(odometry(t, 3.0), st_)) for s, st_ in
                                  odd_stamps(t)])
        node._on_odom(odometry(t, math.nan, math.inf))
        n += 1
        t = round(t + 0.05, 6)
    out = {round(s, 6) for s in h.stamps('cmd_vel')}
    assert out <= set(valid), sorted(out - set(valid))[:5]
    assert set(valid) <= out  # every accepted cloud was answered
    assert all(math.isfinite(m.twist.linear.x) and math.isfinite(m.twist.angular.z)
               for m in h.topic('cmd_vel'))
    # one future cloud, then silence: the stop timer still stops the car
    node._on_cones(corridor(t + 1e6))
    h.at(t + node.cone_timeout + 0.05)
    node._watchdog()
    last = h.topic('cmd_vel')[-1]
    assert last.twist.linear.x == 0.0
    # the node clock's time, just behind it: a stop from no frame never
    # answers a lockstep frame
    assert stamps.sec_from_stamp(last.header.stamp) == pytest.approx(h.t - WATCHDOG_LAG,
                                                                     abs=1e-6)
    # the clock jumps back (a replay restarted): answered at once
    for t in (1.0, 1.05, 1.1):
        h.at(t)
        node._on_odom(odometry(t, 3.0))
        node._on_cones(corridor(t))
        assert h.stamps('cmd_vel')[-1] == pytest.approx(t)
    assert h.topic('cmd_vel')[-1].twist.linear.x > 0.0
    lines = log_lines(capfd, 'cone_drive_planner')
    assert sum('clock jumped back' in ln for ln in lines) == 1
    assert any('ahead of the node clock' in ln for ln in lines)
    assert_quiet(lines, started, n)
    h.close()


def test_planner_random_clouds_and_stamps(rclpy_context: Any) -> None:
    """Random cones and stamp offsets: output only for accepted stamps, always finite."""
    from path_planning.planner_node import ConeDrivePlannerNode
    h = NodeUnderTest(ConeDrivePlannerNode, rclpy_context)
    state = {'t': 20.0}

    @FUZZ
    @given(pts=st.lists(st.tuples(COORD, COORD, COORD), max_size=30), offset=OFFSET)
    def run(pts: list, offset: float) -> None:
        state['t'] += 0.05
        t = state['t']
        h.at(t)
        before = len(h.topic('cmd_vel'))
        h.node._on_cones(cone_cloud(pts or np.zeros((0, 3)), t + offset))
        new = h.topic('cmd_vel')[before:]
        accepted = -h.node.cone_timeout <= offset <= FUTURE_TOLERANCE
        assert len(new) == (1 if accepted else 0)
        for m in new:
            assert math.isfinite(m.twist.linear.x) and m.twist.linear.x >= 0.0
            assert math.isfinite(m.twist.angular.z)
            assert stamps.sec_from_stamp(m.header.stamp) <= t + FUTURE_TOLERANCE
    run()
    h.close()


# -------------------------------------------------------------------- AEB
def test_aeb_fuzz_then_obstacle_still_brakes(rclpy_context: Any,
                                             capfd: pytest.CaptureFixture) -> None:
    """
    AEB: after every kind of bad cloud, an obstacle ahead still gets a brake.

    Issue 14 finding 2 (AEB part): after one future cloud the AEB went
    silent (no stale warning, no status). Silence after bad input now gives
    the stale stop, stamped with the node clock.
    """
    from aeb_control.aeb_node import AebNode
    h = NodeUnderTest(AebNode, rclpy_context)
    node = h.node
    started, n = time.monotonic(), 0
    t = 5.0
    for _ in range(6):
        h.at(t)
        node._on_odometry(odometry(t, 10.0))
        n += feed(node._on_lidar, bad_clouds(lidar_cloud(wall_points(30.0), t), t))
        n += feed(node._on_odometry, [(s, restamp(odometry(t, 10.0), st_))
                                      for s, st_ in odd_stamps(t)])
        t = round(t + 0.05, 6)
    out = h.stamps('brake_request')
    assert max(out) <= t + FUTURE_TOLERANCE
    # an obstacle placed after the bad input, closing at 10 m/s: braking,
    # with the cloud's stamp
    for k in range(8):
        h.at(t)
        node._on_odometry(odometry(t, 10.0, x=0.5 * k))
        node._on_lidar(lidar_cloud(wall_points(9.0 - 0.5 * k), t))
        t = round(t + 0.05, 6)
    t = round(t - 0.05, 6)
    brake = h.topic('brake_request')[-1]
    assert stamps.sec_from_stamp(brake.header.stamp) == pytest.approx(t)
    assert brake.accel.linear.x < -1.0, h.topic('aeb/status')[-1].status[0].values
    # one future cloud, then silence: the stale stop comes (status ERROR)
    node._on_lidar(lidar_cloud(wall_points(30.0), t + 1e6))
    h.at(t + 0.5)
    node._on_timer()
    assert h.topic('brake_request')[-1].accel.linear.x < 0.0
    assert h.topic('aeb/status')[-1].status[0].message == 'stale'
    assert stamps.sec_from_stamp(h.topic('brake_request')[-1].header.stamp) \
        == pytest.approx(t + 0.5)
    lines = log_lines(capfd, 'aeb_controller')
    assert any('AEB blind' in ln for ln in lines)
    assert_quiet(lines, started, n)
    h.close()


def test_aeb_nan_per_point_and_empty_clouds_are_blind(rclpy_context: Any) -> None:
    """
    Issue 14 finding 8: one NaN coordinate per point (x finite) counted as fresh.

    Such a cloud, and an empty cloud from a lidar that sees the ground
    (car_rig), is no input: the AEB goes stale and stops. The planar HIL
    rig lidar sees nothing in open space, so its empty clouds stay fresh.
    """
    from aeb_control.aeb_node import AebNode
    xyz = np.tile([[5.0, 0.0, 0.5]], (500, 1))
    xyz[:, 1] = np.nan
    for rig, cloud, stale in (('hil_rig.yaml', xyz, True),
                              ('car_rig.yaml', np.zeros((0, 3)), True),
                              ('hil_rig.yaml', np.zeros((0, 3)), False)):
        h = NodeUnderTest(AebNode, rclpy_context, {'rig': rig})
        for k in range(20):
            t = 1.0 + 0.05 * k
            h.at(t)
            h.node._on_odometry(odometry(t, 5.0))
            h.node._on_lidar(lidar_cloud(cloud, t))
            h.node._on_timer()
        stages = [m.status[0].message for m in h.topic('aeb/status')]
        assert ('stale' in stages) == stale, (rig, cloud.shape, stages[-3:])
        h.close()


def test_aeb_imu_stamp_policy_and_silence(rclpy_context: Any) -> None:
    """
    AEB with use_imu: the imu's yaw rate only while the imu is fresh and well stamped.

    Found in the fault sweep: the imu had no stamp policy and no
    staleness, so one message stamped 1000 s ahead, or the last one before
    the imu fell silent, set the yaw rate of every later decision (3 rad/s:
    a path curling away from an obstacle straight ahead).
    """
    from aeb_control.aeb_node import AebNode
    from sensor_msgs.msg import Imu
    h = NodeUnderTest(AebNode, rclpy_context, {'use_imu': True})
    node = h.node

    def imu(t: float, yaw_rate: float) -> Any:
        msg = Imu()
        msg.header.stamp = stamp_at(t)
        msg.angular_velocity.z = yaw_rate
        return msg
    t = 2.0
    h.at(t)
    node._on_imu(imu(t + 1000.0, 3.0))  # future: dropped
    node._on_odometry(odometry(t, 10.0, yaw_rate=0.1))
    assert node.core.yaw_rate == pytest.approx(0.1)
    node._on_imu(imu(t, 0.5))
    node._on_odometry(odometry(t, 10.0, yaw_rate=0.1))
    assert node.core.yaw_rate == pytest.approx(0.5)
    t += node.params.odom_timeout + 0.05  # the imu falls silent
    h.at(t)
    node._on_odometry(odometry(t, 10.0, yaw_rate=0.1))
    assert node.core.yaw_rate == pytest.approx(0.1)
    node._on_imu(imu(t, math.nan))  # non-finite: the odometry's
    node._on_odometry(odometry(t, 10.0, yaw_rate=0.2))
    assert node.core.yaw_rate == pytest.approx(0.2)
    h.close()


def test_aeb_random_clouds(rclpy_context: Any) -> None:
    """Random points and stamps: decisions are finite and carry accepted stamps only."""
    from aeb_control.aeb_node import AebNode
    h = NodeUnderTest(AebNode, rclpy_context)
    state = {'t': 3.0}

    @FUZZ
    @given(pts=st.lists(st.tuples(COORD, COORD, COORD), max_size=40), offset=OFFSET)
    def run(pts: list, offset: float) -> None:
        state['t'] += 0.05
        t = state['t']
        h.at(t)
        h.node._on_odometry(odometry(t, 8.0))
        before = len(h.topic('brake_request'))
        h.node._on_lidar(lidar_cloud(np.asarray(pts, np.float64).reshape(-1, 3), t + offset))
        for m in h.topic('brake_request')[before:]:
            assert math.isfinite(m.accel.linear.x) and m.accel.linear.x <= 0.0
            assert stamps.sec_from_stamp(m.header.stamp) == pytest.approx(t + offset)
            assert -h.node.params.staging.stale_timeout <= offset <= FUTURE_TOLERANCE
    run()
    h.close()


# ----------------------------------------------------------------- vision
def _vision(rclpy_context: Any, **params: Any) -> NodeUnderTest:
    from cone_detection.vision_node import VisionConeNode
    base = {'cameras': ['rgb_left'], 'publish_markers': False, 'image_reduce': 1}
    base.update(params)
    return NodeUnderTest(VisionConeNode, rclpy_context, base)


def _info(t: float) -> Any:
    k = np.array([[32.0, 0.0, 32.0], [0.0, 32.0, 24.0], [0.0, 0.0, 1.0]])
    return images.camera_info_msg(k, 64, 48, t, 'ego_vehicle/rgb_left/optical')


def _frame(t: float) -> Any:
    return images.image_to_msg(np.full((48, 64, 3), 90, np.uint8), t,
                               'ego_vehicle/rgb_left/optical')


def test_vision_fuzz_raw(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """
    Vision, raw images: bad images never kill it or reach the output.

    Issue 14 findings 6 and 7: after a /clock jump back the node went dark
    for 8 s, after one future image for good; an 8000x6000 image was
    processed without a limit. Now both are answered at once and images
    beyond max_pixels are dropped before decoding.
    """
    h = _vision(rclpy_context)
    node, cam = h.node, h.node.cameras[0]
    started, n = time.monotonic(), 0
    t = 50.0
    for _ in range(8):
        h.at(t)
        node._on_info(cam, _info(t))
        node._on_image(cam, _frame(t))
        for _label, msg in bad_images(_frame(t), t):
            node._on_image(cam, msg)
            n += 1
        t = round(t + 0.05, 6)
    out = h.stamps('cones/vision')
    assert len(out) == 8 and max(out) < t
    # one future image, then ordinary frames: still answered
    node._on_image(cam, _frame(t + 1000.0))
    h.at(t)
    node._on_image(cam, _frame(t))
    assert h.stamps('cones/vision')[-1] == pytest.approx(t)
    # the clock jumps back (a replay restarted): answered at once
    h.at(1.0)
    node._on_image(cam, _frame(1.0))
    assert h.stamps('cones/vision')[-1] == pytest.approx(1.0)
    lines = log_lines(capfd, 'vision_cone_detector')
    assert sum('clock jumped back' in ln for ln in lines) == 1
    assert any('max_pixels' in ln for ln in lines)
    assert_quiet(lines, started, n)
    h.close()


def test_vision_fuzz_jpeg_bombs(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """
    Issue 14 finding 7: a 5 KB JPEG claiming 30000x30000 cost 5.5 s and 1.4 GB.

    The JPEG header is read first: such images are dropped in well under a
    millisecond each, garbage is dropped, real JPEGs are detected on.
    """
    h = _vision(rclpy_context, use_compressed=True)
    node, cam = h.node, h.node.cameras[0]
    t = 5.0
    h.at(t)
    node._on_info(cam, _info(t))
    good = images.image_to_compressed(np.full((48, 64, 3), 90, np.uint8), t,
                                      'ego_vehicle/rgb_left/optical')
    node._on_image(cam, good)
    assert h.stamps('cones/vision') == [pytest.approx(t)]
    bombs = bad_jpegs(good, t)
    started = time.perf_counter()
    for _ in range(20):
        for _label, msg in bombs[:2]:
            node._on_image(cam, msg)
    per_bomb = (time.perf_counter() - started) / 40
    assert per_bomb < 0.01, f'{per_bomb * 1e3:.1f} ms per header bomb'
    n = 40 + feed(lambda m: node._on_image(cam, m), bombs * 6)
    assert len(h.stamps('cones/vision')) == 1
    t += 0.05
    h.at(t)
    node._on_image(cam, restamp(good, stamps.stamp_from_sec(t)))
    assert h.stamps('cones/vision')[-1] == pytest.approx(t)
    lines = log_lines(capfd, 'vision_cone_detector')
    assert any('30000x30000' in ln for ln in lines)
    assert_quiet(lines, started, n)
    h.close()


# ------------------------------------------------- lidar chain and fusion
def test_lidar_detector_fuzz(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """Scan and cloud mode: bad input is dropped; valid input is answered with its stamp."""
    from cone_detection.lidar_node import LidarConeNode
    started, n = time.monotonic(), 0
    for mode in ('scan', 'cloud'):
        h = NodeUnderTest(LidarConeNode, rclpy_context, {'mode': mode})
        handler = h.node._on_scan if mode == 'scan' else h.node._on_cloud
        t = 7.0
        valid = set()
        for _ in range(6):
            h.at(t)
            valid.add(t)
            good = scan(t) if mode == 'scan' else lidar_cloud(wall_points(8.0), t)
            handler(good)
            bad = bad_scans(good, t) if mode == 'scan' else bad_clouds(good, t)
            n += feed(handler, bad)
            t = round(t + 0.05, 6)
        out = h.stamps('cones/lidar')
        assert set(out) == valid, out  # well-stamped bad content gives empty cones
        h.at(1.0)
        handler(scan(1.0) if mode == 'scan' else lidar_cloud(wall_points(8.0), 1.0))
        assert h.stamps('cones/lidar')[-1] == pytest.approx(1.0)
        h.close()
    assert_quiet(log_lines(capfd, 'lidar_cone_detector'), started, n)


def test_cloud_to_scan_fuzz(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """pointcloud_to_laserscan: bad clouds are dropped; valid ones give a scan."""
    from cone_detection.cloud_to_scan_node import CloudToScanNode
    h = NodeUnderTest(CloudToScanNode, rclpy_context)
    started, n = time.monotonic(), 0
    t = 3.0
    for _ in range(8):
        h.at(t)
        good = lidar_cloud(wall_points(8.0), t)
        h.node._on_cloud(good)
        n += feed(h.node._on_cloud, bad_clouds(good, t))
        t = round(t + 0.05, 6)
    out = h.stamps('scan')
    assert len(out) >= 8 and max(out) < t
    assert_quiet(log_lines(capfd, 'pointcloud_to_laserscan'), started, n)
    h.close()


def test_fusion_fuzz(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """Fusion: bad lidar/vision cones and odometry dropped; map and buffers reset on a jump."""
    from cone_detection.fusion_node import ConeFusionNode
    h = NodeUnderTest(ConeFusionNode, rclpy_context, {'map_enabled': True})
    node = h.node
    started, n = time.monotonic(), 0
    t = 30.0
    for _ in range(8):
        h.at(t)
        node._on_odom(odometry(t, 2.0, x=t))
        node._on_vision(cone_cloud([[5.0, 1.5, 0.0]], t, cls=1))
        node._on_lidar(cone_cloud([[5.0, 1.5, 0.0], [5.0, -1.5, 0.0]], t))
        n += feed(node._on_lidar, bad_clouds(cone_cloud([[5.0, 1.5, 0.0]], t), t))
        n += feed(node._on_vision, bad_clouds(cone_cloud([[5.0, 1.5, 0.0]], t), t))
        n += feed(node._on_odom, [(s, restamp(odometry(t), st_)) for s, st_ in
                                  odd_stamps(t)])
        t = round(t + 0.05, 6)
    out = h.stamps('/perception/cones')
    assert out and max(out) < t
    assert len(node.map.cones()) > 0
    h.at(2.0)
    node._on_odom(odometry(2.0, 2.0, x=2.0))
    assert len(node.map.cones()) == 0  # the map of the earlier run is gone
    node._on_vision(cone_cloud([[5.0, 1.5, 0.0]], 2.0, cls=1))  # the new time line's
    node._on_lidar(cone_cloud([[5.0, 1.5, 0.0]], 2.0))
    assert h.stamps('/perception/cones')[-1] == pytest.approx(2.0)
    lines = log_lines(capfd, 'cone_fusion')
    assert sum('clock jumped back' in ln for ln in lines) == 1
    assert_quiet(lines, started, n)
    h.close()


# ----------------------------------------------------------------- bridge
def test_bridge_fuzz_commands_then_silence_stops(rclpy_context: Any,
                                                 capfd: pytest.CaptureFixture) -> None:
    """
    Bridge: bad cmd_vel / brake_request / joy never drive the car; silence stops it.

    Issue 14 findings 1 and 4 at the bridge: a future-stamped command kept
    the car driving, 1e9 m/s was clamped to top speed, out-of-order
    commands flipped throttle and brake. Now the car stays slow under the
    barrage, the watchdog stops it after cmd_timeout of silence, and the
    AEB's brake request still brakes after the bad commands.
    """
    from geometry_msgs.msg import AccelStamped, TwistStamped
    from hil_bridge.bridge.bridge_node import BridgeNode
    from sensor_msgs.msg import Joy
    h = NodeUnderTest(BridgeNode, rclpy_context, {'scenario': 'acceleration',
                                                  'render_cameras': False})
    node = h.node
    frame = node.backend.setup(node.scenario, node.rig)
    node._sim_time = frame.sim_time

    def cmd(t_stamp: Time, speed: float, yaw: float = 0.0) -> Any:
        m = TwistStamped()
        m.header.stamp = t_stamp
        m.twist.linear.x, m.twist.angular.z = float(speed), float(yaw)
        return m

    def brake(t_stamp: Time, decel: float) -> Any:
        m = AccelStamped()
        m.header.stamp = t_stamp
        m.accel.linear.x = float(decel)
        return m

    def step() -> Any:
        nonlocal frame
        control = node.control_step(frame)
        node.backend.apply_control(control)
        frame = node.backend.step(node.dt)
        node._sim_time = frame.sim_time
        return control

    started, n = time.monotonic(), 0
    sources = []
    for k in range(60):
        t = frame.sim_time
        node._on_cmd(cmd(stamp_at(t), 2.0), None)  # the planner: 2 m/s
        for speed in (1e9, -5.0, math.nan, math.inf, 22.5):
            node._on_cmd(cmd(stamp_at(t), speed), None)
        node._on_cmd(cmd(stamp_at(t), 2.0, 1e6), None)
        for _label, s in odd_stamps(t):
            node._on_cmd(cmd(s, 20.0), None)
            node._on_brake(brake(s, 0.0), None)
        node._on_cmd(cmd(stamp_at(max(t - 0.2, 0.0)), 20.0), None)  # out of order
        node._on_brake(brake(stamp_at(t), math.nan), None)
        node._on_joy(Joy(axes=[math.nan] * 3, buttons=[1]), None)
        node._on_joy(Joy(axes=[0.0] * 5000, buttons=[1] * 5000), None)
        n += 12 + 2 * len(odd_stamps(t))
        step()
        sources.append(node.source)
    assert frame.ego.speed < 3.0, frame.ego.speed  # never the 20+ m/s asked for
    assert sources[-1] == 'cmd_vel'
    # silence: within cmd_timeout the watchdog brakes
    for _ in range(int(node.llc.params.cmd_timeout / node.dt) + 2):
        control = step()
    assert node.source == 'watchdog' and control.throttle == 0.0 and control.brake > 0.0
    # the AEB after the barrage: a brake request brakes
    node._on_brake(brake(stamp_at(frame.sim_time), -8.0), None)
    control = step()
    assert node.source == 'brake_request' and control.brake > 0.5
    counters = node.llc.counters
    assert counters['rejected_cmd'] > 0
    rejected = {k: dict(v.rejected) for k, v in node.gates.items()}
    assert rejected['cmd_vel'].get('future', 0) > 0
    assert rejected['cmd_vel'].get('out-of-order', 0) > 0
    assert_quiet(log_lines(capfd, 'hil_bridge'), started, n)
    node.backend.teardown()
    h.close()


# ------------------------------------------------- newest input only
@pytest.mark.parametrize('module, cls, params, topics', [
    ('aeb_control.aeb_node', 'AebNode', {}, ['/carla/ego_vehicle/lidar']),
    ('path_planning.planner_node', 'ConeDrivePlannerNode', {}, ['/perception/cones']),
    ('cone_detection.lidar_node', 'LidarConeNode', {'mode': 'cloud'},
     ['/carla/ego_vehicle/lidar']),
    ('cone_detection.lidar_node', 'LidarConeNode', {'mode': 'scan'},
     ['/carla/ego_vehicle/scan']),
    ('cone_detection.vision_node', 'VisionConeNode', {'use_compressed': True},
     ['/carla/ego_vehicle/rgb_left/image/compressed',
      '/carla/ego_vehicle/rgb_right/image/compressed']),
    ('cone_detection.vision_node', 'VisionConeNode', {},
     ['/carla/ego_vehicle/rgb_left/image', '/carla/ego_vehicle/rgb_right/image']),
])
def test_heavy_inputs_keep_only_the_newest(rclpy_context: Any, module: str, cls: str,
                                           params: dict, topics: List[str]) -> None:
    """
    A node slower than its heavy input drops what it cannot process in time.

    The subscription of every input that costs a cycle (clouds, cones,
    images) keeps the newest message only (depth 1): after a slow cycle the
    node takes the newest, not a backlog of up to 5 older ones (AEB and
    planner kept depth 5, vision too).
    """
    import importlib
    node_cls = getattr(importlib.import_module(module), cls)
    h = NodeUnderTest(node_cls, rclpy_context, params)
    depth = {s.topic_name: s.qos_profile.depth for s in h.node.subscriptions}
    h.close()
    assert {t: depth.get(t) for t in topics} == dict.fromkeys(topics, 1), depth


# ----------------------------------------------------------- link monitor
def _raw_callback(node: Any, suffix: str) -> Callable[[bytes], None]:
    """Return the callback of the node's subscription whose topic ends with ``suffix``."""
    return next(s.callback for s in node.subscriptions if s.topic_name.endswith(suffix))


def test_link_monitor_fuzz(rclpy_context: Any, capfd: pytest.CaptureFixture) -> None:
    """
    Link monitor: size limits, forged pongs and bad stamps never bend its report.

    It had no message size limits: a ping or pong of any size was decoded,
    and a pong answering no ping of its own (a second server, a replay)
    went into the clock estimate; one stamp 1e6 s ahead read as 2e7 lost
    messages. Now oversized messages are counted and dropped undecoded,
    such pongs are dropped, stamp jumps are counted apart from drops.
    """
    from hil_bridge.link.link_monitor_node import LinkMonitorNode
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray
    started, n = time.monotonic(), 0
    client = NodeUnderTest(LinkMonitorNode, rclpy_context,
                           {'role': 'client', 'topics': ['odometry'], 'window': 60.0,
                            'max_bytes': 4096})
    node = client.node
    on_odom = _raw_callback(node, '/odometry')
    on_pong = _raw_callback(node, '/hil/pong')
    for k in range(40):
        t = 1.0 + 0.05 * k
        on_odom(serialize_message(odometry(t)))
        for bad in (serialize_message(odometry(1e6 + t)), b'\x00\x01\x00',
                    serialize_message(restamp(odometry(t), Time(sec=-2**31))),
                    b'\x00\x01\x00\x00' + bytes(8192)):
            on_odom(bad)
            n += 1
    stats = node.summary()['topics']['odometry']
    assert stats['drops'] == 0 and stats['jumps'] > 0, stats
    assert stats['oversized'] == 40 and stats['bad'] == 40, stats

    def pong(values: List[float]) -> bytes:
        return serialize_message(Float64MultiArray(data=values))
    now = time.time()
    for bad in (pong([1.0, now - 100.0, now + 5.0, now + 5.0]),  # answers no ping
                pong([math.nan] * 4), pong([1.0]), b'\x00\x01', pong([1.0] * 100)):
        for _ in range(30):
            on_pong(bad)
            n += 1
    assert node.pongs == 0 and len(node.clock_est) == 0
    node._ping()
    seq, t1 = client.topic('/hil/ping')[-1].data
    reply = pong([seq, t1, t1 + 0.001, t1 + 0.002])
    on_pong(reply)
    on_pong(reply)  # a duplicate: the second server's answer
    assert node.pongs == 1 and len(node.clock_est) == 1
    assert node.summary()['rejected']['pong answers no ping of this client (a second '
                                      'server, a duplicate or a replay)'] == 31
    client.close()
    server = NodeUnderTest(LinkMonitorNode, rclpy_context, {'role': 'server'})
    on_ping = _raw_callback(server.node, '/hil/ping')
    for bad in (pong([1.0] * 100), pong([math.inf, 1.0]), pong([]), b'garbage!'):
        for _ in range(30):
            on_ping(bad)
            n += 1
    assert server.topic('/hil/pong') == []
    on_ping(pong([7.0, now]))
    assert list(server.topic('/hil/pong')[-1].data[:2]) == [7.0, now]
    server.close()
    assert_quiet(log_lines(capfd, 'hil_link_monitor'), started, n)
