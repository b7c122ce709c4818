# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Coordinate frame conversions between CARLA/UE4, ROS REP-103 and AirSim NED.

Conventions (no rclpy here, numpy and scipy only):

* **ROS REP-103** (what the rest of carla_hil uses): right-handed, x
  forward, y left, z up; metres, radians; orientation as roll/pitch/yaw
  (fixed-axis X-Y-Z, i.e. ``R = Rz(yaw) Ry(pitch) Rx(roll)``) or a unit
  quaternion ``(x, y, z, w)``.
* **CARLA / Unreal Engine 4**: left-handed, x forward, y right, z up;
  metres, degrees. ``carla.Rotation(pitch, yaw, roll)``: positive yaw turns
  x towards +y (clockwise seen from above), positive pitch lifts the nose.
  The conversion is the carla-ros-bridge one: location ``(x, -y, z)``,
  rotation ``(roll, -pitch, -yaw)`` degrees to radians, linear velocity
  ``(x, -y, z)``, angular velocity ``(x, -y, -z)`` deg/s to rad/s. It is
  the mirror ``y -> -y``, so every CARLA -> ROS map is its own inverse up
  to the unit change. It agrees with ``carla.Transform.get_matrix()``:
  ``M @ T_ue @ M == pose_to_matrix(*converted)`` with ``M = diag(1,-1,1,1)``.
* **AirSim NED**: right-handed, x north (forward), y east (right), z down;
  metres, radians. With the ROS ``map`` x axis taken as north (AirSim puts
  x along the player start's forward direction) NED is the rotation by pi
  about x: points ``(x, -y, -z)``, rotation ``(roll, -pitch, -yaw)``,
  quaternion ``(x, -y, -z, w)``, angular velocity ``(x, -y, -z)``.

Every function accepts CARLA value objects (duck-typed: ``.x/.y/.z``,
``.roll/.pitch/.yaw``, ``.location/.rotation``) or plain numbers/arrays.
Bad input (NaN/inf, wrong shapes, zero quaternions, buffers of the wrong
size) raises ``ValueError`` naming the argument.
"""

import math
from typing import Any, NamedTuple, Sequence, Tuple, Union

from hil_bridge.backend import Pose
import numpy as np
from scipy.spatial.transform import Rotation

ArrayLike = Union[np.ndarray, Sequence[float]]

# Mirror y (CARLA <-> ROS) and rotation by pi about x (ROS <-> NED).
_MIRROR_Y = np.array([1.0, -1.0, 1.0])
_FLIP_YZ = np.array([1.0, -1.0, -1.0])


class UELocation(NamedTuple):
    """A CARLA/UE4 location or vector (m or m/s): ``carla.Location(*v)``."""

    x: float
    y: float
    z: float


class UERotation(NamedTuple):
    """A CARLA/UE4 rotation in degrees, in ``carla.Rotation(*r)`` order."""

    pitch: float
    yaw: float
    roll: float


# --------------------------------------------------------------------------
# input helpers


def _finite(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a number, got {value!r}') from None
    if not math.isfinite(v):
        raise ValueError(f'{name} must be finite, got {v}')
    return v


def _vec3(v: Any, name: str) -> np.ndarray:
    """Return a finite float64 (3,) array from an object or a sequence."""
    if hasattr(v, 'x') and hasattr(v, 'y') and hasattr(v, 'z'):
        arr = np.array([_finite(v.x, f'{name}.x'), _finite(v.y, f'{name}.y'),
                        _finite(v.z, f'{name}.z')])
        return arr
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a 3-vector, got {v!r}') from None
    if arr.shape != (3,):
        raise ValueError(f'{name} must have shape (3,), got {arr.shape}')
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{name} must be finite, got {arr}')
    return arr


def _rpy(r: Any, name: str) -> Tuple[float, float, float]:
    """Return (roll, pitch, yaw) from an object with those attributes."""
    if hasattr(r, 'roll') and hasattr(r, 'pitch') and hasattr(r, 'yaw'):
        return (_finite(r.roll, f'{name}.roll'),
                _finite(r.pitch, f'{name}.pitch'),
                _finite(r.yaw, f'{name}.yaw'))
    raise ValueError(f'{name} must have roll/pitch/yaw attributes, '
                     f'got {r!r}')


def _points(pts: Any, name: str) -> np.ndarray:
    """Return pts as an (N, 3) or (N, 4) array (a (3,) vector -> (1, 3))."""
    try:
        arr = np.asarray(pts)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be an (N, 3) or (N, 4) array') from None
    if arr.dtype.kind not in 'fiu':
        raise ValueError(f'{name} must be numeric, got dtype {arr.dtype}')
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise ValueError(f'{name} must have shape (N, 3) or (N, 4), '
                         f'got {arr.shape}')
    if arr.dtype.kind != 'f':
        arr = arr.astype(np.float64)
    return arr


def _scale_columns(arr: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """
    Return a copy with the columns whose sign is -1 negated.

    One copy plus an in-place negation per flipped column: about twice as
    fast as a broadcast multiply over the short rows.
    """
    out = np.array(arr, dtype=arr.dtype, order='C', copy=True)
    # Not np.negative(..., out=...): numpy 2.4.6 gets it wrong on strided
    # in-place views.
    for col in np.flatnonzero(np.asarray(signs) < 0):
        out[:, col] *= -1
    return out


# --------------------------------------------------------------------------
# Euler angles, quaternions, matrices (REP-103)


def euler_to_quaternion(roll: Any, pitch: Any, yaw: Any
                        ) -> Tuple[Any, Any, Any, Any]:
    """
    Convert REP-103 roll/pitch/yaw (rad, fixed axes X-Y-Z) to a quaternion.

    Returns ``(x, y, z, w)`` with ``w >= 0``; floats for scalar input,
    arrays of the broadcast shape for array input.
    """
    r, p, y = np.broadcast_arrays(np.asarray(roll, dtype=np.float64),
                                  np.asarray(pitch, dtype=np.float64),
                                  np.asarray(yaw, dtype=np.float64))
    angles = np.stack([r.ravel(), p.ravel(), y.ravel()], axis=-1)
    if not np.all(np.isfinite(angles)):
        raise ValueError('euler_to_quaternion: roll/pitch/yaw must be finite')
    q = Rotation.from_euler('xyz', angles).as_quat()
    q = np.where(q[:, 3:4] < 0.0, -q, q)
    if r.ndim == 0:
        return float(q[0, 0]), float(q[0, 1]), float(q[0, 2]), float(q[0, 3])
    shape = r.shape
    return (q[:, 0].reshape(shape), q[:, 1].reshape(shape),
            q[:, 2].reshape(shape), q[:, 3].reshape(shape))


def _quat_array(x: Any, y: Any, z: Any, w: Any) -> Tuple[np.ndarray, tuple]:
    qx, qy, qz, qw = np.broadcast_arrays(
        np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
        np.asarray(z, dtype=np.float64), np.asarray(w, dtype=np.float64))
    q = np.stack([qx.ravel(), qy.ravel(), qz.ravel(), qw.ravel()], axis=-1)
    if not np.all(np.isfinite(q)):
        raise ValueError('quaternion must be finite')
    norms = np.linalg.norm(q, axis=1)
    if np.any(norms < 1e-12):
        raise ValueError('quaternion must not be zero')
    return q, qx.shape


def quaternion_to_euler(x: Any, y: Any, z: Any, w: Any
                        ) -> Tuple[Any, Any, Any]:
    """
    Convert a quaternion ``(x, y, z, w)`` to REP-103 roll, pitch, yaw (rad).

    The quaternion is normalised first; pitch is in [-pi/2, pi/2], roll and
    yaw in [-pi, pi]. At pitch = +-pi/2 (gimbal lock) roll is set to 0 and
    yaw carries the whole rotation about z.
    """
    q, shape = _quat_array(x, y, z, w)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    qx, qy, qz, qw = q.T
    # Closed form of scipy's 'xyz' extrinsic angles, written out so that the
    # gimbal-lock case is handled without a warning.
    sinp = np.clip(2.0 * (qw * qy - qz * qx), -1.0, 1.0)
    pitch = np.arcsin(sinp)
    roll = np.arctan2(2.0 * (qw * qx + qy * qz), 1.0 - 2.0 * (qx * qx + qy * qy))
    yaw = np.arctan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    lock = np.abs(sinp) > 1.0 - 1e-12
    if np.any(lock):
        # R = Rz(yaw) Ry(+-pi/2) Rx(roll) only depends on yaw -+ roll.
        combined = 2.0 * np.arctan2(qz, qw)
        yaw = np.where(lock, np.arctan2(np.sin(combined), np.cos(combined)),
                       yaw)
        roll = np.where(lock, 0.0, roll)
    if len(shape) == 0:
        return float(roll[0]), float(pitch[0]), float(yaw[0])
    return roll.reshape(shape), pitch.reshape(shape), yaw.reshape(shape)


def rotation_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Return the 3x3 REP-103 rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` (rad)."""
    angles = [_finite(roll, 'roll'), _finite(pitch, 'pitch'),
              _finite(yaw, 'yaw')]
    return Rotation.from_euler('xyz', angles).as_matrix()


def pose_to_matrix(x: Any = 0.0, y: float = 0.0, z: float = 0.0,
                   roll: float = 0.0, pitch: float = 0.0, yaw: float = 0.0
                   ) -> np.ndarray:
    """
    Return the 4x4 homogeneous transform of a REP-103 pose.

    Position in metres, angles in radians (fixed axes X-Y-Z). The result
    maps points from the child frame to the parent frame. ``x`` may also be
    a ``Pose``-like object (``.x .y .z .roll .pitch .yaw``), in which case
    the other arguments are ignored.
    """
    if hasattr(x, 'roll'):
        p = x
        x, y, z, roll, pitch, yaw = p.x, p.y, p.z, p.roll, p.pitch, p.yaw
    T = np.eye(4)
    T[:3, :3] = rotation_matrix(roll, pitch, yaw)
    T[:3, 3] = [_finite(x, 'x'), _finite(y, 'y'), _finite(z, 'z')]
    return T


def _check_matrix(T: Any, name: str = 'T') -> np.ndarray:
    try:
        M = np.asarray(T, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a 4x4 matrix') from None
    if M.shape != (4, 4):
        raise ValueError(f'{name} must have shape (4, 4), got {M.shape}')
    if not np.all(np.isfinite(M)):
        raise ValueError(f'{name} must be finite')
    return M


def matrix_to_pose(T: ArrayLike) -> Pose:
    """
    Return the REP-103 ``Pose`` of a 4x4 homogeneous transform.

    The rotation block must be a proper rotation (orthonormal, det +1
    within 1e-6); a reflection (such as a left-handed basis) raises
    ``ValueError``.
    """
    M = _check_matrix(T)
    R = M[:3, :3]
    if (not np.allclose(R @ R.T, np.eye(3), atol=1e-6)
            or abs(np.linalg.det(R) - 1.0) > 1e-6):
        raise ValueError('T: rotation block is not a proper rotation')
    qx, qy, qz, qw = Rotation.from_matrix(R).as_quat()
    roll, pitch, yaw = quaternion_to_euler(qx, qy, qz, qw)
    return Pose(float(M[0, 3]), float(M[1, 3]), float(M[2, 3]),
                roll, pitch, yaw)


def transform_points(T: ArrayLike, pts: ArrayLike) -> np.ndarray:
    """
    Apply a 4x4 transform to (N, 3) or (N, 4) points (one matrix product).

    With (N, 4) input the 4th column (e.g. lidar intensity) is copied
    unchanged. The result has the input's float dtype; NaN points stay NaN.
    ``T`` must be finite.
    """
    M = _check_matrix(T)
    arr = _points(pts, 'pts')
    out = np.empty_like(arr)
    R = M[:3, :3].astype(arr.dtype)
    t = M[:3, 3].astype(arr.dtype)
    np.matmul(arr[:, :3], R.T, out=out[:, :3])
    out[:, :3] += t
    if arr.shape[1] == 4:
        out[:, 3] = arr[:, 3]
    return out


# --------------------------------------------------------------------------
# CARLA / UE4 <-> ROS REP-103


def carla_to_ros_point(v: Any) -> np.ndarray:
    """Convert a CARLA location (m, ``.x .y .z`` or 3 numbers) to REP-103."""
    return _vec3(v, 'location') * _MIRROR_Y


def ros_to_carla_point(v: Any) -> UELocation:
    """Convert a REP-103 point (m) to a CARLA ``UELocation``."""
    a = _vec3(v, 'point') * _MIRROR_Y
    return UELocation(float(a[0]), float(a[1]), float(a[2]))


def carla_to_ros_velocity(v: Any) -> np.ndarray:
    """Convert a CARLA linear velocity/acceleration (``Vector3D``) to REP-103."""
    return _vec3(v, 'velocity') * _MIRROR_Y


def ros_to_carla_velocity(v: Any) -> UELocation:
    """Convert a REP-103 linear velocity (m/s) to CARLA (``Vector3D(*v)``)."""
    a = _vec3(v, 'velocity') * _MIRROR_Y
    return UELocation(float(a[0]), float(a[1]), float(a[2]))


def carla_to_ros_angular_velocity(w: Any) -> np.ndarray:
    """
    Convert a CARLA angular velocity (deg/s) to REP-103 (rad/s).

    ``(x, -y, -z)`` in radians: a left turn, negative yaw rate in UE4, is a
    positive yaw rate in ROS.
    """
    return np.radians(_vec3(w, 'angular_velocity') * _FLIP_YZ)


def ros_to_carla_angular_velocity(w: Any) -> UELocation:
    """Convert a REP-103 angular velocity (rad/s) to CARLA (deg/s)."""
    a = np.degrees(_vec3(w, 'angular_velocity') * _FLIP_YZ)
    return UELocation(float(a[0]), float(a[1]), float(a[2]))


def carla_to_ros_rotation(r: Any) -> Tuple[float, float, float]:
    """
    Convert a CARLA rotation (degrees) to REP-103 (roll, pitch, yaw) rad.

    ``r`` has ``.roll .pitch .yaw`` (``carla.Rotation``, ``UERotation``).
    """
    roll, pitch, yaw = _rpy(r, 'rotation')
    return math.radians(roll), -math.radians(pitch), -math.radians(yaw)


def ros_to_carla_rotation(roll: float, pitch: float, yaw: float
                          ) -> UERotation:
    """Convert REP-103 roll/pitch/yaw (rad) to a CARLA ``UERotation`` (deg)."""
    return UERotation(pitch=-math.degrees(_finite(pitch, 'pitch')),
                      yaw=-math.degrees(_finite(yaw, 'yaw')),
                      roll=math.degrees(_finite(roll, 'roll')))


def carla_to_ros_pose(transform: Any) -> Pose:
    """Convert a ``carla.Transform`` (``.location``, ``.rotation``) to Pose."""
    if not (hasattr(transform, 'location') and hasattr(transform, 'rotation')):
        raise ValueError('transform must have location and rotation, '
                         f'got {transform!r}')
    p = carla_to_ros_point(transform.location)
    roll, pitch, yaw = carla_to_ros_rotation(transform.rotation)
    return Pose(float(p[0]), float(p[1]), float(p[2]), roll, pitch, yaw)


def ros_to_carla_pose(pose: Any) -> Tuple[UELocation, UERotation]:
    """
    Convert a REP-103 ``Pose`` to CARLA (location m, rotation deg).

    ``carla.Transform(carla.Location(*loc), carla.Rotation(*rot))`` builds
    the CARLA transform from the result.
    """
    if not hasattr(pose, 'roll'):
        raise ValueError(f'pose must be Pose-like, got {pose!r}')
    loc = ros_to_carla_point((pose.x, pose.y, pose.z))
    return loc, ros_to_carla_rotation(pose.roll, pose.pitch, pose.yaw)


def carla_to_ros_quaternion(r: Any) -> Tuple[float, float, float, float]:
    """Convert a CARLA rotation (degrees) to a REP-103 quaternion (x,y,z,w)."""
    return euler_to_quaternion(*carla_to_ros_rotation(r))


def carla_to_ros_points(pts: ArrayLike) -> np.ndarray:
    """
    Convert (N, 3) or (N, 4) CARLA points to REP-103 (y negated, new array).

    The 4th column is kept, and the input's float dtype. NaNs pass through
    (clouds use them for missing returns).
    """
    return _scale_columns(_points(pts, 'pts'), _MIRROR_Y)


#: The map is a mirror, hence its own inverse.
ros_to_carla_points = carla_to_ros_points


def carla_lidar_to_ros(raw: Any) -> np.ndarray:
    """
    Convert a CARLA ``LidarMeasurement.raw_data`` to REP-103 (N, 4) float32.

    ``raw`` is a bytes-like buffer of float32 ``x, y, z, intensity`` in the
    UE4 sensor frame, or an (N, 4) float32 array. The buffer is viewed
    without copying, copied once and y negated in place (vectorised).
    """
    if isinstance(raw, np.ndarray) and raw.dtype != np.uint8:
        if raw.dtype != np.float32 or raw.ndim != 2 or raw.shape[1] != 4:
            raise ValueError('lidar points must be (N, 4) float32, got '
                             f'{raw.shape} {raw.dtype}')
        view = raw
    else:
        try:
            mem = memoryview(raw).cast('B')
        except TypeError:
            raise ValueError('lidar raw data must be bytes-like or an '
                             f'(N, 4) float32 array, got {type(raw)}') from None
        if mem.nbytes % 16:
            raise ValueError(f'lidar raw data has {mem.nbytes} bytes, not a '
                             'multiple of 16 (4 float32 per point)')
        view = np.frombuffer(mem, dtype=np.float32).reshape(-1, 4)
    return _scale_columns(view, _MIRROR_Y)


def carla_image_to_bgr(raw: Any, width: int, height: int) -> np.ndarray:
    """
    Return a CARLA BGRA image buffer as an (H, W, 3) bgr8 view (no copy).

    ``raw`` is ``carla.Image.raw_data`` (bytes-like, H*W*4 bytes) or an
    (H, W, 4) uint8 array. The view is not C-contiguous (alpha is skipped);
    ``np.ascontiguousarray`` makes the one copy a message needs.
    """
    w, h = int(width), int(height)
    if w <= 0 or h <= 0:
        raise ValueError(f'image size must be positive, got {w}x{h}')
    if isinstance(raw, np.ndarray):
        if raw.dtype != np.uint8 or raw.shape != (h, w, 4):
            raise ValueError(f'image array must be ({h}, {w}, 4) uint8, got '
                             f'{raw.shape} {raw.dtype}')
        return raw[:, :, :3]
    try:
        mem = memoryview(raw).cast('B')
    except TypeError:
        raise ValueError('image raw data must be bytes-like, got '
                         f'{type(raw)}') from None
    if mem.nbytes != w * h * 4:
        raise ValueError(f'image raw data has {mem.nbytes} bytes, expected '
                         f'{w}x{h}x4 = {w * h * 4} (BGRA)')
    return np.frombuffer(mem, dtype=np.uint8).reshape(h, w, 4)[:, :, :3]


# --------------------------------------------------------------------------
# ROS REP-103 <-> AirSim NED


def ros_to_ned_point(v: Any) -> np.ndarray:
    """Convert a REP-103 point or linear velocity to NED: ``(x, -y, -z)``."""
    return _vec3(v, 'point') * _FLIP_YZ


#: Rotation by pi about x: its own inverse.
ned_to_ros_point = ros_to_ned_point


def ros_to_ned_points(pts: ArrayLike) -> np.ndarray:
    """Convert (N, 3)/(N, 4) REP-103 points to NED (4th column kept)."""
    return _scale_columns(_points(pts, 'pts'), _FLIP_YZ)


ned_to_ros_points = ros_to_ned_points


def ros_to_ned_angular_velocity(w: Any) -> np.ndarray:
    """Convert a REP-103 angular velocity (rad/s) to NED: ``(x, -y, -z)``."""
    return _vec3(w, 'angular_velocity') * _FLIP_YZ


ned_to_ros_angular_velocity = ros_to_ned_angular_velocity


def ros_to_ned_rotation(roll: float, pitch: float, yaw: float
                        ) -> Tuple[float, float, float]:
    """Convert REP-103 roll/pitch/yaw (rad) to NED roll/pitch/yaw (rad)."""
    return (_finite(roll, 'roll'), -_finite(pitch, 'pitch'),
            -_finite(yaw, 'yaw'))


ned_to_ros_rotation = ros_to_ned_rotation


def ros_to_ned_quaternion(x: float, y: float, z: float, w: float
                          ) -> Tuple[float, float, float, float]:
    """Convert a REP-103 quaternion (x, y, z, w) to NED: ``(x, -y, -z, w)``."""
    q, _ = _quat_array(x, y, z, w)
    return float(q[0, 0]), float(-q[0, 1]), float(-q[0, 2]), float(q[0, 3])


ned_to_ros_quaternion = ros_to_ned_quaternion


def ros_to_ned_pose(pose: Any) -> Pose:
    """Convert a REP-103 ``Pose`` to a NED ``Pose`` (m, rad)."""
    if not hasattr(pose, 'roll'):
        raise ValueError(f'pose must be Pose-like, got {pose!r}')
    p = ros_to_ned_point((pose.x, pose.y, pose.z))
    roll, pitch, yaw = ros_to_ned_rotation(pose.roll, pose.pitch, pose.yaw)
    return Pose(float(p[0]), float(p[1]), float(p[2]), roll, pitch, yaw)


ned_to_ros_pose = ros_to_ned_pose
