# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Target speed for the planners (pure functions, SI units).

The target is the smallest of four limits:

* ``max_speed`` (m/s);
* lateral acceleration: ``v^2 * |kappa| <= a_lat_max``, so
  ``v <= sqrt(a_lat_max / |kappa|)`` (kappa in 1/m);
* free-range width (cone drive): a narrow free steering range means a
  tight passage, so the speed scales linearly from ``narrow_speed`` at
  ``narrow_width`` to ``max_speed`` at ``wide_width`` (radians);
* stopping distance: the car must be able to stop within the clear
  distance ahead, ``v <= sqrt(2 * decel * max(clear - stop_margin, 0))``.

The commanded speed then follows the target within the acceleration and
deceleration limits (``accel`` and ``decel`` m/s^2, over ``dt`` seconds).
A stop (no free range, stale or invalid input) commands 0 at once: the
low-level controller brakes as hard as the vehicle allows.
"""

from dataclasses import dataclass
import math
from typing import Optional


@dataclass(frozen=True)
class SpeedParams:
    """
    Limits of the speed policy (m/s, m/s^2, rad, m).

    ``max_speed`` top target; ``min_speed`` floor while driving (so the
    car keeps moving through tight passages); ``a_lat_max`` lateral
    acceleration limit; ``accel`` / ``decel`` rate limits; ``narrow_width``
    / ``wide_width`` free-range widths mapped to ``narrow_speed`` /
    ``max_speed``; ``stop_margin`` distance kept to the first obstacle.
    """

    max_speed: float = 8.0
    min_speed: float = 1.0
    a_lat_max: float = 6.0
    accel: float = 3.0
    decel: float = 6.0
    narrow_width: float = math.radians(2.0)
    wide_width: float = math.radians(12.0)
    narrow_speed: float = 2.0
    stop_margin: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('max_speed', 'a_lat_max', 'accel', 'decel'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'SpeedParams.{name} must be finite and > 0, '
                                 f'got {value}')
        for name in ('min_speed', 'narrow_width', 'narrow_speed',
                     'stop_margin'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'SpeedParams.{name} must be finite and >= 0,'
                                 f' got {value}')
        if not (math.isfinite(self.wide_width)
                and self.wide_width > self.narrow_width):
            raise ValueError('SpeedParams.wide_width must be finite and > '
                             f'narrow_width, got {self.wide_width}')
        if self.min_speed > self.max_speed:
            raise ValueError('SpeedParams.min_speed must be <= max_speed')


def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f'speed policy: {name} must be finite, got {value}')
    return v


def curvature_limit(kappa: float, a_lat_max: float) -> float:
    """Return the speed (m/s) at which ``v^2 |kappa| = a_lat_max`` (inf if 0)."""
    k = abs(_finite('kappa', kappa))
    if k < 1e-9:
        return math.inf
    return math.sqrt(a_lat_max / k)


def width_limit(width: float, params: SpeedParams) -> float:
    """
    Return the speed limit (m/s) for a free steering range of ``width`` rad.

    Linear from ``narrow_speed`` at ``narrow_width`` to ``max_speed`` at
    ``wide_width``; clamped outside.
    """
    wd = _finite('width', width)
    frac = (wd - params.narrow_width) / (params.wide_width - params.narrow_width)
    frac = min(max(frac, 0.0), 1.0)
    return params.narrow_speed + frac * (params.max_speed - params.narrow_speed)


def stopping_limit(clear: float, params: SpeedParams) -> float:
    """Return the speed (m/s) from which the car stops within ``clear`` m."""
    c = float(clear)
    if math.isnan(c):
        raise ValueError('speed policy: clear distance is NaN')
    if math.isinf(c):
        return math.inf
    return math.sqrt(2.0 * params.decel * max(c - params.stop_margin, 0.0))


def target_speed(kappa: float, params: SpeedParams,
                 width: Optional[float] = None,
                 clear: float = math.inf) -> float:
    """
    Return the target speed (m/s) before rate limiting.

    ``kappa`` path curvature (1/m); ``width`` the chosen free steering
    range (rad) or None (midline mode); ``clear`` distance (m) known to be
    free ahead. Never below ``min_speed`` unless the stopping limit says
    so.
    """
    v = min(params.max_speed, curvature_limit(kappa, params.a_lat_max))
    if width is not None:
        v = min(v, width_limit(width, params))
    v = max(v, params.min_speed)
    return min(v, stopping_limit(clear, params), params.max_speed)


def rate_limit(target: float, previous: float, dt: float,
               params: SpeedParams) -> float:
    """
    Move from ``previous`` towards ``target`` within accel/decel limits.

    Speeds in m/s, ``dt`` in s (negative or non-finite dt counts as 0; a
    non-finite previous speed restarts from 0). The result is >= 0.
    """
    tgt = max(_finite('target', target), 0.0)
    prev = float(previous)
    if not math.isfinite(prev):
        prev = 0.0
    step = float(dt)
    if not math.isfinite(step) or step < 0.0:
        step = 0.0
    hi = prev + params.accel * step
    lo = prev - params.decel * step
    return max(min(max(tgt, lo), hi), 0.0)


def command_speed(stop: bool, kappa: float, previous: float, dt: float,
                  params: SpeedParams, width: Optional[float] = None,
                  clear: float = math.inf) -> float:
    """
    Return the commanded speed (m/s) for one planning cycle.

    ``stop`` True (no free range, stale or bad input) gives 0 at once;
    otherwise :func:`target_speed` followed by :func:`rate_limit`.
    """
    if stop:
        return 0.0
    return rate_limit(target_speed(kappa, params, width, clear), previous, dt,
                      params)
