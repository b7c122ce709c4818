# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Fusion time alignment with delayed vision input (in-process, no DDS)."""

from cone_detection.fusion import align, ConeSet, fuse, FusionParams, PoseHistory, VisionBuffer
import numpy as np


def _scene(speed: float = 8.0, lag: float = 0.1):
    """Ego driving straight along x at ``speed`` m/s; vision ``lag`` s old."""
    poses = PoseHistory()
    for k in range(21):
        t = 0.05 * k
        poses.add(t, speed * t, 0.0, 0.0)
    t_lidar = 1.0
    t_vision = t_lidar - lag
    cones_map = np.array([[12.0, 1.5], [12.0, -1.5], [16.0, 1.5]])
    lidar = ConeSet(cones_map - [speed * t_lidar, 0.0],
                    np.zeros(3, np.uint8), np.full(3, 0.9, np.float32))
    vision = ConeSet(cones_map - [speed * t_vision, 0.0],
                     np.array([1, 2, 1], np.uint8),
                     np.full(3, 0.8, np.float32))
    return poses, t_lidar, t_vision, lidar, vision


def test_delayed_vision_is_aligned_to_lidar_stamp():
    """A 0.1 s old detection at 8 m/s (0.8 m off) keeps its colours."""
    poses, t_l, t_v, lidar, vision = _scene()
    buf = VisionBuffer()
    buf.add(t_v, vision)
    params = FusionParams(gate=0.6, max_vision_age=0.15)
    found = buf.newest_within(t_l, params.max_vision_age)
    assert found is not None
    moved = align(found[1], found[0], t_l, poses)
    np.testing.assert_allclose(moved.xyz[:, :2], lidar.xyz[:, :2], atol=1e-9)
    out = fuse(lidar, moved, params)
    assert out.class_id.tolist() == [1, 2, 1]
    # Without alignment the 0.8 m shift exceeds the gate: no colour.
    raw = fuse(lidar, found[1], params)
    assert raw.class_id.tolist() == [0, 0, 0]


def test_too_old_vision_is_not_used():
    """Vision older than max_vision_age is ignored (lidar passes unknown)."""
    _, t_l, t_v, _, vision = _scene(lag=0.3)
    buf = VisionBuffer()
    buf.add(t_v, vision)
    assert buf.newest_within(t_l, 0.15) is None
    assert buf.newest_within(t_l, 0.35) is not None


def test_align_without_pose_coverage_is_identity():
    """No poses for the vision stamp: cones are returned unchanged."""
    poses, t_l, _, _, vision = _scene()
    out = align(vision, -5.0, t_l, poses)
    np.testing.assert_array_equal(out.xyz, vision.xyz)
