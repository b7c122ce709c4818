# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
In-process closed loop of the planner on the built-in simulator (no DDS).

Per tick: the ground-truth cones still standing are put into the vehicle
frame (REP-103, rear-axle origin) and cut to the sensor's range and field
of view (emulating perception); every ``plan_period`` seconds the
:class:`~path_planning.planner.Planner` turns them into (speed, yaw rate);
the drive-by-wire emulation
(:class:`hil_bridge.low_level_control.LowLevelController`) turns that into
a CARLA-style control, the kinematic vehicle model
(:class:`hil_bridge.sim.vehicle_model.VehicleModel`) moves the car and the
referee (:class:`hil_bridge.sim.referee.Referee`) counts cone hits,
off-courses and lap times.

``python -m path_planning.closed_loop [--seed N] [--mode M]`` prints one
lap for each mode.
"""

import argparse
from dataclasses import dataclass, field, replace
import math
from typing import Any, Dict, List, Optional

from hil_bridge.config import node_params
from hil_bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.sim.referee import Box, Referee
from hil_bridge.sim.tracks import random_track
from hil_bridge.sim.vehicle_model import VehicleModel
from hil_bridge.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.planner import Planner, PlannerConfig


@dataclass
class LapResult:
    """
    Outcome of one closed-loop run (sim seconds, metres).

    ``status`` the referee's (``finished``, ``DNF``, ``timeout``);
    ``lap_time`` the first lap's time or None; ``modes`` how many cycles
    each planner mode ran; ``max_plan_ms`` the slowest planning cycle.
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
    trace: List[Any] = field(default_factory=list)


def default_config(mode: str, profile: Any = None, **speed: float
                   ) -> PlannerConfig:
    """Return the planner config of ``config/cone_drive_planner.yaml``."""
    values = node_params('cone_drive_planner')
    values['mode'] = mode
    prof = profile if profile is not None else load_vehicle_profile(
        str(values['vehicle']))
    cfg = PlannerConfig.from_mapping(values, prof)
    if speed:
        cfg = replace(cfg, speed=replace(cfg.speed, **speed))
    return cfg


def cones_in_vehicle_frame(cone_xy: np.ndarray, x: float, y: float,
                           yaw: float) -> np.ndarray:
    """Return map cones (N, 2) in the frame of a pose at (x, y, yaw)."""
    c, s = math.cos(yaw), math.sin(yaw)
    rel = cone_xy - np.array([x, y])
    return np.stack([c * rel[:, 0] + s * rel[:, 1],
                     -s * rel[:, 0] + c * rel[:, 1]], axis=1)


def run_lap(config: PlannerConfig, track: Any = None, seed: int = 3,
            dt: float = 0.02, plan_period: float = 0.1,
            timeout: float = 150.0, keep_trace: bool = False) -> LapResult:
    """
    Drive one lap of ``track`` (default ``random_track(seed)``).

    ``dt`` the simulation step and ``plan_period`` the planning period
    (s). Stops at the end of the lap or after ``timeout`` sim seconds.
    """
    import time
    trk = track if track is not None else random_track(
        seed, length=(200.0, 230.0))
    profile = load_vehicle_profile('fs_car')
    model = VehicleModel(profile, trk.car_start)
    llc = LowLevelController(profile, LLCParams())
    cones = trk.cones
    cones.knocked[:] = False
    referee = Referee(trk.mission or 'trackdrive', cones, trk, laps=1,
                      timeout=timeout, wheelbase=profile.wheelbase,
                      track_width=profile.track_width)
    planner = Planner(config)
    t = 0.0
    next_plan = 0.0
    cmd = None
    modes: Dict[str, int] = {}
    max_ms = 0.0
    distance = 0.0
    trace: List[Any] = []
    while not referee.finished:
        st = model.state
        if t >= next_plan - 1e-9:
            up = ~cones.knocked
            rel = cones_in_vehicle_frame(cones.xy[up], st.x, st.y, st.yaw)
            t0 = time.perf_counter()
            out = planner.plan(t, rel, cones.class_id[up], st.v)
            max_ms = max(max_ms, (time.perf_counter() - t0) * 1e3)
            modes[out.mode] = modes.get(out.mode, 0) + 1
            cmd = (out.speed, out.yaw_rate, t)
            next_plan += plan_period
            if keep_trace:
                trace.append((t, st.x, st.y, st.yaw, st.v, out.mode,
                              out.speed, out.delta, out.reason))
        control, _source = llc.update(t, st.v, cmd=cmd)
        cmd = None
        model.apply_control(control)
        new = model.step(dt)
        t += dt
        distance += abs(new.v) * dt
        c, s = math.cos(new.yaw), math.sin(new.yaw)
        off = profile.box_offset
        referee.update(t, Box(new.x + off * c, new.y + off * s, new.yaw,
                              profile.length, profile.width,
                              vx=new.v * c, vy=new.v * s,
                              box_offset=off), new.v)
    r = referee.result
    return LapResult(mode=config.mode, status=r.status, reason=r.reason,
                     lap_time=r.best_lap, cones_hit=r.cones_hit,
                     off_courses=r.off_courses, sim_time=t, distance=distance,
                     modes=modes, max_plan_ms=max_ms, trace=trace)


def main(argv: Optional[List[str]] = None) -> None:
    """Print one lap per mode on a generated track."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--seed', type=int, default=3)
    parser.add_argument('--mode', action='append', default=None)
    args = parser.parse_args(argv)
    track = random_track(args.seed, length=(200.0, 230.0))
    print(f'track random_{args.seed}: {track.length:.1f} m')
    print(f'{"mode":<11} {"status":<9} {"lap s":>7} {"cones":>5} '
          f'{"OC":>3} {"plan ms max":>11}  modes')
    for mode in args.mode or ['cone_drive', 'midline', 'auto']:
        res = run_lap(default_config(mode), track)
        lap = f'{res.lap_time:7.2f}' if res.lap_time is not None else '      -'
        print(f'{mode:<11} {res.status:<9} {lap} {res.cones_hit:>5} '
              f'{res.off_courses:>3} {res.max_plan_ms:>11.2f}  {res.modes}')


if __name__ == '__main__':
    main()
