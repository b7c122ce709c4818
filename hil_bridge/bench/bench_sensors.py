# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark of the built-in sensors: ``python -m hil_bridge.bench.bench_sensors``.

Prints one table: lidar rays per second and milliseconds per step (the
default rig lidar and 32-channel lidars on a closed track of about 300
cones with two vehicle boxes), and camera milliseconds per frame at
1288x964 and 640x480, each against a baseline measured in the same run:

* lidar: a naive cast that loops over the cones in Python (each cone
  tested against every ray with numpy, no culling);
* camera: the same renderer composing the textured ground at full
  resolution (``ground_downscale = 1``) instead of half resolution; a
  plain ``np.copy`` of a 1288x964x3 image is printed as the memory-speed
  reference.

OpenCV runs on one thread (``cv2.setNumThreads(1)``) so the figures are for
one core; ``--frames`` sets the repetitions.
"""

import argparse
import math
import time
from typing import Callable, List, Optional, Tuple

import cv2
from hil_bridge.interface.cones import CONE_BLUE, cone_dimensions, CONE_YELLOW
from hil_bridge.interface.frames import pose_to_matrix
from hil_bridge.interface.rig import LIDAR, load_rig, validate_attributes
from hil_bridge.sim.camera import CameraRenderer
from hil_bridge.sim.geometry import ray_frustum_pairs
from hil_bridge.sim.lidar import RayCastLidar
from hil_bridge.sim.world import WorldGeometry
import numpy as np


def track_world(n_cones: int = 300) -> Tuple[WorldGeometry, np.ndarray]:
    """
    Return a closed track of ``n_cones`` cones and a pose on its centre line.

    The centre line is a wavy loop of about 600 m; blue cones 1.5 m to the
    left, yellow 1.5 m to the right, every ~4 m. Two boxes stand on the
    track ahead. The pose (4x4, ``map``) is on the centre line, heading
    along it.
    """
    n_side = n_cones // 2
    s = np.linspace(0.0, 2 * np.pi, n_side, endpoint=False)
    radius = 95.0 + 12.0 * np.sin(3 * s)
    centre = np.column_stack((radius * np.cos(s), radius * np.sin(s)))
    tangent = np.gradient(centre, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    left = np.column_stack((-tangent[:, 1], tangent[:, 0]))
    xy = np.concatenate((centre + 1.5 * left, centre - 1.5 * left))
    cls = np.concatenate((np.full(n_side, CONE_BLUE),
                          np.full(n_side, CONE_YELLOW))).astype(np.uint8)
    ahead = centre[[6, 12]] + 0.8 * left[[6, 12]]
    yaw = np.arctan2(tangent[[6, 12], 1], tangent[[6, 12], 0])
    world = WorldGeometry(
        cone_xy=xy, cone_class=cls, cone_up=np.ones(xy.shape[0], bool),
        box_center=np.column_stack((ahead, [0.75, 0.75])), box_yaw=yaw,
        box_size=np.array([[4.7, 1.9, 1.5], [4.7, 1.9, 1.5]]),
        box_color=np.array([[40, 40, 170], [160, 160, 160]], np.uint8))
    heading = math.atan2(tangent[0, 1], tangent[0, 0])
    pose = pose_to_matrix(centre[0, 0], centre[0, 1], 0.0, 0.0, 0.0, heading)
    return world, pose


def naive_cast(world: WorldGeometry, origin: np.ndarray,
               dirs: np.ndarray) -> np.ndarray:
    """Return nearest cone hits looping over every cone in Python."""
    best = np.full(dirs.shape[0], np.inf)
    o = np.broadcast_to(origin, dirs.shape)
    rb, rt, h = cone_dimensions(world.cone_class)
    for i in range(world.cone_xy.shape[0]):
        k = dirs.shape[0]
        t = ray_frustum_pairs(o, dirs, np.broadcast_to(world.cone_xy[i],
                                                       (k, 2)),
                              np.full(k, rb[i]), np.full(k, rt[i]),
                              np.full(k, h[i]), world.ground_z)
        best = np.minimum(best, t)
    return best


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Return the median wall time of ``fn`` in milliseconds."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000.0 * float(np.median(times))


def main(argv: Optional[List[str]] = None) -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--frames', type=int, default=20)
    args = parser.parse_args(argv)
    cv2.setNumThreads(1)
    world, vehicle = track_world()
    rng = np.random.default_rng(0)
    rows = []

    rig = load_rig('hil_rig')
    lidar_spec = [s for s in rig if s.blueprint == LIDAR][0]
    lidars = [
        ('rig lidar (1 ch, 21.6k pts/s, 20 m)', lidar_spec.attributes, 0.05),
        ('32 ch CARLA default (56k pts/s, 10 m)',
         validate_attributes(LIDAR, {}), 0.05),
        ('32 ch, 600k pts/s, 50 m',
         validate_attributes(LIDAR, {'points_per_second': 600000,
                                     'range': 50.0}), 0.05),
    ]
    mount = pose_to_matrix(1.2, 0.0, 0.4)
    T = vehicle @ mount
    for name, attrs, dt in lidars:
        lid = RayCastLidar(attrs)
        n_rays = lid.rays_per_channel(dt) * lid.channels
        ms = timed(lambda lid=lid, dt=dt: lid.scan(world, T, dt, rng),
                   args.frames)
        probe = RayCastLidar(attrs)
        dirs = probe.directions(dt).reshape(-1, 3) @ T[:3, :3].T
        base = timed(lambda dirs=dirs: naive_cast(world, T[:3, 3], dirs),
                     max(3, args.frames // 5))
        rows.append((f'lidar {name}', f'{n_rays} rays', ms,
                     f'{n_rays / ms * 1000:,.0f} rays/s', base, base / ms))

    image = np.full((964, 1288, 3), 100, np.uint8)
    copy_ms = timed(lambda: np.copy(image), args.frames)
    cam_mount = pose_to_matrix(0.5, 0.06, 1.0)
    Tc = vehicle @ cam_mount
    rows.append(('np.copy of a 1288x964x3 image (reference)', 'copy',
                 copy_ms, f'{1000 / copy_ms:.0f} copies/s', copy_ms, 1.0))
    warp_ms = {}
    for w, h in ((1288, 964), (640, 480)):
        renderer = CameraRenderer(w, h, 90.0)
        naive = CameraRenderer(w, h, 90.0)
        naive.ground_downscale = 1
        ms = timed(lambda r=renderer: r.render(world, Tc), args.frames)
        warp_ms[w] = timed(lambda r=naive: r.render(world, Tc), args.frames)
        rows.append((f'camera {w}x{h} (track, ~300 cones)', 'frame', ms,
                     f'{1000 / ms:.0f} frames/s', warp_ms[w],
                     warp_ms[w] / ms))
    noisy = CameraRenderer(1288, 964, 90.0, noise_stddev=20.0)
    ms = timed(lambda: noisy.render(world, Tc, rng), args.frames)
    rows.append(('camera 1288x964 + N(0, 20^2) noise', 'frame', ms,
                 f'{1000 / ms:.0f} frames/s', warp_ms[1288],
                 warp_ms[1288] / ms))

    rig_lidar = RayCastLidar(lidar_spec.attributes)
    left = CameraRenderer(1288, 964, 90.0)
    right = CameraRenderer(1288, 964, 90.0)
    Tr = vehicle @ pose_to_matrix(0.5, -0.06, 1.0)

    def step() -> None:
        left.render(world, Tc)
        right.render(world, Tr)
        rig_lidar.scan(world, T, 0.05, rng)
    ms = timed(step, args.frames)
    base = 2 * warp_ms[1288]
    rows.append(('sensors of one step: 2 cams 1288x964 + rig lidar', 'step',
                 ms, f'{1000 / ms:.1f} steps/s (goal >= 30)', base,
                 base / ms))

    print('built-in sensors benchmark (one core, median of '
          f'{args.frames} runs)')
    header = ('case', 'unit', 'ms', 'throughput', 'baseline ms',
              'baseline/ours')
    print(f'{header[0]:52s} {header[1]:>11s} {header[2]:>8s} '
          f'{header[3]:>28s} {header[4]:>11s} {header[5]:>13s}')
    for case, unit, ms, thr, base, ratio in rows:
        print(f'{case:52s} {unit:>11s} {ms:8.2f} {thr:>28s} {base:11.2f} '
              f'{ratio:13.2f}')
    print('baselines: lidar = naive Python loop over all cones (no culling);'
          ' camera = same renderer, ground at full resolution')


if __name__ == '__main__':
    main()
