# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The boundary walk on what real track files have and generated layouts lack.

Real Formula Student tracks (eufs_sim's small_track, FSG layouts) change
width round their corners (5 m on one straight, 6.5 m on the next) and
space their outer cones wider than the inner ones; a car sees the inner
cones of a corner first. The walk must not let one chain run ahead of the
other, must follow the width change, must recover when it went wrong
before the other side's cones were seen, and a stalled walk gives a lane
of no length (never a path back to the gates behind the car).
"""

import math

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_YELLOW
import numpy as np
from path_planning.cone_map import ConeMap, to_vehicle
from path_planning.lane import lane_view
from path_planning.track_walk import (_step, stalled, trim_overlap, walk, WalkParams,
                                      WalkState)
import pytest


def _stadium(step: float = 0.25) -> np.ndarray:
    """Return the centre line (K, 2) of a 40 x 26 m rounded rectangle, counter-clockwise."""
    r, a, b = 7.0, 13.0, 6.0   # corner radius, half straights (x, y)
    pts = []
    for cx, cy, th0 in ((a, b, 0.0), (-a, b, 0.5 * math.pi), (-a, -b, math.pi),
                        (a, -b, 1.5 * math.pi)):
        th = th0 + np.linspace(0.0, 0.5 * math.pi, 40, endpoint=False)
        pts.append(np.column_stack([cx + r * np.cos(th), cy + r * np.sin(th)]))
    ring = np.vstack(pts)
    closed = np.vstack([ring, ring[:1]])
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(closed, axis=0).T))])
    q = np.arange(0.0, s[-1], step)
    cl = np.column_stack([np.interp(q, s, closed[:, 0]), np.interp(q, s, closed[:, 1])])
    # start in the middle of the straight at x = 20, heading +y
    return np.roll(cl, -int(np.argmin(np.hypot(cl[:, 0] - 20.0, cl[:, 1]))), axis=0)


def _widening_track() -> 'tuple[np.ndarray, np.ndarray, np.ndarray]':
    """
    Return (centre line, cones (N, 2), side (N,) +1 left / -1 right).

    5 m wide on the straights along y, 6.5 m on those along x (the width
    changes round the corners); inner (left) cones every 3 m, outer
    (right) cones every 4.5 m.
    """
    cl = _stadium()
    d = np.gradient(cl, axis=0)
    t = d / np.hypot(*d.T)[:, None]
    n = np.column_stack([-t[:, 1], t[:, 0]])
    width = 5.0 + 1.5 * np.abs(t[:, 0])
    cones, side = [], []
    for sign, spacing in ((1, 3.0), (-1, 4.5)):
        line = cl + sign * 0.5 * width[:, None] * n
        ls = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(line, axis=0).T))])
        q = np.arange(0.0, ls[-1] - 0.5 * spacing, spacing)
        cones.append(np.column_stack([np.interp(q, ls, line[:, 0]), np.interp(q, ls, line[:, 1])]))
        side.append(np.full(len(q), sign))
    return cl, np.vstack(cones), np.concatenate(side)


def test_walk_follows_a_track_that_widens_round_its_corners() -> None:
    """
    A car on the centre line sees the cones 20 m ahead, +-60 deg, with colours.

    Every cone ends in its own chain, the loop closes, and the lane ahead
    is never shorter than 6 m after the start (the planner's
    ``min_lane_length``): the walk never stalls. (Without colours the walk
    still stalls in these corners and starts again past them: the arc fit
    searches a narrower heading span there.)
    """
    cl, xy, side = _widening_track()
    d = np.gradient(cl, axis=0)
    yaw = np.arctan2(d[:, 1], d[:, 0])
    rng = np.random.default_rng(0)
    cmap = ConeMap()
    shortest = math.inf
    for k in list(range(0, len(cl), 4)) + list(range(0, 40, 4)):
        pose = (float(cl[k, 0]), float(cl[k, 1]), float(yaw[k]))
        local = to_vehicle(xy, pose)
        seen = (np.hypot(*local.T) < 20.0) & (np.abs(np.arctan2(local[:, 1], local[:, 0]))
                                              < math.radians(60.0))
        obs = local[seen] + rng.normal(0.0, 0.03, (int(seen.sum()), 2))
        cmap.update(obs, np.where(side[seen] > 0, CONE_BLUE, CONE_YELLOW), pose)
        view = lane_view(cmap, pose)
        if k >= 40 and not cmap.closed:
            shortest = min(shortest, view.length if view is not None else 0.0)
    assert shortest >= 6.0
    assert cmap.closed
    left, right = cmap.boundaries()
    for line, want in ((left, 1), (right, -1)):
        truth = np.argmin(np.hypot(*(line.xy[:, None] - xy[None]).transpose(2, 0, 1)), axis=1)
        assert (side[truth] == want).all()
    assert len(left) == int(np.count_nonzero(side > 0))
    assert len(right) == int(np.count_nonzero(side < 0))


def test_a_chain_does_not_run_ahead_of_the_other() -> None:
    """Only right cones seen: the right chain stops one diagonal gate ahead of the left."""
    x = np.arange(3.0, 30.0, 3.0)
    xy = np.vstack([[[0.0, 2.5], [0.0, -2.5]], np.column_stack([x, np.full(x.size, -2.5)])])
    colours = np.zeros(len(xy), np.uint8)
    st = WalkState(left=[0], right=[1], gates=[(1, 1)], widths=[5.0], length=[0.0])
    p = WalkParams()
    walk(st, xy, colours, np.ones(len(xy), bool), (-1.0, 0.0, 0.0), p)
    tail = xy[st.right[-1]]
    assert st.left == [0]
    assert len(st.right) > 1                                         # it did walk
    assert math.hypot(*(tail - xy[0])) <= math.hypot(p.max_width, p.max_gap)
    # the next right cone would make a longer gate: it is refused
    nxt = xy[st.right[-1] + 1]
    assert math.hypot(*(nxt - xy[0])) > math.hypot(p.max_width, p.max_gap)
    used = np.zeros(len(xy), bool)
    used[st.left + st.right] = True
    assert _step(st, xy, colours, np.flatnonzero(~used), p)[0] == -1


def test_a_cone_across_the_lane_does_not_join_the_other_chain() -> None:
    """
    A 3 m lane, lidar-only, a section 4 m beside it; its next right cones not confirmed yet.

    The right chain waits for them: a left cone taken into it makes a gate
    along the lane (90 deg off the chains' direction; seen in hard_26
    lidar-only at 8 m/s: the walk stalled there for the rest of the
    straight and the fallback drove into a hairpin's infield). Once they
    are confirmed, both chains run on down their own lines.
    """
    x = np.arange(0.0, 32.0, 4.0)
    beside = np.arange(13.0, 34.0, 3.0)
    xy = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),      # left
                    np.column_stack([x, np.full(x.size, -1.5)]),     # right
                    np.column_stack([beside, np.full(beside.size, 5.5)]),
                    np.column_stack([beside, np.full(beside.size, 8.5)])])
    colours = np.zeros(len(xy), np.uint8)
    n = x.size
    ok = np.ones(len(xy), bool)
    ok[n + 4:2 * n] = False            # the right cones from x = 16 m on
    st = WalkState(left=[0], right=[n], gates=[(1, 1)], widths=[3.0], length=[0.0])
    p = WalkParams()
    walk(st, xy, colours, ok, (1.0, 0.0, 0.0), p)
    assert st.right == list(range(n, n + 4))      # up to x = 12 m, nothing across
    assert st.left[:4] == list(range(4))
    walk(st, xy, colours, np.ones(len(xy), bool), (1.0, 0.0, 0.0), p, fresh=~ok)
    assert st.right[:n - 1] == list(range(n, 2 * n - 1))     # to x = 24 m
    assert st.left[:n - 1] == list(range(n - 1))
    assert np.all(xy[st.right, 1] < 0.0)


def test_the_lane_path_starts_at_the_cars_gate() -> None:
    """
    The lane centre never runs through gates behind the car's gate.

    A car turned back (a stalled walk past a skewed gate, seen on a
    generated hairpin) has midpoints of gates it passed in front of it,
    nearer than its own gate's: the old path ran back through them and
    lane mode followed it off the track. The lane from the car's gate on
    then lies behind the car: it is given no length (lane mode is not
    used on it; full-stack layout 23 turned round into a cone on such a
    lane).
    """
    x = np.arange(0.0, 16.0, 3.0)
    xy = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                    np.column_stack([x, np.full(x.size, -1.5)])])
    n = x.size
    gates = [(1, 1)]
    while gates[-1] != (n, n):
        nl, nr = gates[-1]
        gates.append((nl + 1, nr) if nl == nr else (nl, nr + 1))
    cmap = ConeMap()
    cmap.xy = xy
    st = WalkState(left=list(range(n)), right=list(range(n, 2 * n)), gates=gates,
                   widths=[3.0] * len(gates), length=[1.5 * k for k in range(len(gates))],
                   current=8)
    cmap.state = st
    view = lane_view(cmap, (9.7, 0.0, math.pi))
    # car heading -x: map x = 9.7 - vehicle x; the car's gate's midpoint is at x = 12
    assert (9.7 - view.path[1:, 0] >= 12.0 - 1e-9).all()
    assert view.path.shape[0] > 2 and view.length == 0.0


def test_the_walk_starts_again_past_a_stretch_it_cannot_read() -> None:
    """
    A left boundary with a 15 m hole (real files have them): the walk stalls at it.

    The car drives on (the fallback planner's job) and, once it is
    ``reseed_distance`` past the last gate, the walk starts again at the
    car and finds the lane ahead.
    """
    x = np.arange(0.0, 60.0, 3.0)
    left = np.column_stack([x, np.full(x.size, 1.75)])
    left = left[(x < 12.0) | (x > 27.0)]
    right = np.column_stack([x, np.full(x.size, -1.75)])
    xy = np.vstack([left, right])
    cmap = ConeMap()
    lengths = {}
    for k in range(0, 50):
        pose = (float(k), 0.0, 0.0)
        local = to_vehicle(xy, pose)
        seen = (local[:, 0] > -2.0) & (np.hypot(*local.T) < 20.0)
        for _ in range(3):
            cmap.update(local[seen], np.zeros(int(seen.sum())), pose)
        view = lane_view(cmap, pose)
        lengths[k] = view.length if view is not None else 0.0
    assert lengths[0] > 6.0
    assert lengths[16] < 6.0                  # stalled at the hole
    assert min(lengths[k] for k in range(32, 40)) > 6.0
    # the new walk's chains hold only cones past the hole
    left_line, right_line = cmap.boundaries()
    assert (left_line.xy[:, 0] > 27.0).all()


def test_the_walk_steps_over_cones_missing_round_the_start_line() -> None:
    """
    Cones taken away round the start line (a mapped event track): gaps of 7.4 m and 11.7 m.

    Nothing lies within ``max_gap`` of the first gate, but the next cones
    stand straight ahead on both boundaries: the walk steps over the gaps
    (``long_gap``) from the first update, not only once the car has
    driven past them on the fallback planner.
    """
    left_x = np.concatenate([np.arange(-9.5, 1.5, 3.5), np.arange(8.4, 40.0, 4.0)])
    right_x = np.concatenate([np.arange(-9.5, 1.5, 3.5), np.arange(12.7, 40.0, 4.0)])
    xy = np.vstack([np.column_stack([left_x, np.full(left_x.size, 1.6)]),
                    np.column_stack([right_x, np.full(right_x.size, -1.6)])])
    assert np.diff(left_x).max() == pytest.approx(7.4) and \
        np.diff(right_x).max() == pytest.approx(11.7)
    cmap = ConeMap()
    pose = (0.0, 0.0, 0.0)
    local = to_vehicle(xy, pose)
    seen = (local[:, 0] > -2.0) & (np.hypot(*local.T) < 20.0)
    for _ in range(3):
        cmap.update(local[seen], np.zeros(int(seen.sum())), pose)
    view = lane_view(cmap, pose)
    assert view is not None and view.length > 12.0
    left_line, right_line = cmap.boundaries()
    assert (np.abs(left_line.xy[:, 1] - 1.6) < 0.01).all()
    assert (np.abs(right_line.xy[:, 1] + 1.6) < 0.01).all()
    assert left_line.xy[:, 0].max() > 12.0 and right_line.xy[:, 0].max() > 12.0
    with pytest.raises(ValueError, match='long_gap'):
        WalkParams(long_gap=0.0)


#: hard layout 23, lidar-only, 12.5 s: the map's cones round the exit of a
#: hairpin (m, ``map``); the right chain ran 3.5 m ahead of the left one
HARD_23_LEFT = [(-7.64, -88.92), (-9.54, -85.63), (-10.27, -81.89), (-10.47, -77.15)]
HARD_23_RIGHT = [(-6.15, -85.82), (-7.27, -81.76), (-7.47, -77.02), (-8.42, -73.59)]
HARD_23_NEXT_LEFT = (-11.14, -74.85)
HARD_23_OTHERS = [
    (-7.54, -63.64), (-8.0, -66.45), (-10.97, -65.42), (-8.75, -69.21), (1.66, -72.77),
    (-11.57, -68.2), (1.84, -77.16), (-12.17, -71.57), (2.03, -81.56), (-16.52, -66.52),
    (-16.35, -70.46), (-16.18, -74.39), (-3.23, -88.85), (-16.01, -78.33), (-15.83, -82.26),
    (-16.09, -85.3), (-17.13, -88.15), (-18.83, -82.38), (-19.71, -86.61), (-19.0, -78.45),
    (-19.17, -74.51), (-23.74, -77.82), (-19.34, -70.58), (-19.52, -66.66)]


@pytest.mark.parametrize('inside_cost', [None, 1.0])
def test_the_arc_does_not_lean_into_the_section_beside(monkeypatch, inside_cost) -> None:
    """
    Past a hairpin, with a skewed last gate, the lane's next left cone is taken.

    The arc fit once preferred an arc leaning left into the section 5-8 m
    beside (its cones on the arc's offset lines) that put the lane's own
    next left cone inside the lane: the walk stalled 5 m ahead of a car at
    9 m/s and the fallback left the track (hard layout 23, lidar-only).
    A cone inside the fitted lane costs more than a far one; with it
    costing the same (``inside_cost`` 1) the step finds nothing.
    """
    import path_planning.track_walk as track_walk
    if inside_cost is not None:
        monkeypatch.setattr(track_walk, 'INSIDE_COST', inside_cost)
    xy = np.array(HARD_23_LEFT + HARD_23_RIGHT + [HARD_23_NEXT_LEFT] + HARD_23_OTHERS)
    st = WalkState(left=[0, 1, 2, 3], right=[4, 5, 6, 7],
                   gates=[(1, 1), (2, 2), (3, 3), (4, 4)], widths=[2.94, 3.0, 2.98, 2.98],
                   length=[0.0, 3.8, 7.6, 11.4])
    colours = np.zeros(len(xy), np.uint8)
    cone, side, _width = _step(st, xy, colours, np.arange(8, len(xy)), WalkParams())
    if inside_cost is None:
        assert (cone, side) == (8, 1)
    else:
        assert cone == -1


def test_a_car_that_left_the_walk_beside_its_last_gates_starts_it_again() -> None:
    """
    Far from every gate from its current one on, the car has left the walk: it is stalled.

    Hard layout 40, lap 2 (lidar-only): the walk ended at the start line
    (a gap it could not close), the car passed its last gates beside them
    (never counted as passing), drove 100 m by the fallback planner and
    left the track; the walk only restarted once the car was past the
    last gate. Near the gates, or behind them, it is not stalled.
    """
    x = np.arange(0.0, 13.0, 3.0)
    xy = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                    np.column_stack([x, np.full(x.size, -1.5)])])
    n = x.size
    st = WalkState(left=list(range(n)), right=list(range(n, 2 * n)),
                   gates=[(k, k) for k in range(1, n + 1)], widths=[3.0] * n,
                   length=list(x), current=2)
    p = WalkParams()
    assert not stalled(st, xy, (6.5, 0.0, 0.0), p)             # on the lane
    assert not stalled(st, xy, (2.0, 0.0, 0.0), p)             # just behind gate 2
    assert stalled(st, xy, (6.0, 1.5 + p.reseed_far + 1.0, 0.0), p)
    assert stalled(st, xy, (12.0 + p.reseed_far + 1.0, 0.0, 0.0), p)
    assert not stalled(st, xy, (12.0 + p.reseed_distance + 1.0, 0.0, 0.0), p)  # not passed
    st.current = n - 1
    assert stalled(st, xy, (12.0 + p.reseed_distance + 1.0, 0.0, 0.0), p)


#: hard layout 9's 9 m hairpin (a right turn) in map, as the fused run's map
#: had it: the right (inner) chain has run round the apex onto the exit's
#: first cone, the left (outer) one waits at the apex; the last gate is
#: 6.8 m wide (the lane 3.1 m)
HARD_9_LEFT = [(0.0, 10.95), (3.74, 9.24), (7.05, 6.04), (6.98, 1.45)]
HARD_9_RIGHT = [(-1.25, 8.23), (2.48, 6.51), (4.24, 2.69), (0.17, 1.56)]
#: the outer chain's next cone, then the exit's cones
HARD_9_NEXT_LEFT = (3.5, -1.62)
HARD_9_OTHERS = [(-2.7, 2.89), (-3.96, 0.16), (-1.09, -1.17)]
HARD_9_OTHER_COLOURS = [CONE_YELLOW, CONE_BLUE, CONE_BLUE]


@pytest.mark.parametrize('mirrored', [False, True])
def test_the_lagging_chain_goes_on_round_a_hairpin_past_a_skewed_gate(mirrored) -> None:
    """
    At a hairpin's apex the outer chain takes its next cone though the gate is skewed.

    Hard layout 9, fused (coloured cones): the inner chain had run round
    the apex onto the exit's first cone; the arc fitted from the skewed
    gate's midpoint put the outer chain's next cone (blue, 4.7 m on)
    1.2 m beyond its offset line, past the lagging chain's 1 m margin: the
    lane ended at the apex with a kink, the car came in on the inside at
    12 m/s, could not make the turn and hit the outer cone (layout 10 the
    same, mirrored: off course). The lagging chain's margin grows with
    half the gate's excess width (up to twice): the step takes that cone.
    ``mirrored`` is the same hairpin turning left (y and colours swapped).
    """
    xy = np.array(HARD_9_LEFT + HARD_9_RIGHT + [HARD_9_NEXT_LEFT] + HARD_9_OTHERS)
    colours = np.array([CONE_BLUE] * 4 + [CONE_YELLOW] * 4 + [CONE_BLUE]
                       + HARD_9_OTHER_COLOURS, np.uint8)
    left, right = [0, 1, 2, 3], [4, 5, 6, 7]
    if mirrored:
        xy[:, 1] *= -1.0
        colours = np.where(colours == CONE_BLUE, CONE_YELLOW, CONE_BLUE).astype(np.uint8)
        left, right = right, left
    gates = [(1, 1), (2, 2), (3, 2), (3, 3), (4, 3), (4, 4)]
    st = WalkState(left=left, right=right, gates=gates, widths=[3.03, 3.03, 3.1, 3.09, 3.09, 3.1],
                   length=[0.0, 4.0, 6.1, 8.4, 10.5, 12.6])
    lp, rp = st.gate_points(xy, len(gates) - 1)
    assert math.hypot(*(lp - rp)) > 6.5                      # the skewed gate
    cone, side, _width = _step(st, xy, colours, np.arange(8, len(xy)), WalkParams())
    assert (cone, side) == (8, -1 if mirrored else 1)


def _closing_walk(tail: list) -> tuple:
    """Return a walk from gate 0 at the origin (heading +x, 3 m wide), its last gates ``tail``."""
    pts = [(0.0, 0.0), (3.0, 0.0), (-9.0, 0.0)] + list(tail)
    left = np.array([(x, y + 1.5) for x, y in pts])
    right = np.array([(x, y - 1.5) for x, y in pts])
    xy = np.vstack([left, right])
    n = len(pts)
    st = WalkState(left=list(range(n)), right=list(range(n, 2 * n)),
                   gates=[(k + 1, k + 1) for k in range(n)], widths=[3.0] * n,
                   length=[float(k) for k in range(n)], current=1)
    return st, xy


def test_a_closing_loop_drops_the_last_gates_that_lie_beside_its_first() -> None:
    """
    Big orange cones beside the start line's boundary cones: the tail comes back on them.

    The last two gates (midpoints 0.2 m and 2.8 m past gate 0, between
    the big orange cones 0.7 m outside the boundary) lie beside gates 0
    and 1; kept, the lane across the start line ran forward to 2.8 m,
    back to 0 and forward again (EPFL's track_4: lock to lock at 7 m/s,
    three cones on lap 2). Gates behind gate 0 stay.
    """
    st, xy = _closing_walk([(-6.0, 0.0), (-3.0, 0.0), (0.2, 0.0), (2.8, 0.0)])
    assert trim_overlap(st, xy) == 2
    assert len(st.gates) == 5 and len(st.left) == 5 and len(st.right) == 5
    mids = np.array([0.5 * (a + b) for a, b in (st.gate_points(xy, k) for k in range(5))])
    assert mids[-1, 0] == -3.0
    # a tail that ends behind gate 0 (the usual closure) is left alone
    st, xy = _closing_walk([(-6.0, 0.0), (-3.0, 0.0), (-0.6, 0.0)])
    assert trim_overlap(st, xy) == 0 and len(st.gates) == 6
    # as is a last gate ahead of gate 0 but off its lane (a section beside the start)
    st, xy = _closing_walk([(-6.0, 0.0), (-3.0, 0.0), (1.0, 4.0)])
    assert trim_overlap(st, xy) == 0 and len(st.gates) == 6


def test_the_lane_across_the_start_line_runs_forward_after_the_loop_closes() -> None:
    """
    Start as on EPFL's track_4: cones every 3 m, big orange ones 0.7 m outside the start line's.

    The car starts 2 m past the first cones (its 270 deg field of view
    sees them): the walk seeds there. A lap later those are taken and the
    big orange cones beside the next ones are free: without a trim, the
    loop's last gates lie beside its first ones and the lane across the
    start line ran forward, back and forward again (track_4: lock to lock
    at 7 m/s, three cones on lap 2). From 6 m before the start line the
    lane centre must run forward all the way.
    """
    cl = _stadium()
    d = np.gradient(cl, axis=0)
    t = d / np.hypot(*d.T)[:, None]
    n = np.column_stack([-t[:, 1], t[:, 0]])
    cones, cls = [], []
    for sign, colour in ((1, CONE_BLUE), (-1, CONE_YELLOW)):
        line = cl + sign * 1.5 * n
        ls = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(line, axis=0).T))])
        q = np.arange(1.1, ls[-1] - 1.5, 3.0)
        cones.append(np.column_stack([np.interp(q, ls, line[:, 0]), np.interp(q, ls, line[:, 1])]))
        cls.append(np.full(len(q), colour))
    # the start line at y = 6 on the straight x = 20 (heading +y)
    big = np.array([[17.8, 4.7], [17.8, 7.3], [22.2, 4.7], [22.2, 7.3]])
    xy = np.vstack(cones + [big])
    colour = np.concatenate(cls + [np.full(4, CONE_BIG_ORANGE)]).astype(np.uint8)
    yaw = np.arctan2(d[:, 1], d[:, 0])
    k0 = int(np.argmin(np.hypot(cl[:, 0] - 20.0, cl[:, 1] - 3.0)))
    cmap = ConeMap()
    for k in range(k0, k0 + len(cl) - 36, 4):
        k %= len(cl)
        pose = (float(cl[k, 0]), float(cl[k, 1]), float(yaw[k]))
        local = to_vehicle(xy, pose)
        seen = (np.hypot(*local.T) < 20.0) & (np.abs(np.arctan2(local[:, 1], local[:, 0]))
                                              < math.radians(135.0))
        cmap.update(local[seen], colour[seen], pose)
    assert cmap.closed
    assert pose[1] < -4.0 and abs(pose[0] - 20.0) < 0.1        # before the start line
    view = lane_view(cmap, pose)
    ahead = view.centre[(view.centre[:, 0] > 0.0) & (view.centre[:, 0] < 18.0)
                        & (np.abs(view.centre[:, 1]) < 3.0)]
    assert len(ahead) >= 4
    assert (np.diff(ahead[:, 0]) > 0.0).all(), np.round(ahead, 2)
