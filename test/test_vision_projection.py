# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Ground-plane projection of pixels against analytic cases."""

import math

from cone_detection.ground_projection import (horizon_row, map_to_vehicle, pixels_to_ground,
                                              pose_to_matrix, project_to_image, vehicle_to_map)
from hil_bridge.interface.frames import Pose
import numpy as np
import pytest

K = np.array([[644.0, 0.0, 644.0], [0.0, 644.0, 482.0], [0.0, 0.0, 1.0]])
MOUNT = pose_to_matrix(Pose(x=0.5, y=0.06, z=1.0))


def test_principal_point_below_horizon_hits_ground_at_analytic_distance() -> None:
    """A level camera 1 m up: row cy + f/d sees the ground d metres ahead."""
    for d in (2.0, 5.0, 12.0):
        xyz, ok = pixels_to_ground(np.array([[644.0, 482.0 + 644.0 / d]]), K, MOUNT)
        assert ok[0]
        np.testing.assert_allclose(xyz[0], [0.5 + d, 0.06, 0.0], atol=1e-9)


def test_lateral_offset_sign_follows_rep103() -> None:
    """Pixels right of the centre map to negative y (REP-103 y is left)."""
    xyz, ok = pixels_to_ground(np.array([[644.0 + 64.4, 482.0 + 64.4]]), K, MOUNT)
    assert ok[0]
    np.testing.assert_allclose(xyz[0], [10.5, 0.06 - 1.0, 0.0], atol=1e-9)


def test_horizon_and_sky_are_invalid() -> None:
    """Rays at or above the horizon do not hit the ground: NaN and False."""
    xyz, ok = pixels_to_ground(np.array([[644.0, 482.0], [10.0, 100.0], [5.0, 900.0]]),
                               K, MOUNT)
    assert ok.tolist() == [False, False, True]
    assert np.isnan(xyz[:2]).all()


def test_round_trip_with_pitch_roll_yaw() -> None:
    """project_to_image then pixels_to_ground returns the ground points."""
    mount = pose_to_matrix(Pose(x=1.2, y=-0.3, z=1.4, roll=0.03, pitch=0.12, yaw=-0.2))
    rng = np.random.default_rng(1)
    pts = np.column_stack([rng.uniform(3, 20, 50), rng.uniform(-4, 4, 50), np.zeros(50)])
    uv, depth = project_to_image(pts, K, mount)
    assert (depth > 0).all()
    back, ok = pixels_to_ground(uv, K, mount)
    assert ok.all()
    np.testing.assert_allclose(back, pts, atol=1e-8)


def test_pitched_camera_moves_horizon_up() -> None:
    """Pitching down (positive pitch, REP-103) raises the horizon row by f tan(pitch)."""
    level = horizon_row(K, MOUNT, 1288)
    assert level == pytest.approx(482.0)
    down = pose_to_matrix(Pose(z=1.0, pitch=0.1))
    assert horizon_row(K, down, 1288) == pytest.approx(482.0 - 644.0 * math.tan(0.1))


def test_vehicle_map_round_trip() -> None:
    """vehicle_to_map rotates by yaw and translates; map_to_vehicle inverts it."""
    ego = Pose(x=10.0, y=-2.0, yaw=math.pi / 2)
    out = vehicle_to_map(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]]), ego)
    np.testing.assert_allclose(out, [[10.0, -1.0, 0.0], [9.0, -2.0, 0.5]], atol=1e-12)
    np.testing.assert_allclose(map_to_vehicle(out, ego),
                               [[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], atol=1e-12)


def test_bad_inputs_raise_clear_errors() -> None:
    """Malformed K, transforms and pixel arrays give ValueError naming them."""
    uv = np.array([[1.0, 2.0]])
    with pytest.raises(ValueError, match='K'):
        pixels_to_ground(uv, np.eye(2), MOUNT)
    with pytest.raises(ValueError, match='NaN'):
        pixels_to_ground(uv, np.full((3, 3), np.nan), MOUNT)
    with pytest.raises(ValueError, match='T_vehicle_camera'):
        pixels_to_ground(uv, K, np.eye(3))
    with pytest.raises(ValueError, match='rigid'):
        pixels_to_ground(uv, K, np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match='uv'):
        pixels_to_ground(np.zeros((3, 3)), K, MOUNT)
    xyz, ok = pixels_to_ground(np.array([[np.nan, 600.0]]), K, MOUNT)
    assert not ok[0] and np.isnan(xyz).all()
