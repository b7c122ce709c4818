# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The whole AEB pipeline as one class: inputs in, a brake decision out.

Used by the ROS node (``aeb_control.aeb_node``) and in-process by the Euro
NCAP matrix runner (``aeb_control.tools.ncap``); no rclpy here. Two strategies:

* ``ttc_staged`` (default): corridor from speed and yaw rate, closest
  obstacle inside it (perception: lidar points; ground truth: the other
  actors' boxes), obstacle speed and deceleration, required deceleration
  after the brake dead time, staged response (:mod:`aeb_control.staging`).
* ``fixed_ttc``: the tutorial's rule (:mod:`aeb_control.fixed_ttc`), full
  brake while ``0 < TTC < 3 s``; on ground truth, or on the perceived
  distance and closing speed in perception mode.

Times are sim seconds (the stamps of the inputs), speeds m/s along the ego
x axis, decelerations m/s^2 (> 0 braking). Every decision carries the stamp
of the input it was computed from.
"""

from collections import deque
from dataclasses import dataclass, field, fields, replace
import math
from typing import Any, Deque, Dict, Optional, Sequence, Tuple

from aeb_control.corridor import (closest_in_corridor, Corridor, mount_transform, predict_corridor,
                                  to_vehicle_frame)
from aeb_control.fixed_ttc import fixed_ttc_brake, FixedTtcParams, ground_truth_ttc
from aeb_control.obstacle import (last_point_to_brake, ObstacleTracker, predict_after,
                                  required_deceleration, time_to_collision)
from aeb_control.staging import StagingInput, StagingMachine, StagingParams
import numpy as np

STRATEGIES = ('ttc_staged', 'fixed_ttc')
MODES = ('perception', 'ground_truth')


@dataclass(frozen=True)
class AebParams:
    """
    Every tunable of the pipeline (names match ``config/aeb_controller``).

    Defaults equal ``config/aeb_controller.yaml`` (test_param_defaults)
    except for what the node derives (:func:`resolve_params`): vehicle
    geometry, ``dead_time`` and ``max_decel`` default to the passenger
    car's profile, the lidar mount to a roof lidar above the rear axle.
    Geometry in the vehicle frame (m): ``front`` bumper ahead of the rear
    axle, ``vehicle_width``, ``width_margin`` per side; lidar mount
    ``mount_*`` (m, rad); ``range_min``: lidar points closer than this to
    the sensor are no returns (m; drivers such as Ouster's write a beam
    without echo as 0, 0, 0). Times s, speeds m/s, decelerations m/s^2.
    """

    strategy: str = 'ttc_staged'
    mode: str = 'perception'
    vehicle_width: float = 1.85
    front: float = 3.74
    width_margin: float = 0.25
    horizon_time: float = 4.0
    min_length: float = 5.0
    max_length: float = 100.0
    z_min: float = 0.55
    z_max: float = 2.5
    range_min: float = 0.1
    min_points: int = 3
    cluster_depth: float = 1.0
    voxel_size: float = 0.0
    mount_x: float = 0.0
    mount_y: float = 0.0
    mount_z: float = 1.9
    mount_roll: float = 0.0
    mount_pitch: float = 0.0
    mount_yaw: float = 0.0
    dead_time: float = 0.3
    latency: float = 0.05
    stop_margin: float = 0.5
    speed_window: int = 5
    min_samples: int = 2
    decel_window: int = 10
    jump_distance: float = 3.0
    use_obstacle_decel: bool = True
    odom_timeout: float = 0.3
    empty_cloud_is_blind: bool = False
    #: the lidar's lowest beam meets the ground within its range (from the
    #: rig): a healthy sweep always has points, so an empty cloud is blind
    lidar_sees_ground: bool = False
    use_steering: bool = True
    steering_timeout: float = 0.3
    steering_preview: float = 1.5
    staging: StagingParams = field(default_factory=StagingParams)
    fixed: FixedTtcParams = field(default_factory=FixedTtcParams)

    def __post_init__(self) -> None:
        """Check choices and ranges; raises ``ValueError`` naming the field."""
        if self.strategy not in STRATEGIES:
            raise ValueError(f'strategy {self.strategy!r} not in '
                             f'{STRATEGIES}')
        if self.mode not in MODES:
            raise ValueError(f'mode {self.mode!r} not in {MODES}')
        for name in ('vehicle_width', 'horizon_time', 'max_length',
                     'dead_time', 'odom_timeout'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'AebParams.{name} must be finite and > 0, '
                                 f'got {value}')
        if not (math.isfinite(self.range_min) and self.range_min >= 0.0):
            raise ValueError(f'AebParams.range_min must be finite and >= 0, '
                             f'got {self.range_min}')

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> 'AebParams':
        """
        Build from a flat parameter dict (the node's parameters).

        Keys of :class:`StagingParams` and ``fixed_ttc_threshold`` /
        ``fixed_ttc_decel`` / ``fixed_ttc_lateral_gate`` go to the nested
        parameter sets; unknown keys are ignored.
        """
        own = {f.name for f in fields(cls)} - {'staging', 'fixed'}
        stage_names = {f.name for f in fields(StagingParams)}
        kwargs = {k: v for k, v in values.items() if k in own}
        staging = StagingParams(**{k: float(v) for k, v in values.items()
                                   if k in stage_names})
        base = FixedTtcParams()
        fixed = FixedTtcParams(
            ttc_threshold=float(values.get('fixed_ttc_threshold', base.ttc_threshold)),
            decel=float(values.get('fixed_ttc_decel', staging.max_decel)),
            lateral_gate=float(values.get('fixed_ttc_lateral_gate', base.lateral_gate)))
        for key in ('min_points', 'speed_window', 'min_samples',
                    'decel_window'):
            if key in kwargs:
                kwargs[key] = int(kwargs[key])
        return cls(staging=staging, fixed=fixed, **kwargs)


@dataclass
class BrakeDecision:
    """
    One AEB output.

    ``stamp`` the input's time (s); ``decel`` requested deceleration
    (m/s^2, >= 0; 0 = release); ``stage`` the state name; ``ttc`` (s, inf
    when not closing); ``distance`` to the obstacle along the path (m, inf
    when free); ``closing_speed`` (m/s); ``a_req`` required deceleration
    now and ``a_td`` after the dead time (m/s^2); ``obstacle_point``
    (vehicle frame, m) and the ``corridor`` used.
    """

    stamp: float
    decel: float
    stage: str
    warning: bool = False
    ttc: float = math.inf
    distance: float = math.inf
    closing_speed: float = 0.0
    a_req: float = 0.0
    a_td: float = 0.0
    obstacle_speed: float = 0.0
    obstacle_decel: float = 0.0
    obstacle_point: Optional[np.ndarray] = None
    corridor: Optional[Corridor] = None
    reason: str = ''
    strategy: str = 'ttc_staged'

    def status(self) -> Dict[str, str]:
        """Return the fields as strings (for the DiagnosticArray)."""
        return {'state': self.stage, 'strategy': self.strategy,
                'ttc': f'{self.ttc:.3f}', 'distance': f'{self.distance:.3f}',
                'closing_speed': f'{self.closing_speed:.3f}',
                'required_decel': f'{self.a_req:.3f}',
                'required_decel_after_dead_time': f'{self.a_td:.3f}',
                'requested_decel': f'{self.decel:.3f}',
                'obstacle_speed': f'{self.obstacle_speed:.3f}',
                'obstacle_decel': f'{self.obstacle_decel:.3f}',
                'warning': str(self.warning).lower(), 'reason': self.reason}


class AebCore:
    """The pipeline; feed odometry, then clouds (or ground truth)."""

    def __init__(self, params: Optional[AebParams] = None) -> None:
        """Create the pipeline with ``params`` (defaults when None)."""
        self.params = params or AebParams()
        p = self.params
        self.rot, self.trans = mount_transform(
            p.mount_x, p.mount_y, p.mount_z, p.mount_roll, p.mount_pitch,
            p.mount_yaw)
        self._translation_only = bool(np.allclose(self.rot, np.eye(3)))
        self.tracker = ObstacleTracker(
            window=p.speed_window, min_samples=p.min_samples,
            decel_window=p.decel_window, jump_distance=p.jump_distance)
        self.machine = StagingMachine(p.staging)
        self.speed = 0.0
        self.yaw_rate = 0.0
        self.odom_t: Optional[float] = None
        self.pose: Tuple[float, float, float] = (0.0, 0.0, 0.0)
        self.cloud_t: Optional[float] = None
        #: arrival times (node clock, s) of the last usable cloud / odometry:
        #: freshness is judged by them, never by header stamps
        self.cloud_arrival: Optional[float] = None
        self.odom_arrival: Optional[float] = None
        self.first_t: Optional[float] = None
        self.driver_throttle = 0.0
        self.driver_brake = 0.0
        self.steer_kappa: Optional[float] = None
        self.steer_t: Optional[float] = None
        self._steer_hist: Deque[Tuple[float, float]] = deque()
        self.brake_since: Optional[float] = None
        self.last: Optional[BrakeDecision] = None

    # Inputs -------------------------------------------------------------
    def update_odometry(self, t: float, speed: float, yaw_rate: float,
                        pose: Optional[Sequence[float]] = None,
                        arrival: Optional[float] = None) -> bool:
        """
        Store the ego state: time (s), speed (m/s), yaw rate (rad/s).

        ``pose`` (x m, y m, yaw rad) in a world-fixed frame (``odom`` or
        ``map``) when known; otherwise it is dead-reckoned from speed and
        yaw rate. Returns False (and keeps the previous state) for
        non-finite input, so a NaN speed never reaches the decision; a
        lasting lack of valid odometry ends in the stale state. ``arrival``
        (node clock, s; default ``t``) is what freshness is judged by.
        """
        if not all(math.isfinite(v) for v in (t, speed, yaw_rate)):
            return False
        arrival = float(t) if arrival is None else float(arrival)
        if not math.isfinite(arrival):
            return False
        if pose is not None and not all(math.isfinite(float(v))
                                        for v in pose):
            pose = None
        self._seen(t)
        if pose is not None:
            self.pose = (float(pose[0]), float(pose[1]), float(pose[2]))
        elif self.odom_t is not None and t > self.odom_t:
            self.pose = self._pose_at(t)
        self.odom_t = float(t)
        self.odom_arrival = arrival
        self.speed = float(speed)
        self.yaw_rate = float(yaw_rate)
        return True

    def _pose_at(self, t: float) -> Tuple[float, float, float]:
        """Return the pose extrapolated from the last odometry to ``t``."""
        x, y, yaw = self.pose
        dt = 0.0 if self.odom_t is None else max(t - self.odom_t, 0.0)
        mid = yaw + 0.5 * self.yaw_rate * dt
        return (x + self.speed * dt * math.cos(mid),
                y + self.speed * dt * math.sin(mid),
                yaw + self.yaw_rate * dt)

    def _seen(self, t: float) -> None:
        if self.first_t is None:
            self.first_t = float(t)

    def set_driver(self, throttle: float, brake: float) -> None:
        """Set the driver's pedals (0..1; NaN counts as released)."""
        self.driver_throttle = float(throttle) if math.isfinite(throttle) \
            else 0.0
        self.driver_brake = float(brake) if math.isfinite(brake) else 0.0

    def set_steering(self, t: float, kappa: float) -> None:
        """
        Set the curvature (1/m, > 0 left) the commanded steering asks for.

        ``kappa = tan(delta) / wheelbase`` from the applied control; a
        corridor along it is intersected with the yaw-rate corridor for
        ``steering_timeout`` s (see :meth:`corridors`). NaN clears it.
        """
        if math.isfinite(kappa) and math.isfinite(t):
            self.steer_kappa, self.steer_t = float(kappa), float(t)
            hist = self._steer_hist
            if hist and t <= hist[-1][0]:
                hist.clear()
            hist.append((float(t), float(kappa)))
            while hist and t - hist[0][0] > 0.25:
                hist.popleft()
        else:
            self.steer_kappa = self.steer_t = None
            self._steer_hist.clear()

    def steering_rate(self) -> float:
        """Return d(kappa)/dt (1/(m s)) of the commanded steering, or 0."""
        hist = self._steer_hist
        if len(hist) < 3 or hist[-1][0] - hist[0][0] < 0.09:
            return 0.0
        arr = np.asarray(hist, dtype=np.float64)
        return float(np.polyfit(arr[:, 0] - arr[-1, 0], arr[:, 1], 1)[0])

    def corridor(self, yaw_rate: Optional[float] = None) -> Corridor:
        """Return the corridor predicted from the current ego state."""
        p = self.params
        yaw_rate = self.yaw_rate if yaw_rate is None else yaw_rate
        kappa_guess = (yaw_rate / self.speed
                       if abs(self.speed) > 1.0 else 0.0)
        extra = 0.5 * p.front * p.front * min(abs(kappa_guess), 0.25)
        return predict_corridor(
            self.speed, yaw_rate,
            half_width=0.5 * p.vehicle_width + p.width_margin + extra,
            front=p.front, horizon_time=p.horizon_time,
            min_length=p.min_length, max_length=p.max_length,
            z_min=p.z_min, z_max=p.z_max)

    def steering_corridor(self, t: float) -> Optional[Corridor]:
        """Return the corridor of the commanded steering (None if stale)."""
        if self.steer_kappa is None or self.steer_t is None or \
                t - self.steer_t > self.params.steering_timeout or \
                not self.params.use_steering:
            return None
        base = self.corridor(self.steer_kappa * self.speed)
        p = self.params
        v = max(abs(self.speed), 1.0)
        if p.steering_preview <= 0.0:
            return base
        return replace(base, kappa_rate=self.steering_rate() / v,
                       preview=v * p.steering_preview)

    def update_cloud(self, t: float, points: np.ndarray,
                     arrival: Optional[float] = None) -> BrakeDecision:
        """
        Decide from one lidar cloud at stamp ``t`` (s).

        ``points`` (N, >=3) x, y, z (m) in the lidar frame; rows with any
        NaN/inf coordinate, or closer than ``range_min`` to the sensor (a
        driver's 0, 0, 0 for a beam without echo), are invalid. A cloud
        without one valid point
        never counts as fresh input (after ``stale_timeout`` the AEB
        requests a stop); an empty cloud does not either when
        ``empty_cloud_is_blind`` or when the lidar sees the ground
        (``lidar_sees_ground``: a healthy sweep then always has points).
        ``arrival`` (node clock, s; default ``t``) is what freshness is
        judged by. Raises ``ValueError`` for a wrongly shaped array.
        """
        if not math.isfinite(t):
            raise ValueError(f'update_cloud: stamp is not finite: {t}')
        arrival = float(t) if arrival is None else float(arrival)
        self._seen(t)
        raw = np.asarray(points)
        if raw.ndim != 2 or raw.shape[1] < 3:
            raise ValueError(f'update_cloud: points must be an (N, >=3) '
                             f'array, got shape {raw.shape}')
        if raw.shape[0] and self.params.range_min > 0.0:
            xyz = raw[:, :3]
            near = np.einsum('ij,ij->i', xyz, xyz) < self.params.range_min ** 2
            if near.any():
                raw = raw[~near]
        if self._translation_only:
            pts, offset = raw, self.trans   # shift only the candidates
        else:
            pts, offset = to_vehicle_frame(raw, self.rot, self.trans), None
        corridor = self.corridor()
        x, y = pts[:, 0], pts[:, 1]
        # A cloud with points but none valid (all three coordinates finite)
        # is a broken lidar; a cloud without points may just mean nothing
        # in range, unless the lidar sees the ground.
        empty_blind = self.params.empty_cloud_is_blind or self.params.lidar_sees_ground
        usable = bool(np.isfinite(raw[:, :3]).all(axis=1).any()) or (
            pts.shape[0] == 0 and not empty_blind)
        if usable and self.last is not None and self.cloud_t is not None \
                and not bool(np.any((x > 0.0) & (np.abs(y) < x))):
            # A partial sweep (lidar rotating slower than the frame rate)
            # that missed the front: no news about the corridor.
            self.cloud_t = float(t)
            self.cloud_arrival = arrival
            return self._record(_restamp(self.last, t))
        if usable:
            self.cloud_t = float(t)
            self.cloud_arrival = arrival
        hit = closest_in_corridor(pts, corridor, self.params.min_points,
                                  self.params.cluster_depth,
                                  self.params.voxel_size,
                                  self.steering_corridor(t), offset)
        return self._decide(t, hit.distance, None, None, hit.point,
                            corridor)

    def update_ground_truth(self, t: float, ego_xy: Sequence[float],
                            ego_yaw: float, actors_xy: np.ndarray,
                            actors_yaw: np.ndarray, actors_vel: np.ndarray,
                            actors_size: np.ndarray,
                            actors_decel: Optional[np.ndarray] = None,
                            arrival: Optional[float] = None
                            ) -> BrakeDecision:
        """
        Decide from other actors' ground truth at stamp ``t`` (s).

        Map frame: ``ego_xy`` (2,) m of the ego origin, ``ego_yaw`` rad;
        per actor box centre ``actors_xy`` (N, 2) m, ``actors_yaw`` (N,)
        rad, velocity ``actors_vel`` (N, 2) m/s, ``actors_size`` (N, 3)
        length, width, height m, ``actors_decel`` (N,) m/s^2 (> 0 braking)
        where known. The ego state must come from ``update_odometry``.
        """
        xy = np.asarray(actors_xy, dtype=np.float64).reshape(-1, 2)
        yaw = np.asarray(actors_yaw, dtype=np.float64).reshape(-1)
        vel = np.asarray(actors_vel, dtype=np.float64).reshape(-1, 2)
        size = np.asarray(actors_size, dtype=np.float64).reshape(-1, 3)
        n = xy.shape[0]
        if not (yaw.shape[0] == vel.shape[0] == size.shape[0] == n):
            raise ValueError('update_ground_truth: actor arrays differ in '
                             'length')
        good = (np.isfinite(xy).all(axis=1) & np.isfinite(yaw)
                & np.isfinite(vel).all(axis=1) & np.isfinite(size).all(axis=1))
        xy, yaw, vel, size = xy[good], yaw[good], vel[good], size[good]
        decel = (np.zeros(xy.shape[0]) if actors_decel is None else
                 np.nan_to_num(np.asarray(actors_decel,
                                          dtype=np.float64)[good]))
        self.cloud_t = float(t)
        self.cloud_arrival = float(t) if arrival is None else float(arrival)
        corridor = self.corridor()
        if self.params.strategy == 'fixed_ttc':
            ttc = ground_truth_ttc(ego_xy, ego_yaw, self.speed, xy, vel,
                                   self.params.fixed.lateral_gate)
            return self._fixed(t, ttc, corridor)
        c, s = math.cos(ego_yaw), math.sin(ego_yaw)
        rot = np.array([[c, s], [-s, c]])
        outline = box_outlines(xy, yaw, size)          # (N, K, 2)
        local = (outline - np.asarray(ego_xy, dtype=np.float64)[:2]) @ rot.T
        z = np.broadcast_to(
            np.clip(0.5 * size[:, 2], corridor.z_min + 1e-3,
                    corridor.z_max)[:, None], local.shape[:2])
        best = None
        for i in range(local.shape[0]):
            pts = np.concatenate([local[i], z[i][:, None]], axis=1)
            hit = closest_in_corridor(pts, corridor, 1, 1.0, 0.0)
            if hit.distance is not None and (
                    best is None or hit.distance < best[0]):
                best = (hit.distance, i, hit.point)
        if best is None:
            self.tracker.reset()
            return self._decide(t, None, None, None, None, corridor)
        dist, i, point = best
        v_obj = float(vel[i] @ np.array([c, s]))
        return self._decide(t, dist, v_obj, float(max(decel[i], 0.0)),
                            point, corridor)

    # Decisions ----------------------------------------------------------
    def input_age(self, t: float) -> float:
        """
        Return the age (s) of the stalest input the decision needs at ``t``.

        Ages count from the inputs' arrival (node clock), so an input
        stamped in the future cannot keep the AEB from going stale.
        """
        if self.first_t is None:
            self.first_t = float(t)
        cloud_t = self.first_t if self.cloud_arrival is None else self.cloud_arrival
        odom_t = self.first_t if self.odom_arrival is None else self.odom_arrival
        odom_age = t - odom_t
        if odom_age <= self.params.odom_timeout:
            odom_age = 0.0
        return max(t - cloud_t, odom_age, 0.0)

    def check_stale(self, t: float) -> Optional[BrakeDecision]:
        """
        Return a stop decision when inputs are older than the timeout.

        Called periodically (node timer, sim time ``t`` s); None while the
        inputs are fresh.
        """
        age = self.input_age(t)
        limit = self.params.staging.stale_timeout
        if age <= limit:
            return None
        out = self.machine.update(StagingInput(
            t=t, ego_speed=self.speed, input_age=age,
            driver_brake=self.driver_brake,
            driver_throttle=self.driver_throttle))
        return self._record(BrakeDecision(
            stamp=t, decel=out.decel, stage=out.stage.name.lower(),
            warning=out.warning, reason=out.reason,
            strategy=self.params.strategy))

    def _record(self, decision: BrakeDecision) -> BrakeDecision:
        if decision.decel > 0.0:
            if self.brake_since is None:
                self.brake_since = decision.stamp
        else:
            self.brake_since = None
        self.last = decision
        return decision

    def _fixed(self, t: float, ttc: Optional[float],
               corridor: Corridor) -> BrakeDecision:
        p = self.params.fixed
        ttc_value = math.inf if ttc is None else ttc
        override = (self.driver_brake >= self.params.staging.driver_brake
                    or self.driver_throttle >= self.params.staging.kickdown)
        brake = fixed_ttc_brake(ttc_value, p.ttc_threshold) and not override
        stage = 'override' if override else ('full' if brake else 'idle')
        return self._record(BrakeDecision(
            stamp=t, decel=p.decel if brake else 0.0, stage=stage,
            warning=brake, ttc=ttc_value, corridor=corridor,
            reason=f'fixed TTC < {p.ttc_threshold:g} s' if brake else '',
            strategy='fixed_ttc'))

    def _decide(self, t: float, distance: Optional[float],
                obj_speed: Optional[float], obj_decel: Optional[float],
                point: Optional[np.ndarray],
                corridor: Corridor) -> BrakeDecision:
        p = self.params
        v_e = self.speed
        if obj_speed is None:
            position = direction = None
            if point is not None and distance is not None:
                x, y, yaw = self._pose_at(t)
                c, s = math.cos(yaw), math.sin(yaw)
                position = np.array([x + c * point[0] - s * point[1],
                                     y + s * point[0] + c * point[1]])
                heading = yaw + corridor.kappa * (distance + corridor.front)
                direction = np.array([math.cos(heading), math.sin(heading)])
            est = self.tracker.update(t, distance, v_e, position, direction)
            valid = est is not None and est.valid
            v_o = est.speed if est is not None else 0.0
            a_o = est.decel if (est is not None and p.use_obstacle_decel) \
                else 0.0
        else:
            valid = True
            v_o = obj_speed
            a_o = obj_decel if (obj_decel is not None and
                                p.use_obstacle_decel) else 0.0
        dist = math.inf if distance is None else float(distance)
        closing = v_e - v_o if distance is not None else 0.0
        ttc = time_to_collision(dist, v_e, v_o) if distance is not None \
            else math.inf
        if p.strategy == 'fixed_ttc':
            return self._fixed(t, ttc if math.isfinite(ttc) else None,
                               corridor)
        a_req = a_td = 0.0
        if distance is not None and valid:
            a_req = required_deceleration(dist, v_e, v_o, a_o, p.stop_margin)
            braking_for = (0.0 if self.brake_since is None
                           else t - self.brake_since)
            horizon = max(p.dead_time + p.latency - braking_for, 0.0)
            ego_decel = self.last.decel if (self.last is not None and
                                            self.brake_since is not None) \
                else 0.0
            d_td, v_e_td, v_o_td = predict_after(dist, v_e, ego_decel, v_o,
                                                 a_o, horizon)
            a_td = required_deceleration(d_td, v_e_td, v_o_td, a_o,
                                         p.stop_margin)
            if d_td <= p.stop_margin and (v_e_td > v_o_td or a_td > 0.0):
                a_td = math.inf
        out = self.machine.update(StagingInput(
            t=t, ego_speed=v_e, a_td=a_td, ttc=ttc, closing_speed=closing,
            obstacle=distance is not None and valid,
            driver_brake=self.driver_brake,
            driver_throttle=self.driver_throttle,
            input_age=self.input_age(t)))
        return self._record(BrakeDecision(
            stamp=t, decel=out.decel, stage=out.stage.name.lower(),
            warning=out.warning, ttc=ttc, distance=dist,
            closing_speed=closing, a_req=a_req, a_td=a_td, obstacle_speed=v_o,
            obstacle_decel=a_o, obstacle_point=point, corridor=corridor,
            reason=out.reason, strategy=p.strategy))

    def last_point_ttc(self, closing_speed: float) -> float:
        """Return the last-point-to-brake TTC (s) for a static target."""
        return last_point_to_brake(closing_speed, self.params.dead_time,
                                   self.params.staging.max_decel)[1]


def resolve_params(values: Dict[str, Any]) -> AebParams:
    """
    Turn node parameters (``config/aeb_controller.yaml``) into AebParams.

    Reads the vehicle profile (``vehicle_profile``: width, front bumper,
    ``max_decel`` and ``dead_time`` when those are 0) and the lidar mount
    from the rig file (``rig``, ``lidar_id``). Raises ``ValueError`` for a
    missing lidar or an invalid value.
    """
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    vals = dict(values)
    if 'vehicle_profile' not in vals:
        raise ValueError('aeb_controller: parameter vehicle_profile is missing '
                         '(config/aeb_controller.yaml)')
    profile = load_vehicle_profile(str(vals['vehicle_profile']))
    vals['vehicle_width'] = profile.width
    vals['front'] = profile.length - profile.rear_overhang
    if float(vals.get('max_decel', 0.0)) <= 0.0:
        vals['max_decel'] = profile.max_decel
    if float(vals.get('dead_time', 0.0)) <= 0.0:
        vals['dead_time'] = (profile.brake_dead_time
                             + 0.5 * profile.brake_ramp_time)
    if float(vals.get('fixed_ttc_decel', 0.0)) <= 0.0:
        vals['fixed_ttc_decel'] = vals['max_decel']
    rig_name = str(vals.get('rig', ''))
    if rig_name:
        lidar_id = str(vals['lidar_id'])
        specs = [s for s in load_rig(rig_name) if s.sensor_id == lidar_id]
        if not specs:
            raise ValueError(f'rig {rig_name!r} has no sensor {lidar_id!r}')
        m = specs[0].mount
        vals.update(mount_x=m.x, mount_y=m.y, mount_z=m.z,
                    mount_roll=m.roll, mount_pitch=m.pitch, mount_yaw=m.yaw)
        attrs = specs[0].attributes
        vals['lidar_sees_ground'] = lidar_sees_ground(
            m.z, m.roll, m.pitch, float(attrs.get('lower_fov', -30.0)),
            float(attrs.get('range', 10.0)))
    return AebParams.from_dict(vals)


def lidar_sees_ground(height: float, roll: float, pitch: float, lower_fov_deg: float,
                      max_range: float) -> bool:
    """
    Return True when the lidar's lowest forward beam hits flat ground in range.

    ``height`` (m above the ground) and roll/pitch (rad, REP-103) of the
    mount; ``lower_fov_deg`` the lowest beam's elevation in the sensor frame
    (CARLA's attribute, degrees); ``max_range`` (m). Such a lidar returns
    ground points on every healthy sweep.
    """
    rot, _ = mount_transform(0.0, 0.0, 0.0, roll, pitch, 0.0)
    elev = math.radians(lower_fov_deg)
    beam = rot @ np.array([math.cos(elev), 0.0, math.sin(elev)])
    if beam[2] >= -1e-6 or height <= 0.0:
        return False
    return height / -beam[2] <= 0.95 * max_range


def _restamp(decision: BrakeDecision, t: float) -> BrakeDecision:
    """Return a copy of ``decision`` stamped ``t``."""
    out = BrakeDecision(**{f.name: getattr(decision, f.name)
                           for f in fields(BrakeDecision)})
    out.stamp = float(t)
    return out


def box_outlines(xy: np.ndarray, yaw: np.ndarray, size: np.ndarray,
                 step: float = 0.2) -> np.ndarray:
    """
    Return points along each box's outline in map (N, K, 2), m.

    Boxes centred at ``xy`` with yaw (rad) and (length, width) from
    ``size``; ``K`` is the same for all boxes (edges sampled at a fixed
    count from the largest box and ``step`` m).
    """
    if xy.shape[0] == 0:
        return np.zeros((0, 4, 2))
    per_edge = int(max(np.ceil(size[:, :2].max() / step), 1))
    u = np.linspace(-0.5, 0.5, per_edge + 1)[:-1]
    half = np.full_like(u, 0.5)
    # Unit-square outline, counter-clockwise: front, left, rear, right.
    square = np.concatenate([
        np.stack([half, u], 1), np.stack([-u, half], 1),
        np.stack([-half, -u], 1), np.stack([u, -half], 1)])
    local = square[None, :, :] * size[:, None, :2]
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x = c * local[..., 0] - s * local[..., 1] + xy[:, None, 0]
    y = s * local[..., 0] + c * local[..., 1] + xy[:, None, 1]
    return np.stack([x, y], axis=-1)
