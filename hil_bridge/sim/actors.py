# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scripted behaviours of the other vehicles and obstacles (no rclpy).

An :class:`hil_bridge.bridge.scenario.ActorSpec` carries ``behaviour``, a mapping
with a ``type`` and its parameters (REP-103, metres, seconds):

* ``static`` / ``parked``: never moves (also the default for obstacles);
* ``constant_speed``: ``speed`` (m/s, default the spec's
  ``initial_speed``) along ``path``;
* ``brake``: drives like ``constant_speed`` and from ``at_time`` (s)
  decelerates at ``decel`` (m/s^2, > 0) to a standstill;
* ``path``: ``line`` (default: straight along the spawn heading) or
  ``centerline`` (the track's centre line from the point nearest the
  spawn, looping on closed tracks, with an optional lateral ``offset``,
  m, > 0 to the left).

``accel`` (m/s^2, default 3) limits how fast the actor reaches ``speed``.
"""

import math
from typing import Any, Dict, Optional

from hil_bridge.bridge.backend import ActorState
from hil_bridge.interface.frames import Pose
import numpy as np

BEHAVIOURS = ('static', 'parked', 'constant_speed', 'brake')
_KEYS = {'type', 'speed', 'at_time', 'decel', 'path', 'offset', 'accel'}


def check_behaviour(behaviour: Dict[str, Any], where: str = 'behaviour'
                    ) -> Dict[str, Any]:
    """
    Validate a behaviour mapping and return it with defaults filled in.

    Raises ``ValueError`` naming ``where`` and the bad field.
    """
    b = dict(behaviour or {})
    kind = b.get('type', 'static')
    if kind not in BEHAVIOURS:
        raise ValueError(f'{where}.type: unknown behaviour {kind!r} '
                         f'(expected one of {list(BEHAVIOURS)})')
    extra = sorted(set(b) - _KEYS)
    if extra:
        raise ValueError(f'{where}: unknown fields {extra}')
    for key in ('speed', 'at_time', 'decel', 'offset', 'accel'):
        if key in b:
            try:
                b[key] = float(b[key])
            except (TypeError, ValueError):
                raise ValueError(f'{where}.{key}: not a number: '
                                 f'{b[key]!r}') from None
            if not math.isfinite(b[key]):
                raise ValueError(f'{where}.{key}: must be finite')
    if kind == 'brake':
        for key in ('at_time', 'decel'):
            if key not in b:
                raise ValueError(f'{where}.{key}: required for brake')
        if b['decel'] <= 0.0 or b['at_time'] < 0.0:
            raise ValueError(f'{where}: decel must be > 0 and at_time >= 0')
    if b.get('accel', 3.0) <= 0.0:
        raise ValueError(f'{where}.accel: must be > 0')
    path = b.get('path', 'line')
    if path not in ('line', 'centerline'):
        raise ValueError(f'{where}.path: {path!r} is not line or centerline')
    b['type'] = kind
    b['path'] = path
    return b


class ScriptedActor:
    """
    A vehicle or obstacle moved by its behaviour.

    ``size`` (length, width, height) in metres; the actor's pose is the
    centre of its box footprint on the ground (``box_offset`` 0) unless
    ``box_offset`` says otherwise. ``centerline`` (K, 2) is needed for
    ``path: centerline``.
    """

    def __init__(self, role_name: str, pose: Pose, size: np.ndarray,
                 behaviour: Dict[str, Any], initial_speed: float = 0.0,
                 box_offset: float = 0.0,
                 centerline: Optional[np.ndarray] = None,
                 closed: bool = False) -> None:
        self.role_name = role_name
        self.behaviour = check_behaviour(behaviour, f'{role_name}.behaviour')
        self.size = np.asarray(size, dtype=np.float64).reshape(3)
        self.box_offset = float(box_offset)
        b = self.behaviour
        moving = b['type'] in ('constant_speed', 'brake')
        self.target_speed = b.get('speed', initial_speed) if moving else 0.0
        self.v = float(initial_speed) if moving else 0.0
        self.accel = b.get('accel', 3.0)
        self.x, self.y, self.yaw = float(pose.x), float(pose.y), \
            float(pose.yaw)
        self.z = float(pose.z)
        self.a = 0.0
        self.yaw_rate = 0.0
        self.braking = False
        self._path: Optional[np.ndarray] = None
        self._s = 0.0
        if b['path'] == 'centerline' and moving:
            if centerline is None or len(centerline) < 2:
                raise ValueError(f'{role_name}.behaviour.path: centerline '
                                 'needs a track')
            self._init_path(np.asarray(centerline, np.float64), closed,
                            b.get('offset', 0.0))

    def _init_path(self, cl: np.ndarray, closed: bool, offset: float) -> None:
        pts = np.vstack([cl, cl[:1]]) if closed else cl
        d = np.diff(pts, axis=0)
        seg = np.hypot(d[:, 0], d[:, 1])
        tan = d / np.maximum(seg, 1e-12)[:, None]
        nrm = np.column_stack([-tan[:, 1], tan[:, 0]])
        nrm = np.vstack([nrm, nrm[-1:]])
        pts = pts + offset * nrm
        self._path = pts
        self._path_s = np.concatenate([[0.0], np.cumsum(
            np.hypot(*np.diff(pts, axis=0).T))])
        self._closed = closed
        i = int(np.argmin(np.hypot(pts[:, 0] - self.x, pts[:, 1] - self.y)))
        self._s = float(self._path_s[i])
        self._place()

    def _place(self) -> None:
        s_all = self._path_s
        total = s_all[-1]
        s = self._s % total if self._closed else min(self._s, total)
        x = float(np.interp(s, s_all, self._path[:, 0]))
        y = float(np.interp(s, s_all, self._path[:, 1]))
        i = min(int(np.searchsorted(s_all, s, side='right')) - 1,
                len(s_all) - 2)
        d = self._path[i + 1] - self._path[i]
        self.x, self.y = x, y
        self.yaw = math.atan2(d[1], d[0])

    def step(self, t: float, dt: float) -> None:
        """Advance to sim time ``t`` (s) by ``dt`` (s)."""
        b = self.behaviour
        if b['type'] in ('static', 'parked'):
            return
        v0 = self.v
        cruise = dt        # part of the step before braking starts
        if b['type'] == 'brake' and t >= b['at_time'] - 1e-9:
            if not self.braking:
                cruise = min(max(b['at_time'] - (t - dt), 0.0), dt)
            else:
                cruise = 0.0
            self.braking = True
        ds = 0.0
        if cruise > 0.0:
            dv = self.target_speed - self.v
            lim = self.accel * cruise
            v1 = self.v + min(max(dv, -lim), lim)
            ds += 0.5 * (self.v + v1) * cruise
            self.v = v1
        rest = dt - cruise
        if rest > 0.0:
            v1 = max(0.0, self.v - b['decel'] * rest)
            t_stop = self.v / b['decel']
            ds += 0.5 * (self.v + v1) * min(rest, t_stop)
            self.v = v1
        self.a = (self.v - v0) / dt
        yaw0 = self.yaw
        if self._path is not None:
            self._s += ds
            self._place()
        else:
            self.x += ds * math.cos(self.yaw)
            self.y += ds * math.sin(self.yaw)
        dyaw = math.atan2(math.sin(self.yaw - yaw0), math.cos(self.yaw - yaw0))
        self.yaw_rate = dyaw / dt

    @property
    def box_center(self) -> np.ndarray:
        """Return the (x, y) of the box centre in ``map`` (m)."""
        return np.array([self.x + self.box_offset * math.cos(self.yaw),
                         self.y + self.box_offset * math.sin(self.yaw)])

    def actor_state(self) -> ActorState:
        """Return the actor's ground truth as an :class:`ActorState`."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return ActorState(
            role_name=self.role_name,
            pose=Pose(x=self.x, y=self.y, z=0.0, yaw=self.yaw),
            velocity=np.array([self.v * c, self.v * s, 0.0]),
            angular_velocity=np.array([0.0, 0.0, self.yaw_rate]),
            acceleration=np.array([self.a, self.v * self.yaw_rate, 0.0]),
            size=self.size.copy(), box_offset=self.box_offset)
