# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Evaluate a cone detector over simulated laps (in-process, no DDS, no rclpy).

``python -m cone_detection.tools.evaluate --detector lidar|lidar3d|vision|fused
--scenario trackdrive [--laps N] [--range-noise 0.03] [--image-noise 20]
[--seed S] [--stride K] [--max-frames M] [--json]``, or on a recording:
``--recording FILE.mcap [--recorded-cones cones]`` (see
:func:`evaluate_recording`).

The built-in simulator (``hil_bridge.sim.builtin_backend``) drives the ego
car around the track's centre line with a pure-pursuit controller on the
ground-truth pose at a constant target speed; every ``stride``-th frame the
detector runs on that frame's sensor data and its cones (vehicle frame) are
compared with the ground truth.

Definitions (all per evaluated frame, vehicle frame, metres):

* **ground-truth cones**: the track's standing cones (knocked ones are
  ignored), transformed into the vehicle frame with the true ego pose;
* **visible** (the denominator of recall): horizontal distance from the
  sensor to the cone axis <= ``max_range`` (20 m), bearing inside the
  detector's field of view (the scan crop, +-90 deg; the left camera's
  horizontal fov for vision, whose detector uses both cameras of the rig),
  and not occluded: the detector's input has points on
  the cone (ground-truth attribution: within the base radius + 10 cm of
  its axis): for the 2D detector, scan points inside the crop (``fov``),
  at least half the beams a
  lone cone of that width gives at that distance (and at least one); for
  the 3D lidar, cloud points above the ground, at least
  ``MIN_CLOUD_POINTS``; for vision at most
  ``vision_range`` (12 m) and inside the image;
* **matching**: detections and all ground-truth cones are paired by optimal
  assignment with a distance gate of ``gate`` (0.5 m) plus ``gate_per_m``
  times the cone's distance (0.03 for vision, else 0); a
  detection paired with a visible cone is a true positive, paired with a
  non-visible one (partly occluded, just beyond range) it is neither,
  unpaired it is a false positive if it lies inside the evaluated range and
  field of view (else it is ignored);
* **precision** = TP / (TP + FP); **recall** = TP / visible;
* **detection rate** per frame = TP / visible (frames with a visible cone),
  reported as its mean and minimum over frames (the paper's metric);
* **position error**: distance detection - true axis for true positives,
  RMS / mean / 95th percentile per band of true distance 0-5, 5-10, 10-15,
  15-20 m;
* **colour accuracy**: fraction of true positives whose class id equals the
  true class (vision and fused; the lidar detectors report class 0), over
  all true positives, per band, and "near": over those inside the left
  camera's image within ``vision_range``.
"""

import argparse
from dataclasses import dataclass
import json
import math
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from cone_detection.cloud_to_scan import points_to_ranges, ScanParams
from cone_detection.fusion import ConeSet, fuse, FusionParams
from cone_detection.lidar_scan import cone_radii_at, detect_cones_scan, ScanConeParams
from hil_bridge.bridge.backend import Frame, VehicleControl
from hil_bridge.interface.config import node_params
from hil_bridge.interface.frames import Pose, pose_to_matrix, quaternion_yaw, transform_points
from hil_bridge.interface.rig import SensorSpec
import numpy as np
from path_planning.pure_pursuit import curvature_to
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

BANDS = ((0.0, 5.0), (5.0, 10.0), (10.0, 15.0), (15.0, 20.0))
DETECTORS = ('lidar', 'lidar3d', 'vision', 'fused')
MIN_CLOUD_POINTS = 3

#: The multi-channel lidar used for ``--detector lidar3d`` (replaces the
#: rig's lidar): 32 channels +2..-14 deg (0.52 deg apart), 180 deg at 0.2 deg
#: horizontal, 20 m, on the
#: nose at 0.5 m.
LIDAR3D_ATTRIBUTES = {
    'channels': 32, 'range': 20.0, 'points_per_second': 576000,
    'rotation_frequency': 20.0, 'upper_fov': 2.0, 'lower_fov': -14.0,
    'horizontal_fov': 180.0, 'noise_stddev': 0.0,
    'dropoff_general_rate': 0.0, 'dropoff_intensity_limit': 1.0,
    'dropoff_zero_intensity': 0.0, 'atmosphere_attenuation_rate': 0.004,
}
LIDAR3D_MOUNT = Pose(x=1.2, y=0.0, z=0.5)


def sensor_frame_xy(xyz_vehicle: np.ndarray, mount: Pose) -> np.ndarray:
    """Return the x, y of vehicle-frame points (N, 3) in a sensor frame."""
    T = np.linalg.inv(pose_to_matrix(mount))
    pts = np.asarray(xyz_vehicle, dtype=np.float64).reshape(-1, 3)
    return (pts @ T[:3, :3].T + T[:3, 3])[:, :2]


def _find(rig: List[SensorSpec], sensor_id: str) -> Optional[SensorSpec]:
    for spec in rig:
        if spec.sensor_id == sensor_id:
            return spec
    return None


def scan_params_from_config() -> ScanParams:
    """Return the cloud_to_scan parameters of ``config/cloud_to_scan.yaml``."""
    return ScanParams.from_mapping(node_params('pointcloud_to_laserscan',
                                               'cloud_to_scan.yaml'))


class ScanDetector:
    """
    The 2D pipeline: cloud -> cloud_to_scan -> Algorithm 1 -> vehicle frame.

    Returns cone base centres (z = 0) in the vehicle frame, class unknown.
    """

    def __init__(self, mount: Pose, params: Optional[ScanConeParams] = None,
                 scan: Optional[ScanParams] = None) -> None:
        """Use the lidar ``mount`` (vehicle frame) and detector ``params``."""
        self.mount = mount
        self.params = params or ScanConeParams(scan_height=mount.z)
        self.scan = scan or scan_params_from_config()
        self.angles = self.scan.scan_angles

    def ranges(self, cloud_xyz: np.ndarray) -> np.ndarray:
        """Return the scan ranges of a sensor-frame cloud (N, 3+)."""
        return points_to_ranges(cloud_xyz, self.scan)

    def detect_ranges(self, ranges: np.ndarray) -> ConeSet:
        """Detect cones in scan ranges; return them in the vehicle frame."""
        res = detect_cones_scan(ranges, self.angles['angle_min'],
                                self.angles['angle_increment'], self.params)
        xyz = np.column_stack((res.xy, np.zeros(len(res))))
        veh = transform_points(pose_to_matrix(self.mount), np.asarray(xyz, np.float64))
        veh[:, 2] = 0.0
        return ConeSet(veh, np.zeros(len(res), np.uint8), res.confidence)

    def __call__(self, frame: Frame) -> ConeSet:
        """Detect cones in ``frame.sensors['lidar']``."""
        return self.detect_ranges(self.ranges(frame.sensors['lidar'].data))


class CloudDetector:
    """The 3D pipeline (``cone_detection.lidar_cloud``) in the vehicle frame."""

    def __init__(self, mount: Pose, attributes: Dict[str, Any]) -> None:
        """Use the multi-channel lidar's ``mount`` and CARLA attributes."""
        from cone_detection.lidar_cloud import CloudConeDetector
        self.mount = mount
        self.detector = CloudConeDetector.for_lidar(mount, attributes)

    def __call__(self, frame: Frame) -> ConeSet:
        """Detect cones in ``frame.sensors['lidar']``."""
        return self.detector.detect(frame.sensors['lidar'].data[:, :3])


class VisionDetector:
    """Engineer F's ``VisionConeDetector`` on the rig's cameras (stereo)."""

    def __init__(self, specs: List[SensorSpec], jpeg_quality: int = 0,
                 image_reduce: int = 1) -> None:
        """
        Load the shipped model; ``ImportError`` when it is not there.

        ``jpeg_quality`` > 0 sends each image through a JPEG encode and
        decode of that quality, as ``publish_compressed`` does on the
        link; ``image_reduce`` detects on images reduced by that factor
        (reduced JPEG decode, else area averaging), as the node's
        ``image_reduce`` parameter does.
        """
        from cone_detection.vision_pipeline import VisionConeDetector
        if not specs:
            raise ValueError('the rig has no rgb camera')
        if not 0 <= jpeg_quality <= 100:
            raise ValueError(f'jpeg_quality must be 0..100, got {jpeg_quality}')
        self.detector = VisionConeDetector(image_reduce=image_reduce)
        self.specs = specs
        self.T = [pose_to_matrix(s.mount) for s in specs]
        self.jpeg_quality = int(jpeg_quality)
        self.reduce = int(image_reduce)

    def _image(self, data: np.ndarray) -> np.ndarray:
        from hil_bridge.interface.codecs import images
        if self.jpeg_quality <= 0:
            return images.reduce_image(data, self.reduce)
        msg = images.image_to_compressed(data, 0.0, quality=self.jpeg_quality)
        return images.compressed_to_image(msg, self.reduce)

    def __call__(self, frame: Frame) -> ConeSet:
        """Detect cones in the camera images of ``frame`` and merge them."""
        from hil_bridge.interface.codecs import images
        readings = [frame.sensors[s.sensor_id] for s in self.specs]
        xyz, cls, conf = self.detector.detect_stereo(
            [self._image(r.data) for r in readings],
            [images.reduce_intrinsics(r.intrinsics, self.reduce)
             for r in readings], self.T)
        return ConeSet(np.asarray(xyz).reshape(-1, 3), cls, conf)


class FusedDetector:
    """Lidar scan cones fused with vision colours (same frame, same time)."""

    def __init__(self, lidar: ScanDetector, vision: VisionDetector,
                 params: FusionParams = FusionParams()) -> None:
        """Combine two detectors."""
        self.lidar, self.vision, self.params = lidar, vision, params

    def __call__(self, frame: Frame) -> ConeSet:
        """Fuse the two detections of ``frame``."""
        return fuse(self.lidar(frame), self.vision(frame), self.params)


@dataclass
class EvalConfig:
    """
    One evaluation run.

    ``speed`` target (m/s) of the pure-pursuit driver; ``dt`` sim step (s;
    0.05 = one 20 Hz lidar sweep); ``stride`` evaluate every k-th frame;
    ``max_frames`` stop early (0 = the whole laps); ``gate`` matching
    distance (m), plus ``gate_per_m`` times the cone's distance (None: 0.03
    for vision, whose ground projection error grows with range, else 0);
    ``max_range`` (m) and ``fov`` (rad, full width) of the visible set;
    ``vision_range`` (m); ``jpeg_quality`` (0 = raw images) and
    ``image_reduce`` as :class:`VisionDetector`; ``track_seed`` replaces the scenario's track
    generator seed (another generated track); ``paper`` runs the scan
    detector as the paper does (centre point, no surface rule).
    """

    detector: str = 'lidar'
    scenario: str = 'trackdrive'
    laps: int = 1
    track_seed: Optional[int] = None
    range_noise: float = 0.0
    image_noise: float = 0.0
    seed: int = 0
    speed: float = 8.0
    dt: float = 0.05
    stride: int = 1
    max_frames: int = 0
    gate: float = 0.5
    gate_per_m: Optional[float] = None
    paper: bool = False
    max_range: float = 20.0
    fov: float = math.pi
    vision_range: float = 12.0
    jpeg_quality: int = 0
    image_reduce: int = 1


class PurePursuit:
    """Follow a closed centre line on the true pose (rear-axle origin)."""

    def __init__(self, centerline: np.ndarray, wheelbase: float,
                 max_steer: float, speed: float) -> None:
        """Drive ``centerline`` (K, 2) at ``speed`` m/s."""
        self.cl = np.asarray(centerline, dtype=np.float64)
        seg = np.hypot(*np.diff(np.vstack((self.cl, self.cl[:1])), axis=0).T)
        self.s = np.concatenate(([0.0], np.cumsum(seg)))
        self.length = float(self.s[-1])
        self.wheelbase, self.max_steer = wheelbase, max_steer
        self.speed = speed
        self.progress = 0.0
        self._last = None

    def _nearest(self, x: float, y: float) -> int:
        return int(np.argmin(np.hypot(self.cl[:, 0] - x, self.cl[:, 1] - y)))

    def control(self, x: float, y: float, yaw: float,
                v: float) -> VehicleControl:
        """Return throttle/brake/steer (CARLA semantics) for the pose."""
        i = self._nearest(x, y)
        s_i = self.s[i]
        if self._last is not None:
            ds = s_i - self._last
            if ds < -0.5 * self.length:
                ds += self.length
            elif ds > 0.5 * self.length:
                ds -= self.length
            self.progress += ds
        self._last = s_i
        look = max(3.0, 0.6 * abs(v))
        s_t = (s_i + look) % self.length
        j = int(np.searchsorted(self.s, s_t)) % self.cl.shape[0]
        delta = math.atan(self.wheelbase * curvature_to(self.cl[j], x, y, yaw))
        dv = self.speed - v
        return VehicleControl(throttle=min(max(0.4 * dv, 0.0), 1.0),
                              brake=min(max(-0.4 * dv, 0.0), 1.0),
                              steer=min(max(-delta / self.max_steer, -1.0),
                                        1.0))


def _band_stats(err: np.ndarray, dist: np.ndarray, colour: np.ndarray
                ) -> Dict[str, Dict[str, Any]]:
    out = {}
    nan = float('nan')
    for lo, hi in BANDS:
        sel = (dist >= lo) & (dist < hi)
        e = err[sel]
        key = f'{lo:g}-{hi:g}'
        if e.size:
            out[key] = {'n': int(e.size),
                        'rms': float(np.sqrt(np.mean(e * e))),
                        'mean': float(np.mean(e)),
                        'p95': float(np.percentile(e, 95)),
                        'colour': float(colour[sel].mean())}
        else:
            out[key] = {'n': 0, 'rms': nan, 'mean': nan, 'p95': nan,
                        'colour': nan}
    return out


class Scorer:
    """Accumulates matches per frame and computes the metrics."""

    def __init__(self, gate: float, gate_per_m: float = 0.0) -> None:
        """Match within ``gate + gate_per_m * distance`` metres."""
        self.gate = gate
        self.gate_per_m = gate_per_m
        self.tp = self.fp = self.visible = self.in_range = 0
        self.rates: List[float] = []
        self.err: List[np.ndarray] = []
        self.dist: List[np.ndarray] = []
        self.colour: List[np.ndarray] = []
        self.view: List[np.ndarray] = []
        self.frames = 0

    def match(self, det_xy: np.ndarray, truth_xy: np.ndarray,
              dist: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Return (pairs (K, 2), unmatched detections) with per-cone gates."""
        n_d, n_t = det_xy.shape[0], truth_xy.shape[0]
        if n_d == 0 or n_t == 0:
            return np.zeros((0, 2), np.int64), np.arange(n_d)
        cost = cdist(det_xy[:, :2], truth_xy[:, :2])
        gates = self.gate + self.gate_per_m * dist
        big = 1e6
        gated = np.where(cost <= gates[None, :], cost, big)
        rows, cols = linear_sum_assignment(gated)
        ok = gated[rows, cols] < big
        pairs = np.column_stack((rows[ok], cols[ok])).astype(np.int64)
        return pairs, np.setdiff1d(np.arange(n_d), pairs[:, 0])

    def add(self, det: ConeSet, truth_xy: np.ndarray, truth_cls: np.ndarray,
            visible: np.ndarray, dist: np.ndarray, in_range: int = 0,
            det_in_region: Optional[np.ndarray] = None,
            colour_view: Optional[np.ndarray] = None) -> None:
        """
        Score one frame (vehicle frame; ``dist`` from the sensor).

        ``in_range`` counts the cones in range and field of view before the
        occlusion test (reported, not scored); ``det_in_region`` (mask over
        detections) limits false positives to detections inside the
        evaluated range and field of view (default: all count);
        ``colour_view`` (mask over truth) marks cones a camera sees within
        the vision range, for ``colour_accuracy_near``.
        """
        self.frames += 1
        self.in_range += int(in_range)
        pairs, un_d = self.match(det.xyz, truth_xy, dist)
        di, ti = pairs[:, 0], pairs[:, 1]
        good = visible[ti]
        tp = int(good.sum())
        self.tp += tp
        if det_in_region is not None:
            un_d = un_d[np.asarray(det_in_region, bool)[un_d]]
        self.fp += int(un_d.size)
        n_vis = int(visible.sum())
        self.visible += n_vis
        if n_vis:
            self.rates.append(tp / n_vis)
        d, t = di[good], ti[good]
        self.err.append(np.hypot(det.xyz[d, 0] - truth_xy[t, 0],
                                 det.xyz[d, 1] - truth_xy[t, 1]))
        self.dist.append(dist[t])
        self.colour.append(det.class_id[d] == truth_cls[t])
        view = np.ones(truth_xy.shape[0], bool) if colour_view is None \
            else np.asarray(colour_view, bool)
        self.view.append(view[t])

    def result(self) -> Dict[str, Any]:
        """Return the metrics as a plain dict."""
        err = np.concatenate(self.err) if self.err else np.zeros(0)
        dist = np.concatenate(self.dist) if self.dist else np.zeros(0)
        colour = np.concatenate(self.colour) if self.colour else \
            np.zeros(0, bool)
        rates = np.asarray(self.rates)
        near = np.concatenate(self.view) if self.view else \
            np.zeros(0, bool)
        return {
            'frames': self.frames, 'in_range': self.in_range,
            'visible': self.visible, 'tp': self.tp,
            'fp': self.fp,
            'precision': self.tp / max(1, self.tp + self.fp),
            'recall': self.tp / max(1, self.visible),
            'rate_mean': float(rates.mean()) if rates.size else float('nan'),
            'rate_min': float(rates.min()) if rates.size else float('nan'),
            'rms_error': float(np.sqrt(np.mean(err * err))) if err.size
            else float('nan'),
            'bands': _band_stats(err, dist, colour),
            'colour_accuracy': float(colour.mean()) if colour.size
            else float('nan'),
            'colour_accuracy_near': float(colour[near].mean()) if near.any()
            else float('nan'),
        }


def make_detector(cfg: EvalConfig, rig: List[SensorSpec]
                  ) -> Tuple[Callable[[Frame], ConeSet], List[SensorSpec]]:
    """Build the detector of ``cfg`` and the rig the simulator needs."""
    lidar = _find(rig, 'lidar')
    if cfg.detector == 'lidar3d':
        spec = SensorSpec('lidar', 'sensor.lidar.ray_cast', LIDAR3D_MOUNT,
                          dict(LIDAR3D_ATTRIBUTES))
        rig = [s for s in rig if s.sensor_id != 'lidar'] + [spec]
        return CloudDetector(spec.mount, spec.attributes), rig
    if lidar is None:
        raise ValueError('the rig has no sensor "lidar"')
    params = ScanConeParams(scan_height=lidar.mount.z)
    if cfg.paper:
        params = ScanConeParams(scan_height=lidar.mount.z, refine=False,
                                reject_surface=False)
    scan = ScanDetector(lidar.mount, params)
    if cfg.detector == 'lidar':
        return scan, rig
    vision = VisionDetector([s for s in rig
                             if s.blueprint == 'sensor.camera.rgb'],
                            cfg.jpeg_quality, cfg.image_reduce)
    if cfg.detector == 'vision':
        return vision, rig
    return FusedDetector(scan, vision), rig


def evaluate(cfg: EvalConfig, progress: bool = False) -> Dict[str, Any]:
    """
    Run ``cfg`` and return the metrics dict (see the module docstring).

    Keys: frames, visible, tp, fp, precision, recall, rate_mean, rate_min,
    rms_error, bands, colour_accuracy, ms_per_frame, laps_driven, config.
    """
    from hil_bridge.bridge.scenario import load_scenario
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    from hil_bridge.sim.builtin_backend import BuiltinBackend
    if cfg.detector not in DETECTORS:
        raise ValueError(f'unknown detector {cfg.detector!r}: {DETECTORS}')
    if cfg.laps < 1 or cfg.stride < 1 or cfg.dt <= 0.0:
        raise ValueError('laps and stride must be >= 1 and dt > 0')
    overrides: Dict[str, Any] = {'laps': cfg.laps}
    if cfg.track_seed is not None:
        overrides['seed'] = int(cfg.track_seed)
    scenario = load_scenario(cfg.scenario, **overrides)
    if scenario.track is None:
        raise ValueError(f'scenario {cfg.scenario!r} has no track')
    detector, rig = make_detector(cfg, load_rig(scenario.rig))
    lidar_spec = _find(rig, 'lidar')
    cam_spec = _find(rig, 'rgb_left')
    uses_camera = cfg.detector in ('vision', 'fused')
    backend = BuiltinBackend(seed=cfg.seed, render_cameras=uses_camera,
                             camera_noise_stddev=cfg.image_noise,
                             lidar_noise_stddev=cfg.range_noise)
    profile = load_vehicle_profile(scenario.ego.profile)
    driver = PurePursuit(scenario.track.centerline, profile.wheelbase,
                         profile.max_steer, cfg.speed)
    scan = scan_params_from_config()
    per_m = cfg.gate_per_m
    if per_m is None:
        per_m = 0.03 if cfg.detector == 'vision' else 0.0
    scorer = Scorer(cfg.gate, per_m)
    spent = 0.0
    goal = cfg.laps * driver.length
    frame = backend.setup(scenario, rig)
    k = 0
    try:
        while driver.progress < goal:
            ego = frame.ego
            backend.apply_control(driver.control(ego.pose.x, ego.pose.y,
                                                 ego.pose.yaw, ego.speed))
            frame = backend.step(cfg.dt)
            k += 1
            if frame.sim_time > scenario.timeout:
                break
            if k % cfg.stride:
                continue
            t0 = time.perf_counter()
            det = detector(frame)
            spent += time.perf_counter() - t0
            _score_frame(cfg, frame, det, scorer, lidar_spec, cam_spec, scan)
            if progress and scorer.frames % 200 == 0:
                print(f'  frame {k}, {driver.progress:.0f}/{goal:.0f} m',
                      file=sys.stderr)
            if cfg.max_frames and scorer.frames >= cfg.max_frames:
                break
    finally:
        backend.teardown()
    out = scorer.result()
    out['ms_per_frame'] = 1e3 * spent / max(1, scorer.frames)
    out['laps_driven'] = driver.progress / driver.length
    out['config'] = dict(vars(cfg))
    return out


def _score_frame(cfg: EvalConfig, frame: Frame, det: ConeSet, scorer: Scorer,
                 lidar_spec: Optional[SensorSpec],
                 cam_spec: Optional[SensorSpec], scan: ScanParams) -> None:
    """Compute the visible set of one frame and score the detections."""
    cones = frame.cones
    up = ~np.asarray(cones.knocked, dtype=bool)
    xy_map = np.asarray(cones.xy, dtype=np.float64)[up]
    cls = np.asarray(cones.class_id, dtype=np.uint8)[up]
    T_map_vehicle = pose_to_matrix(frame.ego.pose)
    T_vehicle_map = np.linalg.inv(T_map_vehicle)
    pts = np.column_stack((xy_map, np.zeros(len(xy_map)),
                           np.ones(len(xy_map))))
    truth_v = (pts @ T_vehicle_map.T)[:, :3]
    truth_v[:, 2] = 0.0
    sensor = cam_spec if cfg.detector == 'vision' else lidar_spec
    T_vehicle_sensor = pose_to_matrix(sensor.mount)
    T_sensor_map = np.linalg.inv(T_vehicle_sensor) @ T_vehicle_map
    truth_s = (pts @ T_sensor_map.T)[:, :2]
    dist = np.hypot(truth_s[:, 0], truth_s[:, 1])
    bearing = np.arctan2(truth_s[:, 1], truth_s[:, 0])
    visible = (dist <= cfg.max_range) & (np.abs(bearing) <= 0.5 * cfg.fov)
    in_range = int(visible.sum())
    if cfg.detector in ('lidar', 'fused', 'lidar3d'):
        cloud = frame.sensors['lidar'].data
        if cfg.detector == 'lidar3d':
            above = cloud[:, 2] > 0.02 - sensor.mount.z
            hits = _points_on_cones(cloud[above, :2], truth_s, cls)
            visible &= hits >= MIN_CLOUD_POINTS
        else:
            a = scan.scan_angles
            ranges = points_to_ranges(cloud, scan).astype(np.float64)
            ang = a['angle_min'] + a['angle_increment'] * np.arange(
                ranges.size)
            ok = np.isfinite(ranges) & (np.abs(ang) <= 0.5 * cfg.fov)
            xy = np.column_stack((ranges[ok] * np.cos(ang[ok]),
                                  ranges[ok] * np.sin(ang[ok])))
            hits = _points_on_cones(xy, truth_s, cls)
            radii = cone_radii_at(sensor.mount.z, cls)
            inc = scan.angle_increment
            alone = 2.0 * np.arcsin(np.clip(
                radii / np.maximum(dist, 1e-3), 0.0, 1.0)) / inc
            visible &= hits >= np.maximum(1.0, 0.5 * alone)
    if cfg.detector in ('vision', 'fused'):
        fov = math.radians(float(cam_spec.attributes.get('fov', 90.0)))
        cam_s = (pts @ (np.linalg.inv(pose_to_matrix(cam_spec.mount))
                        @ T_vehicle_map).T)[:, :2]
        cam_d = np.hypot(cam_s[:, 0], cam_s[:, 1])
        cam_b = np.abs(np.arctan2(cam_s[:, 1], cam_s[:, 0]))
        in_image = (cam_s[:, 0] > 0.5) & (cam_b <= 0.5 * fov - 0.02)
        colour_view = in_image & (cam_d <= cfg.vision_range)
        if cfg.detector == 'vision':
            visible &= colour_view
    else:
        colour_view = None
    det_s = sensor_frame_xy(det.xyz, sensor.mount)
    det_d = np.hypot(det_s[:, 0], det_s[:, 1])
    det_b = np.abs(np.arctan2(det_s[:, 1], det_s[:, 0]))
    if cfg.detector == 'vision':
        region = (det_d <= cfg.vision_range) & (det_b <= 0.5 * fov)
    else:
        region = (det_d <= cfg.max_range) & (det_b <= 0.5 * cfg.fov)
    scorer.add(det, truth_v, cls, visible, dist, in_range, region,
               colour_view)


def _points_on_cones(xy: np.ndarray, truth_s: np.ndarray,
                     cls: np.ndarray) -> np.ndarray:
    """
    Count the sensor points that hit each cone (ground-truth attribution).

    ``xy`` (N, 2) sensor-frame points (scan points, or cloud points above
    the ground); a point within a cone's base radius + 10 cm of its axis
    counts for the nearest cone. Cones without hits were occluded or fell
    between rays (or, for a scan, lost to a nearer point in the same bin):
    this is what "visible" means for the lidar detectors.
    """
    from scipy.spatial import cKDTree
    if xy.shape[0] == 0 or truth_s.shape[0] == 0:
        return np.zeros(truth_s.shape[0], dtype=np.int64)
    base = cone_radii_at(0.0, cls)
    d, j = cKDTree(truth_s).query(xy, distance_upper_bound=0.4)
    hit = np.isfinite(d)
    hit[hit] = d[hit] <= base[j[hit]] + 0.1
    return np.bincount(j[hit], minlength=truth_s.shape[0])


def evaluate_recording(path: str, cfg: EvalConfig,
                       role: str = 'ego_vehicle',
                       rig_name: str = 'hil_rig.yaml',
                       recorded: str = '') -> Dict[str, Any]:
    """
    Score a detector on an MCAP recording (``carla-hil`` recorder format).

    The recording needs the contract topics ``odometry`` (ego pose in
    ``map``), ``ground_truth_cones`` (latched, ``map``) and, for
    ``cfg.detector`` lidar or lidar3d, ``lidar`` (the raw cloud, re-run
    through cloud_to_scan and the detector here with the rig's mount pose).
    With ``recorded`` set to a contract key (``cones``, ``cones_lidar``,
    ``cones_vision``) the recorded detections on that topic are scored
    instead, visibility then follows ``cfg.detector``'s definition from the
    recorded cloud. Ego poses are interpolated at each message's stamp; the
    ground is assumed flat (x, y, yaw). Messages are decoded with
    ``mcap_ros2`` (no rclpy). Returns the same dict as :func:`evaluate`.
    """
    from cone_detection.fusion import PoseHistory
    from hil_bridge.bridge.backend import ActorState, SensorReading
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import clouds, stamps
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.interface.track import ConeArray
    from hil_bridge.tools.mcap_io import iter_raw
    from mcap_ros2.decoder import DecoderFactory
    if cfg.detector not in ('lidar', 'lidar3d'):
        raise ValueError('recordings: detector must be lidar or lidar3d '
                         '(vision needs the camera rig; use recorded=...)')
    names = {key: contract.topic(key).resolve(role)
             for key in ('lidar', 'odometry', 'ground_truth_cones')}
    if recorded:
        names['recorded'] = contract.topic(recorded).resolve(role)
    factory = DecoderFactory()
    decoders: Dict[int, Any] = {}

    def messages(wanted: List[str]):
        for schema, channel, message in iter_raw(path):
            if channel.topic not in wanted:
                continue
            if channel.id not in decoders:
                decoders[channel.id] = factory.decoder_for(
                    channel.message_encoding, schema)
            yield channel.topic, decoders[channel.id](message.data)

    poses = PoseHistory(horizon=float('inf'), slack=0.05)
    truth = None
    for topic, msg in messages([names['odometry'],
                                names['ground_truth_cones']]):
        if topic == names['odometry']:
            p = msg.pose.pose
            poses.add(stamps.sec_from_stamp(msg.header.stamp), p.position.x,
                      p.position.y, quaternion_yaw(p.orientation))
        else:
            truth = clouds.cloud_to_cones(msg)
    if truth is None or len(poses) == 0:
        raise ValueError(f'{path}: needs {names["odometry"]} and '
                         f'{names["ground_truth_cones"]}')
    detector, rig = make_detector(cfg, load_rig(rig_name))
    lidar_spec = _find(rig, 'lidar')
    scan = scan_params_from_config()
    per_m = cfg.gate_per_m if cfg.gate_per_m is not None else 0.0
    scorer = Scorer(cfg.gate, per_m)
    cones = ConeArray(xy=truth[0][:, :2].astype(np.float64),
                      class_id=truth[1],
                      knocked=np.zeros(truth[0].shape[0], dtype=bool))
    spent = 0.0
    rec: Dict[float, ConeSet] = {}
    if recorded:
        for _, msg in messages([names['recorded']]):
            xyz, cls, conf = clouds.cloud_to_cones(msg)
            rec[round(stamps.sec_from_stamp(msg.header.stamp), 6)] = \
                ConeSet(xyz, cls, conf)
    k = 0
    for _, msg in messages([names['lidar']]):
        t = stamps.sec_from_stamp(msg.header.stamp)
        pose = poses.at(t)
        if pose is None:
            continue
        k += 1
        if k % cfg.stride:
            continue
        ego = ActorState(role, Pose(x=pose[0], y=pose[1], yaw=pose[2]))
        cloud = clouds.cloud_to_xyzi(msg)
        frame = Frame(frame=k, sim_time=t, ego=ego, cones=cones, sensors={
            'lidar': SensorReading('lidar', 'sensor.lidar.ray_cast', k, t,
                                   cloud)})
        if recorded:
            det = rec.get(round(t, 6))
            if det is None:
                continue
        else:
            t0 = time.perf_counter()
            det = detector(frame)
            spent += time.perf_counter() - t0
        _score_frame(cfg, frame, det, scorer, lidar_spec, None, scan)
        if cfg.max_frames and scorer.frames >= cfg.max_frames:
            break
    out = scorer.result()
    out['ms_per_frame'] = 1e3 * spent / max(1, scorer.frames)
    out['laps_driven'] = float('nan')
    out['config'] = dict(vars(cfg))
    out['config']['recording'] = path
    return out


def format_result(res: Dict[str, Any]) -> str:
    """Return a human-readable table of one result dict."""
    c = res['config']
    lines = [
        f"detector {c['detector']}  scenario {c['scenario']}  laps "
        f"{res['laps_driven']:.2f}  range noise {c['range_noise']} m  image "
        f"noise {c['image_noise']}  seed {c['seed']}  stride {c['stride']}"
        + ('  (paper mode)' if c['paper'] else ''),
        f"frames {res['frames']}  in range+fov {res['in_range']}  visible "
        f"{res['visible']}  TP {res['tp']}  FP {res['fp']}",
        f"precision {res['precision']:.4f}  recall {res['recall']:.4f}",
        f"detection rate per frame: mean {res['rate_mean']:.4f}  min "
        f"{res['rate_min']:.4f}",
        f"position error RMS {100 * res['rms_error']:.2f} cm",
        'band (m)   n      RMS (cm)  mean (cm)  p95 (cm)  colour']
    for key, b in res['bands'].items():
        lines.append(f"{key:<10} {b['n']:<6d} {100 * b['rms']:8.2f}  "
                     f"{100 * b['mean']:8.2f}  {100 * b['p95']:8.2f}  "
                     f"{b['colour']:6.3f}")
    if c['detector'] in ('vision', 'fused'):
        lines.append(f"colour accuracy {res['colour_accuracy']:.4f} (all), "
                     f"{res['colour_accuracy_near']:.4f} (in the camera "
                     f"image within {c['vision_range']:g} m)")
    lines.append(f"detector time {res['ms_per_frame']:.3f} ms/frame")
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """Command-line entry point; prints the table (or JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--detector', choices=DETECTORS, default='lidar')
    ap.add_argument('--scenario', default='trackdrive')
    ap.add_argument('--laps', type=int, default=1)
    ap.add_argument('--track-seed', type=int, default=None,
                    help='generate another track (random generator seed)')
    ap.add_argument('--range-noise', type=float, default=0.0)
    ap.add_argument('--image-noise', type=float, default=0.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--speed', type=float, default=8.0)
    ap.add_argument('--stride', type=int, default=1)
    ap.add_argument('--max-frames', type=int, default=0)
    ap.add_argument('--paper', action='store_true',
                    help='scan detector as in the paper (centre point)')
    ap.add_argument('--recording', default='',
                    help='score on an MCAP recording instead of the sim')
    ap.add_argument('--recorded-cones', default='',
                    help='with --recording: score the recorded detections '
                    'of this contract key (cones, cones_lidar, ...)')
    ap.add_argument('--jpeg-quality', type=int, default=0,
                    help='vision: JPEG round trip of this quality (0 = raw)')
    ap.add_argument('--image-reduce', type=int, default=1, choices=(1, 2, 4),
                    help='vision: detect on images reduced by this factor')
    ap.add_argument('--json', action='store_true')
    a = ap.parse_args(argv)
    cfg = EvalConfig(detector=a.detector, scenario=a.scenario, laps=a.laps,
                     track_seed=a.track_seed,
                     range_noise=a.range_noise, image_noise=a.image_noise,
                     seed=a.seed, speed=a.speed, stride=a.stride,
                     max_frames=a.max_frames, paper=a.paper,
                     jpeg_quality=a.jpeg_quality, image_reduce=a.image_reduce)
    try:
        if a.recording:
            res = evaluate_recording(a.recording, cfg,
                                     recorded=a.recorded_cones)
        else:
            res = evaluate(cfg, progress=not a.json)
    except ImportError as exc:
        print(f'detector {a.detector} is not available: {exc}',
              file=sys.stderr)
        return 2
    print(json.dumps(res, indent=1) if a.json else format_result(res))
    return 0


if __name__ == '__main__':
    sys.exit(main())
