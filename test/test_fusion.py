# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Lidar-vision cone fusion and time alignment (the cone map: test_cone_map.py)."""

from cone_detection.fusion import (align, associate, ConeSet, fuse, FusionParams, PoseHistory,
                                   VisionBuffer)
from hil_bridge.interface.cones import CONE_BLUE, CONE_UNKNOWN, CONE_YELLOW
from hil_bridge.interface.frames import se2, transform_xy
import numpy as np
import pytest


def _set(xy, cls=None, conf=None) -> ConeSet:
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    n = xy.shape[0]
    return ConeSet(xy, np.zeros(n, np.uint8) if cls is None else cls,
                   np.full(n, 0.8) if conf is None else conf)


def test_associate_is_optimal_and_gated() -> None:
    """The global optimum wins over greedy; pairs beyond the gate do not."""
    a = np.array([[0.0, 0.0], [1.0, 0.0], [10.0, 0.0]])
    b = np.array([[0.6, 0.0], [1.7, 0.0], [20.0, 0.0]])
    pairs, un_a, un_b = associate(a, b, gate=0.75)
    # greedy would pair a1-b0 (0.4) and leave a0; optimal: a0-b0, a1-b1
    assert sorted(map(tuple, pairs)) == [(0, 0), (1, 1)]
    assert list(un_a) == [2] and list(un_b) == [2]
    pairs, un_a, un_b = associate(np.zeros((0, 2)), b, 0.5)
    assert pairs.shape == (0, 2) and un_b.size == 3
    with pytest.raises(ValueError, match='gate'):
        associate(a, b, 0.0)


def test_fuse_takes_lidar_position_and_vision_colour() -> None:
    """Pairs: lidar xyz + vision class; unmatched lidar unknown."""
    lidar = _set([[5.0, 1.5], [5.0, -1.5], [12.0, 0.0]],
                 conf=np.array([0.9, 0.9, 0.5]))
    vision = _set([[5.3, 1.4], [4.8, -1.7], [30.0, 0.0]],
                  cls=np.array([CONE_BLUE, CONE_YELLOW, CONE_BLUE]),
                  conf=np.array([0.8, 0.8, 0.9]))
    out = fuse(lidar, vision)
    assert len(out) == 3
    np.testing.assert_allclose(out.xyz, lidar.xyz)
    assert list(out.class_id) == [CONE_BLUE, CONE_YELLOW, CONE_UNKNOWN]
    assert out.confidence[0] == pytest.approx(1 - 0.1 * 0.2)
    assert out.confidence[2] == pytest.approx(0.5)
    kept = fuse(lidar, vision, FusionParams(keep_vision_only=True))
    assert len(kept) == 4
    assert kept.class_id[3] == CONE_BLUE
    assert kept.confidence[3] == pytest.approx(0.45)
    np.testing.assert_allclose(kept.xyz[3, :2], [30.0, 0.0])


def test_fuse_without_vision_passes_lidar_as_unknown() -> None:
    """No vision (None or empty): lidar cones pass through, class 0."""
    lidar = _set([[3.0, 1.0], [4.0, -1.0]])
    for vision in (None, ConeSet()):
        out = fuse(lidar, vision)
        assert len(out) == 2 and not out.class_id.any()
    assert len(fuse(ConeSet(), _set([[1.0, 1.0]]))) == 0


def test_coneset_checks_input() -> None:
    """Shape, length, NaN and class-range errors are clear ValueErrors."""
    with pytest.raises(ValueError, match='shape'):
        ConeSet(np.zeros((3, 4)), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match='class ids'):
        ConeSet(np.zeros((3, 3)), np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match='finite'):
        ConeSet(np.array([[np.nan, 0.0, 0.0]]), [0], [1.0])
    with pytest.raises(ValueError, match='0..4'):
        ConeSet(np.zeros((1, 3)), [7], [1.0])
    c = ConeSet(np.zeros((1, 2)), [1], [np.nan])
    assert c.xyz.shape == (1, 3) and c.confidence[0] == 0.0
    with pytest.raises(ValueError, match='gate'):
        FusionParams(gate=-1.0)


def test_vision_buffer_newest_within_age() -> None:
    """The newest detection within max age of the lidar stamp is used."""
    buf = VisionBuffer()
    for t in (1.0, 1.033, 1.066, 1.1):
        buf.add(t, _set([[t, 0.0]]))
    stamp, cones = buf.newest_within(1.05, 0.02)
    assert stamp == pytest.approx(1.066)
    assert buf.newest_within(1.05, 0.1)[0] == pytest.approx(1.1)
    assert buf.newest_within(2.0, 0.1) is None
    buf.add(0.5, _set([[0.0, 0.0]]))  # time jumped back: reset
    assert buf.newest_within(1.05, 0.1) is None


def test_pose_history_and_alignment() -> None:
    """Vision cones seen 0.1 s earlier are moved by the ego motion."""
    poses = PoseHistory()
    for k in range(11):  # 10 m/s along x, yawing at 0.5 rad/s
        t = k * 0.05
        poses.add(t, 10.0 * t, 0.0, 0.5 * t)
    x, y, yaw = poses.at(0.125)
    assert x == pytest.approx(1.25) and yaw == pytest.approx(0.0625)
    assert poses.at(5.0) is None
    world = np.array([[8.0, 2.0, 0.0]])
    p_v, p_l = poses.at(0.1), poses.at(0.2)
    seen_v = transform_xy(np.linalg.inv(se2(*p_v)), world)
    seen_l = transform_xy(np.linalg.inv(se2(*p_l)), world)
    moved = align(ConeSet(seen_v, [1], [1.0]), 0.1, 0.2, poses)
    np.testing.assert_allclose(moved.xyz, seen_l, atol=1e-9)
    same = align(ConeSet(seen_v, [1], [1.0]), 0.1, 9.0, poses)
    np.testing.assert_allclose(same.xyz, seen_v)
    poses.add(float('nan'), 0.0, 0.0, 0.0)
    assert len(poses) == 11
