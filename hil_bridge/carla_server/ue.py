# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
REP-103 (the built-in simulator) <-> CARLA / UE4 frames for the server.

UE4 is left-handed: x forward, y right, z up; metres, degrees; rotation
``(pitch, yaw, roll)``, positive yaw turns x towards +y (clockwise seen
from above). The map is the mirror ``M = diag(1, -1, 1)``: a point
``(x, y, z)`` is ``(x, -y, z)`` in UE, a rotation ``(roll, pitch, yaw)``
rad is ``(pitch, yaw, roll) = (-pitch, -yaw, roll)`` deg, and a REP-103
pose matrix ``T`` is ``M T M`` in UE (``carla.Transform.get_matrix()``).
An angular velocity is a pseudo-vector: ``det(M) M w`` = ``(-wx, wy,
-wz)``, in deg/s (CARLA's ``get_angular_velocity``), so a left turn
(positive REP-103 yaw rate) is a negative UE yaw rate and a positive
REP-103 roll rate a negative UE one.
"""

import math
from typing import Sequence, Tuple

from hil_bridge.interface.frames import pose_to_matrix
import numpy as np

Vec3 = Tuple[float, float, float]


def point_to_ue(p: Sequence[float]) -> Vec3:
    """Return a REP-103 point or linear vector in UE axes."""
    return float(p[0]), -float(p[1]), float(p[2])


def angular_velocity_to_ue(w: Sequence[float]) -> Vec3:
    """Return a REP-103 angular velocity (rad/s) as UE deg/s."""
    return (-math.degrees(float(w[0])), math.degrees(float(w[1])),
            -math.degrees(float(w[2])))


def rotation_to_ue(roll: float, pitch: float, yaw: float) -> Vec3:
    """Return REP-103 roll/pitch/yaw (rad) as UE (pitch, yaw, roll) deg."""
    return -math.degrees(pitch), -math.degrees(yaw), math.degrees(roll)


def ue_to_matrix(loc: Sequence[float], rot: Sequence[float]) -> np.ndarray:
    """Return the REP-103 4x4 matrix of a UE ``(x, y, z)``, ``(pitch, yaw, roll)``."""
    pitch, yaw, roll = (float(v) for v in rot)
    return pose_to_matrix(float(loc[0]), -float(loc[1]), float(loc[2]),
                          math.radians(roll), -math.radians(pitch),
                          -math.radians(yaw))


def matrix_to_ue(T: np.ndarray) -> Tuple[Vec3, Vec3]:
    """
    Return ``((x, y, z), (pitch, yaw, roll))`` in UE of a REP-103 matrix.

    The Euler angles of ``R = Rz(yaw) Ry(pitch) Rx(roll)`` in closed form
    (a few microseconds; the snapshot converts every actor every frame).
    """
    R = T[:3, :3]
    pitch = math.asin(max(-1.0, min(1.0, -float(R[2, 0]))))
    yaw = math.atan2(float(R[1, 0]), float(R[0, 0]))
    roll = math.atan2(float(R[2, 1]), float(R[2, 2]))
    return point_to_ue(T[:3, 3]), rotation_to_ue(roll, pitch, yaw)


def points_to_ue(points: np.ndarray) -> np.ndarray:
    """Return (N, 3+) points with y negated (a new float32 array)."""
    out = np.array(points, dtype=np.float32, copy=True)
    out[:, 1] *= -1.0
    return out
