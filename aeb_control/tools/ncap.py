# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Euro NCAP car-to-car rear scenario matrix on the built-in simulator.

In-process, no DDS: each run builds a :class:`hil_bridge.bridge.scenario.Scenario`,
steps a :class:`hil_bridge.sim.builtin_backend.BuiltinBackend` at the lidar
rate, feeds the AEB pipeline (:class:`aeb_control.aeb_core.AebCore`) and
drives the ego with the bridge's own
:class:`hil_bridge.bridge.low_level_control.LowLevelController` (speed keeping
from ``cmd_vel``, the AEB's ``brake_request`` overriding the throttle,
exactly as the bridge applies it). Strategies: ``ttc_staged`` on the lidar
(perception) and the tutorial's ``fixed_ttc`` on ground truth.

Families (Euro NCAP AEB C2C protocol, REP-103 map, x forward):

* CCRs: target stopped; ego 10-80 km/h in 5 km/h steps; 100% and 50%
  overlap (target shifted to the right by half the ego width);
* CCRm: target at 20 km/h; ego 30-80 km/h;
* CCRb: both 50 km/h, gap 12 m and 40 m, target braking at 2 and 6
  m/s^2 one second into the run;
* false activation (FA): a stopped car in the adjacent lane (3.5 m), a
  car parked on the outside of a 50 m radius curve, a cone-lined Formula
  Student track driven at up to 50 km/h.

Per run: collision, relative impact speed, minimum box distance, TTC at
brake onset (ground truth), the last-point-to-brake TTC at that closing
speed (``t_d + v/(2 a)``), peak deceleration, score. Scoring after Euro
NCAP 2026: avoidance scores 1; an impact at <= 10 km/h relative speed
0.75, <= 20 km/h 0.5, <= 30 km/h 0.25, else 0; for test speeds of 20 km/h
and below only avoidance scores. A false-activation run scores 1 when the
AEB never braked, else 0.

``python -m aeb_control.tools.ncap [--strategy both] [--quick] [--markdown]``.
"""

import argparse
from dataclasses import dataclass, field, replace
import math
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from aeb_control.aeb_core import AebCore, box_outlines, resolve_params
from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.bridge.scenario import ActorSpec, Scenario
from hil_bridge.interface.config import node_params
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.rig import load_rig, SensorSpec
from hil_bridge.interface.vehicle_profile import load_vehicle_profile, VehicleProfile
from hil_bridge.sim.builtin_backend import BuiltinBackend
import numpy as np
from path_planning.pure_pursuit import curvature_to

KMH = 1.0 / 3.6
LANE = 3.5
DT = 0.05
STRATEGIES = ('ttc_staged', 'fixed_ttc')


@dataclass(frozen=True)
class Case:
    """
    One run of the matrix.

    ``family`` CCRs/CCRm/CCRb/FA; speeds km/h; ``overlap`` fraction (1 =
    100%); ``gap`` initial gap bumper to bumper (m, 0 = from the speed;
    for the FA curve: how far into the curve the car is parked, deg, 0 =
    45); ``target_decel`` m/s^2 (CCRb); ``kind`` for FA: adjacent,
    curve, fs_track.
    """

    family: str
    ego_kmh: float
    target_kmh: float = 0.0
    overlap: float = 1.0
    gap: float = 0.0
    target_decel: float = 0.0
    kind: str = ''

    @property
    def name(self) -> str:
        """Return a short label, e.g. ``CCRs 50 km/h 100%``."""
        if self.family == 'FA':
            where = f' at {self.gap:g} deg' if self.gap else ''
            return f'FA {self.kind}{where} {self.ego_kmh:g} km/h'
        if self.family == 'CCRb':
            return (f'CCRb {self.ego_kmh:g} km/h gap {self.gap:g} m '
                    f'-{self.target_decel:g} m/s2')
        label = f'{self.family} {self.ego_kmh:g} km/h'
        if self.family == 'CCRs':
            label += f' {round(self.overlap * 100):d}%'
        return label

    @property
    def false_activation_case(self) -> bool:
        """Return True for the cases where any braking is a failure."""
        return self.family == 'FA'


def matrix(quick: bool = False) -> List[Case]:
    """Return the cases of the full (or quick) matrix."""
    if quick:
        cases = [Case('CCRs', v) for v in (20.0, 30.0, 50.0, 80.0)]
        cases.append(Case('CCRs', 50.0, overlap=0.5))
        cases += [Case('CCRm', v, 20.0) for v in (50.0, 80.0)]
        cases.append(Case('CCRb', 50.0, 50.0, gap=12.0, target_decel=6.0))
        cases += [Case('FA', 50.0, kind='adjacent'),
                  Case('FA', 50.0, kind='curve')]
        return cases
    cases = []
    for overlap in (1.0, 0.5):
        cases += [Case('CCRs', float(v), overlap=overlap)
                  for v in range(10, 81, 5)]
    cases += [Case('CCRm', float(v), 20.0) for v in range(30, 81, 5)]
    cases += [Case('CCRb', 50.0, 50.0, gap=g, target_decel=a)
              for g in (12.0, 40.0) for a in (2.0, 6.0)]
    cases += [Case('FA', 50.0, kind='adjacent'),
              Case('FA', 80.0, kind='adjacent'),
              Case('FA', 50.0, kind='curve'),
              Case('FA', 50.0, gap=25.0, kind='curve'),
              Case('FA', 50.0, kind='fs_track')]
    return cases


@dataclass
class RunResult:
    """What one run measured (SI units unless the name says km/h)."""

    case: Case
    strategy: str
    collision: bool = False
    impact_kmh: float = 0.0
    min_distance: float = math.inf
    onset_ttc: float = math.nan
    last_point_ttc: float = math.nan
    peak_decel: float = 0.0
    braked: bool = False
    warned: bool = False
    sim_time: float = 0.0
    wall_time: float = 0.0
    score: float = 0.0
    notes: List[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Return True when the run met its goal (no crash / no activation)."""
        if self.case.false_activation_case:
            return not self.braked
        return not self.collision


def ncap_score(case: Case, collision: bool, impact_kmh: float,
               braked: bool) -> float:
    """Return the run's score (see the module docstring)."""
    if case.false_activation_case:
        return 0.0 if braked else 1.0
    if not collision:
        return 1.0
    test_speed = case.ego_kmh - case.target_kmh
    if test_speed <= 20.0 + 1e-9:
        return 0.0
    for limit, points in ((10.0, 0.75), (20.0, 0.5), (30.0, 0.25)):
        if impact_kmh <= limit:
            return points
    return 0.0


# ------------------------------------------------------------------ paths
class PathFollower:
    """
    Pure pursuit on a polyline plus a curvature speed limit.

    ``path`` (K, 2) in map (m); ``lookahead`` = ``k_look * v`` clipped to
    [``min_look``, ``max_look``] m; speed limited to
    ``sqrt(lat_accel / |kappa|)``.
    """

    def __init__(self, path: np.ndarray, closed: bool = False,
                 lat_accel: float = 4.0, k_look: float = 0.6,
                 min_look: float = 4.0, max_look: float = 20.0) -> None:
        """Prepare the polyline; see the class docstring."""
        pts = np.asarray(path, dtype=np.float64)
        if closed:
            pts = np.vstack([pts, pts[:1]])
        self.pts = pts
        seg = np.hypot(*np.diff(pts, axis=0).T)
        self.s = np.concatenate([[0.0], np.cumsum(seg)])
        self.closed = closed
        self.lat_accel = lat_accel
        self.k_look = k_look
        self.min_look = min_look
        self.max_look = max_look
        d = np.gradient(pts, axis=0)
        dd = np.gradient(d, axis=0)
        num = np.abs(d[:, 0] * dd[:, 1] - d[:, 1] * dd[:, 0])
        den = np.maximum(np.hypot(d[:, 0], d[:, 1]) ** 3, 1e-9)
        self.kappa = num / den
        self._i = 0

    def _point_at(self, s: float) -> np.ndarray:
        total = self.s[-1]
        s = s % total if self.closed else min(s, total)
        return np.array([np.interp(s, self.s, self.pts[:, 0]),
                         np.interp(s, self.s, self.pts[:, 1])])

    def command(self, x: float, y: float, yaw: float, v: float,
                v_max: float) -> Tuple[float, float]:
        """Return (target speed m/s, yaw rate rad/s) at the given pose."""
        lo = max(self._i - 5, 0)
        hi = min(self._i + 200, len(self.pts))
        d = np.hypot(self.pts[lo:hi, 0] - x, self.pts[lo:hi, 1] - y)
        self._i = lo + int(np.argmin(d))
        s_here = self.s[self._i]
        look = min(max(self.k_look * abs(v), self.min_look), self.max_look)
        kappa_cmd = curvature_to(self._point_at(s_here + look), x, y, yaw)
        ahead = (self.s >= s_here) & (self.s <= s_here + 2.0 * look + 10.0)
        k_ahead = float(self.kappa[ahead].max()) if np.any(ahead) else 0.0
        speed = v_max
        if k_ahead > 1e-6:
            speed = min(speed, math.sqrt(self.lat_accel / k_ahead))
        return speed, max(abs(v), 0.5) * kappa_cmd


def _curve_path(radius: float = 50.0, entry: float = 80.0,
                angle: float = math.pi / 2, exit_len: float = 60.0
                ) -> np.ndarray:
    """Return a straight, a left arc of ``radius`` (m) and a straight."""
    straight = np.stack([np.linspace(-entry, 0.0, 81), np.zeros(81)], 1)
    th = np.linspace(0.0, angle, 120)[1:]
    arc = np.stack([radius * np.sin(th), radius * (1.0 - np.cos(th))], 1)
    end = arc[-1]
    heading = np.array([math.cos(angle), math.sin(angle)])
    tail = end + np.linspace(0.0, exit_len, 61)[1:, None] * heading
    return np.vstack([straight, arc, tail])


# -------------------------------------------------------------- scenario
def _vehicle_spec(role: str, profile: VehicleProfile, x: float, y: float,
                  yaw: float, speed: float,
                  behaviour: Dict[str, Any]) -> ActorSpec:
    return ActorSpec(role_name=role, blueprint=profile.blueprint,
                     pose=Pose(x=x, y=y, yaw=yaw),
                     size=np.array([profile.length, profile.width,
                                    profile.height]),
                     profile=profile.name, initial_speed=speed,
                     behaviour=behaviour)


def build_case(case: Case, ego_profile: VehicleProfile,
               target_profile: VehicleProfile
               ) -> Tuple[Scenario, PathFollower, float]:
    """
    Return (scenario, path follower, timeout s) for a case.

    The ego's rear axle starts at the origin heading +x (except on the FS
    track, which has its own start); for CCR the target's rear bumper is
    ``gap`` m ahead of the ego's front bumper.
    """
    v_e = case.ego_kmh * KMH
    v_t = case.target_kmh * KMH
    front = ego_profile.length - ego_profile.rear_overhang
    actors: List[ActorSpec] = []
    track = None
    ego_pose = Pose()
    path = np.stack([np.linspace(-10.0, 400.0, 411), np.zeros(411)], 1)
    closed = False
    if case.family in ('CCRs', 'CCRm', 'CCRb'):
        gap = case.gap or float(np.clip((v_e - v_t) * 5.0 + 10.0, 25.0,
                                        90.0))
        y = -(1.0 - case.overlap) * ego_profile.width
        x = front + gap + target_profile.rear_overhang
        if case.family == 'CCRs':
            behaviour: Dict[str, Any] = {'type': 'static'}
        elif case.family == 'CCRm':
            behaviour = {'type': 'constant_speed', 'speed': v_t}
        else:
            behaviour = {'type': 'brake', 'speed': v_t, 'at_time': 1.0,
                         'decel': case.target_decel}
        actors.append(_vehicle_spec('target', target_profile, x, y, 0.0,
                                    v_t, behaviour))
        closing = max(v_e - v_t, 1.0)
        timeout = gap / closing + 8.0
        if case.family == 'CCRb':
            timeout = 12.0 + gap / max(v_e, 1.0)
    elif case.kind == 'adjacent':
        x = front + 60.0 + target_profile.rear_overhang
        actors.append(_vehicle_spec('target', target_profile, x, -LANE, 0.0,
                                    0.0, {'type': 'static'}))
        timeout = (x + 15.0) / max(v_e, 1.0)
    elif case.kind == 'curve':
        radius, theta = 50.0, math.radians(case.gap or 45.0)
        path = _curve_path(radius)
        r_out = radius + LANE
        cx, cy = r_out * math.sin(theta), radius - r_out * math.cos(theta)
        actors.append(_vehicle_spec(
            'target', target_profile, cx - target_profile.box_offset *
            math.cos(theta), cy - target_profile.box_offset *
            math.sin(theta), theta, 0.0, {'type': 'parked'}))
        ego_pose = Pose(x=-75.0)
        timeout = (75.0 + radius * math.pi / 2 + 30.0) / max(v_e, 1.0)
    elif case.kind == 'fs_track':
        from hil_bridge.sim.tracks import random_track
        track = random_track(3)
        ego_pose = track.car_start
        path = track.centerline
        closed = track.closed
        timeout = 40.0
    else:
        raise ValueError(f'unknown case {case}')
    ego = ActorSpec(role_name='ego_vehicle', blueprint=ego_profile.blueprint,
                    pose=ego_pose, size=np.array([ego_profile.length,
                                                  ego_profile.width,
                                                  ego_profile.height]),
                    profile=ego_profile.name, initial_speed=v_e)
    scenario = Scenario(name=case.name, mission='aeb', ego=ego,
                        actors=actors, track=track, rig='car_rig.yaml',
                        timeout=timeout + 5.0)
    return scenario, PathFollower(path, closed=closed), timeout


def scenario_dict(scenario: Scenario, description: str = '') -> Dict[str, Any]:
    """
    Return a scenario as the mapping ``config/scenarios/*.yaml`` uses.

    Only scenarios without a track (the CCR and lane cases) can be
    written; ``hil_bridge.bridge.scenario.load_scenario`` reads the result back.
    """
    if scenario.track is not None:
        raise ValueError('scenario_dict: scenarios with a track are not '
                         'exported')

    def actor(a: ActorSpec, ego: bool) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            'role_name': a.role_name, 'blueprint': a.blueprint,
            'profile': a.profile,
            'pose': {k: round(float(getattr(a.pose, k)), 4) + 0.0
                     for k in ('x', 'y', 'z', 'roll', 'pitch', 'yaw')},
            'initial_speed': round(float(a.initial_speed), 4)}
        if not a.profile:
            out['size'] = [float(v) for v in a.size]
        if not ego:
            out['behaviour'] = {k: (round(v, 4) if isinstance(v, float)
                                    else v) for k, v in a.behaviour.items()}
        return out
    data: Dict[str, Any] = {'name': scenario.name, 'mission': scenario.mission,
                            'timeout': round(float(scenario.timeout), 2),
                            'rig': scenario.rig}
    if description:
        data['description'] = description
    data['ego'] = actor(scenario.ego, True)
    data['actors'] = [actor(a, False) for a in scenario.actors]
    return data


#: node parameters of a full-stack NCAP run (the scenario's ``node_params``):
#: the driver robot holds the initial speed, the AEB and the detector
#: use the passenger car's rig and profile
NCAP_NODE_PARAMS: Dict[str, Dict[str, Any]] = {
    'hil_bridge': {'cruise': True},
    'lidar_cone_detector': {'rig': 'car_rig.yaml', 'mode': 'cloud'},
    'aeb_controller': {'rig': 'car_rig.yaml',
                       'vehicle_profile': 'passenger_car'},
    'cone_drive_planner': {'vehicle_profile': 'passenger_car'},
    # car_rig has no rgb_left/rgb_right: fusion must not wait for vision
    'cone_fusion': {'use_vision': False}}


def family_node_params(case: Case) -> Dict[str, Dict[str, Any]]:
    """
    Return the ``node_params`` of a family file.

    The driver robot only drives straight: the curve case gets the rig and
    profile but no cruise (something else must steer the ego round).
    """
    params = {node: dict(values) for node, values in NCAP_NODE_PARAMS.items()}
    if case.kind == 'curve':
        del params['hil_bridge']
    return params


#: The case each ``config/scenarios/aeb_<family>.yaml`` holds.
FAMILY_FILES = {
    'aeb_ccrs': Case('CCRs', 50.0),
    'aeb_ccrm': Case('CCRm', 50.0, 20.0),
    'aeb_ccrb': Case('CCRb', 50.0, 50.0, gap=12.0, target_decel=6.0),
    'aeb_adjacent': Case('FA', 50.0, kind='adjacent'),
    'aeb_curve': Case('FA', 50.0, kind='curve'),
}


def write_family_files(directory: str) -> List[str]:
    """Write one scenario YAML per family into ``directory``; return paths."""
    import os
    import yaml
    profile = load_vehicle_profile('passenger_car')
    paths = []
    for name, case in FAMILY_FILES.items():
        scenario, _follower, _timeout = build_case(case, profile, profile)
        scenario.name = name
        path = os.path.join(directory, f'{name}.yaml')
        header = (f'# Euro NCAP AEB {case.name} (written by python -m '
                  f'aeb_control.tools.ncap --write-scenarios).\n# REP-103 map, '
                  f'metres, m/s; poses are rear axles (config/vehicles).\n')
        if case.kind == 'curve':
            header += ('# The ego must follow the 50 m radius left curve '
                       '(x >= 0) to pass the parked car.\n')
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(header)
            data = scenario_dict(scenario, case.name)
            data['node_params'] = family_node_params(case)
            yaml.safe_dump(data, stream, sort_keys=False,
                           default_flow_style=None)
        paths.append(path)
    return paths


def forward_lidar(rig: Sequence[SensorSpec], hfov: float) -> List[SensorSpec]:
    """
    Return the rig with the lidar cut to a forward ``hfov`` (deg) sector.

    ``points_per_second`` is scaled so the angular resolution stays the
    same; only the corridor ahead matters to the AEB, so this only saves
    ray casting time. Cameras are dropped.
    """
    out = []
    for spec in rig:
        if spec.blueprint != 'sensor.lidar.ray_cast':
            continue
        attrs = dict(spec.attributes)
        full = float(attrs['horizontal_fov'])
        if 0.0 < hfov < full:
            attrs['points_per_second'] = float(
                attrs['points_per_second']) * hfov / full
            attrs['horizontal_fov'] = float(hfov)
        out.append(replace(spec, attributes=attrs))
    return out


def _box_gap(ego_box: np.ndarray, other_box: np.ndarray) -> float:
    """Return the smallest distance (m) between two outline point sets."""
    diff = ego_box[:, None, :] - other_box[None, :, :]
    return float(np.sqrt((diff ** 2).sum(axis=-1).min()))


# -------------------------------------------------------------------- run
def run_case(case: Case, strategy: str, *, lidar_hfov: float = 120.0,
             seed: int = 0, params: Optional[Dict[str, Any]] = None,
             trace: bool = False) -> RunResult:
    """
    Run one case with one strategy and return its measurements.

    ``params`` override ``config/aeb_controller.yaml``; ``lidar_hfov``
    (deg, 0 = the rig's) limits ray casting to the forward sector.
    """
    wall0 = time.perf_counter()
    ego_profile = load_vehicle_profile('passenger_car')
    target_profile = ego_profile
    scenario, follower, timeout = build_case(case, ego_profile,
                                             target_profile)
    values = dict(node_params('aeb_controller'))
    values.update(vehicle_profile='passenger_car', rig='car_rig.yaml')
    values.update(params or {})
    values['strategy'] = strategy
    values['mode'] = 'ground_truth' if strategy == 'fixed_ttc' \
        else 'perception'
    core = AebCore(resolve_params(values))
    rig = forward_lidar(load_rig(str(values.get('rig', 'car_rig.yaml'))),
                        lidar_hfov)
    if strategy == 'fixed_ttc':
        rig = []
    backend = BuiltinBackend(seed=seed, render_cameras=False)
    frame = backend.setup(scenario, rig)
    llc = LowLevelController(ego_profile, LLCParams())
    res = RunResult(case=case, strategy=strategy)
    v_max = case.ego_kmh * KMH
    dead = ego_profile.brake_dead_time + 0.5 * ego_profile.brake_ramp_time
    prev_v = frame.ego.speed
    ego_started = False
    try:
        while frame.sim_time < timeout:
            t = frame.sim_time
            ego = frame.ego
            v = ego.speed
            core.update_odometry(t, v, float(ego.angular_velocity[2]),
                                 (ego.pose.x, ego.pose.y, ego.pose.yaw))
            delta = -frame.applied_control.steer * ego_profile.max_steer
            core.set_steering(t, math.tan(delta) / ego_profile.wheelbase)
            if strategy == 'fixed_ttc':
                c, s = math.cos(ego.pose.yaw), math.sin(ego.pose.yaw)
                centre = [ego.pose.x + ego.box_offset * c,
                          ego.pose.y + ego.box_offset * s]
                decision = _ground_truth(core, t, centre, ego.pose.yaw,
                                         frame.actors)
            else:
                reading = frame.sensors.get('lidar')
                if reading is not None:
                    decision = core.update_cloud(t, reading.data)
                else:
                    decision = core.check_stale(t) or core.last
            v_cmd, w_cmd = follower.command(ego.pose.x, ego.pose.y,
                                            ego.pose.yaw, v, v_max)
            brake = None
            if decision is not None:
                brake = (-decision.decel, t)
                res.warned |= decision.warning
            if decision is not None and decision.decel > 0.0 and \
                    not res.braked and v > 0.5:
                res.braked = True
                ttc, v_rel = _gt_ttc(frame, ego_profile)
                res.onset_ttc = ttc
                if math.isfinite(ttc):
                    res.last_point_ttc = dead + v_rel / (
                        2.0 * ego_profile.max_decel)
            if trace and decision is not None:
                print(f'{t:6.2f} v={v:5.2f} {decision.stage:8s} '
                      f'd={decision.distance:6.2f} '
                      f'ttc={decision.ttc:5.2f} a_td={decision.a_td:5.2f} '
                      f'vo={decision.obstacle_speed:5.2f} '
                      f'ao={decision.obstacle_decel:4.1f} '
                      f'req={decision.decel:4.1f}', file=sys.stderr)
            control, _src = llc.update(t, v, cmd=(v_cmd, w_cmd, t),
                                       brake_request=brake)
            if res.braked:
                # As in the Euro NCAP protocol the driver has released the
                # accelerator once the AEB acted: no more throttle.
                control.throttle = 0.0
            backend.apply_control(control)
            frame = backend.step(DT)
            hit = [e for e in frame.events if e.kind == 'collision']
            if hit:
                res.collision = True
                res.impact_kmh = float(hit[0].data['impact_speed']) / KMH
                res.min_distance = 0.0
                break
            v_new = frame.ego.speed
            res.peak_decel = max(res.peak_decel, (prev_v - v_new) / DT)
            prev_v = v_new
            gap = _min_gap(frame)
            res.min_distance = min(res.min_distance, gap)
            ego_started = ego_started or v_new > 0.5
            if _finished(case, frame, res, ego_started):
                break
    finally:
        backend.teardown()
    res.sim_time = frame.sim_time
    res.wall_time = time.perf_counter() - wall0
    res.score = ncap_score(case, res.collision, res.impact_kmh, res.braked)
    return res


def _ground_truth(core: AebCore, t: float, ego_xy: Sequence[float],
                  ego_yaw: float, actors: Sequence[Any]) -> Any:
    xy = np.array([[a.pose.x + a.box_offset * math.cos(a.pose.yaw),
                    a.pose.y + a.box_offset * math.sin(a.pose.yaw)]
                   for a in actors]).reshape(-1, 2)
    yaw = np.array([a.pose.yaw for a in actors])
    vel = np.array([a.velocity[:2] for a in actors]).reshape(-1, 2)
    size = np.array([a.size for a in actors]).reshape(-1, 3)
    decel = np.array([-a.acceleration[0] for a in actors])
    return core.update_ground_truth(t, ego_xy, ego_yaw, xy, yaw, vel, size,
                                    decel)


def _outlines(frame: Any) -> Tuple[np.ndarray, np.ndarray]:
    states = [frame.ego] + list(frame.actors)
    xy = np.array([[a.pose.x + a.box_offset * math.cos(a.pose.yaw),
                    a.pose.y + a.box_offset * math.sin(a.pose.yaw)]
                   for a in states])
    yaw = np.array([a.pose.yaw for a in states])
    size = np.array([a.size for a in states])
    return box_outlines(xy, yaw, size, step=0.1), xy


def _min_gap(frame: Any) -> float:
    if not frame.actors:
        return math.inf
    outlines, centres = _outlines(frame)
    near = np.hypot(*(centres[1:] - centres[0]).T) < 30.0
    gaps = [_box_gap(outlines[0], outlines[i + 1])
            for i in np.flatnonzero(near)]
    return min(gaps) if gaps else math.inf


def _gt_ttc(frame: Any, profile: VehicleProfile) -> Tuple[float, float]:
    """Return ground-truth (TTC s, closing speed m/s) to the lead actor."""
    ego = frame.ego
    c, s = math.cos(ego.pose.yaw), math.sin(ego.pose.yaw)
    front = profile.length - profile.rear_overhang
    best = (math.inf, 0.0)
    for a in frame.actors:
        rel = np.array([a.pose.x - ego.pose.x, a.pose.y - ego.pose.y])
        along = rel @ np.array([c, s])
        rear = along + (a.box_offset - 0.5 * a.size[0]) * math.cos(
            a.pose.yaw - ego.pose.yaw)
        lateral = abs(rel @ np.array([-s, c]))
        if along <= 0.0 or lateral > 0.5 * (profile.width + a.size[1]):
            continue
        v_rel = ego.speed - float(a.velocity[:2] @ np.array([c, s]))
        gap = rear - front
        ttc = gap / v_rel if v_rel > 1e-6 else math.inf
        if ttc < best[0]:
            best = (ttc, v_rel)
    return best


def _finished(case: Case, frame: Any, res: RunResult,
              started: bool) -> bool:
    """Return True when the Euro NCAP run is over."""
    v = frame.ego.speed
    if res.braked and v < 0.05:
        return True
    if case.family in ('CCRm', 'CCRb') and frame.actors:
        lead = frame.actors[0]
        if res.braked and v <= lead.speed + 1e-3 and lead.speed > 0.1:
            return True
    if case.kind == 'adjacent' and frame.actors:
        return frame.ego.pose.x > frame.actors[0].pose.x + 10.0
    return False


# ----------------------------------------------------------------- report
def _fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not
                         math.isfinite(value)):
        return '-'
    return f'{value:.{digits}f}'


def _cell(r: RunResult) -> List[str]:
    if r.case.false_activation_case:
        outcome = 'braked (false)' if r.braked else 'silent'
    else:
        outcome = f'hit {r.impact_kmh:.1f}' if r.collision else 'avoided'
    return [outcome, _fmt(r.min_distance), _fmt(r.onset_ttc),
            _fmt(r.last_point_ttc), _fmt(r.peak_decel, 1), _fmt(r.score)]


def summary(results: Sequence[RunResult]) -> Dict[str, Any]:
    """Return totals for one strategy's results."""
    crash = [r for r in results if not r.case.false_activation_case]
    fa = [r for r in results if r.case.false_activation_case]
    ratios = [r.onset_ttc / r.last_point_ttc for r in crash
              if r.braked and math.isfinite(r.onset_ttc)
              and r.last_point_ttc > 0]
    return {
        'runs': len(results),
        'collisions': sum(r.collision for r in crash),
        'false_activations': sum(r.braked for r in fa),
        'score': sum(r.score for r in crash),
        'max_score': len(crash),
        'median_onset_ratio': float(np.median(ratios)) if ratios
        else math.nan,
        'wall_time': sum(r.wall_time for r in results),
    }


def table(results: Dict[str, List[RunResult]], markdown: bool = True) -> str:
    """Return the side-by-side table of the strategies' results."""
    names = list(results)
    head = ['case']
    for n in names:
        head += [f'{n}: result', 'min gap m', 'TTC onset s', 'TTC last pt s',
                 'peak a m/s2', 'score']
    rows = []
    count = len(next(iter(results.values())))
    for i in range(count):
        row = [results[names[0]][i].case.name]
        for n in names:
            row += _cell(results[n][i])
        rows.append(row)
    lines = []
    if markdown:
        lines.append('| ' + ' | '.join(head) + ' |')
        lines.append('|' + '---|' * len(head))
        lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        for r in [head] + rows:
            lines.append('  '.join(str(x).ljust(w) for x, w in
                                   zip(r, widths)))
    lines.append('')
    for n in names:
        s = summary(results[n])
        lines.append(
            f'{n}: {s["collisions"]} collisions, {s["false_activations"]} '
            f'false activations, score {s["score"]:.2f} / {s["max_score"]}, '
            f'median TTC at onset / last point to brake = '
            f'{s["median_onset_ratio"]:.2f}, wall time '
            f'{s["wall_time"]:.1f} s' + ('  ' if markdown else ''))
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the matrix and print the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--strategy', default='both',
                    choices=('both',) + STRATEGIES)
    ap.add_argument('--quick', action='store_true',
                    help='a 10-case subset instead of the full matrix')
    ap.add_argument('--markdown', action='store_true',
                    help='print a Markdown table (for README)')
    ap.add_argument('--lidar-hfov', type=float, default=120.0,
                    help='forward lidar sector in deg (0 = the full rig)')
    ap.add_argument('--only', default='',
                    help='run only cases whose name contains this')
    ap.add_argument('--trace', action='store_true')
    ap.add_argument('--write-scenarios', metavar='DIR', default='',
                    help='write one scenario YAML per family and exit')
    args = ap.parse_args(argv)
    if args.write_scenarios:
        for path in write_family_files(args.write_scenarios):
            print(path)
        return 0
    strategies = STRATEGIES if args.strategy == 'both' else (args.strategy,)
    cases = [c for c in matrix(args.quick) if args.only in c.name]
    results: Dict[str, List[RunResult]] = {}
    for strategy in strategies:
        results[strategy] = []
        for case in cases:
            r = run_case(case, strategy, lidar_hfov=args.lidar_hfov,
                         trace=args.trace)
            results[strategy].append(r)
            print(f'[{strategy}] {case.name}: {_cell(r)} '
                  f'({r.wall_time:.1f} s)', file=sys.stderr)
    print(table(results, markdown=args.markdown))
    return 0


if __name__ == '__main__':
    sys.exit(main())
