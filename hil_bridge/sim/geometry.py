# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Vectorised ray casting against the built-in world (no rclpy).

Everything is in ``map`` (REP-103: x forward, y left, z up; metres,
radians). Three kinds of surfaces:

* the ground, the plane ``z = ground_z``;
* Formula Student cones, each a frustum (truncated cone) standing on the
  ground with a vertical axis: base radius half the base width of
  ``hil_bridge.interface.cones.CONE_SIZE``, top radius ``CONE_TOP_RATIO`` times the
  base radius, height from ``CONE_SIZE``;
* boxes (vehicles, obstacles) oriented by yaw only (slab method).

A ray is ``origin + t * direction`` with ``t > 0``; distances ``t`` are in
units of the direction's length (metres for unit directions). Functions
return ``inf`` for a miss. A ray that starts inside a cone or a box hits
the surface where it leaves it. :func:`cast_rays` combines all three with
spatial culling: cones out of range or outside a ray's azimuth window are
never tested.
"""

from typing import Tuple

from hil_bridge.interface.cones import cone_dimensions
from hil_bridge.sim.world import WorldGeometry
import numpy as np

#: Smallest accepted ray parameter (m): hits closer than this are ignored.
T_EPS = 1e-9

HIT_NONE = 0
HIT_GROUND = 1
HIT_CONE = 2
HIT_BOX = 3


def check_world(world: WorldGeometry) -> None:
    """
    Raise ``ValueError`` when the world's arrays are malformed.

    Checks shapes ((N, 2) cones with (N,) classes, (M, 3) box centres and
    sizes with (M,) yaws; ``cone_up`` may be empty, meaning all standing),
    finite values and positive box sizes.
    """
    xy = np.asarray(world.cone_xy)
    n = xy.shape[0] if xy.ndim == 2 else -1
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f'world.cone_xy must have shape (N, 2), got '
                         f'{xy.shape}')
    if np.asarray(world.cone_class).shape != (n,):
        raise ValueError(f'world.cone_class must have shape ({n},), got '
                         f'{np.asarray(world.cone_class).shape}')
    if np.asarray(world.cone_up).shape not in ((n,), (0,)):
        raise ValueError(f'world.cone_up must have shape ({n},), got '
                         f'{np.asarray(world.cone_up).shape}')
    centres = np.asarray(world.box_center)
    m = centres.shape[0] if centres.ndim == 2 else -1
    if centres.ndim != 2 or centres.shape[1] != 3:
        raise ValueError(f'world.box_center must have shape (M, 3), got '
                         f'{centres.shape}')
    if np.asarray(world.box_yaw).shape != (m,) or \
            np.asarray(world.box_size).shape != (m, 3):
        raise ValueError(f'world.box_yaw/box_size must have shapes ({m},) '
                         f'and ({m}, 3)')
    for name in ('cone_xy', 'box_center', 'box_yaw', 'box_size'):
        if not np.all(np.isfinite(np.asarray(getattr(world, name),
                                             dtype=np.float64))):
            raise ValueError(f'world.{name} must be finite')
    if np.any(np.asarray(world.box_size) <= 0.0):
        raise ValueError('world.box_size must be positive')
    if not np.isfinite(float(world.ground_z)):
        raise ValueError('world.ground_z must be finite')


def _rays(origins: np.ndarray, dirs: np.ndarray
          ) -> Tuple[np.ndarray, np.ndarray]:
    o = np.asarray(origins, dtype=np.float64)
    d = np.asarray(dirs, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != 3:
        raise ValueError(f'ray directions must have shape (N, 3), got '
                         f'{d.shape}')
    if o.shape not in ((3,), d.shape):
        raise ValueError(f'ray origins must have shape (3,) or {d.shape}, '
                         f'got {o.shape}')
    if not (np.all(np.isfinite(o)) and np.all(np.isfinite(d))):
        raise ValueError('ray origins and directions must be finite')
    return np.broadcast_to(o, d.shape), d


def ray_ground(origins: np.ndarray, dirs: np.ndarray,
               ground_z: float = 0.0) -> np.ndarray:
    """Return the ray parameter (N,) of the hit with ``z = ground_z``."""
    o, d = _rays(origins, dirs)
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (ground_z - o[:, 2]) / d[:, 2]
    return np.where(np.isfinite(t) & (t > T_EPS), t, np.inf)


def ray_frustum_pairs(o: np.ndarray, d: np.ndarray, center_xy: np.ndarray,
                      base_radius: np.ndarray, top_radius: np.ndarray,
                      height: np.ndarray, ground_z: float = 0.0
                      ) -> np.ndarray:
    """
    Return ``t`` of each ray against its own frustum (element-wise).

    ``o``, ``d`` (K, 3) rays; ``center_xy`` (K, 2) base centres on the
    ground; radii and heights (K,). The side wall and the top disk are
    tested; the base lies on the ground. ``inf`` where a ray misses.
    """
    slope = (base_radius - top_radius) / height
    px = o[:, 0] - center_xy[:, 0]
    py = o[:, 1] - center_xy[:, 1]
    # Radius of the wall at the ray's height: w(t) = w0 + w1 t.
    w0 = base_radius - slope * (o[:, 2] - ground_z)
    w1 = -slope * d[:, 2]
    a = d[:, 0] ** 2 + d[:, 1] ** 2 - w1 ** 2
    b = 2.0 * (px * d[:, 0] + py * d[:, 1] - w0 * w1)
    c = px ** 2 + py ** 2 - w0 ** 2
    top = ground_z + height
    with np.errstate(divide='ignore', invalid='ignore'):
        linear = np.abs(a) < 1e-12
        disc = b * b - 4.0 * a * c
        sq = np.sqrt(np.where(disc >= 0.0, disc, np.nan))
        t1 = (-b - sq) / (2.0 * a)
        t2 = (-b + sq) / (2.0 * a)
        tl = -c / b
        t1 = np.where(linear, tl, t1)
        t2 = np.where(linear, np.nan, t2)
        best = np.full(a.shape, np.inf)
        for tr in (t1, t2):
            z = o[:, 2] + tr * d[:, 2]
            ok = (tr > T_EPS) & (z >= ground_z) & (z <= top)
            best = np.where(ok & (tr < best), tr, best)
        tc = (top - o[:, 2]) / d[:, 2]
        qx = px + tc * d[:, 0]
        qy = py + tc * d[:, 1]
        ok = (tc > T_EPS) & (qx * qx + qy * qy <= top_radius ** 2)
        best = np.where(ok & (tc < best), tc, best)
    return best


def ray_cones(origins: np.ndarray, dirs: np.ndarray, cone_xy: np.ndarray,
              cone_class: np.ndarray, ground_z: float = 0.0
              ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return the nearest cone hit of every ray against every cone (dense).

    ``origins`` (3,) or (N, 3), ``dirs`` (N, 3); ``cone_xy`` (C, 2) base
    centres, ``cone_class`` (C,) class ids. Returns ``t`` (N,) (``inf`` for
    a miss) and the cone index (N,) (-1 for a miss). No culling: use
    :func:`cast_rays` for a whole scene.
    """
    o, d = _rays(origins, dirs)
    xy = np.asarray(cone_xy, dtype=np.float64).reshape(-1, 2)
    n, m = d.shape[0], xy.shape[0]
    if m == 0 or n == 0:
        return np.full(n, np.inf), np.full(n, -1, dtype=np.int64)
    rb, rt, h = cone_dimensions(cone_class)
    ri = np.repeat(np.arange(n), m)
    ci = np.tile(np.arange(m), n)
    t = ray_frustum_pairs(o[ri], d[ri], xy[ci], rb[ci], rt[ci], h[ci],
                          ground_z).reshape(n, m)
    idx = np.argmin(t, axis=1)
    tmin = t[np.arange(n), idx]
    return tmin, np.where(np.isfinite(tmin), idx, -1)


def ray_box_pairs(o: np.ndarray, d: np.ndarray, center: np.ndarray,
                  yaw: np.ndarray, size: np.ndarray) -> np.ndarray:
    """
    Return ``t`` of each ray against its own box (element-wise, slab).

    ``o``, ``d`` (K, 3) rays; ``center`` (K, 3), ``yaw`` (K,), ``size``
    (K, 3) length, width, height. ``inf`` where a ray misses; a ray from
    inside hits its exit; a ray in a face's plane counts as hitting it.
    """
    half = size / 2.0
    c, s = np.cos(yaw), np.sin(yaw)
    rel = o - center
    lo = np.empty_like(rel)
    ld = np.empty_like(rel)
    lo[:, 0] = c * rel[:, 0] + s * rel[:, 1]
    lo[:, 1] = -s * rel[:, 0] + c * rel[:, 1]
    lo[:, 2] = rel[:, 2]
    ld[:, 0] = c * d[:, 0] + s * d[:, 1]
    ld[:, 1] = -s * d[:, 0] + c * d[:, 1]
    ld[:, 2] = d[:, 2]
    parallel = ld == 0.0
    inside = np.abs(lo) <= half
    safe = np.where(parallel, 1.0, ld)
    ta = (-half - lo) / safe
    tb = (half - lo) / safe
    # A ray parallel to a slab spans all t inside it and none outside.
    t_in = np.where(parallel, np.where(inside, -np.inf, np.inf),
                    np.minimum(ta, tb))
    t_out = np.where(parallel, np.where(inside, np.inf, -np.inf),
                     np.maximum(ta, tb))
    near = t_in.max(axis=1)
    far = t_out.min(axis=1)
    hit = (near <= far) & (far > T_EPS)
    return np.where(hit, np.where(near > T_EPS, near, far), np.inf)


def ray_boxes(origins: np.ndarray, dirs: np.ndarray, box_center: np.ndarray,
              box_yaw: np.ndarray, box_size: np.ndarray
              ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return the nearest hit of every ray against yaw-oriented boxes (slab).

    ``box_center`` (M, 3) centres, ``box_yaw`` (M,) rad, ``box_size``
    (M, 3) length, width, height (m). Returns ``t`` (N,) and box index
    (N,), ``inf``/-1 for a miss. A ray from inside a box hits its exit.
    No culling: use :func:`cast_rays` for a whole scene.
    """
    o, d = _rays(origins, dirs)
    centers = np.asarray(box_center, dtype=np.float64).reshape(-1, 3)
    yaws = np.asarray(box_yaw, dtype=np.float64).reshape(-1)
    sizes = np.asarray(box_size, dtype=np.float64).reshape(-1, 3)
    n, m = d.shape[0], centers.shape[0]
    if m == 0 or n == 0:
        return np.full(n, np.inf), np.full(n, -1, dtype=np.int64)
    ri = np.repeat(np.arange(n), m)
    bi = np.tile(np.arange(m), n)
    t = ray_box_pairs(o[ri], d[ri], centers[bi], yaws[bi],
                      sizes[bi]).reshape(n, m)
    idx = np.argmin(t, axis=1)
    tmin = t[np.arange(n), idx]
    return tmin, np.where(np.isfinite(tmin), idx, -1)


def _nearest_pairs(n: int, ri: np.ndarray, oi: np.ndarray, tp: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """Reduce (ray, object, t) pairs to the nearest t and object per ray."""
    hit = np.isfinite(tp)
    ri, oi, tp = ri[hit], oi[hit], tp[hit]
    best = np.full(n, np.inf)
    obj = np.full(n, -1, dtype=np.int64)
    if ri.size:
        # Sort by ray, then t: the first pair of each ray is its nearest
        # (no ufunc.at, which is slow on the older numpy of ROS distros).
        order = np.lexsort((tp, ri))
        rs = ri[order]
        first = order[np.concatenate(([True], rs[1:] != rs[:-1]))]
        best[ri[first]] = tp[first]
        obj[ri[first]] = oi[first]
    return best, obj


def _azimuth_pairs(dirs: np.ndarray, rel_xy: np.ndarray, radius: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return (ray index, cone index) pairs whose azimuths can overlap.

    ``rel_xy`` (C, 2) cone centres relative to the common ray origin,
    ``radius`` (C,) base radii. A cone at horizontal distance ``r`` is seen
    within ``asin(radius / r)`` of its azimuth; a cone whose base contains
    the origin is paired with every ray.
    """
    n = dirs.shape[0]
    dist = np.hypot(rel_xy[:, 0], rel_xy[:, 1])
    inside = dist <= radius * 1.001 + 1e-6
    ray_parts = []
    cone_parts = []
    if np.any(inside):
        ci = np.flatnonzero(inside)
        ray_parts.append(np.repeat(np.arange(n), ci.size))
        cone_parts.append(np.tile(ci, n))
    horiz = np.hypot(dirs[:, 0], dirs[:, 1]) > 1e-12
    rays = np.flatnonzero(horiz)
    cones = np.flatnonzero(~inside)
    if rays.size and cones.size:
        az = np.arctan2(dirs[rays, 1], dirs[rays, 0])
        order = np.argsort(az, kind='stable')
        az_sorted = az[order]
        k = rays.size
        ext = np.concatenate((az_sorted - 2 * np.pi, az_sorted,
                              az_sorted + 2 * np.pi))
        centre = np.arctan2(rel_xy[cones, 1], rel_xy[cones, 0])
        half = np.arcsin(np.clip(radius[cones] / dist[cones], 0.0, 1.0)) + 1e-9
        lo = np.searchsorted(ext, centre - half, side='left')
        hi = np.searchsorted(ext, centre + half, side='right')
        counts = hi - lo
        total = int(counts.sum())
        if total:
            starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
            ext_idx = starts + np.arange(total)
            ray_parts.append(rays[order[ext_idx % k]])
            cone_parts.append(np.repeat(cones, counts))
    if not ray_parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return (np.concatenate(ray_parts).astype(np.int64, copy=False),
            np.concatenate(cone_parts).astype(np.int64, copy=False))


def visible_cones(world: WorldGeometry, origin: np.ndarray,
                  max_range: float) -> np.ndarray:
    """Return the indices of standing cones within ``max_range`` (xy)."""
    xy = np.asarray(world.cone_xy, dtype=np.float64).reshape(-1, 2)
    if xy.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    up = np.asarray(world.cone_up, dtype=bool).reshape(-1)
    if up.shape[0] != xy.shape[0]:
        up = np.ones(xy.shape[0], dtype=bool)
    rb, _, _ = cone_dimensions(world.cone_class)
    dist = np.hypot(xy[:, 0] - origin[0], xy[:, 1] - origin[1])
    return np.flatnonzero(up & (dist - rb <= max_range))


def boxes_containing(world: WorldGeometry, point: np.ndarray) -> np.ndarray:
    """Return a mask (M,) of the boxes that contain ``point`` (3,)."""
    centers = np.asarray(world.box_center, dtype=np.float64).reshape(-1, 3)
    yaws = np.asarray(world.box_yaw, dtype=np.float64).reshape(-1)
    half = np.asarray(world.box_size, dtype=np.float64).reshape(-1, 3) / 2.0
    rel = np.asarray(point, dtype=np.float64)[None, :] - centers
    c, s = np.cos(yaws), np.sin(yaws)
    local = np.column_stack((c * rel[:, 0] + s * rel[:, 1],
                             -s * rel[:, 0] + c * rel[:, 1], rel[:, 2]))
    return np.all(np.abs(local) <= half, axis=1)


def visible_boxes(world: WorldGeometry, origin: np.ndarray,
                  max_range: float, skip_containing: bool = True
                  ) -> np.ndarray:
    """
    Return the indices of boxes whose bounding sphere is in range.

    With ``skip_containing`` boxes that contain ``origin`` are left out
    (a sensor inside its own vehicle's box does not see that box).
    """
    centers = np.asarray(world.box_center, dtype=np.float64).reshape(-1, 3)
    if centers.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    size = np.asarray(world.box_size, dtype=np.float64).reshape(-1, 3)
    dist = np.linalg.norm(centers - origin[None, :], axis=1)
    ok = dist - 0.5 * np.linalg.norm(size, axis=1) <= max_range
    if skip_containing:
        ok &= ~boxes_containing(world, origin)
    return np.flatnonzero(ok)


def cast_rays(world: WorldGeometry, origin: np.ndarray, dirs: np.ndarray,
              max_range: float = np.inf
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Cast rays from one origin against the ground, cones and boxes.

    ``origin`` (3,) in ``map``; ``dirs`` (N, 3) unit directions in ``map``.
    Only standing cones and boxes within ``max_range`` are considered and a
    cone is tested only against the rays in its azimuth window. Returns
    ``t`` (N,) distance in metres (``inf`` for no hit within
    ``max_range``), the kind of surface hit (``HIT_*``, (N,) uint8) and the
    index of the cone or box hit (-1 otherwise). Boxes that contain the
    origin are ignored, like an engine line trace that starts inside a
    mesh: a sensor mounted inside its own vehicle's box sees out of it.
    """
    check_world(world)
    o = np.asarray(origin, dtype=np.float64).reshape(-1)
    if o.shape != (3,):
        raise ValueError(f'origin must have shape (3,), got {o.shape}')
    _, d = _rays(o, dirs)
    n = d.shape[0]
    best = ray_ground(o, d, world.ground_z)
    kind = np.where(np.isfinite(best), HIT_GROUND, HIT_NONE).astype(np.uint8)
    index = np.full(n, -1, dtype=np.int64)
    cones = visible_cones(world, o, max_range)
    if cones.size and n:
        xy = np.asarray(world.cone_xy, dtype=np.float64)[cones]
        rb, rt, h = cone_dimensions(np.asarray(world.cone_class)[cones])
        ri, ci = _azimuth_pairs(d, xy - o[None, :2], rb)
        if ri.size:
            tp = ray_frustum_pairs(np.broadcast_to(o, (ri.size, 3)), d[ri],
                                   xy[ci], rb[ci], rt[ci], h[ci],
                                   world.ground_z)
            tc, cone_of_ray = _nearest_pairs(n, ri, ci, tp)
            closer = tc < best
            best = np.where(closer, tc, best)
            kind[closer] = HIT_CONE
            index[closer] = cones[cone_of_ray[closer]]
    boxes = visible_boxes(world, o, max_range)
    if boxes.size and n:
        centers = np.asarray(world.box_center, dtype=np.float64)[boxes]
        yaws = np.asarray(world.box_yaw, dtype=np.float64)[boxes]
        sizes = np.asarray(world.box_size, dtype=np.float64)[boxes]
        # A box is seen within the azimuth window of its footprint circle.
        ri, bi = _azimuth_pairs(d, centers[:, :2] - o[None, :2],
                                0.5 * np.hypot(sizes[:, 0], sizes[:, 1]))
        if ri.size:
            tp = ray_box_pairs(np.broadcast_to(o, (ri.size, 3)), d[ri],
                               centers[bi], yaws[bi], sizes[bi])
            tb, box_of_ray = _nearest_pairs(n, ri, bi, tp)
            closer = tb < best
            best = np.where(closer, tb, best)
            kind[closer] = HIT_BOX
            index[closer] = boxes[box_of_ray[closer]]
    beyond = best > max_range
    best[beyond] = np.inf
    kind[beyond] = HIT_NONE
    index[beyond] = -1
    return best, kind, index
