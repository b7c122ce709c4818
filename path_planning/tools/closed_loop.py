# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
In-process closed loop of the planner on the built-in simulator (no DDS).

The backend is :class:`hil_bridge.sim.builtin_backend.BuiltinBackend`.
Two kinds of perception (``perception``):

* ``truth`` (the default): no sensors; every ``plan_period`` seconds the
  ground-truth cones still standing (``frame.cones``) are put into the
  vehicle frame (REP-103, rear-axle origin) and the planner itself cuts them
  to the sensor's range and field of view. Optimistic: no occlusion, no
  missed or misplaced cone;
* ``lidar``: the scenario's sensor rig (as the bridge sets it up, cameras
  not rendered) and, on every frame's lidar cloud, the full stack's
  lidar-only perception chain
  (:class:`path_planning.tools.lidar_perception.LidarPerception`:
  cloud_to_scan, the scan cone detector, cone_fusion without vision),
  stepped and planned as the full stack runs in lockstep (see
  :func:`run_lap`).

The planner turns the cones into (speed, yaw rate); the drive-by-wire
emulation (:class:`hil_bridge.bridge.low_level_control.LowLevelController`)
turns that into a CARLA-style control; the backend's vehicle model moves the
car and its referee counts cone hits, off-courses and lap times.

``python -m path_planning.tools.closed_loop [--track-seed N] [--mode M]
[--perception lidar]`` prints one lap for each mode on ``ci_trackdrive``.
"""

import argparse
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.config import node_params
from hil_bridge.interface.frames import se2, transform_xy
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.builtin_backend import BuiltinBackend
import numpy as np
from path_planning.planner import Planner, PlannerConfig

#: the kinds of perception :func:`run_lap` emulates
PERCEPTIONS = ('truth', 'lidar')
#: ``truth`` perception's default simulation step and planning period (s)
TRUTH_DT = 0.02
TRUTH_PLAN_PERIOD = 0.1


@dataclass
class LapResult:
    """
    Outcome of one closed-loop run (sim seconds, metres).

    ``status`` the referee's (``finished``, ``DNF``, ``timeout``);
    ``lap_time`` the best lap's time or None, ``lap_times`` every lap's;
    ``hit_laps`` for each cone hit the lap it happened in (1 = the first,
    counting from the start);
    ``modes`` how many cycles
    each planner mode ran; ``max_plan_ms`` / ``median_plan_ms`` the
    slowest and the median planning cycle (wall ms); ``cones_in`` how many
    cones the planner was handed each cycle and ``max_cone_range`` the
    farthest of them (m from the rear axle); ``perception`` which
    perception ran; ``events`` the referee's events
    (:class:`hil_bridge.bridge.backend.Event`: cone hits, off-courses,
    laps, the mission end).
    """

    mode: str
    status: str
    reason: str
    lap_time: Optional[float]
    cones_hit: int
    off_courses: int
    sim_time: float
    distance: float
    modes: Dict[str, int] = field(default_factory=dict)
    max_plan_ms: float = 0.0
    median_plan_ms: float = 0.0
    trace: List[Any] = field(default_factory=list)
    lap_times: List[float] = field(default_factory=list)
    hit_laps: List[int] = field(default_factory=list)
    knocked: List[int] = field(default_factory=list)
    cones_in: List[int] = field(default_factory=list)
    max_cone_range: float = 0.0
    perception: str = 'truth'
    events: List[Any] = field(default_factory=list)


def default_config(mode: str, profile: Any = None, **speed: float
                   ) -> PlannerConfig:
    """Return the planner config of ``config/cone_drive_planner.yaml``."""
    values = node_params('cone_drive_planner')
    values['mode'] = mode
    prof = profile if profile is not None else load_vehicle_profile(
        str(values['vehicle_profile']))
    cfg = PlannerConfig.from_mapping(values, prof)
    if speed:
        cfg = replace(cfg, speed=replace(cfg.speed, **speed))
    return cfg


def cones_in_vehicle_frame(cone_xy: np.ndarray, x: float, y: float,
                           yaw: float) -> np.ndarray:
    """Return map cones (N, 2) in the frame of a pose at (x, y, yaw)."""
    return transform_xy(np.linalg.inv(se2(x, y, yaw)), cone_xy)


def run_lap(config: PlannerConfig, scenario: Any = None, seed: int = 0,
            dt: Optional[float] = None, plan_period: Optional[float] = None,
            dropout: float = 0.0, noise: float = 0.0,
            keep_trace: bool = False, planner: Any = None,
            colours: bool = True, false_positives: float = 0.0,
            miscolour: float = 0.0, perception: str = 'truth') -> LapResult:
    """
    Drive ``scenario`` (default ``ci_trackdrive``) on the built-in backend.

    ``seed`` seeds the backend; ``dt`` the simulation step and
    ``plan_period`` the planning period (s). Runs until the referee ends
    the mission (laps done, DNF or the scenario's timeout). ``planner``
    replaces ``Planner(config)``; one with ``uses_pose`` also gets the ego
    pose in ``map`` (x, y, yaw), as odometry gives it.

    ``perception`` ``truth`` (default; ``dt`` 0.02 s, ``plan_period``
    0.1 s unless given): the ground-truth cones still standing, optionally
    made imperfect: each cycle every cone is missed with probability
    ``dropout`` and the others get Gaussian position noise of ``noise`` m
    (seeded by ``seed``); ``colours`` False hands every cone over as
    unknown (a lidar-only detector); ``false_positives``: on average this
    many spurious cones a cycle (Poisson), anywhere within 20 m ahead and
    8 m either side, blue, yellow or unknown at random; ``miscolour``: each
    detected blue or yellow cone is given the other colour with this
    probability.

    ``perception`` ``lidar``: the full stack's lidar-only run in lockstep,
    in-process. The backend gets the scenario's rig
    (:func:`hil_bridge.interface.rig.load_rig` of ``scenario.rig``, as the
    bridge loads it; cameras are not rendered, nothing would use them) and
    each frame's lidar cloud goes through
    :class:`path_planning.tools.lidar_perception.LidarPerception` (the
    nodes' own functions and parameter files); the planner gets those
    cones (class unknown) with the frame's stamp and odometry as the
    planner node has them
    (:func:`path_planning.tools.lidar_perception.planner_odometry`: the
    bridge's odometry message of the frame, read as the node reads it).
    Timing is the lockstep's: the bridge ticks ``fixed_delta_seconds`` of
    ``config/hil_bridge.yaml`` (0.05 s) per frame and waits for the
    ``cmd_vel`` stamped with that frame before it runs the low-level
    controller on it and ticks; so the planner plans once per frame
    (``plan_period`` = ``dt`` = that period, frame 0 included) on the
    frame's cones, and its command is the control of the very tick that
    leads to the next frame (not the ``truth`` default of planning every
    0.1 s on 0.02 s steps). The frame period also matters to the lidar: it
    sweeps ``rotation_frequency * horizontal_fov * dt`` degrees per step,
    the whole 270 deg field of view only at 0.05 s (frame 0 has swept
    nothing: the planner's first cycle stops for lack of cones, as in the
    full stack). The low-level controller has the bridge's parameters
    (``config/hil_bridge.yaml``). ``dt`` and ``plan_period`` other than the
    frame period, and the synthetic imperfections above, raise
    ``ValueError``. Not reproduced: the AEB node (it requested no brake in
    the full-stack sweep) and the nodes' stamp policies and queues (in
    lockstep every frame's messages are processed once, in order). A
    track_sweep layout driven so gives the full stack's lockstep run
    (``carla-hil`` suite ``track_sweep``, lidar mode) to the bit: the same
    cone clouds, commands and odometry on every frame.
    """
    if perception not in PERCEPTIONS:
        raise ValueError(f'run_lap: perception must be one of {PERCEPTIONS}, got {perception!r}')
    if not (0.0 <= dropout < 1.0 and noise >= 0.0 and false_positives >= 0.0
            and 0.0 <= miscolour <= 1.0):
        raise ValueError('run_lap: dropout must be in [0, 1), noise and false_positives >= 0, '
                         'miscolour in [0, 1]')
    lidar = perception == 'lidar'
    scn = scenario if scenario is not None else load_scenario('ci_trackdrive')
    profile = load_vehicle_profile(scn.ego.profile)
    rig: List[Any] = []
    perceive: Any = None
    if lidar:
        if dropout or noise or false_positives or miscolour:
            raise ValueError('run_lap: perception lidar takes no dropout, noise, '
                             'false_positives or miscolour')
        from hil_bridge.interface.rig import load_rig
        from path_planning.tools.lidar_perception import LidarPerception, planner_odometry
        bridge = node_params('hil_bridge')
        period = float(bridge['fixed_delta_seconds'])
        dt = period if dt is None else dt
        plan_period = period if plan_period is None else plan_period
        if abs(dt - period) > 1e-9 or abs(plan_period - period) > 1e-9:
            raise ValueError(f'run_lap: perception lidar steps and plans once per bridge frame '
                             f'({period} s), got dt {dt}, plan_period {plan_period}')
        perceive = LidarPerception.from_config()
        rig = load_rig(scn.rig)
        if all(s.sensor_id != perceive.lidar_id for s in rig):
            raise ValueError(f'run_lap: the rig {scn.rig!r} has no sensor '
                             f'{perceive.lidar_id!r}')
        llc = LowLevelController(profile, LLCParams.from_mapping(
            bridge, preset=str(bridge.get('joy_preset', 'keyboard'))))
    else:
        dt = TRUTH_DT if dt is None else dt
        plan_period = TRUTH_PLAN_PERIOD if plan_period is None else plan_period
        llc = LowLevelController(profile, LLCParams())
    rng = np.random.default_rng(seed)
    import time
    backend = BuiltinBackend(seed, render_cameras=False)
    frame = backend.setup(scn, rig)
    planner = Planner(config) if planner is None else planner
    with_pose = bool(getattr(planner, 'uses_pose', False))
    next_plan = 0.0
    cmd = None
    modes: Dict[str, int] = {}
    plan_ms: List[float] = []
    cones_in: List[int] = []
    max_range = 0.0
    distance = 0.0
    trace: List[Any] = []
    hit_laps: List[int] = []
    events: List[Any] = []
    try:
        while backend.result.status == 'running':
            t = frame.sim_time
            ego = frame.ego
            speed = ego.speed
            reading = frame.sensors.get(perceive.lidar_id) if lidar else None
            due = reading is not None if lidar else t >= next_plan - 1e-9
            if due:
                if lidar:
                    rel, cls = perceive(reading.data)
                    t_in, pose, v_in, w_in = planner_odometry(frame)
                else:
                    rel, cls = _truth_cones(frame, rng, dropout, noise, colours,
                                            false_positives, miscolour)
                    t_in, pose = t, (ego.pose.x, ego.pose.y, ego.pose.yaw)
                    v_in, w_in = speed, float(ego.angular_velocity[2])
                t0 = time.perf_counter()
                extra = {'pose': pose} if with_pose else {}
                out = planner.plan(t_in, rel, cls, v_in, w_in, **extra)
                plan_ms.append((time.perf_counter() - t0) * 1e3)
                cones_in.append(int(rel.shape[0]))
                if rel.shape[0]:
                    max_range = max(max_range, float(np.hypot(rel[:, 0], rel[:, 1]).max()))
                modes[out.mode] = modes.get(out.mode, 0) + 1
                cmd = (out.speed, out.yaw_rate, t_in)
                next_plan += plan_period
                if keep_trace:
                    trace.append((t, ego.pose.x, ego.pose.y, ego.pose.yaw,
                                  speed, out.mode, out.speed, out.delta,
                                  out.reason))
            control, _source = llc.update(t, speed, cmd=cmd)
            cmd = None
            backend.apply_control(control)
            frame = backend.step(dt)
            events += frame.events
            distance += abs(frame.ego.speed) * dt
            new_hits = backend.result.cones_hit - len(hit_laps)
            hit_laps += [backend.result.laps + 1] * new_hits
        r = backend.result
    finally:
        backend.teardown()
    return LapResult(mode=config.mode, status=r.status, reason=r.reason,
                     lap_time=r.best_lap, cones_hit=r.cones_hit,
                     off_courses=r.off_courses, sim_time=frame.sim_time,
                     distance=distance, modes=modes,
                     max_plan_ms=max(plan_ms, default=0.0),
                     median_plan_ms=float(np.median(plan_ms)) if plan_ms
                     else 0.0, trace=trace, lap_times=list(r.lap_times), hit_laps=hit_laps,
                     knocked=list(r.knocked_cones), cones_in=cones_in,
                     max_cone_range=max_range, perception=perception, events=events)


def _truth_cones(frame: Any, rng: np.random.Generator, dropout: float, noise: float,
                 colours: bool, false_positives: float, miscolour: float
                 ) -> 'tuple[np.ndarray, np.ndarray]':
    """Return the standing ground-truth cones of ``frame`` in the vehicle frame, made imperfect."""
    ego = frame.ego
    cones = frame.cones
    up = ~cones.knocked
    if dropout > 0.0:
        up &= rng.random(len(cones)) >= dropout
    rel = cones_in_vehicle_frame(cones.xy[up], ego.pose.x, ego.pose.y, ego.pose.yaw)
    if noise > 0.0:
        rel = rel + rng.normal(0.0, noise, rel.shape)
    cls = cones.class_id[up] if colours else np.zeros(int(up.sum()), np.uint8)
    if miscolour > 0.0 and colours:
        flip = (rng.random(len(cls)) < miscolour) & ((cls == 1) | (cls == 2))
        cls = np.where(flip, 3 - cls, cls).astype(np.uint8)
    if false_positives > 0.0:
        k = int(rng.poisson(false_positives))
        fake = np.column_stack([rng.uniform(0.0, 20.0, k), rng.uniform(-8.0, 8.0, k)])
        rel = np.vstack([rel, fake])
        fcls = rng.integers(1, 3, k) if colours else np.zeros(k)
        cls = np.concatenate([cls, fcls.astype(np.uint8)])
    return rel, cls


def main(argv: Optional[List[str]] = None) -> None:
    """Print one lap per mode on a generated track."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--scenario', default='ci_trackdrive')
    parser.add_argument('--track-seed', type=int, default=None,
                        help='override the generated track seed')
    parser.add_argument('--mode', action='append', default=None)
    parser.add_argument('--dropout', type=float, default=0.0,
                        help='probability of missing each cone per cycle')
    parser.add_argument('--noise', type=float, default=0.0,
                        help='cone position noise (m, std dev)')
    parser.add_argument('--perception', default='truth', choices=PERCEPTIONS,
                        help="truth: ground-truth cones; lidar: the full stack's lidar-only "
                        'perception on the simulated lidar, stepped as in lockstep')
    args = parser.parse_args(argv)
    overrides = {} if args.track_seed is None else {'seed': args.track_seed}
    scn = load_scenario(args.scenario, **overrides)
    length = scn.track.length if scn.track is not None else 0.0
    print(f'scenario {scn.name}: track {length:.1f} m')
    print(f'{"mode":<11} {"status":<9} {"lap s":>7} {"cones":>5} '
          f'{"OC":>3} {"plan ms median/max":>18}  modes')
    for mode in args.mode or ['cone_drive', 'midline', 'auto']:
        res = run_lap(default_config(mode), scn, dropout=args.dropout,
                      noise=args.noise, perception=args.perception)
        lap = f'{res.lap_time:7.2f}' if res.lap_time is not None else '      -'
        print(f'{mode:<11} {res.status:<9} {lap} {res.cones_hit:>5} '
              f'{res.off_courses:>3} {res.median_plan_ms:>8.2f} /'
              f'{res.max_plan_ms:>8.2f}  {res.modes}')


if __name__ == '__main__':
    main()
