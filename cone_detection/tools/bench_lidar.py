# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark the lidar cone detectors: ``python -m cone_detection.tools.bench_lidar``.

Data: scans and clouds of a lap of the built-in simulator's trackdrive
(every 10th frame, 30 mm range noise; the 2D scans through cloud_to_scan
with the default rig, the clouds from the 32-channel lidar of
``evaluate --detector lidar3d``) and synthetic dense scans of a walled
corridor with cones (every beam returns). Prints per-scan / per-cloud time (median and 95th
percentile, one core) of:

* the vectorised scan detector (:func:`cone_detection.lidar_scan.
  detect_cones_scan`) against the naive per-point Python loop of
  Algorithm 1 (:func:`cone_detection.lidar_scan.naive_detect_cones_scan`),
  measured in the same run;
* the 3D detector (cKDTree pairs + connected components) against the same
  pipeline with scikit-learn's DBSCAN (``min_samples=1``) as the
  clustering step.
"""

import argparse
import math
import time
from typing import Callable, List, Sequence, Tuple

from cone_detection.lidar_scan import detect_cones_scan, naive_detect_cones_scan, ScanConeParams
from cone_detection.tools.evaluate import (CloudDetector, EvalConfig, LIDAR3D_ATTRIBUTES,
                                           LIDAR3D_MOUNT, make_detector, PurePursuit, ScanDetector)
from cone_detection.tools.synthetic import synthetic_scan
from hil_bridge.interface.frames import Pose
import numpy as np


def _time(fn: Callable[[], object], repeat: int) -> np.ndarray:
    out = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    return out


def _lap_data(detector: str, frames: int, stride: int) -> List[np.ndarray]:
    """Return sensor-frame lidar clouds of a simulated lap."""
    from hil_bridge.bridge.scenario import load_scenario
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    from hil_bridge.sim.builtin_backend import BuiltinBackend
    cfg = EvalConfig(detector=detector)
    scenario = load_scenario(cfg.scenario, laps=1)
    _, rig = make_detector(cfg, load_rig(scenario.rig))
    backend = BuiltinBackend(seed=0, render_cameras=False,
                             lidar_noise_stddev=0.03)
    profile = load_vehicle_profile(scenario.ego.profile)
    drive = PurePursuit(scenario.track.centerline, profile.wheelbase,
                        profile.max_steer, cfg.speed)
    frame = backend.setup(scenario, rig)
    clouds = []
    k = 0
    try:
        while len(clouds) < frames:
            e = frame.ego
            backend.apply_control(drive.control(e.pose.x, e.pose.y,
                                                e.pose.yaw, e.speed))
            frame = backend.step(cfg.dt)
            k += 1
            if k % stride == 0:
                clouds.append(frame.sensors['lidar'].data.copy())
    finally:
        backend.teardown()
    return clouds


def _row(name: str, t: np.ndarray, base: float) -> str:
    med = float(np.median(t))
    return (f'{name:<44} {1e6 * med:10.1f} {1e6 * np.percentile(t, 95):10.1f}'
            f' {base / med:8.1f}x')


def bench_scan(scans: Sequence[Tuple[np.ndarray, float, float]],
               repeat: int) -> List[str]:
    """Return table rows for the 2D detector and its naive baseline."""
    p = ScanConeParams()
    fast, slow, paper = [], [], []
    paper_p = ScanConeParams(refine=False, reject_surface=False)
    for r, a0, inc in scans:
        fast.append(_time(lambda: detect_cones_scan(r, a0, inc, p), repeat))
        paper.append(_time(lambda: detect_cones_scan(r, a0, inc, paper_p),
                           repeat))
        slow.append(_time(lambda: naive_detect_cones_scan(r, a0, inc, p),
                          max(1, repeat // 10)))
    t_slow = np.concatenate(slow)
    base = float(np.median(t_slow))
    return [_row('naive Python loop (baseline)', t_slow, base),
            _row('vectorised, paper mode (no refine/surface)',
                 np.concatenate(paper), base),
            _row('vectorised, default (refine + surface)',
                 np.concatenate(fast), base)]


def bench_cloud(clouds: Sequence[np.ndarray], repeat: int) -> List[str]:
    """Return table rows for the 3D detector, cKDTree vs DBSCAN clustering."""
    from sklearn.cluster import DBSCAN
    det = CloudDetector(LIDAR3D_MOUNT, dict(LIDAR3D_ATTRIBUTES)).detector
    tol = det.params.cluster_tolerance
    kd, db = [], []

    def with_dbscan(pts: np.ndarray) -> None:
        v = det.to_vehicle(pts[:, :3].astype(np.float64))
        v = v[v[:, 2] > det.params.ground_margin]
        if v.shape[0]:
            DBSCAN(eps=tol, min_samples=1).fit(v[:, :2])

    for c in clouds:
        kd.append(_time(lambda: det.detect(c[:, :3]), repeat))
        db.append(_time(lambda: with_dbscan(c), max(1, repeat // 2)))
    t_db = np.concatenate(db)
    base = float(np.median(t_db))
    return [_row('DBSCAN clustering only (baseline)', t_db, base),
            _row('3D detector (cKDTree + components, full)',
                 np.concatenate(kd), base)]


def main(argv: Sequence[str] = ()) -> None:
    """Print the benchmark tables."""
    ap = argparse.ArgumentParser(description='lidar cone detector timing')
    ap.add_argument('--frames', type=int, default=30)
    ap.add_argument('--repeat', type=int, default=50)
    a = ap.parse_args(list(argv) or None)
    head = f'{"":<44} {"median us":>10} {"p95 us":>10} {"speed-up":>9}'
    det = ScanDetector(Pose(x=1.2, z=0.2))  # the default rig's lidar
    clouds_2d = _lap_data('lidar', a.frames, 10)
    ang = det.scan.scan_angles
    scans = [(det.ranges(c), ang['angle_min'], ang['angle_increment'])
             for c in clouds_2d]
    rng = np.random.default_rng(0)
    dense = []
    walls = np.array([[-3.0, 4.0, 30.0, 4.0], [-3.0, -4.0, 30.0, -4.0],
                      [-3.0, 4.0, -3.0, -4.0]])
    for _ in range(10):
        d = rng.uniform(1.0, 19.0, 20)
        b = rng.uniform(-1.5, 1.5, 20)
        xy = np.column_stack((d * np.cos(b), d * np.sin(b)))
        xy = xy[np.abs(xy[:, 1]) < 3.5]
        dense.append(synthetic_scan(xy, 0.058, walls, range_noise=0.03,
                                    rng=rng, angle_min=ang['angle_min'],
                                    angle_increment=ang['angle_increment'],
                                    n_beams=det.scan.n_bins))
    for name, data in (('track lap (sparse: cones only)', scans),
                       ('corridor with walls (dense: every beam hits)',
                        dense)):
        print(f'2D scan detector, {name}: {len(data)} scans of '
              f'{data[0][0].size} beams '
              f'({math.degrees(ang["angle_increment"]):.2f} deg), '
              f'{int(np.mean([np.isfinite(d[0]).sum() for d in data]))} '
              'valid on average')
        print(head)
        for row in bench_scan(data, a.repeat):
            print(row)
        print()
    clouds = _lap_data('lidar3d', max(5, a.frames // 3), 10)
    print(f'3D cloud detector, {len(clouds)} clouds of about '
          f'{int(np.mean([c.shape[0] for c in clouds]))} points:')
    print(head)
    for row in bench_cloud(clouds, max(5, a.repeat // 5)):
        print(row)


if __name__ == '__main__':
    main()
