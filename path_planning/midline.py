# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Track midline from coloured cones (Delaunay triangulation, no rclpy).

Vehicle frame, REP-103 (x forward, y left, metres; rear-axle origin).
Blue cones bound the track on the left, yellow on the right; small orange
and unknown cones are left out (they mark lanes and exits, not the two
boundaries). Big orange cones stand on both boundaries at the timing lines
(where they replace blue and yellow ones): with ``use_big_orange`` each
takes the side of its nearest blue or yellow cone.

Method:

1. Keep the finite blue/yellow cones within ``max_range`` and not more
   than ``behind`` metres behind the rear axle; triangulate them
   (``scipy.spatial.Delaunay``).
2. Every triangle edge joining a blue and a yellow cone, no longer than
   ``max_width`` and no shorter than ``min_width``, crosses the track: its
   midpoint is a midline point (a node).
3. A triangle with two such edges links their midpoints: along a track
   the triangles form a strip, so the links chain the midpoints in track
   order. A missing cone only merges two triangles into a wider one: the
   chain goes on.
4. The car is linked to the nearest midpoint ahead (``x > 0``); Dijkstra
   (``scipy.sparse.csgraph``) from the car gives every reachable
   midpoint's distance along the chain, and the path is the chain to the
   farthest one within ``max_length`` (a spurious side branch is shorter
   than the track's own chain, so it is not chosen). Midpoints behind the
   rear axle are dropped.
"""

from dataclasses import dataclass
import math
from typing import Any

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_YELLOW
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import Delaunay

STATUS_OK = 'ok'
STATUS_TOO_FEW = 'too_few_cones'
STATUS_NO_PATH = 'no_path'


@dataclass(frozen=True)
class MidlineParams:
    """
    Limits of the midline extraction (metres).

    ``max_width`` / ``min_width`` accepted length of a blue-yellow edge;
    ``max_range`` cones farther are ignored; ``behind`` how far behind the
    rear axle cones still help the triangulation; ``max_length`` path
    length kept; ``min_points`` fewest midpoints for a usable path;
    ``start_radius`` farthest first midpoint from the car;
    ``use_big_orange`` give big orange cones the side of their nearest
    blue/yellow neighbour.
    """

    max_width: float = 7.0
    min_width: float = 1.5
    max_range: float = 20.0
    behind: float = 3.0
    max_length: float = 25.0
    min_points: int = 2
    start_radius: float = 8.0
    use_big_orange: bool = True

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('max_width', 'max_range', 'max_length', 'start_radius'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'MidlineParams.{name} must be finite and > 0,'
                                 f' got {value}')
        for name in ('min_width', 'behind'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'MidlineParams.{name} must be finite and >= '
                                 f'0, got {value}')
        if self.min_width >= self.max_width:
            raise ValueError('MidlineParams.min_width must be < max_width')
        if int(self.min_points) < 1:
            raise ValueError('MidlineParams.min_points must be >= 1')


@dataclass
class MidlineResult:
    """
    Output of :func:`midline`.

    ``status`` ``'ok'``, ``'too_few_cones'`` or ``'no_path'``; ``path``
    (P, 2) midpoints ordered forward from the car (vehicle frame, m; empty
    unless ok); ``nodes`` (Q, 2) every midpoint found; ``length`` path
    length (m) from the car; ``n_blue`` / ``n_yellow`` cones used;
    ``n_dropped`` non-finite cones ignored.
    """

    status: str
    path: np.ndarray
    nodes: np.ndarray
    length: float = 0.0
    n_blue: int = 0
    n_yellow: int = 0
    n_dropped: int = 0

    @property
    def ok(self) -> bool:
        """Return True when a usable path was found."""
        return self.status == STATUS_OK


def _inputs(cones_xy: Any, class_id: Any) -> 'tuple[np.ndarray, np.ndarray]':
    xy = np.asarray(cones_xy, dtype=np.float64)
    cls = np.asarray(class_id)
    if xy.size == 0:
        xy = np.zeros((0, 2))
    if xy.ndim != 2 or xy.shape[1] < 2:
        raise ValueError(f'midline: cones must be an (N, 2) or (N, 3) array, '
                         f'got shape {xy.shape}')
    if cls.shape != (xy.shape[0],):
        raise ValueError(f'midline: class_id must have shape ({xy.shape[0]},),'
                         f' got {cls.shape}')
    return xy[:, :2], cls


def midline(cones_xy: Any, class_id: Any,
            params: MidlineParams = MidlineParams()) -> MidlineResult:
    """
    Return the track midline ahead of the car (see module docstring).

    ``cones_xy`` (N, 2) or (N, 3) cone positions in the vehicle frame (m);
    ``class_id`` (N,) contract class ids (1 blue, 2 yellow; others are
    ignored). Non-finite cones are dropped and counted. Never raises on
    degenerate geometry: returns a non-ok status instead.
    """
    xy, cls = _inputs(cones_xy, class_id)
    finite = np.isfinite(xy).all(axis=1)
    n_dropped = int(xy.shape[0] - np.count_nonzero(finite))
    near = finite & (np.einsum('ij,ij->i', xy, xy) <= params.max_range ** 2)
    near &= xy[:, 0] >= -params.behind
    blue = near & (cls == CONE_BLUE)
    yellow = near & (cls == CONE_YELLOW)
    n_blue, n_yellow = int(np.count_nonzero(blue)), int(np.count_nonzero(yellow))
    empty = np.zeros((0, 2))

    def fail(status: str, nodes: np.ndarray = empty) -> MidlineResult:
        return MidlineResult(status=status, path=empty, nodes=nodes,
                             n_blue=n_blue, n_yellow=n_yellow,
                             n_dropped=n_dropped)

    if n_blue < 1 or n_yellow < 1 or n_blue + n_yellow < 3:
        return fail(STATUS_TOO_FEW)
    left = blue.copy()
    use = blue | yellow
    big = near & (cls == CONE_BIG_ORANGE)
    if params.use_big_orange and big.any():
        d = np.linalg.norm(xy[big][:, None] - xy[use][None], axis=2)
        left[big] = blue[use][np.argmin(d, axis=1)]
        use = use | big
    pts = xy[use]
    side = left[use]
    try:
        # QJ (joggled input): always simplicial output, and 3-4x faster than
        # the default on regularly placed (co-circular) cones.
        simplices = Delaunay(pts, qhull_options='QJ').simplices
    except (RuntimeError, ValueError):  # QhullError is a RuntimeError
        return fail(STATUS_TOO_FEW)
    n = pts.shape[0]
    # (T, 3, 2) vertex pairs of every triangle edge.
    edges = simplices[:, [[0, 1], [1, 2], [2, 0]]]
    a, b = edges[..., 0], edges[..., 1]
    length = np.linalg.norm(pts[a] - pts[b], axis=2)
    valid = (side[a] != side[b]) & (length <= params.max_width) & (
        length >= params.min_width)
    keys = np.where(valid, np.minimum(a, b) * n + np.maximum(a, b), -1)
    uniq, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(keys.shape)
    offset = 1 if uniq.size and uniq[0] == -1 else 0
    node_keys = uniq[offset:]
    if node_keys.size == 0:
        return fail(STATUS_NO_PATH)
    node_xy = 0.5 * (pts[node_keys // n] + pts[node_keys % n])
    ahead = node_xy[:, 0] > 0.0
    node_id = inverse - offset  # -1 where not a node
    # Links: triangles with exactly two valid crossing edges.
    linked = np.count_nonzero(valid, axis=1) == 2
    pair = np.sort(np.where(valid[linked], node_id[linked], -1), axis=1)[:, 1:]
    pair = pair[ahead[pair[:, 0]] & ahead[pair[:, 1]]]
    cand = np.flatnonzero(ahead)
    if cand.size == 0:
        return fail(STATUS_NO_PATH, node_xy)
    dist0 = np.linalg.norm(node_xy[cand], axis=1)
    start = int(cand[np.argmin(dist0)])
    if dist0.min() > params.start_radius:
        return fail(STATUS_NO_PATH, node_xy)
    m = node_xy.shape[0]
    car = m  # the car is node m
    w = np.linalg.norm(node_xy[pair[:, 0]] - node_xy[pair[:, 1]], axis=1)
    rows = np.concatenate([pair[:, 0], [car]])
    cols = np.concatenate([pair[:, 1], [start]])
    weights = np.concatenate([w, [float(dist0.min())]]) + 1e-9
    graph = coo_matrix((weights, (rows, cols)), shape=(m + 1, m + 1)).tocsr()
    dist, pred = dijkstra(graph, directed=False, indices=car,
                          return_predecessors=True)
    dist = dist[:m]
    reach = np.isfinite(dist)
    within = reach & (dist <= params.max_length)
    pool = within if within.any() else reach
    target = int(np.flatnonzero(pool)[np.argmax(dist[pool])])
    chain = []
    node = target
    while node != car and node >= 0 and len(chain) <= m:
        chain.append(node)
        node = int(pred[node])
    chain.reverse()
    if len(chain) < int(params.min_points):
        return fail(STATUS_NO_PATH, node_xy)
    return MidlineResult(status=STATUS_OK, path=node_xy[chain], nodes=node_xy,
                         length=float(dist[target]), n_blue=n_blue,
                         n_yellow=n_yellow, n_dropped=n_dropped)
