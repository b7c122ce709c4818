# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Lap 1 maps the track, lap 2 and after drive an optimised line (no rclpy).

:class:`RacePlanner` wraps the lap-1 planner (any object with the
:class:`path_planning.planner.Planner` interface) and adds, per cycle:

* mapping (state ``mapping``): the cones that count (the lap-1 planner's
  range and field-of-view filter) go into the cone map in ``map`` (moved
  by the odometry pose; :class:`path_planning.cone_map.ConeMap`, whose
  boundary walk labels each cone left or right), and the pose into a
  :class:`path_planning.track_map.LapRecorder`;
* on loop closure: :func:`path_planning.track_map.build_track_map` checks
  the map; a complete one gets a minimum-curvature line and speed profile
  (:func:`path_planning.raceline.compute_raceline`). Both run in a
  background thread on a copy of the map (1.1 s measured on a loaded core
  here: in the cycle they would hold the commands back that long, and the
  bridge's command watchdog brakes after 0.5 s); the result is taken up by the
  first cycle ``line_delay`` sim seconds after the closure, which waits
  for it if it is not ready (so a lockstep run is the same on any load;
  ``line_delay`` 0 computes it in the closing cycle). Then the state
  becomes ``join``: the lap-1 planner drives on until the car is near the line
  (``rejoin_error``, also :data:`REJOIN_LOOK` metres ahead on its
  heading, and heading within ``rejoin_heading``, for ``rejoin_time``),
  then ``race``; an incomplete one is logged with its reason, the lap-1 planner
  keeps driving and the next loop closure (one lap later, with a fuller
  map) tries again;
* racing (state ``race``): :class:`path_planning.raceline_follower.
  RacelineFollower` steers; when the car leaves the line's corridor, or
  the cones seen disagree with the map (for ``mismatch_cycles`` cycles in
  a row more than ``mismatch_fraction`` of the cones within
  ``mismatch_range`` have no map cone within ``mismatch_radius``), the
  lap-1 planner takes over (state ``fallback``) and the line is rejoined
  once the car has been back near it (``rejoin_error``, heading within
  ``rejoin_heading``) for ``rejoin_time`` seconds.

Every state change and refusal is reported once in :attr:`RacePlanner.events`
(drained by the caller for its log). Frames: detections in the vehicle
frame (REP-103, rear-axle origin), poses and maps in ``map``; SI units.
"""

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
import math
import time
from typing import Any, List, Mapping, Optional, Tuple

import numpy as np
from path_planning.cone_map import ConeMap, ConeMapParams, to_map
from path_planning.planner import PlanOutput
from path_planning.pure_pursuit import PursuitParams
from path_planning.raceline import compute_raceline, Raceline, RacelineParams
from path_planning.raceline_follower import FollowCommand, FollowerParams, RacelineFollower
from path_planning.track_map import build_track_map, LapRecorder, TrackMap, TrackMapParams
from scipy.spatial import cKDTree

STATES = ('mapping', 'join', 'race', 'fallback')
#: The lateral error this far ahead (m, on the current heading) must be
#: within ``rejoin_error`` too: the car is not heading away from the line.
REJOIN_LOOK = 3.0


@dataclass(frozen=True)
class RaceConfig:
    """
    Settings of lap-2+ mode (m, s, rad).

    ``enabled`` False: the lap-1 planner alone. ``map_merge_radius`` /
    ``map_min_observations`` of the cone map; the mismatch and rejoin
    limits as in the module docstring; ``line_delay`` (sim s) from the
    loop closure to taking up the line computed in the background.
    """

    enabled: bool = True
    track: TrackMapParams = TrackMapParams()
    line: RacelineParams = RacelineParams()
    follow: FollowerParams = FollowerParams()
    map_merge_radius: float = 0.7
    map_min_observations: int = 3
    mismatch_range: float = 12.0
    mismatch_radius: float = 1.0
    mismatch_fraction: float = 0.5
    mismatch_min_cones: int = 4
    mismatch_cycles: int = 5
    rejoin_error: float = 0.4
    rejoin_heading: float = math.radians(12.0)
    rejoin_time: float = 0.5
    line_delay: float = 3.0

    def __post_init__(self) -> None:
        """Validate the limits (ValueError naming the field)."""
        for name in ('map_merge_radius', 'mismatch_range', 'mismatch_radius', 'rejoin_error',
                     'rejoin_heading'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'RaceConfig.{name} must be finite and > 0, got {value}')
        if not (0.0 < self.mismatch_fraction <= 1.0):
            raise ValueError('RaceConfig.mismatch_fraction must be in (0, 1]')
        if not (math.isfinite(self.line_delay) and self.line_delay >= 0.0):
            raise ValueError(f'RaceConfig.line_delay must be finite and >= 0, '
                             f'got {self.line_delay}')
        if self.rejoin_time < 0.0 or self.mismatch_cycles < 1 or self.mismatch_min_cones < 1 \
                or self.map_min_observations < 1:
            raise ValueError('RaceConfig: rejoin_time >= 0, mismatch_cycles, '
                             'mismatch_min_cones and map_min_observations >= 1')


#: Node parameters of lap-2+ mode (``config/cone_drive_planner.yaml``).
RACE_KEYS = ('race_enabled', 'race_margin', 'race_lat_grip', 'race_long_grip', 'race_max_speed',
             'race_step', 'race_max_gap', 'race_min_loop_length', 'race_closure_radius',
             'race_ld_min', 'race_ld_max', 'race_ld_gain', 'race_latency', 'race_preview',
             'race_max_lateral_error', 'race_max_heading_error_deg', 'race_mismatch_radius',
             'race_rejoin_time', 'race_line_delay')


def race_config_from_mapping(values: Mapping[str, Any], profile: Any) -> RaceConfig:
    """
    Build a :class:`RaceConfig` from node parameters (keys :data:`RACE_KEYS`).

    Angles in degrees where the key ends in ``_deg``; the pursuit's
    wheelbase and steering limit come from ``profile`` (a
    ``VehicleProfile``); the cone radius and merge settings keep the
    planner's (``cone_radius``, ``cone_memory_radius`` are not reused:
    the map has its own).
    """
    v = values
    missing = [k for k in RACE_KEYS if k not in v]
    if missing:
        raise ValueError(f'race config: missing parameters {missing}')
    track = TrackMapParams(max_gap=float(v['race_max_gap']),
                           min_loop_length=float(v['race_min_loop_length']),
                           closure_radius=float(v['race_closure_radius']))
    line = RacelineParams(step=float(v['race_step']), margin=float(v['race_margin']),
                          cone_radius=float(v.get('cone_radius', 0.114)),
                          lat_grip=float(v['race_lat_grip']),
                          long_grip=float(v['race_long_grip']),
                          max_speed=float(v['race_max_speed']))
    pursuit = PursuitParams(wheelbase=float(profile.wheelbase),
                            max_steer=float(profile.max_steer),
                            ld_min=float(v['race_ld_min']), ld_max=float(v['race_ld_max']),
                            ld_gain=float(v['race_ld_gain']))
    follow = FollowerParams(
        pursuit=pursuit, latency=float(v['race_latency']), preview=float(v['race_preview']),
        max_lateral_error=float(v['race_max_lateral_error']),
        max_heading_error=math.radians(float(v['race_max_heading_error_deg'])))
    return RaceConfig(enabled=bool(v['race_enabled']), track=track, line=line, follow=follow,
                      mismatch_radius=float(v['race_mismatch_radius']),
                      rejoin_time=float(v['race_rejoin_time']),
                      line_delay=float(v['race_line_delay']))


@dataclass
class RaceStatus:
    """
    What lap-2+ mode knows (for logs and tests).

    ``state`` one of :data:`STATES`; the checked ``track`` map and the
    ``line`` (None before); ``attempts`` loop closures tried; ``fallbacks``
    how often the lap-1 planner took over from the line; ``map_ms`` the
    wall time of the last map check and line (in the background thread);
    ``waited_ms`` how long the cycle that took it up waited for it; ``max_error`` the largest
    lateral error (m) while racing once on the line; ``last`` the
    follower's last command.
    """

    state: str = 'mapping'
    track: Optional[TrackMap] = None
    line: Optional[Raceline] = None
    attempts: int = 0
    fallbacks: int = 0
    map_ms: float = 0.0
    waited_ms: float = 0.0
    max_error: float = 0.0
    last: Optional[FollowCommand] = None
    reasons: List[str] = field(default_factory=list)


class RacePlanner:
    """The lap-1 planner plus the whole-track map and the optimised line."""

    uses_pose = True

    def __init__(self, lap1: Any, config: RaceConfig, profile: Any) -> None:
        """Wrap ``lap1`` (a ``Planner``) for the vehicle ``profile``."""
        self.lap1 = lap1
        self.config = config
        self.profile = profile
        self.events: List[str] = []
        self._pool: Optional[ThreadPoolExecutor] = None
        self.reset()

    def reset(self) -> None:
        """Forget the map, the line and the lap-1 planner's state."""
        cfg = self.config
        self.lap1.reset()
        self.cone_map = ConeMap(ConeMapParams(merge_radius=cfg.map_merge_radius,
                                              min_observations=cfg.map_min_observations))
        self.recorder = LapRecorder(cfg.track)
        self.status = RaceStatus()
        self.follower: Optional[RacelineFollower] = None
        self._tree: Optional[cKDTree] = None
        self._mismatch = 0
        self._near_since: Optional[float] = None
        #: the line being computed: (sim time to take it up, its future)
        self._pending: Optional[Tuple[float, Future]] = None

    def stop(self, t: float, reason: str, **extra: Any) -> PlanOutput:
        """Return (and remember) a safe stop, as :meth:`Planner.stop`."""
        return self.lap1.stop(t, reason, **extra)

    def _pose_arg(self, pose: Optional[Tuple[float, float, float]]) -> dict:
        """Return ``{'pose': pose}`` for a lap-1 planner that takes it (its cone map)."""
        return {'pose': pose} if pose is not None and getattr(self.lap1, 'uses_pose', False) \
            else {}

    def drain_events(self) -> List[str]:
        """Return and forget the messages since the last call."""
        out, self.events = self.events, []
        return out

    # ------------------------------------------------------------ mapping
    def _map(self, t: float, xy: np.ndarray, cls: np.ndarray,
             pose: Tuple[float, float, float]) -> None:
        self.cone_map.update(xy, cls, pose)
        if self._pending is not None and t >= self._pending[0]:
            future = self._pending[1]
            self._pending = None
            t0 = time.perf_counter()
            result = future.result()
            self.status.waited_ms = (time.perf_counter() - t0) * 1e3
            self._take_line(*result)
        if self.recorder.update(*pose):
            self.status.attempts += 1
            mc = self.cone_map.cones()
            ok = mc.confirmed
            # copies: the map goes on being updated while the line is computed
            args = (mc.xy[ok], mc.class_id[ok], mc.side[ok], self.recorder.path.copy())
            if self.config.line_delay <= 0.0:
                self._take_line(*self._compute_line(*args))
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix='raceline')
            self._pending = (t + self.config.line_delay,
                             self._pool.submit(self._compute_line, *args))

    def _compute_line(self, xy: np.ndarray, cls: np.ndarray, side: np.ndarray,
                      path: np.ndarray) -> Tuple[TrackMap, Optional[Raceline], str, float,
                                                 np.ndarray]:
        """Check the map and compute the line (any thread; touches no state)."""
        t0 = time.perf_counter()
        track = build_track_map(xy, cls, path, self.config.track, side=side)
        line = None
        reason = track.reason
        if track.ok:
            try:
                line = compute_raceline(track, self.profile, self.config.line)
            except ValueError as exc:
                reason = str(exc)
            if line is not None and line.clearance < 0.0:
                # the car's box along the line reaches into a cone: the map's
                # boundaries pinch the track (a cone mapped on the wrong side,
                # one of a section beside); driving it would hit cones
                reason = (f'the line passes {-line.clearance:.2f} m into a cone (clearance '
                          f'{line.clearance:.2f} m): the map pinches the track')
                line = None
        return track, line, reason, (time.perf_counter() - t0) * 1e3, xy

    def _take_line(self, track: TrackMap, line: Optional[Raceline], reason: str,
                   ms: float, xy: np.ndarray) -> None:
        """Start following ``line``, or log why the map is not usable."""
        st = self.status
        st.track = track
        st.map_ms = ms
        if line is None:
            st.reasons.append(reason)
            self.events.append(f'lap-2+ mode: map not usable, staying in lap-1 mode: {reason}')
            # the next lap starts here: the next closure retries with a fuller map
            self.recorder.reset()
            return
        st.line = line
        st.state = 'join'
        self.follower = RacelineFollower(line, self.config.follow)
        self._tree = cKDTree(xy)
        self.events.append(
            f'lap-2+ mode: map complete ({len(track.left)} left, {len(track.right)} right '
            f'cones, widest gap {max(track.max_gap_left, track.max_gap_right):.1f} m); line '
            f'{line.length:.0f} m, profile lap {line.lap_time:.1f} s, clearance '
            f'{line.clearance:.2f} m, computed in {st.map_ms:.0f} ms (waited '
            f'{st.waited_ms:.0f} ms for it); joining it')

    def _disagrees(self, xy: np.ndarray, pose: Tuple[float, float, float]) -> bool:
        """Return True when the cones seen have disagreed with the map long enough."""
        cfg = self.config
        near = xy[np.hypot(xy[:, 0], xy[:, 1]) <= cfg.mismatch_range]
        bad = False
        if near.shape[0] >= cfg.mismatch_min_cones and self._tree is not None:
            dist, _ = self._tree.query(to_map(near, pose))
            bad = float(np.mean(dist > cfg.mismatch_radius)) > cfg.mismatch_fraction
        self._mismatch = self._mismatch + 1 if bad else 0
        return self._mismatch >= cfg.mismatch_cycles

    # ------------------------------------------------------------- cycle
    def plan(self, t: float, xyz: Any, class_id: Any, measured_speed: Optional[float] = None,
             measured_yaw_rate: Optional[float] = None,
             pose: Optional[Tuple[float, float, float]] = None) -> PlanOutput:
        """
        Run one cycle at sim time ``t`` (s).

        ``xyz`` / ``class_id`` the cones in the vehicle frame, as for
        :meth:`Planner.plan`; ``pose`` (x, y, yaw) the odometry pose in
        ``map`` or None (then the lap-1 planner alone drives and nothing
        is mapped).
        """
        cfg = self.config
        usable = (pose is not None and all(math.isfinite(v) for v in pose)
                  and measured_speed is not None and math.isfinite(measured_speed))
        if not cfg.enabled or not usable:
            return self.lap1.plan(t, xyz, class_id, measured_speed, measured_yaw_rate,
                                  **self._pose_arg(pose))
        pose = (float(pose[0]), float(pose[1]), float(pose[2]))
        xy, cls, _n_drop, _n_out = self.lap1.filter_cones(xyz, class_id)
        st = self.status
        if st.state == 'mapping':
            self._map(t, xy, cls, pose)
            if st.state == 'mapping':
                return self.lap1.plan(t, xyz, class_id, measured_speed, measured_yaw_rate,
                                      **self._pose_arg(pose))
        yaw_rate = measured_yaw_rate if measured_yaw_rate is not None and math.isfinite(
            measured_yaw_rate) else 0.0
        cmd = self.follower.plan(pose[0], pose[1], pose[2], float(measured_speed), yaw_rate)
        st.last = cmd
        if cmd.ok and self._disagrees(xy, pose):
            cmd.ok = False
            cmd.reason = 'the cones seen disagree with the map'
        if st.state in ('join', 'fallback'):
            # near the line and not heading away from it
            ahead = cmd.lateral_error + REJOIN_LOOK * math.sin(cmd.heading_error)
            back = (abs(cmd.lateral_error) <= cfg.rejoin_error and abs(ahead) <= cfg.rejoin_error
                    and abs(cmd.heading_error) <= cfg.rejoin_heading and cmd.ok)
            if not back:
                self._near_since = None
            elif self._near_since is None:
                self._near_since = t
            if back and t - self._near_since >= cfg.rejoin_time:
                self.events.append('lap-2+ mode: on the line' if st.state == 'join'
                                   else 'lap-2+ mode: back on the line')
                st.state = 'race'
                self.follower.reset()
                cmd = self.follower.plan(pose[0], pose[1], pose[2], float(measured_speed),
                                         yaw_rate)
                st.last = cmd
            else:
                return self.lap1.plan(t, xyz, class_id, measured_speed, measured_yaw_rate,
                                      **self._pose_arg(pose))
        if not cmd.ok:
            st.state = 'fallback'
            st.fallbacks += 1
            self._near_since = None
            self.events.append(f'lap-2+ mode: lap-1 planner takes over: {cmd.reason}')
            self.follower.reset()
            return self.lap1.plan(t, xyz, class_id, measured_speed, measured_yaw_rate,
                                  **self._pose_arg(pose))
        if self.follower.join_limit is None:
            st.max_error = max(st.max_error, abs(cmd.lateral_error))
        kappa = math.tan(cmd.delta) / self.lap1.config.cone_drive.wheelbase
        out = PlanOutput(speed=cmd.speed, yaw_rate=cmd.speed * kappa, delta=cmd.delta,
                         kappa=kappa, mode='raceline', stop=False, reason=cmd.reason,
                         path=cmd.path, n_used=int(xy.shape[0]))
        # on a fallback the lap-1 planner's limits continue from this command
        self.lap1.last_speed, self.lap1.last_delta, self.lap1.last_t = cmd.speed, cmd.delta, t
        return out
