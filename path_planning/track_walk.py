# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The boundary walk: which map cones bound the car's lane, left and right.

Pure functions on :class:`WalkState` (used by
:class:`path_planning.cone_map.ConeMap`). Frames: ``map`` (REP-103,
metres, radians); cones are indices into the map's position array.

The lane is a strip of triangles between its two boundary chains, walked
like an advancing front. A *gate* is the segment from the right chain's
last cone ``r`` to the left chain's last cone ``l``; its forward normal
``f`` (``l - r`` turned by -90 deg) points along the track. Each step adds
one cone ``c`` to one chain:

* ``c`` is a confirmed map cone in no chain, ahead of the gate
  (``(c - mid) . f > min_forward``);
* it joins the left chain (new gate ``r -> c``) only if it lies on the
  left half of the gate (its projection on ``r -> l`` past the middle),
  is not yellow, is at most ``max_gap`` from ``l``, the new gate is
  between ``min_width`` and ``width_change`` wider than the running lane
  width (and at most ``max_width``), the gate itself (``r`` to ``c``) is
  no longer than the diagonal of ``max_width`` across and ``max_gap``
  along (a chain does not run ahead of the other round a corner), it is
  at least ``min_width`` from
  the first and the last :data:`END_CONES` cones of the right chain (a
  pair of cones side by side, such as the big orange ones at the timing
  line, bounds one side only, also where the loop comes back to its
  start), it turns by at most
  ``max_gate_turn`` and the new boundary segment crosses no segment of
  the right chain; the same for the right chain mirrored (not blue);
* no other candidate lies inside the triangle ``(l, r, c)`` (the front
  advances by the nearest cone, as a Delaunay strip does);
* of the valid (cone, side) options the one with the least cost wins:
  the distance ahead of the gate, plus how far the cone lies beside the
  gate's span, plus the change of width, minus a bonus when its colour
  matches the side.

So the walk keeps the lane's width: a cone of a section running side by
side (4-6 m beyond a boundary) would make a gate of two lane widths plus
the gap, and a cone across the track would make one narrower than
``min_width``. Colours decide where known (blue left, yellow right);
lidar-only maps (no colours) are walked on geometry and continuity alone.

The walk starts (:func:`seed_gate`) at the nearest cone on each side of
the car's first pose; :func:`advance_gate` moves the *current* gate (the
last one the car's rear axle has passed) along; :func:`walk` drops the
gates beyond the next one and walks again from there up to ``horizon``
metres ahead (gates behind the car are final). The walk closes the loop
when no free cone is left to walk to after ``min_loop`` metres and both
chains' last cones are near their first ones (:func:`closes`): then the
gates form a ring and walking stops.
"""

from dataclasses import dataclass, field, replace
import math
from typing import List, Optional, Sequence, Tuple

from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
import numpy as np

#: a closing loop's last gate less than this (m) behind gate 0 overlaps it
OVERLAP_BEHIND = 0.5
#: ... when within this (m) of gate 0 along the track (:func:`trim_overlap`)
OVERLAP_REACH = 8.0
#: cones at each end of a chain a new cone of the other chain must keep
#: ``min_width`` from
END_CONES = 3
#: lane widths the arc fit tries, relative to the running width (m)
FIT_WIDTHS = np.array([-0.5, 0.0, 0.5])
#: how far (m) beyond the fitted half width a cone of the lagging chain may
#: lie; at a skewed gate (wider than the running width: one chain ran ahead
#: round a hairpin's apex) up to twice this, by half the excess width, since
#: the arc starts at the skewed gate's midpoint, off the lane's centre
LAG_MARGIN = 1.0
#: largest angle between the track direction and a chain's last segment
#: where a chain may take a ``long_gap`` step (a straight)
LONG_TURN = math.radians(10.0)
#: what a cone inside the fitted lane costs, in units of a far cone's: a
#: lane has no cones in it (an arc leaning into the section beside puts
#: the lane's own boundary cones inside)
INSIDE_COST = 3.0


@dataclass(frozen=True)
class WalkParams:
    """
    Limits of the boundary walk (metres, radians).

    ``max_gap`` longest step between neighbouring cones of one boundary
    (FS rules: 5 m); ``min_width`` / ``max_width`` narrowest / widest gate
    (FS: the track is at least 3 m wide); ``width_change`` how much wider
    than the running width a new gate may be; ``max_gate_turn`` largest
    turn of the gate per step; ``min_forward`` least distance of a new cone
    ahead of the gate; ``horizon`` how far ahead of the car (along the gate
    midpoints) the walk goes; ``max_steps`` most steps per update;
    ``seed_reach`` how far from the car the first cones may be;
    ``min_loop`` walked length before the loop may close; ``colour_bonus``
    cost bonus of a matching colour (m). ``retry_length``: when the walk
    ends less than this far (m) ahead of the car's gate, it is walked
    again from ``retry_gates`` gates behind the car, where it went wrong
    (a chain that ran ahead round a corner before the cones of the other
    side were seen); the longer of the two walks is kept.
    ``reseed_distance``: a walk that stalled (no gate ahead of the car)
    while the car drove on this far (m) past its last gate starts afresh
    at the car (:func:`stalled`), as does one the car has left: no gate
    from the car's current one on within ``reseed_far`` (m) of the car
    (it went past the walk's end beside its last gates, where the car
    does not count as passing them). ``heading_span_colour`` replaces
    ``heading_span`` in the arc fit when the cones around the gate have
    colours (a wrong-coloured cone cannot pull the wider search into a
    neighbouring section; without colours the wider search does).
    ``long_gap``: where no cone qualifies within ``max_gap`` (cones
    missing, as round the start line of mapped event tracks: 7.4 m and
    11.7 m), a cone up to this far straight ahead of its chain's last
    cone (within ``fit_tol`` of the line along the track direction, as
    the chains' last segments give it; the arc fit has too few cones there
    to go by) continues its chain.
    """

    max_gap: float = 6.0
    long_gap: float = 12.0
    min_width: float = 2.3
    max_width: float = 7.0
    width_change: float = 2.5
    max_gate_turn: float = math.radians(85.0)
    min_forward: float = 0.05
    horizon: float = 40.0
    max_steps: int = 60
    seed_reach: float = 6.0
    min_loop: float = 100.0
    fit_reach: float = 8.0
    fit_tol: float = 0.6
    heading_span: float = math.radians(35.0)
    heading_span_colour: float = math.radians(55.0)
    max_curvature: float = 0.5
    retry_length: float = 10.0
    retry_gates: int = 3
    reseed_distance: float = 3.0
    reseed_far: float = 10.0

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('max_gap', 'long_gap', 'min_width', 'max_width', 'width_change',
                     'max_gate_turn', 'horizon', 'seed_reach', 'min_loop', 'fit_reach', 'fit_tol',
                     'heading_span', 'heading_span_colour', 'max_curvature', 'retry_length',
                     'reseed_distance', 'reseed_far'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'WalkParams.{name} must be finite and > 0, got {value}')
        for name in ('min_forward',):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'WalkParams.{name} must be finite and >= 0, got {value}')
        if self.min_width >= self.max_width:
            raise ValueError('WalkParams.min_width must be < max_width')
        if int(self.max_steps) < 1:
            raise ValueError('WalkParams.max_steps must be >= 1')
        if int(self.retry_gates) < 1:
            raise ValueError('WalkParams.retry_gates must be >= 1')


@dataclass
class WalkState:
    """
    The two chains and their gates.

    ``left`` / ``right`` map cone indices in driving direction; ``gates``
    (nl, nr) chain lengths after each step (gate k joins ``right[nr - 1]``
    to ``left[nl - 1]``); ``widths`` the running lane width at each gate
    (m); ``current`` the last gate the car has passed; ``final_left`` /
    ``final_right`` how many chain cones are final; ``closed`` True once
    the loop is complete; ``length`` (m) along the gate midpoints from
    gate 0 to each gate.
    """

    left: List[int] = field(default_factory=list)
    right: List[int] = field(default_factory=list)
    gates: List[Tuple[int, int]] = field(default_factory=list)
    widths: List[float] = field(default_factory=list)
    length: List[float] = field(default_factory=list)
    current: int = 0
    final_left: int = 0
    final_right: int = 0
    closed: bool = False
    laps: int = 0

    def gate_points(self, xy: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Return the (left, right) cone positions of gate ``k``."""
        nl, nr = self.gates[k]
        return xy[self.left[nl - 1]], xy[self.right[nr - 1]]

    def gate_cones(self, ks: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
        """Return the (K,) map indices of the left and right cones of gates ``ks``."""
        nl, nr = np.array([self.gates[k] for k in ks], dtype=int).reshape(-1, 2).T
        return (np.array(self.left, dtype=int)[nl - 1],
                np.array(self.right, dtype=int)[nr - 1])

    def gates_from(self, xy: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Return the (K, 2) left and right cone positions of gates ``k`` to the last."""
        li, ri = self.gate_cones(range(k, len(self.gates)))
        return xy[li], xy[ri]

    def remap(self, remap: np.ndarray, keep: np.ndarray) -> None:
        """Renumber the chains after map cones were dropped (chain cones never are)."""
        self.left = [int(remap[i]) for i in self.left if keep[i]]
        self.right = [int(remap[i]) for i in self.right if keep[i]]

    def copy(self) -> 'WalkState':
        """Return a copy whose chains and gate lists are its own."""
        return replace(self, left=list(self.left), right=list(self.right),
                       gates=list(self.gates), widths=list(self.widths),
                       length=list(self.length))

    def truncate(self, k: int) -> None:
        """Keep gates 0..k and the chain cones they use."""
        del self.gates[k + 1:], self.widths[k + 1:], self.length[k + 1:]
        nl, nr = self.gates[k]
        del self.left[nl:], self.right[nr:]


def _forward(left: np.ndarray, right: np.ndarray) -> Tuple[np.ndarray, float]:
    """Return the gate's forward unit normal and its width."""
    g = left - right
    w = float(math.hypot(g[0], g[1]))
    if w < 1e-9:
        return np.array([1.0, 0.0]), 0.0
    return np.array([g[1], -g[0]]) / w, w


def seed_gate(st: WalkState, xy: np.ndarray, colours: np.ndarray, ok: np.ndarray,
              pose: Tuple[float, float, float], p: WalkParams) -> None:
    """
    Start the walk: the pair of cones beside the car that makes the best gate.

    ``xy`` (M, 2) map cones, ``colours`` (M,) voted classes, ``ok`` (M,)
    confirmed; ``pose`` (x, y, yaw) in ``map``. Of the confirmed cones
    within ``seed_reach`` a left one (not yellow) and a right one (not
    blue) are paired: the gate must be ``min_width`` to ``max_width``
    wide and square to the car (the two cones at most half the gate's
    width apart along the heading); of those pairs the one nearest the
    car (the sum of both distances plus twice their offset along the
    heading) wins. A missed cone (a patchy detection) so does not pair a
    cone with one a gate further on. Leaves ``st`` empty when no pair
    qualifies.
    """
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = xy[:, 0] - x, xy[:, 1] - y
    lx, ly = c * dx + s * dy, -s * dx + c * dy
    dist = np.hypot(lx, ly)
    near = ok & (dist <= p.seed_reach)
    left = np.flatnonzero(near & (ly > 0.0) & (colours != CONE_YELLOW))
    right = np.flatnonzero(near & (ly < 0.0) & (colours != CONE_BLUE))
    if left.size == 0 or right.size == 0:
        return
    w = np.hypot(lx[left][:, None] - lx[right][None], ly[left][:, None] - ly[right][None])
    skew = np.abs(lx[left][:, None] - lx[right][None])
    valid = (w >= p.min_width) & (w <= p.max_width) & (skew <= 0.5 * w)
    if not valid.any():
        return
    cost = np.where(valid, dist[left][:, None] + dist[right][None] + 2.0 * skew, np.inf)
    a, b = np.unravel_index(int(np.argmin(cost)), cost.shape)
    li, ri = int(left[a]), int(right[b])
    st.left, st.right = [li], [ri]
    st.gates, st.widths, st.length = [(1, 1)], [float(w[a, b])], [0.0]
    st.current = 0
    st.final_left = st.final_right = 1


def stalled(st: WalkState, xy: np.ndarray, pose: Tuple[float, float, float],
            p: WalkParams) -> bool:
    """
    Return True when the car has left an open walk behind.

    The walk found no cone to go on with (a layout it cannot read) and
    the car drove on, by the fallback planner: ``reseed_distance`` past
    the last gate, or farther than ``reseed_far`` from every gate from
    the current one on (it passed the last gates outside them). The walk
    then starts again at the car (:func:`seed_gate`) rather than stay
    behind for the lap.
    """
    if not st.gates or st.closed:
        return False
    car = np.asarray(pose[:2], dtype=float)
    gl, gr = st.gates_from(xy, st.current)
    if float(np.min(np.hypot(*(0.5 * (gl + gr) - car).T))) > p.reseed_far:
        return True
    if st.current < len(st.gates) - 1:
        return False
    lp, rp = st.gate_points(xy, len(st.gates) - 1)
    f, _w = _forward(lp, rp)
    return float((car - 0.5 * (lp + rp)) @ f) > p.reseed_distance


def _passed(st: WalkState, xy: np.ndarray, k: int, car: np.ndarray) -> bool:
    lp, rp = st.gate_points(xy, k)
    f, w = _forward(lp, rp)
    d = car - 0.5 * (lp + rp)
    lat = abs(float(d @ np.array([-f[1], f[0]])))
    return float(d @ f) > 0.0 and lat <= 0.5 * w + 1.0


def advance_gate(st: WalkState, xy: np.ndarray, pose: Tuple[float, float, float],
                 p: WalkParams) -> None:
    """Move ``current`` past every gate the car's rear axle has crossed."""
    if not st.gates:
        return
    car = np.array(pose[:2])
    n = len(st.gates)
    for _ in range(n):
        nxt = st.current + 1
        if nxt >= n:
            if not st.closed:
                break
            nxt = 0
        if not _passed(st, xy, nxt, car):
            break
        if nxt == 0:
            st.laps += 1
        st.current = nxt
    if not st.closed:
        st.final_left, st.final_right = st.gates[st.current]
    else:
        st.final_left, st.final_right = len(st.left), len(st.right)


def _segments_cross(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray
                    ) -> np.ndarray:
    """Return (K,) True where segment a0[k]->a1[k] properly crosses b0->b1."""
    def orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - \
            (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0])
    d1 = orient(b0, b1, a0)
    d2 = orient(b0, b1, a1)
    d3 = orient(a0, a1, b0)
    d4 = orient(a0, a1, b1)
    return (d1 * d2 < 0.0) & (d3 * d4 < 0.0)


def _inside(tri: Tuple[np.ndarray, np.ndarray, np.ndarray], pts: np.ndarray) -> np.ndarray:
    """Return (K, P) True where pts[p] lies strictly inside triangle k."""
    a, b, c = tri  # each (K, 2)

    def side(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return (q[:, None, 0] - p[:, None, 0]) * (pts[None, :, 1] - p[:, None, 1]) - \
            (q[:, None, 1] - p[:, None, 1]) * (pts[None, :, 0] - p[:, None, 0])
    s1, s2, s3 = side(a, b), side(b, c), side(c, a)
    eps = 1e-9
    pos = (s1 > eps) & (s2 > eps) & (s3 > eps)
    neg = (s1 < -eps) & (s2 < -eps) & (s3 < -eps)
    return pos | neg


def track_direction(xy: np.ndarray, st: WalkState, f: np.ndarray) -> np.ndarray:
    """
    Return the track direction at the last gate (unit vector in ``map``).

    The mean direction of both chains' last segments (a gate between
    staggered cones is skewed, its normal is not the track direction);
    ``f`` stands in for a chain of one cone.
    """
    dirs = []
    for chain in (st.left, st.right):
        if len(chain) > 1:
            d = xy[chain[-1]] - xy[chain[-2]]
            n = math.hypot(d[0], d[1])
            if n > 1e-9:
                dirs.append(d / n)
    u = np.sum(dirs, axis=0) if dirs else f
    n = math.hypot(u[0], u[1])
    return u / n if n > 1e-9 else f


def arc_coordinates(pts: np.ndarray, origin: np.ndarray, heading: np.ndarray,
                    kappa: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return the arc length ``s`` and signed offset ``n`` of points along arcs.

    Each arc starts at ``origin`` (2,) with heading angle ``heading`` (H,)
    (rad, ``map``) and has curvature ``kappa`` (H,) (1/m, > 0 left);
    ``pts`` (P, 2). Returns two (H, P) arrays: ``s`` the arc length to the
    point's foot on the arc (m; < 0 behind the origin) and ``n`` its offset
    from the arc (m, > 0 left). Exact for circles and straight lines.
    """
    c, sn = np.cos(heading)[:, None], np.sin(heading)[:, None]
    dx = pts[None, :, 0] - origin[0]
    dy = pts[None, :, 1] - origin[1]
    x = c * dx + sn * dy
    y = -sn * dx + c * dy
    k = kappa[:, None]
    n = (2.0 * y - k * (x * x + y * y)) / (1.0 + np.sqrt((k * x) ** 2 + (1.0 - k * y) ** 2))
    phi = np.arctan2(k * x, 1.0 - k * y)
    straight = np.abs(k) < 1e-6
    s = np.where(straight, x, phi / np.where(straight, 1.0, k))
    return s, n


def _fit_arc(lp: np.ndarray, rp: np.ndarray, pts: np.ndarray, colours: np.ndarray,
             u: np.ndarray, width: float, p: 'WalkParams') -> Tuple[float, float, float]:
    """
    Fit the lane ahead of a gate as an arc; return (heading, curvature, width).

    The arc starts at the gate's midpoint; heading (within
    ``heading_span`` of the track direction ``u``, ``heading_span_colour``
    when at least two of ``colours`` are blue or yellow), curvature (up to
    ``max_curvature``) and the lane width (the running ``width`` or up to
    :data:`FIT_WIDTHS` m narrower or wider: real tracks widen and narrow
    round their corners) are searched on a grid for the most cones within
    ``fit_tol`` of the arc's offset lines at +-``width / 2`` (a truncated
    quadratic: far cones cost the same whatever the arc, so the sections
    beside the lane do not pull it); a blue cone on the right or a yellow
    one on the left costs as much as a far one, a cone ahead inside the
    lane :data:`INSIDE_COST` times as much.
    """
    mid = 0.5 * (lp + rp)
    allp = np.vstack((lp[None], rp[None], pts))
    col = np.concatenate(([CONE_BLUE, CONE_YELLOW], colours))
    tol2 = p.fit_tol ** 2
    halves = 0.5 * np.clip(width + FIT_WIDTHS, p.min_width, p.max_width)

    def cost(heading: np.ndarray, kappa: np.ndarray) -> np.ndarray:
        """Return (H, W) costs of the arcs at each of the widths."""
        s, n = arc_coordinates(allp, mid, heading, kappa)
        dist = np.abs(n)[:, None, :]
        res = np.abs(dist - halves[None, :, None])
        wrong = ((col == CONE_BLUE)[None] & (n < 0.0)) | ((col == CONE_YELLOW)[None] & (n > 0.0))
        use = ((s >= -1.0) & (s <= p.fit_reach) & ~wrong)[:, None, :]
        c = np.where(use, np.minimum(res * res, tol2), tol2)
        inside = use & (dist < halves[None, :, None] - p.fit_tol)
        c = np.where(inside & (s[:, None, :] > 0.0), INSIDE_COST * tol2, c).sum(axis=2)
        # the gate's own cones must sit on their side
        c += (np.where(n[:, 0] > 0.0, 0.0, 10.0 * tol2) +
              np.where(n[:, 1] < 0.0, 0.0, 10.0 * tol2))[:, None]
        # ties: the straighter arc, the running width
        return c + 1e-3 * np.abs(kappa)[:, None] + 1e-3 * np.abs(FIT_WIDTHS)[None]

    # coarse grid, then a finer one around its best
    coloured = np.count_nonzero((colours == CONE_BLUE) | (colours == CONE_YELLOW)) >= 2
    span = p.heading_span_colour if coloured else p.heading_span
    d_th, d_k = span / 3.0, p.max_curvature / 9.0
    th = math.atan2(u[1], u[0]) + d_th * np.arange(-3, 4)
    ks = d_k * np.arange(-9, 10)
    heading, kappa = np.repeat(th, ks.size), np.tile(ks, th.size)
    j, m = np.unravel_index(int(np.argmin(cost(heading, kappa))), (heading.size, halves.size))
    th = heading[j] + 0.5 * d_th * np.arange(-1, 2)
    ks = np.clip(kappa[j] + 0.5 * d_k * np.arange(-1, 2), -p.max_curvature, p.max_curvature)
    heading, kappa = np.repeat(th, ks.size), np.tile(ks, th.size)
    c = cost(heading, kappa)[:, m]
    j = int(np.argmin(c))
    return float(heading[j]), float(kappa[j]), float(2.0 * halves[m])


def _step(st: WalkState, xy: np.ndarray, colours: np.ndarray, cand: np.ndarray,
          p: 'WalkParams') -> Tuple[int, int, float]:
    """
    Return the best next (cone, side, lane width); cone -1 when there is none.

    ``cand`` map indices the step may use (confirmed, in no chain); side
    +1 left, -1 right. The lane ahead is fitted as an arc (:func:`_fit_arc`); the next
    cone is the nearest along it of those on its offset lines.
    """
    lp, rp = st.gate_points(xy, len(st.gates) - 1)
    f, w = _forward(lp, rp)
    if cand.size == 0 or w <= 0.0:
        return -1, 0, 0.0
    mid = 0.5 * (lp + rp)
    pts = xy[cand]
    # each candidate's distance (m) to the nearer of the gate's two cones
    to_gate = np.minimum(np.hypot(*(pts - lp).T), np.hypot(*(pts - rp).T))
    context = (np.hypot(*(pts - mid).T) <= p.fit_reach + 1.0) | (to_gate <= p.max_gap)
    u = track_direction(xy, st, f)
    w_run = st.widths[-1]
    heading, kappa, w_fit = _fit_arc(lp, rp, pts[context], colours[cand[context]], u, w_run, p)
    cand = cand[to_gate <= max(p.max_gap, p.long_gap)]
    if cand.size == 0:
        return -1, 0, 0.0
    pts = xy[cand]
    col = colours[cand]
    s, n = arc_coordinates(np.vstack((lp[None], rp[None], pts)), mid, np.array([heading]),
                           np.array([kappa]))
    (s_l, s_r), s = s[0, :2], s[0, 2:]
    n = n[0, 2:]
    side = np.where(n > 0.0, 1, -1)
    res = np.abs(np.abs(n) - 0.5 * w_fit)
    # ahead of the gate and of its own chain's last cone along the arc
    rel = pts - mid
    ahead = rel @ f
    # on the arc's offset line, or (a gate skewed by a chain that ran ahead
    # moves the arc) a cone of its side's colour that continues the chain
    # which lags behind, within the lane's half width plus a margin
    lag = np.where(side > 0, s_l < s_r, s_r < s_l)
    match = ((col == CONE_BLUE) & (side > 0)) | ((col == CONE_YELLOW) & (side < 0))
    lag_margin = LAG_MARGIN + min(max(0.5 * (w - w_run), 0.0), LAG_MARGIN)
    ok = (res <= p.fit_tol) | (lag & match & (np.abs(n) <= 0.5 * w_fit + lag_margin))
    ok &= ahead > p.min_forward
    ok &= s > np.where(side > 0, s_l, s_r) + p.min_forward
    ok &= ~((col == CONE_BLUE) & (side < 0)) & ~((col == CONE_YELLOW) & (side > 0))
    own = np.where(side[:, None] > 0, lp[None], rp[None])
    other = np.where(side[:, None] > 0, rp[None], lp[None])
    gate = np.hypot(*(pts - other).T)
    # a gate is at least min_width and at most a diagonal of max_width across
    # and max_gap along: a chain that runs further ahead of the other (its
    # cones seen first round a corner) waits for the other side's cones
    ok &= (gate >= p.min_width) & (gate <= math.hypot(p.max_width, p.max_gap))
    # the new gate faces along the track (within max_gate_turn of the
    # chains' direction): a cone of one side taken into the other chain
    # (its own side's cone not yet confirmed) makes a gate along the lane
    g = np.where(side[:, None] > 0, pts - other, other - pts)
    ok &= g[:, 1] * u[0] - g[:, 0] * u[1] >= math.cos(p.max_gate_turn) * np.maximum(gate, 1e-9)
    # nor near the other chain's first or last cones: a pair of cones side
    # by side (big orange at the timing line) bounds one side, also where
    # the walk comes back to the loop's start
    ok &= np.where(side > 0, _near_ends(pts, xy, st.right), _near_ends(pts, xy, st.left)) \
        >= p.min_width
    width = np.clip(2.0 * np.abs(n), p.min_width, min(p.max_width, w_run + p.width_change))
    prev_l = xy[st.left[-2]] if len(st.left) > 1 else lp
    prev_r = xy[st.right[-2]] if len(st.right) > 1 else rp
    prev_other = np.where(side[:, None] > 0, prev_r[None], prev_l[None])
    ok &= ~_segments_cross(own, pts, prev_other, other)
    step = np.hypot(*(pts - own).T)
    near = (step <= p.max_gap) & (s <= p.fit_reach)
    if not (ok & near).any() and _straight(xy, st, u):
        # nothing within max_gap on a straight: a cone further on straight
        # ahead of its chain's last one (cones missing round a start line)
        beside = np.abs((pts - own) @ np.array([-u[1], u[0]]))
        near = (beside <= p.fit_tol) & (step <= p.long_gap) & ((pts - own) @ u > 0.0)
    ok &= near
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return -1, 0, 0.0
    # the advancing front's (Delaunay) choice: the cone whose circle through
    # the gate's two cones reaches least far ahead of the gate
    reach = (np.einsum('ij,ij->i', rel[idx], rel[idx]) - 0.25 * w * w) / (2.0 * ahead[idx])
    j = int(idx[np.argmin(reach)])
    return int(cand[j]), int(side[j]), float(width[j])


def _straight(xy: np.ndarray, st: WalkState, u: np.ndarray) -> bool:
    """Return True when each chain's last segment (if any) is within ``LONG_TURN`` of ``u``."""
    for chain in (st.left, st.right):
        if len(chain) > 1:
            d = xy[chain[-1]] - xy[chain[-2]]
            if float(d @ u) < math.cos(LONG_TURN) * math.hypot(d[0], d[1]):
                return False
    return True


def _near_ends(pts: np.ndarray, xy: np.ndarray, chain: List[int]) -> np.ndarray:
    """Return (N,) the distance (m) of each point to the chain's first or last ``END_CONES``."""
    ends = chain[:END_CONES] + chain[-END_CONES:]
    if not ends:
        return np.full(pts.shape[0], np.inf)
    d = pts[:, None, :] - xy[ends][None, :, :]
    return np.hypot(d[..., 0], d[..., 1]).min(axis=1)


def closes(st: WalkState, xy: np.ndarray, p: WalkParams) -> bool:
    """
    Return True when the chains' last cones meet their first ones (a loop).

    Both tails must be within ``max_gap`` of one of their chain's first
    three cones and head the way the chain started (a section running the
    other way beside the start does not close the loop).
    """
    for chain in (st.left, st.right):
        if len(chain) < 4:
            return False
        tail = xy[chain[-1]]
        start = xy[chain[:3]]
        start_dir = xy[chain[1]] - xy[chain[0]]
        near = np.hypot(*(start - tail).T) <= p.max_gap
        ahead = (start - tail) @ start_dir > 0.0
        if not (near & ahead).any():
            return False
    return True


def trim_overlap(st: WalkState, xy: np.ndarray) -> int:
    """
    Drop the last gates that lie past gate 0 as the loop closes; return how many.

    The walk starts at the car with the cones beside it; a lap later its
    tail comes back there on other cones where the first ones are taken
    already (big orange cones 0.7 m outside the boundary at the start
    line of a public track): its last gates then lie beside its first
    ones, and the lane across the start line ran forward to the tail,
    back to gate 0 and forward again, a zigzag the car followed lock to
    lock. The last gate goes with its chain cones when its midpoint lies
    from ``OVERLAP_BEHIND`` m behind gate 0's to ``OVERLAP_REACH`` m
    ahead of it (along gate 0's forward normal) and within gate 0's half
    width and 1 m beside it; then the one before, and so on, never the
    car's gate or one before it.
    """
    if len(st.gates) < 3:
        return 0
    lp, rp = st.gate_points(xy, 0)
    f0, w0 = _forward(lp, rp)
    m0 = 0.5 * (lp + rp)
    k = len(st.gates) - 1
    while k > max(st.current, 1):
        lk, rk = st.gate_points(xy, k)
        d = 0.5 * (lk + rk) - m0
        along = float(d @ f0)
        beside = abs(float(d[0] * f0[1] - d[1] * f0[0])) <= 0.5 * w0 + 1.0
        if along <= -OVERLAP_BEHIND or along > OVERLAP_REACH or not beside:
            break
        k -= 1
    dropped = len(st.gates) - 1 - k
    if dropped:
        st.truncate(k)
    return dropped


def walk(st: WalkState, xy: np.ndarray, colours: np.ndarray, ok: np.ndarray,
         pose: Tuple[float, float, float], p: WalkParams,
         fresh: Optional[np.ndarray] = None) -> None:
    """
    Walk the chains ahead of the car (see the module docstring).

    ``fresh`` (M,) marks the cones confirmed (or recoloured) since the last
    walk (None: all): the gates from the first one a fresh cone is near
    (within ``max_gap``), but never the current gate or the one after it,
    are walked again; then the walk goes on until ``horizon`` metres ahead
    of the current gate, no valid option is left or the loop closes.
    A walk that ends within ``retry_length`` of the car is walked again
    from ``retry_gates`` behind the car; the longer walk is kept.
    """
    if not st.gates or st.closed:
        return
    keep = min(st.current + 1, len(st.gates) - 1)
    if fresh is None:
        k = keep
    else:
        k = len(st.gates) - 1
        ids = np.flatnonzero(fresh)
        if ids.size:
            gl, gr = st.gates_from(xy, keep)
            near = np.minimum(
                np.hypot(*(gl[:, None] - xy[ids][None]).transpose(2, 0, 1)).min(axis=1),
                np.hypot(*(gr[:, None] - xy[ids][None]).transpose(2, 0, 1)).min(axis=1))
            hit = np.flatnonzero(near <= p.max_gap)
            if hit.size:
                k = keep + max(int(hit[0]) - 1, 0)
    st.truncate(max(k, keep))
    _extend(st, xy, colours, ok, pose, p)
    if st.closed or st.current == 0 or _ahead(st) >= p.retry_length:
        return
    # stuck close ahead of the car: walk again from a few gates behind it
    saved = st.copy()
    st.truncate(max(st.current - int(p.retry_gates), 0))
    st.current = len(st.gates) - 1
    _extend(st, xy, colours, ok, pose, p)
    advance_gate(st, xy, pose, p)
    if st.length[-1] <= saved.length[-1] + 1.0 or st.current < saved.current:
        vars(st).update(vars(saved))


def _ahead(st: WalkState) -> float:
    """Return the walked length (m) from the car's gate to the last gate."""
    return st.length[-1] - st.length[st.current]


def _extend(st: WalkState, xy: np.ndarray, colours: np.ndarray, ok: np.ndarray,
            pose: Tuple[float, float, float], p: WalkParams) -> None:
    """Add gates after the last one, up to ``horizon`` ahead of the car's gate (:func:`walk`)."""
    used = np.zeros(len(xy), bool)
    used[st.left] = True
    used[st.right] = True
    car = np.array(pose[:2])
    reach = p.horizon + p.max_gap + 10.0
    near = ok & (np.hypot(*(xy - car).T) <= reach)
    base = st.length[st.current]
    for _ in range(int(p.max_steps)):
        if st.length[-1] - base > p.horizon:
            break
        cone, side, width = _step(st, xy, colours, np.flatnonzero(near & ~used), p)
        if cone < 0:
            if st.length[-1] >= p.min_loop and closes(st, xy, p):
                trim_overlap(st, xy)
                st.closed = True
                st.final_left, st.final_right = len(st.left), len(st.right)
            break
        lp, rp = st.gate_points(xy, len(st.gates) - 1)
        (st.left if side > 0 else st.right).append(cone)
        used[cone] = True
        st.gates.append((len(st.left), len(st.right)))
        st.widths.append(0.8 * st.widths[-1] + 0.2 * width)
        nl, nr = st.gates[-1]
        mid_new = 0.5 * (xy[st.left[nl - 1]] + xy[st.right[nr - 1]])
        st.length.append(st.length[-1] + float(np.hypot(*(mid_new - 0.5 * (lp + rp)))))
