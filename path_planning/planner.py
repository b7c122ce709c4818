# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The planning cycle without ROS: cones + speed -> (speed, yaw rate, path).

Used by ``path_planning.planner_node`` and, in-process, by the closed-loop
tests. Vehicle frame, REP-103 (x forward, y left, metres, radians, rear-axle
origin); times in seconds of sim time.

One cycle (:meth:`Planner.plan`):

1. Cones with a non-finite position are dropped (``n_dropped``); cones
   farther than ``sensor_range`` or outside the field of view
   (``|atan2(y, x)| > sensor_fov / 2``) are ignored (``n_out_of_range``),
   so a fusion node that passes stale far cones cannot steer the car.
2. No usable cone ahead (``x > 0``) at all: stop (``reason = 'no_cones'``):
   driving blind is not an option.
3. Mode ``cone_drive``: :func:`path_planning.cone_drive.cone_drive` from the
   last commanded steering angle; speed from
   :mod:`path_planning.speed_policy` with the chosen range's width, the
   arc's curvature and the look-ahead as the clear distance. Mode
   ``midline``: :func:`path_planning.midline.midline` then
   :func:`path_planning.pure_pursuit.pure_pursuit`, speed from the path's
   curvature profile and the pursuit arc; with ``pursuit_check`` the
   pursuit steering must lie in one of CONEDRIVE's free ranges, else the
   nearest free angle is taken. When no midline is found
   (a gap in the cones, the start line) that cycle falls back to cone
   drive. Mode ``auto``: the midline only when at least ``min_coloured``
   blue and yellow cones are seen and a midline of at least
   ``min_midline_length`` metres is found, else cone drive. With
   ``use_colours`` CONEDRIVE gets the cone colours (its colour rule).
4. The speed ramp starts from the last command, but never more than
   ``accel * ramp_lead`` above the measured speed (no wind-up while the
   AEB or the driver holds the car).
5. No free steering range with the comfort ``margin``: CONEDRIVE is run
   again without it (the band is then the car's half width plus the cone
   radius) at no more than ``narrow_speed``; still none: stop
   (``reason = 'no_free_range'``).
6. The speed follows the target within the acceleration and deceleration
   limits; a stop is immediate. The yaw rate is ``v * tan(delta) / L``
   with the commanded speed ``v`` (what the contract's ``cmd_vel`` carries).
"""

from dataclasses import dataclass, field, replace
import math
from typing import Any, Dict, Mapping, Optional

from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
import numpy as np
from path_planning.cone_drive import (arc_points, cone_drive, ConeDriveParams, ConeDriveResult,
                                      STATUS_STOP, steering_ranges)
from path_planning.cone_map import ConeMap, ConeMapParams, to_map, to_vehicle
from path_planning.lane import lane_cones, lane_view, LaneView, track_path
from path_planning.lane_line import (beyond_steering, LaneLine, LaneLineParams, line_rank,
                                     line_speed, plan_lane_line)
from path_planning.midline import midline, MidlineParams, MidlineResult
from path_planning.pure_pursuit import profile_speed, pure_pursuit, PursuitParams, PursuitResult
from path_planning.speed_policy import command_speed, rate_limit, SpeedParams, target_speed

MODES = ('cone_drive', 'midline', 'auto', 'lane')
#: lane mode moves its steering into a free CONEDRIVE range by at most
#: this much (rad); farther free ranges lead out of the lane
LANE_MAX_CORRECTION = math.radians(6.0)
#: the car in its own frame: where a line starts that is not continued (x, y, heading)
CAR_START = (0.0, 0.0, 0.0)
#: a continued line the car cannot drive is planned again from the car when
#: the car is this far (m) or this much off its heading (rad) from the last
#: line: it has fallen behind it (on the line, the lane itself is that tight)
REPLAN_OFFSET = 0.15
REPLAN_HEADING = math.radians(10.0)


@dataclass(frozen=True)
class PlannerConfig:
    """
    Everything a :class:`Planner` needs (SI units, radians).

    ``mode`` one of :data:`MODES`; ``sensor_range`` (m) and ``sensor_fov``
    (rad, full angle) of the cones that count; ``min_coloured`` blue and
    yellow cones each needed for the midline in ``auto``;
    ``min_midline_length`` (m); ``max_dt`` longest step used by the rate
    limiter (s); ``use_colours`` gives CONEDRIVE the cone colours (its
    colour rule); ``pursuit_check`` checks the pure-pursuit steering
    against CONEDRIVE's free ranges; ``memory`` (s) how long a cone that
    is no longer detected is remembered (moved with the ego motion, 0 =
    off) and ``memory_radius`` (m) how near a detection must be to count
    as the same cone; ``ramp_lead`` (s): the speed ramp never starts more
    than ``accel * ramp_lead`` above the measured speed (no wind-up while
    the car is held). Lane mode (``lane_*``): see ``config/
    cone_drive_planner.yaml``; its line keeps ``line.margin`` to the
    cones and, growing over the first ``line.far_margin_ramp`` m of it,
    ``lane_margin_speed * speed`` (m, s x m/s) more, and on the car's side
    its offset from a line continued from the last one (none up to half
    ``lane_error_speed``, all of it from ``lane_error_speed`` m/s on; 0 =
    off); a line bending beyond the steering within ``lane_commit`` m of
    the car is driven at full lock (0 = off); its speed profile brakes
    ``lane_latency`` s late.
    """

    mode: str = 'lane'
    cone_drive: ConeDriveParams = ConeDriveParams()
    speed: SpeedParams = SpeedParams()
    midline: MidlineParams = MidlineParams()
    pursuit: PursuitParams = PursuitParams()
    sensor_range: float = 20.0
    sensor_fov: float = math.radians(270.0)
    min_coloured: int = 3
    min_midline_length: float = 6.0
    max_dt: float = 0.5
    use_colours: bool = True
    pursuit_check: bool = True
    memory: float = 0.5
    memory_radius: float = 0.5
    ramp_lead: float = 0.5
    use_map: bool = True
    min_lane_length: float = 6.0
    lane_check_lookahead: float = 8.0
    lane_max_speed: float = 12.0
    lane_a_lat_max: float = 8.0
    lane_accel: float = 6.0
    lane_line: bool = True
    lane_kappa_rate: float = 0.5
    lane_stitch: float = 0.5
    lane_track_length: float = 1.5
    lane_tight_fraction: float = 0.8
    lane_tight_speed: float = 3.0
    lane_margin_speed: float = 0.025
    lane_error_speed: float = 4.0
    lane_commit: float = 2.0
    lane_latency: float = 0.45
    line: LaneLineParams = LaneLineParams()

    def __post_init__(self) -> None:
        """Validate the mode and the limits (ValueError naming the field)."""
        if self.mode not in MODES:
            raise ValueError(f'PlannerConfig.mode {self.mode!r} not in '
                             f'{list(MODES)}')
        for name in ('sensor_range', 'sensor_fov', 'max_dt', 'lane_max_speed',
                     'lane_a_lat_max', 'lane_accel', 'lane_kappa_rate', 'lane_track_length',
                     'lane_tight_fraction', 'lane_tight_speed'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'PlannerConfig.{name} must be finite and > 0,'
                                 f' got {value}')
        for name in ('min_midline_length', 'memory', 'memory_radius',
                     'ramp_lead', 'min_lane_length', 'lane_check_lookahead', 'lane_stitch',
                     'lane_margin_speed', 'lane_error_speed', 'lane_commit', 'lane_latency'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'PlannerConfig.{name} must be finite and >= '
                                 f'0, got {value}')

    @property
    def lane_speed(self) -> SpeedParams:
        """Return the speed policy of lane mode (its own top speed and limits)."""
        return replace(self.speed, max_speed=self.lane_max_speed,
                       a_lat_max=self.lane_a_lat_max, accel=self.lane_accel)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], profile: Any
                     ) -> 'PlannerConfig':
        """
        Build from node parameters (``config/cone_drive_planner.yaml``).

        Angles in the mapping are in degrees (keys ending in ``_deg``);
        vehicle geometry comes from ``profile`` (a ``VehicleProfile``).
        """
        v = values
        rad = math.radians
        cd = ConeDriveParams.from_profile(
            profile, margin=float(v['margin']),
            cone_radius=float(v['cone_radius']),
            lookahead=float(v['lookahead']),
            narrow_threshold=rad(float(v['narrow_threshold_deg'])),
            n_grid=int(v['n_grid']), side_reach=float(v['side_reach']))
        sp = SpeedParams(max_speed=float(v['max_speed']),
                         min_speed=float(v['min_speed']),
                         a_lat_max=float(v['a_lat_max']),
                         accel=float(v['accel']), decel=float(v['decel']),
                         narrow_width=rad(float(v['narrow_width_deg'])),
                         wide_width=rad(float(v['wide_width_deg'])),
                         narrow_speed=float(v['narrow_speed']),
                         stop_margin=float(v['stop_margin']))
        ml = MidlineParams(max_width=float(v['midline_max_width']),
                           min_width=float(v['midline_min_width']),
                           max_range=float(v['sensor_range']),
                           max_length=float(v['midline_max_length']))
        pp = PursuitParams(wheelbase=float(profile.wheelbase),
                           max_steer=float(profile.max_steer),
                           ld_min=float(v['ld_min']), ld_max=float(v['ld_max']),
                           ld_gain=float(v['ld_gain']))
        return cls(mode=str(v['mode']), cone_drive=cd, speed=sp, midline=ml,
                   pursuit=pp, sensor_range=float(v['sensor_range']),
                   sensor_fov=rad(float(v['sensor_fov_deg'])),
                   min_coloured=int(v['min_coloured']),
                   min_midline_length=float(v['min_midline_length']),
                   use_colours=bool(v['use_colours']),
                   pursuit_check=bool(v['pursuit_check']),
                   memory=float(v['cone_memory']),
                   memory_radius=float(v['cone_memory_radius']),
                   use_map=bool(v['use_map']),
                   min_lane_length=float(v['min_lane_length']),
                   lane_check_lookahead=float(v['lane_check_lookahead']),
                   lane_max_speed=float(v['lane_max_speed']),
                   lane_a_lat_max=float(v['lane_a_lat_max']),
                   lane_accel=float(v['lane_accel']),
                   lane_line=bool(v['lane_line']),
                   lane_kappa_rate=float(v['lane_kappa_rate']),
                   lane_stitch=float(v['lane_stitch']),
                   lane_track_length=float(v['lane_track_length']),
                   lane_tight_fraction=float(v['lane_tight_fraction']),
                   lane_tight_speed=float(v['lane_tight_speed']),
                   lane_margin_speed=float(v['lane_margin_speed']),
                   lane_error_speed=float(v['lane_error_speed']),
                   lane_commit=float(v['lane_commit']),
                   lane_latency=float(v['lane_latency']),
                   line=LaneLineParams(
                       wheelbase=float(profile.wheelbase), max_steer=float(profile.max_steer),
                       half_width=0.5 * float(profile.width),
                       front=float(profile.length) - float(profile.rear_overhang),
                       rear=float(profile.rear_overhang), cone_radius=float(v['cone_radius']),
                       margin=float(v['lane_margin']),
                       far_margin_ramp=float(v['lane_margin_ramp']),
                       curvature_fraction=float(v['lane_curvature_fraction']),
                       horizon=float(v['lane_horizon']),
                       smoothness=float(v['lane_smoothness']),
                       kink_ratio=float(v['lane_kink_ratio']),
                       kink_curvature=float(v['lane_kink_curvature'])))


@dataclass
class PlanOutput:
    """
    One planning cycle's result.

    ``speed`` target (m/s), ``yaw_rate`` (rad/s, + left), ``delta`` road
    wheel angle (rad), ``kappa`` (1/m); ``mode`` the planner that ran
    (``cone_drive``, ``midline`` or ``stop``); ``stop`` True for a safe
    stop with ``reason``; ``path`` (P, 2) the chosen arc or midline in the
    vehicle frame; ``cone_drive`` / ``midline`` / ``pursuit`` the detailed
    results (None when not run); cone counts.
    """

    speed: float
    yaw_rate: float
    delta: float
    kappa: float
    mode: str
    stop: bool
    reason: str
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    cone_drive: Optional[ConeDriveResult] = None
    midline: Optional[MidlineResult] = None
    pursuit: Optional[PursuitResult] = None
    n_used: int = 0
    n_dropped: int = 0
    n_out_of_range: int = 0
    n_remembered: int = 0
    n_beyond: int = 0
    lane: Optional[LaneView] = None
    line: Optional[LaneLine] = None


class Planner:
    """Stateful planning cycle (remembers the last command for its limits)."""

    #: :meth:`plan` takes the odometry pose (``pose=``) for the cone map
    uses_pose = True

    def __init__(self, config: PlannerConfig) -> None:
        self.config = config
        #: the local cone map (``use_map``), fed with the pose of each cycle
        self.cone_map = ConeMap(ConeMapParams(max_range=config.sensor_range,
                                              fov=config.sensor_fov))
        #: CONEDRIVE without the comfort margin, tried before a stop.
        self.tight = replace(config.cone_drive, margin=0.0)
        #: lane mode's check: only the arc just ahead (the lane is known)
        self.lane_check = replace(config.cone_drive,
                                  lookahead=max(config.lane_check_lookahead, 0.5))
        self.lane_tight = replace(self.lane_check, margin=0.0)
        #: lane mode's line is followed with a shorter feedback length
        self.line_pursuit = replace(config.pursuit, ld_min=config.lane_track_length,
                                    ld_max=max(config.lane_track_length, config.pursuit.ld_max))
        self.last_delta = 0.0
        self.last_speed = 0.0
        self.last_t: Optional[float] = None
        self._memory: Optional['tuple[np.ndarray, np.ndarray, np.ndarray]'] \
            = None
        #: lane mode: the last line in ``map`` and the pose of this cycle
        self._line_map: Optional['tuple[np.ndarray, np.ndarray]'] = None
        self._pose: Optional['tuple[float, float, float]'] = None

    def reset(self) -> None:
        """Forget the last command and the remembered cones."""
        self.last_delta = 0.0
        self.last_speed = 0.0
        self.last_t = None
        self._memory = None
        self._line_map = None
        self._pose = None
        self.cone_map.reset()

    def _remember(self, t: float, xy: np.ndarray, cls: np.ndarray,
                  speed: float, yaw_rate: float
                  ) -> 'tuple[np.ndarray, np.ndarray, int]':
        """
        Add the remembered cones that the current detections lack.

        The remembered cones are moved into the current vehicle frame by
        the ego motion since the last cycle (an arc of ``speed`` m/s and
        ``yaw_rate`` rad/s); those within ``memory_radius`` of a detection
        are replaced by it, those older than ``memory`` seconds are
        forgotten. Returns ``(xy, cls, n_remembered)``.
        """
        cfg = self.config
        mem, self._memory = self._memory, None
        ages = np.zeros(xy.shape[0])
        n_old = 0
        dt = None if self.last_t is None else t - self.last_t
        if (mem is not None and dt is not None and 0.0 <= dt <= cfg.memory
                and math.isfinite(speed) and math.isfinite(yaw_rate)):
            old_xy, old_cls, old_age = mem
            moved = ego_motion(old_xy, speed, yaw_rate, dt)
            age = old_age + dt
            keep = age <= cfg.memory
            rng = np.hypot(moved[:, 0], moved[:, 1])
            keep &= (rng <= cfg.sensor_range) & (np.abs(np.arctan2(
                moved[:, 1], moved[:, 0])) <= 0.5 * cfg.sensor_fov)
            if xy.shape[0] and keep.any():
                gap = np.linalg.norm(moved[keep][:, None] - xy[None], axis=2)
                near = np.zeros_like(keep)
                near[keep] = gap.min(axis=1) <= cfg.memory_radius
                keep &= ~near
            n_old = int(np.count_nonzero(keep))
            xy = np.concatenate([xy, moved[keep]])
            cls = np.concatenate([cls, old_cls[keep]])
            ages = np.concatenate([ages, age[keep]])
        self._memory = (xy, cls, ages)
        return xy, cls, n_old

    def _dt(self, t: float) -> float:
        if self.last_t is None or not math.isfinite(t):
            return 0.0
        return min(max(t - self.last_t, 0.0), self.config.max_dt)

    def filter_cones(self, xyz: Any, class_id: Any
                     ) -> 'tuple[np.ndarray, np.ndarray, int, int]':
        """
        Return the cones that count: ``(xy, class_id, n_dropped, n_out)``.

        ``xyz`` (N, 2) or (N, 3) in the vehicle frame (m); non-finite rows
        are dropped, rows beyond the sensor range or field of view ignored.
        Raises ``ValueError`` for malformed arrays.
        """
        arr = np.asarray(xyz, dtype=np.float64)
        cls = np.asarray(class_id)
        if arr.size == 0:
            arr = np.zeros((0, 2))
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError(f'planner: cones must be (N, 2) or (N, 3), got '
                             f'shape {arr.shape}')
        if cls.shape != (arr.shape[0],):
            raise ValueError(f'planner: class_id must have shape '
                             f'({arr.shape[0]},), got {cls.shape}')
        xy = arr[:, :2]
        finite = np.isfinite(arr).all(axis=1)
        n_dropped = int(arr.shape[0] - np.count_nonzero(finite))
        xy, cls = xy[finite], cls[finite]
        rng = np.hypot(xy[:, 0], xy[:, 1])
        bearing = np.abs(np.arctan2(xy[:, 1], xy[:, 0]))
        seen = (rng <= self.config.sensor_range) & (
            bearing <= 0.5 * self.config.sensor_fov)
        n_out = int(xy.shape[0] - np.count_nonzero(seen))
        return xy[seen], cls[seen], n_dropped, n_out

    def _finish(self, t: float, speed: float, delta: float, out: PlanOutput
                ) -> PlanOutput:
        wheelbase = self.config.cone_drive.wheelbase
        out.speed = speed
        out.delta = delta
        out.kappa = math.tan(delta) / wheelbase
        out.yaw_rate = speed * out.kappa
        self.last_speed = speed
        self.last_delta = delta
        if math.isfinite(t):
            self.last_t = t
        return out

    def stop(self, t: float, reason: str, **extra: Any) -> PlanOutput:
        """Return (and remember) a safe stop: speed 0, wheels straight."""
        out = PlanOutput(speed=0.0, yaw_rate=0.0, delta=0.0, kappa=0.0,
                         mode='stop', stop=True, reason=reason, **extra)
        return self._finish(t, 0.0, 0.0, out)

    def plan(self, t: float, xyz: Any, class_id: Any,
             measured_speed: Optional[float] = None,
             measured_yaw_rate: Optional[float] = None,
             pose: Optional['tuple[float, float, float]'] = None) -> PlanOutput:
        """
        Run one cycle at sim time ``t`` (s) on the cones seen then.

        ``xyz`` (N, 2|3) cone positions and ``class_id`` (N,) contract
        classes in the vehicle frame; ``measured_speed`` (m/s) the ego
        speed from odometry and ``measured_yaw_rate`` (rad/s), None or
        non-finite when unknown (the last command stands in, for the
        pursuit look-ahead and the cone memory). With ``memory`` > 0 the
        cones missing from this detection but seen recently are added; a
        detection without any cone ahead still stops.

        With ``use_map`` and a finite ``pose`` (x, y, yaw in ``map``, the
        odometry at the cones' stamp) the cones also go into the local
        cone map; once its boundary walk has found the car's lane ahead
        (at least ``min_lane_length`` m), every mode plans on the lane's
        cones only (:func:`path_planning.lane.lane_cones`: the chain cones
        with their side as colour, plus detections inside the lane), so no
        mode can choose a path across a boundary or react to the cones of
        a section beside the lane; mode ``lane`` follows the lane's centre
        (pure pursuit, checked against CONEDRIVE on the lane cones).
        """
        cfg = self.config
        xy, cls, n_dropped, n_out = self.filter_cones(xyz, class_id)
        counts = {'n_used': int(xy.shape[0]), 'n_dropped': n_dropped,
                  'n_out_of_range': n_out, 'n_remembered': 0}
        if not np.any(xy[:, 0] > 0.0):
            self._memory = None
            return self.stop(t, 'no_cones', **counts)
        view = None
        if cfg.use_map and pose is not None and all(math.isfinite(float(v)) for v in pose):
            pose = (float(pose[0]), float(pose[1]), float(pose[2]))
            self._pose = pose
            self.cone_map.update(xy, cls, pose)
            view = lane_view(self.cone_map, pose, reach=cfg.sensor_range)
            if view is not None and view.length < cfg.min_lane_length:
                view = None
        dt = self._dt(t)
        speed_est = self.last_speed
        if measured_speed is not None and math.isfinite(measured_speed):
            speed_est = abs(float(measured_speed))
            # No wind-up: while the car is held (AEB, manual brake) the
            # ramp restarts near the measured speed, not far above it.
            self.last_speed = min(self.last_speed,
                                  speed_est + cfg.speed.accel * cfg.ramp_lead)
        if view is not None:
            # the map is the memory: the lane's cones, seen or not this cycle,
            # and the confirmed map cones inside the lane (a detection seen
            # once, a false positive, does not move the car)
            self._memory = None
            m_xy, m_cls, _count = self.cone_map.cones_in_vehicle(pose, cfg.sensor_range)
            xy, cls, n_beyond = lane_cones(view, m_xy, m_cls)
            counts.update(n_used=int(xy.shape[0]), n_beyond=n_beyond, lane=view)
            if cfg.mode == 'lane':
                mid = MidlineResult(status='ok', path=view.path[1:], nodes=view.path[1:],
                                    length=view.length)
                return self._midline(t, dt, speed_est, xy, cls, mid, counts, crawl=True)
        elif cfg.memory > 0.0:
            yaw_rate = self.last_speed * math.tan(self.last_delta) / \
                cfg.cone_drive.wheelbase
            if measured_yaw_rate is not None and math.isfinite(
                    measured_yaw_rate):
                yaw_rate = float(measured_yaw_rate)
            signed = speed_est if measured_speed is None or not math.isfinite(
                measured_speed) else float(measured_speed)
            xy, cls, n_old = self._remember(t, xy, cls, signed, yaw_rate)
            counts['n_remembered'] = n_old
        mid = None
        if cfg.mode in ('midline', 'auto', 'lane'):
            n_blue = int(np.count_nonzero(cls == CONE_BLUE))
            n_yellow = int(np.count_nonzero(cls == CONE_YELLOW))
            enough = min(n_blue, n_yellow) >= cfg.min_coloured
            if enough or cfg.mode == 'midline' or view is not None:
                mid = midline(xy, cls, cfg.midline)
            usable = (mid is not None and mid.ok
                      and mid.length >= cfg.min_midline_length)
            if usable:
                return self._midline(t, dt, speed_est, xy, cls, mid, counts)
        return self._cone_drive(t, dt, xy, cls, mid, counts)

    def _feasible(self, line: LaneLine) -> bool:
        """
        Return True for a line to drive at its speed profile.

        Within its curvature limit (2 % slack), clear of cones and planned
        about the lane centre as it is. A line planned again without the
        centre's kinks is driven as tight (``narrow_speed``), as its first
        was: at speed (tried) such lines cost cones at 9 m hairpins and on
        public layouts the first line drove clean.
        """
        return line_rank(line, self.config.line)[0] == 0 and not line.dekinked

    def _steering_kappa(self) -> float:
        """Return the curvature the car is steering (1/m)."""
        return math.tan(self.last_delta) / self.config.cone_drive.wheelbase

    def _line_start(self) -> 'tuple[tuple[float, float, float], Optional[float]]':
        """
        Return where lane mode's next line starts: (x, y, heading), curvature.

        On the last line, at the car's foot point, with the curvature the
        car is steering, when the car is within ``lane_stitch`` m and 20 deg
        of it (its tracking error is then corrected by feedback); else at
        the car (vehicle frame, m, rad, 1/m).
        """
        steering = self._steering_kappa()
        car = (CAR_START, steering)
        if self._line_map is None or self._pose is None or self._line_map[0].shape[0] < 2:
            return car
        pts = to_vehicle(self._line_map[0], self._pose)
        a, b = pts[:-1], pts[1:]
        d = b - a
        ll = np.maximum(np.einsum('ij,ij->i', d, d), 1e-12)
        u = np.clip(-np.einsum('ij,ij->i', a, d) / ll, 0.0, 1.0)
        foot = a + u[:, None] * d
        dist = np.hypot(foot[:, 0], foot[:, 1])
        k = int(np.argmin(dist))
        heading = math.atan2(d[k, 1], d[k, 0])
        if dist[k] > self.config.lane_stitch or abs(heading) > math.radians(20.0):
            return car
        # the curvature the car is steering (not the last line's there: a
        # line that had to bend sharply at its start must not be continued)
        return (float(foot[k, 0]), float(foot[k, 1]), heading), steering

    def _cone_drive(self, t: float, dt: float, xy: np.ndarray,
                    cls: np.ndarray, mid: Optional[MidlineResult],
                    counts: dict) -> PlanOutput:
        cfg = self.config
        colours = cls if cfg.use_colours or counts.get('lane') is not None else None
        res = cone_drive(xy, self.last_delta, cfg.cone_drive, colours)
        relaxed = False
        if res.status == STATUS_STOP and cfg.cone_drive.margin > 0.0:
            res = cone_drive(xy, self.last_delta, self.tight, colours)
            relaxed = True
        if res.status == STATUS_STOP:
            return self.stop(t, 'no_free_range', cone_drive=res, midline=mid,
                             **counts)
        speed = command_speed(False, res.kappa, self.last_speed, dt, cfg.speed,
                              width=res.chosen_width,
                              clear=cfg.cone_drive.lookahead)
        if relaxed:
            speed = min(speed, max(cfg.speed.narrow_speed, cfg.speed.min_speed))
        out = PlanOutput(speed=0.0, yaw_rate=0.0, delta=0.0, kappa=0.0,
                         mode='cone_drive', stop=False,
                         reason=res.rule + ('_no_margin' if relaxed else ''),
                         path=arc_points(res.kappa, cfg.cone_drive.lookahead),
                         cone_drive=res, midline=mid, **counts)
        return self._finish(t, speed, res.delta, out)

    def _midline(self, t: float, dt: float, speed_est: float,
                 xy: np.ndarray, cls: np.ndarray, mid: MidlineResult,
                 counts: dict, crawl: bool = False) -> PlanOutput:
        cfg = self.config
        pp = pure_pursuit(mid.path, speed_est, cfg.pursuit)
        delta = pp.delta
        line = None
        if crawl:
            view = counts['lane']
            follow = view.centre
            if cfg.lane_line:
                side = np.where(cls == CONE_BLUE, 1, np.where(cls == CONE_YELLOW, -1, 0))
                start, start_kappa = self._line_start()
                last = None if self._line_map is None or self._pose is None else \
                    to_vehicle(self._line_map[0], self._pose)
                # the faster the car, the larger its tracking error: more room
                # ahead (not at the car: a cone entering it moves the line ahead)
                change: Dict[str, float] = {}
                if cfg.lane_margin_speed > 0.0:
                    change['far_margin'] = cfg.lane_margin_speed * max(speed_est, 0.0)
                if cfg.lane_error_speed > 0.0:
                    # the tracking error counts at speed (none at a 9 m
                    # hairpin's 2 m/s: it has no room to give)
                    half = 0.5 * cfg.lane_error_speed
                    change['error_share'] = min(max(speed_est / half - 1.0, 0.0), 1.0)
                params = replace(cfg.line, **change) if change else cfg.line
                line = plan_lane_line(view.centre, view.left, view.right, xy, side, params,
                                      closed=view.closed, start=start, start_kappa=start_kappa,
                                      previous=last)
                off_line = start != CAR_START and (
                    math.hypot(start[0], start[1]) > REPLAN_OFFSET
                    or abs(start[2]) > REPLAN_HEADING)
                if off_line and not self._feasible(line):
                    # the line continued from the last one cannot be driven
                    # (the car has fallen behind it in a tight turn: its
                    # heading and offset are no longer the line's): plan
                    # again from where the car is and keep the better one
                    again = plan_lane_line(view.centre, view.left, view.right, xy, side,
                                           params, closed=view.closed, start=CAR_START,
                                           start_kappa=self._steering_kappa(),
                                           previous=last)
                    if line_rank(again, cfg.line) < line_rank(line, cfg.line):
                        line = again
                self._line_map = None
                if line.ok:
                    follow = line.xy
                    if self._pose is not None:
                        self._line_map = (to_map(line.xy, self._pose), line.kappa)
                    mid = MidlineResult(status='ok', path=line.xy[1:], nodes=line.xy[1:],
                                        length=line.length)
            if line is not None and line.ok:
                delta = track_path(follow, speed_est, self.line_pursuit, kappa=line.kappa)[0]
                turn = beyond_steering(line, 1.02 * cfg.line.max_curvature, cfg.lane_commit,
                                       steering=delta)
                if turn:
                    # the line bends tighter than the steering just ahead (a
                    # hairpin at the car's turning limit): full lock now,
                    # the feedback's build-up would cut the far side (never
                    # against the tracking law: a kink at the line's start)
                    delta = turn * cfg.cone_drive.max_steer
            else:
                delta = track_path(follow, speed_est, cfg.pursuit)[0]
        reason = 'lane_pursuit' if crawl else 'pure_pursuit'
        check = None
        # a planned line with its own body check needs no CONEDRIVE check
        planned = line is not None and line.ok
        if planned:
            # tight (a cone nearer than the margin, or beyond the steering): on, slowly
            reason = 'lane_line' if self._feasible(line) else 'lane_line_tight'
        elif cfg.pursuit_check and not (crawl and cfg.lane_check_lookahead <= 0.0):
            colours = cls if cfg.use_colours or counts.get('lane') is not None else None
            normal, tight = (self.lane_check, self.lane_tight) if crawl else \
                (cfg.cone_drive, self.tight)
            free, blocked, n_used, n_drop = steering_ranges(xy, normal, colours)
            if free.shape[0] == 0 and cfg.cone_drive.margin > 0.0:
                free, blocked, n_used, n_drop = steering_ranges(xy, tight, colours)
                reason += '_no_margin'
            if free.shape[0] == 0 and not crawl:
                return self.stop(t, 'no_free_range', midline=mid, pursuit=pp,
                                 **counts)
            # lane mode: the lane's centre is known to be free of cones
            # beyond its boundary; with no free arc (a hairpin tighter than
            # the steering, the arc sweeps past the lane's end) it crawls on
            inside = (free[:, 0] <= delta) & (delta <= free[:, 1])
            if free.shape[0] == 0:
                reason = reason.replace('_no_margin', '') + '_no_free_range'
                free = np.array([[delta, delta]])
            elif not inside.any():
                moved = nearest_free(free, delta)
                if crawl and abs(moved - delta) > LANE_MAX_CORRECTION:
                    # the free arcs lead out of the lane (a hairpin tighter
                    # than the steering): keep to the lane, slowly
                    reason += '_no_free_range'
                else:
                    delta = moved
                    reason = reason.replace('pursuit', 'pursuit_corrected')
            check = ConeDriveResult(
                status='ok', delta=delta,
                kappa=math.tan(delta) / cfg.cone_drive.wheelbase,
                free_ranges=free, blocked_ranges=blocked,
                chosen=int(np.argmin(np.maximum(
                    np.maximum(free[:, 0] - delta, delta - free[:, 1]), 0.0))),
                rule=reason, n_cones=n_used, n_dropped=n_drop)
        sp = cfg.lane_speed if crawl else cfg.speed
        if line is not None and line.ok:
            v_path = line_speed(line, speed_est, sp.max_speed, sp.a_lat_max, sp.decel,
                                cfg.lane_kappa_rate,
                                tight_kappa=cfg.lane_tight_fraction * cfg.line.max_curvature
                                / cfg.line.curvature_fraction,
                                tight_speed=cfg.lane_tight_speed, end_margin=sp.stop_margin,
                                latency=cfg.lane_latency)
        else:
            v_path = profile_speed(mid.path, sp.max_speed, sp.a_lat_max, sp.decel,
                                   stop_at_end=True, end_margin=sp.stop_margin)
        kappa = math.tan(delta) / cfg.cone_drive.wheelbase
        target = min(v_path, target_speed(kappa, sp))
        if reason.endswith('no_margin') or reason.endswith('no_free_range') \
                or reason.endswith('tight'):
            target = min(target, max(sp.narrow_speed, sp.min_speed))
        speed = rate_limit(target, self.last_speed, dt, sp)
        path = np.vstack([np.zeros((1, 2)), mid.path])
        out = PlanOutput(speed=0.0, yaw_rate=0.0, delta=0.0, kappa=0.0,
                         mode='lane' if crawl else 'midline', stop=False, reason=reason,
                         path=path, cone_drive=check, midline=mid, pursuit=pp, line=line,
                         **counts)
        return self._finish(t, speed, delta, out)


def ego_motion(xy: np.ndarray, speed: float, yaw_rate: float, dt: float
               ) -> np.ndarray:
    """
    Return points of the old vehicle frame in the frame ``dt`` s later.

    The car moved on an arc at ``speed`` (m/s) and ``yaw_rate`` (rad/s);
    ``xy`` (N, 2) metres, REP-103.
    """
    dyaw = yaw_rate * dt
    dist = speed * dt
    if abs(dyaw) < 1e-9:
        dx, dy = dist, 0.0
    else:
        radius = dist / dyaw
        dx, dy = radius * math.sin(dyaw), radius * (1.0 - math.cos(dyaw))
    c, s = math.cos(dyaw), math.sin(dyaw)
    rel = xy - np.array([dx, dy])
    return np.stack([c * rel[:, 0] + s * rel[:, 1],
                     -s * rel[:, 0] + c * rel[:, 1]], axis=1)


def nearest_free(free: np.ndarray, delta: float,
                 inset: float = math.radians(0.5)) -> float:
    """
    Return the steering angle in a free range nearest to ``delta`` (rad).

    ``free`` (K, 2) ascending ranges, K >= 1; the result lies at least
    ``inset`` (or half the range width) inside the chosen range.
    """
    half = 0.5 * (free[:, 1] - free[:, 0])
    pad = np.minimum(inset, half)
    lo, hi = free[:, 0] + pad, free[:, 1] - pad
    cand = np.clip(delta, lo, hi)
    return float(cand[np.argmin(np.abs(cand - delta))])
