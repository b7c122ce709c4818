# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CARLA / Unreal Engine 4 <-> ROS REP-103 conversions (no rclpy, no carla).

CARLA / UE4 is left-handed: x forward, y right, z up; metres, degrees.
``carla.Rotation(pitch, yaw, roll)``: positive yaw turns x towards +y
(clockwise seen from above), positive pitch lifts the nose. The conversion
is the mirror ``M = diag(1, -1, 1)``: location ``(x, -y, z)``, rotation
``(roll, -pitch, -yaw)`` degrees to radians, linear velocity ``(x, -y, z)``.
An angular velocity (``get_angular_velocity``: the physics engine's
``v = w x r`` in UE numbers, deg/s) is a pseudo-vector: ``det(M) M w =
(-x, y, -z)`` (carla-ros-bridge's ``(x, -y, -z)`` gets roll and pitch
rates wrong; only the yaw rate agrees). Every CARLA -> ROS map is its own
inverse up to the unit change. It agrees with ``carla.Transform.get_matrix()``:
``M @ T_ue @ M == pose_to_matrix(*converted)`` with ``M = diag(1,-1,1,1)``.

Every function accepts CARLA value objects (duck-typed: ``.x/.y/.z``,
``.roll/.pitch/.yaw``, ``.location/.rotation``) or plain numbers/arrays;
bad input (NaN/inf, wrong shapes, buffers of the wrong size) raises
``ValueError`` naming the argument.
"""

import math
from typing import Any, NamedTuple, Tuple

from hil_bridge.interface.frames import (ArrayLike, as_points,
                                         euler_to_quaternion, finite_float,
                                         Pose)
import numpy as np

# Mirror y (CARLA <-> ROS); a pseudo-vector (angular velocity) also
# changes sign under the mirror: det(M) M w.
_MIRROR_Y = np.array([1.0, -1.0, 1.0])
_PSEUDO = np.array([-1.0, 1.0, -1.0])


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


def _vec3(v: Any, name: str) -> np.ndarray:
    """Return a finite float64 (3,) array from an object or a sequence."""
    if hasattr(v, 'x') and hasattr(v, 'y') and hasattr(v, 'z'):
        arr = np.array([finite_float(v.x, f'{name}.x'), finite_float(v.y, f'{name}.y'),
                        finite_float(v.z, f'{name}.z')])
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
        return (finite_float(r.roll, f'{name}.roll'),
                finite_float(r.pitch, f'{name}.pitch'),
                finite_float(r.yaw, f'{name}.yaw'))
    raise ValueError(f'{name} must have roll/pitch/yaw attributes, '
                     f'got {r!r}')


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

    ``(-x, y, -z)`` in radians (a pseudo-vector under the mirror): a left
    turn, negative yaw rate in UE4, is a positive yaw rate in ROS; a UE4
    roll rate ``x > 0`` (right side rising) is a negative REP-103 roll rate.
    """
    return np.radians(_vec3(w, 'angular_velocity') * _PSEUDO)


def ros_to_carla_angular_velocity(w: Any) -> UELocation:
    """Convert a REP-103 angular velocity (rad/s) to CARLA (deg/s)."""
    a = np.degrees(_vec3(w, 'angular_velocity') * _PSEUDO)
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
    return UERotation(pitch=-math.degrees(finite_float(pitch, 'pitch')),
                      yaw=-math.degrees(finite_float(yaw, 'yaw')),
                      roll=math.degrees(finite_float(roll, 'roll')))


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
    return _scale_columns(as_points(pts, 'pts'), _MIRROR_Y)


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
