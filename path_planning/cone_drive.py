# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CONEDRIVE: the HIL paper's Algorithm 3 as a pure, vectorised function.

Geometry (vehicle frame, REP-103: x forward, y left, metres, radians; the
origin is the rear-axle centre as in ``hil_bridge.interface.vehicle_profile``)
--------------------------------------------------------------------
A steering angle ``delta`` (> 0 = left) gives the curvature
``k = tan(delta) / L`` (L the wheelbase) and, in a steady turn, the rear
axle moves on a circle of radius ``R = 1 / k`` about the instantaneous
centre ``(0, R)`` (kinematic bicycle model, rear-axle reference). The body,
a rectangle from ``-rear_overhang`` to ``front`` along x and ``+-w`` along
y, rotating rigidly about that centre sweeps the **annulus** between

* ``r_in = |R| - w`` (the inner side of the rear axle line), and
* ``r_out = sqrt((|R| + w)^2 + front^2)`` (the outer front corner),

where ``w = width / 2 + margin + cone_radius`` (half the vehicle width, a
safety margin and the cone's base radius, so cones can be treated as
points) and ``front`` is the distance from the rear axle to the front
bumper. A cone at distance ``rho`` from the centre lies in the swept band
iff ``r_in <= rho <= r_out``. Both tests are linear in ``|k|`` (no
division by ``k``, so ``delta = 0`` is the band ``|y| <= w`` of the
straight line):

* ``rho <= r_out``  <=>  ``|k| (x^2 + y^2 - w^2 - front^2) <= 2 (w + s y)``
* ``rho >= r_in``   <=>  ``|k| (x^2 + y^2 - w^2) >= -2 (w - s y)``

with ``s = sign(k)`` (+1 for the straight line). The cone's angular
position on the turning circle, measured from the rear axle in the
direction of travel, is ``phi = atan2(|k| x, 1 - k y)``; the rear axle
reaches it after the arc length ``s_arc = phi / |k|`` (``= x`` for
``k = 0``). The cone blocks ``delta`` iff it is in the band and
``0 <= s_arc <= lookahead``.

The blocked set of every cone is evaluated on a fine grid of steering
angles (``n_grid`` samples over ``[-max_steer, max_steer]``, all cones
against all arcs with numpy broadcasting); each edge between a blocked and
a free sample is then refined by vectorised bisection to ``edge_tol`` rad,
so the ranges are exact to that tolerance, not to the grid step.

Range selection (Algorithm 3)
-----------------------------
Free ranges are the maximal intervals of ``[-max_steer, max_steer]`` that
no cone blocks. None -> ``status = 'stop'``. All narrower than or equal to
``narrow_threshold`` -> the widest (rule ``largest``). All wider -> the one
needing the least change from the current steering angle (rule
``least_change``). The chosen steering angle is the centre of the chosen
range.

What the paper leaves open, and how it is resolved here
-------------------------------------------------------
* Reference point of the turning circle: the rear-axle centre (kinematic
  bicycle model), i.e. ``R = L / tan(delta)`` for the rear axle.
* Width of the swept band: the exact swept annulus of the body rectangle
  (inner rear-axle side to outer front corner, see above), grown by a
  margin and the cone radius; the paper only says "vehicle width".
* Look-ahead: arc length travelled by the rear axle until it reaches the
  cone's angular position (not Euclidean distance); cones farther are
  ignored.
* Cones behind the rear axle (``x < 0``), non-finite cones and cones
  farther than ``lookahead + reach`` (they cannot be within the look-ahead)
  are ignored: they block nothing.
* "Change from the current direction": the distance from the current
  steering angle to the range (0 when it lies inside the range); ties go
  to the range whose centre is closer.
* The mixed case (some ranges narrow, some wide): the narrow ones are
  dropped and the least-change rule is applied to the wide ones (rule
  ``least_change_mixed``): a wide gap is preferred to a tight one, which is
  what "choose the largest" does when everything is tight.
* Steady-state turn: the arc assumes the steering angle is held; steering
  dynamics are left to the low-level controller and the next cycle.

Beyond the paper: the colour rule
---------------------------------
Algorithm 3 only avoids cones, so where cones are missing (a gap in a
boundary, a cone not detected) an arc through the gap is "free" and the
least-change rule happily leaves the track through it. When colours are
known (``class_id`` given) a blue cone must stay on the left of the path
and a yellow one on the right: a blue/yellow cone within the look-ahead
also blocks every arc that passes it on the wrong side, when its offset
from the rear-axle circle is at most ``side_reach`` (so far-away cones of
another part of the track do not count). The offset is
``e = (|k| (x^2 + y^2) - 2 s y) / (1 + sqrt(k^2 x^2 + (1 - k y)^2))`` (> 0
away from the turning centre), the cone is on the right of the path iff
``s e > 0``. Without ``class_id`` (or with unknown/orange cones) the
algorithm is the paper's.
"""

from dataclasses import dataclass, field
import math
from typing import Any, Optional

from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
import numpy as np

STATUS_OK = 'ok'
STATUS_STOP = 'stop'
RULE_LARGEST = 'largest'
RULE_LEAST_CHANGE = 'least_change'
RULE_MIXED = 'least_change_mixed'
RULE_STOP = 'stop'


@dataclass(frozen=True)
class ConeDriveParams:
    """
    Geometry and thresholds of CONEDRIVE (metres, radians).

    ``wheelbase`` L; ``max_steer`` road-wheel limit; ``half_width`` half
    the vehicle width; ``margin`` extra clearance on each side;
    ``cone_radius`` base radius of a cone; ``front`` rear axle to front
    bumper; ``lookahead`` rear-axle arc length within which cones count;
    ``narrow_threshold`` width of a free range below or at which it is
    "narrow"; ``n_grid`` steering samples; ``edge_tol`` edge refinement;
    ``side_reach`` how far (m) from the path a coloured cone on the wrong
    side still blocks it (colour rule, see the module docstring).
    """

    wheelbase: float = 1.53
    max_steer: float = math.radians(25.0)
    half_width: float = 0.7
    margin: float = 0.15
    cone_radius: float = 0.114
    front: float = 2.3
    lookahead: float = 8.0
    narrow_threshold: float = math.radians(2.0)
    n_grid: int = 201
    edge_tol: float = 1e-4
    side_reach: float = 3.0

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('wheelbase', 'max_steer', 'half_width', 'lookahead',
                     'edge_tol'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'ConeDriveParams.{name} must be finite and '
                                 f'> 0, got {value}')
        for name in ('margin', 'cone_radius', 'front', 'narrow_threshold',
                     'side_reach'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'ConeDriveParams.{name} must be finite and '
                                 f'>= 0, got {value}')
        if self.max_steer >= math.pi / 2:
            raise ValueError('ConeDriveParams.max_steer must be < pi/2, got '
                             f'{self.max_steer}')
        if int(self.n_grid) < 3:
            raise ValueError(f'ConeDriveParams.n_grid must be >= 3, got '
                             f'{self.n_grid}')

    @property
    def band(self) -> float:
        """Return ``w``: half width + margin + cone radius (m)."""
        return self.half_width + self.margin + self.cone_radius

    @property
    def reach(self) -> float:
        """Return the farthest a band point can be from its rear-axle point (m)."""
        return math.hypot(self.band, self.front) + self.band

    @classmethod
    def from_profile(cls, profile: Any, **overrides: Any) -> 'ConeDriveParams':
        """
        Build the parameters from a ``VehicleProfile``.

        Wheelbase, max steer, half width and front (``length -
        rear_overhang``) come from the profile; ``overrides`` set the rest.
        """
        values = {'wheelbase': float(profile.wheelbase),
                  'max_steer': float(profile.max_steer),
                  'half_width': float(profile.width) / 2.0,
                  'front': float(profile.length - profile.rear_overhang)}
        values.update(overrides)
        return cls(**values)


@dataclass
class ConeDriveResult:
    """
    Output of :func:`cone_drive`.

    ``status`` ``'ok'`` or ``'stop'``; ``delta`` the chosen steering angle
    (rad, > 0 left; 0 on stop); ``kappa`` its curvature (1/m);
    ``free_ranges`` / ``blocked_ranges`` (K, 2) [lo, hi] steering intervals
    (rad, ascending); ``chosen`` index into ``free_ranges`` (-1 on stop);
    ``rule`` which selection rule applied; ``n_cones`` cones considered
    (finite, ahead, near enough); ``n_dropped`` non-finite cones ignored.
    """

    status: str
    delta: float
    kappa: float
    free_ranges: np.ndarray
    blocked_ranges: np.ndarray
    chosen: int
    rule: str
    n_cones: int = 0
    n_dropped: int = 0
    chosen_range: Optional[np.ndarray] = field(default=None)

    @property
    def chosen_width(self) -> float:
        """Return the width of the chosen free range (rad; 0 on stop)."""
        if self.chosen < 0:
            return 0.0
        lo, hi = self.free_ranges[self.chosen]
        return float(hi - lo)


def _as_cones(cones_xy: Any) -> np.ndarray:
    """Return cones as a (N, 2) float64 array or raise ValueError."""
    arr = np.asarray(cones_xy, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 2))
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f'cone_drive: cones must be an (N, 2) or (N, 3) array, '
                         f'got shape {arr.shape}')
    return arr[:, :2]


def blocked_mask(kappa: np.ndarray, cones_xy: np.ndarray,
                 params: ConeDriveParams,
                 side: Optional[np.ndarray] = None) -> np.ndarray:
    """
    Return which curvatures are blocked by any cone.

    ``kappa`` (M,) curvatures (1/m); ``cones_xy`` (N, 2) finite cone
    positions with ``x >= 0`` in the vehicle frame (m). Returns (M,) bool:
    True where some cone lies in the swept band within the look-ahead
    (geometry in the module docstring). ``side`` (N,) optional: +1 for a
    cone that must stay left of the path (blue), -1 right (yellow), 0 no
    constraint; such a cone also blocks every arc that passes it on the
    wrong side within ``side_reach`` metres and the look-ahead.
    """
    k = np.asarray(kappa, dtype=np.float64)[:, None]
    if cones_xy.shape[0] == 0:
        return np.zeros(k.shape[0], dtype=bool)
    x = cones_xy[None, :, 0]
    y = cones_xy[None, :, 1]
    w = params.band
    ak = np.abs(k)
    sgn = np.where(k < 0.0, -1.0, 1.0)
    sy = sgn * y
    r2 = x * x + y * y
    blocked = ak * (r2 - w * w - params.front ** 2) <= 2.0 * (w + sy)
    blocked &= ak * (r2 - w * w) >= -2.0 * (w - sy)
    straight = ak < 1e-9
    phi = np.arctan2(ak * x, 1.0 - k * y)
    s_arc = np.where(straight, x, phi / np.where(straight, 1.0, ak))
    ahead = (phi >= 0.0) & (s_arc <= params.lookahead)
    if side is not None and np.any(side != 0):
        # Signed offset from the rear-axle circle, > 0 away from its centre;
        # sgn * e > 0 means the cone is on the right of the path.
        e = (ak * r2 - 2.0 * sy) / (1.0 + np.sqrt(
            (k * x) ** 2 + (1.0 - k * y) ** 2))
        right = sgn * e
        sd = np.asarray(side, dtype=np.float64)[None, :]
        wrong = ((sd > 0.0) & (right > 0.0)) | ((sd < 0.0) & (right < 0.0))
        blocked |= wrong & (np.abs(e) <= params.side_reach)
    return (blocked & ahead).any(axis=1)


def _runs(mask: np.ndarray) -> np.ndarray:
    """Return (K, 2) start/end sample indices (inclusive) of True runs."""
    padded = np.concatenate(([False], mask, [False]))
    diff = np.diff(padded.astype(np.int8))
    starts = np.flatnonzero(diff == 1)
    ends = np.flatnonzero(diff == -1) - 1
    return np.stack([starts, ends], axis=1)


def _refine(lo_free: np.ndarray, hi_blocked: np.ndarray, cones: np.ndarray,
            params: ConeDriveParams, side: Optional[np.ndarray]) -> np.ndarray:
    """
    Bisect the steering edges between free and blocked samples.

    ``lo_free`` (E,) angles known free, ``hi_blocked`` (E,) angles known
    blocked; returns the (E,) free-side edge angles to ``edge_tol``.
    """
    a = lo_free.astype(np.float64).copy()
    b = hi_blocked.astype(np.float64).copy()
    if a.size == 0:
        return a
    gap = float(np.max(np.abs(b - a)))
    n_iter = max(0, int(math.ceil(math.log2(max(gap, 1e-12) / params.edge_tol))))
    for _ in range(n_iter):
        mid = 0.5 * (a + b)
        hit = blocked_mask(np.tan(mid) / params.wheelbase, cones, params,
                           side)
        b = np.where(hit, mid, b)
        a = np.where(hit, a, mid)
    return a


def side_of(class_id: Any, n: int) -> Optional[np.ndarray]:
    """
    Return the colour rule's side per cone (+1 blue, -1 yellow, 0 other).

    None when ``class_id`` is None; ValueError if it does not have ``n``
    entries.
    """
    if class_id is None:
        return None
    cls = np.asarray(class_id).reshape(-1)
    if cls.shape[0] != n:
        raise ValueError(f'cone_drive: class_id has {cls.shape[0]} entries '
                         f'for {n} cones')
    return np.where(cls == CONE_BLUE, 1.0, np.where(cls == CONE_YELLOW, -1.0,
                                                    0.0))


def steering_ranges(cones_xy: Any, params: ConeDriveParams,
                    class_id: Any = None
                    ) -> 'tuple[np.ndarray, np.ndarray, int, int]':
    """
    Return the free and blocked steering ranges for a set of cones.

    ``cones_xy`` (N, 2) or (N, 3) cone positions in the vehicle frame (m);
    ``class_id`` (N,) contract classes or None: with it, blue and yellow
    cones also apply the colour rule. Returns ``(free (K, 2), blocked (J,
    2), n_used, n_dropped)`` with intervals in radians, ascending;
    non-finite rows are dropped and counted, cones behind the rear axle or
    out of reach are ignored.
    """
    cones = _as_cones(cones_xy)
    side = side_of(class_id, cones.shape[0])
    finite = np.isfinite(cones).all(axis=1)
    n_dropped = int(cones.shape[0] - np.count_nonzero(finite))
    reach = params.lookahead + params.reach
    keep = finite.copy()
    keep[finite] = (cones[finite, 0] >= 0.0) & (
        cones[finite, 0] ** 2 + cones[finite, 1] ** 2 <= reach * reach)
    cones = cones[keep]
    if side is not None:
        side = side[keep]
    grid = np.linspace(-params.max_steer, params.max_steer, int(params.n_grid))
    blocked = blocked_mask(np.tan(grid) / params.wheelbase, cones, params,
                           side)
    free_runs = _runs(~blocked)
    blocked_runs = _runs(blocked)
    n_grid = grid.size
    if free_runs.shape[0] == 0:
        full = np.array([[grid[0], grid[-1]]])
        return np.zeros((0, 2)), full, cones.shape[0], n_dropped
    # Refine every inner edge of every free run in one vectorised bisection.
    starts, ends = free_runs[:, 0], free_runs[:, 1]
    lo_edges = grid[starts].copy()
    hi_edges = grid[ends].copy()
    inner_lo = starts > 0
    inner_hi = ends < n_grid - 1
    free_side = np.concatenate([grid[starts[inner_lo]], grid[ends[inner_hi]]])
    blocked_side = np.concatenate([grid[starts[inner_lo] - 1],
                                   grid[ends[inner_hi] + 1]])
    edges = _refine(free_side, blocked_side, cones, params, side)
    n_lo = int(np.count_nonzero(inner_lo))
    lo_edges[inner_lo] = edges[:n_lo]
    hi_edges[inner_hi] = edges[n_lo:]
    free = np.stack([lo_edges, hi_edges], axis=1)
    # Blocked ranges are the complement of the free ones in the full range.
    bounds = np.concatenate([[grid[0]], free.ravel(), [grid[-1]]]).reshape(-1, 2)
    nonempty = bounds[:, 1] > bounds[:, 0]
    if blocked_runs.shape[0] == 0:
        nonempty[:] = False
    blocked_ranges = bounds[nonempty]
    return free, blocked_ranges, cones.shape[0], n_dropped


def select_range(free: np.ndarray, current: float, narrow_threshold: float
                 ) -> 'tuple[int, str]':
    """
    Choose a free range by Algorithm 3's rules (see module docstring).

    ``free`` (K, 2) ascending [lo, hi] intervals (rad); ``current`` the
    current steering angle (rad). Returns ``(index, rule)``; ``(-1,
    'stop')`` when there is no free range.
    """
    if free.shape[0] == 0:
        return -1, RULE_STOP
    if not math.isfinite(current):
        raise ValueError(f'select_range: current steering angle must be '
                         f'finite, got {current}')
    widths = free[:, 1] - free[:, 0]
    wide = widths > narrow_threshold
    if not wide.any():
        return int(np.argmax(widths)), RULE_LARGEST
    change = np.maximum(np.maximum(free[:, 0] - current, current - free[:, 1]),
                        0.0)
    centre_change = np.abs(0.5 * (free[:, 0] + free[:, 1]) - current)
    # Lexicographic (change, centre change) among the wide ranges.
    order = np.lexsort((centre_change, change, ~wide))
    rule = RULE_LEAST_CHANGE if wide.all() else RULE_MIXED
    return int(order[0]), rule


def cone_drive(cones_xy: Any, current_delta: float,
               params: ConeDriveParams, class_id: Any = None
               ) -> ConeDriveResult:
    """
    Run one CONEDRIVE cycle (the HIL paper's Algorithm 3, extended).

    ``cones_xy`` (N, 2) or (N, 3) cone positions in the vehicle frame (m,
    REP-103, rear-axle origin; NaN/inf rows are dropped and counted);
    ``current_delta`` the current steering angle (rad, > 0 left; clipped to
    the steering range); ``class_id`` (N,) contract classes or None (None:
    Algorithm 3 as published; given: the colour rule for blue/yellow cones
    as well). Returns a :class:`ConeDriveResult`; with no free range the
    status is ``'stop'`` and ``delta`` 0. The geometry and the rules are in
    the module docstring.
    """
    current = float(current_delta)
    if not math.isfinite(current):
        raise ValueError(f'cone_drive: current_delta must be finite, got '
                         f'{current_delta}')
    current = min(max(current, -params.max_steer), params.max_steer)
    free, blocked, n_used, n_dropped = steering_ranges(cones_xy, params,
                                                       class_id)
    index, rule = select_range(free, current, params.narrow_threshold)
    if index < 0:
        return ConeDriveResult(status=STATUS_STOP, delta=0.0, kappa=0.0,
                               free_ranges=free, blocked_ranges=blocked,
                               chosen=-1, rule=rule, n_cones=n_used,
                               n_dropped=n_dropped)
    chosen = free[index]
    delta = float(0.5 * (chosen[0] + chosen[1]))
    return ConeDriveResult(status=STATUS_OK, delta=delta,
                           kappa=math.tan(delta) / params.wheelbase,
                           free_ranges=free, blocked_ranges=blocked,
                           chosen=index, rule=rule, n_cones=n_used,
                           n_dropped=n_dropped, chosen_range=chosen.copy())


def arc_points(kappa: float, length: float, n: int = 20) -> np.ndarray:
    """
    Return (n, 2) points of the rear-axle arc of curvature ``kappa``.

    Starts at the origin, heading +x, ``length`` metres of arc (vehicle
    frame, REP-103).
    """
    s = np.linspace(0.0, float(length), int(n))
    k = float(kappa)
    if abs(k) < 1e-9:
        return np.stack([s, np.zeros_like(s)], axis=1)
    return np.stack([np.sin(k * s) / k, (1.0 - np.cos(k * s)) / k], axis=1)
