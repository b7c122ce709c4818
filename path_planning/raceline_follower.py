# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Follow a closed racing line with its speed profile, localised by odometry.

Frames: the line and the pose in ``map`` (REP-103, metres, radians); the
path handed to pure pursuit and returned for display in the vehicle frame
(rear-axle origin).

Each cycle (:meth:`RacelineFollower.plan`):

1. The pose is predicted ``latency`` seconds ahead (constant speed and
   yaw rate): the command acts that much later (planning period, steering
   lag).
2. The car is located on the line: the nearest line point within
   ``search`` metres ahead of (or ``search / 4`` behind) the last one, so
   a section running side by side never captures it; the first cycle
   searches the whole line. The lateral error is the signed distance to
   the line (+ left), the heading error the car's yaw minus the line's.
3. Steering: the line's curvature at that point (feed-forward) plus a
   feedback on the lateral error ``e`` and the heading error ``th``,
   ``kappa = kappa_line - e / l^2 - 2 sin(th) / l``, with ``l`` the
   pure-pursuit look-ahead at this speed
   (:func:`path_planning.pure_pursuit.lookahead_distance`): along the
   path the errors decay like a critically damped oscillator of length
   ``l``. Unlike pure pursuit alone this does not cut the inside of a
   hairpin on entry (the feed-forward turns exactly where the line
   does).
4. The speed is the profile's at the point ``preview`` seconds ahead (the
   speed loop and the brakes lag), lower in proportion as the lateral
   error grows past half of ``max_lateral_error``.
5. The command is refused (``ok`` False, a reason) when the lateral error
   exceeds ``max_lateral_error`` or the heading error
   ``max_heading_error``: the caller falls back to its lap-1 planner.
   While joining the line (after :meth:`RacelineFollower.reset`, until the
   lateral error first drops below a fifth of its limit and the heading
   error below a sixth of its) the limit is the error at the
   start plus ``join_slack`` instead, so a car that begins off the line
   converges onto it rather than being refused at once; it speeds up by
   at most ``join_speed_step`` above the measured speed meanwhile.
"""

from dataclasses import dataclass, field
import math
from typing import Optional

import numpy as np
from path_planning.pure_pursuit import lookahead_distance, PursuitParams
from path_planning.raceline import Raceline


@dataclass(frozen=True)
class FollowerParams:
    """
    Gains and limits of the follower (m, s, rad).

    ``pursuit`` the look-ahead (its ``ld_*``: the feedback length) and
    the car's steering; ``horizon`` line length returned as ``path``; ``search`` how far
    ahead the car is looked for; ``latency`` pose prediction; ``preview``
    speed preview; ``max_lateral_error`` / ``max_heading_error`` the
    corridor beyond which the follower gives up.
    """

    pursuit: PursuitParams = PursuitParams(ld_min=2.5, ld_max=8.0, ld_gain=0.3)
    horizon: float = 20.0
    search: float = 12.0
    latency: float = 0.1
    preview: float = 0.35
    max_lateral_error: float = 0.8
    max_heading_error: float = math.radians(35.0)
    join_slack: float = 0.25
    join_speed_step: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field (ValueError naming the field)."""
        for name in ('horizon', 'search', 'max_lateral_error', 'max_heading_error'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'FollowerParams.{name} must be finite and > 0, got {value}')
        for name in ('latency', 'preview', 'join_slack', 'join_speed_step'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'FollowerParams.{name} must be finite and >= 0, got {value}')


@dataclass
class FollowCommand:
    """
    One cycle of the follower.

    ``ok`` False when the car left the line's corridor (``reason``);
    ``speed`` (m/s), ``yaw_rate`` (rad/s) = speed * kappa, ``delta``
    road-wheel angle (rad), ``kappa`` (1/m); ``s`` the car's arc position
    on the line (m), ``lateral_error`` (m, + left of the line),
    ``heading_error`` (rad); ``path`` (P, 2) the line ahead in the vehicle
    frame; ``laps`` how often the car passed the line's start.
    """

    ok: bool
    reason: str
    speed: float = 0.0
    yaw_rate: float = 0.0
    delta: float = 0.0
    kappa: float = 0.0
    s: float = 0.0
    lateral_error: float = 0.0
    heading_error: float = 0.0
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    laps: int = 0


class RacelineFollower:
    """Pure pursuit and the speed profile on a closed :class:`Raceline`."""

    def __init__(self, line: Raceline, params: FollowerParams = FollowerParams()) -> None:
        """Take the line (``map``) and the gains."""
        if line.xy.ndim != 2 or line.xy.shape[0] < 8 or not np.isfinite(line.xy).all():
            raise ValueError('RacelineFollower: the line needs >= 8 finite points')
        self.line = line
        self.params = params
        self.n = int(line.xy.shape[0])
        self.index: Optional[int] = None
        self.laps = 0
        #: While joining: the lateral error allowed (m); None once on the line.
        self.join_limit: Optional[float] = None
        tang = np.roll(line.xy, -1, axis=0) - line.xy
        self._heading = np.arctan2(tang[:, 1], tang[:, 0])

    def reset(self) -> None:
        """Forget where the car was (the next cycle searches the whole line and joins)."""
        self.index = None
        self.join_limit = None

    def _locate(self, xy: np.ndarray) -> int:
        ds = self.line.ds
        if self.index is None:
            cand = np.arange(self.n)
        else:
            ahead = int(math.ceil(self.params.search / ds))
            behind = int(math.ceil(0.25 * self.params.search / ds))
            cand = (self.index + np.arange(-behind, ahead + 1)) % self.n
        d = np.hypot(*(self.line.xy[cand] - xy).T)
        best = int(cand[int(np.argmin(d))])
        if self.index is not None:
            step = (best - self.index) % self.n
            if step < self.n // 2 and best < self.index:
                self.laps += 1
        self.index = best
        return best

    def plan(self, x: float, y: float, yaw: float, speed: float,
             yaw_rate: float = 0.0) -> FollowCommand:
        """Return the command for the car at (x, y, yaw) in ``map`` driving ``speed``."""
        if not all(math.isfinite(v) for v in (x, y, yaw, speed, yaw_rate)):
            return FollowCommand(False, 'non-finite pose or speed')
        p = self.params
        line = self.line
        dt = p.latency
        yaw_p = yaw + yaw_rate * dt
        mid = yaw + 0.5 * yaw_rate * dt
        xy = np.array([x + speed * dt * math.cos(mid), y + speed * dt * math.sin(mid)])
        joining = self.index is None or self.join_limit is not None
        i = self._locate(xy)
        # signed lateral error from the segment around the nearest point
        j = (i + 1) % self.n
        e = line.xy[j] - line.xy[i]
        rel = xy - line.xy[i]
        seg = max(float(np.hypot(*e)), 1e-9)
        lat = float((e[0] * rel[1] - e[1] * rel[0]) / seg)
        head = math.atan2(math.sin(yaw_p - self._heading[i]), math.cos(yaw_p - self._heading[i]))
        s = float(line.s[i])
        base = FollowCommand(False, '', s=s, lateral_error=lat, heading_error=head,
                             laps=self.laps)
        limit = p.max_lateral_error
        if joining:
            if self.join_limit is None:
                self.join_limit = max(abs(lat) + p.join_slack, limit)
            if abs(lat) < 0.2 * limit and abs(head) < p.max_heading_error / 6.0:
                self.join_limit = None
            else:
                limit = self.join_limit
        if abs(lat) > limit:
            base.reason = f'off the line by {lat:+.2f} m'
            return base
        if abs(head) > p.max_heading_error:
            base.reason = f'heading {math.degrees(head):+.0f} deg off the line'
            return base
        n_ahead = max(int(math.ceil(p.horizon / line.ds)), 2)
        ahead = line.xy[(i + np.arange(1, n_ahead + 1)) % self.n]
        c, sn = math.cos(yaw_p), math.sin(yaw_p)
        d = ahead - xy
        path = np.column_stack([c * d[:, 0] + sn * d[:, 1], -sn * d[:, 0] + c * d[:, 1]])
        ell = lookahead_distance(speed, p.pursuit)
        k_ff = float(np.mean(line.kappa[(i + np.arange(-1, 2)) % self.n]))
        kappa = k_ff - lat / (ell * ell) - 2.0 * math.sin(head) / ell
        delta = math.atan(p.pursuit.wheelbase * kappa)
        delta = min(max(delta, -p.pursuit.max_steer), p.pursuit.max_steer)
        kappa = math.tan(delta) / p.pursuit.wheelbase
        k_prev = int(round(max(speed, 0.0) * p.preview / line.ds))
        window = line.v[(i + np.arange(0, k_prev + 1)) % self.n]
        v = float(window.min())
        if self.join_limit is not None:
            v = min(v, max(speed, 0.0) + p.join_speed_step)
        excess = abs(lat) - 0.5 * p.max_lateral_error
        if excess > 0.0:
            v *= max(1.0 - excess / limit, 0.5)
        base.ok = True
        base.reason = 'raceline'
        base.speed = v
        base.delta = delta
        base.kappa = kappa
        base.yaw_rate = v * kappa
        base.path = path
        return base
