# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A small painter's-algorithm cone renderer for vision tests (no rclpy).

Draws Formula Student cones (base circle + apex, with their stripe) standing
on a textured ground under a sky, seen by a pinhole camera mounted at
``T_vehicle_camera`` (REP-103 pose in the vehicle frame). Cone positions
are base centres in the vehicle frame (metres). It is independent of the
built-in simulator's camera, so unit tests of the detector do not depend
on its drawing (the intrinsics are the simulator's,
``hil_bridge.sim.camera.intrinsics``); training uses the simulator's camera.
"""

from typing import Optional, Tuple

from cone_detection.ground_projection import horizon_row, project_to_image
import cv2
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_SIZE,
                                        CONE_YELLOW)
from hil_bridge.sim.camera import intrinsics  # noqa: F401 (re-exported for tests)
import numpy as np

#: Body and stripe colours (BGR) per class.
CONE_COLOURS = {CONE_BLUE: ((180, 70, 10), (235, 235, 235)),
                CONE_YELLOW: ((20, 210, 235), (30, 30, 30)),
                CONE_ORANGE: ((10, 110, 245), (235, 235, 235)),
                CONE_BIG_ORANGE: ((10, 110, 245), (235, 235, 235))}


def cone_outline(xy: Tuple[float, float], class_id: int, z_lo: float = 0.0,
                 z_hi: Optional[float] = None, n: int = 24) -> np.ndarray:
    """
    Return 3D points (2n, 3) of the cone frustum between two heights (m).

    The cone has its base centre at ``xy`` on the ground (z = 0); the
    points lie on the circles at ``z_lo`` and ``z_hi`` (default: apex).
    """
    width, height = CONE_SIZE[class_id]
    r0 = width / 2.0
    z_hi = height if z_hi is None else z_hi
    ang = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    rings = []
    for z in (z_lo, z_hi):
        r = r0 * (1.0 - z / height)
        rings.append(np.stack([xy[0] + r * np.cos(ang), xy[1] + r * np.sin(ang),
                               np.full(n, z)], axis=1))
    return np.concatenate(rings)


def cone_box(xy: Tuple[float, float], class_id: int, K: np.ndarray,
             T_vehicle_camera: np.ndarray) -> Optional[np.ndarray]:
    """Return the image box (x0, y0, x1, y1) of a cone, None when behind."""
    uv, depth = project_to_image(cone_outline(xy, class_id), K, T_vehicle_camera)
    if np.any(depth <= 0.05):
        return None
    return np.array([uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(), uv[:, 1].max()])


def background(width: int, height: int, K: np.ndarray, T_vehicle_camera: np.ndarray,
               rng: np.random.Generator, brightness: float = 1.0) -> np.ndarray:
    """Return a bgr8 sky + textured grey ground image."""
    img = np.empty((height, width, 3), np.uint8)
    hz = int(min(max(horizon_row(K, T_vehicle_camera, width), 0), height))
    sky = np.array([235, 205, 170], np.float64) * brightness
    img[:hz] = np.clip(sky, 0, 255).astype(np.uint8)
    ground = rng.normal(0.0, 1.0, ((height - hz) // 8 + 2, width // 8 + 2))
    ground = cv2.resize(ground.astype(np.float32), (width, height - hz),
                        interpolation=cv2.INTER_LINEAR) if height > hz else ground[:0]
    base = (95.0 + 12.0 * ground) * brightness
    if height > hz:
        tint = np.array([1.0, 1.03, 1.0])
        img[hz:] = np.clip(base[..., None] * tint, 0, 255).astype(np.uint8)
    return img


def render(K: np.ndarray, T_vehicle_camera: np.ndarray, width: int, height: int,
           cone_xy: np.ndarray, cone_class: np.ndarray,
           rng: Optional[np.random.Generator] = None, brightness: float = 1.0,
           noise_std: float = 0.0) -> np.ndarray:
    """
    Render cones (base centres ``cone_xy`` (N, 2), classes (N,)) to bgr8.

    Cones are drawn from far to near; ``noise_std`` adds per-pixel,
    per-channel Gaussian noise (intensity units).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    img = background(width, height, K, T_vehicle_camera, rng, brightness)
    xy = np.asarray(cone_xy, np.float64).reshape(-1, 2)
    cls = np.asarray(cone_class).reshape(-1)
    cam = T_vehicle_camera[:2, 3]
    order = np.argsort(-np.linalg.norm(xy - cam, axis=1))
    for i in order:
        c = int(cls[i])
        body, stripe = CONE_COLOURS[c]
        h = CONE_SIZE[c][1]
        parts = [(0.0, None, body), (0.35 * h, 0.55 * h, stripe)]
        for z_lo, z_hi, colour in parts:
            uv, depth = project_to_image(cone_outline(tuple(xy[i]), c, z_lo, z_hi), K,
                                         T_vehicle_camera)
            if np.any(depth <= 0.05):
                break
            hull = cv2.convexHull(np.round(uv * 16).astype(np.int32))
            shade = np.array(colour, np.float64) * brightness
            cv2.fillPoly(img, [hull], tuple(float(v) for v in np.clip(shade, 0, 255)),
                         lineType=cv2.LINE_AA, shift=4)
    if noise_std > 0:
        noisy = img.astype(np.float32) + rng.normal(0.0, noise_std, img.shape).astype(np.float32)
        img = np.clip(noisy, 0, 255).astype(np.uint8)
    return img
