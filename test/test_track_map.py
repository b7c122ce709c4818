# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Whole-track map after lap 1: loop closure, boundary order, refusals with a reason."""

import math

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
import numpy as np
from path_planning.track_map import (build_track_map, closed_gaps, LapRecorder, project_on_path,
                                     TrackMapParams)
import pytest


@pytest.fixture(scope='module')
def hard():
    """Return a hard generated layout (side-by-side lanes, 9 m hairpins)."""
    return load_scenario('track_sweep', seed=3).track


def _circle(radius: float, n: int = 400) -> np.ndarray:
    t = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    return radius * np.column_stack([np.cos(t), np.sin(t)])


def test_recorder_closes_after_one_lap_only() -> None:
    rec = LapRecorder(TrackMapParams(min_loop_length=50.0))
    t = np.linspace(0.0, 2.2 * math.pi, 2000)
    closed_at = [i for i, a in enumerate(t)
                 if rec.update(20.0 * math.cos(a), 20.0 * math.sin(a), a + math.pi / 2)]
    assert len(closed_at) == 1
    # back within the closure radius of the start (4 m of a 20 m circle)
    assert 2.0 * math.pi - 0.2 - 1e-3 <= t[closed_at[0]] <= 2.0 * math.pi + 1e-3
    assert rec.distance == pytest.approx(2.0 * math.pi * 20.0, abs=4.5)
    # driving the other way past the start does not close the loop
    rev = LapRecorder(TrackMapParams(min_loop_length=10.0))
    poses = [(x, 0.0) for x in np.arange(0.0, 30.0, 0.5)] + \
        [(x, math.pi) for x in np.arange(30.0, -1.0, -0.5)]
    assert not any(rev.update(x, 0.0, yaw) for x, yaw in poses)
    assert not rev.update(math.nan, 0.0, 0.0)


def test_hard_layout_map_is_complete_and_ordered(hard) -> None:
    m = build_track_map(hard.cones.xy, hard.cones.class_id, hard.centerline)
    assert m.ok, m.reason
    cls = hard.cones.class_id
    n_big = int(np.count_nonzero(cls == CONE_BIG_ORANGE))
    assert len(m.left) + len(m.right) == len(cls)
    assert len(m.left) == int(np.count_nonzero(cls == CONE_BLUE)) + n_big // 2
    assert m.n_conflicts == 0 and m.n_ignored == 0 and m.n_start_cones >= 2
    # in driving order: arc positions along the path increase round the loop
    for side in (m.left, m.right):
        s, _off = project_on_path(side, hard.centerline)
        assert np.count_nonzero(np.diff(s) < 0.0) <= 1   # one wrap at the start
        assert closed_gaps(side).max() <= 5.0 + 1e-6
    assert 2.5 < m.min_width <= 3.0 <= m.max_width < 4.0


def test_lidar_only_map_uses_geometry(hard) -> None:
    unknown = np.full(len(hard.cones.class_id), CONE_UNKNOWN, dtype=np.uint8)
    m = build_track_map(hard.cones.xy, unknown, hard.centerline)
    assert m.ok, m.reason
    ref = build_track_map(hard.cones.xy, hard.cones.class_id, hard.centerline)
    np.testing.assert_array_equal(np.sort(m.left, axis=0), np.sort(ref.left, axis=0))
    assert m.n_start_cones == 0   # no colours: the odometry closure alone


def test_refusals_name_the_reason(hard) -> None:
    xy, cls, path = hard.cones.xy, hard.cones.class_id, hard.centerline
    # a gap: three consecutive left cones missing
    m = build_track_map(xy, cls, path)
    drop = [int(np.flatnonzero((xy == m.left[k]).all(axis=1))[0]) for k in (10, 11, 12)]
    keep = np.setdiff1d(np.arange(len(xy)), drop)
    gap = build_track_map(xy[keep], cls[keep], path)
    assert not gap.ok and 'left boundary has a' in gap.reason and 'gap' in gap.reason
    # mirrored colours
    swapped = np.where(cls == CONE_BLUE, CONE_YELLOW, np.where(cls == CONE_YELLOW, CONE_BLUE, cls))
    mir = build_track_map(xy, swapped, path)
    assert not mir.ok and 'wrong side' in mir.reason
    # the driven path does not close
    half = build_track_map(xy, cls, path[: len(path) // 2])
    assert not half.ok and 'loop not closed' in half.reason
    # big orange cones in the map, but not at the start: a closure elsewhere
    far = xy[np.flatnonzero(cls == CONE_BLUE)[40]]
    elsewhere = np.vstack([xy, far + [0.3, 0.0], far + [-0.3, 0.0]])
    orange = np.append(np.where(cls == CONE_BIG_ORANGE, CONE_ORANGE, cls),
                       [CONE_BIG_ORANGE, CONE_BIG_ORANGE]).astype(np.uint8)
    start = build_track_map(elsewhere, orange, path)
    assert not start.ok and 'big orange' in start.reason
    # malformed input never raises
    bad = build_track_map(xy, cls[:-1], path)
    assert not bad.ok and 'classes' in bad.reason
    assert not build_track_map(xy, cls, path[:2]).ok


def test_nan_cones_are_dropped(hard) -> None:
    xy = np.vstack([hard.cones.xy, [[math.nan, 0.0]]])
    cls = np.append(hard.cones.class_id, CONE_BLUE)
    assert build_track_map(xy, cls, hard.centerline).ok


def test_cones_far_from_the_path_are_ignored() -> None:
    cl = _circle(20.0)
    cones = np.vstack([_circle(21.5, 40), _circle(18.5, 40), [[0.0, 0.0], [40.0, 0.0]]])
    cls = np.array([CONE_BLUE] * 40 + [CONE_YELLOW] * 40 + [CONE_UNKNOWN] * 2, dtype=np.uint8)
    # counter-clockwise: the outer circle is on the right
    m = build_track_map(cones, np.where(cls == CONE_BLUE, CONE_YELLOW, np.where(
        cls == CONE_YELLOW, CONE_BLUE, cls)), cl, TrackMapParams(min_start_cones=0))
    assert m.ok, m.reason
    assert m.n_ignored == 2 and len(m.left) == 40 and len(m.right) == 40
    assert np.allclose(np.hypot(*m.left.T), 18.5)


def test_side_labels_of_the_walk_override_the_offset(hard) -> None:
    xy, cls, path = hard.cones.xy, hard.cones.class_id, hard.centerline
    ref = build_track_map(xy, cls, path)
    _s, off = project_on_path(xy, path)
    side = np.where(off > 0.0, 1, -1).astype(np.int8)
    same = build_track_map(xy, cls, path, side=side)
    assert same.ok and len(same.left) == len(ref.left)
    side[np.argmax(off)] = -1                    # the walk put a left cone on the right
    wrong = build_track_map(xy, cls, path, side=side)
    assert len(wrong.right) == len(ref.right) + 1
    assert not build_track_map(xy, cls, path, side=side[:-1]).ok


def test_a_map_without_big_orange_cones_closes_on_odometry(hard) -> None:
    """The competition maps of PacSim mark the timing line with sensors: no big orange cone."""
    cls = np.where(hard.cones.class_id == CONE_BIG_ORANGE, CONE_ORANGE, hard.cones.class_id)
    m = build_track_map(hard.cones.xy, cls, hard.centerline)
    assert m.ok, m.reason
    assert m.n_start_cones == 0


def test_walk_labelled_cones_count_beyond_max_offset() -> None:
    """A 9 m wide circle driven on its inner side: the outer cones are 6 m off the path."""
    path = _circle(21.0)
    cones = np.vstack([_circle(18.5, 40), _circle(27.5, 60)])
    cls = np.array([CONE_BLUE] * 40 + [CONE_YELLOW] * 60, dtype=np.uint8)
    params = TrackMapParams(min_start_cones=0, max_width=12.0)
    unlabelled = build_track_map(cones, cls, path, params)
    assert not unlabelled.ok and 'right boundary has 0 cones' in unlabelled.reason
    side = np.array([1] * 40 + [-1] * 60, dtype=np.int8)
    m = build_track_map(cones, cls, path, params, side=side)
    assert m.ok, m.reason
    assert len(m.left) == 40 and len(m.right) == 60 and m.n_ignored == 0
