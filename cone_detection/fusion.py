# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Lidar + vision cone fusion and time alignment (no rclpy).

Lidar cones have precise positions but no colour; vision cones have colour
but a coarser position. :func:`fuse` pairs them by optimal assignment
(``scipy.optimize.linear_sum_assignment`` on the Euclidean distance, pairs
farther apart than ``gate`` are not allowed): a pair keeps the lidar
position and the vision class; unmatched lidar cones stay class unknown (0);
unmatched vision cones are kept only when ``keep_vision_only`` is set, with
their confidence scaled down.

Time alignment: :class:`VisionBuffer` keeps the recent vision detections and
returns the newest one within ``max_vision_age`` of a lidar stamp; when the
ego poses of both stamps are known (:class:`PoseHistory`, from odometry) the
vision cones are moved into the vehicle frame at the lidar stamp first.

The cone map (fusion's ``map_enabled`` mode, and the planner's) is
:class:`path_planning.cone_map.ConeMap`, one implementation for both.

Frames: detections in the vehicle frame (REP-103, metres), poses in ``map``
(x, y, yaw in metres/radians).
"""

from collections import deque
from dataclasses import dataclass, field
import math
from typing import Any, Deque, Mapping, Optional, Tuple

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_UNKNOWN
from hil_bridge.interface.frames import se2, transform_xy
import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

N_CLASSES = CONE_BIG_ORANGE + 1


@dataclass
class ConeSet:
    """
    Cones in one frame: positions, class ids and confidences.

    ``xyz`` (N, 3) m, ``class_id`` (N,) uint8, ``confidence`` (N,) in [0, 1].

    The constructor checks shapes and finiteness (``ValueError``); (N, 2)
    positions get z = 0.
    """

    xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    class_id: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.uint8))
    confidence: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.float32))

    def __post_init__(self) -> None:
        """Normalise dtypes and check shapes."""
        pts = np.asarray(self.xyz, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] not in (2, 3):
            raise ValueError(f'ConeSet: xyz must be (N, 2) or (N, 3), got '
                             f'shape {pts.shape}')
        if pts.shape[1] == 2:
            pts = np.column_stack((pts, np.zeros(pts.shape[0])))
        n = pts.shape[0]
        cls = np.asarray(self.class_id).ravel()
        conf = np.asarray(self.confidence, dtype=np.float32).ravel()
        if cls.shape[0] != n or conf.shape[0] != n:
            raise ValueError(f'ConeSet: {n} positions, {cls.shape[0]} class '
                             f'ids, {conf.shape[0]} confidences')
        if not np.all(np.isfinite(pts)):
            raise ValueError('ConeSet: positions must be finite')
        if n and (cls.min() < 0 or cls.max() >= N_CLASSES):
            raise ValueError(f'ConeSet: class ids must be 0..{N_CLASSES - 1}')
        self.xyz = pts
        self.class_id = cls.astype(np.uint8)
        self.confidence = np.clip(np.nan_to_num(conf, nan=0.0), 0.0, 1.0)

    def __len__(self) -> int:
        """Return the number of cones."""
        return int(self.xyz.shape[0])

    def subset(self, idx: np.ndarray) -> 'ConeSet':
        """Return the cones at ``idx``."""
        return ConeSet(self.xyz[idx], self.class_id[idx],
                       self.confidence[idx])


def associate(a_xy: np.ndarray, b_xy: np.ndarray, gate: float
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Pair points of ``a`` and ``b`` (N, 2+) minimising the total distance.

    Only pairs closer than ``gate`` (m) are allowed. Returns
    ``(pairs (K, 2) int, unmatched_a, unmatched_b)`` index arrays.
    """
    if not (gate > 0.0 and math.isfinite(gate)):
        raise ValueError(f'associate: gate must be finite and > 0, got {gate}')
    a = np.asarray(a_xy, dtype=np.float64)[:, :2]
    b = np.asarray(b_xy, dtype=np.float64)[:, :2]
    if a.shape[0] == 0 or b.shape[0] == 0:
        return (np.zeros((0, 2), dtype=np.int64), np.arange(a.shape[0]),
                np.arange(b.shape[0]))
    cost = cdist(a, b)
    big = gate * 1e3 + 1.0
    gated = np.where(cost <= gate, cost, big)
    rows, cols = linear_sum_assignment(gated)
    ok = gated[rows, cols] <= gate
    pairs = np.column_stack((rows[ok], cols[ok])).astype(np.int64)
    un_a = np.setdiff1d(np.arange(a.shape[0]), pairs[:, 0])
    un_b = np.setdiff1d(np.arange(b.shape[0]), pairs[:, 1])
    return pairs, un_a, un_b


@dataclass(frozen=True)
class FusionParams:
    """
    Fusion settings (metres, seconds).

    ``gate``: largest lidar-vision distance of a pair; ``keep_vision_only``:
    publish vision cones without a lidar partner; ``vision_only_scale``:
    their confidence factor; ``max_vision_age``: the largest stamp difference
    between a lidar scan and the vision detection used with it.
    """

    gate: float = 0.6
    keep_vision_only: bool = False
    vision_only_scale: float = 0.5
    max_vision_age: float = 0.15

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> 'FusionParams':
        """Build from node parameters (``config/cone_fusion.yaml``)."""
        return cls(gate=float(values['gate']),
                   keep_vision_only=bool(values['keep_vision_only']),
                   vision_only_scale=float(values['vision_only_scale']),
                   max_vision_age=float(values['max_vision_age']))

    def __post_init__(self) -> None:
        """Check the ranges; raise ``ValueError`` naming a bad field."""
        if not (self.gate > 0.0 and math.isfinite(self.gate)):
            raise ValueError(f'FusionParams.gate must be > 0, got {self.gate}')
        if not 0.0 <= self.vision_only_scale <= 1.0:
            raise ValueError('FusionParams.vision_only_scale must be in [0, 1]')
        if not (self.max_vision_age >= 0.0
                and math.isfinite(self.max_vision_age)):
            raise ValueError('FusionParams.max_vision_age must be >= 0')


def fuse(lidar: ConeSet, vision: Optional[ConeSet],
         params: FusionParams = FusionParams()) -> ConeSet:
    """
    Fuse lidar and vision cones of the same instant, same frame.

    A pair: lidar position, vision class, confidence ``1 - (1 - c_l)(1 -
    c_v)``. Lidar cones without a partner: class 0 (unknown) and their own
    confidence. Vision cones without a partner: dropped, or kept with
    ``vision_only_scale`` times their confidence. ``vision`` None or empty
    passes the lidar cones through as unknown.
    """
    n_l = len(lidar)
    cls = np.full(n_l, CONE_UNKNOWN, dtype=np.uint8)
    conf = lidar.confidence.astype(np.float32).copy()
    if vision is None or len(vision) == 0:
        return ConeSet(lidar.xyz.copy(), cls, conf)
    pairs, _, un_v = associate(lidar.xyz, vision.xyz, params.gate)
    li, vi = pairs[:, 0], pairs[:, 1]
    cls[li] = vision.class_id[vi]
    conf[li] = 1.0 - (1.0 - conf[li]) * (1.0 - vision.confidence[vi])
    xyz = lidar.xyz.copy()
    if params.keep_vision_only and un_v.size:
        xyz = np.vstack((xyz, vision.xyz[un_v]))
        cls = np.concatenate((cls, vision.class_id[un_v]))
        conf = np.concatenate((conf, params.vision_only_scale
                               * vision.confidence[un_v]))
    return ConeSet(xyz, cls, conf)


class PoseHistory:
    """
    Recent ego poses in ``map`` (from odometry) with interpolation.

    ``add(t, x, y, yaw)`` in time order; ``at(t)`` interpolates linearly
    (yaw on the circle) and returns None outside the stored span (plus
    ``slack`` seconds, held constant).
    """

    def __init__(self, horizon: float = 2.0, slack: float = 0.05) -> None:
        """Keep ``horizon`` seconds of poses."""
        self.horizon = float(horizon)
        self.slack = float(slack)
        self._buf: Deque[Tuple[float, float, float, float]] = deque()

    def add(self, t: float, x: float, y: float, yaw: float) -> None:
        """Store a pose; non-finite values are ignored, old ones dropped."""
        vals = (float(t), float(x), float(y), float(yaw))
        if not all(math.isfinite(v) for v in vals):
            return
        if self._buf and vals[0] < self._buf[-1][0]:
            self._buf.clear()  # time jumped back (sim reset)
        self._buf.append(vals)
        while self._buf and self._buf[0][0] < vals[0] - self.horizon:
            self._buf.popleft()

    def __len__(self) -> int:
        """Return the number of stored poses."""
        return len(self._buf)

    def at(self, t: float) -> Optional[Tuple[float, float, float]]:
        """Return (x, y, yaw) at ``t`` or None when ``t`` is not covered."""
        if not self._buf:
            return None
        arr = np.asarray(self._buf)
        ts = arr[:, 0]
        if t < ts[0] - self.slack or t > ts[-1] + self.slack:
            return None
        if t <= ts[0]:
            return tuple(arr[0, 1:])
        if t >= ts[-1]:
            return tuple(arr[-1, 1:])
        x = float(np.interp(t, ts, arr[:, 1]))
        y = float(np.interp(t, ts, arr[:, 2]))
        yaw = float(np.interp(t, ts, np.unwrap(arr[:, 3])))
        return x, y, yaw


class VisionBuffer:
    """Recent vision detections by stamp (s), newest last."""

    def __init__(self, size: int = 20) -> None:
        """Keep at most ``size`` detections."""
        self._buf: Deque[Tuple[float, ConeSet]] = deque(maxlen=int(size))

    def add(self, t: float, cones: ConeSet) -> None:
        """Store a detection; a stamp older than the newest resets."""
        if self._buf and t < self._buf[-1][0]:
            self._buf.clear()
        self._buf.append((float(t), cones))

    def newest_within(self, t: float, max_age: float
                      ) -> Optional[Tuple[float, ConeSet]]:
        """Return the newest (stamp, cones) with ``|stamp - t| <= max_age``."""
        for stamp, cones in reversed(self._buf):
            if abs(stamp - t) <= max_age:
                return stamp, cones
        return None


def align(cones: ConeSet, t_from: float, t_to: float,
          poses: Optional[PoseHistory]) -> ConeSet:
    """
    Move vehicle-frame cones seen at ``t_from`` into the frame at ``t_to``.

    Unchanged when no pose history covers both stamps.
    """
    if poses is None or len(cones) == 0 or t_from == t_to:
        return cones
    p_from, p_to = poses.at(t_from), poses.at(t_to)
    if p_from is None or p_to is None:
        return cones
    T = np.linalg.inv(se2(*p_to)) @ se2(*p_from)
    return ConeSet(transform_xy(T, cones.xyz), cones.class_id,
                   cones.confidence)
