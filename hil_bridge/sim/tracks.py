# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Formula Student tracks: data type, generators and rule checks.

Everything is REP-103 in ``map`` (x forward, y left, z up; metres,
radians). When a car drives along ``Track.centerline`` (in the order of its
rows) the blue cones are on its left and the yellow cones on its right; big
orange cones mark the timing lines. Track files (eufs_sim and FSDS CSV,
PacSim and fssim YAML) are read by :mod:`hil_bridge.sim.track_files`;
hard layouts come from :mod:`hil_bridge.sim.track_gen_hard`.
"""

from dataclasses import dataclass
import math
import os
from typing import Callable, Dict, List, Optional, Tuple

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_SIZE,
                                        CONE_YELLOW)
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.track import (arc_length, ConeArray, MIN_WIDTH, SKIDPAD_CENTRE_DISTANCE,
                                        SKIDPAD_INNER_DIAMETER, SKIDPAD_OUTER_DIAMETER,
                                        skidpad_route, SKIDPAD_START_AFTER_ENTRY, TimingLine,
                                        Track)
from hil_bridge.sim.reference_lap import path_curvature
import numpy as np
from scipy.interpolate import splev, splprep
from scipy.spatial import cKDTree

# Rules (Formula Student autocross/trackdrive), metres.
MAX_CONE_SPACING = 5.0
MIN_HAIRPIN_OUTER_DIAMETER = 9.0
MAX_STRAIGHT = 80.0
MIN_LAP = 200.0
MAX_LAP = 500.0
#: A stretch whose curvature radius exceeds this counts as straight (m).
STRAIGHT_RADIUS = 100.0
#: The end (m) of an open track's centre line where cones close the lane.
END_ZONE = 3.0
#: Half the chord (m) over which the hairpin check measures curvature.
HAIRPIN_BASE = 2.0
#: Below this median width (m) no car fits between the boundaries: error.
MIN_DRIVABLE_WIDTH = 1.5

# Skidpad geometry (FS rules): diameters and centre distance, metres.

_GENERATED_MISSIONS = ('trackdrive', 'autocross')


# --------------------------------------------------------------- geometry
def tangents(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Return the unit tangent vectors (K, 2) of a polyline (central differences)."""
    if closed:
        d = np.roll(pts, -1, axis=0) - np.roll(pts, 1, axis=0)
    else:
        d = np.gradient(pts, axis=0)
    n = np.hypot(d[:, 0], d[:, 1])
    n[n == 0.0] = 1.0
    return d / n[:, None]


def _curvature(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Return the signed curvature (1/m, > 0 turning left) per vertex."""
    if closed:
        p0, p1, p2 = np.roll(pts, 1, axis=0), pts, np.roll(pts, -1, axis=0)
    else:
        p0 = np.vstack([pts[:1], pts[:-1]])
        p1 = pts
        p2 = np.vstack([pts[1:], pts[-1:]])
    a = p1 - p0
    b = p2 - p1
    c = p2 - p0
    cross = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    den = (np.hypot(a[:, 0], a[:, 1]) * np.hypot(b[:, 0], b[:, 1])
           * np.hypot(c[:, 0], c[:, 1]))
    out = np.zeros(len(pts))
    ok = den > 1e-12
    out[ok] = 2.0 * cross[ok] / den[ok]
    return out


def resample(pts: np.ndarray, closed: bool, step: float) -> np.ndarray:
    """Resample a polyline at (about) uniform arc length ``step`` (m)."""
    s = arc_length(pts, closed)
    ext = np.vstack([pts, pts[:1]]) if closed else pts
    n = max(int(math.ceil(s[-1] / step)), 2)
    t = np.linspace(0.0, s[-1], n, endpoint=not closed)
    return np.column_stack([np.interp(t, s, ext[:, 0]),
                            np.interp(t, s, ext[:, 1])])


def _segments_intersect(p: np.ndarray, closed: bool) -> bool:
    """Return True if non-adjacent segments of the polyline cross."""
    q = np.roll(p, -1, axis=0) if closed else p[1:]
    a = p if closed else p[:-1]
    m = len(a)
    d = q - a
    if m < 3:
        return False
    # only segments whose midpoints are within one segment length can meet
    seg = float(np.hypot(*d.T).max())
    pairs = cKDTree((a + q) / 2.0).query_pairs(
        seg * 1.01, output_type='ndarray')
    if pairs.size == 0:
        return False
    i, j = np.sort(pairs, axis=1).T
    keep = j - i >= 2
    if closed:
        keep &= ~((i == 0) & (j == m - 1))
    i, j = i[keep], j[keep]

    def orient(o: np.ndarray, u: np.ndarray, w: np.ndarray) -> np.ndarray:
        return u[:, 0] * (w[:, 1] - o[:, 1]) - u[:, 1] * (w[:, 0] - o[:, 0])
    o1 = orient(a[i], d[i], a[j])
    o2 = orient(a[i], d[i], q[j])
    o3 = orient(a[j], d[j], a[i])
    o4 = orient(a[j], d[j], q[i])
    return bool(np.any((o1 * o2 < 0.0) & (o3 * o4 < 0.0)))


def timing_line(name: str, centre: np.ndarray, direction: np.ndarray,
                half_width: float) -> TimingLine:
    n = np.array([-direction[1], direction[0]])
    return TimingLine(name=name, a=centre + n * half_width,
                      b=centre - n * half_width, direction=direction.copy())


def cone_array(xy: List[np.ndarray], cls: List[np.ndarray]) -> ConeArray:
    xy_all = np.vstack(xy).astype(np.float64) if xy else np.zeros((0, 2))
    cls_all = np.concatenate(cls).astype(np.uint8) if cls else \
        np.zeros(0, np.uint8)
    return ConeArray(xy=xy_all, class_id=cls_all,
                     knocked=np.zeros(len(cls_all), dtype=bool))


def _boundary_cones(line: np.ndarray, closed: bool, spacing: float
                    ) -> np.ndarray:
    """Place cones at uniform arc length <= ``spacing`` along a polyline."""
    s = arc_length(line, closed)
    ext = np.vstack([line, line[:1]]) if closed else line
    n = max(int(math.ceil(s[-1] / spacing - 1e-9)), 1)
    t = np.linspace(0.0, s[-1], n + (0 if closed else 1), endpoint=not closed)
    return np.column_stack([np.interp(t, s, ext[:, 0]),
                            np.interp(t, s, ext[:, 1])])


# ------------------------------------------------------------- generators
def acceleration_track(length: float = 75.0, width: float = 3.0,
                       spacing: float = 5.0, braking_zone: float = 100.0,
                       car_start_offset: float = 3.0) -> Track:
    """
    Build the FS acceleration track along +x.

    Start line at x = 0, finish line at x = ``length`` (75 m), lane
    ``width`` wide (3 m), blue/yellow cones every ``spacing`` (5 m), big
    orange cone pairs at both lines, small orange cones along the braking
    zone. The car starts ``car_start_offset`` (rear axle) behind the start
    line, heading +x.
    """
    if not (length > 0 and width > 0 and spacing > 0 and braking_zone >= 0):
        raise ValueError('acceleration_track: length, width and spacing '
                         'must be > 0, braking_zone >= 0')
    h = width / 2.0
    xs = np.arange(0.0, length + 1e-9, spacing)
    if xs[-1] < length - 1e-9:
        xs = np.append(xs, length)
    inner = xs[(xs > 1e-9) & (xs < length - 1e-9)]
    brake_x = np.arange(length + spacing, length + braking_zone + 1e-9,
                        spacing)
    xy, cls = [], []
    for side, c in ((h, CONE_BLUE), (-h, CONE_YELLOW)):
        xy.append(np.column_stack([inner, np.full(len(inner), side)]))
        cls.append(np.full(len(inner), c))
        big = np.array([[-0.4, side], [0.4, side], [length - 0.4, side],
                        [length + 0.4, side]])
        xy.append(big)
        cls.append(np.full(4, CONE_BIG_ORANGE))
        xy.append(np.column_stack([brake_x, np.full(len(brake_x), side)]))
        cls.append(np.full(len(brake_x), CONE_ORANGE))
    x0 = -car_start_offset - 2.0
    cx = np.arange(x0, length + braking_zone + 1e-9, 0.5)
    cl = np.column_stack([cx, np.zeros(len(cx))])
    ex = np.array([1.0, 0.0])
    lines = {'start': timing_line('start', np.zeros(2), ex, h + 0.5),
             'finish': timing_line('finish', np.array([length, 0.0]), ex,
                                   h + 0.5)}
    return Track(name='acceleration', cones=cone_array(xy, cls),
                 car_start=Pose(x=-car_start_offset), centerline=cl,
                 closed=False, width=width, timing_lines=lines,
                 mission='acceleration')


def skidpad_track(entry_length: float = 15.0, exit_length: float = 20.0,
                  laps_per_side: int = 2) -> Track:
    """
    Build the FS skidpad (figure of eight) with its crossing at the origin.

    Circle centres at (0, -9.125) (right circle, driven clockwise first)
    and (0, 9.125) (left circle, counter-clockwise); inner diameter
    15.25 m, outer 21.25 m, centres 18.25 m apart. The car enters along +x
    from ``entry_length`` before the crossing, drives ``laps_per_side``
    laps on the right, then on the left, and leaves along +x. The timing
    gate (``start`` = ``finish``) is across the lane at x = 0.
    """
    ri = SKIDPAD_INNER_DIAMETER / 2.0
    ro = SKIDPAD_OUTER_DIAMETER / 2.0
    d = SKIDPAD_CENTRE_DISTANCE / 2.0
    centres = {'right': np.array([0.0, -d]), 'left': np.array([0.0, d])}
    xy, cls = [], []
    for side in ('right', 'left'):
        c = centres[side]
        other = centres['left' if side == 'right' else 'right']
        # inner: angle 0 of the ring points at the crossing
        toward = math.pi / 2.0 if side == 'right' else -math.pi / 2.0
        a = toward + np.linspace(0.0, 2 * math.pi, 16, endpoint=False)
        inner = c + ri * np.column_stack([np.cos(a), np.sin(a)])
        icls = np.full(16, CONE_YELLOW if side == 'right' else CONE_BLUE)
        icls[0] = CONE_BIG_ORANGE
        xy.append(inner)
        cls.append(icls)
        a = toward + math.pi / 16 + np.linspace(0.0, 2 * math.pi, 16,
                                                endpoint=False)
        outer = c + ro * np.column_stack([np.cos(a), np.sin(a)])
        keep = np.hypot(*(outer - other).T) > ro + 0.5
        xy.append(outer[keep])
        cls.append(np.full(int(keep.sum()),
                           CONE_BLUE if side == 'right' else CONE_YELLOW))
    hw = (ro - ri) / 2.0
    for x_lo, x_hi in ((-entry_length, -ro), (ro, exit_length)):
        xs = np.arange(x_lo, x_hi + 1e-9, 2.5)
        for y in (hw, -hw):
            xy.append(np.column_stack([xs, np.full(len(xs), y)]))
            cls.append(np.full(len(xs), CONE_ORANGE))
    cl = skidpad_route(entry_length, exit_length, laps_per_side)
    ex = np.array([1.0, 0.0])
    gate = timing_line('start', np.zeros(2), ex, hw + 0.5)
    finish = timing_line('finish', np.zeros(2), ex, hw + 0.5)
    return Track(name='skidpad', cones=cone_array(xy, cls),
                 car_start=Pose(x=-entry_length + SKIDPAD_START_AFTER_ENTRY), centerline=cl,
                 closed=False, width=ro - ri,
                 timing_lines={'start': gate, 'finish': finish},
                 mission='skidpad')


def random_track(seed: int, length: Tuple[float, float] = (250.0, 450.0),
                 width: float = 3.0, cone_spacing: float = 4.0,
                 min_radius: float = 5.0, control_points: Tuple[int, int] =
                 (10, 16), car_start_offset: float = 6.0,
                 mission: str = 'trackdrive', max_tries: int = 500) -> Track:
    """
    Generate a closed autocross/trackdrive track from ``seed``.

    A star-shaped polygon of ``control_points`` random vertices is smoothed
    by a periodic cubic spline, scaled to a lap length drawn from
    ``length`` (m) and accepted only if it obeys the FS rules (see
    :func:`check_track_rules`) with a centre-line radius >= ``min_radius``.
    Blue cones on the left, yellow on the right, every <= ``cone_spacing``
    metres; two big orange cones per side at the start/finish line, placed
    on the straightest part; the car starts ``car_start_offset`` behind it.
    Deterministic for a given seed; raises ``ValueError`` for bad
    parameters or when no valid track is found in ``max_tries``.
    """
    lo, hi = float(length[0]), float(length[1])
    if not (MIN_LAP <= lo <= hi <= MAX_LAP):
        raise ValueError(f'random_track: length range {length} must lie in '
                         f'[{MIN_LAP}, {MAX_LAP}] m')
    if not (width >= MIN_WIDTH and 0.5 <= cone_spacing <= MAX_CONE_SPACING):
        raise ValueError(f'random_track: width {width} must be >= '
                         f'{MIN_WIDTH}, cone_spacing {cone_spacing} in '
                         f'[0.5, {MAX_CONE_SPACING}]')
    if min_radius + width / 2.0 < MIN_HAIRPIN_OUTER_DIAMETER / 2.0:
        raise ValueError('random_track: min_radius + width/2 gives a hairpin '
                         'outer diameter below 9 m')
    n_lo, n_hi = int(control_points[0]), int(control_points[1])
    if not 4 <= n_lo <= n_hi:
        raise ValueError('random_track: control_points must be >= 4')
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        cl = _random_centerline(rng, lo, hi, n_lo, n_hi)
        if cl is None:
            continue
        track = _build_closed_track(cl, width, cone_spacing,
                                    car_start_offset, mission,
                                    f'random_{seed}')
        if not _centerline_problems(track.centerline, True, width,
                                    min_radius):
            if not check_track_rules(track):
                return track
    raise ValueError(f'random_track: no valid track for seed {seed} in '
                     f'{max_tries} tries')


def _random_centerline(rng: np.random.Generator, lo: float, hi: float,
                       n_lo: int, n_hi: int) -> Optional[np.ndarray]:
    n = int(rng.integers(n_lo, n_hi + 1))
    ang = (np.arange(n) + rng.uniform(-0.35, 0.35, n)) * (2 * math.pi / n)
    rad = rng.uniform(0.3, 1.0, n)
    pts = np.column_stack([rad * np.cos(ang), rad * np.sin(ang)])
    try:
        tck, _u = splprep([np.append(pts[:, 0], pts[0, 0]),
                           np.append(pts[:, 1], pts[0, 1])], s=0.0, per=True)
    except (ValueError, TypeError):
        return None
    dense = np.column_stack(splev(np.linspace(0, 1, 2000, endpoint=False),
                                  tck))
    target = rng.uniform(lo, hi)
    dense *= target / arc_length(dense, True)[-1]
    if rng.random() < 0.5:
        dense = dense[::-1].copy()
    return resample(dense, True, 0.5)


def _build_closed_track(cl: np.ndarray, width: float, spacing: float,
                        car_start_offset: float, mission: str,
                        name: str) -> Track:
    """Place cones and the start line on a closed centre line."""
    kappa = _curvature(cl, True)
    # start/finish at the middle of the straightest 20 m window
    win = max(int(20.0 / 0.5), 1)
    smooth = np.convolve(np.concatenate([np.abs(kappa), np.abs(kappa[:win])]),
                         np.ones(win) / win, mode='valid')[:len(cl)]
    start = (int(np.argmin(smooth)) + win // 2) % len(cl)
    return closed_track(np.roll(cl, -start, axis=0), width, car_start_offset, mission, name,
                        lambda line: _boundary_cones(line, True, spacing))


def closed_track(cl: np.ndarray, width: float, car_start_offset: float, mission: str,
                 name: str, place: Callable[[np.ndarray], np.ndarray]) -> Track:
    """
    Return the closed track around ``cl`` (K, 2), start line at ``cl[0]``.

    ``place(line)`` returns the cones (N, 2) along one boundary (``width``
    / 2 to each side, blue left, yellow right), the first at ``line[0]``:
    a big orange pair at the start line replaces it. The car starts
    ``car_start_offset`` m behind the start line, along the centre line.
    """
    tan = tangents(cl, True)
    nrm = np.column_stack([-tan[:, 1], tan[:, 0]])
    h = width / 2.0
    xy, cls = [], []
    for sign, colour in ((1.0, CONE_BLUE), (-1.0, CONE_YELLOW)):
        line = cl + sign * h * nrm
        pts = place(line)
        big = np.array([line[0] - 0.4 * tan[0], line[0] + 0.4 * tan[0]])
        xy.append(pts[1:])
        cls.append(np.full(len(pts) - 1, colour))
        xy.append(big)
        cls.append(np.full(2, CONE_BIG_ORANGE))
    s = arc_length(cl, True)
    back = s[-1] - car_start_offset
    ext = np.vstack([cl, cl[:1]])
    sx, sy = np.interp(back, s, ext[:, 0]), np.interp(back, s, ext[:, 1])
    i = int(np.searchsorted(s, back)) % len(cl)
    yaw = math.atan2(tan[i, 1], tan[i, 0])
    line = timing_line('start', cl[0], tan[0], h + 0.5)
    return Track(name=name, cones=cone_array(xy, cls),
                 car_start=Pose(x=float(sx), y=float(sy), yaw=yaw),
                 centerline=cl, closed=True, width=width,
                 timing_lines={'start': line, 'finish': line},
                 mission=mission)


# ------------------------------------------------------------ rule checks
def _centerline_problems(cl: np.ndarray, closed: bool, width: float,
                         min_radius: float) -> List[str]:
    """Cheap pre-checks of a candidate centre line."""
    out = []
    kappa = np.abs(_curvature(cl, closed))
    if kappa.max() > 1.0 / min_radius:
        out.append(f'centre-line radius {1 / kappa.max():.2f} m < '
                   f'{min_radius} m')
    return out


def lateral_position(track: Track, xy: np.ndarray
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (arc position, signed lateral offset, distance) per point."""
    cl = resample(track.centerline, track.closed, 0.1)
    tree = cKDTree(cl)
    dist, idx = tree.query(xy)
    tan = tangents(cl, track.closed)
    rel = xy - cl[idx]
    lat = tan[idx, 0] * rel[:, 1] - tan[idx, 1] * rel[:, 0]
    s = arc_length(cl, track.closed)[idx]
    return s, lat, dist


@dataclass(frozen=True)
class RuleFinding:
    """One finding of the rule check: ``severity`` 'error' or 'warning'."""

    severity: str
    message: str


def boundary_mask(track: Track, lat: np.ndarray,
                  s: Optional[np.ndarray] = None) -> np.ndarray:
    """
    Return a mask of the cones near enough to the centre line to bound it.

    Cones more than one track width (at least 3 m) beside the centre line
    are clutter around the track (PacSim ``unknown`` landmarks, other
    layouts on the same ground) and are left out of the width and spacing
    rules; so are, on an open track, the cones within ``END_ZONE`` of the
    end of its centre line (given their arc positions ``s``): the row of
    cones across the lane that closes an acceleration braking zone or a
    skidpad exit.
    """
    near = np.abs(lat) <= max(float(track.width), MIN_WIDTH)
    if s is not None and not track.closed:
        near &= s < track.length - END_ZONE
    return near


def local_widths(track: Track) -> np.ndarray:
    """
    Return the local track width (m) at each cone (NaN where unknown).

    A cone's width is its distance from the centre line plus the opposite
    boundary's, interpolated at the cone's arc position between the
    nearest opposite cones within one cone spacing (+1 m) before and
    after it (measured along the centre line), so a centre line that is
    only an estimate does not matter. Cones on the centre line, or with no
    opposite cone near, get NaN.
    """
    xy = track.cones.xy
    out = np.full(len(xy), np.nan)
    if len(xy) < 2 or len(track.centerline) < 2:
        return out
    s, lat, _dist = lateral_position(track, xy)
    near = boundary_mask(track, lat, s)
    total = track.length
    win = MAX_CONE_SPACING + 1.0
    for sgn in (1.0, -1.0):
        mine = np.flatnonzero(near & (lat * sgn > 0.05))
        opp = np.flatnonzero(near & (lat * sgn < -0.05))
        if mine.size == 0 or opp.size == 0:
            continue
        order = opp[np.argsort(s[opp], kind='stable')]
        so, lo = s[order], np.abs(lat[order])
        if track.closed:
            so = np.concatenate([so - total, so, so + total])
            lo = np.tile(lo, 3)
        k = np.searchsorted(so, s[mine])
        kb = np.clip(k - 1, 0, len(so) - 1)
        ka = np.clip(k, 0, len(so) - 1)
        db = s[mine] - so[kb]
        da = so[ka] - s[mine]
        ok_b = (db >= 0.0) & (db <= win)
        ok_a = (da >= 0.0) & (da <= win)
        span = np.where(da + db > 1e-9, da + db, 1.0)
        inter = np.where(ok_b & ok_a, lo[kb] + (lo[ka] - lo[kb]) * db / span,
                         np.where(ok_b, lo[kb], np.where(ok_a, lo[ka],
                                                         np.nan)))
        out[mine] = np.abs(lat[mine]) + inter
    return out


def check_track_rules(track: Track, tolerance: float = 0.1) -> List[str]:
    """
    Return the FS rule findings of a track (empty list when it is legal).

    The messages of :func:`rule_findings` (errors and warnings alike).
    """
    return [f.message for f in rule_findings(track, tolerance)]


def rule_findings(track: Track, tolerance: float = 0.1
                  ) -> List[RuleFinding]:
    """
    Check a track against the FS rules; return the findings.

    Errors: no cones, a bad centre line, mirrored colours (more than half
    of the blue cones right of the driving direction or of the yellow
    ones left). Warnings: local track width below 3 m - ``tolerance`` at
    any cone (:func:`local_widths`), a few cones on the wrong side, cone
    spacing > 5 m + ``tolerance`` along a boundary, hairpin outer diameter < 9 m,
    straights > 80 m (stretches with a radius above 100 m), lap outside
    200-500 m, open or self-intersecting loop (autocross/trackdrive), no
    big orange cones at the start line, overlapping cones.
    """
    out: List[RuleFinding] = []

    def warn(text: str) -> None:
        out.append(RuleFinding('warning', text))
    cl = track.centerline
    if cl.ndim != 2 or cl.shape[1] != 2 or len(cl) < 3 or \
            not np.isfinite(cl).all():
        return [RuleFinding('error', 'centre line must be a finite '
                            '(K >= 3, 2) array')]
    cones = track.cones
    if len(cones) == 0:
        return [RuleFinding('error', 'track has no cones')]
    if not np.isfinite(cones.xy).all():
        return [RuleFinding('error', 'cone positions must be finite')]
    loop = track.mission in _GENERATED_MISSIONS or track.closed
    if loop:
        if not track.closed:
            warn('autocross/trackdrive track must be closed')
        length = track.length
        if not MIN_LAP <= length <= MAX_LAP:
            warn(f'lap length {length:.1f} m outside [{MIN_LAP}, '
                 f'{MAX_LAP}] m')
        coarse = resample(cl, track.closed, 1.0)
        if _segments_intersect(coarse, track.closed):
            warn('centre line intersects itself')
        fine = resample(cl, track.closed, 0.5)
        kappa = path_curvature(fine, track.closed)
        outer_d = _hairpin_outer_diameter(track, fine)
        if outer_d < MIN_HAIRPIN_OUTER_DIAMETER:
            warn(f'hairpin outer diameter {outer_d:.2f} m < '
                 f'{MIN_HAIRPIN_OUTER_DIAMETER} m')
        straight = kappa < 1.0 / STRAIGHT_RADIUS
        longest = _longest_run(straight, track.closed) * 0.5
        if longest > MAX_STRAIGHT:
            warn(f'straight of {longest:.1f} m > {MAX_STRAIGHT} m')
    if track.width < MIN_DRIVABLE_WIDTH:
        out.append(RuleFinding(
            'error', f'track width {track.width} m: the left and right '
            'boundaries nearly coincide (not drivable)'))
    elif track.width < MIN_WIDTH - tolerance:
        warn(f'track width {track.width} m < {MIN_WIDTH} m')
    s, lat, _dist = lateral_position(track, cones.xy)
    widths = local_widths(track)
    narrow = np.flatnonzero(widths < MIN_WIDTH - tolerance)
    if narrow.size:
        i = narrow[np.argmin(widths[narrow])]
        warn(f'{narrow.size} cones where the track is narrower than '
             f'{MIN_WIDTH - tolerance:.2f} m (narrowest {widths[i]:.2f} m at '
             f'{cones.xy[i].round(2).tolist()})')
    blue = cones.class_id == CONE_BLUE
    yellow = cones.class_id == CONE_YELLOW
    if track.mission == 'skidpad' and 'start' in track.timing_lines:
        lat = _skidpad_ring_lat(track)
    blue_wrong = np.flatnonzero(blue & (lat < 0))
    yellow_wrong = np.flatnonzero(yellow & (lat > 0))
    wrong = blue_wrong.size + yellow_wrong.size
    if wrong and wrong * 2 > int(blue.sum() + yellow.sum()):
        out.append(RuleFinding(
            'error', f'colours mirrored: {blue_wrong.size} of '
            f'{int(blue.sum())} blue cones right and {yellow_wrong.size} of '
            f'{int(yellow.sum())} yellow cones left of the driving '
            'direction'))
    else:
        if blue_wrong.size:
            warn(f'{blue_wrong.size} blue cones right of the driving '
                 f'direction, first at '
                 f'{cones.xy[blue_wrong[0]].round(2).tolist()}')
        if yellow_wrong.size:
            warn(f'{yellow_wrong.size} yellow cones left of the driving '
                 f'direction, first at '
                 f'{cones.xy[yellow_wrong[0]].round(2).tolist()}')
    if loop:
        near = boundary_mask(track, lat)
        for sign, name in ((1.0, 'left'), (-1.0, 'right')):
            side = np.flatnonzero(near & (lat * sign > 0))
            if side.size < 3:
                warn(f'{name} boundary has fewer than 3 cones')
                continue
            order = side[np.argsort(s[side], kind='stable')]
            p = cones.xy[order]
            gaps = np.hypot(*np.diff(np.vstack([p, p[:1]]), axis=0).T)
            if gaps.max() > MAX_CONE_SPACING + tolerance:
                k = int(np.argmax(gaps))
                warn(f'{name} boundary cone spacing {gaps.max():.2f} m > '
                     f'{MAX_CONE_SPACING} m at {p[k].round(2).tolist()}')
        big = cones.xy[cones.class_id == CONE_BIG_ORANGE]
        start = track.timing_lines.get('start')
        if start is None:
            warn('no start timing line')
        elif big.shape[0] < 2 or np.min(np.hypot(
                *(big - (start.a + start.b) / 2.0).T)) > track.width + 1.0:
            warn('no big orange cones at the start line')
    for text in overlapping_cones(cones):
        warn(text)
    return out


def _skidpad_ring_lat(track: Track) -> np.ndarray:
    """
    Return each cone's lateral offset from the skidpad's circle laps.

    The skidpad route passes the crossing five times and the outer ring
    cones next to the entry stand beside the entry lane too; the colours
    belong to the circles, so they are judged against the route without
    its straight parts (within 0.5 m of the axis through the crossing).
    """
    gate = track.timing_lines['start']
    centre = (gate.a + gate.b) / 2.0
    d = gate.direction / max(float(np.hypot(*gate.direction)), 1e-9)
    rel = track.centerline - centre
    off = rel[:, 0] * d[1] - rel[:, 1] * d[0]
    rings = track.centerline[np.abs(off) > 0.5]
    if len(rings) < 3:
        return lateral_position(track, track.cones.xy)[1]
    probe = Track(track.name, track.cones, track.car_start, rings, False,
                  track.width)
    return lateral_position(probe, track.cones.xy)[1]


def _hairpin_outer_diameter(track: Track, fine: np.ndarray) -> float:
    """
    Return the outside diameter (m) of the tightest turn of a track.

    The centre-line radius at the tightest point, over chords of
    +-``HAIRPIN_BASE`` m (a hairpin's arc is longer; cone-by-cone wiggles
    of a centre line built from cones are not turns), plus the offset of
    the outer boundary's cones there (hairpins are often wider than the
    median width).
    """
    kappa = path_curvature(fine, track.closed, HAIRPIN_BASE)
    i = int(np.argmax(kappa))
    radius = 1.0 / max(float(kappa[i]), 1e-9)
    n = len(fine)
    k = max(1, int(round(HAIRPIN_BASE / 0.5)))
    j0, j2 = (i - k) % n if track.closed else max(i - k, 0), \
        (i + k) % n if track.closed else min(i + k, n - 1)
    a, b = fine[i] - fine[j0], fine[j2] - fine[i]
    turn = 1.0 if a[0] * b[1] - a[1] * b[0] > 0.0 else -1.0
    _s, lat, _d = lateral_position(track, track.cones.xy)
    near = (np.hypot(*(track.cones.xy - fine[i]).T) < 2.0 * HAIRPIN_BASE) & \
        (lat * turn < 0.0) & (np.abs(lat) < track.width)
    offset = float(np.median(np.abs(lat[near]))) if near.any() else \
        track.width / 2.0
    return 2.0 * (radius + offset)


def _longest_run(mask: np.ndarray, closed: bool) -> int:
    """Return the longest run of True (cyclic if ``closed``)."""
    if mask.all():
        return int(mask.size)
    m = np.roll(mask, -int(np.argmin(mask))) if closed else mask
    padded = np.concatenate([[False], m, [False]]).astype(np.int8)
    d = np.diff(padded)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    return int((ends - starts).max()) if starts.size else 0


def overlapping_cones(cones: ConeArray) -> List[str]:
    """Return one message per pair of cones whose bases overlap."""
    if len(cones) < 2:
        return []
    radius = np.array([CONE_SIZE.get(int(c), CONE_SIZE[CONE_BLUE])[0] / 2.0
                       for c in range(256)])[cones.class_id]
    pairs = cKDTree(cones.xy).query_pairs(2 * radius.max(), output_type='ndarray')
    if pairs.size == 0:
        return []
    d = np.hypot(*(cones.xy[pairs[:, 0]] - cones.xy[pairs[:, 1]]).T)
    bad = pairs[d < radius[pairs[:, 0]] + radius[pairs[:, 1]]]
    return [f'cones {int(i)} and {int(j)} overlap at '
            f'{cones.xy[i].round(3).tolist()}' for i, j in bad]


def make_track(spec: Dict, source: str = '') -> Track:
    """
    Build a track from a scenario's ``track`` mapping.

    ``{'generator': 'random'|'hard'|'acceleration'|'skidpad', 'seed': int,
    'params': {...}}`` or ``{'track_file': 'path', 'format': 'auto',
    'convention': 'rep103'}`` (any format of
    :mod:`hil_bridge.sim.track_files`; relative paths are looked up next to
    ``source`` and then under ``config/tracks``). A track file is rule
    checked: mirrored colours raise ``ValueError``, other findings are
    logged as warnings.
    """
    from hil_bridge.interface.config import config_path
    if 'track_file' in spec:
        from hil_bridge.sim.track_files import open_track
        f = str(spec['track_file'])
        cands = [f] if os.path.isabs(f) else \
            [os.path.join(os.path.dirname(source), f) if source else f,
             config_path('tracks', f), f]
        for cand in cands:
            if os.path.isfile(cand) or os.path.isdir(cand):   # or Unreal dumps
                return open_track(cand, fmt=str(spec.get('format', 'auto')),
                                  convention=str(spec.get('convention',
                                                          'rep103')),
                                  mission=str(spec.get('mission', '')))
        raise FileNotFoundError(f'track file {f!r} not found (tried '
                                f'{cands})')
    gen = spec.get('generator')
    params = dict(spec.get('params') or {})
    if gen == 'random':
        if 'length' in params:
            params['length'] = tuple(params['length'])
        if 'control_points' in params:
            params['control_points'] = tuple(params['control_points'])
        return random_track(int(spec.get('seed', 0)), **params)
    if gen == 'hard':
        from hil_bridge.sim.track_gen_hard import hard_track
        return hard_track(int(spec.get('seed', 0)), **params)
    if gen == 'acceleration':
        return acceleration_track(**params)
    if gen == 'skidpad':
        return skidpad_track(**params)
    raise ValueError(f'unknown track generator {gen!r} (expected '
                     f'{", ".join(GENERATORS)})')


#: Generator names a scenario's ``track.generator`` may use.
GENERATORS = ('random', 'hard', 'acceleration', 'skidpad')


def main(argv: Optional[List[str]] = None) -> int:
    """
    Generate and export tracks from the command line.

    ``python -m hil_bridge.sim.tracks random|hard|acceleration|skidpad
    [--seed N] [--out t.csv]``. Prints the length, cone count and rule
    findings; returns 1 when there are any. Files: ``carla-hil track``.
    """
    import argparse
    from hil_bridge.sim.track_files import save_track_csv
    parser = argparse.ArgumentParser(prog='python -m hil_bridge.sim.tracks')
    parser.add_argument('what', choices=['random', 'hard', 'acceleration',
                                         'skidpad'])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--mission', default='trackdrive')
    parser.add_argument('--out', help='write the track as CSV here')
    args = parser.parse_args(argv)
    track = make_track({'generator': args.what, 'seed': args.seed,
                        'params': {'mission': args.mission}
                        if args.what in ('random', 'hard') else {}})
    problems = check_track_rules(track)
    print(f'{track.name}: {track.length:.1f} m, {len(track.cones)} cones, '
          f'closed={track.closed}, width={track.width} m')
    for p in problems:
        print(f'  violation: {p}')
    if args.out:
        save_track_csv(track, args.out)
        print(f'wrote {args.out}')
    return 1 if problems else 0


if __name__ == '__main__':
    raise SystemExit(main())
