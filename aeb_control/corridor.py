# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The predicted ego corridor and the closest obstacle inside it (no rclpy).

Frames and units: REP-103 vehicle frame (x forward, y left, z up, origin at
the rear-axle centre on the ground; metres, radians, seconds). The ego is
predicted to drive a constant-curvature arc through the vehicle origin with
curvature ``kappa = yaw_rate / speed`` (1/m, > 0 turns left). A point
``(x, y)`` has the arc coordinates

* ``s``: arc length from the origin to the foot of the point on the arc,
  ``s = atan2(|kappa| x, 1 - kappa y) / |kappa|`` (``s = x`` on a straight);
* ``d``: signed lateral offset from the arc (> 0 on the left),
  ``d = (2 y - kappa (x^2 + y^2)) / (1 + sqrt((kappa x)^2 + (1 - kappa y)^2))``
  (a form that stays exact as ``kappa`` goes to 0, where ``d = y``).

A point is inside the corridor when ``|d| <= half_width`` and the front
bumper (``front`` metres ahead of the origin) has not yet passed it:
``front - body_tolerance <= s <= front + length``; its distance along the
path is ``s - front`` (clipped at 0). Ground returns and low points are
removed with a height band ``z_min < z <= z_max`` (heights above the ground
plane of the vehicle frame), so kerbs, road paint and bridges or overhead
signs do not trigger the brake.
"""

from dataclasses import dataclass
import math
from typing import Any, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class Corridor:
    """
    A predicted ego corridor in the vehicle frame.

    ``kappa`` curvature (1/m, > 0 left), ``half_width`` (m, vehicle half
    width plus margin), ``length`` (m of path ahead of the front bumper),
    ``front`` (m, front bumper ahead of the rear axle), height band
    ``z_min`` < z <= ``z_max`` (m above the ground). ``kappa_rate``
    (1/m^2) makes the path a clothoid for the first ``preview`` m (used
    for the corridor of the commanded steering while it changes).
    """

    kappa: float
    half_width: float
    length: float
    front: float
    z_min: float = 0.3
    z_max: float = 2.5
    body_tolerance: float = 0.3
    kappa_rate: float = 0.0
    preview: float = 0.0
    max_curvature: float = 0.25

    def centreline(self, n: int = 30) -> np.ndarray:
        """Return ``n`` points (n, 2) of the arc from the bumper to the end."""
        s = np.linspace(self.front, self.front + self.length, max(int(n), 2))
        return arc_points(self.kappa, s)

    def outline(self, n: int = 30) -> np.ndarray:
        """Return the corridor boundary as a closed polygon (2n+1, 2)."""
        s = np.linspace(self.front, self.front + self.length, max(int(n), 2))
        left = arc_points(self.kappa, s, self.half_width)
        right = arc_points(self.kappa, s, -self.half_width)
        poly = np.vstack([left, right[::-1]])
        return np.vstack([poly, poly[:1]])


def arc_points(kappa: float, s: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """
    Return points (N, 2) at arc length ``s`` (m) and lateral ``offset`` (m).

    The arc has curvature ``kappa`` (1/m) and starts at the origin heading
    along +x; ``offset`` > 0 is to the left of the arc.
    """
    s = np.asarray(s, dtype=np.float64)
    if abs(kappa) < 1e-9:
        return np.stack([s, np.full_like(s, offset)], axis=1)
    heading = kappa * s
    radius = 1.0 / kappa
    x = (radius - offset) * np.sin(heading)
    y = radius - (radius - offset) * np.cos(heading)
    return np.stack([x, y], axis=1)


def predict_corridor(speed: float, yaw_rate: float, *, half_width: float,
                     front: float, horizon_time: float = 4.0,
                     min_length: float = 5.0, max_length: float = 100.0,
                     min_speed_for_curvature: float = 1.0,
                     max_curvature: float = 0.25, z_min: float = 0.55,
                     z_max: float = 2.5) -> Corridor:
    """
    Predict the corridor from speed (m/s) and yaw rate (rad/s).

    Length = ``speed * horizon_time`` clipped to ``[min_length,
    max_length]`` and to half a circle on tight turns; curvature from
    ``yaw_rate / speed`` (0 below ``min_speed_for_curvature``, clipped to
    ``+-max_curvature``). Raises ``ValueError`` for non-finite inputs.
    """
    for name, value in (('speed', speed), ('yaw_rate', yaw_rate),
                        ('half_width', half_width), ('front', front)):
        if not math.isfinite(value):
            raise ValueError(f'predict_corridor: {name} is not finite: '
                             f'{value}')
    if half_width <= 0.0:
        raise ValueError(f'predict_corridor: half_width must be > 0, got '
                         f'{half_width}')
    v = abs(float(speed))
    kappa = 0.0
    if v >= min_speed_for_curvature:
        kappa = float(np.clip(yaw_rate / v, -max_curvature, max_curvature))
    length = float(np.clip(v * horizon_time, min_length, max_length))
    if abs(kappa) > 1e-9:
        length = min(length, math.pi / abs(kappa) - front)
    return Corridor(kappa=kappa, half_width=float(half_width),
                    length=max(length, 0.0), front=float(front),
                    z_min=z_min, z_max=z_max)


def mount_transform(x: float = 0.0, y: float = 0.0, z: float = 0.0,
                    roll: float = 0.0, pitch: float = 0.0,
                    yaw: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return (R 3x3, t 3) mapping sensor-frame points into the vehicle frame.

    ``p_vehicle = R @ p_sensor + t`` for a sensor mounted at (x, y, z) m
    with roll/pitch/yaw (rad, REP-103, applied as Rz(yaw) Ry(pitch) Rx(roll)).
    """
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rot = np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr]], dtype=np.float64)
    return rot, np.array([x, y, z], dtype=np.float64)


def to_vehicle_frame(points: np.ndarray, rot: np.ndarray,
                     trans: np.ndarray) -> np.ndarray:
    """
    Return the first three columns of ``points`` in the vehicle frame.

    ``points`` (N, >=3) in the sensor frame (m); result (N, 3) float32.
    Raises ``ValueError`` for a wrongly shaped array.
    """
    pts = np.asarray(points)
    if pts.ndim != 2 or pts.shape[1] < 3:
        raise ValueError(f'points must be an (N, >=3) array, got shape '
                         f'{pts.shape}')
    xyz = pts[:, :3].astype(np.float32, copy=False)
    if np.allclose(rot, np.eye(3)):
        return xyz + trans.astype(np.float32)
    return xyz @ rot.T.astype(np.float32) + trans.astype(np.float32)


def arc_coordinates(kappa: Any, x: np.ndarray,
                    y: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return (s, d) of points (m) relative to the arc of curvature ``kappa``.

    See the module docstring for the formulas; both are exact for any
    curvature, including 0. ``kappa`` (1/m) may also be an array with one
    curvature per point (a curvature that changes along the path, see
    :attr:`Corridor.kappa_rate`).
    """
    k = np.asarray(kappa, dtype=np.float32)
    if k.ndim == 0:
        if abs(float(k)) < 1e-9:
            return x, y
        one_minus = 1.0 - k * y
        s = np.arctan2(abs(k) * x, one_minus) / abs(k)
    else:
        ak = np.abs(k)
        small = ak < 1e-9
        one_minus = 1.0 - k * y
        s = np.where(small, x, np.arctan2(ak * x, one_minus)
                     / np.where(small, np.float32(1.0), ak))
    root = np.sqrt((k * x) ** 2 + one_minus ** 2)
    d = (2.0 * y - k * (x * x + y * y)) / (1.0 + root)
    return s, d


def point_curvature(corridor: Corridor, x: np.ndarray) -> Any:
    """
    Return the curvature (1/m) to test each point against.

    For a constant-curvature corridor that is ``kappa``. With a
    ``kappa_rate`` (a clothoid, curvature ``kappa + kappa_rate * s``) the
    arc through the origin with the same lateral offset at arc length ``s``
    has curvature ``kappa + kappa_rate * s / 3`` (offset ``kappa s^2 / 2 +
    kappa_rate s^3 / 6``); ``s`` is taken as ``x`` and capped at
    ``preview`` m, the result clipped to +-``max_curvature``.
    """
    if corridor.kappa_rate == 0.0:
        return corridor.kappa
    reach = np.clip(x, 0.0, corridor.preview)
    return np.clip(corridor.kappa + corridor.kappa_rate * reach / 3.0,
                   -corridor.max_curvature, corridor.max_curvature)


@dataclass
class CorridorHit:
    """
    The result of searching one cloud.

    ``distance`` along the path from the front bumper to the closest
    obstacle (m, None when the corridor is free), ``point`` that obstacle
    point (vehicle frame, m), ``lateral`` its offset from the arc (m),
    ``count`` the number of obstacle points in the corridor.
    """

    distance: Optional[float]
    point: Optional[np.ndarray]
    lateral: float
    count: int


def closest_in_corridor(points_vehicle: np.ndarray, corridor: Corridor,
                        min_points: int = 3, cluster_depth: float = 1.0,
                        voxel_size: float = 0.0,
                        also: Optional[Corridor] = None,
                        offset: Optional[np.ndarray] = None) -> CorridorHit:
    """
    Find the closest obstacle inside ``corridor``.

    ``points_vehicle`` (N, 3) in the vehicle frame (m); NaN/inf rows are
    ignored. Noise rejection: the obstacle is the nearest point that has at
    least ``min_points`` corridor points (distinct voxels of ``voxel_size``
    m when > 0) within ``cluster_depth`` m behind it along the path, so a
    lone spurious return (dust, rain) does not trigger the brake. With
    ``also`` (a second prediction, e.g. from the commanded steering) a
    point must lie in both corridors; distances are along ``corridor``.
    ``offset`` (3,) m: the points are in a frame only translated from the
    vehicle frame (a lidar mounted without rotation), ``p_vehicle = p +
    offset``; the prefilter then runs on the raw columns and only the few
    candidates are shifted, which saves a full copy of the cloud.
    """
    pts = np.asarray(points_vehicle)
    if pts.ndim != 2 or pts.shape[1] < 3:
        raise ValueError(f'points must be an (N, 3) array, got shape '
                         f'{pts.shape}')
    if pts.shape[0] == 0:
        return CorridorHit(None, None, 0.0, 0)
    ox, oy, oz = (0.0, 0.0, 0.0) if offset is None else (
        float(offset[0]), float(offset[1]), float(offset[2]))
    x, y, z = pts[:, 0], pts[:, 1], pts[:, 2]
    # Cheap bounding-box prefilter; NaN compares False and drops out.
    reach = corridor.front + corridor.length
    lat = corridor.half_width + abs(corridor.kappa) * reach * reach
    keep = ((z > corridor.z_min - oz) & (z <= corridor.z_max - oz)
            & (x >= corridor.front - corridor.body_tolerance - lat - ox)
            & (x <= reach - ox) & (np.abs(y + oy) <= lat + 0.5))
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return CorridorHit(None, None, 0.0, 0)
    cand = pts[idx, :3].astype(np.float64)
    if offset is not None:
        cand += np.array([ox, oy, oz])
    s, d = arc_coordinates(corridor.kappa, cand[:, 0], cand[:, 1])
    inside = ((np.abs(d) <= corridor.half_width)
              & (s >= corridor.front - corridor.body_tolerance)
              & (s <= reach))
    if also is not None and np.any(inside):
        s2, d2 = arc_coordinates(point_curvature(also, cand[:, 0]),
                                 cand[:, 0], cand[:, 1])
        inside &= ((np.abs(d2) <= also.half_width)
                   & (s2 >= also.front - also.body_tolerance)
                   & (s2 <= also.front + also.length))
    if not np.any(inside):
        return CorridorHit(None, None, 0.0, 0)
    cand, s, d = cand[inside], s[inside], d[inside]
    dist = np.maximum(s - corridor.front, 0.0)
    if voxel_size > 0.0:
        vox = np.floor(cand / voxel_size).astype(np.int64)
        _, first = np.unique(vox, axis=0, return_index=True)
        cand, dist, d = cand[first], dist[first], d[first]
    order = np.argsort(dist, kind='stable')
    dist_sorted = dist[order]
    need = max(int(min_points), 1)
    if dist_sorted.size < need:
        return CorridorHit(None, None, 0.0, int(dist_sorted.size))
    span = dist_sorted[need - 1:] - dist_sorted[:dist_sorted.size - need + 1]
    ok = np.flatnonzero(span <= cluster_depth)
    if ok.size == 0:
        return CorridorHit(None, None, 0.0, int(dist_sorted.size))
    best = order[ok[0]]
    return CorridorHit(distance=float(dist[best]),
                       point=cand[best].astype(np.float64),
                       lateral=float(d[best]), count=int(dist.size))
