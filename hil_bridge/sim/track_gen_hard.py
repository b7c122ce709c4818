# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Hard Formula Student layouts within the rules, for sweeps of the full stack.

A layout is a serpentine of 2 or 4 parallel lanes (REP-103 ``map``,
metres, radians; rotated and mirrored at random) joined by hairpins and,
with 4 lanes, closed by a return leg. It holds, by construction and
measured after building:

* sections side by side: the facing boundary cone lines of neighbouring
  lanes are ``side_gap`` (4-6 m) apart, cone centre to cone centre, at
  their closest (the centre lines ``side_gap + width`` apart);
* hairpins of 9 m outside diameter (centre-line radius 3.05 m with a
  3 m lane; outer cones 4.55 m from the turn centre), reached from a long
  straight (35-70 m) on lane 0, and wider hairpins (semicircles);
* a chicane (a lateral shift and back) and a slalom (alternating bumps),
  each with centre-line radius >= 4 m;
* cone gaps of up to 5 m in the turns (4-5 m, ``turn_gap``), 3.5-5 m on
  straights, 2-3 m round the tight part of the 9 m hairpins.

Deterministic for a seed; :func:`hard_layout` also returns the features
(kind, arc range on the centre line, parameters) so tests can measure
them. Every layout passes :func:`hil_bridge.sim.tracks.check_track_rules`.
"""

from dataclasses import dataclass, field
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

from hil_bridge.interface.track import arc_length, MIN_WIDTH, Track
from hil_bridge.sim.reference_lap import path_curvature
from hil_bridge.sim.tracks import check_track_rules, closed_track, MAX_LAP, MIN_LAP, resample
import numpy as np
from scipy.spatial import cKDTree

#: Centre-line radius of the tight hairpins (m): 9.1 m outside diameter
#: with a 3 m lane.
HAIRPIN_RADIUS = 3.05
#: Radius of the gentle arcs that open a tight hairpin to the lane pitch.
KINK_RADIUS = 10.0
#: Sampling step of the construction (m).
STEP = 0.25
#: Smallest centre-line radius of chicanes and slaloms (m).
MIN_FEATURE_RADIUS = 4.0


@dataclass
class Feature:
    """
    One feature of a layout.

    ``kind``: ``slalom``, ``chicane``, ``hairpin`` (9 m outside
    diameter), ``wide_hairpin``, ``long_straight``, ``side_by_side``,
    ``corner``; ``s0``-``s1`` its arc range (m) on the final centre line
    (``s1 < s0`` when it wraps past the start); ``info`` its parameters
    (``centre`` of a hairpin, ``gap`` of side-by-side lanes, ...).
    """

    kind: str
    s0: float
    s1: float
    info: Dict[str, Any] = field(default_factory=dict)


@dataclass
class HardLayout:
    """A generated track and its features (arc ranges on its centre line)."""

    track: Track
    features: List[Feature]


class _Turtle:
    """Builds a centre line from straights, arcs and offset lanes."""

    def __init__(self) -> None:
        self.pos = np.zeros(2)
        self.yaw = 0.0
        self.parts: List[np.ndarray] = [np.zeros((1, 2))]
        self.marks: List[Tuple[str, int, int, Dict[str, Any]]] = []

    @property
    def count(self) -> int:
        return sum(len(p) for p in self.parts)

    def _add(self, pts: np.ndarray) -> None:
        self.parts.append(pts)
        self.pos = pts[-1].copy()

    def arc(self, radius: float, angle: float) -> None:
        """Turn by ``angle`` (rad, > 0 left) on a circle of ``radius``."""
        sign = 1.0 if angle > 0.0 else -1.0
        c = self.pos + sign * radius * np.array([-math.sin(self.yaw),
                                                 math.cos(self.yaw)])
        n = max(int(math.ceil(radius * abs(angle) / STEP)), 1)
        t = self.yaw + sign * np.linspace(0.0, abs(angle), n + 1)[1:]
        pts = c + sign * radius * np.column_stack([np.sin(t), -np.cos(t)])
        self._add(pts)
        self.yaw += angle

    def lane(self, length: float, offset: Callable[[np.ndarray], np.ndarray]
             ) -> None:
        """Go ``length`` straight on, shifted left by ``offset(u)`` (m)."""
        n = max(int(math.ceil(length / STEP)), 1)
        u = np.linspace(0.0, length, n + 1)[1:]
        d = np.array([math.cos(self.yaw), math.sin(self.yaw)])
        nrm = np.array([-d[1], d[0]])
        pts = self.pos + u[:, None] * d + offset(u)[:, None] * nrm
        end = self.pos + length * d
        self._add(pts)
        self.pos = end

    def mark(self, kind: str, start: int, info: Dict[str, Any]) -> None:
        """Record a feature from point ``start`` to the current point."""
        self.marks.append((kind, start, self.count - 1, info))

    def points(self) -> np.ndarray:
        return np.vstack(self.parts)


# ---------------------------------------------------------------- features
def _bump(u: np.ndarray, u0: float, length: float, amp: float) -> np.ndarray:
    """Return a smooth bump ``amp * sin^2`` over [u0, u0 + length]."""
    t = np.clip((u - u0) / length, 0.0, 1.0)
    return amp * np.sin(np.pi * t) ** 2


def _step(u: np.ndarray, u0: float, length: float, amp: float) -> np.ndarray:
    """Return a smooth step from 0 to ``amp`` over [u0, u0 + length]."""
    t = np.clip((u - u0) / length, 0.0, 1.0)
    return amp * 0.5 * (1.0 - np.cos(np.pi * t))


def _slalom(rng: np.random.Generator) -> Dict[str, Any]:
    half = float(rng.uniform(9.0, 12.0))
    amp_max = min(1.6, half * half / (2.0 * math.pi ** 2
                                      * MIN_FEATURE_RADIUS))
    return {'kind': 'slalom', 'half': half, 'bumps': int(rng.integers(3, 6)),
            'amp': float(rng.uniform(0.8, amp_max)),
            'sign': float(rng.choice([-1.0, 1.0]))}


def _chicane(rng: np.random.Generator) -> Dict[str, Any]:
    ramp = float(rng.uniform(8.0, 12.0))
    amp_max = min(3.5, 2.0 * ramp * ramp / (math.pi ** 2
                                            * MIN_FEATURE_RADIUS))
    return {'kind': 'chicane', 'ramp': ramp, 'hold': float(rng.uniform(
        4.0, 10.0)), 'amp': float(rng.uniform(2.0, amp_max)),
        'sign': float(rng.choice([-1.0, 1.0]))}


def _feature_length(f: Dict[str, Any]) -> float:
    if f['kind'] == 'slalom':
        return f['half'] * f['bumps']
    return 2.0 * f['ramp'] + f['hold']


def _offset_fn(features: List[Tuple[float, Dict[str, Any]]]
               ) -> Callable[[np.ndarray], np.ndarray]:
    """Return the lateral offset u -> f(u) of a lane's features."""
    def fn(u: np.ndarray) -> np.ndarray:
        out = np.zeros_like(u, dtype=float)
        for u0, f in features:
            if f['kind'] == 'slalom':
                for k in range(f['bumps']):
                    sgn = f['sign'] * (1.0 if k % 2 == 0 else -1.0)
                    out += _bump(u, u0 + k * f['half'], f['half'],
                                 sgn * f['amp'])
            else:
                up = _step(u, u0, f['ramp'], f['sign'] * f['amp'])
                down = _step(u, u0 + f['ramp'] + f['hold'], f['ramp'],
                             f['sign'] * f['amp'])
                out += up - down
        return out
    return fn


def _place(rng: np.random.Generator, length: float, first: Optional[str],
           margin: float = 5.0, max_straight: float = 60.0
           ) -> List[Tuple[float, Dict[str, Any]]]:
    """Place features on a lane so no straight piece exceeds the limit."""
    out: List[Tuple[float, Dict[str, Any]]] = []
    u = margin
    kind = first
    while True:
        f = (_slalom(rng) if kind == 'slalom' else _chicane(rng)) \
            if kind else (_slalom(rng) if rng.random() < 0.5
                          else _chicane(rng))
        flen = _feature_length(f)
        room = length - margin - u - flen
        if room < 0.0:
            break
        gap = float(rng.uniform(0.0, min(room, max_straight)))
        out.append((u + gap, f))
        u += gap + flen
        kind = None
        if length - margin - u <= max_straight:
            break
    return out


def _hairpin(t: _Turtle, pitch: float, left: bool, tight: bool) -> None:
    """Add a 180 deg turn to the lane ``pitch`` m to the side."""
    sign = 1.0 if left else -1.0
    start = t.count - 1
    if tight:
        cos_t = 1.0 - (pitch - 2.0 * HAIRPIN_RADIUS) / (
            2.0 * (KINK_RADIUS - HAIRPIN_RADIUS))
        theta = math.acos(min(max(cos_t, -1.0), 1.0))
        t.arc(KINK_RADIUS, sign * theta)
        yaw = t.yaw
        centre = t.pos + sign * HAIRPIN_RADIUS * np.array(
            [-math.sin(yaw), math.cos(yaw)])
        t.arc(HAIRPIN_RADIUS, sign * (math.pi - 2.0 * theta))
        t.arc(KINK_RADIUS, sign * theta)
        info = {'centre': centre, 'radius': HAIRPIN_RADIUS, 'pitch': pitch,
                'kink': theta}
        kind = 'hairpin'
    else:
        yaw = t.yaw
        centre = t.pos + sign * pitch / 2.0 * np.array(
            [-math.sin(yaw), math.cos(yaw)])
        t.arc(pitch / 2.0, sign * math.pi)
        info = {'centre': centre, 'radius': pitch / 2.0, 'pitch': pitch}
        kind = 'wide_hairpin'
    t.mark(kind, start, info)


# ------------------------------------------------------------------ layout
def _build(plan: Dict[str, Any], pitches: List[float]
           ) -> Tuple[np.ndarray, List[Tuple[str, int, int, Dict]],
                      List[Tuple[int, int]]]:
    """Trace the centre line of a plan; return points, marks, lane ranges."""
    t = _Turtle()
    n = plan['lanes']
    lanes: List[Tuple[int, int]] = []
    for i in range(n):
        s = t.count - 1
        t.lane(plan['lengths'][i], _offset_fn(plan['features'][i]))
        lanes.append((s, t.count - 1))
        for u0, f in plan['features'][i]:
            t.marks.append((f['kind'], -1, -1, {'lane': i, 'u0': u0,
                                                **f}))
        if i == 0:
            t.marks.append(('long_straight', -1, -1,
                            {'lane': 0, 'length': plan['long_straight']}))
        if i < n - 1:
            _hairpin(t, pitches[i], left=(i % 2 == 0),
                     tight=plan['tight'][i])
    if n == 2:
        _hairpin(t, pitches[0], left=True, tight=plan['tight'][1])
    else:
        r1, r2 = plan['corners']
        top = float(sum(pitches))
        s = t.count - 1
        t.arc(r1, math.pi / 2.0)
        t.mark('corner', s, {'radius': r1})
        t.lane(top - r1 - r2, lambda u: np.zeros_like(u))
        s = t.count - 1
        t.arc(r2, math.pi / 2.0)
        t.mark('corner', s, {'radius': r2})
    pts = t.points()
    err = float(np.hypot(*(pts[-1] - pts[0])))
    if err > 1e-6:
        raise RuntimeError(f'hard layout does not close ({err:.3g} m)')
    return pts[:-1], t.marks, lanes


def _lane_gaps(pts: np.ndarray, lanes: List[Tuple[int, int]], width: float,
               trim: float) -> List[float]:
    """Return the smallest boundary gap (m) between neighbouring lanes."""
    out = []
    k = int(trim / STEP)
    for (a0, a1), (b0, b1) in zip(lanes[:-1], lanes[1:]):
        pa, pb = pts[a0 + k:a1 - k], pts[b0 + k:b1 - k]
        d, _i = cKDTree(pb).query(pa)
        out.append(float(d.min()) - width)
    return out


def _plan(rng: np.random.Generator, width: float) -> Dict[str, Any]:
    """Draw the structure of a layout (lengths, features, turn kinds)."""
    n = 2 if rng.random() < 0.4 else 4
    if n == 2:
        long_straight = float(rng.uniform(50.0, 70.0))
    else:
        long_straight = float(rng.uniform(35.0, 55.0))
    first = 'chicane' if rng.random() < 0.5 else 'slalom'
    f0 = _chicane(rng) if first == 'chicane' else _slalom(rng)
    start_straight = 13.0
    lane0 = [(start_straight + 2.0, f0)]
    l0 = start_straight + 2.0 + _feature_length(f0) + long_straight
    side_gaps = [float(rng.uniform(4.0, 6.0)) for _ in range(n - 1)]
    return_gap = float(rng.uniform(4.0, 6.0))
    corners = (float(rng.uniform(5.0, 8.0)), float(rng.uniform(5.0, 8.0)))
    if n == 2:
        lengths = [l0, l0]
    else:
        d = KINK_RADIUS + width + return_gap
        x_a = d - corners[1]
        lengths = [l0] + [l0 - x_a] * (n - 2) + \
            [l0 + corners[1] - corners[0]]
    other = 'slalom' if first == 'chicane' else 'chicane'
    feats = [lane0]
    for i in range(1, n):
        feats.append(_place(rng, lengths[i], other if i == 1 else None))
    tight = [True] + [bool(rng.random() < 0.5) for _ in range(n - 1)]
    return {'lanes': n, 'lengths': lengths, 'features': feats,
            'long_straight': long_straight, 'side_gaps': side_gaps,
            'return_gap': return_gap, 'corners': corners, 'tight': tight,
            'start_straight': start_straight,
            'straight_gap': float(rng.uniform(3.5, 5.0)),
            'turn_gap': float(rng.uniform(4.0, 5.0)),
            'tight_gap': float(rng.uniform(2.0, 3.0)),
            'rotation': float(rng.uniform(-math.pi, math.pi)),
            'mirror': bool(rng.random() < 0.5)}


def _excursions(plan: Dict[str, Any]) -> List[float]:
    """
    Return the worst facing lateral excursion (m) of each lane pair.

    Lanes stack upwards: even lanes run +x (up is their left), odd lanes
    -x (up is their right); the two lanes of a pair share the end where
    they are joined, so lane i's ``u`` faces lane i+1's ``len_i - u``.
    """
    out = []
    for i in range(plan['lanes'] - 1):
        fa = _offset_fn(plan['features'][i])
        fb = _offset_fn(plan['features'][i + 1])
        la, lb = plan['lengths'][i], plan['lengths'][i + 1]
        ua = np.arange(0.0, la + STEP, STEP)
        ub = np.clip(la - ua, 0.0, lb)
        sgn = 1.0 if i % 2 == 0 else -1.0
        toward = np.maximum(sgn * fa(ua), 0.0) + np.maximum(sgn * fb(ub), 0.0)
        out.append(float(toward.max()))
    return out


# --------------------------------------------------------------- cones
def _place_cones(line: np.ndarray, kappa: np.ndarray, gaps: Tuple[float,
                                                                  float,
                                                                  float]
                 ) -> np.ndarray:
    """
    Place cones on a closed boundary polyline.

    The line is cut into runs of straight (centre-line radius > 30 m),
    turning and tight (radius < 4 m: the 9 m hairpins) samples; each run
    gets equal gaps of at most its spacing ``gaps`` (straight, turn,
    tight), with a cone at every run boundary and at index 0 (the start
    line).
    """
    kind = np.where(np.abs(kappa) > 1.0 / MIN_FEATURE_RADIUS, 2,
                    np.where(np.abs(kappa) > 1.0 / 30.0, 1, 0))
    n = len(line)
    edges = [0] + [i for i in range(1, n) if kind[i] != kind[i - 1]]
    s = arc_length(line, True)
    # drop runs shorter than 1.5 m (merged into the run before)
    keep = [edges[0]]
    for e in edges[1:]:
        if s[e] - s[keep[-1]] >= 1.5:
            keep.append(e)
    if s[-1] - s[keep[-1]] < 1.5 and len(keep) > 1:
        keep.pop()
    bounds = keep + [n]
    ext = np.vstack([line, line[:1]])
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        length = s[b] - s[a]
        k = max(int(math.ceil(length / gaps[int(kind[a])] - 1e-9)), 1)
        t = s[a] + np.arange(k) * (length / k)
        out.append(np.column_stack([np.interp(t, s, ext[:, 0]),
                                    np.interp(t, s, ext[:, 1])]))
    return np.vstack(out)


def _make_track(cl: np.ndarray, plan: Dict[str, Any], width: float,
                car_start_offset: float, mission: str, name: str) -> Track:
    kappa = path_curvature(cl, True)
    gaps = (plan['straight_gap'], plan['turn_gap'], plan['tight_gap'])
    return closed_track(cl, width, car_start_offset, mission, name,
                        lambda line: _place_cones(line, kappa, gaps))


def hard_layout(seed: int, width: float = MIN_WIDTH,
                car_start_offset: float = 6.0, mission: str = 'trackdrive',
                max_tries: int = 50) -> HardLayout:
    """
    Generate a hard closed layout from ``seed``; return it with features.

    ``width`` is the lane width (>= 3 m); the car starts
    ``car_start_offset`` behind the start line (on lane 0's first
    straight). Raises ``ValueError`` for bad parameters or when no layout
    within the rules is found in ``max_tries`` draws.
    """
    if not MIN_WIDTH <= width <= 5.0:
        raise ValueError(f'hard_layout: width {width} must be in '
                         f'[{MIN_WIDTH}, 5.0] m')
    if not 0.0 < car_start_offset <= 10.0:
        raise ValueError('hard_layout: car_start_offset must be in '
                         '(0, 10] m')
    rng = np.random.default_rng([int(seed), 0x4A7D])
    for _ in range(max_tries):
        plan = _plan(rng, width)
        pitches = [width + g + e for g, e in
                   zip(plan['side_gaps'], _excursions(plan))]
        pts, marks, lanes = _build(plan, pitches)
        for _it in range(3):
            # the excursion sum is a bound: move the lanes to the gap
            gaps = _lane_gaps(pts, lanes, width, trim=3.0)
            if max(abs(g - g_t) for g, g_t in
                   zip(gaps, plan['side_gaps'])) < 0.01:
                break
            pitches = [max(p + g_t - g, 2.0 * HAIRPIN_RADIUS + 0.5)
                       for p, g, g_t in zip(pitches, gaps,
                                            plan['side_gaps'])]
            pts, marks, lanes = _build(plan, pitches)
        layout = _finish(pts, marks, lanes, plan, pitches, width,
                         car_start_offset, mission, f'hard_{seed}')
        if layout is None:
            continue
        return layout
    raise ValueError(f'hard_layout: no layout within the rules for seed '
                     f'{seed} in {max_tries} tries')


def _finish(pts: np.ndarray, marks: List[Tuple[str, int, int, Dict]],
            lanes: List[Tuple[int, int]], plan: Dict[str, Any],
            pitches: List[float], width: float, car_start_offset: float,
            mission: str, name: str) -> Optional[HardLayout]:
    """Transform, place cones, check the rules; None when they fail."""
    c, s = math.cos(plan['rotation']), math.sin(plan['rotation'])
    rot = np.array([[c, -s], [s, c]])
    if plan['mirror']:
        rot = rot @ np.diag([1.0, -1.0])
    start_idx = lanes[0][0] + int(round(
        (plan['start_straight'] - 3.0) / STEP))
    world = pts @ rot.T
    ordered = np.roll(world, -start_idx, axis=0)
    cl = resample(ordered, True, STEP)
    total = float(arc_length(cl, True)[-1])
    if not MIN_LAP + 10.0 <= total <= MAX_LAP - 10.0:
        return None
    track = _make_track(cl, plan, width, car_start_offset, mission, name)
    if check_track_rules(track, tolerance=0.02):
        return None
    # features in arc length of the final centre line
    s_raw = arc_length(ordered, True)
    scale = total / float(s_raw[-1])
    n_raw = len(pts)

    def arc_of(idx: int) -> float:
        return float(s_raw[(idx - start_idx) % n_raw]) * scale

    feats: List[Feature] = []
    for kind, i0, i1, info in marks:
        info = dict(info)
        if 'centre' in info:
            info['centre'] = rot @ info['centre']
        if kind in ('slalom', 'chicane', 'long_straight'):
            lane = info['lane']
            a0, a1 = lanes[lane]
            if kind == 'long_straight':
                u0 = plan['lengths'][0] - info['length']
                u1 = plan['lengths'][0]
            else:
                u0 = info['u0']
                u1 = u0 + _feature_length(info)
            i0 = a0 + int(round(u0 / STEP))
            i1 = min(a0 + int(round(u1 / STEP)), a1)
        feats.append(Feature(kind, arc_of(i0), arc_of(i1), info))
    for i, (gap, pitch) in enumerate(zip(plan['side_gaps'], pitches)):
        (a0, a1), (b0, b1) = lanes[i], lanes[i + 1]
        feats.append(Feature('side_by_side', arc_of(a0), arc_of(a1),
                             {'lanes': (i, i + 1), 'gap': gap,
                              'pitch': pitch,
                              'other': (arc_of(b0), arc_of(b1))}))
    return HardLayout(track=track, features=feats)


def hard_track(seed: int, **params: Any) -> Track:
    """Return the track of :func:`hard_layout` (scenario generator ``hard``)."""
    return hard_layout(seed, **params).track
