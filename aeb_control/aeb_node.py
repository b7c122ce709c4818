# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
r"""
``aeb_controller``: the time-to-collision emergency brake as a ROS 2 node.

Perception mode (default): every ``lidar`` PointCloud2 (x, y, z in the
lidar frame; mount pose from the rig file) is run through
:class:`aeb_control.aeb_core.AebCore` with the newest ``odometry``
(nav_msgs/Odometry, twist in the vehicle frame; optional ``imu`` yaw
rate). Ground-truth mode: on every ego ``odometry`` the other actors'
``/carla/<role>/odometry`` (``actor_roles``) are used instead of the cloud.

Outputs, each decision: ``brake_request`` (geometry_msgs/AccelStamped,
``linear.x = -decel`` m/s^2, 0 = release) **stamped with the header stamp
of the input it was computed from** (the bridge's lockstep matches on it),
``aeb_status`` (DiagnosticArray: state, ttc, distance, closing speed,
required deceleration, ...) and ``aeb_markers`` (corridor outline and the
closest obstacle point, frame ``{role}``). A timer (``check_period``, sim
time) requests a stop when the inputs go stale. The driver's pedals come
from ``/joy`` (mapping ``joy_preset`` of
:data:`hil_bridge.interface.joy.JOY_PRESETS`): a manual brake, or a
throttle kick-down while the takeover button is held, releases the AEB.
The commanded steering (``applied_control`` angular.z, CARLA sign) gives
a second corridor the obstacle must also lie in.

Stamp policy (:mod:`hil_bridge.interface.freshness`): an input stamped
ahead of the node clock, or more than its timeout behind it (lidar
``stale_timeout``, odometry and imu ``odom_timeout``, applied control
``steering_timeout``), is dropped with a throttled warning; decisions carry
only accepted stamps. Staleness counts from the inputs' arrival on the node
clock, so no stamp can keep the stale stop away. The imu's yaw rate is used
only while the imu is fresh; otherwise the odometry's (an imu that fell
silent, or sent one future-stamped message, kept its last yaw rate for
good). A cloud with more than
``max_points`` points is dropped undecoded (no fresh input); the clock
jumping back (a replay restarted) resets tracks and actors with one info
line.

Run::

    python -m aeb_control.aeb_node --ros-args \
        --params-file config/aeb_controller.yaml
"""

import math
import sys
from typing import Any, Dict, List, Optional

from aeb_control.aeb_core import AebCore, BrakeDecision, resolve_params
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import AccelStamped, Point
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.contract import create_publisher, create_subscription, frame
from hil_bridge.interface.frames import quaternion_yaw
from hil_bridge.interface.joy import JOY_PRESETS
from hil_bridge.interface.node_inputs import check_cloud_size, InputPolicy
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

NODE_NAME = 'aeb_controller'
#: What a rejected cloud is replaced with: one invalid point (blind input).
_BLIND = np.full((1, 3), np.nan, dtype=np.float32)

_R = ParamSpec
PARAMS: List[ParamSpec] = [
    _R('role_name', 'ego role name ({role} of the contract topics)'),
    _R('strategy', 'ttc_staged (staged, physics based) or fixed_ttc '
       '(tutorial: full brake while 0 < TTC < 3 s)',
       choices=('ttc_staged', 'fixed_ttc')),
    _R('mode', 'perception (lidar) or ground_truth (actor odometry)',
       choices=('perception', 'ground_truth')),
    _R('actor_roles', 'ground_truth: role names of the other actors'),
    _R('actor_size', 'ground_truth: length, width, height of an actor (m)'),
    _R('actor_box_offset', 'ground_truth: box centre ahead of the pose (m)',
       -10.0, 10.0),
    _R('vehicle_profile', 'config/vehicles profile of the ego'),
    _R('rig', 'sensor rig file (lidar mount pose)'),
    _R('lidar_id', 'sensor id of the lidar in the rig'),
    _R('width_margin', 'corridor margin per side (m)', 0.0, 3.0),
    _R('horizon_time', 'corridor length = speed * horizon_time (s)',
       0.1, 20.0),
    _R('min_length', 'shortest corridor (m)', 0.0, 200.0),
    _R('max_length', 'longest corridor (m)', 1.0, 300.0),
    _R('z_min', 'points at or below this height are ground/low (m)',
       -1.0, 3.0),
    _R('z_max', 'points above this height are overhead (m)', 0.0, 10.0),
    _R('range_min', 'points closer to the lidar are no returns (m; '
       'drivers write 0, 0, 0 for a beam without echo)', 0.0, 5.0),
    _R('min_points', 'points an obstacle needs within cluster_depth',
       1, 1000),
    _R('cluster_depth', 'depth along the path of one obstacle (m)',
       0.0, 20.0),
    _R('voxel_size', 'count distinct voxels of this size (m, 0 = off)',
       0.0, 5.0),
    _R('dead_time', 'brake dead time + half the ramp (s, 0 = profile)',
       0.0, 2.0),
    _R('latency', 'sensor + processing latency (s)', 0.0, 1.0),
    _R('stop_margin', 'distance to keep to the obstacle (m)', 0.0, 10.0),
    _R('speed_window', 'frames in the obstacle speed median', 1, 100),
    _R('min_samples', 'speed samples before an obstacle counts', 1, 100),
    _R('decel_window', 'speed samples in the obstacle decel fit', 2, 200),
    _R('jump_distance', 'obstacle jump that resets the track (m)',
       0.1, 50.0),
    _R('use_obstacle_decel', 'account for a braking obstacle'),
    _R('odom_timeout', 'odometry older than this is stale (s)', 0.01, 10.0),
    _R('empty_cloud_is_blind', 'clouds without points do not count as '
       'fresh lidar input (all-NaN clouds never do)'),
    _R('use_steering', 'intersect with the commanded-steering corridor'),
    _R('steering_timeout', 'older applied_control is ignored (s)',
       0.01, 10.0),
    _R('steering_preview', 'extrapolate the steering rate this long (s, '
       '0 = constant steering)', 0.0, 5.0),
    _R('max_decel', 'maximum deceleration (m/s^2, 0 = profile)', 0.0, 20.0),
    _R('warn_ratio', 'warning when a_td >= ratio * max_decel', 0.0, 1.0),
    _R('partial_ratio', 'partial braking from this ratio', 0.0, 1.0),
    _R('full_ratio', 'full braking from this ratio', 0.0, 1.0),
    _R('hysteresis', 'ratio a stage must fall below its entry', 0.0, 0.5),
    _R('partial_gain', 'partial decel = gain * a_td', 1.0, 3.0),
    _R('partial_min', 'least partial deceleration (m/s^2)', 0.1, 20.0),
    _R('warn_ttc', 'warning when TTC <= this (s)', 0.0, 10.0),
    _R('standstill_speed', 'below this nothing new starts (m/s)', 0.0, 5.0),
    _R('stop_speed', 'braking turns into hold below this (m/s)', 0.0, 5.0),
    _R('hold_time', 'hold at standstill before release (s)', 0.0, 30.0),
    _R('hold_decel', 'deceleration requested while holding (m/s^2)',
       0.1, 20.0),
    _R('release_time', 'delay before a stage goes down (s)', 0.0, 10.0),
    _R('driver_brake', 'driver brake pedal that overrides (0..1)', 0.0, 1.0),
    _R('kickdown', 'driver throttle that overrides (0..1)', 0.0, 1.0),
    _R('stale_timeout', 'no usable input for this long -> stop (s)',
       0.01, 10.0),
    _R('stale_decel', 'stop deceleration when blind (m/s^2)', 0.1, 20.0),
    _R('confirm_time', 'braking must be asked for this long (s)', 0.0, 1.0),
    _R('fixed_ttc_threshold', 'fixed_ttc: brake while TTC < this (s)',
       0.1, 20.0),
    _R('fixed_ttc_decel', 'fixed_ttc: deceleration (m/s^2, 0 = max)',
       0.0, 20.0),
    _R('fixed_ttc_lateral_gate', 'fixed_ttc: ignore actors further to the '
       'side (m, 0 = off like the tutorial)', 0.0, 50.0),
    _R('use_imu', 'take the yaw rate from the imu topic'),
    _R('joy_preset', 'Joy mapping of the driver pedals',
       choices=tuple(sorted(JOY_PRESETS))),
    _R('joy_timeout', 'older Joy messages count as released (s)',
       0.01, 60.0),
    _R('check_period', 'stale-input check period (s, sim time)', 0.01, 5.0),
    _R('publish_markers', 'publish the corridor markers'),
    _R('max_points', 'lidar clouds with more points are dropped undecoded '
       '(no fresh input)', 1, 2**31 - 1),
]


class AebNode(Node):
    """The AEB node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, build the pipeline, wire the topics."""
        super().__init__(NODE_NAME, **kwargs)
        self.values = declare_params(self, PARAMS, NODE_NAME)
        v = self.values
        self.role = str(v['role_name'])
        self.params = resolve_params(v)
        self.max_points = int(v['max_points'])
        self._reset()
        self.inputs = InputPolicy(self, on_reset=self._reset)
        p = self.params
        self.gates = {
            'odometry': self.inputs.gate('odometry', p.odom_timeout),
            'lidar': self.inputs.gate('lidar', p.staging.stale_timeout),
            'applied_control': self.inputs.gate('applied_control', p.steering_timeout),
            'imu': self.inputs.gate('imu', p.odom_timeout)}
        profile = load_vehicle_profile(str(v['vehicle_profile']))
        self.max_steer = profile.max_steer
        self.wheelbase = profile.wheelbase
        self.joy_map = JOY_PRESETS[str(v['joy_preset'])]
        self.frame_id = frame('vehicle', self.role)
        self.pub_brake = create_publisher(self, 'brake_request', self.role)
        self.pub_status = create_publisher(self, 'aeb_status', self.role)
        self.pub_markers = create_publisher(self, 'aeb_markers', self.role)
        self.joy_t: Optional[float] = None
        self.bad_inputs = 0
        self.clouds_checked = 0
        self.mount_warned = False
        create_subscription(self, 'odometry', self._on_odometry, self.role)
        create_subscription(self, 'applied_control', self._on_applied,
                            self.role)
        create_subscription(self, 'joy', self._on_joy, self.role)
        if bool(v['use_imu']):
            create_subscription(self, 'imu', self._on_imu, self.role)
        if self.params.mode == 'perception':
            # depth 1: a cloud that waited while the previous one was being
            # checked is dropped for the newest (no backlog of old clouds)
            create_subscription(self, 'lidar', self._on_lidar, self.role, depth=1)
        else:
            for role in list(v['actor_roles'] or []):
                self.gates[role] = self.inputs.gate(f'{role}/odometry', p.odom_timeout)
                create_subscription(
                    self, 'actor_odometry',
                    lambda msg, r=role: self._on_actor(r, msg),
                    self.role, actor=role)
        self.timer = self.create_timer(float(v['check_period']),
                                       self._on_timer)
        self.get_logger().info(
            f'aeb_controller: strategy {self.params.strategy}, mode '
            f'{self.params.mode}, max_decel '
            f'{self.params.staging.max_decel:g} m/s^2, dead time '
            f'{self.params.dead_time:g} s')

    # inputs ----------------------------------------------------------
    def _reset(self) -> None:
        """Start over: no tracks, poses or actors (also after a clock jump back)."""
        self.core = AebCore(self.params)
        self.actors: Dict[str, Dict[str, Any]] = {}
        self.ego_pose = None
        self.imu_yaw_rate: Optional[float] = None

    def _now(self) -> float:
        return self.inputs.now()

    def _warn_bad(self, what: str) -> None:
        self.bad_inputs += 1
        self.get_logger().warning(what, throttle_duration_sec=2.0)

    def _on_odometry(self, msg: Any) -> None:
        t = self.inputs.admit(self.gates['odometry'], msg.header.stamp)
        if t is None:
            return
        tw = msg.twist.twist
        imu_fresh = self.imu_yaw_rate is not None and \
            self.gates['imu'].fresh(self._now())
        yaw_rate = self.imu_yaw_rate if imu_fresh else tw.angular.z
        p = msg.pose.pose
        pose = (p.position.x, p.position.y, quaternion_yaw(p.orientation))
        if not self.core.update_odometry(t, tw.linear.x, yaw_rate, pose,
                                         arrival=self.gates['odometry'].arrival):
            self._warn_bad('odometry with NaN/inf speed or stamp ignored')
            return
        if not all(math.isfinite(float(v)) for v in pose):
            # e.g. a zero quaternion before the estimator's first fix
            self._warn_bad('odometry pose with NaN/inf position or no '
                           'orientation: speed used, pose ignored')
            return
        self.ego_pose = pose
        if self.params.mode == 'ground_truth':
            self._decide_ground_truth(t)

    def _on_imu(self, msg: Any) -> None:
        if self.inputs.admit(self.gates['imu'], msg.header.stamp) is None:
            return  # future/stale stamp: warned; the odometry's yaw rate is used
        w = msg.angular_velocity.z
        self.imu_yaw_rate = float(w) if math.isfinite(w) else None

    def _on_applied(self, msg: Any) -> None:
        t = self.inputs.admit(self.gates['applied_control'], msg.header.stamp)
        if t is None:
            return
        steer = msg.twist.angular.z
        delta = -steer * self.max_steer
        self.core.set_steering(t, math.tan(delta) / self.wheelbase
                               if math.isfinite(delta) else math.nan)

    def _on_joy(self, msg: Any) -> None:
        m = self.joy_map
        axes, buttons = list(msg.axes), list(msg.buttons)
        throttle = m.throttle(axes) if m.takeover(buttons) else 0.0
        self.core.set_driver(throttle, m.brake(axes))
        self.joy_t = self._now()

    def _on_lidar(self, msg: Any) -> None:
        # A cloud stamped ahead of the node clock, or older than
        # stale_timeout, is dropped: no decision carries its stamp, and the
        # stale check (arrival based) stops the car if nothing usable follows.
        t = self.inputs.admit(self.gates['lidar'], msg.header.stamp)
        if t is None:
            return
        arrival = self.gates['lidar'].arrival
        try:
            check_cloud_size(msg, self.max_points, 'lidar cloud')
            pts = clouds.cloud_to_xyz(msg, skip_nans=False)
        except ValueError as exc:
            # a malformed cloud is no usable input (never refreshes it)
            self._warn_bad(f'lidar cloud rejected: {exc}')
            pts = _BLIND
        if self.clouds_checked < 20 and pts is not _BLIND:
            self._check_mount(pts)
        try:
            decision = self.core.update_cloud(t, pts, arrival=arrival)
        except ValueError as exc:
            self._warn_bad(f'lidar cloud rejected: {exc}')
            decision = self.core.update_cloud(t, _BLIND, arrival=arrival)
        self._publish(decision, msg.header.stamp)

    def _check_mount(self, pts: np.ndarray) -> None:
        """Warn once when the rig's mount puts many points underground."""
        self.clouds_checked += 1
        z = pts[:, 2].astype(np.float64) + self.params.mount_z
        z = z[np.isfinite(z)]
        if z.size >= 100 and np.mean(z < -0.3) > 0.2 and not self.mount_warned:
            self.mount_warned = True
            self.get_logger().error(
                f'{100.0 * np.mean(z < -0.3):.0f}% of the lidar points lie '
                f'more than 0.3 m below the ground with the mount of rig '
                f'{self.values["rig"]!r} (z = {self.params.mount_z:g} m): '
                f'set rig / vehicle_profile to the car being driven')

    def _on_actor(self, role: str, msg: Any) -> None:
        t = self.inputs.admit(self.gates[role], msg.header.stamp)
        if t is None:
            return
        p = msg.pose.pose
        yaw = quaternion_yaw(p.orientation)
        tw = msg.twist.twist.linear
        if not all(math.isfinite(float(v)) for v in
                   (yaw, p.position.x, p.position.y, tw.x, tw.y)):
            self._warn_bad(f'{role} odometry with NaN/inf values or no '
                           'orientation ignored')
            return
        c, s = math.cos(yaw), math.sin(yaw)
        vel = np.array([c * tw.x - s * tw.y, s * tw.x + c * tw.y])
        prev = self.actors.get(role)
        decel = 0.0
        if prev is not None and t - prev['t'] > 1e-3:
            raw = -(tw.x - prev['speed']) / (t - prev['t'])
            decel = 0.7 * prev['decel'] + 0.3 * raw
        off = float(self.values['actor_box_offset'])
        self.actors[role] = {
            't': t, 'arrival': self.gates[role].arrival,
            'speed': float(tw.x), 'decel': decel, 'yaw': yaw,
            'xy': np.array([p.position.x + off * c,
                            p.position.y + off * s]), 'vel': vel}

    def _decide_ground_truth(self, t: float) -> None:
        now = self._now()
        fresh = [a for a in self.actors.values()
                 if 0.0 <= now - a['arrival'] <= self.params.odom_timeout]
        size = np.asarray(self.values['actor_size'], dtype=np.float64)
        x, y, yaw = self.ego_pose
        decision = self.core.update_ground_truth(
            t, (x, y), yaw,
            np.array([a['xy'] for a in fresh]).reshape(-1, 2),
            np.array([a['yaw'] for a in fresh]),
            np.array([a['vel'] for a in fresh]).reshape(-1, 2),
            np.tile(size.reshape(1, 3), (len(fresh), 1)),
            np.array([max(a['decel'], 0.0) for a in fresh]),
            arrival=self.gates['odometry'].arrival)
        self._publish(decision, stamps.stamp_from_sec(t))

    def _on_timer(self) -> None:
        now = self._now()
        if self.joy_t is not None and \
                now - self.joy_t > float(self.values['joy_timeout']):
            self.core.set_driver(0.0, 0.0)
            self.joy_t = None
        if now <= 0.0:
            return
        decision = self.core.check_stale(now)
        if decision is not None:
            self.get_logger().warning(
                f'AEB blind: {decision.reason}; requesting a stop',
                throttle_duration_sec=2.0)
            self._publish(decision, stamps.stamp_from_sec(now))

    # outputs ---------------------------------------------------------
    def _publish(self, d: BrakeDecision, stamp: Any) -> None:
        msg = AccelStamped()
        msg.header.stamp = stamp
        msg.header.frame_id = self.frame_id
        msg.accel.linear.x = -float(d.decel)
        self.pub_brake.publish(msg)
        status = DiagnosticStatus()
        status.name = NODE_NAME
        status.hardware_id = self.role
        if d.stage == 'stale':
            status.level = DiagnosticStatus.ERROR
        elif d.warning or d.decel > 0.0:
            status.level = DiagnosticStatus.WARN
        else:
            status.level = DiagnosticStatus.OK
        status.message = d.stage
        status.values = [KeyValue(key=k, value=val)
                         for k, val in d.status().items()]
        arr = DiagnosticArray()
        arr.header.stamp = stamp
        arr.status = [status]
        self.pub_status.publish(arr)
        if bool(self.values['publish_markers']):
            self.pub_markers.publish(self._markers(d, stamp))

    def _markers(self, d: BrakeDecision, stamp: Any) -> MarkerArray:
        out = MarkerArray()
        corridor = d.corridor
        line = Marker()
        line.header.stamp = stamp
        line.header.frame_id = self.frame_id
        line.ns = 'aeb_corridor'
        line.id = 0
        line.type = Marker.LINE_STRIP
        line.scale.x = 0.08
        braking = d.decel > 0.0
        line.color.r, line.color.g, line.color.b, line.color.a = (
            (1.0, 0.1, 0.1, 0.9) if braking else
            (1.0, 0.8, 0.1, 0.9) if d.warning else (0.1, 0.9, 0.2, 0.7))
        if corridor is not None:
            line.points = [Point(x=float(x), y=float(y), z=0.05)
                           for x, y in corridor.outline(20)]
        else:
            line.action = Marker.DELETE
        out.markers.append(line)
        dot = Marker()
        dot.header = line.header
        dot.ns = 'aeb_obstacle'
        dot.id = 1
        dot.type = Marker.SPHERE
        if d.obstacle_point is not None:
            dot.pose.position = Point(x=float(d.obstacle_point[0]),
                                      y=float(d.obstacle_point[1]),
                                      z=float(d.obstacle_point[2]))
            dot.pose.orientation.w = 1.0
            dot.scale.x = dot.scale.y = dot.scale.z = 0.5
            dot.color.r, dot.color.a = 1.0, 1.0
        else:
            dot.action = Marker.DELETE
        out.markers.append(dot)
        return out


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(AebNode, args)


if __name__ == '__main__':
    sys.exit(main())
