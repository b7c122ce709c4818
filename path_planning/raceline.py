# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A minimum-curvature racing line inside mapped boundaries, with its speed.

Frames: ``map`` (REP-103, metres, radians); the line is for the rear-axle
centre (the reference point of :mod:`path_planning.pure_pursuit`).

1. Centre line: the driven lap-1 path, resampled every ``step`` metres
   and smoothed, is moved to the middle of the two boundary polylines
   along its normals (twice).
2. Minimum curvature: with stations ``r_i`` and unit left normals
   ``n_i`` of the centre line, the line is ``p_i = r_i + a_i n_i``; its
   curvature is linear in ``a`` to first order. Its squared sum (plus a
   little of its rate of change) is minimised under the bounds ``lo_i <=
   a_i <= hi_i`` and ``|kappa_i| <= curvature_fraction * tan(max_steer)
   / wheelbase`` (:class:`path_planning.line_qp.LineQP`, closed round the
   loop: an interior-point QP with a sparse factorisation; without the
   curvature limit the line asked for more steering than the car has in
   9 m hairpins, and ran wide). The bounds keep the car's half width,
   the cone radius and ``margin`` off each boundary polyline (the chords
   between cones).
3. Body check: the car's footprint (its box from the vehicle profile,
   heading along the line) is placed on every station; where a boundary
   cone comes nearer than the cone radius plus ``margin``, the bound on
   that side is tightened by the intrusion and the problem solved again
   (up to ``iterations`` times). This catches the front corner sweeping
   out in tight turns.
4. Speed: :func:`hil_bridge.interface.speed_profile.closed_speed_profile`
   (forward-backward, friction ellipse) on the line's curvature, with the
   vehicle profile's grip scaled by ``lat_grip`` and ``long_grip`` for
   headroom, and the top speed capped at ``max_speed``.
"""

from dataclasses import dataclass, field, replace
import math
import time
from typing import Any, Tuple

from hil_bridge.interface.speed_profile import (closed_speed_profile, CURVATURE_BASE,
                                                path_curvature, resample_polyline, segment_times)
import numpy as np
from path_planning.line_qp import LineQP
from path_planning.track_map import TrackMap
from scipy.ndimage import maximum_filter1d

#: Clearances (m) up to this are measured exactly (:attr:`Raceline.clearance`).
CLEARANCE_PROBE = 1.0


@dataclass(frozen=True)
class RacelineParams:
    """
    The line's geometry and speed limits (m, m/s, fractions).

    ``step`` station spacing; ``margin`` clearance kept to the cones
    besides the car's half width and ``cone_radius``; ``smooth`` arc length
    of the centre line's moving average; ``max_search`` how far a
    boundary is looked for along a normal; ``iterations`` body-check
    rounds; ``lat_grip`` / ``long_grip`` fractions of the profile's
    ``max_lat_accel`` / ``max_decel`` the speed profile uses;
    ``max_speed`` cap (m/s); ``profile_step`` spacing of the output line;
    ``curvature_fraction`` of the steering's ``tan(max_steer) / wheelbase``
    the line's curvature may reach (the rest is the follower's to correct).
    """

    step: float = 1.0
    margin: float = 0.35
    cone_radius: float = 0.114
    smooth: float = 3.0
    max_search: float = 8.0
    iterations: int = 4
    lat_grip: float = 0.8
    long_grip: float = 0.6
    max_speed: float = 20.0
    profile_step: float = 0.5
    curvature_fraction: float = 0.9

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('step', 'max_search', 'max_speed', 'profile_step'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'RacelineParams.{name} must be finite and > 0, got {value}')
        for name in ('margin', 'cone_radius', 'smooth'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'RacelineParams.{name} must be finite and >= 0, got {value}')
        for name in ('lat_grip', 'long_grip', 'curvature_fraction'):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value <= 1.0):
                raise ValueError(f'RacelineParams.{name} must be in (0, 1], got {value}')
        if self.iterations < 0:
            raise ValueError('RacelineParams.iterations must be >= 0')


@dataclass
class Raceline:
    """
    A closed line with its speed profile (``map``, m, m/s, s).

    ``xy`` (N, 2) the rear-axle line, points ``ds`` apart, the last
    joining the first; ``s`` (N,) arc positions; ``kappa`` (N,) signed
    curvature (1/m, + left); ``v`` (N,) speed; ``lap_time`` of a flying
    lap on the profile; ``clearance`` the smallest distance (m) of a
    boundary cone to the car's box along the line minus the cone radius;
    ``n_pinched`` stations where the bounds left no room (the line runs
    between them); ``solve_ms`` wall time of the whole computation.
    """

    xy: np.ndarray
    s: np.ndarray
    kappa: np.ndarray
    v: np.ndarray
    ds: float
    lap_time: float
    clearance: float
    n_pinched: int = 0
    solve_ms: float = 0.0
    centre: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    @property
    def length(self) -> float:
        """Return how long the line is (m)."""
        return float(self.ds * len(self.xy))


def _smooth_closed(xy: np.ndarray, n: int) -> np.ndarray:
    """Return a circular moving average over 2n+1 points."""
    if n <= 0:
        return xy
    k = np.ones(2 * n + 1) / (2 * n + 1)
    ext = np.vstack([xy[-n:], xy, xy[:n]])
    return np.column_stack([np.convolve(ext[:, 0], k, 'valid'),
                            np.convolve(ext[:, 1], k, 'valid')])


def polyline_normals(xy: np.ndarray, closed: bool = True) -> np.ndarray:
    """
    Return unit left normals (N, 2) of a polyline (central differences).

    ``closed``: the last point joins the first; open: one-sided at the ends.
    """
    if closed:
        t = np.roll(xy, -1, axis=0) - np.roll(xy, 1, axis=0)
    else:
        t = np.gradient(xy, axis=0)
    t /= np.maximum(np.hypot(t[:, 0], t[:, 1]), 1e-12)[:, None]
    return np.column_stack([-t[:, 1], t[:, 0]])


def signed_curvature(xy: np.ndarray, closed: bool = True) -> np.ndarray:
    """
    Return the signed Menger curvature (1/m, + left) at each point of a polyline.

    ``closed``: the last point joins the first; open: 0 at both ends.
    """
    if not closed:
        k = np.zeros(len(xy))
        if len(xy) >= 3:
            k[1:-1] = signed_curvature(xy, closed=True)[1:-1]
        return k
    p0, p2 = np.roll(xy, 1, axis=0), np.roll(xy, -1, axis=0)
    a, b, c = xy - p0, p2 - xy, p2 - p0
    cross = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    den = np.hypot(*a.T) * np.hypot(*b.T) * np.hypot(*c.T)
    return np.where(den > 1e-12, 2.0 * cross / np.maximum(den, 1e-12), 0.0)


def ray_distance(origin: np.ndarray, direction: np.ndarray, poly: np.ndarray,
                 max_dist: float, closed: bool = True) -> np.ndarray:
    """
    Return where rays first meet a polyline (N,) (m, inf if not).

    ``origin`` / ``direction`` (N, 2) with unit directions; ``poly``
    (M, 2), ``closed`` (the last point joins the first) or open.
    """
    if closed:
        a, e = poly, np.roll(poly, -1, axis=0) - poly
    elif poly.shape[0] < 2:
        return np.full(origin.shape[0], np.inf)
    else:
        a, e = poly[:-1], np.diff(poly, axis=0)
    rel = a[None, :, :] - origin[:, None, :]          # (N, M, 2)
    den = direction[:, None, 0] * e[None, :, 1] - direction[:, None, 1] * e[None, :, 0]
    safe = np.where(np.abs(den) > 1e-12, den, np.inf)
    t = (rel[..., 0] * e[None, :, 1] - rel[..., 1] * e[None, :, 0]) / safe
    u = (rel[..., 0] * direction[:, None, 1] - rel[..., 1] * direction[:, None, 0]) / safe
    hit = (t > 0.0) & (t <= max_dist) & (u >= 0.0) & (u <= 1.0)
    return np.min(np.where(hit, t, np.inf), axis=1)


def boundary_offsets(ref: np.ndarray, normals: np.ndarray, track: TrackMap,
                     max_search: float) -> Tuple[np.ndarray, np.ndarray]:
    """Return distances (m) from each station to the left / right boundary."""
    d_left = ray_distance(ref, normals, track.left, max_search)
    d_right = ray_distance(ref, -normals, track.right, max_search)
    return d_left, d_right


def centre_line(track: TrackMap, params: RacelineParams) -> np.ndarray:
    """Return the closed centre line (N, 2) ``step`` apart, from the driven path."""
    ref = resample_polyline(track.path, True, params.step)
    n_smooth = int(round(params.smooth / params.step))
    for _ in range(2):
        ref = _smooth_closed(ref, n_smooth)
        nrm = polyline_normals(ref)
        d_l, d_r = boundary_offsets(ref, nrm, track, params.max_search)
        ok = np.isfinite(d_l) & np.isfinite(d_r)
        shift = np.where(ok, 0.5 * (np.where(ok, d_l, 0.0) - np.where(ok, d_r, 0.0)), 0.0)
        ref = resample_polyline(ref + shift[:, None] * nrm, True, params.step)
    return _smooth_closed(ref, 1)


def box_intrusion(xy: np.ndarray, heading: np.ndarray, cones: np.ndarray,
                  profile: Any, keep: float, reach: float
                  ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return how far cones intrude into the car's box at each station (m).

    The box (``profile.length`` x ``profile.width``, rear axle
    ``rear_overhang`` from its back) sits on each station of ``xy`` with
    its axis along ``heading``; a cone counts when its centre is within
    ``keep`` of the box sides and ``reach`` of its ends. Returns (left, right) intrusion (N,) >= 0:
    the lateral depth of the worst cone on each side.
    """
    c, s = np.cos(heading), np.sin(heading)
    rel = cones[None, :, :] - xy[:, None, :]
    lx = c[:, None] * rel[..., 0] + s[:, None] * rel[..., 1]
    ly = -s[:, None] * rel[..., 0] + c[:, None] * rel[..., 1]
    front = float(profile.length - profile.rear_overhang) + reach
    back = -float(profile.rear_overhang) - reach
    half = 0.5 * float(profile.width) + keep
    along = (lx >= back) & (lx <= front)
    depth = np.where(along, half - np.abs(ly), -np.inf)
    left = np.max(np.where(ly > 0.0, depth, -np.inf), axis=1, initial=-np.inf)
    right = np.max(np.where(ly <= 0.0, depth, -np.inf), axis=1, initial=-np.inf)
    return np.maximum(left, 0.0), np.maximum(right, 0.0)


def compute_raceline(track: TrackMap, profile: Any,
                     params: RacelineParams = RacelineParams()) -> Raceline:
    """
    Return the minimum-curvature line of a complete map and its speed profile.

    ``track`` a complete :class:`path_planning.track_map.TrackMap`;
    ``profile`` a ``VehicleProfile`` (geometry and grip). Raises
    ``ValueError`` for an incomplete map or when no boundary is found
    along the centre line.
    """
    t0 = time.perf_counter()
    if not track.ok:
        raise ValueError(f'raceline: map not usable: {track.reason}')
    p = params
    ref = centre_line(track, p)
    nrm = polyline_normals(ref)
    d_l, d_r = boundary_offsets(ref, nrm, track, p.max_search)
    missing = ~(np.isfinite(d_l) & np.isfinite(d_r))
    if missing.mean() > 0.05:
        raise ValueError(f'raceline: no boundary along {int(missing.sum())} of '
                         f'{len(ref)} stations')
    # stations without a boundary hit keep to the centre line
    d_l = np.where(np.isfinite(d_l), d_l, 0.0)
    d_r = np.where(np.isfinite(d_r), d_r, 0.0)
    keep = 0.5 * float(profile.width) + p.cone_radius + p.margin
    extra_l = np.zeros(len(ref))
    extra_r = np.zeros(len(ref))
    cones = track.cones
    spread = float(profile.length - profile.rear_overhang)
    n_pinched = 0
    h = float(np.mean(np.hypot(*(np.roll(ref, -1, axis=0) - ref).T)))
    k_lim = p.curvature_fraction * math.tan(float(profile.max_steer)) / float(profile.wheelbase)
    qp = LineQP(len(ref), h, signed_curvature(ref), np.zeros(0), k_lim, closed=True)
    for _round in range(p.iterations + 1):
        hi = d_l - keep - extra_l
        lo = -d_r + keep + extra_r
        pinched = lo >= hi
        mid = 0.5 * (lo + hi)
        lo = np.where(pinched, mid - 1e-3, lo)
        hi = np.where(pinched, mid + 1e-3, hi)
        n_pinched = int(np.count_nonzero(pinched))
        alpha, _its = qp.solve(lo, hi)
        line = ref + alpha[:, None] * nrm
        tang = np.roll(line, -1, axis=0) - np.roll(line, 1, axis=0)
        heading = np.arctan2(tang[:, 1], tang[:, 0])
        in_l, in_r = box_intrusion(line, heading, cones, profile, keep - 0.5 * profile.width,
                                   p.cone_radius)
        if not (in_l.any() or in_r.any()):
            break
        if _round < p.iterations:
            # spread over the car's length: the bound moves smoothly
            width = 2 * int(math.ceil(spread / p.step)) + 1
            extra_l += maximum_filter1d(np.where(in_l > 0.0, in_l + 0.02, 0.0), width,
                                        mode='wrap')
            extra_r += maximum_filter1d(np.where(in_r > 0.0, in_r + 0.02, 0.0), width,
                                        mode='wrap')
    dense = resample_polyline(line, True, p.profile_step)
    ds = float(np.hypot(*(np.roll(dense, -1, axis=0) - dense).T).mean())
    kappa_abs = path_curvature(dense, True)
    kb = max(1, int(round(CURVATURE_BASE / ds)))
    before, after = dense - np.roll(dense, kb, axis=0), np.roll(dense, -kb, axis=0) - dense
    kappa = np.sign(before[:, 0] * after[:, 1] - before[:, 1] * after[:, 0]) * kappa_abs
    grip = replace(profile, max_lat_accel=profile.max_lat_accel * p.lat_grip,
                   max_decel=profile.max_decel * p.long_grip,
                   top_speed=min(float(profile.top_speed), p.max_speed))
    v = closed_speed_profile(ds, kappa_abs, grip)
    t = segment_times(ds, np.append(v, v[0]))
    tang = np.roll(dense, -1, axis=0) - np.roll(dense, 1, axis=0)
    heading = np.arctan2(tang[:, 1], tang[:, 0])
    probe = p.cone_radius + CLEARANCE_PROBE
    in_l, in_r = box_intrusion(dense, heading, cones, profile, probe, p.cone_radius)
    clearance = probe - p.cone_radius - float(max(in_l.max(initial=0.0), in_r.max(initial=0.0)))
    return Raceline(xy=dense, s=np.arange(len(dense)) * ds,
                    kappa=kappa, v=v, ds=ds,
                    lap_time=float(t[-1]), clearance=clearance, n_pinched=n_pinched,
                    solve_ms=(time.perf_counter() - t0) * 1e3, centre=ref)
