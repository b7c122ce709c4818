# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Physical reference lap: the vehicle on the centre line at its limits.

A quasi-steady point mass follows a path (REP-103 ``map``, metres) with a
forward-backward speed profile over the path's curvature:

* lateral grip: ``v^2 |kappa| <= max_lat_accel``;
* friction ellipse: the tyres' longitudinal acceleration is at most
  ``max_decel * sqrt(1 - (a_lat / max_lat_accel)^2)`` (``max_decel`` is
  the profile's longitudinal grip, as in the built-in vehicle model);
* drive: ``min(max_drive_force, max_power / v) / mass``, limited by that
  grip, as :class:`hil_bridge.sim.vehicle_model.VehicleModel` drives;
  speed capped at ``top_speed``;
* resistance: drag ``drag_coefficient * v^2 / mass`` and rolling
  ``rolling_resistance * g`` slow the car on drive and help it brake.

The profile is :func:`hil_bridge.interface.speed_profile.speed_profile`,
shared with the onboard lap-2+ planner. Actuator delays and steering are
ignored: the result is a lower bound the
closed loop can be measured against (``lap time / reference``).
:func:`reference_lap_times` times a run as the referee does: the car
starts at ``track.car_start`` from standstill, its front bumper is timed
across the start and finish lines, one entry per lap.
"""

import logging
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.interface.speed_profile import (closed_step, CURVATURE_BASE, GRAVITY,
                                                path_curvature, resample_polyline, segment_times,
                                                speed_profile)
import numpy as np

__all__ = ['CURVATURE_BASE', 'GRAVITY', 'lap_time_ratios', 'path_curvature',
           'profile_lap_time', 'reference_lap_times', 'run_reference', 'segment_times',
           'speed_profile', 'STEP']
LOG = logging.getLogger(__name__)
#: Path resampling step of the profile (m).
STEP = 0.25


def profile_lap_time(xy: np.ndarray, closed: bool, profile: Any,
                     v_start: float = 0.0, v_end: Optional[float] = None
                     ) -> float:
    """
    Return the time (s) to drive a polyline at the limit.

    Open path: from ``v_start`` to ``v_end``. Closed path: a flying lap
    (the profile of the middle of three laps, so entry and exit speed are
    the lap's own).
    """
    xy = np.asarray(xy, dtype=float)
    path = resample_polyline(xy, closed, STEP)
    if closed:
        n = len(path)
        kappa = path_curvature(path, True)
        triple = np.tile(kappa, 3)
        ds = closed_step(xy, STEP)
        v = speed_profile(ds, triple, profile, v_start=0.0)
        t = segment_times(ds, v)
        return float(t[2 * n] - t[n])
    ds = float(np.hypot(*np.diff(path, axis=0).T).mean())
    v = speed_profile(ds, path_curvature(path, False), profile, v_start,
                      v_end)
    return float(segment_times(ds, v)[-1])


def reference_lap_times(track: Any, profile: Any, laps: int,
                        min_lap_distance: Optional[float] = None
                        ) -> List[float]:
    """
    Return the reference time (s) of each lap of a run, as the referee times.

    ``track`` is a :class:`hil_bridge.interface.track.Track`; the car starts at
    rest at ``track.car_start`` (rear axle, projected on the centre line)
    and follows the centre line (``laps`` times around a closed track, once
    along an open one); its front bumper (``length - rear_overhang`` ahead
    of the rear axle) is timed across ``start`` and ``finish`` like
    :class:`hil_bridge.sim.referee.Referee` does (a lap needs at least
    ``min_lap_distance``, default the referee's). Fewer entries than
    ``laps`` come back when the path does not reach every finish.
    """
    from hil_bridge.sim.referee import Referee, _crosses
    if laps < 1:
        raise ValueError(f'reference_lap_times: laps must be >= 1, got {laps}')
    lines = track.timing_lines
    if 'start' not in lines or 'finish' not in lines:
        raise ValueError('reference_lap_times: the track needs start and '
                         'finish timing lines')
    path, _closed = _run_path(track, laps)
    ds = float(np.hypot(*np.diff(path, axis=0).T).mean())
    kappa = path_curvature(path, False)
    v = speed_profile(ds, kappa, profile, 0.0, None)
    t = segment_times(ds, v)
    front = float(profile.length - profile.rear_overhang)
    # the bumper's path: the rear-axle path ``front`` metres further on
    s_all = np.arange(len(path)) * ds
    s_b = s_all[s_all + front <= s_all[-1]]
    bumper = np.column_stack([np.interp(s_b + front, s_all, path[:, 0]),
                              np.interp(s_b + front, s_all, path[:, 1])])
    need = Referee._min_lap(track) if min_lap_distance is None \
        else float(min_lap_distance)
    out: List[float] = []
    lap_start: Optional[Tuple[float, float]] = None
    for s_i, name in _crossings(bumper, ds, lines, _crosses):
        t_i = _time_at(s_i, ds, v, t)
        if lap_start is not None and name in ('finish', 'both') and \
                s_i - lap_start[1] >= need:
            out.append(float(t_i - lap_start[0]))
            lap_start = None
        if lap_start is None and name in ('start', 'both') and \
                len(out) < laps:
            lap_start = (t_i, s_i)
        if len(out) >= laps:
            break
    return out


def _time_at(s: float, ds: float, v: np.ndarray, t: np.ndarray) -> float:
    """Return the time (s) at arc position ``s`` (constant acceleration)."""
    j = min(int(s // ds), len(v) - 2)
    frac = (s - j * ds) / ds
    v_s = math.sqrt(max(v[j] ** 2 + (v[j + 1] ** 2 - v[j] ** 2) * frac,
                        0.0))
    mean = 0.5 * (v[j] + v_s)
    return float(t[j] + ((s - j * ds) / mean if mean > 0.0 else 0.0))


def _crossings(path: np.ndarray, ds: float, lines: Any, crosses: Any
               ) -> List[Tuple[float, str]]:
    """
    Return (arc position, 'start'|'finish'|'both') of each line crossing.

    ``path`` is sampled every ``ds`` metres; a crossing of segment i-i+1
    (forwards, as the referee counts it) is placed where the segment cuts
    the line.
    """
    hits: Dict[int, Dict[str, float]] = {}
    for name in ('start', 'finish'):
        line = lines[name]
        mid = (line.a + line.b) / 2.0
        reach = float(np.hypot(*(line.b - line.a))) / 2.0 + 2.0 * ds + 1.0
        near = np.flatnonzero(np.hypot(*(path - mid).T) < reach)
        for i in near[(near + 1) < len(path)]:
            p0, p1 = path[i], path[i + 1]
            if not crosses(line, p0, p1):
                continue
            e = line.b - line.a
            d0 = e[0] * (p0[1] - line.a[1]) - e[1] * (p0[0] - line.a[0])
            d1 = e[0] * (p1[1] - line.a[1]) - e[1] * (p1[0] - line.a[0])
            frac = d0 / (d0 - d1) if d0 != d1 else 1.0
            hits.setdefault(int(i), {})[name] = (i + frac) * ds
    out: List[Tuple[float, str]] = []
    for i in sorted(hits):
        names = hits[i]
        kind = 'both' if len(names) == 2 else next(iter(names))
        out.append((min(names.values()), kind))
    return out


def _run_path(track: Any, laps: int) -> Tuple[np.ndarray, bool]:
    """Return the rear-axle path from the car start (STEP apart)."""
    cl = np.asarray(track.centerline, dtype=float)
    closed = bool(track.closed)
    dense = resample_polyline(cl, closed, STEP)
    start = np.array([track.car_start.x, track.car_start.y])
    i0 = int(np.argmin(np.hypot(*(dense - start).T)))
    if closed:
        n = len(dense)
        # laps + one more lap: the car starts behind the line
        idx = (i0 + np.arange(n * (laps + 1) + 1)) % n
        path = dense[idx]
    else:
        path = dense[i0:]
    if len(path) < 2:
        raise ValueError('reference_lap_times: the car starts at the end '
                         'of the centre line')
    return path, closed


def run_reference(mission: str, track: Any, profile: Any, laps: int
                  ) -> List[float]:
    """
    Return the reference lap times of a scenario run ([] when there are none).

    Only FS missions with a track have them; a track whose centre line does
    not reach its timing lines gives fewer (or no) entries, logged.
    """
    if track is None or mission not in ('acceleration', 'skidpad',
                                        'autocross', 'trackdrive'):
        return []
    try:
        out = reference_lap_times(track, profile, laps)
    except ValueError as exc:
        LOG.warning('no reference lap time: %s', exc)
        return []
    if len(out) < laps:
        LOG.warning('reference lap times for %d of %d laps only', len(out),
                    laps)
    return out


def lap_time_ratios(lap_times: Sequence[float],
                    reference: Sequence[float]) -> List[Optional[float]]:
    """Return lap time / reference per lap (None where no reference)."""
    out: List[Optional[float]] = []
    for i, lap in enumerate(lap_times):
        ref = reference[i] if i < len(reference) else None
        out.append(round(float(lap) / ref, 4) if ref else None)
    return out
