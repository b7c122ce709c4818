# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The ROS 2 AEB tutorial's fixed-TTC rule, kept as a baseline (no rclpy).

On ground truth: ``TTC = (x_obj - x_ego) / (v_ego - v_obj)`` with positions
and speeds along the ego heading (the tutorial drives along the map x axis,
where this is exactly its formula); full brake while ``0 < TTC < 3 s``.
Like the tutorial it looks at actor origins, not bumpers, and has no
lateral gate unless ``lateral_gate`` (m) is set, so a car in the adjacent
lane triggers it too: that is the weakness it is kept to show.
"""

from dataclasses import dataclass
import math
from typing import Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class FixedTtcParams:
    """Threshold (s), deceleration when braking (m/s^2), optional gate."""

    ttc_threshold: float = 3.0
    decel: float = 9.0
    lateral_gate: float = 0.0

    def __post_init__(self) -> None:
        """Check ranges; raises ``ValueError`` naming the field."""
        if not (math.isfinite(self.ttc_threshold) and self.ttc_threshold > 0):
            raise ValueError(f'FixedTtcParams.ttc_threshold must be > 0, got '
                             f'{self.ttc_threshold}')
        if not (math.isfinite(self.decel) and self.decel > 0):
            raise ValueError(f'FixedTtcParams.decel must be > 0, got '
                             f'{self.decel}')


def tutorial_ttc(x_ego: float, v_ego: float, x_obj: float,
                 v_obj: float) -> float:
    """
    Return the tutorial's TTC (s); ``inf`` when not closing.

    Positions (m) and speeds (m/s) along one axis.
    """
    closing = v_ego - v_obj
    if abs(closing) < 1e-9:
        return math.inf
    return (x_obj - x_ego) / closing


def fixed_ttc_brake(ttc: float, threshold: float = 3.0) -> bool:
    """Return True while ``0 < ttc < threshold`` (the tutorial's rule)."""
    return bool(0.0 < ttc < threshold)


def ground_truth_ttc(ego_xy: Sequence[float], ego_yaw: float,
                     ego_speed: float, actors_xy: np.ndarray,
                     actors_vel: np.ndarray,
                     lateral_gate: float = 0.0) -> Optional[float]:
    """
    Return the smallest positive tutorial TTC (s) over actors, or None.

    ``ego_xy`` (2,) m and ``ego_yaw`` rad in map; ``actors_xy`` (N, 2) m and
    ``actors_vel`` (N, 2) m/s in map. Everything is projected on the ego
    heading; ``lateral_gate`` > 0 ignores actors further to the side (m).
    """
    xy = np.asarray(actors_xy, dtype=np.float64).reshape(-1, 2)
    vel = np.asarray(actors_vel, dtype=np.float64).reshape(-1, 2)
    if xy.shape != vel.shape:
        raise ValueError(f'actors_xy {xy.shape} and actors_vel {vel.shape} '
                         f'differ')
    if xy.shape[0] == 0:
        return None
    heading = np.array([math.cos(ego_yaw), math.sin(ego_yaw)])
    left = np.array([-heading[1], heading[0]])
    rel = xy - np.asarray(ego_xy, dtype=np.float64)[:2]
    along = rel @ heading
    v_obj = vel @ heading
    closing = ego_speed - v_obj
    with np.errstate(divide='ignore', invalid='ignore'):
        ttc = np.where(np.abs(closing) > 1e-9, along / closing, np.inf)
    ok = np.isfinite(ttc) & (ttc > 0.0)
    if lateral_gate > 0.0:
        ok &= np.abs(rel @ left) <= lateral_gate
    if not np.any(ok):
        return None
    return float(np.min(ttc[ok]))
