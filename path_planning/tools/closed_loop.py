# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
In-process closed loop of the planner on the built-in simulator (no DDS).

The backend is :class:`hil_bridge.sim.builtin_backend.BuiltinBackend`
with no sensors. Every ``plan_period`` seconds the ground-truth cones still
standing (``frame.cones``) are put into the vehicle frame (REP-103,
rear-axle origin); the planner itself cuts them to the sensor's range and
field of view (emulating perception) and turns them into (speed, yaw
rate); the drive-by-wire emulation
(:class:`hil_bridge.bridge.low_level_control.LowLevelController`) turns that into
a CARLA-style control; the backend's vehicle model moves the car and its
referee counts cone hits, off-courses and lap times.

``python -m path_planning.tools.closed_loop [--track-seed N] [--mode M]`` prints
one lap for each mode on ``ci_trackdrive``.
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
    slowest and the median planning cycle (wall ms).
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
            dt: float = 0.02, plan_period: float = 0.1,
            dropout: float = 0.0, noise: float = 0.0,
            keep_trace: bool = False, planner: Any = None,
            colours: bool = True, false_positives: float = 0.0,
            miscolour: float = 0.0) -> LapResult:
    """
    Drive ``scenario`` (default ``ci_trackdrive``) on the built-in backend.

    ``seed`` seeds the backend; ``dt`` the simulation step and
    ``plan_period`` the planning period (s). Imperfect perception:
    each cycle every cone is missed with probability ``dropout`` and the
    others get Gaussian position noise of ``noise`` m (seeded by
    ``seed``). Runs until the referee ends the mission (laps done, DNF or
    the scenario's timeout). ``planner`` replaces ``Planner(config)``; one
    with ``uses_pose`` also gets the ego pose in ``map`` (x, y, yaw), as
    odometry gives it. ``colours`` False hands every cone over as
    unknown (a lidar-only detector). ``false_positives``: on average this
    many spurious cones a cycle (Poisson), anywhere within 20 m ahead
    and 8 m either side, blue, yellow or unknown at random;
    ``miscolour``: each detected blue or yellow cone is given the other
    colour with this probability.
    """
    if not (0.0 <= dropout < 1.0 and noise >= 0.0 and false_positives >= 0.0
            and 0.0 <= miscolour <= 1.0):
        raise ValueError('run_lap: dropout must be in [0, 1), noise and false_positives >= 0, '
                         'miscolour in [0, 1]')
    rng = np.random.default_rng(seed)
    import time
    scn = scenario if scenario is not None else load_scenario('ci_trackdrive')
    backend = BuiltinBackend(seed, render_cameras=False)
    frame = backend.setup(scn, [])
    profile = load_vehicle_profile(scn.ego.profile)
    llc = LowLevelController(profile, LLCParams())
    planner = Planner(config) if planner is None else planner
    with_pose = bool(getattr(planner, 'uses_pose', False))
    next_plan = 0.0
    cmd = None
    modes: Dict[str, int] = {}
    plan_ms: List[float] = []
    distance = 0.0
    trace: List[Any] = []
    hit_laps: List[int] = []
    try:
        while backend.result.status == 'running':
            t = frame.sim_time
            ego = frame.ego
            speed = ego.speed
            if t >= next_plan - 1e-9:
                cones = frame.cones
                up = ~cones.knocked
                if dropout > 0.0:
                    up &= rng.random(len(cones)) >= dropout
                rel = cones_in_vehicle_frame(cones.xy[up], ego.pose.x,
                                             ego.pose.y, ego.pose.yaw)
                if noise > 0.0:
                    rel = rel + rng.normal(0.0, noise, rel.shape)
                t0 = time.perf_counter()
                extra = {'pose': (ego.pose.x, ego.pose.y, ego.pose.yaw)} if with_pose \
                    else {}
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
                out = planner.plan(t, rel, cls, speed,
                                   float(ego.angular_velocity[2]), **extra)
                plan_ms.append((time.perf_counter() - t0) * 1e3)
                modes[out.mode] = modes.get(out.mode, 0) + 1
                cmd = (out.speed, out.yaw_rate, t)
                next_plan += plan_period
                if keep_trace:
                    trace.append((t, ego.pose.x, ego.pose.y, ego.pose.yaw,
                                  speed, out.mode, out.speed, out.delta,
                                  out.reason))
            control, _source = llc.update(t, speed, cmd=cmd)
            cmd = None
            backend.apply_control(control)
            frame = backend.step(dt)
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
                     knocked=list(r.knocked_cones))


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
    args = parser.parse_args(argv)
    overrides = {} if args.track_seed is None else {'seed': args.track_seed}
    scn = load_scenario(args.scenario, **overrides)
    length = scn.track.length if scn.track is not None else 0.0
    print(f'scenario {scn.name}: track {length:.1f} m')
    print(f'{"mode":<11} {"status":<9} {"lap s":>7} {"cones":>5} '
          f'{"OC":>3} {"plan ms median/max":>18}  modes')
    for mode in args.mode or ['cone_drive', 'midline', 'auto']:
        res = run_lap(default_config(mode), scn, dropout=args.dropout,
                      noise=args.noise)
        lap = f'{res.lap_time:7.2f}' if res.lap_time is not None else '      -'
        print(f'{mode:<11} {res.status:<9} {lap} {res.cones_hit:>5} '
              f'{res.off_courses:>3} {res.median_plan_ms:>8.2f} /'
              f'{res.max_plan_ms:>8.2f}  {res.modes}')


if __name__ == '__main__':
    main()
