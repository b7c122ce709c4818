# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark of the whole built-in simulator: ``python -m hil_bridge.bench.bench_sim``.

Drives the ego around the ``ci_trackdrive`` scenario (pure pursuit on the
true centre line, about 6 m/s) with ``BuiltinBackend.step(dt)`` and prints
one table: steps per second and lidar rays per second

* with no sensors (vehicle model, actors, referee: the baseline),
* with the rig lidar only (``sensor.lidar.ray_cast`` of ``hil_rig``),
* with the lidar and one, then two 1288x964 cameras rendering every step,
* the ``aeb_tutorial`` scenario with its long-range lidar (``car_rig``),

each with its ratio to the baseline measured in the same run. Goals (issue
3): >= 500 steps/s without cameras, >= 30 steps/s with two cameras and the
lidar, on one core. OpenCV is set to one thread.
"""

import argparse
import math
import time
from typing import List, Optional, Tuple

import cv2
from hil_bridge.bridge.backend import VehicleControl
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.rig import load_rig, SensorSpec
from hil_bridge.sim.builtin_backend import BuiltinBackend
from hil_bridge.sim.tracks import resample
import numpy as np
from path_planning.pure_pursuit import curvature_to

GOAL_NO_CAMERA = 500.0
GOAL_TWO_CAMERAS = 30.0


def _every_step(spec: SensorSpec) -> SensorSpec:
    attrs = dict(spec.attributes)
    attrs['sensor_tick'] = 0.0
    return SensorSpec(spec.sensor_id, spec.blueprint, spec.mount, attrs)


def run(scenario: str, rig: List[SensorSpec], steps: int, dt: float
        ) -> Tuple[float, float]:
    """
    Step the backend ``steps`` times; return (steps/s, lidar rays/s).

    Lidar rays are counted as CARLA casts them (``points_per_second * dt``
    per lidar and step), divided by the wall time.
    """
    sc = load_scenario(scenario)
    be = BuiltinBackend(seed=0)
    f = be.setup(sc, rig)
    cl = None if sc.track is None else resample(sc.track.centerline,
                                                sc.track.closed, 0.25)
    wb = be.profile.wheelbase
    rays_per_step = sum(float(s.attributes.get('points_per_second', 0.0))
                        * dt for s in rig
                        if s.blueprint == 'sensor.lidar.ray_cast')
    t0 = time.perf_counter()
    for _ in range(steps):
        steer = 0.0
        if cl is not None:
            p = f.ego.pose
            i = int(np.argmin(np.hypot(cl[:, 0] - p.x, cl[:, 1] - p.y)))
            kappa = curvature_to(cl[(i + 16) % len(cl)], p.x, p.y, p.yaw)  # 4 m ahead
            steer = -math.atan(wb * kappa) / be.profile.max_steer   # CARLA: > 0 right
        thr = 0.3 if f.ego.speed < 6.0 else 0.0
        be.apply_control(VehicleControl(throttle=thr, steer=steer))
        f = be.step(dt)
    wall = time.perf_counter() - t0
    return steps / wall, rays_per_step * steps / wall


def main(argv: Optional[List[str]] = None) -> None:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--steps', type=int, default=400,
                        help='steps per row without cameras')
    parser.add_argument('--camera-steps', type=int, default=30,
                        help='steps per row with cameras')
    parser.add_argument('--dt', type=float, default=0.01,
                        help='step (s); the lidar casts pps*dt rays a step')
    args = parser.parse_args(argv)
    cv2.setNumThreads(1)
    hil = [_every_step(s) for s in load_rig('hil_rig')]
    lidar = [s for s in hil if s.blueprint == 'sensor.lidar.ray_cast']
    cams = [s for s in hil if s.blueprint == 'sensor.camera.rgb']
    car = [s for s in load_rig('car_rig')
           if s.blueprint == 'sensor.lidar.ray_cast']
    rows = [('no sensors (baseline)', 'ci_trackdrive', [], args.steps),
            ('lidar (hil_rig)', 'ci_trackdrive', lidar, args.steps),
            ('lidar + 1 camera 1288x964', 'ci_trackdrive', lidar + cams[:1],
             args.camera_steps),
            ('lidar + 2 cameras 1288x964', 'ci_trackdrive', lidar + cams[:2],
             args.camera_steps),
            ('aeb_tutorial, car_rig lidar', 'aeb_tutorial', car,
             args.steps)]
    print(f'built-in simulator, dt = {args.dt} s, one core '
          '(goals: >= 500 steps/s without cameras, >= 30 with two)')
    print(f'{"configuration":32s} {"steps/s":>10s} {"x baseline":>11s} '
          f'{"lidar rays/s":>13s} {"goal":>6s}')
    base = None
    for label, scenario, rig, steps in rows:
        rate, rays = run(scenario, rig, steps, args.dt)
        base = base or rate
        goal = ''
        if rig and not any(s.blueprint == 'sensor.camera.rgb' for s in rig):
            goal = 'ok' if rate >= GOAL_NO_CAMERA else 'MISS'
        if len([s for s in rig if s.blueprint == 'sensor.camera.rgb']) == 2:
            goal = 'ok' if rate >= GOAL_TWO_CAMERAS else 'MISS'
        print(f'{label:32s} {rate:10.1f} {rate / base:11.3f} '
              f'{rays:13.0f} {goal:>6s}')


if __name__ == '__main__':
    main()
