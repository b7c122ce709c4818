# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Forward-backward speed profile of a point mass at its grip limits.

Shared by the referee's physical reference lap
(:mod:`hil_bridge.sim.reference_lap`) and the onboard lap-2+ planner
(:mod:`path_planning.raceline`): one algorithm, importable on both sides
of the deploy boundary. A quasi-steady point mass follows a path
(REP-103 ``map``, metres) with the vehicle profile's limits:

* lateral grip: ``v^2 |kappa| <= max_lat_accel``;
* friction ellipse: the tyres' longitudinal acceleration is at most
  ``max_decel * sqrt(1 - (a_lat / max_lat_accel)^2)`` (``max_decel`` is
  the profile's longitudinal grip, as in the built-in vehicle model);
* drive: ``min(max_drive_force, max_power / v) / mass``, limited by that
  grip; speed capped at ``top_speed``;
* resistance: drag ``drag_coefficient * v^2 / mass`` and rolling
  ``rolling_resistance * g`` slow the car on drive and help it brake.

A planner that wants headroom passes a profile with scaled grip
(``dataclasses.replace(profile, max_lat_accel=...)``).
"""

import math
from typing import Any, Optional

import numpy as np

GRAVITY = 9.81
#: Curvature is measured over chords of +-this arc length (m).
CURVATURE_BASE = 1.0


def path_curvature(xy: np.ndarray, closed: bool, base: float = CURVATURE_BASE
                   ) -> np.ndarray:
    """
    Return the unsigned curvature (1/m) at each point of an even polyline.

    ``xy`` (N, 2) must be sampled at a uniform step; the curvature is that
    of the circle through the points ``base`` metres before and after (a
    wide base keeps sampling noise out; exact on circular arcs).
    """
    n = len(xy)
    if n < 3:
        return np.zeros(n)
    step = float(np.median(np.hypot(*np.diff(xy, axis=0).T)))
    k = max(1, int(round(base / max(step, 1e-9))))
    idx = np.arange(n)
    if closed:
        i0, i2 = (idx - k) % n, (idx + k) % n
    else:
        i0, i2 = np.clip(idx - k, 0, n - 1), np.clip(idx + k, 0, n - 1)
    a = xy - xy[i0]
    b = xy[i2] - xy
    c = xy[i2] - xy[i0]
    cross = np.abs(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    den = np.hypot(*a.T) * np.hypot(*b.T) * np.hypot(*c.T)
    out = np.zeros(n)
    ok = den > 1e-12
    out[ok] = 2.0 * cross[ok] / den[ok]
    return out


def speed_profile(ds: float, kappa: np.ndarray, profile: Any,
                  v_start: float = 0.0, v_end: Optional[float] = None
                  ) -> np.ndarray:
    """
    Return the limit speed (m/s) at each of N points ``ds`` metres apart.

    ``kappa`` (N,) is the path curvature (1/m); ``profile`` a
    :class:`hil_bridge.vehicle_profile.VehicleProfile`. The car enters at
    ``v_start`` and leaves at ``v_end`` (None: as fast as it can).
    """
    if not (ds > 0.0 and math.isfinite(ds)):
        raise ValueError(f'speed_profile: ds must be > 0, got {ds}')
    kappa = np.abs(np.asarray(kappa, dtype=float))
    if kappa.ndim != 1 or not np.isfinite(kappa).all():
        raise ValueError('speed_profile: kappa must be a finite 1-D array')
    p = profile
    a_lat, a_long = float(p.max_lat_accel), float(p.max_decel)
    if a_lat <= 0.0 or a_long <= 0.0:
        raise ValueError('speed_profile: max_lat_accel and max_decel must '
                         'be > 0')
    m = float(p.mass)
    roll = float(p.rolling_resistance) * GRAVITY
    drag = float(p.drag_coefficient) / m
    v_top = float(p.top_speed)
    with np.errstate(divide='ignore'):
        v_max = np.minimum(np.sqrt(a_lat / kappa), v_top)
    n = len(kappa)

    def grip_x(v: float, k: float) -> float:
        ratio = min(v * v * k / a_lat, 1.0)
        return a_long * math.sqrt(1.0 - ratio * ratio)

    fwd = np.empty(n)
    fwd[0] = min(max(float(v_start), 0.0), v_max[0])
    for i in range(n - 1):
        v = fwd[i]
        force = min(float(p.max_drive_force),
                    float(p.max_power) / max(v, 1e-3))
        acc = min(force / m, grip_x(v, kappa[i])) - drag * v * v - roll
        fwd[i + 1] = min(math.sqrt(max(v * v + 2.0 * acc * ds, 0.0)),
                         v_max[i + 1])
    out = fwd
    if v_end is not None:
        out[-1] = min(out[-1], max(float(v_end), 0.0))
    for i in range(n - 2, -1, -1):
        v = out[i + 1]
        dec = grip_x(v, kappa[i + 1]) + drag * v * v + roll
        out[i] = min(out[i], math.sqrt(v * v + 2.0 * dec * ds))
    return out


def segment_times(ds: float, v: np.ndarray) -> np.ndarray:
    """
    Return the cumulative time (s) at each point of a speed profile.

    Constant acceleration between points (exact for a constant-acceleration
    stretch); a stretch at standstill never ends (``inf``).
    """
    mean = 0.5 * (v[1:] + v[:-1])
    with np.errstate(divide='ignore'):
        dt = np.where(mean > 0.0, ds / mean, np.inf)
    return np.concatenate([[0.0], np.cumsum(dt)])


def resample_polyline(pts: np.ndarray, closed: bool, step: float) -> np.ndarray:
    """Resample a polyline at uniform arc length (about ``step`` m)."""
    ext = np.vstack([pts, pts[:1]]) if closed else pts
    seg = np.hypot(*np.diff(ext, axis=0).T)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] <= 0.0:
        raise ValueError('resample_polyline: the path has zero length')
    n = max(int(math.ceil(s[-1] / step)), 2)
    t = np.linspace(0.0, s[-1], n + (0 if closed else 1),
                    endpoint=not closed)
    return np.column_stack([np.interp(t, s, ext[:, 0]),
                            np.interp(t, s, ext[:, 1])])


def closed_step(pts: np.ndarray, step: float) -> float:
    """Return the uniform step (m) of a closed polyline resampled at ``step``."""
    ext = np.vstack([pts, pts[:1]])
    length = float(np.hypot(*np.diff(ext, axis=0).T).sum())
    n = max(int(math.ceil(length / step)), 2)
    return length / n


def closed_speed_profile(ds: float, kappa: np.ndarray, profile: Any
                         ) -> np.ndarray:
    """
    Return the flying-lap limit speed (m/s) round a closed path.

    ``kappa`` (N,) the curvature (1/m) of N points ``ds`` metres apart,
    the last joining the first: the profile of the middle of three laps,
    so the car enters and leaves the lap at the lap's own speed.
    """
    kappa = np.asarray(kappa, dtype=float)
    n = len(kappa)
    v = speed_profile(ds, np.tile(kappa, 3), profile, v_start=0.0)
    return v[n:2 * n].copy()
