# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
REP-103 poses, Euler angles, quaternions and homogeneous transforms.

REP-103: right-handed, x forward, y left, z up; metres, radians;
orientation as roll/pitch/yaw (fixed-axis X-Y-Z, i.e.
``R = Rz(yaw) Ry(pitch) Rx(roll)``) or a unit quaternion ``(x, y, z, w)``.
numpy and scipy only. Bad input (NaN/inf, wrong shapes, zero quaternions)
raises ``ValueError`` naming the argument. The CARLA/UE4 conversions live
with the CARLA backend (``hil_bridge.carla_backend.ue_frames``).
"""

from dataclasses import dataclass
import math
from typing import Any, Sequence, Tuple, Union

import numpy as np
from scipy.spatial.transform import Rotation

ArrayLike = Union[np.ndarray, Sequence[float]]


@dataclass
class Pose:
    """A pose in REP-103: position (m) and roll/pitch/yaw (rad)."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    roll: float = 0.0
    pitch: float = 0.0
    yaw: float = 0.0

    def as_array(self) -> np.ndarray:
        """Return ``[x, y, z, roll, pitch, yaw]`` as float64."""
        return np.array([self.x, self.y, self.z, self.roll, self.pitch,
                         self.yaw], dtype=np.float64)


def finite_float(value: Any, name: str) -> float:
    """Return ``value`` as a finite float; ``ValueError`` naming ``name`` otherwise."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a number, got {value!r}') from None
    if not math.isfinite(v):
        raise ValueError(f'{name} must be finite, got {v}')
    return v


def as_points(pts: Any, name: str) -> np.ndarray:
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


def quaternion_yaw(q: Any) -> float:
    """
    Return the yaw (rad) of a quaternion-like ``q`` (``.x .y .z .w``).

    For one message (e.g. ``geometry_msgs/Quaternion`` of an odometry), in
    plain floats. A quaternion that is not of unit length is normalised; one
    of (nearly) zero length, as an estimator sends before its first fix,
    has no yaw: NaN, as NaN in gives NaN out (callers check).
    """
    n2 = q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w
    if abs(n2 - 1.0) <= 1e-6:
        # the unit form, bit for bit as before (lockstep runs repeat exactly)
        return math.atan2(2.0 * (q.w * q.z + q.x * q.y),
                          1.0 - 2.0 * (q.y * q.y + q.z * q.z))
    if not n2 >= 1e-6:      # also NaN
        return math.nan
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y),
                      q.w * q.w + q.x * q.x - q.y * q.y - q.z * q.z)


def rotation_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Return the 3x3 REP-103 rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` (rad)."""
    angles = [finite_float(roll, 'roll'), finite_float(pitch, 'pitch'),
              finite_float(yaw, 'yaw')]
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
    T[:3, 3] = [finite_float(x, 'x'), finite_float(y, 'y'), finite_float(z, 'z')]
    return T


def se2(x: float, y: float, yaw: float) -> np.ndarray:
    """Return the 3x3 homogeneous matrix of a 2D pose (m, rad): child -> parent."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, x], [s, c, y], [0.0, 0.0, 1.0]])


def yaw_matrix(x: float, y: float, yaw: float, z: float = 0.0) -> np.ndarray:
    """Return the 4x4 transform of a pose with only a yaw (m, rad), without scipy."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0, x], [s, c, 0.0, y], [0.0, 0.0, 1.0, z],
                     [0.0, 0.0, 0.0, 1.0]])


def transform_xy(T: np.ndarray, xyz: np.ndarray) -> np.ndarray:
    """Apply a 3x3 SE(2) matrix to the x, y columns of (N, >=2) points (a copy)."""
    out = np.array(xyz, dtype=np.float64, copy=True)
    out[:, :2] = xyz[:, :2] @ T[:2, :2].T + T[:2, 2]
    return out


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
    arr = as_points(pts, 'pts')
    out = np.empty_like(arr)
    R = M[:3, :3].astype(arr.dtype)
    t = M[:3, 3].astype(arr.dtype)
    np.matmul(arr[:, :3], R.T, out=out[:, :3])
    out[:, :3] += t
    if arr.shape[1] == 4:
        out[:, 3] = arr[:, 3]
    return out
