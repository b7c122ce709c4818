# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Follow a route known in advance, localised by odometry (no rclpy).

Formula Student skidpad has a fixed, standard layout, so teams drive it on
a pre-computed route instead of reacting to cones: entry straight, two laps
of the right circle, two of the left, exit. :class:`RouteFollower` keeps a
progress index that only moves forward along the route (the figure of
eight passes its crossing five times, so "nearest point" alone would jump
laps), takes the route ahead in the vehicle frame and steers along it with
pure pursuit; the speed comes from the route's curvature
(``path_planning.pure_pursuit.profile_speed``) and brings the car to a stop
at the route's end. Frames: routes and poses in ``map`` (REP-103, m, rad).
"""

from dataclasses import dataclass
import math
from typing import Tuple

from hil_bridge.interface.frames import se2
from hil_bridge.interface.track import skidpad_route, SKIDPAD_START_AFTER_ENTRY
import numpy as np
from path_planning.pure_pursuit import profile_speed, pure_pursuit, PursuitParams


@dataclass
class RouteCommand:
    """
    One cycle's command.

    ``speed`` m/s, ``yaw_rate`` rad/s (= v * kappa), ``delta`` road-wheel
    angle (rad), ``path`` (P, 2) the route ahead in the vehicle frame,
    ``progress`` metres driven along the route, ``done`` at the end.
    """

    speed: float
    yaw_rate: float
    delta: float
    kappa: float
    path: np.ndarray
    progress: float
    done: bool


class RouteFollower:
    """
    Pure pursuit along a fixed route with monotonic progress.

    ``route`` (K, 2) in map, ordered in driving direction; ``horizon`` m of
    route handed to pure pursuit each cycle; ``search`` m ahead of the
    current progress in which the nearest route point is looked for.
    """

    def __init__(self, route: np.ndarray, pursuit: PursuitParams,
                 max_speed: float, a_lat_max: float, decel: float,
                 horizon: float = 25.0, search: float = 8.0) -> None:
        """Validate the route and the limits (ValueError on bad input)."""
        pts = np.asarray(route, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 2 \
                or not np.isfinite(pts).all():
            raise ValueError(f'route must be a finite (K>=2, 2) array, got '
                             f'{pts.shape}')
        for name, value in (('max_speed', max_speed),
                            ('a_lat_max', a_lat_max), ('decel', decel),
                            ('horizon', horizon), ('search', search)):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'RouteFollower: {name} must be finite and '
                                 f'> 0, got {value}')
        self.route = pts
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        self.s = np.concatenate([[0.0], np.cumsum(seg)])
        self.pursuit = pursuit
        self.max_speed, self.a_lat_max = float(max_speed), float(a_lat_max)
        self.decel = float(decel)
        self.horizon, self.search = float(horizon), float(search)
        self.index = 0

    @property
    def length(self) -> float:
        """Return how long the whole route is, in metres."""
        return float(self.s[-1])

    @classmethod
    def skidpad(cls, start: Tuple[float, float, float],
                pursuit: PursuitParams, max_speed: float, a_lat_max: float,
                decel: float, laps_per_side: int = 2) -> 'RouteFollower':
        """
        Return the follower of the standard skidpad route.

        The rule layout (``hil_bridge.interface.track.skidpad_route``, the
        car starting ``SKIDPAD_START_AFTER_ENTRY`` past the entry's beginning, facing +x) is placed
        so that the start pose lands on ``start`` = (x, y, yaw) in map, the
        car's pose when the mission begins.
        """
        entry = 15.0
        cl = skidpad_route(entry, laps_per_side=laps_per_side)
        to_map = se2(*start) @ np.linalg.inv(
            se2(-entry + SKIDPAD_START_AFTER_ENTRY, 0.0, 0.0))
        route = (to_map[:2, :2] @ cl.T).T + to_map[:2, 2]
        # the route begins where the car stands
        first = int(np.argmin(np.hypot(*(route - start[:2]).T)))
        return cls(route[first:], pursuit, max_speed, a_lat_max, decel)

    def _advance(self, xy: np.ndarray) -> None:
        hi = int(np.searchsorted(self.s, self.s[self.index] + self.search,
                                 side='right'))
        window = self.route[self.index:max(hi, self.index + 1)]
        self.index += int(np.argmin(np.hypot(*(window - xy).T)))

    def plan(self, x: float, y: float, yaw: float,
             speed: float) -> RouteCommand:
        """Return the command for the car at (x, y, yaw) driving ``speed``."""
        if not all(math.isfinite(v) for v in (x, y, yaw, speed)):
            raise ValueError('RouteFollower.plan: pose/speed must be finite')
        self._advance(np.array([x, y]))
        progress = float(self.s[self.index])
        hi = int(np.searchsorted(self.s, progress + self.horizon,
                                 side='right'))
        ahead = self.route[self.index:max(hi, self.index + 2)]
        c, s = math.cos(yaw), math.sin(yaw)
        rel = ahead - (x, y)
        path = np.column_stack([c * rel[:, 0] + s * rel[:, 1],
                                -s * rel[:, 0] + c * rel[:, 1]])
        path = path[path[:, 0] > -0.5]  # the route behind the car is done
        remaining = self.length - progress
        done = remaining < 0.5 or path.shape[0] == 0
        if done:
            return RouteCommand(0.0, 0.0, 0.0, 0.0, path, progress, True)
        steer = pure_pursuit(path, max(abs(speed), 0.5), self.pursuit)
        near_end = hi >= len(self.s)
        v = profile_speed(path, self.max_speed, self.a_lat_max, self.decel,
                          stop_at_end=near_end)
        v = max(v, 0.0)
        return RouteCommand(v, v * steer.kappa, steer.delta, steer.kappa,
                            path, progress, False)
