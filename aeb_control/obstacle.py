# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Obstacle speed, time to collision and required deceleration (no rclpy).

Speeds are along the predicted ego path (m/s, > 0 moving away from the
ego in its driving direction); accelerations are decelerations when
positive (m/s^2); distances are along the path from the front bumper (m).

Speed estimation (as Autoware's AEB does it): between two successive frames
the path distance changes by ``(v_obj - v_ego) dt``, so one frame gives
``v_obj = v_ego + (d_k - d_{k-1}) / (t_k - t_{k-1})``; the estimate is the
median of the last ``window`` such samples, which rejects single outliers
from lidar quantisation. The obstacle's deceleration is the negated slope
of a least-squares line through the raw samples of a longer window. The
track is reset when the obstacle is lost, when the distance jumps by more
than ``jump_distance`` from its prediction (a different obstacle), or when
the gap in time exceeds ``max_gap``.
"""

from collections import deque
from dataclasses import dataclass
import math
from typing import Deque, Optional, Tuple

import numpy as np


@dataclass
class ObstacleEstimate:
    """
    State of the tracked obstacle.

    ``distance`` (m), ``speed`` (m/s, along the path; 0 assumed until
    ``valid``), ``decel`` (m/s^2, > 0 braking; 0 when unknown), ``samples``
    how many speed samples the median used, ``valid`` whether enough
    samples exist for the speed to be trusted.
    """

    distance: float
    speed: float
    decel: float
    samples: int
    valid: bool


class ObstacleTracker:
    """
    Frame-to-frame speed estimate of the closest in-corridor obstacle.

    ``window`` speed samples enter the median (at least ``min_samples`` for
    a valid estimate); ``decel_window`` samples enter the deceleration fit.
    """

    def __init__(self, window: int = 5, min_samples: int = 2,
                 decel_window: int = 10, jump_distance: float = 3.0,
                 max_gap: float = 0.5, max_speed: float = 70.0) -> None:
        """Create an empty tracker; see the class docstring."""
        if window < 1 or min_samples < 1 or decel_window < 2:
            raise ValueError('ObstacleTracker: window, min_samples >= 1 and '
                             'decel_window >= 2 are required')
        self.window = int(window)
        self.min_samples = int(min_samples)
        self.jump_distance = float(jump_distance)
        self.max_gap = float(max_gap)
        self.max_speed = float(max_speed)
        self._samples: Deque[Tuple[float, float]] = deque(
            maxlen=max(int(decel_window), self.window))
        self._last: Optional[Tuple[float, float, float]] = None
        self._last_pos: Optional[np.ndarray] = None
        self._estimate: Optional[ObstacleEstimate] = None

    def reset(self) -> None:
        """Forget the tracked obstacle."""
        self._samples.clear()
        self._last = None
        self._last_pos = None
        self._estimate = None

    @property
    def estimate(self) -> Optional[ObstacleEstimate]:
        """Return the newest obstacle state (None without an obstacle)."""
        return self._estimate

    def update(self, t: float, distance: Optional[float],
               ego_speed: float, position: Optional[np.ndarray] = None,
               direction: Optional[np.ndarray] = None
               ) -> Optional[ObstacleEstimate]:
        """
        Add one frame: time (s), obstacle distance (m) or None, ego speed.

        With ``position`` (2,) of the obstacle point in a world-fixed frame
        (m, e.g. ``odom``) and ``direction`` (2,) the unit path tangent
        there, a sample is the point's displacement along the path over
        the frame time instead: the same quantity, but unaffected by the
        corridor bending while the ego turns (a static obstacle then
        stays static). Returns the new estimate, or None when there is no
        obstacle. Raises ``ValueError`` for non-finite time or ego speed.
        """
        if not (math.isfinite(t) and math.isfinite(ego_speed)):
            raise ValueError(f'ObstacleTracker.update: time {t} and ego '
                             f'speed {ego_speed} must be finite')
        if distance is None or not math.isfinite(distance):
            self.reset()
            return None
        pos = None
        if position is not None and direction is not None:
            pos = np.asarray(position, dtype=np.float64).reshape(2)
            if not np.all(np.isfinite(pos)):
                pos = None
        if self._last is not None:
            t0, d0, v0 = self._last
            p0 = self._last_pos
            dt = t - t0
            if dt <= 0.0 or dt > self.max_gap:
                if dt <= 0.0 and dt > -1e-9 and self._estimate is not None:
                    return self._estimate   # same frame twice
                self.reset()
            else:
                speed_now = (self._estimate.speed if self._estimate
                             is not None and self._estimate.valid else 0.0)
                if pos is not None and p0 is not None:
                    step = pos - p0
                    jump = float(np.hypot(*(step - speed_now * dt * np.asarray(
                        direction, dtype=np.float64).reshape(2))))
                    sample = float(step @ np.asarray(
                        direction, dtype=np.float64).reshape(2)) / dt
                else:
                    predicted = d0 + (speed_now - 0.5 * (v0 + ego_speed)) * dt
                    jump = abs(distance - predicted)
                    sample = 0.5 * (v0 + ego_speed) + (distance - d0) / dt
                if jump > self.jump_distance:
                    self.reset()
                else:
                    sample = float(np.clip(sample, -self.max_speed,
                                           self.max_speed))
                    self._samples.append((t, sample))
        self._last = (float(t), float(distance), float(ego_speed))
        self._last_pos = pos
        recent = [s for _, s in list(self._samples)[-self.window:]]
        valid = len(recent) >= self.min_samples
        speed = float(np.median(recent)) if valid else 0.0
        decel = 0.0
        if len(self._samples) >= max(4, self.min_samples):
            arr = np.asarray(self._samples, dtype=np.float64)
            ts = arr[:, 0] - arr[-1, 0]
            if np.ptp(ts) > 1e-6:
                slope = float(np.polyfit(ts, arr[:, 1], 1)[0])
                decel = max(-slope, 0.0)
        self._estimate = ObstacleEstimate(distance=float(distance),
                                          speed=speed, decel=decel,
                                          samples=len(recent), valid=valid)
        return self._estimate


def time_to_collision(distance: float, ego_speed: float,
                      obj_speed: float) -> float:
    """
    Return TTC (s) = distance / closing speed; ``inf`` when not closing.

    ``distance`` (m), speeds along the path (m/s).
    """
    closing = ego_speed - obj_speed
    if closing <= 1e-6 or not math.isfinite(distance):
        return math.inf
    return max(distance, 0.0) / closing


def required_deceleration(distance: float, ego_speed: float,
                          obj_speed: float, obj_decel: float = 0.0,
                          margin: float = 0.5) -> float:
    """
    Return the constant ego deceleration (m/s^2) that just keeps ``margin``.

    Exact for an obstacle braking at ``obj_decel`` (m/s^2, >= 0) until it
    stops. Relative motion gives ``a = a_obj + v_rel^2 / (2 (d - margin))``
    when the speeds equalise while the obstacle still moves; otherwise the
    obstacle stops first and the ego must stop within the gap plus the
    obstacle's stopping distance: ``a = v_ego^2 / (2 (d - margin + s_obj))``.
    Returns ``inf`` when the margin is already used up while closing, 0 when
    no braking is needed. Raises ``ValueError`` for NaN inputs.
    """
    for name, value in (('distance', distance), ('ego_speed', ego_speed),
                        ('obj_speed', obj_speed), ('obj_decel', obj_decel),
                        ('margin', margin)):
        if math.isnan(value):
            raise ValueError(f'required_deceleration: {name} is NaN')
    v_e = max(float(ego_speed), 0.0)
    v_o = float(obj_speed)
    a_o = max(float(obj_decel), 0.0)
    gap = float(distance) - float(margin)
    v_rel = v_e - v_o
    if v_e <= 1e-6:
        return 0.0
    if gap <= 0.0:
        return math.inf if v_rel > 0.0 or a_o > 0.0 else 0.0
    if v_o <= 0.0:
        return v_rel * v_rel / (2.0 * gap)
    obstacle_stops = a_o > 1e-6
    if v_rel > 0.0:
        a_rel = a_o + v_rel * v_rel / (2.0 * gap)
        t_equal = 2.0 * gap / v_rel
        if not obstacle_stops or t_equal <= v_o / a_o:
            return a_rel
    if not obstacle_stops:
        return 0.0
    return v_e * v_e / (2.0 * (gap + v_o * v_o / (2.0 * a_o)))


def predict_after(distance: float, ego_speed: float, ego_decel: float,
                  obj_speed: float, obj_decel: float,
                  horizon: float) -> Tuple[float, float, float]:
    """
    Propagate the pair for ``horizon`` s of dead time.

    Constant decelerations (m/s^2, > 0 braking, speeds stop at 0). Returns
    (distance m, ego speed m/s, obstacle speed m/s) at the end.
    """
    def advance(v: float, a: float) -> Tuple[float, float]:
        if a > 1e-9 and v > 0.0:
            t_stop = v / a
            if t_stop < horizon:
                return 0.5 * v * t_stop, 0.0
        return v * horizon - 0.5 * a * horizon * horizon, v - a * horizon
    ego_path, ego_v = advance(max(ego_speed, 0.0), ego_decel)
    if obj_speed > 0.0:
        obj_path, obj_v = advance(obj_speed, obj_decel)
    else:
        obj_path, obj_v = obj_speed * horizon, obj_speed
    return distance - ego_path + obj_path, max(ego_v, 0.0), obj_v


def last_point_to_brake(closing_speed: float, dead_time: float,
                        max_decel: float) -> Tuple[float, float]:
    """
    Return (distance m, TTC s) of the last point to brake (static target).

    ``d = v t_d + v^2 / (2 a)``; TTC there is ``t_d + v / (2 a)``.
    """
    v = max(float(closing_speed), 0.0)
    if max_decel <= 0.0:
        raise ValueError(f'max_decel must be > 0, got {max_decel}')
    dist = v * dead_time + v * v / (2.0 * max_decel)
    ttc = dead_time + v / (2.0 * max_decel) if v > 0.0 else math.inf
    return dist, ttc
