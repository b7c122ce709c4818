# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Lap 1's planned line through the lane (path_planning.lane_line).

A 9 m outside-diameter hairpin as the hard generator builds it (3 m lane,
centre-line radius 3.05 m, opened to the lane pitch by 10 m arcs) is
tighter than fs_car's turning circle (3.28 m at the rear axle): its
centre line cannot be driven. The planned line must stay within the
steering (outside - apex - outside) with the car's box clear of every
cone; where the lane seen ends inside a turn it keeps to the outside and
the speed stops the car before the end. Closed loop: layouts whose 9 m
hairpins the lane-centre follower hit cones on (hard_9: 2, hard_17: 1)
are driven clean, with colours and lidar-only.
"""

from dataclasses import replace
import math
from typing import Tuple

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.speed_profile import resample_polyline
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.lane_line import (_reference, beyond_steering, LaneLine, LaneLineParams,
                                     line_speed, plan_lane_line, remove_kinks)
from path_planning.raceline import box_intrusion, signed_curvature
from path_planning.tools.closed_loop import default_config, run_lap
import pytest

FS = load_vehicle_profile('fs_car')
KAPPA_CAR = math.tan(FS.max_steer) / FS.wheelbase


def _params() -> LaneLineParams:
    return default_config('lane', FS).line


def _hairpin(pitch: float = 8.0, straight: float = 12.0, step: float = 0.1
             ) -> Tuple[np.ndarray, np.ndarray]:
    """Return the centre line (vehicle frame, from 2 m behind the car) and the hairpin centre."""
    r_tight, r_kink = 3.05, 10.0
    theta = math.acos(1.0 - (pitch - 2.0 * r_tight) / (2.0 * (r_kink - r_tight)))
    pts = [np.array([x, 0.0]) for x in np.arange(-2.0, straight, step)]
    pos, yaw = np.array([straight, 0.0]), 0.0
    centre = None
    for radius, angle in ((r_kink, theta), (r_tight, math.pi - 2.0 * theta), (r_kink, theta)):
        c = pos + radius * np.array([-math.sin(yaw), math.cos(yaw)])
        if radius == r_tight:
            centre = c
        for a in np.arange(step / radius, angle + 1e-9, step / radius):
            pts.append(c + radius * np.array([math.sin(yaw + a), -math.cos(yaw + a)]))
        pos, yaw = pts[-1], yaw + angle
    for x in np.arange(step, straight, step):
        pts.append(pos + x * np.array([math.cos(yaw), math.sin(yaw)]))
    return np.array(pts), centre


def _boundaries(centre: np.ndarray, gap: float) -> Tuple[np.ndarray, np.ndarray]:
    """Return cones every ``gap`` m of arc on both boundaries (1.5 m either side)."""
    t = np.gradient(centre, axis=0)
    t /= np.hypot(t[:, 0], t[:, 1])[:, None]
    n = np.column_stack([-t[:, 1], t[:, 0]])
    out = []
    for side in (1.0, -1.0):
        line = centre + 1.5 * side * n
        s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(line, axis=0).T))])
        k = np.searchsorted(s, np.arange(0.0, s[-1], gap))
        out.append(line[k])
    return out[0], out[1]


def _distance(point: Tuple[float, float], seg: np.ndarray) -> float:
    """Return the distance (m) of a point from the segment seg[0] -> seg[1]."""
    a, b = seg
    u = np.clip(np.dot(np.asarray(point) - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
    return float(np.hypot(*(a + u * (b - a) - point)))


def _plan(centre: np.ndarray, left: np.ndarray, right: np.ndarray, **kw):
    cones = np.vstack([left, right])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right))])
    return plan_lane_line(centre[::10], left, right, cones, side, _params(), **kw)


def test_a_9m_hairpin_line_stays_within_the_steering_and_off_the_cones() -> None:
    centre, c = _hairpin()
    # the premise: its centre line asks for more steering than fs_car has
    assert 1.0 / 3.05 > KAPPA_CAR
    left, right = _boundaries(centre, 2.0)
    line = _plan(centre, left, right, closed=True)
    p = _params()
    assert line.ok and line.length > 25.0
    assert line.max_kappa <= 1.02 * p.max_curvature < KAPPA_CAR
    assert _distance((0.0, 0.0), line.xy[:2]) < 1e-6   # from the car
    # the car's box along the line keeps the margin to every cone
    tang = np.gradient(line.xy, axis=0)
    heading = np.arctan2(tang[:, 1], tang[:, 0])
    cones = np.vstack([left, right])
    in_l, in_r = box_intrusion(line.xy, heading, cones, FS, p.cone_radius + p.margin - 0.03,
                               p.cone_radius)
    assert in_l.max() == 0.0 and in_r.max() == 0.0
    # outside - apex - outside: nearest the hairpin's centre at its apex,
    # farther than the centre line where the tight arc begins and ends
    d = np.hypot(*(line.xy - c).T)
    turn = d < 5.0
    assert d[turn].min() < 3.05 - 0.3
    ends = np.flatnonzero(turn)[[0, -1]]
    assert (d[ends] > 3.05).all()


def test_a_turn_seen_only_in_part_keeps_to_the_outside_and_slows() -> None:
    centre, c = _hairpin()
    # the lane seen so far ends about the hairpin's apex
    seen = centre[np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(centre, axis=0).T))]) < 21.0]
    left, right = _boundaries(seen, 2.0)
    line = _plan(seen, left, right)
    assert line.ok and line.open_end
    # the end on the outside of the (left) turn: right of the lane centre
    end = line.xy[-1]
    assert np.hypot(*(end - c)) > 3.05
    assert line.max_kappa <= 1.02 * _params().max_curvature
    # and a speed that stops the car before the line's end
    v = line_speed(line, 0.0, 12.0, 8.0, 6.0, 0.5)
    assert v <= math.sqrt(2.0 * 6.0 * line.length)
    # a tight turn is taken at the tight speed at most
    full = _plan(centre, *_boundaries(centre, 2.0), closed=True)
    k = np.abs(full.kappa)
    assert k.max() > 0.8 * KAPPA_CAR
    fast = line_speed(full, 3.0, 12.0, 8.0, 6.0, 0.5)
    tight = line_speed(full, 3.0, 12.0, 8.0, 6.0, 0.5, tight_kappa=0.8 * KAPPA_CAR,
                       tight_speed=2.0, latency=0.0)
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(full.xy, axis=0).T))])
    first = s[np.argmax(k >= 0.8 * KAPPA_CAR)]
    assert tight <= math.sqrt(4.0 + 2.0 * 6.0 * first) + 1e-9 and tight <= fast


def test_a_straight_lane_gives_a_straight_line_from_the_car() -> None:
    x = np.arange(-4.0, 30.0, 0.5)
    centre = np.column_stack([x, np.zeros_like(x)])
    left, right = _boundaries(centre, 3.0)
    line = _plan(centre, left, right, start=(0.0, 0.4, 0.0))
    assert line.ok and not line.open_end
    assert _distance((0.0, 0.4), line.xy[:2]) < 1e-6
    assert np.abs(line.xy[:, 1]).max() <= 0.4 + 1e-6
    assert np.abs(signed_curvature(line.xy, closed=False)).max() < 0.05
    # too short a lane: no line
    assert not _plan(centre[:12], left[:2], right[:2]).ok


def test_a_lane_that_starts_ahead_of_the_car_starts_the_line_beside_it() -> None:
    """
    At the start line the first gate is 2.7 m ahead of the car (a full-stack start).

    With the steering at full lock from the last command, the line must
    still start beside the car and run straight down the lane: before,
    the car's arc was extrapolated to the first station 2.7 m ahead (1.1 m
    off), the line zig-zagged (|kappa| 1.9 1/m into the cones) and the
    steering flipped lock to lock every cycle for the first seconds.
    """
    gates = np.array([2.73, 5.5, 6.3, 8.28, 10.65, 12.8, 15.0, 17.5, 20.0])
    centre = np.column_stack([gates, np.zeros_like(gates)])
    left = np.column_stack([gates, np.full(gates.size, 1.5)])
    right = np.column_stack([gates, np.full(gates.size, -1.5)])
    cones = np.vstack([left, right])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right))])
    p = _params()
    for kappa in (-p.max_curvature, p.max_curvature):
        line = plan_lane_line(centre, left, right, cones, side, p, start_kappa=kappa)
        assert line.ok
        assert line.xy[0, 0] < 0.5 and abs(line.xy[0, 1]) < 0.1      # beside the car
        assert line.clearance >= 0.0 and line.max_kappa <= p.max_curvature * 1.02
        assert np.abs(line.xy[:, 1]).max() < 0.5                        # down the lane


def test_a_lane_of_one_point_gives_no_line_and_no_steering() -> None:
    """
    A walked centre of coincident points is no lane: no line, zero steering, no exception.

    (A public PacSim track, FSS22_V1, crashed the planner with
    ``resample_polyline: the path has zero length``.)
    """
    from path_planning.lane import track_path
    from path_planning.pure_pursuit import PursuitParams
    x = np.arange(-4.0, 30.0, 0.5)
    left, right = _boundaries(np.column_stack([x, np.zeros_like(x)]), 3.0)
    same = np.tile([[3.0, 0.0]], (5, 1))
    line = plan_lane_line(same, left, right, np.vstack([left, right]),
                          np.concatenate([np.ones(len(left)), -np.ones(len(right))]), _params())
    assert not line.ok
    assert track_path(same, 3.0, PursuitParams()) == (0.0, 0.0, 0.0, 0.0)
    assert track_path(same[:1], 3.0, PursuitParams()) == (0.0, 0.0, 0.0, 0.0)


@pytest.mark.one_distro
@pytest.mark.parametrize('seed,colours', [(17, True), (9, False), (9, True), (18, True)])
def test_lane_mode_drives_9m_hairpins_clean(seed: int, colours: bool) -> None:
    """
    Layouts the lane-centre follower hit hairpin cones on: 0 cones, twice the same.

    hard_9 lidar-only hit a chicane cone at 12 m/s (t=14.4 s, the car
    0.24-0.35 m off its line, 0.12 m margin) until the line kept more room
    ahead at speed (``lane_margin_speed``, growing along the line). With
    colours, hard_9 and hard_18 hit a hairpin's exit cone at 5 m/s, the car
    0.1-0.15 m outside its line, until that offset was kept as room
    (``lane_error_speed``).
    """
    scn = load_scenario('track_sweep', seed=seed, laps=1, timeout=150.0)
    res = run_lap(default_config('lane'), scn, colours=colours)
    assert res.status == 'finished', res.reason
    assert res.cones_hit == 0 and res.off_courses == 0
    again = run_lap(default_config('lane'), scn, colours=colours)
    assert again.lap_times == res.lap_times and again.knocked == res.knocked


def _line_with(kappa: np.ndarray, step: float = 0.25) -> LaneLine:
    """Return a line along x (the points only give its stations' spacing) with ``kappa``."""
    xy = np.column_stack([np.arange(kappa.size) * step, np.zeros(kappa.size)])
    return LaneLine(xy=xy, kappa=kappa, ok=True)


def test_full_lock_follows_the_turn_not_a_kink_at_the_lines_start() -> None:
    """
    A line beyond the steering within 2 m commits to full lock on the tracking law's side only.

    The kinked start seen on a public track (FSS19, 41.1 s): the line's
    first stations at +0.45 1/m, then -0.72 in a right turn, the tracking
    law asking for a right turn; full left lock there put the car on the
    outer cones. A hairpin whose line bends beyond the steering the way
    the car already steers still commits.
    """
    limit = 1.02 * _params().max_curvature
    kinked = _line_with(np.array([0.45, 0.45] + [-0.72] * 10))
    assert beyond_steering(kinked, limit, 2.0) == 1            # first over-limit station
    assert beyond_steering(kinked, limit, 2.0, steering=-0.3) == 0
    assert beyond_steering(kinked, limit, 2.0, steering=0.1) == 1
    assert beyond_steering(kinked, limit, 2.0, steering=0.0) == 0
    hairpin = _line_with(np.array([-0.2, -0.25] + [-0.34] * 10))
    assert beyond_steering(hairpin, limit, 2.0, steering=-0.3) == -1
    assert beyond_steering(hairpin, limit, 0.0, steering=-0.3) == 0
    within = _line_with(np.full(12, 0.5 * limit))
    assert beyond_steering(within, limit, 2.0, steering=0.4) == 0
    far = _line_with(np.array([0.1] * 10 + [0.5] * 4))       # beyond only after 2.25 m
    assert beyond_steering(far, limit, 2.0, steering=0.4) == 0


@pytest.mark.parametrize('gap', [2.0, 2.5, 3.0, 3.5])
def test_the_reference_keeps_no_gate_kink_at_the_car(gap: float) -> None:
    """
    Gate midpoints on a 6 m right turn: the smoothed lane centre's first 2 m bend no more than 2/R.

    The moving average's window shrank to nothing at the car, so the
    reference kept the gate polyline's kinks there (|kappa| up to 0.74
    1/m on this 0.17 1/m turn); on public tracks the line then bent the
    wrong way at its start and its speed limit collapsed to a crawl.
    """
    radius = 6.0
    for phase in np.linspace(0.0, 1.0, 8, endpoint=False):
        a = (np.arange(-2, 6) + phase) * gap / radius
        gates = np.column_stack([radius * np.sin(a), radius * (np.cos(a) - 1.0)])
        ref = _reference(gates, _params())
        assert ref is not None
        k = signed_curvature(ref, closed=False)[1:]
        s = np.cumsum(np.hypot(*np.diff(ref, axis=0).T))
        assert np.abs(k[s <= 2.0]).max() <= 2.0 / radius, (gap, phase)


def test_a_car_off_its_line_keeps_its_error_as_room_on_its_side() -> None:
    """
    A line continued 0.3 m left of the car passes a right cone 0.3 m wider with error_share 1.

    The car's box is where the car is: at 5 m/s a car 0.15 m outside its
    line touched the cone the line passed with exactly the margin.
    """
    x = np.arange(-4.0, 30.0, 0.5)
    centre = np.column_stack([x, np.zeros_like(x)])
    left = np.column_stack([x[::6], np.full(x[::6].size, 2.0)])
    right = np.column_stack([x[::6], np.full(x[::6].size, -2.0)])
    cone = np.array([[6.0, -0.6]])
    cones = np.vstack([left, right, cone])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right) + 1)])
    p = _params()
    keep = p.half_width + p.cone_radius + p.margin
    at_cone = []
    for share in (0.0, 1.0):
        line = plan_lane_line(centre, left, right, cones, side, replace(p, error_share=share),
                              start=(0.0, 0.3, 0.0))
        assert line.ok and _distance((0.0, 0.3), line.xy[:2]) < 1e-6
        near = np.abs(line.xy[:, 0] - 6.0) <= 1.0
        at_cone.append(float(line.xy[near, 1].min()))
    assert at_cone[0] >= -0.6 + keep - 0.03
    assert at_cone[1] >= -0.6 + keep + 0.3 - 0.03
    assert at_cone[1] - at_cone[0] > 0.2
    # from the car itself (no error): the same line whatever the share
    lines = [plan_lane_line(centre, left, right, cones, side, replace(p, error_share=share))
             for share in (0.0, 1.0)]
    assert np.array_equal(lines[0].xy, lines[1].xy)


@pytest.mark.parametrize('width, offset, turn', [(5.0, 1.6, 0.0), (4.0, 1.5, -0.1)])
def test_a_gate_midpoint_far_off_its_neighbours_gives_no_curvature_spike(
        width: float, offset: float, turn: float) -> None:
    """
    Gates every 2 m (straight or a 10 m right turn), one midpoint ``offset`` m to the left.

    The line's curvature is linear in its offsets only to first order, and
    the error grows with the reference's curvature times the offset: about
    such a kink the QP's line was within the limit, the true one 3.6-6.4
    1/m (FSE24, a public competition layout: 0.37 where the QP planned
    0.23; the car at full lock fell behind its line and hit an outer
    cone). A line beyond the steering is planned again about the lane
    centre without its kink; the premise is checked with that off
    (``kink_ratio`` 0).
    """
    s = np.arange(-4.0, 32.0, 2.0)
    a = s * turn
    centre = np.column_stack([s, np.zeros_like(s)]) if turn == 0.0 else \
        np.column_stack([np.sin(a) / turn, (1.0 - np.cos(a)) / turn])
    tang = np.column_stack([np.cos(a), np.sin(a)])
    nrm = np.column_stack([-tang[:, 1], tang[:, 0]])
    left, right = centre + 0.5 * width * nrm, centre - 0.5 * width * nrm
    mid = centre.copy()
    mid[int(np.argmin(np.abs(s - 10.0)))] += offset * nrm[int(np.argmin(np.abs(s - 10.0)))]
    cones = np.vstack([left, right])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right))])
    p = _params()
    kinked = plan_lane_line(mid, left, right, cones, side, replace(p, kink_ratio=0.0))
    assert kinked.ok and kinked.max_kappa > 3.0 * p.max_curvature
    line = plan_lane_line(mid, left, right, cones, side, p)
    assert line.ok and line.length > 25.0
    assert line.max_kappa <= 1.02 * p.max_curvature
    # the kink moved, not the lane: the line keeps the car's room to both boundaries
    dense = resample_polyline(centre, False, 0.05)
    off = np.min(np.hypot(*(line.xy[:, None, :] - dense[None, :, :]).transpose(2, 0, 1)),
                 axis=1)
    assert off.max() <= 0.5 * width - p.keep + 0.05


def test_remove_kinks_leaves_a_hairpin_and_a_kinkless_lane_alone() -> None:
    """A 9 m hairpin's centre bends hard over its whole arc: no kink, the stations unchanged."""
    centre, _ = _hairpin()
    p = _params()
    ref = resample_polyline(centre, False, p.step)
    assert np.abs(signed_curvature(ref, closed=False)).max() > p.kink_curvature
    assert remove_kinks(ref, p.step, p.kink_ratio, p.kink_curvature) is ref
    straight = np.column_stack([np.arange(0.0, 20.0, p.step), np.zeros(40)])
    assert remove_kinks(straight, p.step, p.kink_ratio, p.kink_curvature) is straight
