# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The car's lane from the local cone map: its cones, its corridor, its centre.

Pure numpy on a :class:`path_planning.cone_map.ConeMap` (no rclpy). The
map's boundary walk (:mod:`path_planning.track_walk`) has put every map
cone that bounds the car's lane into the left or the right chain, colour
where known and geometry plus continuity where not. :func:`lane_view`
turns the part of the lane near the car into the vehicle frame of a pose
(REP-103, x forward, y left, metres, rear-axle origin):

* ``cones`` the chain cones within ``reach`` metres, with a *side class*:
  a left chain cone is given as blue, a right one as yellow (big orange
  and orange cones too), so CONEDRIVE's colour rule (a left cone must
  stay left of the path) holds for lidar-only maps as well: an arc
  through a gap of a boundary, or across it into the section beside,
  passes a cone on its wrong side and is blocked;
* ``corridor`` the polygon left chain + reversed right chain from a few
  gates behind the car to the end of the walk: detections outside it
  lie beyond the lane's boundary (a neighbouring section, the infield,
  the far leg of a hairpin) and are ignored by :func:`inside`;
* ``path`` the centre of the lane ahead: the midpoints of the walk's
  gates from the car's gate on, smoothed (a gate between staggered cones
  is skewed), starting at the car.
"""

from dataclasses import dataclass, field
import math
from typing import Any, Optional, Tuple

from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
import numpy as np
from path_planning.cone_map import ConeMap, to_vehicle

#: gates behind the car's current gate kept in the corridor
GATES_BEHIND = 2


@dataclass
class LaneView:
    """
    The lane near the car in its vehicle frame (metres).

    ``cones`` (K, 2) chain cones and ``side_class`` (K,) blue for the left
    chain, yellow for the right; ``corridor`` (P, 2) the lane polygon;
    ``path`` (Q, 2) the lane centre ahead from the car; ``length`` (m)
    the walked lane ahead of the car; ``closed`` the walk's loop closed;
    ``centre`` (R, 2) the smoothed gate midpoints from a few gates behind
    the car (what :func:`track_path` follows); ``left`` / ``right`` the
    chains' cones of those gates in driving order.
    """

    cones: np.ndarray
    side_class: np.ndarray
    corridor: np.ndarray
    path: np.ndarray
    length: float
    closed: bool = False
    centre: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    left: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    right: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))


def _gate_range(st: Any, ahead: int) -> np.ndarray:
    """Return the gate indices from a few behind the current one, ``ahead`` beyond it."""
    n = len(st.gates)
    lo = st.current - GATES_BEHIND
    hi = st.current + ahead
    if st.closed:
        return np.arange(lo, min(hi, lo + n - 1) + 1) % n
    return np.arange(max(lo, 0), min(hi, n - 1) + 1)


def lane_view(cmap: ConeMap, pose: Tuple[float, float, float], reach: float = 25.0,
              max_gates: int = 80, smooth: int = 0) -> Optional[LaneView]:
    """
    Return the lane near ``pose`` (x, y, yaw in ``map``), None before the walk starts.

    ``reach`` (m) how far from the car chain cones count; ``max_gates``
    gates ahead of the current one at most; ``smooth`` half width of the
    moving average over the gate midpoints (gates).
    """
    st = cmap.state
    if not st.gates:
        return None
    xy = cmap.xy
    gates = _gate_range(st, max_gates)
    li, ri = st.gate_cones(gates)
    # the chains' cones of these gates, in order, without repeats
    left = list(dict.fromkeys(li.tolist()))
    right = list(dict.fromkeys(ri.tolist()))
    gl, gr = to_vehicle(xy[li], pose), to_vehicle(xy[ri], pose)
    mid = 0.5 * (gl + gr)
    if smooth > 0 and len(mid) > 2 * smooth + 1:
        k = np.ones(2 * smooth + 1) / (2 * smooth + 1)
        pad = np.vstack([np.repeat(mid[:1], smooth, 0), mid, np.repeat(mid[-1:], smooth, 0)])
        mid = np.column_stack([np.convolve(pad[:, 0], k, 'valid'),
                               np.convolve(pad[:, 1], k, 'valid')])
    # the lane centre from the car on: from the nearest midpoint of the car's
    # gate or one after it (never a gate behind the car: a stalled walk ends
    # at the car's gate, and its lane then has no length), or the one after
    # that when it is behind the car (a hairpin's far leg may lie behind the
    # car's heading: it stays in the path)
    own = int(np.flatnonzero(gates == st.current % len(st.gates))[0])
    j = own + int(np.argmin(np.hypot(mid[own:, 0], mid[own:, 1])))
    if mid[j, 0] <= 0.0:
        j += 1
    path = np.vstack([np.zeros((1, 2)), mid[j:]])
    seg = np.hypot(*np.diff(path, axis=0).T)
    length = float(seg.sum())
    if path.shape[0] < 2 or path[1, 0] <= 0.0:
        # every gate of the walk lies behind the car (the walk stalled while
        # the car drove on): the lane leads nowhere ahead, it has no length
        length = 0.0
    lv = to_vehicle(xy[left], pose)
    rv = to_vehicle(xy[right], pose)
    cones = np.vstack([lv, rv])
    side = np.concatenate([np.full(len(lv), CONE_BLUE, np.uint8),
                           np.full(len(rv), CONE_YELLOW, np.uint8)])
    near = np.hypot(cones[:, 0], cones[:, 1]) <= reach
    corridor = np.vstack([lv, rv[::-1]])
    return LaneView(cones=cones[near], side_class=side[near], corridor=corridor, path=path,
                    length=length, closed=bool(st.closed), centre=mid, left=lv,
                    right=rv)


def inside(polygon: np.ndarray, pts: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """
    Return (N,) True for the points inside ``polygon`` (P, 2) or within ``margin`` of it.

    Even-odd rule (a ring of the lane may touch itself at a hairpin's
    apex: the overlap then counts as outside, which only drops cones
    there from the obstacle check; the chain cones are kept anyway).
    """
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    if len(polygon) < 3 or pts.shape[0] == 0:
        return np.zeros(pts.shape[0], bool)
    a = polygon
    b = np.roll(polygon, -1, axis=0)
    px, py = pts[:, 0][:, None], pts[:, 1][:, None]
    ay, by = a[None, :, 1], b[None, :, 1]
    ax, bx = a[None, :, 0], b[None, :, 0]
    cross = (ay > py) != (by > py)
    with np.errstate(divide='ignore', invalid='ignore'):
        xint = ax + (py - ay) * (bx - ax) / (by - ay)
    hit = cross & (px < xint)
    out = (np.count_nonzero(hit, axis=1) % 2) == 1
    if margin > 0.0:
        d = b - a
        ll = np.maximum(np.einsum('ij,ij->i', d, d), 1e-12)
        t = np.clip(((px - ax) * d[None, :, 0] + (py - ay) * d[None, :, 1]) / ll[None], 0.0, 1.0)
        dist = np.hypot(ax + t * d[None, :, 0] - px, ay + t * d[None, :, 1] - py).min(axis=1)
        out |= dist <= margin
    return out


def lane_cones(view: LaneView, xy: np.ndarray, cls: np.ndarray, merge: float = 0.7,
               margin: float = 0.3) -> Tuple[np.ndarray, np.ndarray, int]:
    """
    Return the cones that count for the lane: ``(xy, class, n_ignored)``.

    The lane's chain cones (side classes) plus the detections ``xy`` (N, 2)
    inside the corridor (within ``margin``) that are no chain cone (none
    within ``merge`` m): an obstacle in the lane still blocks. Detections
    beyond the lane's boundary are ignored and counted.
    """
    if xy.shape[0] == 0:
        return view.cones, view.side_class, 0
    keep = inside(view.corridor, xy, margin)
    if view.cones.shape[0] and keep.any():
        d = np.hypot(*(xy[:, None] - view.cones[None]).transpose(2, 0, 1)).min(axis=1)
        keep &= d > merge
    n_chain_like = 0
    if view.cones.shape[0]:
        d = np.hypot(*(xy[:, None] - view.cones[None]).transpose(2, 0, 1)).min(axis=1)
        n_chain_like = int(np.count_nonzero(d <= merge))
    n_ignored = int(xy.shape[0] - np.count_nonzero(keep) - n_chain_like)
    return (np.vstack([view.cones, xy[keep]]),
            np.concatenate([view.side_class, np.asarray(cls)[keep].astype(np.uint8)]),
            max(n_ignored, 0))


def track_path(path: np.ndarray, speed: float, pursuit: Any, step: float = 0.1,
               span: float = 1.5, gain: float = 0.25, preview: float = 0.15,
               kappa: Optional[np.ndarray] = None) -> Tuple[float, float, float, float]:
    """
    Return ``(delta, kappa, lateral_error, heading_error)`` to follow ``path``.

    ``path`` (P, 2) in the vehicle frame from the car (m); ``speed`` (m/s);
    ``pursuit`` a :class:`path_planning.pure_pursuit.PursuitParams`
    (wheelbase, steering limit, ``ld_min`` / ``ld_max``; the feedback
    length is ``l = ld_min + gain * speed`` within them). The curvature
    is the path's own ``preview`` s ahead of the car's foot point (the
    steering lags; feed-forward from points ``span`` m either side) plus a
    critically damped feedback
    on the lateral and heading error, ``kappa_path - e / l^2 - 2 sin(th) / l``
    (the raceline follower's law): unlike pure pursuit alone it does not
    cut a hairpin on entry. ``e`` > 0: the car is left of the path; ``th``
    > 0: it heads left of it. ``kappa`` (P,) the path's own curvature at
    its vertices, when known (a planned line), replaces the three-point
    estimate.
    """
    from hil_bridge.interface.speed_profile import resample_polyline
    path = np.asarray(path, dtype=np.float64)
    if path.ndim != 2 or path.shape[0] < 2 or not np.any(np.diff(path, axis=0)):
        return 0.0, 0.0, 0.0, 0.0              # no path to follow (a point, or none)
    pts = resample_polyline(path, False, step)
    if pts.shape[0] < 3:
        return 0.0, 0.0, 0.0, 0.0
    d = np.hypot(pts[:, 0], pts[:, 1])
    i = int(np.argmin(d[:-1]))
    tang = pts[i + 1] - pts[i]
    seg = max(float(np.hypot(*tang)), 1e-9)
    rel = -pts[i]
    lat = float((tang[0] * rel[1] - tang[1] * rel[0]) / seg)
    head = -math.atan2(tang[1], tang[0])
    m = max(int(round(span / step)), 1)
    ip = min(i + int(round(max(speed, 0.0) * preview / step)), pts.shape[0] - 1)
    a, b = max(ip - m, 0), min(ip + m, pts.shape[0] - 1)
    c = min(max(ip, a + 1), b - 1) if b - a >= 2 else ip
    k_ff = 0.0
    if kappa is not None and len(kappa) == len(path) and len(path) >= 2:
        s_path = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(path, axis=0).T))])
        k_ff = float(np.interp(ip * (s_path[-1] / max(pts.shape[0] - 1, 1)), s_path, kappa))
    elif b - a >= 2:
        p0, p1, p2 = pts[a], pts[c], pts[b]
        u, v = p1 - p0, p2 - p1
        cross = u[0] * v[1] - u[1] * v[0]
        den = np.hypot(*u) * np.hypot(*v) * np.hypot(*(p2 - p0))
        k_ff = float(2.0 * cross / den) if den > 1e-9 else 0.0
    v = abs(float(speed)) if math.isfinite(speed) else 0.0
    ell = min(max(pursuit.ld_min + gain * v, pursuit.ld_min), pursuit.ld_max)
    kappa = k_ff - lat / (ell * ell) - 2.0 * math.sin(head) / ell
    delta = math.atan(pursuit.wheelbase * kappa)
    delta = min(max(delta, -pursuit.max_steer), pursuit.max_steer)
    return delta, math.tan(delta) / pursuit.wheelbase, lat, head
