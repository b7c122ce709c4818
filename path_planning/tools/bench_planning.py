# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark: milliseconds per planning cycle (``python -m path_planning.tools.bench_planning``).

For 10, 100 and 300 cones (two boundaries of a left curve, R = 15 m,
blue left, yellow right, in the vehicle frame) it times

* CONEDRIVE, vectorised (:func:`path_planning.cone_drive.cone_drive`),
  against a naive baseline that loops over cones and steering samples in
  Python (same geometry, same grid, no edge refinement);
* the midline + pure pursuit cycle (Delaunay, graph walk, pursuit, speed
  profile) against a naive baseline that loops over triangles and orders
  the midpoints by a greedy nearest-neighbour walk in Python;
* the whole :class:`path_planning.planner.Planner` cycle in both modes;
* lane mode (``--lane``) as it runs in a lap: the cones of a hard
  generated layout (:func:`hil_bridge.sim.track_gen_hard.hard_layout`)
  within the sensor's 20 m / 270 deg seen from poses along its centre
  line every 0.6 m (6 m/s at 10 Hz), with odometry, so the cone map, the
  boundary walk and the lane line (or, with the line off, the lane
  centre's pursuit) all run; median and 90th percentile over the lap,
  wall (``perf_counter``) and CPU (``process_time``) ms.

Both baselines run in the same process, so the ratio column is fair even on
a loaded machine. Goal: <= 1 ms per cycle for 100 cones on one core.
"""

import argparse
import math
import statistics
import time
from typing import Any, Callable, List, Optional

from hil_bridge.interface.cones import CONE_BLUE
import numpy as np
from path_planning.cone_drive import cone_drive, ConeDriveParams
from path_planning.midline import midline, MidlineParams
from path_planning.planner import Planner
from path_planning.pure_pursuit import profile_speed, pure_pursuit, PursuitParams
from path_planning.tools.closed_loop import default_config
from scipy.spatial import Delaunay


def curve_cones(n: int, radius: float = 15.0, length: float = 30.0
                ) -> 'tuple[np.ndarray, np.ndarray]':
    """Return ``n`` cones on both sides of a left curve (vehicle frame)."""
    half = max(n // 2, 1)
    th = np.linspace(-2.0 / radius, length / radius, half)
    out, cls = [], []
    for offset, colour in ((-1.5, 1), (1.5, 2)):
        r = radius + offset
        out.append(np.stack([r * np.sin(th), radius - r * np.cos(th)], axis=1))
        cls.append(np.full(half, colour, dtype=np.uint8))
    xy = np.concatenate(out)[:n]
    return xy, np.concatenate(cls)[:n]


def naive_cone_drive(cones: np.ndarray, current: float,
                     p: ConeDriveParams) -> float:
    """Return the chosen steering angle, looping in Python (baseline)."""
    w = p.band
    grid = [-p.max_steer + 2 * p.max_steer * i / (p.n_grid - 1)
            for i in range(p.n_grid)]
    blocked = []
    for delta in grid:
        k = math.tan(delta) / p.wheelbase
        hit = False
        for x, y in cones:
            if x < 0.0:
                continue
            ak = abs(k)
            sy = y if k >= 0 else -y
            r2 = x * x + y * y
            if ak * (r2 - w * w - p.front ** 2) > 2 * (w + sy):
                continue
            if ak * (r2 - w * w) < -2 * (w - sy):
                continue
            phi = math.atan2(ak * x, 1 - k * y)
            s_arc = x if ak < 1e-9 else phi / ak
            if 0.0 <= phi and s_arc <= p.lookahead:
                hit = True
                break
        blocked.append(hit)
    ranges: List[List[float]] = []
    previous_free = False
    for delta, hit in zip(grid, blocked):
        if not hit:
            if previous_free:
                ranges[-1][1] = delta
            else:
                ranges.append([delta, delta])
        previous_free = not hit
    if not ranges:
        return 0.0
    best = min(ranges, key=lambda r: max(r[0] - current, current - r[1], 0.0))
    return 0.5 * (best[0] + best[1])


def naive_midline(cones: np.ndarray, cls: np.ndarray,
                  params: MidlineParams) -> np.ndarray:
    """Return ordered midpoints, looping over triangles in Python (baseline)."""
    tri = Delaunay(cones, qhull_options='QJ')  # same call as ours
    mids = {}
    for simplex in tri.simplices:
        for a, b in ((simplex[0], simplex[1]), (simplex[1], simplex[2]),
                     (simplex[2], simplex[0])):
            if (cls[a] == CONE_BLUE) == (cls[b] == CONE_BLUE):
                continue
            d = math.dist(cones[a], cones[b])
            if params.min_width <= d <= params.max_width:
                key = (min(a, b), max(a, b))
                mids[key] = ((cones[a][0] + cones[b][0]) / 2,
                             (cones[a][1] + cones[b][1]) / 2)
    pts = [m for m in mids.values() if m[0] > 0.0]
    path: List[Any] = []
    here = (0.0, 0.0)
    while pts:
        j = min(range(len(pts)), key=lambda i: math.dist(here, pts[i]))
        if math.dist(here, pts[j]) > 5.0:
            break
        here = pts.pop(j)
        path.append(here)
    return np.array(path).reshape(-1, 2)


def timeit(fn: Callable[[], Any], repeat: int) -> float:
    """Return the median milliseconds of ``repeat`` calls of ``fn``."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def lane_lap_times(seed: int, line: bool = True, step: float = 0.6
                   ) -> 'tuple[List[float], List[float]]':
    """
    Return the wall and CPU ms of every lane-mode cycle along hard layout ``seed``.

    Poses every ``step`` m on the centre line (0.1 s apart), the cones
    within 20 m and 270 deg in the vehicle frame; ``line`` False: the lane
    centre's pursuit instead of the planned line.
    """
    from dataclasses import replace
    from hil_bridge.interface.speed_profile import resample_polyline
    from hil_bridge.sim.track_gen_hard import hard_layout
    track = hard_layout(seed).track
    cl = resample_polyline(np.asarray(track.centerline, float), True, step)
    cones = np.asarray(track.cones.xy, float)
    cls = np.asarray(track.cones.class_id, np.uint8)
    cfg = default_config('lane')
    if hasattr(cfg, 'lane_line'):
        cfg = replace(cfg, lane_line=line)
    planner = Planner(cfg)
    tang = np.roll(cl, -1, axis=0) - cl
    yaw = np.arctan2(tang[:, 1], tang[:, 0])
    wall, cpu = [], []
    for i in range(len(cl)):
        c, s = math.cos(yaw[i]), math.sin(yaw[i])
        d = cones - cl[i]
        rel = np.column_stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]])
        seen = (np.hypot(rel[:, 0], rel[:, 1]) <= 20.0) & \
            (np.abs(np.arctan2(rel[:, 1], rel[:, 0])) <= math.radians(135.0))
        w0, c0 = time.perf_counter(), time.process_time()
        planner.plan(0.1 * i, rel[seen], cls[seen], step / 0.1, 0.0,
                     pose=(float(cl[i, 0]), float(cl[i, 1]), float(yaw[i])))
        wall.append((time.perf_counter() - w0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return wall, cpu


def main(argv: Optional[List[str]] = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description='planning cycle benchmark')
    parser.add_argument('--repeat', type=int, default=50)
    parser.add_argument('--lane', type=int, nargs='*', default=None, metavar='SEED',
                        help='time lane mode along these hard layouts instead (default 0 1 2)')
    args = parser.parse_args(argv)
    if args.lane is not None:
        print(f'{"layout":<8} {"lane mode":<12} {"wall ms median / p90":>22} '
              f'{"CPU ms median / p90":>21}')
        for seed in args.lane or [0, 1, 2]:
            for line in (False, True):
                wall, cpu = lane_lap_times(seed, line)
                name = 'line' if line else 'centre'
                print(f'hard_{seed:<3} {name:<12} {np.median(wall):10.2f} / '
                      f'{np.percentile(wall, 90):8.2f} {np.median(cpu):10.2f} / '
                      f'{np.percentile(cpu, 90):8.2f}')
        return
    cd = ConeDriveParams()
    ml = MidlineParams()
    pp = PursuitParams()
    rows = []
    for n in (10, 100, 300):
        xy, cls = curve_cones(n)
        rep = args.repeat
        slow = max(3, rep // 10)

        def mid_cycle() -> None:
            res = midline(xy, cls, ml)
            if res.ok:
                pure_pursuit(res.path, 5.0, pp)
                profile_speed(res.path, 8.0, 6.0, 6.0)

        def naive_mid_cycle() -> None:
            path = naive_midline(xy, cls, ml)
            if path.shape[0]:
                pure_pursuit(path, 5.0, pp)
                profile_speed(path, 8.0, 6.0, 6.0)
        planners = {m: Planner(default_config(m)) for m in
                    ('cone_drive', 'midline')}
        rows.append((n, 'cone_drive', timeit(lambda: cone_drive(xy, 0.0, cd),
                                             rep),
                     timeit(lambda: naive_cone_drive(xy, 0.0, cd), slow)))
        rows.append((n, 'midline+pursuit', timeit(mid_cycle, rep),
                     timeit(naive_mid_cycle, slow)))
        for mode, planner in planners.items():
            rows.append((n, f'Planner({mode})',
                         timeit(lambda: planner.plan(1.0, xy, cls, 5.0), rep),
                         math.nan))
    print(f'{"cones":>5}  {"cycle":<22} {"ms (ours)":>10} '
          f'{"ms (naive)":>11} {"speed-up":>9}')
    for n, name, ours, naive in rows:
        ratio = naive / ours if math.isfinite(naive) else math.nan
        naive_s = f'{naive:11.3f}' if math.isfinite(naive) else f'{"-":>11}'
        ratio_s = f'{ratio:8.1f}x' if math.isfinite(ratio) else f'{"-":>9}'
        print(f'{n:>5}  {name:<22} {ours:10.3f} {naive_s} {ratio_s}')
    print('goal: <= 1 ms per cycle for 100 cones (one core)')


if __name__ == '__main__':
    main()
