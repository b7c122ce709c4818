# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Planning on the car's lane (path_planning.lane, mode ``lane``).

The lane comes from the local cone map's boundary walk: cones beyond its
boundary (a section beside it, the infield) are ignored, the chain cones
carry their side as a colour (so CONEDRIVE's colour rule holds without
colours), and lane mode follows the lane's centre. Closed loop on a hard
generated layout (sections 4-6 m apart, 9 m hairpins, 5 m gaps) that the
colour-midline planner without the map cannot finish.
"""

import math

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.cones import CONE_BLUE, CONE_UNKNOWN, CONE_YELLOW
import numpy as np
from path_planning.cone_map import ConeMap
from path_planning.lane import inside, lane_cones, lane_view, track_path
from path_planning.planner import Planner
from path_planning.pure_pursuit import PursuitParams
from path_planning.tools.closed_loop import default_config, run_lap
import pytest


def _two_lanes() -> np.ndarray:
    """Return a straight 3 m lane along +x and a second one 5 m beyond its left boundary."""
    x = np.arange(-4.0, 30.0, 3.0)
    own = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                     np.column_stack([x, np.full(x.size, -1.5)])])
    beside = np.vstack([np.column_stack([x, np.full(x.size, 6.5)]),
                        np.column_stack([x, np.full(x.size, 9.5)])])
    return np.vstack([own, beside])


def _mapped(cones: np.ndarray) -> ConeMap:
    """Return a cone map of ``cones`` (no colours) seen from x = 0, 0.5, 1, 1.5 m along +x."""
    unknown = np.full(len(cones), CONE_UNKNOWN)
    cmap = ConeMap()
    for k in range(4):
        pose = (0.5 * k, 0.0, 0.0)
        cmap.update(cones - np.array(pose[:2]), unknown, pose)
    return cmap


def test_lane_view_keeps_the_lane_and_ignores_the_section_beside() -> None:
    """Lidar-only: the chains are the own lane's lines; cones beside are ignored."""
    cones = _two_lanes()
    cmap = _mapped(cones)
    pose = (1.5, 0.0, 0.0)
    view = lane_view(cmap, pose)
    assert view is not None and view.length > 15.0
    left = view.cones[view.side_class == CONE_BLUE]
    right = view.cones[view.side_class == CONE_YELLOW]
    np.testing.assert_allclose(left[:, 1], 1.5, atol=1e-6)
    np.testing.assert_allclose(right[:, 1], -1.5, atol=1e-6)
    # the lane centre runs down the middle, ahead of the car
    assert np.all(np.abs(view.path[1:, 1]) < 0.05) and np.all(view.path[1:, 0] > 0.0)
    # detections: one cone in the lane (an obstacle), one beside it, the chains
    det = np.vstack([cones - [1.5, 0.0], [[8.0, 0.3], [8.0, 4.0]]])
    xy, cls, n_ignored = lane_cones(view, det, np.zeros(len(det), np.uint8))
    # every cone beside is ignored (and the own lane's behind the walked part)
    assert n_ignored >= int(np.count_nonzero(det[:, 1] > 3.0))
    assert np.any(np.all(np.isclose(xy, [8.0, 0.3]), axis=1))
    assert not np.any(xy[:, 1] > 3.0)
    assert len(cls) == len(xy)


def test_a_lane_walked_only_behind_the_car_has_no_length() -> None:
    """The walk ends behind the car (it drove on past the mapped cones): no lane ahead."""
    cmap = _mapped(_two_lanes())
    ahead = lane_view(cmap, (1.5, 0.0, 0.0))
    assert ahead is not None and ahead.length > 15.0
    # seen from beyond the last gate (32 m on; the cones end at 26 m) every
    # midpoint is behind: a path there would lead the car back
    past = lane_view(cmap, (32.0, 0.0, 0.0))
    assert past is not None and np.all(past.centre[:, 0] < 0.0)
    assert past.length == 0.0


def test_inside_polygon_and_margin() -> None:
    """Even-odd point in polygon, with a margin band round the edges."""
    square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]])
    pts = np.array([[1.0, 1.0], [3.0, 1.0], [2.2, 1.0], [-0.1, -0.1]])
    assert inside(square, pts).tolist() == [True, False, False, False]
    assert inside(square, pts, margin=0.3).tolist() == [True, False, True, True]
    assert inside(square[:2], pts).tolist() == [False] * 4


def test_track_path_feedback_signs() -> None:
    """Left of a straight path: steer right; on a left circle: its curvature."""
    pp = PursuitParams()
    x = np.linspace(-2.0, 20.0, 45)
    delta, _k, lat, head = track_path(np.column_stack([x, np.full(x.size, -0.5)]), 3.0, pp)
    assert lat == pytest.approx(0.5, abs=1e-6) and head == pytest.approx(0.0, abs=1e-9)
    assert delta < 0.0
    r = 8.0
    a = np.linspace(-0.3, 2.0, 200)
    circle = np.column_stack([r * np.sin(a), r - r * np.cos(a)])
    delta, kappa, lat, _head = track_path(circle, 2.0, pp)
    assert abs(lat) < 0.01   # chord of the 0.1 m resampling
    assert kappa == pytest.approx(1.0 / r, rel=0.05)


@pytest.mark.one_distro
@pytest.mark.parametrize('colours', [True, False])
def test_lane_mode_finishes_a_hard_layout(colours: bool) -> None:
    """hard_7 (side-by-side lanes, 9 m hairpins): lane mode finishes clean, auto does not."""
    scn = load_scenario('track_sweep', seed=7, laps=1, timeout=150.0)
    res = run_lap(default_config('lane'), scn, colours=colours)
    assert res.status == 'finished', res.reason
    assert res.off_courses == 0 and res.cones_hit == 0
    assert res.modes.get('lane', 0) > 0.9 * sum(res.modes.values())
    if colours:
        # the same layout without the cone map: the colour midline stalls
        from dataclasses import replace
        base = run_lap(replace(default_config('auto'), use_map=False), scn)
        assert base.status == 'DNF'


def test_planner_without_a_pose_keeps_the_old_modes() -> None:
    """No odometry pose: no map, lane mode plans like auto on the cones seen."""
    x = np.arange(1.0, 20.0, 3.0)
    xy = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                    np.column_stack([x, np.full(x.size, -1.5)])])
    cls = np.concatenate([np.full(x.size, CONE_BLUE), np.full(x.size, CONE_YELLOW)])
    out = Planner(default_config('lane')).plan(0.0, xy, cls, 3.0)
    assert out.mode == 'midline' and out.lane is None and not out.stop
    out = Planner(default_config('lane')).plan(0.0, xy, cls, 3.0, pose=(0.0, math.nan, 0.0))
    assert out.lane is None


def _hairpin_planner(back: float) -> tuple:
    """Return a lane planner that approached hard_8's tightest turn and the track."""
    from path_planning.raceline import signed_curvature
    from path_planning.tools.closed_loop import cones_in_vehicle_frame
    track = load_scenario('track_sweep', seed=8, laps=1).track
    cl = track.centerline
    tang = np.roll(cl, -1, axis=0) - cl
    yaw = np.arctan2(tang[:, 1], tang[:, 0])
    apex = int(np.argmax(np.abs(signed_curvature(cl))))
    i0 = apex - int(back / float(np.hypot(*tang.T).mean()))
    planner = Planner(default_config('lane'))
    for j in range(i0 - 40, i0 + 1, 2):          # along the centre: the map builds up
        pose = (cl[j, 0], cl[j, 1], yaw[j])
        rel = cones_in_vehicle_frame(track.cones.xy, *pose)
        near = np.hypot(*rel.T) < 20.0
        planner.plan(0.05 * j, rel[near], np.zeros(near.sum(), np.uint8), 3.0, 0.0, pose=pose)
    return planner, track, 0.05 * i0


def test_a_continued_line_the_car_cannot_drive_is_planned_again_from_the_car(
        monkeypatch) -> None:
    """
    In a 9 m hairpin the car 0.3 m outside its last line, 10 deg more inward.

    Continued from the last line (the foot point, the line's heading) the
    line needs more than the steering gives; planned from the car it does
    not: the planner follows the one from the car (seen in full-stack
    runs: continuing such lines, the car never reached full lock and hit
    the exit cone).
    """
    import path_planning.planner as planner_module
    from path_planning.planner import CAR_START
    from path_planning.tools.closed_loop import cones_in_vehicle_frame
    planner, track, t = _hairpin_planner(back=5.0)
    last = planner._line_map[0]
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(last, axis=0).T))])
    m = int(np.searchsorted(s, 3.0))
    d = last[m + 1] - last[m]
    h = math.atan2(d[1], d[0])
    # the turn is to the right: left of the line is its outside
    xy = last[m] + 0.3 * np.array([-math.sin(h), math.cos(h)])
    pose = (float(xy[0]), float(xy[1]), h - math.radians(10.0))
    lines = []
    real = planner_module.plan_lane_line

    def spy(*args, **kwargs):
        lines.append((kwargs['start'], real(*args, **kwargs)))
        return lines[-1][1]

    monkeypatch.setattr(planner_module, 'plan_lane_line', spy)
    rel = cones_in_vehicle_frame(track.cones.xy, *pose)
    near = np.hypot(*rel.T) < 20.0
    out = planner.plan(t + 0.1, rel[near], np.zeros(near.sum(), np.uint8), 2.0, 0.0, pose=pose)
    assert len(lines) == 2
    (first, stitched), (second, again) = lines
    limit = 1.02 * planner.config.line.max_curvature
    assert first != CAR_START and stitched.max_kappa > limit      # continued: beyond the steering
    assert second == CAR_START and again.max_kappa <= limit and again.clearance >= 0.0
    assert out.line is again and out.reason == 'lane_line'


def test_the_line_keeps_more_room_at_speed() -> None:
    """
    lane_margin_speed 0.025 s: planned at 2 and 10 m/s the apex keeps 0.17 and 0.37 m.

    The extra room grows over the line's first ``far_margin_ramp`` m: the
    apex lies beyond it; at the car the line keeps only ``margin`` (a car
    already nearer a cone than the extra is not swerved away at speed).
    """
    from dataclasses import replace
    from path_planning.lane_line import plan_lane_line
    cfg = default_config('lane')
    assert cfg.lane_margin_speed == 0.025
    # a lane 3.5 m wide: 8 m straight, a 90 deg left turn of 7 m radius, 15
    # m straight; the least curvature line takes its apex on the inside cones
    r, w = 7.0, 1.75
    a = np.linspace(0.0, 0.5 * math.pi, 30)[1:-1]
    s = np.arange(0.0, 8.0, 0.5)
    e = np.arange(0.0, 15.0, 0.5)

    def lane(off: float) -> np.ndarray:
        rr = r - off
        return np.vstack([np.column_stack([s - 8.0, np.full(s.size, off)]),
                          np.column_stack([rr * np.sin(a), r - rr * np.cos(a)]),
                          np.column_stack([np.full(e.size, rr), r + e])])

    centre, left, right = lane(0.0), lane(w)[::2], lane(-w)[::2]
    centre = centre[centre[:, 0] >= -6.0] + np.array([6.0, 0.0])
    left, right = left + np.array([6.0, 0.0]), right + np.array([6.0, 0.0])
    cones = np.vstack([left, right])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right))])
    gaps = []
    for v in (2.0, 10.0):
        p = replace(cfg.line, far_margin=cfg.lane_margin_speed * v)
        line = plan_lane_line(centre, left, right, cones, side, p)
        assert line.ok
        s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(line.xy, axis=0).T))])
        assert s[-1] > 20.0 and p.far_margin_ramp < 8.0   # the apex lies beyond the ramp
        # the gap between the car's side and the inside cones' edges
        d = np.hypot(*(line.xy[:, None] - left[None]).transpose(2, 0, 1)).min()
        gaps.append(float(d) - p.half_width - p.cone_radius)
    assert gaps[0] == pytest.approx(cfg.line.margin + 2.0 * cfg.lane_margin_speed, abs=0.05)
    assert gaps[1] == pytest.approx(cfg.line.margin + 10.0 * cfg.lane_margin_speed, abs=0.05)
    # a straight lane 3.5 m wide, the car 0.8 m left of its centre: within
    # the margin (keep 0.93 m: up to 0.82 m off), not within 0.3 m more
    x = np.arange(-4.0, 30.0, 1.0)
    centre = np.column_stack([x, np.zeros(x.size)])
    left, right = centre + [0.0, 1.75], centre - [0.0, 1.75]
    cones = np.vstack([left, right])
    side = np.concatenate([np.ones(len(left)), -np.ones(len(right))])
    far = plan_lane_line(centre, left, right, cones, side, replace(cfg.line, far_margin=0.3),
                         start=(0.0, 0.8, 0.0), start_kappa=0.0)
    base = plan_lane_line(centre, left, right, cones, side, cfg.line,
                          start=(0.0, 0.8, 0.0), start_kappa=0.0)
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(far.xy, axis=0).T))])
    near = s <= 1.0
    # at the car: as without the extra room; 10 m on: 0.3 m more room
    assert np.abs(far.xy[near, 1] - base.xy[near, 1]).max() < 0.03
    ahead = (s >= 10.0) & (s <= 20.0)
    keep = cfg.line.keep
    assert np.all(far.xy[ahead, 1] <= 1.75 - keep - 0.3 + 0.02)
    # without it, the line there is nearer the left cones
    assert not np.all(base.xy[ahead, 1] <= 1.75 - keep - 0.3 + 0.02)
    assert far.max_kappa <= cfg.line.max_curvature


def test_a_line_beyond_the_steering_just_ahead_is_driven_at_full_lock(monkeypatch) -> None:
    """
    The line bends tighter than the steering 1 m ahead: full lock now.

    With ``lane_commit`` 0 the tracking law steers what the line's first
    metre asks (seen in 9 m hairpins, lidar-only: 15-20 deg at the
    entry, full lock only once the car had fallen off the line, and the
    exit cone hit).
    """
    from dataclasses import replace
    import path_planning.planner as planner_module
    from path_planning.lane_line import LaneLine
    cfg = default_config('lane')
    limit = cfg.line.max_curvature
    # a left turn: 0.15 1/m for 1 m, then 1.2 x the limit
    s = np.arange(0.0, 8.0, 0.1)
    kappa = np.where(s < 1.0, 0.15, 1.2 * limit)
    heading = np.concatenate([[0.0], np.cumsum(kappa[:-1] * 0.1)])
    xy = np.column_stack([np.cumsum(np.cos(heading)) * 0.1 - 0.1,
                          np.cumsum(np.sin(heading)) * 0.1])
    tight = LaneLine(xy=xy, kappa=kappa, ok=True, clearance=0.1,
                     max_kappa=float(np.abs(kappa).max()))
    monkeypatch.setattr(planner_module, 'plan_lane_line', lambda *a, **k: tight)
    cones = _two_lanes()
    deltas = []
    for commit in (cfg.lane_commit, 0.0):
        planner = Planner(replace(cfg, lane_commit=commit))
        cmap = _mapped(cones)
        planner.cone_map = cmap
        pose = (1.5, 0.0, 0.0)
        rel = cones - np.array(pose[:2])
        out = planner.plan(0.0, rel, np.full(len(cones), CONE_UNKNOWN), 2.0, 0.0, pose=pose)
        assert out.mode == 'lane' and out.line is tight, (out.mode, out.reason)
        deltas.append(out.delta)
    assert cfg.lane_commit == 2.0
    assert deltas[0] == pytest.approx(cfg.cone_drive.max_steer)
    assert 0.0 < deltas[1] < 0.8 * cfg.cone_drive.max_steer
