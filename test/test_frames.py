# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Property-based and analytic tests of the REP-103 and CARLA/UE4 frame conversions."""

import math

from hil_bridge.carla_backend import ue_frames as U
from hil_bridge.interface import frames as F
from hil_bridge.interface.frames import Pose
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

carla = pytest.importorskip('carla')

SETTINGS = settings(max_examples=60, deadline=None)
coord = st.floats(-1e4, 1e4, allow_nan=False)
angle_deg = st.floats(-180.0, 180.0, allow_nan=False)
angle_rad = st.floats(-math.pi, math.pi, allow_nan=False)
rate = st.floats(-720.0, 720.0, allow_nan=False)
vec3 = st.tuples(coord, coord, coord)
MIRROR = np.diag([1.0, -1.0, 1.0, 1.0])


def _rot_close(a: np.ndarray, b: np.ndarray, atol: float = 1e-9) -> bool:
    return np.allclose(a, b, atol=atol)


def _pose_matrix_close(p: Pose, q: Pose, atol: float = 1e-7) -> bool:
    return np.allclose(F.pose_to_matrix(p), F.pose_to_matrix(q), atol=atol)


# --------------------------------------------------------------------------
# CARLA <-> ROS


@SETTINGS
@given(vec3)
def test_carla_ros_point_round_trip(v: tuple) -> None:
    loc = carla.Location(*v)
    ros = U.carla_to_ros_point(loc)
    assert np.allclose(ros, [loc.x, -loc.y, loc.z])
    back = U.ros_to_carla_point(ros)
    assert isinstance(back, U.UELocation)
    assert carla.Location(*back) == loc


@SETTINGS
@given(vec3, rate, rate, rate)
def test_carla_ros_velocity_round_trip(v: tuple, wx: float, wy: float,
                                       wz: float) -> None:
    vel = carla.Vector3D(*v)
    assert np.allclose(U.ros_to_carla_velocity(U.carla_to_ros_velocity(vel)),
                       [vel.x, vel.y, vel.z])
    w = carla.Vector3D(wx, wy, wz)
    ros_w = U.carla_to_ros_angular_velocity(w)
    assert np.allclose(ros_w, np.radians([-w.x, w.y, -w.z]))
    assert np.allclose(U.ros_to_carla_angular_velocity(ros_w), [w.x, w.y, w.z],
                       atol=1e-9)


@SETTINGS
@given(vec3, angle_deg, angle_deg, angle_deg)
def test_carla_pose_matches_carla_matrix(v: tuple, pitch: float, yaw: float,
                                         roll: float) -> None:
    """M @ T_ue @ M equals the REP-103 matrix of the converted pose."""
    tf = carla.Transform(carla.Location(*v), carla.Rotation(pitch, yaw, roll))
    T_ue = np.array(tf.get_matrix())
    pose = U.carla_to_ros_pose(tf)
    T_ros = F.pose_to_matrix(pose)
    # carla computes in float32: allow for it.
    assert np.allclose(T_ros[:3, :3], (MIRROR @ T_ue @ MIRROR)[:3, :3],
                       atol=1e-6)
    assert np.allclose(T_ros[:3, 3], [tf.location.x, -tf.location.y,
                                      tf.location.z], atol=1e-3)
    loc, rot = U.ros_to_carla_pose(pose)
    tf2 = carla.Transform(carla.Location(*loc), carla.Rotation(*rot))
    assert np.allclose(np.array(tf2.get_matrix())[:3, :3], T_ue[:3, :3],
                       atol=1e-5)


@SETTINGS
@given(st.tuples(coord, coord, coord), angle_deg, angle_deg, angle_deg,
       st.lists(st.tuples(st.floats(-50, 50), st.floats(-50, 50),
                          st.floats(-50, 50)), min_size=1, max_size=8))
def test_points_and_poses_consistent(v: tuple, pitch: float, yaw: float,
                                     roll: float, pts: list) -> None:
    """Transforming then converting equals converting then transforming."""
    tf = carla.Transform(carla.Location(*v), carla.Rotation(pitch, yaw, roll))
    local = np.array(pts)
    world_ue = np.array([[p.x, p.y, p.z] for p in
                         (tf.transform(carla.Location(*q)) for q in pts)])
    world_ros = F.transform_points(F.pose_to_matrix(U.carla_to_ros_pose(tf)),
                                   U.carla_to_ros_points(local))
    assert np.allclose(world_ros, U.carla_to_ros_points(world_ue), atol=5e-3)


@SETTINGS
@given(vec3, vec3)
def test_mirror_flips_handedness(a: tuple, b: tuple) -> None:
    """The numeric cross product changes sign under the UE4 -> ROS map."""
    a_ue, b_ue = np.array(a), np.array(b)
    lhs = U.carla_to_ros_point(np.cross(a_ue, b_ue))
    rhs = np.cross(U.carla_to_ros_point(a_ue), U.carla_to_ros_point(b_ue))
    assert np.allclose(lhs, -rhs, rtol=1e-9, atol=1e-6)


def test_converted_basis_handedness() -> None:
    fwd = U.carla_to_ros_point((1.0, 0.0, 0.0))
    right = U.carla_to_ros_point((0.0, 1.0, 0.0))
    up = U.carla_to_ros_point((0.0, 0.0, 1.0))
    # In REP-103 forward x left = up, so forward x right = down.
    assert np.allclose(np.cross(fwd, right), -up)
    assert np.allclose(right, [0.0, -1.0, 0.0])


def test_left_turn_is_positive_ros_yaw_rate() -> None:
    # In UE4 a left turn decreases yaw (clockwise is positive seen from above).
    w_ue = carla.Vector3D(0.0, 0.0, -30.0)
    w_ros = U.carla_to_ros_angular_velocity(w_ue)
    assert w_ros[2] == pytest.approx(math.radians(30.0))
    # The heading after the turn points to the left (+y in ROS).
    _, _, yaw = U.carla_to_ros_rotation(carla.Rotation(0.0, -30.0, 0.0))
    assert yaw == pytest.approx(math.radians(30.0))
    heading = F.rotation_matrix(0.0, 0.0, yaw) @ [1.0, 0.0, 0.0]
    assert heading[1] > 0.0
    # Same heading from the UE4 forward vector of that rotation.
    fwd = carla.Rotation(0.0, -30.0, 0.0).get_forward_vector()
    assert np.allclose(U.carla_to_ros_point(fwd), heading, atol=1e-6)


def _omega(R0: np.ndarray, R1: np.ndarray, dt: float) -> np.ndarray:
    """Return w with R1 = (I + dt [w]x) R0 (the numeric v = w x r)."""
    skew = (R1 @ R0.T - np.eye(3)) / dt
    return np.array([skew[2, 1], skew[0, 2], skew[1, 0]])


@pytest.mark.parametrize('axis', [0, 1, 2])
def test_angular_velocity_matches_rotation_rate(axis: int) -> None:
    """
    The rate conversion turns UE4's physics angular velocity into REP-103's.

    UE4's physics (PhysX) reports the ``v = w x r`` vector in UE numbers;
    it is computed here from two ``carla.Transform.get_matrix()`` (the real
    client's own rotation convention) a small step apart, for a roll, a
    pitch and a yaw motion. Its conversion must equal the REP-103 rate of
    the converted rotations: a pseudo-vector, ``(-x, y, -z)``.
    """
    dt = 1e-4
    rates = np.zeros(3)
    rates[axis] = 40.0                       # UE roll, pitch, yaw rates, deg/s
    r0 = carla.Rotation(pitch=5.0, yaw=20.0, roll=-3.0)
    r1 = carla.Rotation(pitch=r0.pitch + rates[1] * dt, yaw=r0.yaw + rates[2] * dt,
                        roll=r0.roll + rates[0] * dt)
    R_ue = [np.array(carla.Transform(carla.Location(), r).get_matrix())[:3, :3]
            for r in (r0, r1)]
    w_ue = np.degrees(_omega(R_ue[0], R_ue[1], dt))
    R_ros = [F.rotation_matrix(*U.carla_to_ros_rotation(r)) for r in (r0, r1)]
    expected = _omega(R_ros[0], R_ros[1], dt)
    got = U.carla_to_ros_angular_velocity(carla.Vector3D(*w_ue))
    assert np.linalg.norm(expected) > 0.5
    assert np.allclose(got, expected, atol=1e-3)


def test_carla_analytic_cases() -> None:
    roll, pitch, yaw = U.carla_to_ros_rotation(carla.Rotation(10.0, 90.0,
                                                              -20.0))
    assert (roll, pitch, yaw) == pytest.approx(
        (math.radians(-20.0), math.radians(-10.0), math.radians(-90.0)))
    q = U.carla_to_ros_quaternion(carla.Rotation(0.0, 90.0, 0.0))
    assert q == pytest.approx((0.0, 0.0, -math.sqrt(0.5), math.sqrt(0.5)))
    rot = U.ros_to_carla_rotation(0.0, 0.0, math.pi / 2)
    assert carla.Rotation(*rot).yaw == pytest.approx(-90.0)
    assert isinstance(rot, U.UERotation)
    # AEB tutorial: ego at CARLA (0, 28, 1) is at ROS (0, -28, 1).
    assert np.allclose(U.carla_to_ros_point(carla.Location(0.0, 28.0, 1.0)),
                       [0.0, -28.0, 1.0])


# --------------------------------------------------------------------------
# point arrays and raw buffers


@SETTINGS
@given(st.integers(0, 50), st.sampled_from([3, 4]),
       st.sampled_from([np.float32, np.float64]))
def test_points_round_trip_keeps_columns(n: int, cols: int, dtype: type
                                         ) -> None:
    rng = np.random.default_rng(n)
    pts = rng.normal(size=(n, cols)).astype(dtype)
    ros = U.carla_to_ros_points(pts)
    assert ros.dtype == dtype and ros.shape == pts.shape
    assert np.array_equal(ros[:, 1], -pts[:, 1])
    assert np.array_equal(np.delete(ros, 1, axis=1), np.delete(pts, 1, axis=1))
    assert np.array_equal(U.ros_to_carla_points(ros), pts)
    assert not np.shares_memory(ros, pts)


def test_carla_lidar_to_ros_bytes_and_array() -> None:
    rng = np.random.default_rng(1)
    ue = rng.normal(size=(1000, 4)).astype(np.float32)
    raw = ue.tobytes()
    out = U.carla_lidar_to_ros(raw)
    assert out.dtype == np.float32 and out.shape == (1000, 4)
    assert np.array_equal(out[:, 1], -ue[:, 1])
    assert np.array_equal(out[:, [0, 2, 3]], ue[:, [0, 2, 3]])
    assert np.array_equal(U.carla_lidar_to_ros(ue), out)
    assert np.array_equal(U.carla_lidar_to_ros(memoryview(raw)), out)
    assert np.array_equal(U.carla_lidar_to_ros(bytearray(raw)), out)
    assert U.carla_lidar_to_ros(b'').shape == (0, 4)


def test_carla_image_to_bgr_is_a_view() -> None:
    h, w = 6, 5
    bgra = np.arange(h * w * 4, dtype=np.uint8).reshape(h, w, 4)
    buf = bytearray(bgra.tobytes())
    bgr = U.carla_image_to_bgr(buf, w, h)
    assert bgr.shape == (h, w, 3) and bgr.dtype == np.uint8
    assert np.array_equal(bgr, bgra[:, :, :3])
    buf[0] = 255                             # a view: sees the change
    assert bgr[0, 0, 0] == 255
    arr_view = U.carla_image_to_bgr(bgra, w, h)
    assert np.shares_memory(arr_view, bgra)


@pytest.mark.parametrize('raw', [b'\x00' * 15, np.zeros((3, 3), np.float32),
                                 np.zeros((2, 4), np.float64), 3.0])
def test_bad_lidar_input(raw: object) -> None:
    with pytest.raises(ValueError, match='lidar'):
        U.carla_lidar_to_ros(raw)


def test_bad_image_input() -> None:
    with pytest.raises(ValueError, match='expected 5x6x4'):
        U.carla_image_to_bgr(b'\x00' * 10, 5, 6)
    with pytest.raises(ValueError, match='positive'):
        U.carla_image_to_bgr(b'', 0, 6)
    with pytest.raises(ValueError, match='uint8'):
        U.carla_image_to_bgr(np.zeros((6, 5, 3), np.uint8), 5, 6)
    with pytest.raises(ValueError, match='bytes-like'):
        U.carla_image_to_bgr(1.0, 5, 6)


# --------------------------------------------------------------------------
# euler <-> quaternion <-> matrix


@SETTINGS
@given(angle_rad, angle_rad, angle_rad)
def test_euler_quaternion_matrix_round_trips(roll: float, pitch: float,
                                             yaw: float) -> None:
    q = F.euler_to_quaternion(roll, pitch, yaw)
    assert math.isclose(np.linalg.norm(q), 1.0, rel_tol=1e-12)
    assert q[3] >= 0.0
    R = F.rotation_matrix(roll, pitch, yaw)
    # Hand-checked composition order: Rz(yaw) Ry(pitch) Rx(roll).
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), \
        math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    assert _rot_close(R, Rz @ Ry @ Rx)
    e = F.quaternion_to_euler(*q)
    assert -math.pi / 2 <= e[1] <= math.pi / 2
    assert _rot_close(F.rotation_matrix(*e), R, atol=1e-7)
    # Scaled quaternions describe the same rotation.
    e2 = F.quaternion_to_euler(*(3.0 * np.array(q)))
    assert _rot_close(F.rotation_matrix(*e2), R, atol=1e-7)
    pose = Pose(1.0, -2.0, 0.5, roll, pitch, yaw)
    T = F.pose_to_matrix(pose)
    assert np.allclose(F.pose_to_matrix(F.matrix_to_pose(T)), T, atol=1e-7)


@pytest.mark.parametrize('pitch', [math.pi / 2, -math.pi / 2])
def test_gimbal_lock(pitch: float) -> None:
    R = F.rotation_matrix(0.4, pitch, -1.1)
    roll, p, yaw = F.quaternion_to_euler(*F.euler_to_quaternion(0.4, pitch,
                                                                -1.1))
    assert roll == 0.0 and p == pytest.approx(pitch)
    assert _rot_close(F.rotation_matrix(roll, p, yaw), R, atol=1e-6)


def test_euler_quaternion_vectorised() -> None:
    rng = np.random.default_rng(3)
    angles = rng.uniform(-3.0, 3.0, size=(3, 7))
    angles[1] /= 2.5
    qx, qy, qz, qw = F.euler_to_quaternion(*angles)
    assert qx.shape == (7,)
    for i in range(7):
        assert np.allclose((qx[i], qy[i], qz[i], qw[i]),
                           F.euler_to_quaternion(*angles[:, i]))
    r, p, y = F.quaternion_to_euler(qx, qy, qz, qw)
    assert np.allclose(np.stack([r, p, y]), angles)


def test_quaternion_analytic() -> None:
    assert F.euler_to_quaternion(0.0, 0.0, math.pi / 2) == pytest.approx(
        (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)))
    assert F.euler_to_quaternion(math.pi, 0.0, 0.0) == pytest.approx(
        (1.0, 0.0, 0.0, 0.0), abs=1e-12)
    T = F.pose_to_matrix(1.0, 2.0, 3.0, 0.0, 0.0, math.pi / 2)
    out = F.transform_points(T, np.array([[1.0, 0.0, 0.0, 7.0]], np.float32))
    assert out.dtype == np.float32
    assert np.allclose(out, [[1.0, 3.0, 3.0, 7.0]], atol=1e-6)


def test_bad_rotation_input() -> None:
    with pytest.raises(ValueError, match='finite'):
        F.euler_to_quaternion(float('nan'), 0.0, 0.0)
    with pytest.raises(ValueError, match='zero'):
        F.quaternion_to_euler(0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match='finite'):
        F.quaternion_to_euler(0.0, 0.0, float('inf'), 1.0)
    with pytest.raises(ValueError, match='yaw'):
        F.pose_to_matrix(0.0, 0.0, 0.0, 0.0, 0.0, float('nan'))
    with pytest.raises(ValueError, match='proper rotation'):
        F.matrix_to_pose(np.diag([1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match='shape'):
        F.matrix_to_pose(np.eye(3))
    with pytest.raises(ValueError, match='shape'):
        F.transform_points(np.eye(4), np.zeros((4, 2)))
    with pytest.raises(ValueError, match='location.y'):
        U.carla_to_ros_point(carla.Location(0.0, float('nan'), 0.0))
    with pytest.raises(ValueError, match='shape'):
        U.carla_to_ros_point([1.0, 2.0])
    with pytest.raises(ValueError, match='roll/pitch/yaw'):
        U.carla_to_ros_rotation((1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match='location and rotation'):
        U.carla_to_ros_pose(carla.Location())
    with pytest.raises(ValueError, match='numeric'):
        U.carla_to_ros_points(np.array([['a', 'b', 'c']]))


def test_quaternion_yaw_of_scaled_zero_and_nan_quaternions() -> None:
    """
    One message's yaw: unit, scaled, zero-length and NaN quaternions.

    A scaled quaternion is the same rotation (normalised); a zero one, as
    an estimator publishes before its first fix, has no yaw: NaN, which
    the planner and the AEB drop (it was read as yaw 0 before).
    """
    from types import SimpleNamespace as Q
    for yaw in (-3.0, -1.0, 0.0, 0.5, 2.9):
        x, y, z, w = F.euler_to_quaternion(0.0, 0.0, yaw)
        assert F.quaternion_yaw(Q(x=x, y=y, z=z, w=w)) == pytest.approx(yaw)
        assert F.quaternion_yaw(Q(x=3 * x, y=3 * y, z=3 * z, w=3 * w)) == \
            pytest.approx(yaw)
        assert F.quaternion_yaw(Q(x=x / 7, y=y / 7, z=z / 7, w=w / 7)) == \
            pytest.approx(yaw)
    assert math.isnan(F.quaternion_yaw(Q(x=0.0, y=0.0, z=0.0, w=0.0)))
    assert math.isnan(F.quaternion_yaw(Q(x=0.0, y=0.0, z=1e-5, w=0.0)))
    assert math.isnan(F.quaternion_yaw(Q(x=0.0, y=0.0, z=math.nan, w=1.0)))
