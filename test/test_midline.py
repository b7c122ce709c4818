# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Delaunay midline on synthetic straight, curved and hairpin tracks."""

import numpy as np
from path_planning.midline import midline, MidlineParams, STATUS_NO_PATH, STATUS_OK, STATUS_TOO_FEW
import pytest

BLUE, YELLOW, ORANGE, BIG_ORANGE = 1, 2, 3, 4


def track(centre: np.ndarray, half_width: float = 1.5, spacing: float = 2.5
          ) -> 'tuple[np.ndarray, np.ndarray]':
    """Return cones (N, 2) and classes left (blue) / right (yellow) of a line."""
    seg = np.diff(centre, axis=0)
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(seg, axis=1))])
    st = np.arange(0.0, s[-1], spacing)
    x = np.interp(st, s, centre[:, 0])
    y = np.interp(st, s, centre[:, 1])
    tangent = np.stack([np.gradient(x), np.gradient(y)], axis=1)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1)
    pts = np.stack([x, y], axis=1)
    cones = np.concatenate([pts + half_width * normal,
                            pts - half_width * normal])
    cls = np.concatenate([np.full(len(st), BLUE), np.full(len(st), YELLOW)])
    return cones, cls.astype(np.uint8)


def dist_to_line(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Return each point's distance to a densely sampled polyline."""
    return np.linalg.norm(points[:, None] - line[None], axis=2).min(axis=1)


def check_forward(path: np.ndarray, max_step: float = 3.5) -> None:
    steps = np.linalg.norm(np.diff(path, axis=0), axis=1)
    assert steps.max() < max_step  # consecutive midpoints, no jumps
    assert path[0, 0] > 0.0
    assert np.linalg.norm(path[0]) < 3.0


def straight() -> np.ndarray:
    return np.stack([np.linspace(-3, 30, 300), np.zeros(300)], axis=1)


def arc(radius: float, sweep: float, n: int = 400) -> np.ndarray:
    th = np.linspace(0.0, sweep, n)
    return np.stack([abs(radius) * np.sin(th), radius * (1 - np.cos(th))],
                    axis=1)


def test_straight_track() -> None:
    cones, cls = track(straight())
    res = midline(cones, cls)
    assert res.status == STATUS_OK and res.ok
    np.testing.assert_allclose(res.path[:, 1], 0.0, atol=1e-9)
    assert np.all(np.diff(res.path[:, 0]) > 0.0)
    check_forward(res.path)
    assert 18.0 < res.length <= 25.0
    assert res.n_blue > 5 and res.n_yellow > 5


@pytest.mark.parametrize('radius', [8.0, -12.0, 25.0])
def test_curved_track(radius: float) -> None:
    centre = arc(radius, 25.0 / abs(radius))
    cones, cls = track(centre)
    res = midline(cones, cls)
    assert res.ok
    check_forward(res.path)
    assert dist_to_line(res.path, centre).max() < 0.15
    # The path follows the turn: its end heads the right way.
    assert np.sign(res.path[-1, 1]) == np.sign(radius)


def test_hairpin_is_followed_not_cut() -> None:
    leg = np.stack([np.linspace(-3, 6, 90), np.zeros(90)], axis=1)
    turn = arc(3.5, np.pi) + np.array([6.0, 0.0])
    back = np.stack([np.linspace(6, -3, 90), np.full(90, 7.0)], axis=1)
    centre = np.concatenate([leg, turn, back])
    cones, cls = track(centre, spacing=2.0)
    res = midline(cones, cls, MidlineParams(max_length=30.0))
    assert res.ok
    check_forward(res.path)
    assert dist_to_line(res.path, centre).max() < 0.8
    assert res.path[:, 0].max() > 9.0  # went round the hairpin
    assert res.path[-1, 1] > 5.0       # and came back on the far leg


@pytest.mark.parametrize('pattern', ['every_other_blue', 'two_yellow_in_a_row',
                                     'one_each_side'])
def test_missing_cones(pattern: str) -> None:
    centre = arc(15.0, 1.5)
    cones, cls = track(centre)
    n = len(cls) // 2
    keep = np.ones(len(cls), dtype=bool)
    if pattern == 'every_other_blue':
        keep[1:n:2] = False
    elif pattern == 'two_yellow_in_a_row':
        keep[n + 3: n + 5] = False
    else:
        keep[[2, n + 5]] = False
    res = midline(cones[keep], cls[keep])
    assert res.ok
    check_forward(res.path, max_step=5.0)
    assert dist_to_line(res.path, centre).max() < 0.9
    assert res.length > 15.0


def test_one_side_only_or_nothing() -> None:
    cones, cls = track(straight())
    assert midline(cones[cls == BLUE], cls[cls == BLUE]).status == STATUS_TOO_FEW
    assert midline(np.zeros((0, 2)), np.zeros(0)).status == STATUS_TOO_FEW
    assert midline([], []).status == STATUS_TOO_FEW
    unknown = np.zeros(len(cls), dtype=np.uint8)
    assert midline(cones, unknown).status == STATUS_TOO_FEW


def test_small_orange_cones_are_ignored() -> None:
    cones, cls = track(straight())
    base = midline(cones, cls)
    extra = np.array([[12.0, 0.0], [14.0, 0.5], [9.0, 3.0], [6.0, -0.3]])
    res = midline(np.concatenate([cones, extra]),
                  np.concatenate([cls, np.full(4, ORANGE)]))
    np.testing.assert_allclose(res.path, base.path)


def test_big_orange_timing_line_bridges_the_gap() -> None:
    # At a timing line big orange cones replace blue/yellow on both sides
    # for 5 m: they take the side of their nearest coloured neighbour.
    cones, cls = track(straight(), spacing=4.0)
    at_line = (cones[:, 0] > 4.0) & (cones[:, 0] < 14.0)
    cls = cls.copy()
    cls[at_line] = BIG_ORANGE
    res = midline(cones, cls)
    assert res.ok
    np.testing.assert_allclose(res.path[:, 1], 0.0, atol=1e-6)
    assert res.length > 16.0   # past the line (4-14 m), cones within max_range 20 m
    ignored = midline(cones, cls, MidlineParams(use_big_orange=False))
    assert not ignored.ok or ignored.length < 5.0


def test_nan_and_behind_and_far() -> None:
    cones, cls = track(straight())
    bad = np.concatenate([cones, [[np.nan, 1.0], [3.0, np.inf]]])
    bad_cls = np.concatenate([cls, [BLUE, YELLOW]])
    res = midline(bad, bad_cls)
    assert res.ok and res.n_dropped == 2
    assert np.all(res.path[:, 0] > 0.0)
    # Everything behind the car: no path.
    back = cones - np.array([40.0, 0.0])
    assert midline(back, cls).status in (STATUS_NO_PATH, STATUS_TOO_FEW)


def test_degenerate_geometry_does_not_raise() -> None:
    collinear = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    res = midline(collinear, np.array([BLUE, YELLOW, BLUE]))
    assert res.status == STATUS_TOO_FEW
    dup = np.array([[2.0, 1.5], [2.0, 1.5], [2.0, -1.5]])
    assert midline(dup, np.array([BLUE, BLUE, YELLOW])).status != STATUS_OK


def test_bad_shapes() -> None:
    with pytest.raises(ValueError, match='cones'):
        midline(np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match='class_id'):
        midline(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match='max_width'):
        MidlineParams(max_width=-1.0)
