# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Lap 1's line through the lane seen so far: least curvature, within the steering.

Pure numpy/scipy (no rclpy). Vehicle frame of the car (REP-103, x
forward, y left, metres, radians; rear-axle origin), the line is for the
rear-axle centre. Input: a :class:`path_planning.lane.LaneView` (the
lane's two boundary chains and its centre ahead, from the local cone
map).

The lane centre from the car's foot point on (at most ``horizon`` m) is
smoothed and resampled every ``step`` m: stations ``r_i`` with left
normals ``n_i``; the line is ``p_i = r_i + a_i n_i``. Its curvature is
linear in the offsets to first order (:func:`path_planning.raceline.
curvature_matrix`: ``kappa_i = k0_i + (a_{i-1} - 2 a_i + a_{i+1}) / h^2
+ k0_i^2 a_i``). One convex QP (:func:`path_planning.qp.admm_qp`):

* minimise ``sum kappa_i^2`` (plus a small pull to the centre), the
  line a car takes to carry speed: outside - apex - outside;
* ``|kappa_i| <= max_curvature`` (``curvature_fraction`` of the
  steering's ``tan(max_steer) / L``): the line is one the car can drive.
  A 9 m hairpin (centre-line radius 3.05 m) is tighter than ``fs_car``'s
  3.28 m turning radius: the centre cannot be followed, the line must
  use the lane's width;
* each offset keeps the car's half width, the cone radius and
  ``margin`` off both boundaries (the chains' chords, along the normal);
* it starts at the car, on its heading (``a_0``, ``a_1`` fixed);
* where the lane seen so far ends in a turn (no closed loop, the walk's
  end within ``horizon``) the line's end keeps to the turn's outside
  half, parallel to the lane: the rest of the turn is unknown, and the
  outside is where a turn tighter than seen can still be driven. The
  speed (the planner's profile, which stops at the line's end) is then
  low enough to stop where the lane ends.

Body check (``iterations`` rounds): the car's box (from the vehicle
profile) along the line must keep ``margin`` from every lane cone; where
a cone intrudes (the front corner sweeping out in a tight turn), the
bound on its side is tightened by the depth over a car length and the QP
solved again (warm-started). The result says whether the line is clear
(``clearance`` >= 0) and within the curvature limit.
"""

from dataclasses import dataclass, field
import math
import time
from typing import Optional, Tuple

from hil_bridge.interface.speed_profile import resample_polyline
from hil_bridge.interface.track import arc_length
import numpy as np
from path_planning.line_qp import LineQP
from path_planning.raceline import (box_intrusion, polyline_normals, ray_distance,
                                    signed_curvature)
from scipy.ndimage import maximum_filter1d, median_filter


#: cones farther than this (m) beyond a station's boundary are another section's
BESIDE = 1.0
#: a cone this far (m) inside the margin is accepted without another QP round
INTRUSION_TOL = 0.03
#: over this arc length (m) from the start the bounds give way to the start's arc
START_RELAX = 1.5
#: arc length (m) of the median a kink's curvature is compared with
KINK_WINDOW = 4.0
#: stations this far (m) either side of a kink are smoothed with it
KINK_SPREAD = 1.0
#: smoothing rounds at most (each moves a kink's stations halfway to their neighbours)
KINK_ROUNDS = 20


@dataclass(frozen=True)
class LaneLineParams:
    """
    Geometry and limits of the lane line (metres, radians, 1/m).

    ``wheelbase`` / ``max_steer`` the steering (curvature limit
    ``curvature_fraction * tan(max_steer) / wheelbase``); ``half_width``,
    ``front`` (rear axle to front bumper), ``rear`` (rear axle to rear
    bumper) the car's box; ``cone_radius``; ``margin`` kept to the cones
    beside that; ``step`` station spacing; ``horizon`` the longest line;
    ``smooth`` arc length of the moving average over the lane centre;
    ``max_search`` how far a boundary is looked for along a normal;
    ``iterations`` body-check rounds; ``centre_weight`` the pull of the
    offsets to the centre (1/m^4, relative to the curvature term);
    ``smoothness`` (m^2) the weight of the curvature's rate of change
    (``sum kappa^2 + smoothness * sum (d kappa / ds)^2``); ``keep_weight``
    (1/m^2) and ``keep_length`` (m): the pull to the last line;
    ``start_weight`` the pull of the first station's curvature to the
    start's (soft: where the lane needs more, the limit wins);
    ``outside_turn`` the lane's curvature (1/m) at its end above which
    the end keeps to the outside; ``far_margin`` (m) more room kept off
    the boundaries and cones ahead, growing from 0 at the line's start to
    the full value ``far_margin_ramp`` m along it (a cone entering it
    moves the line ahead, never the line at the car; the body check and
    ``clearance`` use ``margin`` only); ``error_share`` (0-1) of the car's
    offset from a line started on the last one is kept as more room on
    the car's side; ``kink_ratio`` and ``kink_curvature`` (1/m): a
    station of the smoothed lane centre bending more than both
    ``kink_ratio`` times the median over :data:`KINK_WINDOW` m around it
    and ``kink_curvature`` is a kink; a line that is not drivable is
    planned once more about the centre without its kinks
    (:func:`remove_kinks`; ``kink_ratio`` 0 = off).
    """

    wheelbase: float = 1.53
    max_steer: float = math.radians(25.0)
    half_width: float = 0.7
    front: float = 2.3
    rear: float = 0.6
    cone_radius: float = 0.114
    margin: float = 0.12
    curvature_fraction: float = 0.95
    step: float = 0.5
    horizon: float = 30.0
    smooth: float = 2.0
    max_search: float = 5.0
    iterations: int = 3
    centre_weight: float = 1e-4
    smoothness: float = 0.5
    keep_weight: float = 0.0
    keep_length: float = 6.0
    start_weight: float = 3.0
    outside_turn: float = 0.08
    far_margin: float = 0.0
    far_margin_ramp: float = 6.0
    error_share: float = 0.0
    kink_ratio: float = 1.8
    kink_curvature: float = 0.3

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('wheelbase', 'max_steer', 'half_width', 'step', 'horizon',
                     'max_search', 'outside_turn', 'far_margin_ramp'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'LaneLineParams.{name} must be finite and > 0, got {value}')
        for name in ('front', 'rear', 'cone_radius', 'margin', 'smooth', 'centre_weight',
                     'smoothness', 'keep_weight', 'keep_length', 'start_weight',
                     'far_margin', 'error_share', 'kink_ratio', 'kink_curvature'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'LaneLineParams.{name} must be finite and >= 0, got {value}')
        if self.error_share > 1.0:
            raise ValueError('LaneLineParams.error_share must be in [0, 1]')
        if not 0.0 < self.curvature_fraction <= 1.0:
            raise ValueError('LaneLineParams.curvature_fraction must be in (0, 1]')
        if self.iterations < 0:
            raise ValueError('LaneLineParams.iterations must be >= 0')

    @property
    def max_curvature(self) -> float:
        """Return the line's curvature limit (1/m)."""
        return self.curvature_fraction * math.tan(self.max_steer) / self.wheelbase

    @property
    def keep(self) -> float:
        """Return the clearance of the rear-axle line to a boundary (m)."""
        return self.half_width + self.cone_radius + self.margin


@dataclass
class LaneLine:
    """
    The planned line (vehicle frame, from the car).

    ``xy`` (N, 2) the rear-axle line ``step`` apart, starting at the car;
    ``kappa`` (N,) its signed curvature (1/m, + left); ``ok`` False when
    no line could be planned (``reason``); ``clearance`` the smallest gap
    (m) between the car's box along the line and a lane cone's edge
    (negative: a cone intrudes); ``max_kappa`` its largest ``|kappa|``;
    ``open_end`` the end keeps to the outside of an unfinished turn;
    ``iterations`` QP iterations in all; ``solve_ms`` wall time;
    ``offsets`` (N,) along the reference's normals (m); ``dekinked`` the
    line was planned again about the lane centre without its kinks (the
    first, about the centre as it is, was not drivable).
    """

    xy: np.ndarray
    kappa: np.ndarray
    ok: bool
    reason: str = ''
    clearance: float = math.inf
    max_kappa: float = 0.0
    open_end: bool = False
    iterations: int = 0
    solve_ms: float = 0.0
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dekinked: bool = False

    @property
    def length(self) -> float:
        """Length of the line along its points (m)."""
        if self.xy.shape[0] < 2:
            return 0.0
        return float(np.hypot(*np.diff(self.xy, axis=0).T).sum())


def _smooth_open(xy: np.ndarray, n: int) -> np.ndarray:
    """
    Return a moving average over 2n+1 points; the first n on a fitted line.

    The window shrinks towards the last point (the ends stay put); the
    first n points lie on the least-squares line through the first 2n+1,
    which passes through their mean, the average at point n. A window
    shrinking to the first point kept the polyline's kinks there, where
    the lane line starts (at the car).
    """
    m = len(xy)
    if n <= 0 or m < 3:
        return xy
    c = np.vstack([np.zeros((1, 2)), np.cumsum(xy, axis=0)])
    i = np.arange(m)
    half = np.minimum(np.minimum(i, m - 1 - i), n)   # symmetric window
    out = (c[i + half + 1] - c[i - half]) / (2 * half + 1)[:, None]
    k = min(n, (m - 1) // 2)
    if k > 0:
        t = np.arange(-k, k + 1, dtype=np.float64)
        win = xy[:2 * k + 1]
        mean = win.mean(axis=0)
        slope = (t @ (win - mean)) / float(t @ t)
        out[:k] = mean + (np.arange(k) - k)[:, None] * slope[None, :]
    return out


def _reference(centre: np.ndarray, p: LaneLineParams) -> Optional[np.ndarray]:
    """Return the smoothed lane centre from the car's foot point on, ``step`` apart."""
    if centre.shape[0] < 2 or not np.any(np.diff(centre, axis=0)):
        return None                              # a point, not a lane
    pts = resample_polyline(centre, False, 0.25)
    d = np.hypot(pts[:, 0], pts[:, 1])
    j = int(np.argmin(d))
    # the foot point: back a little so the car lies beside the first station
    pts = pts[max(j - 1, 0):]
    if pts.shape[0] < 3:
        return None
    if j == 0:
        # the car is behind the lane's first midpoint (at the start line, the
        # first gate ahead): the lane goes on straight back to the car's foot,
        # so the line starts beside the car (an arc from the car extrapolated
        # to a station metres ahead puts the start far off at full lock)
        u = (pts[1] - pts[0]) / np.hypot(*(pts[1] - pts[0]))
        back = -float(pts[0] @ u)                  # the car's foot along u (m, < 0: behind)
        if back < -0.25:
            s_ext = np.arange(back, 0.0, 0.25)[:, None]
            pts = np.vstack([pts[0] + s_ext * u, pts])
    pts = pts[arc_length(pts, closed=False) <= p.horizon + 1.0]
    if pts.shape[0] < 3:
        return None
    pts = _smooth_open(pts, int(round(0.5 * p.smooth / 0.25)))
    try:
        ref = resample_polyline(pts, False, p.step)
    except ValueError:
        return None
    return ref if ref.shape[0] >= 4 else None


def remove_kinks(ref: np.ndarray, step: float, ratio: float, min_kappa: float,
                 rounds: int = KINK_ROUNDS) -> np.ndarray:
    """
    Return the open polyline ``ref`` (N, 2) with its kinks smoothed out, ``step`` m apart.

    A kink is a point bending more than ``min_kappa`` (1/m) and ``ratio``
    times the median ``|kappa|`` over :data:`KINK_WINDOW` m around it: a
    gate midpoint far off its neighbours. A hairpin bends as much over its
    whole arc and is no kink. The points within :data:`KINK_SPREAD` m of a
    kink move halfway to their neighbours' mean, round after round, until
    none is left (at most ``rounds``); the ends stay, and the first two
    points (the start at the car) are never a kink. Why: the line's
    curvature is linear in its offsets only to first order (the error
    grows with the reference's curvature times the offset); on a public
    track a 0.6 1/m kink with the line 0.9 m to its outside gave the line
    0.37 1/m where the QP planned 0.23, beyond the steering. Returns
    ``ref`` itself when it has no kink.
    """
    n = ref.shape[0]
    if n < 5 or ratio <= 0.0:
        return ref
    win = max(int(round(KINK_WINDOW / step)) | 1, 3)
    spread = 2 * max(int(round(KINK_SPREAD / step)), 0) + 1
    out = ref.astype(np.float64, copy=True)
    moved = False
    for _ in range(rounds):
        k = np.abs(signed_curvature(out, closed=False))
        kink = (k > ratio * median_filter(k, size=win, mode='nearest')) & (k > min_kappa)
        kink[:2] = False
        if not kink.any():
            break
        near = maximum_filter1d(kink.astype(np.uint8), spread, mode='constant') > 0
        near[[0, -1]] = False
        inner = near[1:-1]
        lap = 0.5 * (out[:-2] + out[2:]) - out[1:-1]
        out[1:-1][inner] += 0.5 * lap[inner]
        moved = True
    if not moved:
        return ref
    try:
        return resample_polyline(out, False, step)
    except ValueError:
        return ref


def start_offsets(ref: np.ndarray, nrm: np.ndarray, start: Tuple[float, float, float],
                  kappa: Optional[float], count: int = 3) -> np.ndarray:
    """
    Return the offsets (count,) of the first stations on the arc that leaves ``start``.

    ``start`` (x, y, heading) and ``kappa`` (1/m, None: 0) the arc's
    curvature there; each offset is where the arc (to second order,
    ``start + t u + kappa t^2 / 2 u_left``) crosses the station's normal.
    The stations may lie a little behind the start: the arc is continued
    backwards, so the line's first steps have the start's heading and
    curvature.
    """
    sx, sy, sth = (float(v) for v in start)
    p0 = np.array([sx, sy])
    u = np.array([math.cos(sth), math.sin(sth)])
    left = np.array([-u[1], u[0]])
    k = 0.0 if kappa is None else float(kappa)
    out = np.zeros(count)
    for i in range(count):
        tang = np.array([nrm[i, 1], -nrm[i, 0]])
        den = float(u @ tang)
        t = float((ref[i] - p0) @ tang) / den if den > 0.3 else 0.0
        point = p0 + t * u + 0.5 * k * t * t * left
        out[i] = float((point - ref[i]) @ nrm[i])
    return out


def box_bounds(ref: np.ndarray, nrm: np.ndarray, cones: np.ndarray, side: np.ndarray,
               d_l: np.ndarray, d_r: np.ndarray, p: LaneLineParams,
               extra: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return the offset bounds (lo, hi) (N,) the cones beside the car's box set.

    The box (``front`` + ``rear`` long, ``half_width`` each side, plus the
    cone radius and ``margin``) sits on station ``ref[i]`` heading along
    the station's tangent (normal ``nrm[i]``); a cone within its length
    bounds the offset: a left cone (``side`` +1) from above, a right one
    (-1) from below, another (0) on the side of the station it lies on.
    Only cones within :data:`BESIDE` m beyond the station's boundaries
    (``d_l`` left, ``d_r`` right, m) count: the rest belong to another
    section (the far leg of a hairpin, a section side by side). ``extra``
    (N,) m of room added at each station (default none).
    """
    tang = np.column_stack([nrm[:, 1], -nrm[:, 0]])
    rel = cones[None, :, :] - ref[:, None, :]
    lx = np.einsum('ijk,ik->ij', rel, tang)
    ly = np.einsum('ijk,ik->ij', rel, nrm)
    r = p.cone_radius
    beside = (lx >= -p.rear - r) & (lx <= p.front + r)
    beside &= (ly < d_l[:, None] + BESIDE) & (ly > -d_r[:, None] - BESIDE)
    keep = p.half_width + r + p.margin
    if extra is not None:
        keep = keep + extra[:, None]
    left = np.where(side[None, :] != 0, side[None, :] > 0, ly > 0.0)
    hi = np.min(np.where(beside & left, ly - keep, np.inf), axis=1, initial=np.inf)
    lo = np.max(np.where(beside & ~left, ly + keep, -np.inf), axis=1, initial=-np.inf)
    return lo, hi


def plan_lane_line(centre: np.ndarray, left: np.ndarray, right: np.ndarray,
                   cones: np.ndarray, side: np.ndarray, p: LaneLineParams,
                   closed: bool = False,
                   start: Tuple[float, float, float] = (0.0, 0.0, 0.0),
                   start_kappa: Optional[float] = None,
                   previous: Optional[np.ndarray] = None) -> LaneLine:
    """
    Return the line through the lane (see the module doc).

    ``centre`` (Q, 2) the lane centre (gate midpoints) in the vehicle
    frame, from a few gates behind the car to the end of the walked lane;
    ``left`` / ``right`` (K, 2) the boundary chains in driving order;
    ``cones`` (C, 2) the cones the car's box must clear and ``side`` (C,)
    the side each must stay on (+1 left, -1 right, 0 either); ``closed``
    the lane is a closed loop (its end is not the end of what is known);
    ``start`` (x, y, heading) where the line starts (default the car:
    a planner that follows its last line starts the next one on it, so
    the car's tracking error is corrected by feedback, not re-planned).
    """
    t0 = time.perf_counter()
    ref = _reference(np.asarray(centre, dtype=np.float64), p)
    if ref is None:
        return LaneLine(np.zeros((0, 2)), np.zeros(0), False, 'lane too short')
    args = (left, right, cones, side, p, closed, start, start_kappa, previous)
    line = _plan_about(ref, *args)
    if p.kink_ratio > 0.0 and line_rank(line, p)[0] != 0:
        # beyond the steering or into a cone: where the lane centre has a
        # kink, the QP's linearised curvature is far off; plan once more
        # about the centre without its kinks and keep the better line
        smooth = remove_kinks(ref, p.step, p.kink_ratio, p.kink_curvature)
        if smooth is not ref and smooth.shape[0] >= 4:
            again = _plan_about(smooth, *args)
            again.iterations += line.iterations
            again.dekinked = True
            if line_rank(again, p) < line_rank(line, p):
                line = again
    line.solve_ms = (time.perf_counter() - t0) * 1e3
    return line


def line_rank(line: LaneLine, p: LaneLineParams) -> Tuple[int, float]:
    """
    Return a sort key of lane lines: drivable first, then least beyond the limits.

    Drivable (first item 0): its largest curvature within 2 % of the
    limit and clear of the cones (clearance >= 0).
    """
    if not line.ok:
        return 3, math.inf
    over = max(line.max_kappa / p.max_curvature - 1.0, 0.0)
    short = max(-line.clearance, 0.0)
    bad = (over > 0.02) + (line.clearance < 0.0)
    return int(bad), over + short


def _plan_about(ref: np.ndarray, left: np.ndarray, right: np.ndarray, cones: np.ndarray,
                side: np.ndarray, p: LaneLineParams, closed: bool,
                start: Tuple[float, float, float], start_kappa: Optional[float],
                previous: Optional[np.ndarray]) -> LaneLine:
    """Return the line about the reference stations ``ref`` (see :func:`plan_lane_line`)."""
    empty = np.zeros((0, 2))
    nrm = polyline_normals(ref, closed=False)
    d_l = ray_distance(ref, nrm, left, p.max_search, closed=False)
    d_r = ray_distance(ref, -nrm, right, p.max_search, closed=False)
    both = np.isfinite(d_l) & np.isfinite(d_r)
    if not both.any():
        return LaneLine(empty, np.zeros(0), False, 'no boundary beside the lane')
    width = float(np.median(d_l[both] + d_r[both]))
    d_l = np.where(np.isfinite(d_l), d_l, np.where(np.isfinite(d_r), width - d_r, np.nan))
    d_r = np.where(np.isfinite(d_r), d_r, width - d_l)
    known = np.isfinite(d_l)
    first = int(np.argmax(known))
    if 0 < first < len(known) and known[first]:
        # stations behind the first gate (the lane extended back to the car)
        # keep the first gate's boundaries
        d_l[:first], d_r[:first], known[:first] = d_l[first], d_r[first], True
    # the lane is known up to the first station without either boundary
    last = int(np.argmin(known)) if not known.all() else len(ref)
    if last < 4:
        return LaneLine(empty, np.zeros(0), False, 'no boundary beside the lane')
    ref, nrm, d_l, d_r = ref[:last], nrm[:last], d_l[:last], d_r[:last]
    n = len(ref)
    h = p.step
    k0 = signed_curvature(ref, closed=False)
    k0[0], k0[-1] = k0[1], k0[-2]
    # start: the car's offset and heading
    relax = min(int(round(START_RELAX / p.step)) + 2, len(ref))
    a_start = start_offsets(ref, nrm, start, start_kappa, relax)
    a0, a1 = float(a_start[0]), float(a_start[1])
    # more room ahead than at the start (far_margin, 0 = off)
    extra = p.far_margin * np.clip(np.arange(n) * h / p.far_margin_ramp, 0.0, 1.0) \
        if p.far_margin > 0.0 else None
    keep = p.keep if extra is None else p.keep + extra
    hi = d_l - keep
    lo = -d_r + keep
    if cones.shape[0]:
        # the car's box along the lane (heading of the centre): each cone
        # beside it bounds the offset on its side
        b_lo, b_hi = box_bounds(ref, nrm, cones, side, d_l, d_r, p, extra)
        hi = np.minimum(hi, b_hi)
        lo = np.maximum(lo, b_lo)
    # a line started on the last one (not at the car): the car is off it by
    # its tracking error, and its box with it; that side gets error_share of
    # the error as more room over the first far_margin_ramp m, fading over
    # the next as the feedback brings the car back (else a car 0.15 m
    # outside its line at 5 m/s touched the cone the line passed with
    # exactly the margin)
    sx, sy, sth = (float(v) for v in start)
    off = p.error_share * (sx * math.sin(sth) - sy * math.cos(sth))  # + car left of line
    if abs(off) > 1e-3:
        fade = np.clip(2.0 - np.arange(n) * h / p.far_margin_ramp, 0.0, 1.0)
        if off > 0.0:
            hi = hi - off * fade
        else:
            lo = lo - off * fade
    # near the start the bounds give way to where the car goes anyway: a car
    # already nearer a cone than the margin is brought back smoothly, not
    # by a kink the steering cannot follow
    hi[:relax] = np.maximum(hi[:relax], a_start)
    lo[:relax] = np.minimum(lo[:relax], a_start)
    open_end = False
    if not closed and n >= 8:
        tail = max(int(round(3.0 / h)), 2)
        k_end = float(np.mean(k0[-tail:]))
        if abs(k_end) >= p.outside_turn:
            # an unfinished turn: the end on the outside half, parallel to the lane
            open_end = True
            m = max(int(round(1.0 / h)), 1)
            if k_end > 0.0:
                hi[-m:] = np.minimum(hi[-m:], 0.0)
            else:
                lo[-m:] = np.maximum(lo[-m:], 0.0)
    fixed = [a0, a1]
    prev = None
    if previous is not None and previous.shape[0] >= 2 and p.keep_weight > 0.0:
        # the last line's offsets along the normals, over its first keep_length m
        near = np.arange(n) * h <= p.keep_length
        hit_l = ray_distance(ref[near], nrm[near], previous, p.max_search,
                             closed=False)
        hit_r = ray_distance(ref[near], -nrm[near], previous, p.max_search,
                             closed=False)
        off = np.where(hit_l <= hit_r, hit_l, -hit_r)
        prev = np.full(n, np.nan)
        prev[near] = np.where(np.isfinite(off), off, np.nan)
    qp = LineQP(n, h, k0, np.array(fixed), p.max_curvature, centre_weight=p.centre_weight,
                smoothness=p.smoothness, open_end=open_end, prev=prev,
                keep_weight=p.keep_weight, start_kappa=start_kappa,
                start_weight=p.start_weight)
    extra_l = np.zeros(n)
    extra_r = np.zeros(n)
    spread = 2 * int(math.ceil((p.front + p.rear) / h)) + 1
    total_it = 0
    line = ref
    clearance = math.inf
    alpha = np.zeros(n)
    for rnd in range(p.iterations + 1):
        b_hi = hi - extra_l
        b_lo = lo + extra_r
        pinch = b_lo >= b_hi
        mid = 0.5 * (b_lo + b_hi)
        b_lo = np.where(pinch, mid - 1e-3, b_lo)
        b_hi = np.where(pinch, mid + 1e-3, b_hi)
        alpha, its = qp.solve(b_lo, b_hi)
        total_it += its
        line = ref + alpha[:, None] * nrm
        tang = np.gradient(line, axis=0)
        heading = np.arctan2(tang[:, 1], tang[:, 0])
        if cones.shape[0] == 0:
            clearance = math.inf
            break
        in_l, in_r = box_intrusion(line, heading, cones, _Box(p), p.cone_radius + p.margin,
                                   p.cone_radius)
        worst = float(max(in_l.max(initial=0.0), in_r.max(initial=0.0)))
        clearance = p.margin - worst if worst > 0.0 else p.margin
        if worst <= INTRUSION_TOL or rnd == p.iterations:
            break
        extra_l += maximum_filter1d(np.where(in_l > 1e-3, in_l + 0.02, 0.0), spread,
                                    mode='nearest')
        extra_r += maximum_filter1d(np.where(in_r > 1e-3, in_r + 0.02, 0.0), spread,
                                    mode='nearest')
    kappa = signed_curvature(line, closed=False)
    kappa[0] = kappa[1] if n > 1 else 0.0
    kappa[-1] = kappa[-2] if n > 1 else 0.0
    return LaneLine(xy=line, kappa=kappa, ok=True, clearance=clearance,
                    max_kappa=float(np.max(np.abs(kappa[2:]), initial=0.0)),
                    open_end=open_end, iterations=total_it, offsets=alpha)


def beyond_steering(line: LaneLine, limit: float, distance: float,
                    steering: Optional[float] = None) -> int:
    """
    Return the side (+1 left, -1 right) the line first bends beyond ``limit``.

    Looks at the line's first ``distance`` m (0 if its curvature stays
    within ``limit`` 1/m there, or ``distance`` <= 0). A car following
    such a line must already steer to its stop: the tracking law's
    feedback builds up only as the car falls off the line, too late in a
    hairpin at the turning limit. ``steering`` (rad, + left), when given,
    is what the tracking law asks for: a side against it gives 0. Where
    the car is beside a tight turn's kinked lane centre, the line's first
    stations can bend the wrong way (its linearised curvature is far off
    there: +0.45 1/m planned as -0.42 at the start of a right turn on a
    public track); full lock to that side held the car wide for 0.6-1 s
    and put it on the outer cones.
    """
    if distance <= 0.0 or not line.ok or line.xy.shape[0] < 2:
        return 0
    s = arc_length(line.xy, closed=False)
    over = np.flatnonzero((np.abs(line.kappa) > limit) & (s <= distance))
    if over.size == 0:
        return 0
    side = 1 if line.kappa[over[0]] > 0.0 else -1
    if steering is not None and side * steering <= 0.0:
        return 0
    return side


def line_speed(line: LaneLine, speed: float, max_speed: float, a_lat_max: float,
               decel: float, kappa_rate: float, tight_kappa: float = math.inf,
               tight_speed: float = math.inf, latency: float = 0.3,
               end_margin: float = 1.0) -> float:
    """
    Return the speed (m/s) allowed at the car on ``line``.

    Every station's limit is ``sqrt(a_lat_max / |kappa|)``,
    ``kappa_rate / |d kappa / ds|`` (the steering turns at a limited rate:
    ``kappa_rate`` 1/(m s)) and, where ``|kappa| >= tight_kappa`` (the
    steering nearly at its stop: no room left to correct an error at
    speed), ``tight_speed``; the car must reach each one braking at
    ``decel`` after ``latency`` s at its current ``speed``, and stop
    ``end_margin`` m before the line's end (what lies beyond is unknown).
    """
    if line.xy.shape[0] < 3:
        return 0.0
    s = arc_length(line.xy, closed=False)
    k = np.abs(line.kappa)
    dk = np.abs(np.gradient(line.kappa, s))
    v_i = np.minimum(np.sqrt(a_lat_max / np.maximum(k, 1e-9)),
                     kappa_rate / np.maximum(dk, 1e-9))
    v_i = np.where(k >= tight_kappa, np.minimum(v_i, tight_speed), v_i)
    reach = np.maximum(s - max(speed, 0.0) * latency, 0.0)
    v = float(np.min(np.sqrt(v_i ** 2 + 2.0 * decel * reach)))
    v = min(v, math.sqrt(2.0 * decel * max(float(s[-1]) - end_margin, 0.0)))
    return min(v, max_speed)


@dataclass(frozen=True)
class _Box:
    """The car's box for :func:`path_planning.raceline.box_intrusion` (length, width, rear)."""

    length: float
    width: float
    rear_overhang: float

    def __init__(self, p: LaneLineParams) -> None:
        object.__setattr__(self, 'length', p.front + p.rear)
        object.__setattr__(self, 'width', 2.0 * p.half_width)
        object.__setattr__(self, 'rear_overhang', p.rear)
