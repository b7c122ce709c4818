# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Pure pursuit on a path in the vehicle frame, and a curvature speed profile.

Vehicle frame, REP-103 (x forward, y left, metres, radians), origin at the
rear-axle centre (pure pursuit's reference point). The look-ahead distance
grows with speed, ``Ld = clip(ld_min + ld_gain * |v|, ld_min, ld_max)``;
the goal point is where the polyline (the origin, then the path) first
leaves the circle of radius ``Ld`` about the origin (the last path point
when the path stays inside it). With the goal at ``(x, y)`` the arc
through the origin tangent to x has curvature ``kappa = 2 y / (x^2 +
y^2)`` and the steering angle is ``delta = atan(L * kappa)`` (clipped to
``max_steer``).

Speed: every path vertex gets the lateral-acceleration limit
``sqrt(a_lat_max / |kappa_i|)`` (``kappa_i`` from the circle through it
and its neighbours); the car may go at most as fast as lets it slow down
to every such limit in time, ``v <= min_i sqrt(v_i^2 + 2 decel s_i)``
(``s_i`` the arc length to vertex ``i``), and to stop at the end of the
known path.
"""

from dataclasses import dataclass
import math
from typing import Any

import numpy as np

STATUS_OK = 'ok'
STATUS_NO_PATH = 'no_path'


@dataclass(frozen=True)
class PursuitParams:
    """
    Pure-pursuit gains and limits (m, s, rad, m/s^2).

    ``wheelbase`` L; ``max_steer`` road-wheel limit; ``ld_min`` /
    ``ld_max`` / ``ld_gain`` the look-ahead (m, m, s).
    """

    wheelbase: float = 1.53
    max_steer: float = math.radians(25.0)
    ld_min: float = 3.0
    ld_max: float = 10.0
    ld_gain: float = 0.5

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('wheelbase', 'max_steer', 'ld_min', 'ld_max'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'PursuitParams.{name} must be finite and > 0,'
                                 f' got {value}')
        if not (math.isfinite(self.ld_gain) and self.ld_gain >= 0.0):
            raise ValueError(f'PursuitParams.ld_gain must be finite and >= 0, '
                             f'got {self.ld_gain}')
        if self.ld_max < self.ld_min:
            raise ValueError('PursuitParams.ld_max must be >= ld_min')


@dataclass
class PursuitResult:
    """
    Output of :func:`pure_pursuit`.

    ``status`` ``'ok'`` or ``'no_path'``; ``delta`` steering angle (rad,
    > 0 left); ``kappa`` commanded curvature (1/m, after the steering
    clip); ``goal`` (2,) the goal point (m); ``lookahead`` Ld (m).
    """

    status: str
    delta: float
    kappa: float
    goal: np.ndarray
    lookahead: float


def _path(path: Any) -> np.ndarray:
    pts = np.asarray(path, dtype=np.float64)
    if pts.size == 0:
        return np.zeros((0, 2))
    if pts.ndim != 2 or pts.shape[1] < 2:
        raise ValueError(f'pure pursuit: path must be an (P, 2) array, got '
                         f'shape {pts.shape}')
    pts = pts[:, :2]
    if not np.isfinite(pts).all():
        raise ValueError('pure pursuit: path has non-finite points')
    return pts


def lookahead_distance(speed: float, params: PursuitParams) -> float:
    """Return Ld (m) for a speed (m/s); a non-finite speed gives ``ld_min``."""
    v = float(speed)
    if not math.isfinite(v):
        return params.ld_min
    return min(max(params.ld_min + params.ld_gain * abs(v), params.ld_min),
               params.ld_max)


def goal_point(path: Any, lookahead: float) -> np.ndarray:
    """
    Return where the polyline origin -> path first leaves radius ``lookahead``.

    ``path`` (P, 2) in the vehicle frame (m); returns (2,). The last point
    when the polyline never leaves the circle.
    """
    pts = _path(path)
    if pts.shape[0] == 0:
        raise ValueError('pure pursuit: empty path')
    poly = np.vstack([np.zeros((1, 2)), pts])
    p0, p1 = poly[:-1], poly[1:]
    d = p1 - p0
    # |p0 + t d| = Ld: a t^2 + 2 b t + c = 0.
    qa = np.einsum('ij,ij->i', d, d)
    qb = np.einsum('ij,ij->i', p0, d)
    qc = np.einsum('ij,ij->i', p0, p0) - lookahead * lookahead
    disc = qb * qb - qa * qc
    safe_a = np.where(qa > 0.0, qa, 1.0)
    t = (-qb + np.sqrt(np.maximum(disc, 0.0))) / safe_a
    leaves = (qa > 0.0) & (disc >= 0.0) & (qc <= 0.0) & (t >= 0.0) & (t <= 1.0)
    hits = np.flatnonzero(leaves)
    if hits.size == 0:
        return pts[-1].copy()
    i = int(hits[0])
    return p0[i] + t[i] * d[i]


def arc_curvature(goal: Any) -> float:
    """
    Return the pure-pursuit curvature (1/m, + left) of the arc to ``goal``.

    ``goal`` (x, y) in the vehicle frame (m, rear-axle origin): the circle
    tangent to the heading through the origin and the goal,
    ``kappa = 2 y / (x^2 + y^2)`` (0 at the origin).
    """
    gx, gy = float(goal[0]), float(goal[1])
    d2 = gx * gx + gy * gy
    return 0.0 if d2 < 1e-12 else 2.0 * gy / d2


def curvature_to(goal: Any, x: float, y: float, yaw: float) -> float:
    """
    Return :func:`arc_curvature` to a ``goal`` given in the pose's frame.

    ``goal`` (x, y) and the rear-axle pose (``x``, ``y`` m, ``yaw`` rad) in
    one world frame (e.g. ``map``); the in-process drivers of the tools
    steer with it.
    """
    dx, dy = float(goal[0]) - x, float(goal[1]) - y
    c, s = math.cos(yaw), math.sin(yaw)
    return arc_curvature((c * dx + s * dy, -s * dx + c * dy))


def pure_pursuit(path: Any, speed: float, params: PursuitParams
                 ) -> PursuitResult:
    """
    Return the pure-pursuit steering for ``path`` at ``speed``.

    ``path`` (P, 2) ordered forward, vehicle frame (m); ``speed`` (m/s).
    An empty path gives status ``'no_path'`` and delta 0; non-finite path
    points raise ``ValueError``.
    """
    pts = _path(path)
    ld = lookahead_distance(speed, params)
    if pts.shape[0] == 0:
        return PursuitResult(STATUS_NO_PATH, 0.0, 0.0, np.zeros(2), ld)
    goal = goal_point(pts, ld)
    kappa = arc_curvature(goal)
    delta = math.atan(params.wheelbase * kappa)
    delta = min(max(delta, -params.max_steer), params.max_steer)
    return PursuitResult(STATUS_OK, delta, math.tan(delta) / params.wheelbase,
                         goal, ld)


def path_curvature(path: Any) -> np.ndarray:
    """
    Return (P,) unsigned curvature (1/m) at each vertex of a polyline.

    From the circle through each vertex and its two neighbours (Menger
    curvature ``4 * area / (a b c)``); the end vertices copy their
    neighbour; fewer than 3 points give zeros.
    """
    pts = _path(path)
    n = pts.shape[0]
    if n < 3:
        return np.zeros(n)
    p0, p1, p2 = pts[:-2], pts[1:-1], pts[2:]
    u, v = p1 - p0, p2 - p1
    cross = np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    la = np.linalg.norm(u, axis=1)
    lb = np.linalg.norm(v, axis=1)
    lc = np.linalg.norm(p2 - p0, axis=1)
    den = la * lb * lc
    k = np.where(den > 1e-12, 2.0 * cross / np.where(den > 1e-12, den, 1.0),
                 0.0)
    return np.concatenate([[k[0]], k, [k[-1]]])


def profile_speed(path: Any, max_speed: float, a_lat_max: float,
                  decel: float, stop_at_end: bool = True,
                  end_margin: float = 1.0) -> float:
    """
    Return the speed (m/s) allowed at the car for a path ahead.

    The lateral limit at each vertex, reached by braking at ``decel``
    (m/s^2) over the arc length from the car (the origin); with
    ``stop_at_end`` the car must also stop ``end_margin`` m before the end
    of the known path. An empty path gives 0.
    """
    pts = _path(path)
    if pts.shape[0] == 0:
        return 0.0
    poly = np.vstack([np.zeros((1, 2)), pts])
    s = np.cumsum(np.linalg.norm(np.diff(poly, axis=0), axis=1))
    k = path_curvature(poly)[1:]
    v_lat = np.minimum(np.sqrt(a_lat_max / np.maximum(k, 1e-9)), max_speed)
    v = float(np.min(np.sqrt(v_lat ** 2 + 2.0 * decel * s)))
    if stop_at_end:
        v = min(v, math.sqrt(2.0 * decel * max(float(s[-1]) - end_margin, 0.0)))
    return min(v, max_speed)
