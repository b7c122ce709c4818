# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Cone detection on a multi-channel 3D lidar cloud (no rclpy).

Frames: input points in the lidar's frame; the detector moves them into the
vehicle frame with the lidar's mount pose (REP-103, metres, radians; the
vehicle frame's origin is on the ground, so the ground is z = 0 when the
car sits level).

Steps (vectorised):

1. Ground removal: by height (``z <= ground_z + ground_margin``) or by a
   RANSAC plane fitted with numpy to the low points (``ground='ransac'``;
   points within ``ransac_threshold`` of the plane or below it are ground).
   Points higher than ``max_z`` and farther than ``range_max`` are dropped.
2. Euclidean clustering in the ground plane: the occupied cells of a grid
   of a quarter ``cluster_tolerance`` whose centres are closer than
   ``cluster_tolerance`` (``scipy.spatial.cKDTree.query_pairs``) are joined
   by connected components (``scipy.sparse.csgraph``); points take their
   cell's cluster (the grid bounds the work on dense near objects).
3. Per cluster: width across and depth along the line of sight, height
   above ground, point count. Accepted as a cone when width and depth fit a
   cone (<= big cone base diameter / radius + ``width_margin``, the depth
   also + 4 ``range_noise``),
   the top is at most a big cone's height (+ margin) and at least
   ``min_top`` above the ground, and the count fits the count a cone gives
   at that distance with this lidar's vertical and horizontal resolution:
   for each channel whose ray reaches a height inside the cone there,
   ``2 r(z) / (d * h_res)`` points, summed (``count_lo``/``count_hi``
   tolerances, small to big cone).
4. Centre: like the 2D detector, each point's implied axis distance from
   its bearing offset and the cone radius at its height, averaged; the
   cluster's mid bearing. Output z = 0 (the cone's base on the ground).
"""

from dataclasses import dataclass, fields
import math
from typing import Any, Dict, Optional, Tuple

from cone_detection.fusion import ConeSet
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, cone_dimensions
from hil_bridge.interface.frames import Pose, rotation_matrix
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree


def _radius_profile(class_id: int) -> Tuple[float, float, float]:
    base, top, tall = (float(v) for v in cone_dimensions(np.uint8(class_id)))
    return base, top, tall


def cone_radius(z: np.ndarray, class_id: int = CONE_BLUE) -> np.ndarray:
    """Return the cone radius (m) at heights ``z`` (m); 0 outside the cone."""
    base, top, tall = _radius_profile(class_id)
    z = np.asarray(z, dtype=np.float64)
    r = base - (base - top) * z / tall
    return np.where((z >= 0.0) & (z <= tall), r, 0.0)


@dataclass(frozen=True)
class CloudConeParams:
    """
    Thresholds of the 3D detector (metres, radians, counts).

    ``ground``: 'height' or 'ransac'; ``ground_z``/``ground_margin``: ground
    height (vehicle frame) and the band above it counted as ground;
    ``ransac_iterations``/``ransac_threshold``/``ransac_max_tilt``: plane
    fit; ``max_z``: points above are ignored (overhangs, other cars' roofs
    still make their cluster too tall: clusters are checked on ``top``);
    ``range_max``: farthest point used; ``cluster_tolerance``: neighbour
    distance in the ground plane; ``range_noise``: range noise std-dev the
    depth gate allows for; ``width_margin``: slack on the width and depth
    gates; ``height_margin``: slack on the height gate; ``min_top``: lowest
    cluster top that can be a cone; ``count_lo``/``count_hi``: count
    tolerance; ``min_points``: fewest points of a cone; ``refine``: axis
    refinement (else the points' centroid).
    """

    ground: str = 'height'
    ground_z: float = 0.0
    ground_margin: float = 0.05
    ransac_iterations: int = 40
    ransac_threshold: float = 0.05
    ransac_max_tilt: float = 0.2
    max_z: float = 1.5
    range_max: float = 20.0
    cluster_tolerance: float = 0.2
    range_noise: float = 0.03
    width_margin: float = 0.1
    height_margin: float = 0.1
    min_top: float = 0.08
    count_lo: float = 0.3
    count_hi: float = 2.0
    min_points: int = 1
    refine: bool = True

    def __post_init__(self) -> None:
        """Check every threshold; raise ``ValueError`` naming a bad one."""
        if self.ground not in ('height', 'ransac'):
            raise ValueError(f"CloudConeParams.ground must be 'height' or "
                             f"'ransac', got {self.ground!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (bool, str)):
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f'CloudConeParams.{f.name} must be a finite '
                                 f'number, got {value!r}')
        for name in ('range_max', 'cluster_tolerance', 'count_hi',
                     'ransac_threshold', 'ransac_iterations'):
            if getattr(self, name) <= 0:
                raise ValueError(f'CloudConeParams.{name} must be > 0')
        for name in ('ground_margin', 'width_margin', 'height_margin',
                     'range_noise',
                     'count_lo', 'min_points', 'ransac_max_tilt'):
            if getattr(self, name) < 0:
                raise ValueError(f'CloudConeParams.{name} must be >= 0')
        if self.count_hi < self.count_lo:
            raise ValueError('CloudConeParams: count_hi must be >= count_lo')

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> 'CloudConeParams':
        """Build from a mapping (e.g. node parameters); unknown keys ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


def ransac_ground(points: np.ndarray, params: CloudConeParams,
                  rng: Optional[np.random.Generator] = None
                  ) -> Optional[np.ndarray]:
    """
    Fit the ground plane ``n . p + d = 0`` (unit n, n_z > 0) to low points.

    Candidates are points below ``ground_z + 0.3`` m; each iteration
    samples three of them (all iterations at once), planes tilted more than
    ``ransac_max_tilt`` rad are discarded, the plane with most inliers
    within ``ransac_threshold`` wins. Returns ``[nx, ny, nz, d]`` or None.
    """
    low = points[points[:, 2] < params.ground_z + 0.3]
    if low.shape[0] < 3:
        return None
    gen = rng if rng is not None else np.random.default_rng(0)
    k = int(params.ransac_iterations)
    sample = low[gen.integers(0, low.shape[0], size=(k, 3))]
    normal = np.cross(sample[:, 1] - sample[:, 0], sample[:, 2] - sample[:, 0])
    norm = np.linalg.norm(normal, axis=1)
    ok = norm > 1e-9
    normal = normal[ok] / norm[ok, None]
    normal *= np.sign(normal[:, 2:3] + 1e-12)
    d = -np.sum(normal * sample[ok, 0], axis=1)
    flat = np.arccos(np.clip(normal[:, 2], -1.0, 1.0)) <= params.ransac_max_tilt
    normal, d = normal[flat], d[flat]
    if normal.shape[0] == 0:
        return None
    sub = low if low.shape[0] <= 4000 else low[gen.choice(low.shape[0], 4000,
                                                          replace=False)]
    dist = np.abs(sub @ normal.T + d[None, :])
    best = int(np.argmax((dist < params.ransac_threshold).sum(axis=0)))
    return np.concatenate((normal[best], [d[best]]))


def _expected_points(dist: np.ndarray, class_id: int, sensor_z: float,
                     elevations: np.ndarray, h_res: float,
                     z_cut: float = 0.0) -> np.ndarray:
    """
    Return the points (per axis distance, m) a cone of ``class_id`` gives.

    Channels at ``elevations`` (rad) from ``sensor_z`` (m above ground) that
    reach a height inside the cone and above ``z_cut`` (the ground band
    removed) give ``2 r(z) / (d h_res)`` points each.
    """
    z = sensor_z + dist[:, None] * np.tan(elevations)[None, :]
    r = np.where(z > z_cut, cone_radius(z, class_id), 0.0)
    return np.sum(2.0 * r, axis=1) / (np.maximum(dist, 1e-3) * h_res)


class CloudConeDetector:
    """
    The 3D detector for one lidar (mount pose and resolution).

    ``elevations`` (rad) of the channels, ``h_res`` (rad) horizontal
    resolution; :meth:`for_lidar` derives both from CARLA attributes.
    """

    def __init__(self, mount: Pose, elevations: np.ndarray, h_res: float,
                 params: Optional[CloudConeParams] = None) -> None:
        """Create the detector; raises ``ValueError`` on a bad resolution."""
        if not (h_res > 0.0 and math.isfinite(h_res)):
            raise ValueError(f'lidar horizontal resolution must be > 0, got '
                             f'{h_res}')
        self.mount = mount
        self.R = rotation_matrix(mount.roll, mount.pitch, mount.yaw)
        self.t = np.array([mount.x, mount.y, mount.z])
        self.elevations = np.asarray(elevations, dtype=np.float64).ravel()
        self.h_res = float(h_res)
        self.params = params or CloudConeParams()

    @classmethod
    def for_lidar(cls, mount: Pose, attributes: Dict[str, Any],
                  params: Optional[CloudConeParams] = None
                  ) -> 'CloudConeDetector':
        """Build from a ``sensor.lidar.ray_cast`` attribute dict."""
        channels = int(attributes['channels'])
        upper = math.radians(float(attributes['upper_fov']))
        lower = math.radians(float(attributes['lower_fov']))
        elev = np.linspace(upper, lower, channels) if channels > 1 else \
            np.array([upper])
        rays = float(attributes['points_per_second']) / max(
            channels, 1) / float(attributes['rotation_frequency'])
        h_res = math.radians(float(attributes['horizontal_fov'])) / rays
        return cls(mount, elev, h_res, params)

    def to_vehicle(self, xyz: np.ndarray) -> np.ndarray:
        """Return sensor-frame points (N, 3) in the vehicle frame."""
        return xyz @ self.R.T + self.t

    def cluster(self, xyz_sensor: Any) -> Dict[str, np.ndarray]:
        """
        Ground removal and clustering (steps 1, 2).

        Returns vehicle-frame object points ``points`` (M, 3) sorted by
        cluster, ``height`` above ground (M,), per cluster ``start`` and
        ``count``. Raises ``ValueError`` for a malformed array.
        """
        try:
            pts = np.asarray(xyz_sensor, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f'lidar points are not numeric: {exc}') from None
        if pts.ndim != 2 or pts.shape[1] < 3:
            raise ValueError(f'lidar points must be (N, >=3), got shape '
                             f'{pts.shape}')
        p = self.params
        pts = pts[:, :3]
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        v = self.to_vehicle(pts)
        rel = v[:, :2] - self.t[:2]
        v = v[np.hypot(rel[:, 0], rel[:, 1]) <= p.range_max]
        height = v[:, 2] - p.ground_z
        if p.ground == 'ransac':
            plane = ransac_ground(v, p)
            if plane is not None:
                height = (v @ plane[:3] + plane[3]) / plane[2]
        keep = (height > max(p.ground_margin,
                             p.ransac_threshold if p.ground == 'ransac'
                             else 0.0)) & (height <= p.max_z)
        v, height = v[keep], height[keep]
        empty = np.zeros(0, dtype=np.int64)
        if v.shape[0] == 0:
            return {'points': v, 'height': height, 'start': empty,
                    'count': empty}
        # Cluster occupied cells of a fine grid (a quarter of the tolerance)
        # instead of the points: near objects have hundreds of points.
        cell = 0.25 * p.cluster_tolerance
        keys = np.floor(v[:, :2] / cell).astype(np.int64)
        cells, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        centres = (cells + 0.5) * cell
        pairs = cKDTree(centres).query_pairs(p.cluster_tolerance,
                                             output_type='ndarray')
        n = centres.shape[0]
        graph = coo_matrix((np.ones(pairs.shape[0]), (pairs[:, 0],
                                                      pairs[:, 1])),
                           shape=(n, n))
        _, cell_labels = connected_components(graph, directed=False)
        labels = cell_labels[inverse]
        order = np.argsort(labels, kind='stable')
        count = np.bincount(labels)
        start = np.concatenate(([0], np.cumsum(count)[:-1]))
        return {'points': v[order], 'height': height[order],
                'start': start.astype(np.int64),
                'count': count.astype(np.int64)}

    def detect(self, xyz_sensor: Any) -> ConeSet:
        """Detect cones; return a vehicle-frame :class:`ConeSet` (class 0)."""
        c = self.cluster(xyz_sensor)
        start, count = c['start'], c['count']
        if start.size == 0:
            return ConeSet()
        p = self.params
        v, h = c['points'], c['height']
        x, y = v[:, 0] - self.t[0], v[:, 1] - self.t[1]
        rng = np.hypot(x, y)
        az = np.arctan2(y, x)
        label = np.repeat(np.arange(start.size), count)
        # mid bearing: circular mean of the cluster's azimuths
        bearing = np.arctan2(np.add.reduceat(np.sin(az), start),
                             np.add.reduceat(np.cos(az), start))
        # extent across the line of sight and depth along it
        lateral = -x * np.sin(bearing[label]) + y * np.cos(bearing[label])
        radial = x * np.cos(bearing[label]) + y * np.sin(bearing[label])
        width = (np.maximum.reduceat(lateral, start)
                 - np.minimum.reduceat(lateral, start))
        depth = (np.maximum.reduceat(radial, start)
                 - np.minimum.reduceat(radial, start))
        top = np.maximum.reduceat(h, start)
        dmin = np.minimum.reduceat(rng, start)
        base_s, _, tall_s = _radius_profile(CONE_BLUE)
        base_b, _, tall_b = _radius_profile(CONE_BIG_ORANGE)
        big = top > tall_s + 0.5 * p.height_margin
        sensor_z = self.t[2] - p.ground_z
        cut = p.ground_margin
        n_small = _expected_points(dmin + base_s, CONE_BLUE, sensor_z,
                                   self.elevations, self.h_res, cut)
        n_big = _expected_points(dmin + base_b, CONE_BIG_ORANGE, sensor_z,
                                 self.elevations, self.h_res, cut)
        lo = np.maximum(p.min_points, np.floor(p.count_lo * n_small))
        hi = np.ceil(p.count_hi * n_big) + 2.0
        ok = ((count >= lo) & (count <= hi)
              & (width <= 2.0 * base_b + p.width_margin)
              & (depth <= base_b + p.width_margin + 4.0 * p.range_noise)
              & (top <= tall_b + p.height_margin) & (top >= p.min_top))
        sel = np.flatnonzero(ok)
        if sel.size == 0:
            return ConeSet()
        if p.refine:
            phi = az - bearing[label]
            rad = np.where(big[label], cone_radius(h, CONE_BIG_ORANGE),
                           cone_radius(h, CONE_BLUE))
            cross = rng * np.sin(phi)
            implied = rng * np.cos(phi) + np.sqrt(
                np.maximum(rad * rad - cross * cross, 0.0))
            dist = np.add.reduceat(implied, start) / count
            cx = self.t[0] + dist * np.cos(bearing)
            cy = self.t[1] + dist * np.sin(bearing)
        else:
            cx = np.add.reduceat(v[:, 0], start) / count
            cy = np.add.reduceat(v[:, 1], start) / count
        conf = np.clip(count / np.maximum(n_small, 1.0), 0.1, 1.0)
        xyz = np.column_stack((cx, cy, np.zeros(start.size)))
        return ConeSet(xyz[sel], np.zeros(sel.size, np.uint8), conf[sel])
