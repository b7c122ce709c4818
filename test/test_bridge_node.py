# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The bridge node over real DDS.

The bridge runs as a subprocess on the built-in backend with a small rig;
the test process plays the onboard side.
"""

import json
import math
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import stamps
from node_harness import stop_process
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RIG = """sensors:
  - id: rgb_left
    blueprint: sensor.camera.rgb
    mount: {x: 0.5, y: 0.06, z: 1.0, roll: 0.0, pitch: 0.0, yaw: 0.0}
    attributes: {image_size_x: 64, image_size_y: 48, fov: 90.0, sensor_tick: 0.0}
  - id: rgb_right
    blueprint: sensor.camera.rgb
    mount: {x: 0.5, y: -0.06, z: 1.0, roll: 0.0, pitch: 0.0, yaw: 0.0}
    attributes: {image_size_x: 64, image_size_y: 48, fov: 90.0, sensor_tick: 0.0}
  - id: lidar
    blueprint: sensor.lidar.ray_cast
    mount: {x: 1.2, y: 0.0, z: 0.2, roll: 0.0, pitch: 0.0, yaw: 0.0}
    attributes: {channels: 1, range: 20.0, points_per_second: 21600,
                 rotation_frequency: 20.0, upper_fov: 0.0, lower_fov: 0.0,
                 horizontal_fov: 270.0}
"""
LIDAR_RIG = RIG[RIG.index('  - id: lidar'):]


@pytest.fixture
def rig_file(tmp_path: Path) -> Path:
    """Write the small test rig (64x48 cameras + planar lidar)."""
    path = tmp_path / 'small_rig.yaml'
    path.write_text(RIG, encoding='utf-8')
    return path


def start_bridge(**params: Any) -> subprocess.Popen:
    """Start the bridge with parameter overrides; stdout is captured."""
    args = [sys.executable, '-m', 'hil_bridge.bridge.bridge_node', '--ros-args',
            '--params-file', str(ROOT / 'config' / 'hil_bridge.yaml')]
    for key, value in params.items():
        if isinstance(value, bool):
            value = 'true' if value else 'false'
        args += ['-p', f'{key}:={value}']
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=dict(os.environ))


def finish(proc: subprocess.Popen, timeout: float = 30.0) -> Tuple[int, str]:
    """Wait for the bridge (SIGINT then kill on timeout); return rc, output."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = stop_process(proc, signal.SIGINT)
    return proc.returncode, out


def run_to_end(proc: subprocess.Popen, onboard: 'Onboard') -> str:
    """Spin the onboard side until the bridge exits; close it; return the output (exit 0)."""
    try:
        onboard.spin_until(proc, lambda: False, timeout=40.0)
        rc, out = finish(proc)
    finally:
        onboard.close()
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, out[-3000:]
    return out


def referee_result(out: str) -> Dict[str, Any]:
    """Return the REFEREE_RESULT json of the bridge output."""
    lines = [ln for ln in out.splitlines() if ln.startswith('REFEREE_RESULT ')]
    assert len(lines) == 1, out[-2000:]
    return json.loads(lines[0][len('REFEREE_RESULT '):])


class Onboard:
    """The onboard side in the test process: subscriptions + a controller."""

    def __init__(self, context: Any, policy: Optional[Callable[[float, Any], Any]] = None,
                 delay: float = 0.0) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.node = rclpy.create_node('onboard_test', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.got: Dict[str, List[Any]] = {}
        self.policy = policy
        self.delay = delay
        self.cmd_pub = contract.create_publisher(self.node, 'cmd_vel')
        self.brake_pub = contract.create_publisher(self.node, 'brake_request')
        self.joy_pub = contract.create_publisher(self.node, 'joy')
        self.subscribe('odometry', self._on_odom)
        self.subscribe('applied_control')

    def subscribe(self, key: str, callback: Optional[Callable[[Any], None]] = None,
                  **fields: str) -> None:
        """Record every message of a contract topic (under its key)."""
        store = self.got.setdefault(key if not fields else f'{key}:{fields}', [])

        def on_msg(msg: Any) -> None:
            store.append(msg)
            if callback is not None:
                callback(msg)
        contract.create_subscription(self.node, key, on_msg, **fields)

    def _on_odom(self, msg: Any) -> None:
        if self.policy is None:
            return
        from geometry_msgs.msg import AccelStamped, TwistStamped
        from sensor_msgs.msg import Joy
        t = stamps.sec_from_stamp(msg.header.stamp)
        if self.delay:
            time.sleep(self.delay)
        out = self.policy(t, msg)
        if out.get('joy') is not None:
            joy = Joy()
            joy.header.stamp = msg.header.stamp
            joy.axes, joy.buttons = out['joy']
            self.joy_pub.publish(joy)
        if out.get('cmd') is not None:
            cmd = TwistStamped()
            cmd.header.stamp = msg.header.stamp
            cmd.twist.linear.x, cmd.twist.angular.z = out['cmd']
            self.cmd_pub.publish(cmd)
        if out.get('brake') is not None:
            req = AccelStamped()
            req.header.stamp = msg.header.stamp
            req.accel.linear.x = out['brake']
            self.brake_pub.publish(req)

    def spin_until(self, proc: subprocess.Popen, done: Callable[[], bool],
                   timeout: float) -> None:
        """Spin until ``done()`` or the bridge exits or the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done() and proc.poll() is None:
            self.executor.spin_once(timeout_sec=0.02)
        # drain what is still in flight
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        """Destroy the node."""
        self.executor.shutdown()
        self.node.destroy_node()


def stamp(msg: Any) -> float:
    """Return the header stamp in seconds (a MarkerArray: its first marker's)."""
    if hasattr(msg, 'markers'):
        return stamps.sec_from_stamp(msg.markers[0].header.stamp)
    return stamps.sec_from_stamp(msg.header.stamp)


@pytest.mark.dds
def test_publishes_every_contract_topic(rclpy_context, rig_file: Path) -> None:
    """Every bridge topic arrives with contract frames and one stamp per frame."""
    proc = start_bridge(scenario='aeb_tutorial', rig=str(rig_file), wait_for_control=True,
                        lockstep_timeout=2.0, real_time_factor=0.0, publish_compressed=True)
    onboard = Onboard(rclpy_context, policy=lambda t, odom: {'cmd': (0.0, 0.0)})
    keys = ['clock', 'imu', 'camera_left', 'camera_left_info', 'camera_left_compressed',
            'camera_right', 'camera_right_info', 'camera_right_compressed', 'lidar',
            'actors', 'ground_truth_cones', 'referee_events']
    for key in keys:
        onboard.subscribe(key)
    onboard.subscribe('actor_odometry', actor='target')
    out = run_to_end(proc, onboard)
    result = referee_result(out)
    assert result['status'] == 'finished' and result['end_reason'] == 'mission_end'
    got = onboard.got
    missing = [k for k in keys + ['odometry', 'applied_control', "actor_odometry:{'actor': "
                                  "'target'}"] if not got.get(k)]
    assert not missing, f'no messages on {missing}'
    role = 'ego_vehicle'
    odom = got['odometry'][-1]
    assert odom.header.frame_id == 'map' and odom.child_frame_id == role
    assert got['imu'][-1].header.frame_id == role
    assert got['lidar'][-1].header.frame_id == f'{role}/lidar'
    assert got['camera_left'][-1].header.frame_id == f'{role}/rgb_left/optical'
    assert got['camera_right_info'][-1].header.frame_id == f'{role}/rgb_right/optical'
    assert got['camera_left'][-1].width == 64 and got['camera_left'][-1].encoding == 'bgr8'
    assert got['ground_truth_cones'][-1].header.frame_id == 'map'
    assert got['applied_control'][-1].header.frame_id == role
    target = got["actor_odometry:{'actor': 'target'}"][-1]
    assert target.pose.pose.position.x == pytest.approx(50.0)
    assert target.child_frame_id == 'target'
    events = [st.name for msg in got['referee_events'] for st in msg.status]
    assert 'referee/mission_end' in events
    # one stamp per frame: every per-frame topic has messages at the same stamps
    # (/clock is best effort, as rclpy's time source subscribes it: under load
    # the probe may miss one, so stamps are checked against the frame grid)
    clock = {round(stamps.sec_from_stamp(m.clock), 6) for m in got['clock']}
    dt = min(np.diff(sorted(clock)))
    for key in ('odometry', 'imu', 'lidar', 'camera_left', 'camera_right_info',
                'applied_control', 'actors'):
        seen = {round(stamp(m), 6) for m in got[key]}
        off_grid = [s for s in seen if abs(s / dt - round(s / dt)) > 1e-6]
        assert not off_grid, (key, off_grid)
        assert len(seen & clock) >= 0.8 * len(seen), key
        assert len(seen) >= 10, key
    common = set.intersection(*({round(stamp(m), 6) for m in got[k]}
                                for k in ('odometry', 'lidar', 'camera_left', 'imu')))
    assert len(common) >= 10
    # the car started at 5.5 m/s, got cmd 0 and stopped
    assert odom.twist.twist.linear.x == pytest.approx(0.0, abs=0.05)


def _policy_trajectory(t: float, odom: Any) -> Dict[str, Any]:
    """Speed and yaw rate that depend on the state, so delays would show."""
    y = odom.pose.pose.position.y
    return {'cmd': (4.0 + 2.0 * math.sin(t), 0.3 * math.cos(0.7 * t) - 0.1 * y)}


def _run_lockstep(context: Any, rig: Path, delay: float) -> List[Tuple[float, float, float]]:
    proc = start_bridge(scenario='acceleration', rig=str(rig), wait_for_control=True,
                        real_time_factor=0.0, duration=2.0, lockstep_timeout=5.0)
    onboard = Onboard(context, policy=_policy_trajectory, delay=delay)
    out = run_to_end(proc, onboard)
    assert referee_result(out)['lockstep_timeouts'] == 0
    # a frame re-sent under load (answer overdue) arrives twice, unchanged
    return sorted({(stamp(m), m.pose.pose.position.x, m.pose.pose.position.y)
                   for m in onboard.got['odometry']})


@pytest.mark.dds
def test_lockstep_fast_and_slow_controller_identical(rclpy_context, tmp_path: Path) -> None:
    """A controller 40 ms slower per frame sees exactly the same world."""
    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    fast = _run_lockstep(rclpy_context, rig, 0.0)
    slow = _run_lockstep(rclpy_context, rig, 0.04)
    assert len(fast) == len(slow) == 41  # frames 0..40, none lost
    assert fast == slow
    assert fast[-1][1] > 5.0  # it did drive


@pytest.mark.dds
def test_lockstep_waits_for_the_answers_to_the_last_frame(rclpy_context,
                                                          tmp_path: Path) -> None:
    """
    The run ends only after the last frame was answered (or timed out).

    The controller answers every frame but the last one (t = 1.0 s): the
    bridge waits ``lockstep_timeout`` for it, counts the timeout and says
    so; before, the run ended at once and a recording missed the answers
    to its last frame.
    """
    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    proc = start_bridge(scenario='acceleration', rig=str(rig), wait_for_control=True,
                        real_time_factor=0.0, duration=1.0, lockstep_timeout=1.5)

    def policy(t: float, _odom: Any) -> Dict[str, Any]:
        return {'cmd': (3.0, 0.0)} if t < 1.0 - 1e-6 else {}
    onboard = Onboard(rclpy_context, policy=policy)
    out = run_to_end(proc, onboard)
    result = referee_result(out)
    assert result['end_reason'] == 'duration', result
    assert result['lockstep_timeouts'] == 1, out[-3000:]
    assert 'within 1.5 s (timeout #1); ending without it' in out, out[-3000:]


@pytest.mark.dds
def test_lockstep_sends_a_frame_again_whose_answer_was_lost(
        rclpy_context, tmp_path: Path) -> None:
    """
    A frame whose answer does not come is sent again, not waited out.

    The controller ignores the first copy of the frame at t = 0.5 s (as if
    that best-effort message had been lost under load) and answers the
    next: the bridge re-sends the frame after a quarter of
    ``lockstep_timeout`` (4 s -> 1 s), the run goes on without a timeout
    and every frame is answered once at least. Before, the frame was
    waited out (a timeout, and the next frame computed without the
    answer).
    """
    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    proc = start_bridge(scenario='acceleration', rig=str(rig), wait_for_control=True,
                        real_time_factor=0.0, duration=1.0, lockstep_timeout=4.0)
    copies: Dict[float, int] = {}

    def policy(t: float, _odom: Any) -> Dict[str, Any]:
        key = round(t, 6)
        copies[key] = copies.get(key, 0) + 1
        if key == 0.5 and copies[key] == 1:
            return {}   # lost
        return {'cmd': (3.0, 0.0)}
    onboard = Onboard(rclpy_context, policy=policy)
    out = run_to_end(proc, onboard)
    result = referee_result(out)
    assert result['end_reason'] == 'duration', result
    assert result['lockstep_timeouts'] == 0, out[-3000:]
    assert result['resent_frames'] >= 1, result
    assert copies[0.5] >= 2, copies
    assert 'for the frame at t=0.500 s after 1 s: sent it again' in out, out[-3000:]
    assert sorted(copies) == [round(0.05 * k, 6) for k in range(21)], copies


def _policy_phases(t: float, odom: Any) -> Dict[str, Any]:
    """Phases: cmd_vel, + AEB, manual, brake pedal, then commands stop."""
    out: Dict[str, Any] = {'brake': 0.0}
    if t < 1.5:
        out['cmd'] = (8.0, 0.0)
    elif t < 2.5:
        out['cmd'] = (8.0, 0.0)
        out['brake'] = -6.0
    elif t < 3.5:
        out['cmd'] = (8.0, 0.0)
        out['joy'] = ([0.0, 0.5, 0.0], [1])    # takeover, half throttle
    elif t < 4.5:
        out['cmd'] = (8.0, 0.0)
        out['joy'] = ([0.0, 1.0, 0.8], [0])    # brake pedal, no takeover
    else:
        out['joy'] = ([0.0, 0.0, 0.0], [0])    # no more cmd_vel
    return out


@pytest.mark.dds
def test_priorities_and_watchdog(rclpy_context, rig_file: Path) -> None:
    """brake_request, manual override and the pedal win; the watchdog stops the car."""
    proc = start_bridge(scenario='acceleration', rig=str(rig_file), render_cameras=False,
                        wait_for_control=True, lockstep_topics="['brake_request']",
                        real_time_factor=0.0, duration=7.0, cmd_timeout=0.5,
                        watchdog_decel=5.0)
    onboard = Onboard(rclpy_context, policy=_policy_phases)
    run_to_end(proc, onboard)
    ids = {0: 'watchdog', 1: 'cmd_vel', 2: 'brake_request', 3: 'manual', 4: 'brake_pedal'}
    source = {round(stamp(m), 3): ids[int(m.twist.linear.z)]
              for m in onboard.got['applied_control']}
    speed = {round(stamp(m), 3): m.twist.twist.linear.x for m in onboard.got['odometry']}

    def sources(lo: float, hi: float) -> set:
        return {s for t, s in source.items() if lo <= t < hi}
    # the control published with frame k was computed from frame k-1's commands
    assert sources(0.2, 1.5) == {'cmd_vel'}
    assert sources(1.7, 2.5) == {'brake_request'}
    assert sources(2.7, 3.5) == {'manual'}
    assert sources(3.7, 4.5) == {'brake_pedal'}
    assert sources(5.2, 7.0) == {'watchdog'}
    assert speed[1.5] > 3.0
    assert speed[2.5] < speed[1.5] - 3.0      # AEB braked
    assert speed[3.5] > speed[2.5]            # manual throttle
    assert speed[4.5] < speed[3.5]            # pedal braked
    assert speed[7.0] == pytest.approx(0.0, abs=0.05)  # watchdog stopped it


@pytest.mark.dds
def test_pause_step_advance(rclpy_context, rig_file: Path) -> None:
    """~/pause stops the clock, ~/step adds one frame, ~/advance N frames."""
    from rosgraph_msgs.msg import Clock
    from std_srvs.srv import SetBool, Trigger
    proc = start_bridge(scenario='acceleration', rig=str(rig_file), render_cameras=False,
                        real_time_factor=1.0, duration=30.0, advance_frames=5)
    onboard = Onboard(rclpy_context)
    clocks: List[float] = []
    onboard.node.create_subscription(
        Clock, '/clock', lambda m: clocks.append(stamps.sec_from_stamp(m.clock)),
        contract.qos_profile('clock'))
    pause = onboard.node.create_client(SetBool, '/hil_bridge/pause')
    step = onboard.node.create_client(Trigger, '/hil_bridge/step')
    advance = onboard.node.create_client(Trigger, '/hil_bridge/advance')

    def call(client: Any, request: Any) -> Any:
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(request)
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            onboard.executor.spin_once(timeout_sec=0.02)
        assert future.done()
        return future.result()

    def settle(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            onboard.executor.spin_once(timeout_sec=0.02)
    try:
        onboard.spin_until(proc, lambda: len(clocks) > 3, timeout=20.0)
        assert call(pause, SetBool.Request(data=True)).success
        for _ in range(5):  # repeats change nothing and log nothing
            assert call(pause, SetBool.Request(data=True)).success
        settle(0.4)
        frozen = clocks[-1]
        settle(0.6)
        assert clocks[-1] == frozen, 'clock moved while paused'
        assert call(step, Trigger.Request()).success
        settle(0.4)
        assert clocks[-1] == pytest.approx(frozen + 0.05, abs=1e-6)
        assert call(advance, Trigger.Request()).success
        settle(0.8)
        assert clocks[-1] == pytest.approx(frozen + 0.30, abs=1e-6)
        assert call(pause, SetBool.Request(data=False)).success
        settle(0.5)
        assert clocks[-1] > frozen + 0.4
    finally:
        onboard.close()
        proc.send_signal(signal.SIGINT)
        rc, out = finish(proc, timeout=15.0)
    assert rc == 0, out[-3000:]
    assert referee_result(out)['end_reason'] == 'shutdown'
    assert out.count('simulation paused') == 1, out[-3000:]


def test_track_seed_picks_the_layout_and_result_has_reference(
        ros_domain: int, tmp_path: Path) -> None:
    """track_seed overrides the scenario's layout; the result carries the reference laps."""
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    from hil_bridge.sim.reference_lap import reference_lap_times
    from hil_bridge.sim.track_gen_hard import hard_track
    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    proc = start_bridge(scenario='track_sweep', track_seed=4, rig=str(rig),
                        render_cameras=False, real_time_factor=0.0, duration=0.5)
    rc, out = finish(proc)
    assert rc == 0, out[-2000:]
    res = referee_result(out)
    expected = reference_lap_times(hard_track(4), load_vehicle_profile('fs_car'), 2)
    assert res['reference_lap_times'] == [round(t, 3) for t in expected]
    assert res['lap_time_ratio'] == []              # no lap driven in 0.5 s


def test_bad_scenario_exits_2() -> None:
    """A scenario that does not exist: clear message, exit code 2."""
    proc = start_bridge(scenario='no_such_scenario')
    rc, out = finish(proc)
    assert rc == 2
    assert 'no_such_scenario' in out


def test_frame_messages_units_and_frames() -> None:
    """Odometry twist in the body frame, Imu with gravity, events, control ids."""
    from hil_bridge.bridge.backend import ActorState, Event, Frame, VehicleControl
    from hil_bridge.bridge.frame_msgs import FrameConverter
    from hil_bridge.interface.frames import Pose
    from hil_bridge.interface.rig import SensorSpec
    import numpy as np
    ego = ActorState('ego_vehicle', Pose(x=1.0, y=2.0, yaw=math.pi / 2),
                     velocity=np.array([0.0, 3.0, 0.0]),
                     angular_velocity=np.array([0.0, 0.0, 0.2]),
                     acceleration=np.array([1.0, 0.0, 0.0]))
    rig = [SensorSpec('rgb_front', 'sensor.camera.rgb', Pose(x=1.5, z=1.2), {}),
           SensorSpec('lidar', 'sensor.lidar.ray_cast', Pose(z=0.2), {})]
    conv = FrameConverter('ego_vehicle', rig)
    frame = Frame(frame=3, sim_time=0.15, ego=ego,
                  events=[Event('cone_hit', 0.15, {'cone': 4}),
                          Event('collision', 0.15, {'other': 'target'})],
                  applied_control=VehicleControl(throttle=0.3, steer=-0.2))
    msgs = {name: m for (_, name), m in conv.messages(frame, source='manual').items()}
    odom = msgs['/carla/ego_vehicle/odometry']
    assert odom.twist.twist.linear.x == pytest.approx(3.0)   # forward in body
    assert odom.twist.twist.linear.y == pytest.approx(0.0, abs=1e-12)
    assert odom.pose.pose.orientation.z == pytest.approx(math.sqrt(0.5))
    imu = msgs['/carla/ego_vehicle/imu']
    assert imu.linear_acceleration.z == pytest.approx(9.81)
    assert imu.linear_acceleration.x == pytest.approx(1.0)
    ctrl = msgs['/carla/ego_vehicle/applied_control']
    assert (ctrl.twist.linear.x, ctrl.twist.angular.z, ctrl.twist.linear.z) == \
        pytest.approx((0.3, -0.2, 3.0))
    ev = msgs['/carla/referee/events']
    assert [s.name for s in ev.status] == ['referee/cone_hit', 'referee/collision']
    assert [s.level for s in ev.status] == [b'\x01', b'\x02']
    assert {kv.key: kv.value for kv in ev.status[0].values}['cone'] == '4'
    assert '/carla/ego_vehicle/rgb_front/image' in dict(conv.topic_list()).values()
    # every message of the frame carries the frame's stamp
    for name, m in msgs.items():
        if hasattr(m, 'header'):
            assert stamps.sec_from_stamp(m.header.stamp) == pytest.approx(0.15), name
    # the cones are latched: the second identical frame does not resend them
    again = {name for (_, name) in conv.messages(frame)}
    assert '/carla/ground_truth/cones' not in again
    static = {(t.header.frame_id, t.child_frame_id): t for t in conv.static_transforms()}
    assert ('ego_vehicle', 'ego_vehicle/rgb_front') in static
    assert ('ego_vehicle/rgb_front', 'ego_vehicle/rgb_front/optical') in static
    assert static[('ego_vehicle', 'ego_vehicle/lidar')].transform.translation.z == 0.2
    dyn = conv.transforms(frame)
    assert dyn[0].child_frame_id == 'ego_vehicle' and dyn[0].header.frame_id == 'map'


def test_carla_unreachable_exits_3(ros_domain: int) -> None:
    """No CARLA server: a message naming host and port, exit code 3."""
    proc = start_bridge(backend='carla', port=2999, timeout=0.5, reconnect_timeout=0.0,
                        scenario='aeb_tutorial')
    rc, out = finish(proc, timeout=60.0)
    assert rc == 3, out[-2000:]
    assert 'localhost:2999' in out
    assert referee_result(out)['status'] == 'error'


@pytest.mark.dds
def test_backend_lost_mid_run_brakes_retries_and_raises(rclpy_context, tmp_path: Path) -> None:
    """A backend that fails mid-run: brake commanded, retried, then BackendError."""
    import numpy as np
    from rclpy.parameter import Parameter

    from hil_bridge.bridge.backend import ActorState, Backend, BackendError, Frame, SensorReading
    from hil_bridge.bridge.bridge_node import BridgeNode
    from hil_bridge.interface.frames import Pose

    class Flaky(Backend):
        """Works for three steps, then the 'server' is gone."""

        def __init__(self) -> None:
            self.n = 0
            self.controls: List[Any] = []
            self.steps_tried = 0

        def _frame(self) -> Frame:
            pts = np.zeros((4, 4), np.float32)
            return Frame(self.n, self.n * 0.05, ActorState('ego_vehicle', Pose()),
                         sensors={'lidar': SensorReading('lidar', 'sensor.lidar.ray_cast',
                                                         self.n, self.n * 0.05, pts)})

        def setup(self, scenario: Any, rig: Any) -> Frame:
            return self._frame()

        def apply_control(self, control: Any) -> None:
            self.controls.append(control)

        def step(self, dt: float) -> Frame:
            self.steps_tried += 1
            if self.n >= 3:
                raise BackendError('connection reset by peer')
            self.n += 1
            return self._frame()

        def teardown(self) -> None:
            pass

    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    backend = Flaky()
    node = BridgeNode(backend=backend, context=rclpy_context, parameter_overrides=[
        Parameter('scenario', value='acceleration'), Parameter('rig', value=str(rig)),
        Parameter('reconnect_timeout', value=0.6), Parameter('real_time_factor', value=0.0)])
    try:
        t0 = time.monotonic()
        with pytest.raises(BackendError, match='connection reset'):
            node.run()
        assert time.monotonic() - t0 >= 0.6
    finally:
        node.destroy_node()
    assert backend.steps_tried >= 3 + 2      # retried
    assert backend.controls[-1].brake == 1.0 and backend.controls[-1].throttle == 0.0


@pytest.mark.dds
def test_async_mode_publishes_what_the_world_gives(rclpy_context, tmp_path: Path) -> None:
    """Asynchronous: the bridge polls latest(), controls once per new frame."""
    import numpy as np
    from rclpy.parameter import Parameter

    from hil_bridge.bridge.backend import ActorState, Backend, Frame
    from hil_bridge.bridge.bridge_node import BridgeNode
    from hil_bridge.interface.frames import Pose

    class World(Backend):
        """A world running on its own: a new frame every third poll."""

        synchronous = False

        def __init__(self) -> None:
            self.polls = 0
            self.n = 0
            self.controls: List[Any] = []

        def _frame(self) -> Frame:
            return Frame(self.n, self.n * 0.05, ActorState(
                'ego_vehicle', Pose(x=self.n * 0.1), velocity=np.array([2.0, 0.0, 0.0])))

        def setup(self, scenario: Any, rig: Any) -> Frame:
            return self._frame()

        def apply_control(self, control: Any) -> None:
            self.controls.append(control)

        def step(self, dt: float) -> Frame:
            raise AssertionError('asynchronous mode must not tick the world')

        def latest(self) -> Optional[Frame]:
            self.polls += 1
            if self.polls % 3:
                return None
            self.n += 1
            return self._frame()

        def teardown(self) -> None:
            pass

    rig = tmp_path / 'lidar_rig.yaml'
    rig.write_text('sensors:\n' + LIDAR_RIG, encoding='utf-8')
    world = World()
    node = BridgeNode(backend=world, context=rclpy_context, parameter_overrides=[
        Parameter('scenario', value='acceleration'), Parameter('rig', value=str(rig)),
        Parameter('synchronous_mode', value=False), Parameter('duration', value=0.5)])
    try:
        assert node.mode == 'async'
        assert node.run() == 0
    finally:
        node.destroy_node()
    assert world.n == 10 and world.polls == 30
    assert len(world.controls) == 10   # one control per new frame
    assert node.frame.sim_time == pytest.approx(0.5)


def test_clock_period_thins_clock_messages() -> None:
    """clock_period: /clock every 0.1 s of sim time, again after a reset; 0 = every frame."""
    from hil_bridge.bridge.backend import ActorState, Frame
    from hil_bridge.bridge.frame_msgs import FrameConverter
    from hil_bridge.interface.frames import Pose
    ego = ActorState('ego_vehicle', Pose())

    def clocks(conv: FrameConverter, times) -> list:
        out = []
        for k, t in enumerate(times):
            msgs = conv.messages(Frame(frame=k, sim_time=t, ego=ego))
            if 'clock' in {key for key, _ in msgs}:
                out.append(t)
        return out

    times = [round(0.05 * k, 3) for k in range(9)] + [0.0, 0.05, 0.1]
    assert clocks(FrameConverter('ego_vehicle', []), times) == times
    thin = clocks(FrameConverter('ego_vehicle', [], clock_period=0.1), times)
    assert thin == [0.0, 0.1, 0.2, 0.3, 0.4, 0.0, 0.1]
    with pytest.raises(ValueError, match='clock_period'):
        FrameConverter('ego_vehicle', [], clock_period=-0.1)
