# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Cone detection on a 2D laser scan: the HIL paper's Algorithm 1, vectorised.

Frame: the scan's own (sensor) frame, REP-103 (x forward, y left, z up);
ranges in metres, angles in radians, counted anticlockwise from x.

Steps (all numpy, no per-point Python loop):

1. Crop the scan to ``[angle_min, angle_max]`` (paper: -90..+90 deg) and to
   ``[range_min, range_max]``; NaN/inf/out-of-range beams are invalid.
2. Walk the valid points in angular order. A new cluster starts where the
   step from the previous valid point is longer than ``max_step``, where more
   than ``max_gap`` invalid beams lie between them, or where the step's
   direction turns by more than ``max_turn`` against the previous step.
3. Per cluster: the paper's centre is the cluster's middle point and its size
   the extent between its first and last point (plus the depth, farthest
   minus nearest range). Beyond the paper the centre is refined to the cone
   axis: each point, at its bearing offset from the cluster's mid bearing,
   implies the distance of a circle of the cone's radius (at the scan height)
   it lies on; the mean of these distances is the centre distance. This
   removes the ~radius bias of the surface point (goal <= 5 cm RMS).
4. Accept a cluster as a cone when its extent and depth fit a cone (big or
   small, with range-noise margins), its point count fits the count a cone of
   that width gives at that distance with this angular resolution
   (``n_expected = 2 asin(r / d) / angle_increment``, within
   ``[count_lo * n_small, count_hi * n_big + 1]``) and, optionally, it does
   not lie on the line joining its neighbours (the isolated points of a wall
   seen at grazing incidence do; a cone stands in front of its background).
"""

from dataclasses import dataclass, field, fields
import math
from typing import Any, Dict, Optional, Tuple

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, cone_dimensions
import numpy as np


def cone_radius_at(height: float, class_id: int = CONE_BLUE) -> float:
    """
    Return a cone's horizontal radius (m) at ``height`` (m) above the ground.

    The cone is the built-in simulator's frustum
    (``hil_bridge.sim.geometry.cone_dimensions``: base radius from
    ``CONE_SIZE``, linear taper to the top radius at full height); outside
    ``[0, height]`` the radius is 0.
    """
    base, top, tall = (float(v) for v in cone_dimensions(
        np.uint8(int(class_id))))
    h = float(height)
    if not math.isfinite(h) or h < 0.0 or h > tall:
        return 0.0
    return base - (base - top) * h / tall


def cone_radii_at(height: float, class_id: np.ndarray) -> np.ndarray:
    """Return :func:`cone_radius_at` for an array of class ids (vectorised)."""
    table = np.array([cone_radius_at(height, c) for c in range(5)])
    cls = np.asarray(class_id).astype(np.int64)
    return table[np.clip(cls, 0, 4)]


@dataclass(frozen=True)
class ScanConeParams:
    """
    Thresholds of the scan detector (metres, radians, counts).

    ``angle_min``/``angle_max``: crop window (paper: +-90 deg);
    ``range_min``/``range_max``: valid range window; ``max_step``: distance
    between consecutive valid points that starts a new cluster; ``max_gap``:
    invalid beams tolerated inside a cluster (0 = every invalid beam splits,
    as in the paper); ``max_turn``: direction change between consecutive
    steps that starts a new cluster, only for steps longer than
    ``turn_min_step`` (``pi`` disables it, the default: with 30 mm range noise
    and ~1 cm beam spacing at 2 m the step direction is noise); ``scan_height``:
    height of the scan plane above the ground, which sets the cone width the
    gates expect; ``range_noise``: range noise std-dev the size gates allow
    for; ``width_margin``: slack on the extent gate; ``count_lo``/``count_hi``:
    point-count tolerance against the expected count; ``min_points``: fewest
    points of a cone; ``reject_surface``/``surface_tol``: reject clusters
    that lie on the line joining their neighbours' points (within
    ``surface_tol``), i.e. pieces of a wall seen at grazing incidence, for
    steps up to ``surface_max_step``; ``reject_slivers``: reject clusters
    whose adjacent neighbours on both sides are nearer (seen through a gap,
    like a piece of wall between two cones; off by default because looking
    down a row of track cones gives exactly that pattern);
    ``refine``: move the centre from the surface
    to the cone axis (False = the paper's centre point).
    """

    angle_min: float = -math.pi / 2.0
    angle_max: float = math.pi / 2.0
    range_min: float = 0.1
    range_max: float = 20.0
    max_step: float = 0.25
    max_gap: int = 1
    max_turn: float = math.pi
    turn_min_step: float = 0.05
    scan_height: float = 0.2
    range_noise: float = 0.03
    width_margin: float = 0.05
    count_lo: float = 0.5
    count_hi: float = 1.6
    min_points: int = 1
    reject_surface: bool = True
    surface_tol: float = 0.1
    surface_max_step: float = 2.0
    reject_slivers: bool = False
    refine: bool = True

    def __post_init__(self) -> None:
        """Check every threshold; raise ``ValueError`` naming a bad one."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f'ScanConeParams.{f.name} must be a finite '
                                 f'number, got {value!r}')
        positive = ('max_step', 'range_max', 'count_hi', 'turn_min_step',
                    'surface_max_step')
        for name in positive:
            if getattr(self, name) <= 0.0:
                raise ValueError(f'ScanConeParams.{name} must be > 0')
        for name in ('range_min', 'range_noise', 'width_margin', 'count_lo',
                     'max_gap', 'min_points', 'max_turn',
                     'surface_tol'):
            if getattr(self, name) < 0.0:
                raise ValueError(f'ScanConeParams.{name} must be >= 0')
        if self.angle_max <= self.angle_min:
            raise ValueError('ScanConeParams: angle_max must be > angle_min')
        if self.range_max <= self.range_min:
            raise ValueError('ScanConeParams: range_max must be > range_min')
        if self.count_hi < self.count_lo:
            raise ValueError('ScanConeParams: count_hi must be >= count_lo')
        small = cone_radius_at(self.scan_height, CONE_BLUE)
        if small <= 0.0:
            raise ValueError(f'ScanConeParams.scan_height={self.scan_height} '
                             "is not within a small cone's height")

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> 'ScanConeParams':
        """Build from a mapping (e.g. node parameters); unknown keys ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    @property
    def radius_small(self) -> float:
        """Return a small cone's radius (m) at the scan height."""
        return cone_radius_at(self.scan_height, CONE_BLUE)

    @property
    def radius_big(self) -> float:
        """Return a big orange cone's radius (m) at the scan height."""
        return max(cone_radius_at(self.scan_height, CONE_BIG_ORANGE),
                   self.radius_small)


def _empty_f(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.float64)


@dataclass
class ScanCones:
    """
    Cones found in one scan, in the scan's frame (m, rad).

    ``xy`` (N, 2) centre (refined, or the paper's centre point);
    ``distance``/``bearing`` the same centre in polar form; ``size`` extent
    first-to-last point; ``depth`` farthest minus nearest range;
    ``n_points`` valid points; ``n_expected`` the count a small cone gives
    there; ``big`` True where the extent says big orange cone;
    ``confidence`` in (0, 1]. ``n_clusters`` counts all clusters, cones or
    not.
    """

    xy: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    distance: np.ndarray = field(default_factory=_empty_f)
    bearing: np.ndarray = field(default_factory=_empty_f)
    size: np.ndarray = field(default_factory=_empty_f)
    depth: np.ndarray = field(default_factory=_empty_f)
    n_points: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_expected: np.ndarray = field(default_factory=_empty_f)
    big: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    confidence: np.ndarray = field(default_factory=_empty_f)
    n_clusters: int = 0

    def __len__(self) -> int:
        """Return the number of cones."""
        return int(self.xy.shape[0])


def _check_scan(ranges: Any, angle_min: float,
                angle_increment: float) -> Tuple[np.ndarray, float, float]:
    """Validate the scan inputs; return float64 ranges and the two angles."""
    try:
        r = np.asarray(ranges, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f'scan ranges are not numeric: {exc}') from None
    if r.ndim != 1:
        raise ValueError(f'scan ranges must be 1-D, got shape {r.shape}')
    a0 = float(angle_min)
    inc = float(angle_increment)
    if not math.isfinite(a0):
        raise ValueError(f'scan angle_min must be finite, got {a0}')
    if not math.isfinite(inc) or inc == 0.0:
        raise ValueError('scan angle_increment must be finite and non-zero, '
                         f'got {inc}')
    return r, a0, inc


def cluster_scan(ranges: Any, angle_min: float, angle_increment: float,
                 params: ScanConeParams = ScanConeParams()
                 ) -> Dict[str, np.ndarray]:
    """
    Crop and cluster a scan (steps 1 and 2).

    Returns a dict of arrays over the valid points in increasing angle:
    ``index`` (beam index in the input), ``order`` (beam index in
    increasing-angle order), ``range``, ``angle``, ``x``, ``y``,
    ``label`` (cluster id per point) and per cluster ``start`` (first point)
    and ``count``. Raises ``ValueError`` for malformed scans.
    """
    r, a0, inc = _check_scan(ranges, angle_min, angle_increment)
    n = r.size
    angles = a0 + inc * np.arange(n, dtype=np.float64)
    if inc < 0.0:
        r, angles = r[::-1], angles[::-1]
    with np.errstate(invalid='ignore'):
        valid = ((angles >= params.angle_min) & (angles <= params.angle_max)
                 & np.isfinite(r) & (r >= params.range_min)
                 & (r <= params.range_max))
    idx = np.flatnonzero(valid)
    rv = r[idx]
    av = angles[idx]
    x = rv * np.cos(av)
    y = rv * np.sin(av)
    out = {'index': idx if inc > 0.0 else (n - 1 - idx), 'order': idx,
           'range': rv, 'angle': av, 'x': x, 'y': y}
    m = idx.size
    if m == 0:
        out.update(label=np.zeros(0, dtype=np.int64),
                   start=np.zeros(0, dtype=np.int64),
                   count=np.zeros(0, dtype=np.int64))
        return out
    dx = np.diff(x)
    dy = np.diff(y)
    step = np.hypot(dx, dy)
    split = (step > params.max_step) | (np.diff(idx) > params.max_gap + 1)
    if params.max_turn < math.pi and m > 2:
        cross = dx[:-1] * dy[1:] - dy[:-1] * dx[1:]
        dot = dx[:-1] * dx[1:] + dy[:-1] * dy[1:]
        turn = np.abs(np.arctan2(cross, dot))
        long_steps = ((step[:-1] > params.turn_min_step)
                      & (step[1:] > params.turn_min_step))
        split[1:] |= (turn > params.max_turn) & long_steps
    start = np.concatenate(([0], np.flatnonzero(split) + 1))
    count = np.diff(np.concatenate((start, [m])))
    label = np.repeat(np.arange(start.size), count)
    out.update(label=label, start=start, count=count)
    return out


def _expected_count(distance: np.ndarray, radius: float,
                    angle_increment: float) -> np.ndarray:
    """Return the beams a circle of ``radius`` at ``distance`` spans."""
    ratio = np.clip(radius / np.maximum(distance, radius), 0.0, 1.0)
    return 2.0 * np.arcsin(ratio) / abs(angle_increment)


def _off_line(c: Dict[str, np.ndarray], i0: np.ndarray, i1: np.ndarray,
              mid: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Return (along, offset) of points ``mid`` against lines i0 -> i1."""
    x, y = c['x'], c['y']
    ex, ey = x[i1] - x[i0], y[i1] - y[i0]
    px, py = x[mid] - x[i0], y[mid] - y[i0]
    length2 = np.maximum(ex * ex + ey * ey, 1e-12)
    along = (px * ex + py * ey) / length2
    off = np.abs(px * ey - py * ex) / np.sqrt(length2)
    return along, off


def _on_surface(c: Dict[str, np.ndarray], first: np.ndarray,
                last: np.ndarray, params: ScanConeParams) -> np.ndarray:
    """
    Flag clusters that continue the surface of their neighbours.

    True where the cluster's middle point lies within ``surface_tol`` of the
    segment joining the adjacent valid points on either side (within
    ``max_gap`` beams; both steps at most ``surface_max_step`` and within a
    factor 3 of each other, as along a plane), or of the line through the
    two adjacent points on one side, extended by at most three of their
    steps (the end of a wall at the range limit): the isolated points of a
    wall seen at grazing incidence. A cone stands at least ``max_step`` in
    front of the surface behind it, and a cone next to a nearer object's
    silhouette is not on that object's surface line.
    """
    order = c['order']
    m = order.size
    gap = params.max_gap + 1
    mid = (first + last) // 2
    prev = np.maximum(first - 1, 0)
    nxt = np.minimum(last + 1, m - 1)
    has_prev = (first >= 1) & (order[first] - order[prev] <= gap)
    has_next = (last <= m - 2) & (order[nxt] - order[last] <= gap)
    x, y = c['x'], c['y']
    step_in = np.hypot(x[mid] - x[prev], y[mid] - y[prev])
    step_out = np.hypot(x[nxt] - x[mid], y[nxt] - y[mid])
    short = ((step_in <= params.surface_max_step)
             & (step_out <= params.surface_max_step))
    even = (step_in <= 3.0 * step_out) & (step_out <= 3.0 * step_in)
    along, off = _off_line(c, prev, nxt, mid)
    flag = (has_prev & has_next & short & even & (along > 0.0)
            & (along < 1.0) & (off < params.surface_tol))
    # One side only (the end of a wall at the range limit): extend the line
    # through the two previous points by at most three of their steps, the
    # steps all short and even (a plane at grazing incidence).
    prev2 = np.maximum(first - 2, 0)
    has_prev2 = has_prev & (first >= 2) & (order[prev] - order[prev2] <= gap)
    step_p = np.hypot(x[prev] - x[prev2], y[prev] - y[prev2])
    along, off = _off_line(c, prev2, prev, mid)
    flag |= (has_prev2 & (step_in <= params.surface_max_step)
             & (step_p <= params.surface_max_step) & (along > 1.0)
             & (along <= 4.0) & (off < params.surface_tol))
    nxt2 = np.minimum(last + 2, m - 1)
    has_next2 = has_next & (last <= m - 3) & (order[nxt2] - order[nxt] <= gap)
    step_n = np.hypot(x[nxt2] - x[nxt], y[nxt2] - y[nxt])
    along, off = _off_line(c, nxt2, nxt, mid)
    flag |= (has_next2 & (step_out <= params.surface_max_step)
             & (step_n <= params.surface_max_step) & (along > 1.0)
             & (along <= 4.0) & (off < params.surface_tol))
    if params.reject_slivers:
        # Seen through a gap between two nearer objects: a sliver of
        # something larger behind them (a wall between two cones).
        rv, rmin = c['range'], np.minimum.reduceat(c['range'], first)
        flag |= (has_prev & has_next & (rv[prev] < rmin - params.max_step)
                 & (rv[nxt] < rmin - params.max_step))
    return flag


def detect_cones_scan(ranges: Any, angle_min: float, angle_increment: float,
                      params: ScanConeParams = ScanConeParams()
                      ) -> ScanCones:
    """
    Detect cones in a scan (ranges in m, angles in rad, scan frame).

    ``ranges`` (N,) may hold NaN/inf (invalid beams); an empty scan gives no
    cones. Raises ``ValueError`` for a non-1-D or non-numeric ``ranges`` or a
    zero/non-finite ``angle_increment``.
    """
    c = cluster_scan(ranges, angle_min, angle_increment, params)
    start, count = c['start'], c['count']
    k = start.size
    if k == 0:
        return ScanCones()
    rv, av, x, y = c['range'], c['angle'], c['x'], c['y']
    last = start + count - 1
    size = np.hypot(x[last] - x[start], y[last] - y[start])
    rmin = np.minimum.reduceat(rv, start)
    rmax = np.maximum.reduceat(rv, start)
    depth = rmax - rmin
    rs, rb = params.radius_small, params.radius_big
    inc = abs(float(angle_increment))
    noise = params.range_noise
    big = size > rs + rb
    radius = np.where(big, rb, rs)
    n_small = _expected_count(rmin + rs, rs, inc)
    n_big = _expected_count(rmin + rb, rb, inc)
    lo = np.maximum(params.min_points, np.floor(params.count_lo * n_small))
    hi = np.ceil(params.count_hi * n_big) + 1.0
    ok = ((count >= lo) & (count <= hi)
          & (size <= 2.0 * rb + params.width_margin + 2.0 * noise)
          & (depth <= rb + params.width_margin + 4.0 * noise))
    if params.reject_surface and k > 1:
        ok &= ~_on_surface(c, start, last, params)
    sel = np.flatnonzero(ok)
    if sel.size == 0:
        return ScanCones(n_clusters=int(k))
    bearing = 0.5 * (av[start] + av[last])
    if params.refine:
        phi = av - bearing[c['label']]
        rad_pt = radius[c['label']]
        cross = rv * np.sin(phi)
        implied = rv * np.cos(phi) + np.sqrt(
            np.maximum(rad_pt * rad_pt - cross * cross, 0.0))
        dist = np.add.reduceat(implied, start) / count
    else:
        mid = start + count // 2
        dist = rv[mid]
        bearing = av[mid]
    conf = np.clip(count / np.maximum(n_small, 1.0), 0.1, 1.0)
    xy = np.column_stack((dist * np.cos(bearing), dist * np.sin(bearing)))
    return ScanCones(xy=xy[sel], distance=dist[sel], bearing=bearing[sel],
                     size=size[sel], depth=depth[sel],
                     n_points=count[sel].astype(np.int64),
                     n_expected=n_small[sel], big=big[sel],
                     confidence=conf[sel], n_clusters=int(k))


def detect_cones_laserscan(msg: Any, params: ScanConeParams = ScanConeParams(),
                           intensities_check: bool = True
                           ) -> ScanCones:
    """
    Detect cones in a ``sensor_msgs/LaserScan`` message.

    Raises ``ValueError`` for a zero/non-finite ``angle_increment`` or, when
    ``intensities_check``, intensities whose length differs from ranges.
    """
    ranges = np.asarray(msg.ranges, dtype=np.float32)
    if intensities_check:
        n_int = len(msg.intensities)
        if n_int not in (0, ranges.size):
            raise ValueError(f'LaserScan has {n_int} intensities for '
                             f'{ranges.size} ranges')
    return detect_cones_scan(ranges, msg.angle_min, msg.angle_increment,
                             params)


def naive_detect_cones_scan(ranges: Any, angle_min: float,
                            angle_increment: float,
                            params: Optional[ScanConeParams] = None
                            ) -> np.ndarray:
    """
    Algorithm 1 as a plain per-point Python loop (benchmark baseline only).

    Same crop, split and gates as :func:`detect_cones_scan` without the
    surface check and the refinement; returns (N, 2) centre points.
    Do not use on a hot path.
    """
    p = params or ScanConeParams()
    rs, rb = p.radius_small, p.radius_big
    inc = abs(float(angle_increment))
    pts = []
    for i, rng in enumerate(ranges):
        a = angle_min + i * angle_increment
        if (p.angle_min <= a <= p.angle_max and math.isfinite(rng)
                and p.range_min <= rng <= p.range_max):
            pts.append((i, float(rng), a))
    out = []
    cluster = []

    def close(cl: list) -> None:
        if not cl:
            return
        xs = [q[1] * math.cos(q[2]) for q in cl]
        ys = [q[1] * math.sin(q[2]) for q in cl]
        size = math.hypot(xs[-1] - xs[0], ys[-1] - ys[0])
        rmin = min(q[1] for q in cl)
        depth = max(q[1] for q in cl) - rmin
        n_s = 2.0 * math.asin(min(1.0, rs / (rmin + rs))) / inc
        n_b = 2.0 * math.asin(min(1.0, rb / (rmin + rb))) / inc
        lo = max(p.min_points, math.floor(p.count_lo * n_s))
        hi = math.ceil(p.count_hi * n_b) + 1
        if (lo <= len(cl) <= hi
                and size <= 2 * rb + p.width_margin + 2 * p.range_noise
                and depth <= rb + p.width_margin + 4 * p.range_noise):
            mid = len(cl) // 2
            out.append((xs[mid], ys[mid]))

    prev = None
    for q in pts:
        if prev is not None:
            step = math.hypot(q[1] * math.cos(q[2]) - prev[1] * math.cos(prev[2]),
                              q[1] * math.sin(q[2]) - prev[1] * math.sin(prev[2]))
            if step > p.max_step or q[0] - prev[0] > p.max_gap + 1:
                close(cluster)
                cluster = []
        cluster.append(q)
        prev = q
    close(cluster)
    return np.array(out, dtype=np.float64).reshape(-1, 2)
