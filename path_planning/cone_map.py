# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Local cone map from odometry, and the two track boundaries in it (no rclpy).

Frames: detections come in the vehicle frame at their stamp (REP-103, x
forward, y left, metres; rear-axle origin) together with the vehicle's
pose ``(x, y, yaw)`` in ``map`` at the same stamp (odometry); the map,
its cones and its boundaries are in ``map`` (metres, radians).

Accumulation (:meth:`ConeMap.update`): the detections are put into
``map``; each is paired with a map cone by optimal assignment
(:func:`cone_detection.fusion.associate`, at most ``merge_radius`` apart);
a paired cone moves to the running mean of its sightings (the last
``mean_window`` weigh most), gains one observation and a colour vote
(weighted by the detection's confidence); the others become new map
cones. A cone counts (is *confirmed*) after ``min_observations``
sightings. Misses are evidence too: a map cone well inside the sensor's
field (``max_range - miss_margin``, ``fov``) that no detection of an
update pairs with gains a miss; an unconfirmed cone missed
:data:`UNCONFIRMED_MISSES` times and more often than seen, or a
confirmed one missed more than
twice as often as seen plus :data:`CONFIRMED_MISSES`, is forgotten (a
false positive, even one seen twice by chance, does not stay; a real
cone missed one cycle in five stays). A boundary cone the car has
passed is kept; one ahead is forgotten with the gates that use it (the
walk goes again from there). Detections farther than ``max_range`` are not mapped (range
noise grows with distance). At most ``max_cones`` cones are kept: beyond
that the oldest unconfirmed ones are forgotten.

Boundaries (:meth:`ConeMap.boundaries`): the left and right boundary of
the lane the car drives in, each an ordered chain of map cones from the
start in driving direction, found by :mod:`path_planning.track_walk`
(colour where known, geometry and continuity where not: lidar-only maps
have no colours). Chain cones the car has driven past are final; the rest
is walked again at every update, so a cone seen later can correct it.
Cones of neighbouring track sections (side by side a few metres away)
never join a chain: each step of the walk keeps the lane's width.

This is the map the lap-2+ planner consumes: ``boundaries()`` gives the
ordered boundary points in ``map`` with per-cone observation counts;
:attr:`ConeMap.closed` says when the walk came back to the start (the
loop is complete).
"""

from dataclasses import dataclass
import math
from typing import Any, Optional, Tuple

from cone_detection.fusion import associate
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
import numpy as np
from path_planning.track_walk import advance_gate, seed_gate, stalled, walk, WalkParams, \
    WalkState

N_CLASSES = CONE_BIG_ORANGE + 1
#: misses after which an unconfirmed cone is forgotten
UNCONFIRMED_MISSES = 2
#: a confirmed cone is forgotten when missed more than 2 * seen + this
CONFIRMED_MISSES = 3
#: colour classes that vote (unknown sightings do not outvote a colour)
COLOURS = (CONE_BLUE, CONE_YELLOW, CONE_ORANGE, CONE_BIG_ORANGE)


@dataclass(frozen=True)
class ConeMapParams:
    """
    Settings of the cone map (metres, counts).

    ``merge_radius``: largest distance of a detection from the map cone it
    updates; ``min_observations``: sightings before a cone counts;
    ``max_range``: detections farther from the car are not mapped;
    ``mean_window``: the position is the mean of about this many latest
    sightings; ``max_cones``: memory bound; ``walk``: the boundary walk
    (:class:`path_planning.track_walk.WalkParams`); ``fov`` (rad, full
    angle) and ``max_range`` less ``miss_margin`` (m): where a map cone
    should have been seen (a miss when it was not, see :class:`ConeMap`).
    """

    merge_radius: float = 0.7
    min_observations: int = 3
    max_range: float = 20.0
    mean_window: int = 20
    max_cones: int = 4000
    walk: WalkParams = WalkParams()
    fov: float = math.radians(270.0)
    miss_margin: float = 1.5

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('merge_radius', 'max_range', 'fov', 'miss_margin'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'ConeMapParams.{name} must be finite and > 0, got {value}')
        for name in ('min_observations', 'mean_window', 'max_cones'):
            if int(getattr(self, name)) < 1:
                raise ValueError(f'ConeMapParams.{name} must be >= 1, got '
                                 f'{getattr(self, name)}')


@dataclass
class BoundaryLine:
    """
    One track boundary: ordered map cones in driving direction (``map``).

    ``xy`` (K, 2) positions (m); ``count`` (K,) observations of each cone;
    ``class_id`` (K,) its voted class (0 unknown); ``index`` (K,) its index
    in :meth:`ConeMap.cones`; the first ``n_final`` cones are final (the
    car has passed them), the others may still change at the next update.
    """

    xy: np.ndarray
    count: np.ndarray
    class_id: np.ndarray
    index: np.ndarray
    n_final: int = 0

    def __len__(self) -> int:
        """Return the number of cones of the line."""
        return int(self.xy.shape[0])


@dataclass
class MapCones:
    """
    Every map cone, with its class, count and boundary side.

    ``xy`` (M, 2) in ``map`` (m), ``class_id`` (M,) voted, ``count`` (M,)
    observations, ``side`` (M,) +1 left boundary, -1 right, 0 neither
    (yet), ``confirmed`` (M,) bool.
    """

    xy: np.ndarray
    class_id: np.ndarray
    count: np.ndarray
    side: np.ndarray
    confirmed: np.ndarray

    def __len__(self) -> int:
        """Return the number of map cones."""
        return int(self.xy.shape[0])


def _pose(pose: Any) -> Tuple[float, float, float]:
    try:
        x, y, yaw = (float(v) for v in pose)
    except (TypeError, ValueError):
        raise ValueError(f'cone map: pose must be (x, y, yaw), got {pose!r}') from None
    if not all(math.isfinite(v) for v in (x, y, yaw)):
        raise ValueError(f'cone map: pose must be finite, got {pose!r}')
    return x, y, yaw


def to_map(xy: np.ndarray, pose: Tuple[float, float, float]) -> np.ndarray:
    """Return vehicle-frame points (N, 2) in ``map`` for a pose (x, y, yaw)."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    return np.column_stack((x + c * xy[:, 0] - s * xy[:, 1],
                            y + s * xy[:, 0] + c * xy[:, 1]))


def to_vehicle(xy: np.ndarray, pose: Tuple[float, float, float]) -> np.ndarray:
    """Return ``map`` points (N, 2) in the vehicle frame of a pose (x, y, yaw)."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = xy[:, 0] - x, xy[:, 1] - y
    return np.column_stack((c * dx + s * dy, -s * dx + c * dy))


class ConeMap:
    """
    Cones accumulated in ``map`` and the lane's two boundaries.

    Usage, once per detection (vehicle frame) with the pose at its stamp::

        cmap = ConeMap()
        cmap.update(cones_xy, class_id, (x, y, yaw))
        left, right = cmap.boundaries()     # BoundaryLine each, in map

    ``update`` raises ``ValueError`` for malformed arrays or a non-finite
    pose; non-finite cone rows are dropped.
    """

    def __init__(self, params: ConeMapParams = ConeMapParams()) -> None:
        """Create an empty map."""
        self.params = params
        self.reset()

    def reset(self) -> None:
        """Forget every cone and both boundaries."""
        self.xy = np.zeros((0, 2))
        self.count = np.zeros(0, dtype=np.int64)
        self.votes = np.zeros((0, N_CLASSES))
        self.last_seen = np.zeros(0, dtype=np.int64)
        self.misses = np.zeros(0, dtype=np.int64)
        self.updates = 0
        self.state = WalkState()
        #: confirmed flag and colour of every cone at the last walk
        self._walked = (np.zeros(0, bool), np.zeros(0, np.uint8))
        self.pose: Optional[Tuple[float, float, float]] = None

    def __len__(self) -> int:
        """Return the number of map cones (confirmed or not)."""
        return int(self.xy.shape[0])

    @property
    def closed(self) -> bool:
        """Return True once the boundary walk has come back to its start."""
        return self.state.closed

    # ------------------------------------------------------------ accumulate
    def _accumulate(self, obs: np.ndarray, cls: np.ndarray, conf: np.ndarray,
                    pose: Tuple[float, float, float]) -> int:
        p = self.params
        # only map cones near the detections can pair with them
        near = np.zeros(len(self), bool)
        if obs.shape[0] and len(self):
            lo, hi = obs.min(axis=0) - p.merge_radius, obs.max(axis=0) + p.merge_radius
            near = ((self.xy >= lo) & (self.xy <= hi)).all(axis=1)
        cand = np.flatnonzero(near)
        pairs, _, new = associate(self.xy[cand], obs, p.merge_radius)
        mi, oi = cand[pairs[:, 0]], pairs[:, 1]
        self.count[mi] += 1
        weight = 1.0 / np.minimum(self.count[mi], p.mean_window)
        self.xy[mi] += (obs[oi] - self.xy[mi]) * weight[:, None]
        np.add.at(self.votes, (mi, cls[oi]), conf[oi])
        self.last_seen[mi] = self.updates
        self._count_misses(mi, pose)
        if new.size:
            votes = np.zeros((new.size, N_CLASSES))
            votes[np.arange(new.size), cls[new]] = conf[new]
            self.xy = np.vstack((self.xy, obs[new]))
            self.count = np.concatenate((self.count, np.ones(new.size, np.int64)))
            self.votes = np.vstack((self.votes, votes))
            self.last_seen = np.concatenate((self.last_seen,
                                             np.full(new.size, self.updates)))
            self.misses = np.concatenate((self.misses, np.zeros(new.size, np.int64)))
            self._bound()
        return int(new.size)

    def _count_misses(self, seen: np.ndarray, pose: Tuple[float, float, float]) -> None:
        """Count a miss for every cone in the field of view not in ``seen``; forget the false."""
        p = self.params
        if len(self) == 0:
            return
        local = to_vehicle(self.xy, pose)
        rng = np.hypot(local[:, 0], local[:, 1])
        view = (rng <= p.max_range - p.miss_margin) & \
            (np.abs(np.arctan2(local[:, 1], local[:, 0])) <= 0.5 * p.fov)
        view[seen] = False
        self.misses[view] += 1
        confirmed = self.count >= p.min_observations
        false = np.where(confirmed, self.misses > 2 * self.count + CONFIRMED_MISSES,
                         (self.misses >= UNCONFIRMED_MISSES) & (self.misses > self.count))
        if false.any():
            self._forget(false)

    def _forget(self, drop: np.ndarray) -> None:
        """
        Forget the cones ``drop`` (M,) marks, except boundary cones the car has passed.

        A boundary cone ahead of the car is forgotten with the gates from
        the first one that uses it (the walk goes on from there).
        """
        st = self.state
        final = set(st.left[:st.final_left]) | set(st.right[:st.final_right])
        if final:
            drop = drop.copy()
            drop[list(final)] = False
        chain = [i for i in np.flatnonzero(drop) if i in st.left or i in st.right]
        if chain and st.gates:
            bad = {int(i) for i in chain}
            first = next((k for k, (nl, nr) in enumerate(st.gates)
                          if bad & set(st.left[:nl]) or bad & set(st.right[:nr])), None)
            if first is not None and first > 0:
                st.truncate(max(first - 1, 0))
                st.closed = False
            elif first == 0:
                # the seed gate itself: walk again from scratch
                self.state = st = WalkState()
        if not drop.any():
            return
        keep = ~drop
        remap = np.cumsum(keep) - 1
        self.xy, self.count = self.xy[keep], self.count[keep]
        self.votes, self.last_seen = self.votes[keep], self.last_seen[keep]
        self.misses = self.misses[keep]
        st.remap(remap, keep)
        n = self._walked[0].size
        self._walked = tuple(a[keep[:n]] for a in self._walked)

    def _bound(self) -> None:
        """Forget the oldest unconfirmed cones beyond ``max_cones``."""
        extra = len(self) - self.params.max_cones
        if extra <= 0:
            return
        unconfirmed = np.flatnonzero(self.count < self.params.min_observations)
        drop = unconfirmed[np.argsort(self.last_seen[unconfirmed], kind='stable')][:extra]
        if drop.size == 0:
            return
        mask = np.zeros(len(self), bool)
        mask[drop] = True
        self._forget(mask)

    def update(self, cones_vehicle: Any, class_id: Any, pose: Any,
               confidence: Any = None) -> int:
        """
        Add one detection taken at ``pose``; return how many cones are new.

        ``cones_vehicle`` (N, 2) or (N, 3) in the vehicle frame (m);
        ``class_id`` (N,) contract classes; ``pose`` (x, y, yaw) in ``map``
        (m, rad) at the detection's stamp; ``confidence`` (N,) in [0, 1]
        (None: 1). Then the boundaries are walked again from the car.
        """
        pose = _pose(pose)
        arr = np.asarray(cones_vehicle, dtype=np.float64)
        if arr.size == 0:
            arr = np.zeros((0, 2))
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError(f'cone map: cones must be (N, 2) or (N, 3), got shape {arr.shape}')
        n = arr.shape[0]
        cls = np.asarray(class_id).reshape(-1) if n else np.zeros(0, np.int64)
        if cls.shape != (n,):
            raise ValueError(f'cone map: {n} cones but {cls.shape[0]} class ids')
        conf = np.ones(n) if confidence is None else \
            np.asarray(confidence, dtype=np.float64).reshape(-1)
        if conf.shape != (n,):
            raise ValueError(f'cone map: {n} cones but {conf.shape[0]} confidences')
        cls = np.where((cls >= 0) & (cls < N_CLASSES), cls, CONE_UNKNOWN).astype(np.int64)
        conf = np.clip(np.nan_to_num(conf, nan=0.0), 0.0, 1.0)
        xy = arr[:, :2]
        keep = np.isfinite(xy).all(axis=1) & (np.hypot(xy[:, 0], xy[:, 1])
                                              <= self.params.max_range)
        self.updates += 1
        self.pose = pose
        added = self._accumulate(to_map(xy[keep], pose), cls[keep], conf[keep], pose)
        self._walk(pose)
        return added

    # --------------------------------------------------------------- queries
    def colours(self) -> np.ndarray:
        """Return (M,) the voted class of every map cone (0 without a colour vote)."""
        if len(self) == 0:
            return np.zeros(0, np.uint8)
        colour = self.votes[:, 1:]
        return np.where(colour.max(axis=1) > 0.0, colour.argmax(axis=1) + 1,
                        CONE_UNKNOWN).astype(np.uint8)

    def confirmed(self) -> np.ndarray:
        """Return (M,) True for the cones seen at least ``min_observations`` times."""
        return self.count >= self.params.min_observations

    def cones(self) -> MapCones:
        """Return every map cone with its class, count and boundary side."""
        side = np.zeros(len(self), np.int8)
        side[self.state.left] = 1
        side[self.state.right] = -1
        return MapCones(self.xy.copy(), self.colours(), self.count.copy(), side,
                        self.confirmed())

    def _line(self, ids: list, n_final: int) -> BoundaryLine:
        idx = np.asarray(ids, dtype=np.int64)
        return BoundaryLine(self.xy[idx].copy(), self.count[idx].copy(),
                            self.colours()[idx] if idx.size else np.zeros(0, np.uint8),
                            idx, int(n_final))

    def boundaries(self) -> Tuple[BoundaryLine, BoundaryLine]:
        """
        Return the (left, right) boundary of the lane, ordered, in ``map``.

        Both start at the first cones beside the car's first pose and run
        in driving direction; empty until the walk has been seeded (cones
        on both sides of the car).
        """
        st = self.state
        return (self._line(st.left, st.final_left), self._line(st.right, st.final_right))

    def cones_in_vehicle(self, pose: Any, max_range: float = 25.0,
                         confirmed_only: bool = True
                         ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """
        Return map cones near ``pose`` in its vehicle frame.

        ``(xy (K, 2) m, class_id (K,), count (K,))`` of the (confirmed)
        cones within ``max_range`` metres of the pose (x, y, yaw).
        """
        pose = _pose(pose)
        local = to_vehicle(self.xy, pose)
        keep = np.hypot(local[:, 0], local[:, 1]) <= max_range
        if confirmed_only:
            keep &= self.confirmed()
        return local[keep], self.colours()[keep], self.count[keep]

    # ------------------------------------------------------------------ walk
    def _walk(self, pose: Tuple[float, float, float]) -> None:
        """Seed, advance and re-walk the boundaries from the car."""
        ok = self.confirmed()
        if not ok.any():
            return
        colours = self.colours()
        wp = self.params.walk
        st = self.state
        if stalled(st, self.xy, pose, wp):
            self.state = st = WalkState()
        if not st.gates:
            seed_gate(st, self.xy, colours, ok, pose, wp)
            if not st.gates:
                return
        advance_gate(st, self.xy, pose, wp)
        was_ok, was_col = self._walked
        n = was_ok.size
        fresh = np.ones(len(self), bool)
        fresh[:n] = (ok[:n] != was_ok) | (colours[:n] != was_col)
        fresh &= ok
        walk(st, self.xy, colours, ok, pose, wp, fresh)
        self._walked = (ok, colours)
