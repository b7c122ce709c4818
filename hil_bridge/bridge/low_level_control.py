# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Drive-by-wire emulation: ``cmd_vel`` / ``brake_request`` / ``/joy`` -> control.

On the real car a low-level controller turns the planner's target speed and
yaw rate into actuator commands and implements the safety functions (manual
override, emergency brake, command watchdog). :class:`LowLevelController`
does the same for the simulator and returns a CARLA-style
:class:`~hil_bridge.bridge.backend.VehicleControl` (throttle 0..1, brake 0..1,
steer -1..1 with **steer > 0 = right**, a fraction of the profile's
``max_steer``: the road-wheel angle is ``-steer * max_steer`` in REP-103;
the CARLA backend turns it into CARLA's steer through the vehicle's own
physics control, see ``hil_bridge.carla_backend.backend.Steering``).
No rclpy: planners can reuse it
in-process for their own closed-loop tests::

    llc = LowLevelController(load_vehicle_profile('fs_car'), LLCParams())
    control, source = llc.update(t, ego_speed, cmd=(5.0, 0.1, t))

Priority, highest first (the ``source`` string names the winner):

1. ``brake_pedal``: the manual brake pedal pressed beyond a threshold
   always wins (throttle 0, brake = pedal, at least any AEB request);
2. ``manual``: the takeover button is held: steering, throttle and brake
   from the wheel/gamepad; an AEB request still brakes at least as hard;
3. ``brake_request``: the AEB asks for a deceleration a <= 0 (m/s^2): throttle
   0, brake >= |a| / profile.max_decel, steering still from ``cmd_vel``;
4. ``cmd_vel``: speed PID (with anti-windup and a drag feed-forward) ->
   throttle/brake; road-wheel angle delta = atan(omega * L / max(|v_cmd|,
   v_min)) clamped to +-max_steer, steer = -delta / max_steer;
5. ``watchdog``: no valid command within ``cmd_timeout`` seconds of sim time
   (none yet, stale stamps, or only invalid ones): controlled stop at
   ``watchdog_decel`` with the steering held or centred.

Command validation (each rejection counted, with a warning; the previous
valid command stays in force until it goes stale):

* NaN/inf values, a malformed command;
* a target speed outside the profile's physical range ``[0, top_speed]``
  or a yaw rate the car cannot steer at that speed
  (``|omega| > max(|v|, v_min) tan(max_steer) / L``, plus
  :data:`YAW_RATE_MARGIN`): rejected, not clamped;
* the stamp policy of :mod:`hil_bridge.interface.freshness` per source: a
  stamp ahead of the controller's time ``t`` (the bridge makes the time:
  :data:`~hil_bridge.interface.freshness.COMMAND_TOLERANCE`), more than
  ``cmd_timeout`` behind it, or older than the last accepted command of
  that source (out of order).

Freshness is judged by arrival (the ``t`` at which a command was accepted),
never by its stamp alone. Brake requests stronger than ``max_decel`` clamp
to full brake (the safe side). A brake request is latched until a request
of 0 releases it (or, with ``brake_request_timeout`` > 0, until it is that
old). ``actuation_delay``
delays the applied control by that many seconds of sim time (a FIFO).
"""

import collections
from dataclasses import dataclass, fields
import math
from typing import Any, Deque, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from hil_bridge.bridge.backend import VehicleControl
from hil_bridge.interface.freshness import COMMAND_TOLERANCE, InputGate, Throttle
from hil_bridge.interface.joy import JOY_PRESETS, JoyMapping, JoyState
from hil_bridge.interface.vehicle_profile import VehicleProfile

GRAVITY = 9.81
#: Slack on the steerable yaw rate before a command counts as out of range
#: (planners compute omega = v tan(delta) / L with |delta| <= max_steer).
YAW_RATE_MARGIN = 0.1

#: Numeric ids of the control sources (``applied_control`` linear.z).
SOURCE_IDS = {'watchdog': 0, 'cmd_vel': 1, 'brake_request': 2, 'manual': 3,
              'brake_pedal': 4}


class Command(NamedTuple):
    """A ``cmd_vel``: target speed (m/s), yaw rate (rad/s, + = left), stamp (s)."""

    speed: float
    yaw_rate: float
    stamp: float


class BrakeRequest(NamedTuple):
    """An AEB request: deceleration (m/s^2, <= 0; 0 releases), stamp (s)."""

    decel: float
    stamp: float


@dataclass
class LLCParams:
    """
    Tuning of the low-level controller (SI units, sim-time seconds).

    kp/ki/kd act on the speed error (m/s) and give a normalised drive
    command u (u > 0 throttle, u < 0 brake scaled by ``brake_gain``);
    the integral is clamped to +-``integral_limit`` and frozen while u
    saturates (anti-windup). ``standstill_brake`` holds a stopped car when
    the target speed is 0. ``joy_timeout``: an older Joy counts as none.
    """

    kp: float = 0.6
    ki: float = 0.3
    kd: float = 0.0
    integral_limit: float = 2.0
    brake_gain: float = 1.0
    feedforward: bool = True
    standstill_brake: float = 0.3
    v_min: float = 1.0
    cmd_timeout: float = 0.5
    watchdog_decel: float = 4.0
    watchdog_centre_steer: bool = False
    brake_request_timeout: float = 0.0
    actuation_delay: float = 0.0
    pedal_threshold: float = 0.05
    joy_timeout: float = 1.0
    joy: JoyMapping = JoyMapping()

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any],
                     preset: str = 'keyboard') -> 'LLCParams':
        """
        Build from a dict of node parameters (unknown keys are ignored).

        ``preset`` names a :data:`JOY_PRESETS` entry; keys ``joy_<field>``
        (e.g. ``joy_steer_axis``) with a value >= 0 override single fields
        of the preset (a negative value keeps the preset's).
        """
        if preset not in JOY_PRESETS:
            raise ValueError(f'joy preset {preset!r} not in {sorted(JOY_PRESETS)}')
        names = {f.name for f in fields(cls)} - {'joy'}
        kwargs: Dict[str, Any] = {k: values[k] for k in names if k in values}
        joy_kwargs = {}
        for f in fields(JoyMapping):
            key = f'joy_{f.name}'
            if key in values and f.name.endswith(('_axis', '_button')) \
                    and int(values[key]) >= 0:
                joy_kwargs[f.name] = int(values[key])
        base = JOY_PRESETS[preset]
        joy = JoyMapping(**{**{f.name: getattr(base, f.name)
                               for f in fields(JoyMapping)}, **joy_kwargs})
        out = cls(joy=joy, **kwargs)
        out.validate()
        return out

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) or isinstance(value, int) and \
                    not isinstance(value, bool):
                if not math.isfinite(value) or value < 0.0:
                    raise ValueError(f'LLCParams.{f.name} must be finite and '
                                     f'>= 0, got {value}')
        if self.cmd_timeout <= 0.0:
            raise ValueError('LLCParams.cmd_timeout must be > 0')
        if self.v_min <= 0.0:
            raise ValueError('LLCParams.v_min must be > 0')


def _finite(*values: float) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


class LowLevelController:
    """
    The drive-by-wire box: see the module docstring for the priorities.

    Call :meth:`update` once per simulation step with the sim time ``t``
    (s), the ego speed along body x (m/s) and whatever arrived since the
    last call (``None`` = nothing new; the last valid values are kept).
    ``counters`` counts rejected/clamped/stale inputs and watchdog stops;
    :meth:`drain_messages` returns the warnings raised since the last call.
    """

    def __init__(self, profile: VehicleProfile,
                 params: Optional[LLCParams] = None) -> None:
        self.profile = profile
        self.params = params if params is not None else LLCParams()
        self.params.validate()
        self.counters: Dict[str, int] = collections.Counter()
        self._messages: List[str] = []
        self._cmd: Optional[Command] = None
        self._brake: Optional[BrakeRequest] = None
        self._joy: Optional[JoyState] = None
        self._integral = 0.0
        self._prev_error: Optional[float] = None
        self._prev_t: Optional[float] = None
        self._steer = 0.0
        self._in_watchdog = False
        self._queue: Deque[Tuple[float, VehicleControl, str]] = collections.deque()
        # stamp policy per source; every rejection is a warning of its own
        # (the bridge throttles what it logs)
        quiet = Throttle(period=0.0)
        timeout = self.params.cmd_timeout
        self.gates = {name: InputGate(name, timeout, COMMAND_TOLERANCE, monotonic=True,
                                      throttle=quiet)
                      for name in ('cmd_vel', 'brake_request')}
        self._delayed: Tuple[VehicleControl, str] = (
            self._stop_control(self.params.watchdog_decel), 'watchdog')

    # ----------------------------------------------------------------- inputs
    def _warn(self, key: str, text: str) -> None:
        self.counters[key] += 1
        self._messages.append(text)

    def drain_messages(self) -> List[str]:
        """Return and clear the warnings collected since the last call."""
        out, self._messages = self._messages, []
        return out

    def yaw_rate_limit(self, speed: float) -> float:
        """Return the largest yaw rate (rad/s) the car can steer at target ``speed``."""
        v = max(abs(float(speed)), self.params.v_min)
        return v * math.tan(self.profile.max_steer) / self.profile.wheelbase \
            * (1.0 + YAW_RATE_MARGIN)

    def check_command(self, speed: float, yaw_rate: float) -> str:
        """
        Return why a target speed (m/s) and yaw rate (rad/s) are refused ('' = valid).

        Refused: non-finite values, a speed outside the profile's physical
        range ``[0, top_speed]``, a yaw rate the car cannot steer at that
        speed (:meth:`yaw_rate_limit`).
        """
        if not _finite(speed, yaw_rate):
            return f'non-finite speed {speed} / yaw rate {yaw_rate}'
        speed, yaw_rate = float(speed), float(yaw_rate)
        if not 0.0 <= speed <= self.profile.top_speed:
            return (f'speed {speed:g} m/s outside the physical range '
                    f'[0, {self.profile.top_speed:g}] of {self.profile.name}')
        omega_max = self.yaw_rate_limit(speed)
        if abs(yaw_rate) > omega_max:
            return (f'yaw rate {yaw_rate:g} rad/s beyond the {omega_max:.3f} rad/s '
                    f'{self.profile.name} can steer at {speed:g} m/s')
        return ''

    def _admit(self, source: str, stamp: float, t: float) -> bool:
        """Apply the stamp policy of ``source`` at controller time ``t``."""
        gate = self.gates[source]
        verdict = gate.check(stamp, t)
        if gate.admit(stamp, t):
            return True
        short = 'cmd' if source == 'cmd_vel' else 'brake'
        key = {'stale': f'stale_{short}', 'out-of-order': f'out_of_order_{short}'}.get(
            verdict.reason, f'rejected_{short}')
        for text in gate.take_warnings():
            self._warn(key, text)
        return False

    def _accept_cmd(self, cmd: Any, t: float) -> None:
        try:
            cmd = Command(*cmd)
        except TypeError:
            self._warn('rejected_cmd', f'cmd_vel rejected: malformed {cmd!r}')
            return
        if not _finite(cmd.speed, cmd.yaw_rate, cmd.stamp):
            self._warn('rejected_cmd', f'cmd_vel rejected: non-finite {tuple(cmd)}')
            return
        speed, omega = float(cmd.speed), float(cmd.yaw_rate)
        why = self.check_command(speed, omega)
        if why:
            self._warn('rejected_cmd', f'cmd_vel rejected: {why}')
            return
        if not self._admit('cmd_vel', float(cmd.stamp), t):
            return
        self._cmd = Command(speed, omega, float(cmd.stamp))

    def _accept_brake(self, req: Any, t: float) -> None:
        try:
            req = BrakeRequest(*req)
        except TypeError:
            self._warn('rejected_brake', f'brake_request rejected: malformed {req!r}')
            return
        if not _finite(req.decel, req.stamp):
            self._warn('rejected_brake',
                       f'brake_request rejected: non-finite {tuple(req)}')
            return
        if not self._admit('brake_request', float(req.stamp), t):
            return
        decel = float(req.decel)
        if decel > 0.0:
            self._warn('rejected_brake', f'brake_request rejected: {decel} > 0 '
                       '(a deceleration is <= 0)')
            return
        if decel < -self.profile.max_decel:
            self._warn('clamped_brake', f'brake_request clamped: {decel} -> '
                       f'{-self.profile.max_decel}')
            decel = -self.profile.max_decel
        self._brake = BrakeRequest(decel, float(req.stamp))

    def _accept_joy(self, joy: Any) -> None:
        m = self.params.joy
        try:
            joy = JoyState(*joy)
            n_axes, n_buttons = len(joy.axes), len(joy.buttons)
        except TypeError:
            self._warn('rejected_joy', f'joy rejected: malformed {joy!r}')
            return
        need_axes = max(m.steer_axis, m.throttle_axis, m.brake_axis) + 1
        if n_axes < need_axes or n_buttons <= m.takeover_button:
            if self.counters['rejected_joy'] == 0:
                self._messages.append(
                    f'joy ignored: {n_axes} axes / {n_buttons} buttons but the '
                    f'mapping needs {need_axes} axes and '
                    f'{m.takeover_button + 1} buttons (check the joy preset)')
            self.counters['rejected_joy'] += 1
            return
        if not _finite(*joy.axes, joy.stamp):
            self._warn('rejected_joy', 'joy rejected: non-finite axes')
            return
        self._joy = joy

    # ---------------------------------------------------------------- control
    def _stop_control(self, decel: float) -> VehicleControl:
        steer = 0.0 if self.params.watchdog_centre_steer else self._steer
        return VehicleControl(throttle=0.0, steer=steer,
                              brake=_clip(decel / self.profile.max_decel, 0.0, 1.0))

    def steer_from_yaw_rate(self, speed: float, yaw_rate: float) -> float:
        """
        Return CARLA steer for a yaw rate (rad/s) at a target speed (m/s).

        delta = atan(omega * L / max(|v|, v_min)), clamped to +-max_steer;
        steer = -delta / max_steer (CARLA: steer > 0 turns right).
        """
        v = max(abs(speed), self.params.v_min)
        delta = math.atan(yaw_rate * self.profile.wheelbase / v)
        delta = _clip(delta, -self.profile.max_steer, self.profile.max_steer)
        return -delta / self.profile.max_steer

    def _pid(self, t: float, speed: float, target: float) -> Tuple[float, float]:
        p = self.params
        dt = 0.0 if self._prev_t is None else max(t - self._prev_t, 0.0)
        error = target - speed
        deriv = 0.0
        if self._prev_error is not None and dt > 0.0:
            deriv = (error - self._prev_error) / dt
        ff = 0.0
        if p.feedforward and target > 0.0:
            force = (self.profile.drag_coefficient * target * target
                     + self.profile.rolling_resistance * self.profile.mass * GRAVITY)
            ff = force / self.profile.max_drive_force
        candidate = _clip(self._integral + error * dt, -p.integral_limit,
                          p.integral_limit)
        u = ff + p.kp * error + p.ki * candidate + p.kd * deriv
        # anti-windup: only integrate while the output is not saturated in
        # the direction the error pushes it
        if not ((u >= 1.0 and error > 0.0) or (u <= -1.0 and error < 0.0)):
            self._integral = candidate
        u = ff + p.kp * error + p.ki * self._integral + p.kd * deriv
        self._prev_error = error
        if target <= 0.0 and abs(speed) < 0.1:
            self._integral = 0.0
            return 0.0, p.standstill_brake
        if u >= 0.0:
            return _clip(u, 0.0, 1.0), 0.0
        return 0.0, _clip(-u * p.brake_gain, 0.0, 1.0)

    def _fresh(self, stamp: float, t: float, timeout: float,
               source: Optional[str] = None) -> bool:
        """Fresh: stamp within ``timeout`` of ``t`` and (per source) arrived within it."""
        if source is not None and self.gates[source].age(t) > timeout:
            return False
        return t - stamp <= timeout

    def _compute(self, t: float, speed: float) -> Tuple[VehicleControl, str]:
        p = self.params
        # AEB request (latched until released or, optionally, expired)
        aeb_brake = 0.0
        if self._brake is not None:
            if p.brake_request_timeout > 0.0 and not self._fresh(
                    self._brake.stamp, t, p.brake_request_timeout, 'brake_request'):
                self._warn('stale_brake', 'brake_request expired '
                           f'(stamp {self._brake.stamp:.3f}, t {t:.3f})')
                self._brake = None
            else:
                aeb_brake = -self._brake.decel / self.profile.max_decel
        # manual inputs
        joy = self._joy
        if joy is not None and not self._fresh(joy.stamp, t, p.joy_timeout):
            joy = None
        if joy is not None:
            m = p.joy
            pedal = m.brake(joy.axes)
            if pedal > p.pedal_threshold:
                self._reset_pid(t)
                steer = self._steer
                if joy.buttons[m.takeover_button]:
                    steer = _clip(-m.steer_sign * joy.axes[m.steer_axis], -1.0, 1.0)
                self._steer = steer
                return VehicleControl(0.0, steer, max(pedal, aeb_brake)), 'brake_pedal'
            if joy.buttons[m.takeover_button]:
                self._reset_pid(t)
                throttle = m.throttle(joy.axes)
                steer = _clip(-m.steer_sign * joy.axes[m.steer_axis], -1.0, 1.0)
                self._steer = steer
                if aeb_brake > 0.0:
                    return VehicleControl(0.0, steer, aeb_brake), 'brake_request'
                return VehicleControl(throttle, steer, 0.0), 'manual'
        # autonomous
        cmd = self._cmd
        if cmd is not None and not self._fresh(cmd.stamp, t, p.cmd_timeout, 'cmd_vel'):
            self._warn('stale_cmd', f'cmd_vel stale: stamp {cmd.stamp:.3f} older '
                       f'than {p.cmd_timeout} s at t {t:.3f}: watchdog stop')
            self._cmd = cmd = None
        if cmd is None:
            if not self._in_watchdog:
                self.counters['watchdog'] += 1
                self._in_watchdog = True
            self._reset_pid(t)
            stop = self._stop_control(p.watchdog_decel)
            if aeb_brake > stop.brake:
                stop.brake = _clip(aeb_brake, 0.0, 1.0)
                return stop, 'brake_request'
            return stop, 'watchdog'
        self._in_watchdog = False
        steer = self.steer_from_yaw_rate(cmd.speed, cmd.yaw_rate)
        self._steer = steer
        throttle, brake = self._pid(t, speed, cmd.speed)
        self._prev_t = t
        if aeb_brake > 0.0:
            self._integral = 0.0
            return VehicleControl(0.0, steer, max(brake, aeb_brake)), 'brake_request'
        return VehicleControl(throttle, steer, brake), 'cmd_vel'

    def _reset_pid(self, t: float) -> None:
        self._integral = 0.0
        self._prev_error = None
        self._prev_t = t

    def update(self, t: float, ego_speed: float,
               cmd: Optional[Sequence[float]] = None,
               brake_request: Optional[Sequence[float]] = None,
               joy: Optional[Any] = None) -> Tuple[VehicleControl, str]:
        """
        Return the control to apply at sim time ``t`` and its source.

        ``cmd`` = (speed m/s, yaw_rate rad/s, stamp s), ``brake_request`` =
        (decel m/s^2 <= 0, stamp s), ``joy`` = :class:`JoyState`; each
        ``None`` when nothing new arrived. A non-finite ``t`` or
        ``ego_speed`` gives a full-brake stop (source ``watchdog``).
        """
        if not _finite(t, ego_speed):
            self._warn('bad_state', f'non-finite time/speed ({t}, {ego_speed}): '
                       'full brake')
            return VehicleControl(0.0, 0.0, 1.0), 'watchdog'
        if cmd is not None:
            self._accept_cmd(cmd, float(t))
        if brake_request is not None:
            self._accept_brake(brake_request, float(t))
        if joy is not None:
            self._accept_joy(joy)
        control, source = self._compute(float(t), float(ego_speed))
        control = control.clamped()
        if self.params.actuation_delay <= 0.0:
            return control, source
        self._queue.append((float(t), control, source))
        while self._queue and self._queue[0][0] <= t - self.params.actuation_delay + 1e-9:
            _, c, s = self._queue.popleft()
            self._delayed = (c, s)
        return self._delayed
