# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Camera geometry for the vision cone detector (no rclpy).

Frames: the vehicle and sensor frames are REP-103 (x forward, y left, z up;
metres, radians). A camera's *mount* is its REP-103 sensor pose in the
vehicle frame (``T_vehicle_camera``, 4x4); its *optical* frame is x right,
y down, z forward (the frame pixel rays live in). The ground is the plane
z = ``ground_z`` of the vehicle frame (0 for a vehicle frame on the ground).

All functions are vectorised over points/pixels.
"""

from typing import Tuple

from hil_bridge.interface import frames
from hil_bridge.interface.frames import Pose
import numpy as np

#: Rotation taking optical-frame vectors (x right, y down, z forward) into
#: the REP-103 sensor frame (x forward, y left, z up).
R_SENSOR_OPTICAL = np.array([[0.0, 0.0, 1.0],
                             [-1.0, 0.0, 0.0],
                             [0.0, -1.0, 0.0]])


_EYE3 = np.eye(3)
_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])


def pose_to_matrix(pose: Pose) -> np.ndarray:
    """Return the 4x4 homogeneous transform of a REP-103 :class:`Pose`."""
    return frames.pose_to_matrix(pose)


def check_intrinsics(K: np.ndarray) -> np.ndarray:
    """
    Return ``K`` as a float64 3x3 pinhole matrix or raise ``ValueError``.

    Requires finite entries, fx, fy > 0 and a last row of (0, 0, 1).
    """
    k = np.asarray(K, dtype=np.float64)
    if k.shape != (3, 3):
        raise ValueError(f'camera intrinsics K must be 3x3, got {k.shape}')
    if not np.all(np.isfinite(k)):
        raise ValueError('camera intrinsics K contains NaN/inf')
    if k[0, 0] <= 0 or k[1, 1] <= 0 or abs(k[2, 0]) > 1e-8 or abs(k[2, 1]) > 1e-8 \
            or abs(k[2, 2] - 1.0) > 1e-8:
        raise ValueError(f'camera intrinsics K is not a pinhole matrix: {k.tolist()}')
    return k


def check_transform(T: np.ndarray, name: str = 'T_vehicle_camera') -> np.ndarray:
    """
    Return ``T`` as a float64 4x4 rigid transform or raise ``ValueError``.

    Rigid: finite, ``R R^T = I`` within 1e-5 per entry and a last row of
    (0, 0, 0, 1). Plain max-abs checks (no ``np.allclose``): this runs for
    every projection, many times per image.
    """
    t = np.asarray(T, dtype=np.float64)
    if t.shape != (4, 4):
        raise ValueError(f'{name} must be 4x4, got {t.shape}')
    if not np.all(np.isfinite(t)):
        raise ValueError(f'{name} contains NaN/inf')
    rot = t[:3, :3]
    if not np.abs(rot @ rot.T - _EYE3).max() <= 1e-5 or \
            not np.abs(t[3] - _LAST_ROW).max() <= 1e-8:
        raise ValueError(f'{name} is not a rigid transform')
    return t


def optical_pose(T_vehicle_camera: np.ndarray) -> np.ndarray:
    """Return the 4x4 pose of the optical frame from a REP-103 camera pose."""
    t = check_transform(T_vehicle_camera).copy()
    t[:3, :3] = t[:3, :3] @ R_SENSOR_OPTICAL
    return t


def pixels_to_ground(uv: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
                     ground_z: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """
    Intersect the rays of pixels with the ground plane z = ``ground_z``.

    ``uv`` (N, 2) pixel coordinates (u right, v down; pixel centres at
    integer + 0.5 are not assumed: uv is used as given). Returns ``xyz``
    (N, 3) float64 points in the vehicle frame (metres) and ``valid`` (N,)
    bool, False where the ray does not hit the ground in front of the
    camera (at or above the horizon); invalid rows are NaN.
    """
    k = check_intrinsics(K)
    pts = np.asarray(uv, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise ValueError(f'uv must be (N, 2), got {pts.shape}')
    t_opt = optical_pose(T_vehicle_camera)
    rays = np.empty((pts.shape[0], 3))
    rays[:, 0] = (pts[:, 0] - k[0, 2]) / k[0, 0]
    rays[:, 1] = (pts[:, 1] - k[1, 2]) / k[1, 1]
    rays[:, 0] -= rays[:, 1] * (k[0, 1] / k[0, 0])
    rays[:, 2] = 1.0
    dirs = rays @ t_opt[:3, :3].T
    origin = t_opt[:3, 3]
    with np.errstate(divide='ignore', invalid='ignore'):
        scale = (ground_z - origin[2]) / dirs[:, 2]
    valid = np.isfinite(pts).all(axis=1) & np.isfinite(scale) & (scale > 0)
    xyz = origin + dirs * np.where(valid, scale, np.nan)[:, None]
    return xyz, valid


def project_to_image(points: np.ndarray, K: np.ndarray,
                     T_vehicle_camera: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    Project vehicle-frame points (N, 3) into the image.

    Returns ``uv`` (N, 2) float64 pixels and ``depth`` (N,) metres along the
    optical axis (<= 0 behind the camera, where uv is NaN).
    """
    k = check_intrinsics(K)
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f'points must be (N, 3), got {p.shape}')
    t_opt = optical_pose(T_vehicle_camera)
    cam = (p - t_opt[:3, 3]) @ t_opt[:3, :3]
    depth = cam[:, 2]
    with np.errstate(divide='ignore', invalid='ignore'):
        uvw = cam @ k.T
        uv = uvw[:, :2] / np.where(depth > 0, uvw[:, 2], np.nan)[:, None]
    return uv, depth


def optical_depth(points: np.ndarray, T_vehicle_camera: np.ndarray) -> np.ndarray:
    """
    Return the depth (m) of vehicle-frame points (N, 3) along the optical axis.

    A vertical object of height H at depth z appears about ``fy * H / z``
    pixels tall (exactly so for a level camera), wherever it is in the image.
    """
    t_opt = optical_pose(T_vehicle_camera)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return (p - t_opt[:3, 3]) @ t_opt[:3, 2]


def horizon_row(K: np.ndarray, T_vehicle_camera: np.ndarray, width: int) -> float:
    """
    Return the smallest image row (v, pixels) where the ground can appear.

    Rows above it see only sky for a flat ground; for a level camera it is
    ``cy``. The value is taken over the image width (roll tilts the
    horizon) and clipped at 0.
    """
    k = check_intrinsics(K)
    t_opt = optical_pose(T_vehicle_camera)
    # Direction of the optical rays in the vehicle frame: d = R (x, y, 1);
    # a ray points down (hits the ground) when d_z < 0. Solve d_z = 0 for y
    # at the two image edges.
    r = t_opt[:3, :3]
    best = np.inf
    for u in (0.0, float(width)):
        x = (u - k[0, 2]) / k[0, 0]
        if abs(r[2, 1]) < 1e-12:
            continue
        y = -(r[2, 0] * x + r[2, 2]) / r[2, 1]
        best = min(best, y * k[1, 1] + k[1, 2])
    if not np.isfinite(best):
        return 0.0
    return float(max(best, 0.0))


def vehicle_to_map(xyz: np.ndarray, ego_pose: Pose) -> np.ndarray:
    """Transform vehicle-frame points (N, 3) into ``map`` with the ego pose."""
    p = np.asarray(xyz, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f'xyz must be (N, 3), got {p.shape}')
    t = pose_to_matrix(ego_pose)
    return p @ t[:3, :3].T + t[:3, 3]


def map_to_vehicle(xyz: np.ndarray, ego_pose: Pose) -> np.ndarray:
    """Transform ``map`` points (N, 3) into the vehicle frame (inverse pose)."""
    p = np.asarray(xyz, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f'xyz must be (N, 3), got {p.shape}')
    t = pose_to_matrix(ego_pose)
    return (p - t[:3, 3]) @ t[:3, :3]
