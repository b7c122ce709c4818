# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
r"""
``cone_drive_planner`` node: cones + odometry -> ``cmd_vel``, path, markers.

Subscribes the fused cones (contract ``cones``, PointCloud2 in the vehicle
frame) and ``odometry``; for every cone cloud it runs one
:class:`path_planning.planner.Planner` cycle and publishes

* ``cmd_vel`` (TwistStamped): ``linear.x`` target speed (m/s),
  ``angular.z`` yaw rate ``v * tan(delta) / L`` (rad/s), **stamped with
  the header stamp of the cone cloud it was computed from** (the bridge's
  lockstep mode matches commands to frames by that stamp);
* ``path`` (nav_msgs/Path, the cones' frame): the chosen arc or midline
  (from lap 2 the optimised line ahead);
* ``planning_markers`` (MarkerArray): free (green) and blocked (red)
  steering ranges as fans at the front axle, the chosen steering direction
  (arrow) and, in midline mode, the pursuit goal.

With ``race_enabled`` the planner is a
:class:`path_planning.race_planner.RacePlanner`: lap 1 is driven by the
cone planner while the cones are mapped with the odometry pose; once the
loop closes at the start and the map is complete the car follows a
minimum-curvature line with its speed profile, and falls back to the cone
planner (logged once per change) when it leaves the line or the cones
disagree with the map.

A cone cloud is planned with the odometry of its stamp: it waits for it
(``ODOM_WAIT`` wall s once odometry flows; before the first odometry, while
an odometry publisher is matched, until it comes or a newer cloud does), so
in lockstep every command is computed from the same inputs on any load.

Bad input: a malformed cloud is dropped with an error (throttled); NaN
cones are dropped and counted; a cloud with no usable cone ahead gives a
stop. NaN odometry is dropped and counted; without valid odometry for
``odom_timeout`` the last commanded speed stands in for the pursuit
look-ahead. A steady-clock timer (10 Hz) commands a stop, stamped
``WATCHDOG_LAG`` (1 ms) behind the node's time (none while the node's time
is below that: sim time 0, lockstep frame 0), and warns while no cones arrived for more than
``cone_timeout`` seconds of (sim) time, or none at all yet.

Stamp policy (:mod:`hil_bridge.interface.freshness`): a cone cloud or an
odometry stamped ahead of the node clock, or more than ``cone_timeout`` /
``odom_timeout`` behind it, is dropped with a throttled warning; only an
accepted cloud's stamp goes onto ``cmd_vel``. Freshness is the arrival on
the node clock, so no stamp can silence the stop timer. Cone clouds of more
than ``max_cones`` points are dropped before decoding. The clock jumping
back (a replay restarted) resets the cone memory, the route and the
odometry with one info line.

Run::

    python -m path_planning.planner_node --ros-args \
        --params-file config/cone_drive_planner.yaml
"""

from collections import deque
import math
import sys
import time
from typing import Any, Deque, List, Optional, Tuple

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Point, PoseStamped, TwistStamped
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.contract import create_publisher, create_subscription, frame
from hil_bridge.interface.frames import quaternion_yaw
from hil_bridge.interface.node_inputs import check_cloud_size, InputPolicy
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from nav_msgs.msg import Odometry, Path
import numpy as np
from path_planning.planner import MODES, Planner, PlannerConfig, PlanOutput
from path_planning.race_planner import race_config_from_mapping, RacePlanner
from path_planning.route_follower import RouteFollower
from rclpy.clock import Clock, ClockType
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

NODE_NAME = 'cone_drive_planner'

#: cone-based modes of the Planner plus routes known in advance
ROUTE_MODES = ('skidpad',)
NODE_MODES = MODES + ROUTE_MODES
#: odometry poses kept to find the one at a cone cloud's stamp (at 50 Hz: 2 s)
POSE_HISTORY = 100
#: wall seconds a cone cloud waits for the odometry of its stamp (before the
#: first odometry: until it comes or a newer cloud does)
ODOM_WAIT = 0.3
#: stamps go through builtin_interfaces/Time (ns)
STAMP_EPS = 1e-6
#: the watchdog's stop is stamped this much behind the node's time (s)
WATCHDOG_LAG = 1e-3

PARAMS = [
    ParamSpec('role_name', 'ego role name in the contract topics'),
    ParamSpec('mode', 'cone_drive | midline | auto | lane | skidpad (known route '
              'followed on odometry)', choices=NODE_MODES),
    ParamSpec('vehicle_profile', 'vehicle profile name (config/vehicles) or path'),
    ParamSpec('lookahead', 'CONEDRIVE look-ahead arc length (m)', lo=1.0,
              hi=50.0),
    ParamSpec('margin', 'clearance added each side of the car (m)', lo=0.0,
              hi=2.0),
    ParamSpec('cone_radius', 'cone base radius (m)', lo=0.0, hi=1.0),
    ParamSpec('narrow_threshold_deg', 'free ranges this narrow or narrower '
              'are narrow (deg)', lo=0.0, hi=50.0),
    ParamSpec('n_grid', 'steering samples before edge refinement', lo=3,
              hi=5001),
    ParamSpec('use_colours', 'CONEDRIVE colour rule: blue stays left of the '
              'path, yellow right'),
    ParamSpec('side_reach', 'colour rule only for cones this near the arc '
              '(m)', lo=0.0, hi=20.0),
    ParamSpec('pursuit_check', 'pure-pursuit steering must lie in a '
              'CONEDRIVE free range'),
    ParamSpec('sensor_range', 'cones farther are ignored (m)', lo=0.5,
              hi=200.0),
    ParamSpec('sensor_fov_deg', 'full field of view of the cones (deg)',
              lo=1.0, hi=360.0),
    ParamSpec('cone_memory', 'how long (s) a cone missing from a detection '
              'is remembered, moved with the ego motion; 0 = off', lo=0.0,
              hi=5.0),
    ParamSpec('cone_memory_radius', 'a detection this near (m) replaces a '
              'remembered cone', lo=0.0, hi=5.0),
    ParamSpec('use_map', "map the cones with odometry and plan on the car's lane only"),
    ParamSpec('min_lane_length', 'walked lane ahead (m) needed to use it', lo=0.0,
              hi=100.0),
    ParamSpec('lane_check_lookahead', 'lane mode: CONEDRIVE checks the steering on this '
              'much arc ahead (m; 0 = no check)', lo=0.0, hi=50.0),
    ParamSpec('lane_max_speed', 'lane mode: top target speed (m/s)', lo=0.1, hi=40.0),
    ParamSpec('lane_a_lat_max', 'lane mode: lateral acceleration limit (m/s^2)', lo=0.1,
              hi=30.0),
    ParamSpec('lane_accel', 'lane mode: target speed ramp up (m/s^2)', lo=0.1, hi=30.0),
    ParamSpec('lane_line', 'lane mode: least-curvature line through the lane seen '
              '(false: follow the lane centre)'),
    ParamSpec('lane_margin', "lane mode: gap (m) kept between the car's box and a cone",
              lo=0.0, hi=2.0),
    ParamSpec('lane_curvature_fraction', "lane mode: the line's curvature limit as a "
              "fraction of the steering's", lo=0.1, hi=1.0),
    ParamSpec('lane_horizon', 'lane mode: lane (m) the line is planned over at most',
              lo=2.0, hi=200.0),
    ParamSpec('lane_smoothness', "lane mode: weight (m^2) of the curvature's rate of "
              'change', lo=0.0, hi=100.0),
    ParamSpec('lane_kink_ratio', 'lane mode: a lane-centre point bending this many times '
              'the median around it is a kink; a line beyond the steering is planned '
              'again without the kinks (0 = off)', lo=0.0, hi=100.0),
    ParamSpec('lane_kink_curvature', 'lane mode: a kink bends more than this (1/m)',
              lo=0.0, hi=10.0),
    ParamSpec('lane_kappa_rate', 'lane mode: curvature change (1/(m s)) the speed allows',
              lo=0.01, hi=10.0),
    ParamSpec('lane_stitch', 'lane mode: the next line starts on the last one when the '
              'car is this near (m)', lo=0.0, hi=5.0),
    ParamSpec('lane_track_length', 'lane mode: feedback length (m) of the line '
              'following at standstill', lo=0.1, hi=20.0),
    ParamSpec('lane_tight_fraction', "lane mode: a turn this tight (of the steering's "
              'curvature) is taken at lane_tight_speed at most', lo=0.1, hi=1.0),
    ParamSpec('lane_tight_speed', 'lane mode: top speed (m/s) in a tight turn', lo=0.1,
              hi=40.0),
    ParamSpec('lane_margin_speed', 'lane mode: the line keeps lane_margin + this (s) x the '
              'speed (m/s) to the cones ahead (growing over lane_margin_ramp)', lo=0.0, hi=1.0),
    ParamSpec('lane_margin_ramp', 'lane mode: arc length (m) from the start of the line over '
              'which the margin grows by lane_margin_speed x speed', lo=0.1, hi=50.0),
    ParamSpec('lane_error_speed', "lane mode: from this speed (m/s) the car's offset from "
              'a line continued from the last one is kept as more room on its side (none '
              'up to half of it; 0 = off)', lo=0.0, hi=40.0),
    ParamSpec('lane_commit', 'lane mode: a line bending beyond the steering within this many '
              'm of the car is driven at full lock (0 = off)', lo=0.0, hi=20.0),
    ParamSpec('lane_latency', "lane mode: seconds the line's speed profile allows before "
              'braking starts (command rate limit and the speed lag)', lo=0.0, hi=5.0),
    ParamSpec('max_speed', 'top target speed (m/s)', lo=0.1, hi=40.0),
    ParamSpec('min_speed', 'lowest target while driving (m/s)', lo=0.0,
              hi=10.0),
    ParamSpec('a_lat_max', 'lateral acceleration limit (m/s^2)', lo=0.1,
              hi=30.0),
    ParamSpec('accel', 'target speed ramp up (m/s^2)', lo=0.1, hi=30.0),
    ParamSpec('decel', 'target speed ramp down (m/s^2)', lo=0.1, hi=30.0),
    ParamSpec('narrow_width_deg', 'free-range width mapped to narrow_speed '
              '(deg)', lo=0.0, hi=50.0),
    ParamSpec('wide_width_deg', 'free-range width mapped to max_speed (deg)',
              lo=0.0, hi=50.0),
    ParamSpec('narrow_speed', 'speed in a narrow free range (m/s)', lo=0.0,
              hi=40.0),
    ParamSpec('stop_margin', 'distance kept to the end of the clear path (m)',
              lo=0.0, hi=20.0),
    ParamSpec('midline_max_width', 'longest blue-yellow edge (m)', lo=1.0,
              hi=30.0),
    ParamSpec('midline_min_width', 'shortest blue-yellow edge (m)', lo=0.0,
              hi=30.0),
    ParamSpec('midline_max_length', 'midline length kept (m)', lo=1.0,
              hi=200.0),
    ParamSpec('min_coloured', 'auto: blue and yellow cones each needed',
              lo=1, hi=100),
    ParamSpec('min_midline_length', 'auto: shortest usable midline (m)',
              lo=0.0, hi=100.0),
    ParamSpec('ld_min', 'pure-pursuit look-ahead at standstill (m)', lo=0.5,
              hi=50.0),
    ParamSpec('ld_max', 'longest pure-pursuit look-ahead (m)', lo=0.5,
              hi=100.0),
    ParamSpec('ld_gain', 'look-ahead growth with speed (s)', lo=0.0,
              hi=10.0),
    ParamSpec('cone_timeout', 'no cones for this long (s) -> stop', lo=0.01,
              hi=60.0),
    ParamSpec('odom_timeout', 'odometry older than this (s) is not used',
              lo=0.01, hi=60.0),
    ParamSpec('publish_markers', 'publish planning_markers'),
    ParamSpec('max_cones', 'cone clouds with more points are dropped before decoding',
              lo=1, hi=10000000),
    # lap 2 and after (path_planning/race_planner.py)
    ParamSpec('race_enabled', 'map lap 1, then drive a minimum-curvature line'),
    ParamSpec('race_margin', 'line: clearance to the cones beside the half width (m)',
              lo=0.0, hi=2.0),
    ParamSpec('race_lat_grip', 'fraction of max_lat_accel the speed profile uses',
              lo=0.05, hi=1.0),
    ParamSpec('race_long_grip', 'fraction of max_decel the speed profile uses',
              lo=0.05, hi=1.0),
    ParamSpec('race_max_speed', 'speed profile cap (m/s)', lo=0.5, hi=60.0),
    ParamSpec('race_step', 'line optimisation station spacing (m)', lo=0.2, hi=5.0),
    ParamSpec('race_max_gap', 'longest cone gap of a complete boundary (m)', lo=1.0,
              hi=20.0),
    ParamSpec('race_min_loop_length', 'distance driven before the loop may close (m)',
              lo=10.0, hi=5000.0),
    ParamSpec('race_closure_radius', 'back this near the start pose closes the loop (m)',
              lo=0.5, hi=20.0),
    ParamSpec('race_ld_min', 'line-following feedback length at standstill (m)', lo=0.5,
              hi=50.0),
    ParamSpec('race_ld_max', 'longest line-following feedback length (m)', lo=0.5,
              hi=100.0),
    ParamSpec('race_ld_gain', 'feedback length growth with speed (s)', lo=0.0, hi=10.0),
    ParamSpec('race_latency', 'the pose is predicted this far ahead (s)', lo=0.0, hi=1.0),
    ParamSpec('race_preview', 'the speed profile is looked this far ahead (s)', lo=0.0,
              hi=3.0),
    ParamSpec('race_max_lateral_error', 'off the line by more -> lap-1 planner (m)',
              lo=0.05, hi=5.0),
    ParamSpec('race_max_heading_error_deg', 'off the line heading by more -> lap-1 '
              'planner (deg)', lo=1.0, hi=180.0),
    ParamSpec('race_mismatch_radius', 'a cone seen farther from every map cone is new (m)',
              lo=0.05, hi=10.0),
    ParamSpec('race_rejoin_time', 'time near the line before it is joined (s)', lo=0.0,
              hi=30.0),
    ParamSpec('race_line_delay', 'sim s from loop closure to taking up the line, which is '
              'computed in the background meanwhile (0: in the closing cycle)', lo=0.0,
              hi=30.0),
]

GREEN = ColorRGBA(r=0.1, g=0.8, b=0.2, a=0.5)
RED = ColorRGBA(r=0.9, g=0.1, b=0.1, a=0.5)
BLUE = ColorRGBA(r=0.1, g=0.3, b=1.0, a=1.0)
FAN_RADIUS = 1.5  # m


def _fan(ranges: np.ndarray, origin_x: float, colour: ColorRGBA,
         ns: str, header: Header) -> List[Marker]:
    """Return one TRIANGLE_LIST marker per steering range (vehicle frame)."""
    out = []
    for i, (lo, hi) in enumerate(np.asarray(ranges, dtype=float)):
        m = Marker(header=header, ns=ns, id=i, type=Marker.TRIANGLE_LIST,
                   action=Marker.ADD, color=colour)
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = 1.0
        angles = np.linspace(lo, hi, max(2, int((hi - lo) / 0.02) + 2))
        xs = origin_x + FAN_RADIUS * np.cos(angles)
        ys = FAN_RADIUS * np.sin(angles)
        pts = []
        for j in range(angles.size - 1):
            pts += [Point(x=origin_x), Point(x=float(xs[j]), y=float(ys[j])),
                    Point(x=float(xs[j + 1]), y=float(ys[j + 1]))]
        m.points = pts
        out.append(m)
    return out


def make_markers(out: PlanOutput, header: Header, wheelbase: float
                 ) -> MarkerArray:
    """
    Return the planning markers for one cycle.

    A DELETEALL first, then free/blocked steering-range fans at the front
    axle (steering angle = fan direction), the chosen direction as an arrow
    and the pursuit goal as a sphere (midline mode).
    """
    markers = [Marker(header=header, action=Marker.DELETEALL)]
    res = out.cone_drive
    if res is not None:
        markers += _fan(res.free_ranges, wheelbase, GREEN, 'free', header)
        markers += _fan(res.blocked_ranges, wheelbase, RED, 'blocked', header)
    arrow = Marker(header=header, ns='chosen', id=0, type=Marker.ARROW,
                   action=Marker.ADD, color=BLUE)
    arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.08, 0.2, 0.2
    tip = wheelbase + 2.0 * math.cos(out.delta), 2.0 * math.sin(out.delta)
    arrow.points = [Point(x=wheelbase), Point(x=tip[0], y=tip[1])]
    arrow.pose.orientation.w = 1.0
    markers.append(arrow)
    if out.pursuit is not None:
        goal = Marker(header=header, ns='goal', id=0, type=Marker.SPHERE,
                      action=Marker.ADD, color=BLUE)
        goal.pose.position.x = float(out.pursuit.goal[0])
        goal.pose.position.y = float(out.pursuit.goal[1])
        goal.pose.orientation.w = 1.0
        goal.scale.x = goal.scale.y = goal.scale.z = 0.3
        markers.append(goal)
    for m in markers:
        m.lifetime = Duration(sec=1)
    return MarkerArray(markers=markers)


def make_path(points: np.ndarray, header: Header) -> Path:
    """Return a nav_msgs/Path of (P, 2) vehicle-frame points (heading along it)."""
    msg = Path(header=header)
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if pts.shape[0] == 0:
        return msg
    d = np.diff(pts, axis=0) if pts.shape[0] > 1 else np.array([[1.0, 0.0]])
    d = np.vstack([d, d[-1:]])
    yaw = np.arctan2(d[:, 1], d[:, 0])
    poses = []
    for (x, y), psi in zip(pts, yaw):
        ps = PoseStamped(header=header)
        ps.pose.position.x, ps.pose.position.y = float(x), float(y)
        ps.pose.orientation.z = math.sin(psi / 2.0)
        ps.pose.orientation.w = math.cos(psi / 2.0)
        poses.append(ps)
    msg.poses = poses
    return msg


class ConeDrivePlannerNode(Node):
    """The planner node (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        values = declare_params(self, PARAMS, NODE_NAME)
        self.role = str(values['role_name'])
        self.profile = load_vehicle_profile(str(values['vehicle_profile']))
        self.route_mode = str(values['mode']) if values['mode'] in \
            ROUTE_MODES else ''
        cone_values = dict(values, mode='cone_drive') if self.route_mode \
            else values
        self.config = PlannerConfig.from_mapping(cone_values, self.profile)
        self.cone_timeout = float(values['cone_timeout'])
        self.odom_timeout = float(values['odom_timeout'])
        self.max_cones = int(values['max_cones'])
        #: lap 2+: the whole-track map and the optimised line wrap the planner
        self.race = race_config_from_mapping(values, self.profile)
        self._reset()
        self.inputs = InputPolicy(self, on_reset=self._reset)
        self.cones_gate = self.inputs.gate('cones', self.cone_timeout)
        self.odom_gate = self.inputs.gate('odometry', self.odom_timeout)
        self.markers_on = bool(values['publish_markers'])
        self.vehicle_frame = frame('vehicle', self.role)
        self.cmd_pub = create_publisher(self, 'cmd_vel', self.role)
        self.path_pub = create_publisher(self, 'path', self.role)
        self.marker_pub = create_publisher(self, 'planning_markers', self.role)
        # depth 1: cones that waited while a cycle ran are dropped for the
        # newest (a slow cycle never works through a backlog of old frames)
        self.cones_sub = create_subscription(
            self, 'cones', self._on_cones, self.role, depth=1)
        self.odom_sub = create_subscription(self, 'odometry', self._on_odom,
                                            self.role)
        self.counts = {'cycles': 0, 'stops': 0, 'nan_cones': 0,
                       'out_of_range': 0, 'bad_clouds': 0, 'bad_odom': 0,
                       'stale_stops': 0}
        self.timer = self.create_timer(
            0.1, self._watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME))
        #: --log-level debug: the odometry stamp each cloud was planned with
        self._debug = self.get_logger().is_enabled_for(LoggingSeverity.DEBUG)
        self.get_logger().info(
            f'mode {self.route_mode or self.config.mode}, '
            f'vehicle {self.profile.name}, '
            f'look-ahead {self.config.cone_drive.lookahead} m, max speed '
            f'{self.config.speed.max_speed} m/s')

    # ------------------------------------------------------------ inputs
    def _reset(self) -> None:
        """Start over: no cone memory, route or odometry (also after a clock jump back)."""
        lap1 = Planner(self.config)
        self.planner = RacePlanner(lap1, self.race, self.profile) if self.race.enabled \
            else lap1
        self.route: Optional[RouteFollower] = None
        self.pose: Optional[tuple] = None
        #: recent (stamp s, pose) of odometry: the cones are mapped with the
        #: pose at their own stamp (detection lags the odometry)
        self.poses: Deque[Tuple[float, tuple, float, float]] = deque(maxlen=POSE_HISTORY)
        #: a cone cloud waiting for the odometry of its stamp:
        #: (cloud, t, xyz, class_id, wall time)
        self._pending: Optional[tuple] = None
        self._last_planned = -math.inf
        #: the last command sent and its path: (stamp s, header, speed m/s,
        #: yaw rate rad/s, Path or None)
        self._last_answer: Optional[tuple] = None
        self.speed: Optional[float] = None
        self.yaw_rate: Optional[float] = None
        self.odom_stamp: Optional[float] = None

    def _now(self) -> float:
        return self.inputs.now()

    def _on_odom(self, msg: Odometry) -> None:
        if self.inputs.admit(self.odom_gate, msg.header.stamp) is None:
            return
        v = float(msg.twist.twist.linear.x)
        w = float(msg.twist.twist.angular.z)
        if not (math.isfinite(v) and math.isfinite(w)):
            self.counts['bad_odom'] += 1
            n_bad = self.counts['bad_odom']
            self.get_logger().warning(
                f'non-finite odometry dropped ({n_bad} so far)',
                throttle_duration_sec=5.0)
            return
        self.speed = v
        self.yaw_rate = w
        self.odom_stamp = stamps.sec_from_stamp(msg.header.stamp)
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        yaw = quaternion_yaw(q)
        if all(math.isfinite(c) for c in (p.x, p.y, yaw)):
            self.pose = (float(p.x), float(p.y), yaw)
            self.poses.append((self.odom_stamp, self.pose, v, w))
        if self._pending is not None and self.odom_stamp >= self._pending[1] - STAMP_EPS:
            self._plan_pending()

    def odom_at(self, t: float) -> Optional[tuple]:
        """Return (pose, speed, yaw rate) of the odometry stamped nearest to ``t`` (s)."""
        if not self.poses:
            return None
        return min(self.poses, key=lambda item: abs(item[0] - t))[1:]

    def pose_at(self, t: float) -> Optional[tuple]:
        """Return the odometry pose stamped nearest to ``t`` (s), None without any."""
        near = self.odom_at(t)
        return None if near is None else near[0]

    def _measured_speed(self, t: float) -> Optional[float]:
        if self.odom_stamp is None or self.speed is None \
                or not self.odom_gate.fresh(self._now()):
            return None
        if abs(t - self.odom_stamp) > self.odom_timeout:
            return None
        return self.speed

    def _on_cones(self, cloud: PointCloud2) -> None:
        t = self.inputs.admit(self.cones_gate, cloud.header.stamp)
        if t is None:
            return  # future/stale stamp: warned; the watchdog stops the car
        try:
            check_cloud_size(cloud, self.max_cones, 'cone cloud')
            xyz, cls, _conf = clouds.cloud_to_cones(cloud)
        except ValueError as err:
            self.counts['bad_clouds'] += 1
            self.get_logger().error(f'bad cone cloud dropped: {err}',
                                    throttle_duration_sec=5.0)
            return
        # cloud_to_cones drops non-finite rows already: count them here.
        n_rows = cloud.width * cloud.height
        self.counts['nan_cones'] += max(int(n_rows) - int(xyz.shape[0]), 0)
        if abs(t - self._last_planned) <= STAMP_EPS:
            # a frame re-sent (lockstep start-up): planned once, from its first
            # copy; that command goes out again (the bridge re-sends the frame
            # because it has no answer yet: the first one may have been
            # published before its subscription matched)
            answer = self._last_answer
            if answer is not None and abs(answer[0] - t) <= STAMP_EPS:
                _t, header, speed, yaw_rate, path = answer
                self._publish_cmd(header, speed, yaw_rate)
                if path is not None:
                    self.path_pub.publish(path)
            return
        self._last_planned = t
        if self._pending is not None:
            self._plan_pending()
        newest = self.poses[-1][0] if self.poses else None
        if (newest < t - STAMP_EPS) if newest is not None else \
                self.odom_sub.get_publisher_count() > 0:
            # the odometry of this stamp is still on its way (also the first
            # one: a reader matched late misses a lockstep frame's first
            # copy, the bridge re-sends it): plan when it comes (the same
            # inputs whatever the machine's load)
            self._pending = (cloud, t, xyz, cls, time.monotonic())
            return
        self._plan(cloud, t, xyz, cls)

    def _plan_pending(self) -> None:
        cloud, t, xyz, cls, _wall = self._pending
        self._pending = None
        self._plan(cloud, t, xyz, cls)

    def _plan(self, cloud: PointCloud2, t: float, xyz: np.ndarray, cls: np.ndarray) -> None:
        """Plan on one cone cloud with the odometry of its stamp (or the newest)."""
        speed = self._measured_speed(t)
        yaw_rate = self.yaw_rate
        near = self.odom_at(t)
        if near is not None and speed is not None:
            speed, yaw_rate = near[1], near[2]
        if self._debug:
            used = min((p[0] for p in self.poses), key=lambda s: abs(s - t), default=None)
            self.get_logger().debug(f'cones of t={t:.3f} planned with odometry of t='
                                    f'{"-" if used is None else f"{used:.3f}"}')
        if self.route_mode:
            self._follow_route(cloud.header, t, speed)
            return
        try:
            extra = {'pose': self.pose_at(t)} if getattr(self.planner, 'uses_pose', False) or \
                isinstance(self.planner, RacePlanner) else {}
            out = self.planner.plan(t, xyz, cls, speed,
                                    None if speed is None else yaw_rate, **extra)
        except ValueError as err:  # malformed arrays: stop, do not die
            self.counts['bad_clouds'] += 1
            self.get_logger().error(f'planning failed, stopping: {err}',
                                    throttle_duration_sec=5.0)
            out = self.planner.stop(t, 'error')
        if isinstance(self.planner, RacePlanner):
            for event in self.planner.drain_events():
                self.get_logger().info(event)
        self.counts['cycles'] += 1
        self.counts['nan_cones'] += out.n_dropped
        self.counts['out_of_range'] += out.n_out_of_range
        if out.stop:
            self.counts['stops'] += 1
            self.get_logger().warning(
                f'stop: {out.reason}', throttle_duration_sec=2.0)
        header = Header(stamp=cloud.header.stamp,
                        frame_id=cloud.header.frame_id or self.vehicle_frame)
        self._publish_cmd(header, out.speed, out.yaw_rate)
        path = make_path(out.path, header)
        self.path_pub.publish(path)
        self._last_answer = (t, header, out.speed, out.yaw_rate, path)
        if self.markers_on:
            self.marker_pub.publish(make_markers(out, header,
                                                 self.profile.wheelbase))

    def _follow_route(self, header: Header, t: float,
                      speed: Optional[float]) -> None:
        """Route modes: steer along the known route from the odometry pose."""
        out_header = Header(stamp=header.stamp,
                            frame_id=header.frame_id or self.vehicle_frame)
        if self.pose is None or speed is None:
            self.counts['stops'] += 1
            self.get_logger().warning('route mode: no odometry yet, stop',
                                      throttle_duration_sec=2.0)
            self._publish_cmd(out_header, 0.0, 0.0)
            self._last_answer = (t, out_header, 0.0, 0.0, None)
            return
        cfg = self.config
        if self.route is None:
            self.route = RouteFollower.skidpad(
                self.pose, cfg.pursuit, cfg.speed.max_speed,
                cfg.speed.a_lat_max, cfg.speed.decel)
            self.get_logger().info(
                f'skidpad route of {self.route.length:.1f} m from '
                f'({self.pose[0]:.2f}, {self.pose[1]:.2f})')
        cmd = self.route.plan(*self.pose, speed)
        self.counts['cycles'] += 1
        if cmd.done:
            self.get_logger().info('route finished: stop',
                                   throttle_duration_sec=5.0)
        self._publish_cmd(out_header, cmd.speed, cmd.yaw_rate)
        path = make_path(cmd.path, out_header)
        self.path_pub.publish(path)
        self._last_answer = (t, out_header, cmd.speed, cmd.yaw_rate, path)

    def _publish_cmd(self, header: Header, speed: float, yaw_rate: float
                     ) -> None:
        msg = TwistStamped(header=header)
        msg.header.frame_id = self.vehicle_frame
        msg.twist.linear.x = float(speed)
        msg.twist.angular.z = float(yaw_rate)
        self.cmd_pub.publish(msg)

    def _watchdog(self) -> None:
        """Command a stop while no cones arrived (node clock) for ``cone_timeout``."""
        if self._pending is not None and self.poses and \
                time.monotonic() - self._pending[4] > ODOM_WAIT:
            self.get_logger().warning("no odometry of the cone cloud's stamp within "
                                      f'{ODOM_WAIT:g} s: planning with the newest',
                                      throttle_duration_sec=5.0)
            self._plan_pending()
        now = self._now()
        if self.cones_gate.fresh(now):
            return
        what = ('no cones received yet' if self.cones_gate.arrival is None else
                f'no usable cones for {self.cones_gate.age(now):.2f} s')
        if now < WATCHDOG_LAG:
            # sim time not started (frame 0, or no /clock yet): the stop could
            # only be stamped 0 and would answer lockstep frame 0 before any
            # cones were planned on (the bridge would not re-send it to a
            # planner whose subscription matched late); the bridge's command
            # watchdog holds the car meanwhile
            self.get_logger().warning(f'{what} (sim time 0: no stop sent)',
                                      throttle_duration_sec=5.0)
            return
        self.get_logger().warning(
            f'{what}: commanding a stop', throttle_duration_sec=5.0)
        self.counts['stale_stops'] += 1
        self.planner.stop(now, 'stale_cones')
        # stamped just behind the node's time: computed from no frame, it
        # never answers a lockstep frame (the bridge waits for the command
        # planned on that frame's cones)
        header = Header(stamp=stamps.stamp_from_sec(now - WATCHDOG_LAG),
                        frame_id=self.vehicle_frame)
        self._publish_cmd(header, 0.0, 0.0)


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(ConeDrivePlannerNode, args)


if __name__ == '__main__':
    sys.exit(main())
