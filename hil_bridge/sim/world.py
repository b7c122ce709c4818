# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The static and dynamic geometry the built-in sensors see (no rclpy).

Everything is in ``map`` (REP-103, metres, radians); the ground is the plane
z = ``ground_z``. Cones are Formula Student cones standing on the ground
(sizes in ``hil_bridge.interface.cones.CONE_SIZE``); boxes are vehicles and static
obstacles, oriented by yaw only.
"""

from dataclasses import dataclass, field

import numpy as np


def _empty(shape: tuple, dtype: type = np.float64) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


@dataclass
class WorldGeometry:
    """
    Arrays describing what sensors can hit.

    cone_xy (N, 2) positions of the cone base centres; cone_class (N,)
    uint8 contract class ids; cone_up (N,) bool, False for cones knocked
    over (sensors ignore them). box_center (M, 3) box centres (z is half
    the box height above the ground), box_yaw (M,), box_size (M, 3)
    length, width, height; box_color (M, 3) uint8 BGR.
    """

    cone_xy: np.ndarray = field(default_factory=lambda: _empty((0, 2)))
    cone_class: np.ndarray = field(
        default_factory=lambda: _empty((0,), np.uint8))
    cone_up: np.ndarray = field(default_factory=lambda: _empty((0,), bool))
    box_center: np.ndarray = field(default_factory=lambda: _empty((0, 3)))
    box_yaw: np.ndarray = field(default_factory=lambda: _empty((0,)))
    box_size: np.ndarray = field(default_factory=lambda: _empty((0, 3)))
    box_color: np.ndarray = field(
        default_factory=lambda: _empty((0, 3), np.uint8))
    ground_z: float = 0.0
