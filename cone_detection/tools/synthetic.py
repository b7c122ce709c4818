# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Analytic 2D scans of cones, walls and boxes (tests and benchmarks; no rclpy).

Everything is in the scan frame (REP-103, metres, radians). Cones are
circles of their radius at the scan height; walls are line segments; boxes
are four segments. Ranges are exact ray intersections (first hit), plus an
optional Gaussian range noise; beams that hit nothing within ``range_max``
are ``inf``.
"""

from typing import Optional, Sequence, Tuple

import numpy as np


def ray_circle_ranges(angles: np.ndarray, centres: np.ndarray,
                      radii: np.ndarray) -> np.ndarray:
    """
    Return (B,) nearest hit distance of rays from the origin on circles.

    ``angles`` (B,) ray directions; ``centres`` (C, 2); ``radii`` (C,) or a
    scalar. Rays that miss every circle (or start inside one) get ``inf``.
    """
    t = _circle_hits(angles, centres, radii)
    return t.min(axis=1) if t.shape[1] else np.full(t.shape[0], np.inf)


def _circle_hits(angles: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Return (B, C) hit distance of each ray on each circle (``inf`` = miss)."""
    a = np.asarray(angles, dtype=np.float64).ravel()
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 2)
    r = np.broadcast_to(np.asarray(radii, dtype=np.float64), c.shape[:1])
    u = np.column_stack((np.cos(a), np.sin(a)))
    proj = u @ c.T
    disc = proj * proj - (np.sum(c * c, axis=1) - r * r)[None, :]
    with np.errstate(invalid='ignore'):
        t = proj - np.sqrt(disc)
    return np.where((disc >= 0.0) & (t > 0.0), t, np.inf)


def first_hit_counts(angles: np.ndarray, centres: np.ndarray,
                     radii: np.ndarray, segments: Optional[np.ndarray] = None,
                     range_max: float = np.inf) -> np.ndarray:
    """
    Return (C,) how many rays hit each circle first (visibility, not noise).

    A circle is occluded where a nearer circle or segment takes the ray;
    hits beyond ``range_max`` do not count.
    """
    a = np.asarray(angles, dtype=np.float64).ravel()
    t = _circle_hits(a, centres, radii)
    if t.shape[1] == 0 or a.size == 0:
        return np.zeros(t.shape[1], dtype=np.int64)
    first = np.argmin(t, axis=1)
    best = t[np.arange(a.size), first]
    if segments is not None:
        best = np.where(ray_segment_ranges(a, segments) < best, np.inf, best)
    hit = np.isfinite(best) & (best <= range_max)
    return np.bincount(first[hit], minlength=t.shape[1]).astype(np.int64)


def ray_segment_ranges(angles: np.ndarray,
                       segments: np.ndarray) -> np.ndarray:
    """
    Return (B,) nearest hit distance of rays from the origin on segments.

    ``segments`` (S, 4) rows ``x0, y0, x1, y1``; misses are ``inf``.
    """
    a = np.asarray(angles, dtype=np.float64).ravel()
    s = np.asarray(segments, dtype=np.float64).reshape(-1, 4)
    if s.shape[0] == 0:
        return np.full(a.shape, np.inf)
    ux, uy = np.cos(a)[:, None], np.sin(a)[:, None]
    p0x, p0y = s[:, 0][None, :], s[:, 1][None, :]
    ex, ey = (s[:, 2] - s[:, 0])[None, :], (s[:, 3] - s[:, 1])[None, :]
    denom = ux * ey - uy * ex
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (p0x * ey - p0y * ex) / denom
        v = (p0x * uy - p0y * ux) / denom
    hit = (np.abs(denom) > 1e-12) & (t > 0.0) & (v >= 0.0) & (v <= 1.0)
    return np.where(hit, t, np.inf).min(axis=1)


def box_segments(centre: Sequence[float], yaw: float, length: float,
                 width: float) -> np.ndarray:
    """Return the (4, 4) outline segments of a box (centre x, y; yaw rad)."""
    c, s = np.cos(yaw), np.sin(yaw)
    hl, hw = 0.5 * length, 0.5 * width
    corners = np.array([[hl, hw], [-hl, hw], [-hl, -hw], [hl, -hw]])
    world = corners @ np.array([[c, s], [-s, c]]) + np.asarray(centre)[:2]
    return np.hstack((world, np.roll(world, -1, axis=0)))


def synthetic_scan(cones_xy: np.ndarray, cone_radius: np.ndarray,
                   segments: Optional[np.ndarray] = None,
                   angle_min: float = -0.75 * np.pi,
                   angle_increment: float = np.radians(0.25),
                   n_beams: int = 1081, range_max: float = 20.0,
                   range_noise: float = 0.0,
                   rng: Optional[np.random.Generator] = None
                   ) -> Tuple[np.ndarray, float, float]:
    """
    Return ``(ranges float32 (n_beams,), angle_min, angle_increment)``.

    Cones (C, 2) with radii (C,) or scalar, optional wall segments (S, 4);
    Gaussian range noise of std-dev ``range_noise`` (m) on hits.
    """
    angles = angle_min + angle_increment * np.arange(n_beams)
    ranges = ray_circle_ranges(angles, cones_xy, cone_radius)
    if segments is not None:
        ranges = np.minimum(ranges, ray_segment_ranges(angles, segments))
    if range_noise > 0.0:
        gen = rng if rng is not None else np.random.default_rng(0)
        finite = np.isfinite(ranges)
        ranges[finite] += gen.normal(0.0, range_noise, int(finite.sum()))
    ranges[ranges > range_max] = np.inf
    return ranges.astype(np.float32), float(angle_min), float(angle_increment)
