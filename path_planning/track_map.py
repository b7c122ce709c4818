# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The whole-track map after lap 1: loop closure and closed boundaries (no rclpy).

Frames: everything in ``map`` (REP-103, x forward, y left; metres,
radians), as the odometry pose and the cone map are.

:class:`LapRecorder` keeps the odometry path of lap 1 (a point every
``record_step`` metres) and closes the loop when the car, having driven at
least ``min_loop_length``, is back within ``closure_radius`` of where it
started and heads the same way (within ``closure_heading``).

:func:`build_track_map` turns the mapped cones and that closed path into a
:class:`TrackMap`: each cone is projected on the driven path (arc position
``s`` and signed lateral offset, + left); blue cones are left boundary
cones, yellow right; cones without a side colour (orange, big orange,
unknown: lidar-only) take the side of their offset. Cones farther than
``max_offset`` from the path (other sections seen across, spectators'
cones) are ignored. Each side is ordered by ``s`` into a closed polyline.
The map is refused, with a reason, when

* the path does not close (its ends are more than ``closure_radius``
  apart) or is shorter than ``min_loop_length``;
* a side has fewer than ``min_cones`` cones, or two consecutive cones of a
  side are farther apart than ``max_gap`` (the rules allow 5 m);
* more than ``max_colour_conflicts`` of the coloured cones lie on the side
  their colour does not belong to (a mirrored or a wrongly driven map);
* the track is narrower than ``min_width`` or wider than ``max_width``
  somewhere (distance between the two boundary polylines along the path);
* with big orange cones in the map, fewer than ``min_start_cones`` of them
  lie within ``start_radius`` of the start (lidar-only maps have no
  colours, and some real track files mark their timing line with timing
  sensors, not big orange cones (PacSim's competition maps): there the
  odometry closure stands alone).

A cone the boundary walk put in a chain (``side`` label) is a boundary
cone whatever its offset: on a wide track the car's line passes the outer
cones of a corner farther than ``max_offset`` (eth vdcs FSG: a 10.9 m
"gap" from one such cone left out).
"""

from dataclasses import dataclass, field
import math
from typing import List, Optional, Tuple

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_YELLOW
import numpy as np


@dataclass(frozen=True)
class TrackMapParams:
    """
    Limits of loop closure and map checks (m, rad).

    See the module docstring for what each limit rejects.
    """

    record_step: float = 0.5
    min_loop_length: float = 100.0
    closure_radius: float = 4.0
    closure_heading: float = math.radians(60.0)
    max_gap: float = 5.5
    max_offset: float = 3.5
    min_cones: int = 8
    max_colour_conflicts: float = 0.1
    min_width: float = 2.3
    max_width: float = 8.0
    width_step: float = 2.0
    start_radius: float = 15.0
    min_start_cones: int = 2

    def __post_init__(self) -> None:
        """Validate every limit (ValueError naming the field)."""
        for name in ('record_step', 'min_loop_length', 'closure_radius', 'closure_heading',
                     'max_gap', 'max_offset', 'min_width', 'max_width', 'width_step',
                     'start_radius'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'TrackMapParams.{name} must be finite and > 0, got {value}')
        if not 0.0 <= self.max_colour_conflicts <= 1.0:
            raise ValueError('TrackMapParams.max_colour_conflicts must be in [0, 1]')
        if self.min_cones < 3 or self.min_start_cones < 0:
            raise ValueError('TrackMapParams.min_cones must be >= 3, min_start_cones >= 0')
        if self.max_width <= self.min_width:
            raise ValueError('TrackMapParams.max_width must be > min_width')


@dataclass
class TrackMap:
    """
    A checked whole-track map in ``map`` (m).

    ``ok`` False with a ``reason`` when the map is refused. ``left`` /
    ``right`` (L, 2) / (R, 2) the boundary cones in driving order, closed
    (the last joins the first); ``path`` (K, 2) the closed driven path;
    ``cones`` (C, 2) every boundary cone (left then right); the largest
    gap of each side and the narrowest / widest track (m); how many cones
    were ignored (too far from the path) and how many coloured cones
    were on the wrong side.
    """

    ok: bool
    reason: str
    left: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    right: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    max_gap_left: float = math.inf
    max_gap_right: float = math.inf
    min_width: float = 0.0
    max_width: float = 0.0
    n_ignored: int = 0
    n_conflicts: int = 0
    n_start_cones: int = 0

    @property
    def cones(self) -> np.ndarray:
        """Return every boundary cone (C, 2), left then right (m)."""
        return np.vstack([self.left, self.right])


class LapRecorder:
    """
    The odometry path of lap 1 and its loop closure (``map``, m, rad).

    Call :meth:`update` with every pose; it returns True once, on the
    update that closes the loop. :attr:`path` is the recorded path (K, 2),
    :attr:`distance` how far the car drove since the first pose.
    """

    def __init__(self, params: TrackMapParams = TrackMapParams()) -> None:
        """Start with no pose."""
        self.params = params
        self._pts: List[Tuple[float, float]] = []
        self.start: Optional[Tuple[float, float, float]] = None
        self.distance = 0.0
        self.closed = False

    def reset(self) -> None:
        """Forget the path (a new lap 1)."""
        self.__init__(self.params)

    @property
    def path(self) -> np.ndarray:
        """Return the recorded poses (K, 2) in ``map`` (m)."""
        return np.asarray(self._pts, dtype=float).reshape(-1, 2)

    def update(self, x: float, y: float, yaw: float) -> bool:
        """Record a pose; return True when this pose closes the loop."""
        if not all(math.isfinite(v) for v in (x, y, yaw)):
            return False
        p = self.params
        if self.start is None:
            self.start = (float(x), float(y), float(yaw))
            self._pts.append((float(x), float(y)))
            return False
        if self.closed:
            return False
        lx, ly = self._pts[-1]
        step = math.hypot(x - lx, y - ly)
        if step < p.record_step:
            return False
        self.distance += step
        sx, sy, syaw = self.start
        dyaw = abs(math.atan2(math.sin(yaw - syaw), math.cos(yaw - syaw)))
        if (self.distance >= p.min_loop_length and math.hypot(x - sx, y - sy) <= p.closure_radius
                and dyaw <= p.closure_heading):
            self.closed = True
        self._pts.append((float(x), float(y)))
        return self.closed


def project_on_path(points: np.ndarray, path: np.ndarray
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return arc position ``s`` (m) and signed offset (m, + left) of points.

    ``path`` (K, 2) closed (the last point joins the first), ``points``
    (M, 2); each point is projected on its nearest path segment.
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    a = np.asarray(path, dtype=float)
    b = np.roll(a, -1, axis=0)
    e = b - a
    seg = np.hypot(e[:, 0], e[:, 1])
    s0 = np.concatenate([[0.0], np.cumsum(seg)[:-1]])
    le2 = np.maximum(seg * seg, 1e-12)
    rel = pts[:, None, :] - a[None, :, :]
    u = np.clip(np.einsum('mkj,kj->mk', rel, e) / le2, 0.0, 1.0)
    foot = a[None] + u[..., None] * e[None]
    d2 = np.sum((pts[:, None, :] - foot) ** 2, axis=2)
    k = np.argmin(d2, axis=1) if len(pts) else np.zeros(0, dtype=int)
    idx = np.arange(len(pts))
    s = s0[k] + u[idx, k] * seg[k]
    cross = e[k, 0] * rel[idx, k, 1] - e[k, 1] * rel[idx, k, 0]
    off = np.sqrt(d2[idx, k]) * np.where(cross >= 0.0, 1.0, -1.0)
    return s, off


def polyline_distance(points: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Return each point's distance (m) to a closed polyline (M,)."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    a = np.asarray(poly, dtype=float)
    e = np.roll(a, -1, axis=0) - a
    le2 = np.maximum(np.sum(e * e, axis=1), 1e-12)
    rel = pts[:, None, :] - a[None]
    u = np.clip(np.einsum('mkj,kj->mk', rel, e) / le2, 0.0, 1.0)
    d = rel - u[..., None] * e[None]
    return np.sqrt(np.min(np.sum(d * d, axis=2), axis=1))


def closed_gaps(poly: np.ndarray) -> np.ndarray:
    """Return the lengths (m) of a closed polyline's segments."""
    return np.hypot(*(np.roll(poly, -1, axis=0) - poly).T)


def build_track_map(cone_xy: np.ndarray, cone_class: np.ndarray, path: np.ndarray,
                    params: TrackMapParams = TrackMapParams(),
                    side: Optional[np.ndarray] = None) -> TrackMap:
    """
    Check a lap-1 map and order its boundaries (see the module docstring).

    ``cone_xy`` (N, 2) mapped cones and ``cone_class`` (N,) their contract
    classes; ``path`` (K, 2) the driven lap, closed (from
    :class:`LapRecorder`); all in ``map`` (m). ``side`` (N,) optional
    boundary labels from the cone map's walk (+1 left, -1 right, 0 not on
    a boundary yet): where given they replace the offset's side (the
    checks still run on the result). Never raises on bad data:
    a map that cannot be used comes back with ``ok`` False and a reason.
    """
    p = params
    xy = np.asarray(cone_xy, dtype=float).reshape(-1, 2)
    cls = np.asarray(cone_class).reshape(-1)
    drv = np.asarray(path, dtype=float).reshape(-1, 2)
    if cls.shape[0] != xy.shape[0]:
        return TrackMap(False, f'{xy.shape[0]} cones but {cls.shape[0]} classes')
    lab = np.zeros(xy.shape[0], np.int8) if side is None else np.asarray(side).reshape(-1)
    if lab.shape[0] != xy.shape[0]:
        return TrackMap(False, f'{xy.shape[0]} cones but {lab.shape[0]} side labels')
    good = np.isfinite(xy).all(axis=1)
    xy, cls, lab = xy[good], cls[good], lab[good]
    drv = drv[np.isfinite(drv).all(axis=1)]
    if drv.shape[0] < 4:
        return TrackMap(False, f'driven path has {drv.shape[0]} points')
    length = float(closed_gaps(drv).sum())
    end_gap = float(np.hypot(*(drv[-1] - drv[0])))
    if length < p.min_loop_length or end_gap > p.closure_radius:
        return TrackMap(False, f'loop not closed: path {length:.0f} m, ends {end_gap:.1f} m '
                        f'apart', path=drv)
    s, off = project_on_path(xy, drv)
    near = (np.abs(off) <= p.max_offset) | (lab != 0)
    n_ignored = int(np.count_nonzero(~near))
    is_left = np.where(lab != 0, lab > 0, off > 0.0)
    coloured = near & ((cls == CONE_BLUE) | (cls == CONE_YELLOW))
    wrong = coloured & (((cls == CONE_BLUE) & ~is_left) | ((cls == CONE_YELLOW) & is_left))
    n_conf = int(np.count_nonzero(wrong))
    base = {'path': drv, 'n_ignored': n_ignored, 'n_conflicts': n_conf}
    n_col = int(np.count_nonzero(coloured))
    if n_col and n_conf > p.max_colour_conflicts * n_col:
        return TrackMap(False, f'{n_conf} of {n_col} coloured cones on the wrong side '
                        '(mirrored map?)', **base)
    sides = []
    for mask in (near & is_left, near & ~is_left):
        order = np.argsort(s[mask], kind='stable')
        sides.append(xy[mask][order])
    left, right = sides
    for name, side in (('left', left), ('right', right)):
        if side.shape[0] < p.min_cones:
            return TrackMap(False, f'{name} boundary has {side.shape[0]} cones '
                            f'(< {p.min_cones})', **base)
    gap_l, gap_r = float(closed_gaps(left).max()), float(closed_gaps(right).max())
    base.update({'left': left, 'right': right, 'max_gap_left': gap_l, 'max_gap_right': gap_r})
    for name, gap, side in (('left', gap_l, left), ('right', gap_r, right)):
        if gap > p.max_gap:
            i = int(np.argmax(closed_gaps(side)))
            at = side[i]
            return TrackMap(False, f'{name} boundary has a {gap:.1f} m gap after the cone at '
                            f'({at[0]:.1f}, {at[1]:.1f}) (> {p.max_gap} m)', **base)
    n_steps = max(int(length / p.width_step), 4)
    probe_s = np.linspace(0.0, length, n_steps, endpoint=False)
    seg = closed_gaps(drv)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    ext = np.vstack([drv, drv[:1]])
    probe = np.column_stack([np.interp(probe_s, cum, ext[:, 0]),
                             np.interp(probe_s, cum, ext[:, 1])])
    width = polyline_distance(probe, left) + polyline_distance(probe, right)
    w_lo, w_hi = float(width.min()), float(width.max())
    base.update({'min_width': w_lo, 'max_width': w_hi})
    if w_lo < p.min_width or w_hi > p.max_width:
        i = int(np.argmin(width) if w_lo < p.min_width else np.argmax(width))
        return TrackMap(False, f'track {width[i]:.1f} m wide at ({probe[i, 0]:.1f}, '
                        f'{probe[i, 1]:.1f}) (allowed {p.min_width}-{p.max_width} m)', **base)
    n_start = 0
    big = near & (cls == CONE_BIG_ORANGE)
    if np.any(big):
        n_start = int(np.count_nonzero(big & (np.hypot(*(xy - drv[0]).T) <= p.start_radius)))
        base['n_start_cones'] = n_start
        if n_start < p.min_start_cones:
            return TrackMap(False, f'{n_start} big orange cones within {p.start_radius} m of '
                            f'the start (< {p.min_start_cones})', **base)
    return TrackMap(True, 'complete', **base)
