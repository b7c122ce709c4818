# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The staged AEB response: idle, warning, partial and full braking (no rclpy).

The stage is chosen from the deceleration the ego would need if it began
braking only after the brake system's dead time (``a_td``, m/s^2, see
:func:`aeb_control.obstacle.required_deceleration` and
:func:`aeb_control.obstacle.predict_after`), compared with the vehicle's
maximum deceleration ``a_max``:

* ``a_td >= full_ratio * a_max``: full braking (``a_max``). With
  ``full_ratio`` = 1 this is exactly the last point to brake,
  ``d = v t_d + v^2 / (2 a_max)`` for a static target; the default 0.85
  keeps a margin for a brake that builds up slower than modelled.
* ``a_td >= partial_ratio * a_max``: partial braking at
  ``partial_gain * a_td`` (at least ``partial_min``), so a moderate threat
  is resolved with a moderate brake.
* ``a_td >= warn_ratio * a_max`` or ``TTC <= warn_ttc``: forward-collision
  warning only.

Braking is held until the car stops, then released after ``hold_time``;
it also ends when the threat is gone (no obstacle or no longer closing
and ``a_td`` below the partial level less ``hysteresis``) for
``release_time``. Stages only go down after the same hysteresis and
delay, so a noisy ``a_td`` cannot make the brake flicker. Braking starts
only once the decisions have asked for it for ``confirm_time`` s (a
glitch, or a turn that begins just then, does not brake), unless ``a_td``
already exceeds ``a_max``. Below
``standstill_speed`` nothing new is started. The driver wins: a manual
brake above ``driver_brake`` or a throttle kick-down above ``kickdown``
releases the AEB (state ``override``) until the pedal is let go. Stale
input (no usable lidar/odometry for ``stale_timeout``) is a blind AEB:
state ``stale``, warning on, and a stop is requested at ``stale_decel``.
"""

from dataclasses import dataclass
import enum
import math
from typing import Optional


class Stage(enum.IntEnum):
    """AEB states, ordered by severity where it matters."""

    IDLE = 0
    WARNING = 1
    PARTIAL = 2
    FULL = 3
    HOLD = 4
    OVERRIDE = 5
    STALE = 6


BRAKING = (Stage.PARTIAL, Stage.FULL, Stage.HOLD, Stage.STALE)


@dataclass(frozen=True)
class StagingParams:
    """
    Thresholds of the staging (SI units).

    Ratios are fractions of ``max_decel`` (m/s^2); times in s, speeds m/s.
    """

    max_decel: float = 9.0
    warn_ratio: float = 0.4
    partial_ratio: float = 0.7
    full_ratio: float = 0.85
    hysteresis: float = 0.1
    partial_gain: float = 1.3
    partial_min: float = 4.0
    warn_ttc: float = 2.0
    standstill_speed: float = 0.5
    stop_speed: float = 0.2
    hold_time: float = 1.0
    hold_decel: float = 3.0
    release_time: float = 0.3
    driver_brake: float = 0.2
    kickdown: float = 0.9
    stale_timeout: float = 0.3
    stale_decel: float = 6.0
    confirm_time: float = 0.1

    def __post_init__(self) -> None:
        """Check ranges; raises ``ValueError`` naming the field."""
        for name in ('max_decel', 'partial_min', 'hold_decel',
                     'stale_decel', 'stale_timeout'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'StagingParams.{name} must be finite and '
                                 f'> 0, got {value}')
        if not 0.0 < self.warn_ratio <= self.partial_ratio <= \
                self.full_ratio <= 1.0:
            raise ValueError('StagingParams: need 0 < warn_ratio <= '
                             'partial_ratio <= full_ratio <= 1, got '
                             f'{self.warn_ratio}, {self.partial_ratio}, '
                             f'{self.full_ratio}')
        if not 0.0 <= self.hysteresis < self.warn_ratio:
            raise ValueError(f'StagingParams.hysteresis must be in [0, '
                             f'warn_ratio), got {self.hysteresis}')


@dataclass
class StagingInput:
    """
    One decision's inputs.

    ``t`` (s); ``ego_speed`` (m/s); ``a_td`` required deceleration after
    the dead time (m/s^2, 0 without an obstacle, inf when unavoidable);
    ``ttc`` (s, inf when not closing); ``closing_speed`` (m/s);
    ``obstacle`` whether one is in the corridor; ``driver_brake`` and
    ``driver_throttle`` the driver's pedals (0..1); ``input_age`` the age
    of the newest usable sensor input (s).
    """

    t: float
    ego_speed: float
    a_td: float = 0.0
    ttc: float = math.inf
    closing_speed: float = 0.0
    obstacle: bool = False
    driver_brake: float = 0.0
    driver_throttle: float = 0.0
    input_age: float = 0.0


@dataclass
class StagingOutput:
    """The stage, the requested deceleration (m/s^2, >= 0) and why."""

    stage: Stage
    decel: float
    warning: bool
    reason: str


class StagingMachine:
    """The AEB state machine (see the module docstring)."""

    def __init__(self, params: Optional[StagingParams] = None) -> None:
        """Start idle with ``params`` (defaults when None)."""
        self.params = params or StagingParams()
        self.stage = Stage.IDLE
        self._decel = 0.0
        self._since = 0.0          # time the current stage started
        self._low_since: Optional[float] = None
        self._hold_since: Optional[float] = None
        self._asked_since: Optional[float] = None

    def reset(self) -> None:
        """Return to idle."""
        self.__init__(self.params)

    def _level(self, inp: StagingInput, offset: float) -> Stage:
        """Return the stage the threat asks for, ratios lowered by offset."""
        p = self.params
        a = inp.a_td / p.max_decel if math.isfinite(inp.a_td) else math.inf
        if not inp.obstacle:
            return Stage.IDLE
        if a >= p.full_ratio - offset:
            return Stage.FULL
        if a >= p.partial_ratio - offset:
            return Stage.PARTIAL
        if a >= p.warn_ratio - offset or (
                inp.closing_speed > 0.0 and inp.ttc <= p.warn_ttc):
            return Stage.WARNING
        return Stage.IDLE

    def _enter(self, stage: Stage, t: float) -> None:
        if stage != self.stage:
            self.stage = stage
            self._since = t
            self._low_since = None

    def _partial_decel(self, a_td: float) -> float:
        p = self.params
        if not math.isfinite(a_td):
            return p.max_decel
        return min(max(p.partial_gain * a_td, p.partial_min), p.max_decel)

    def update(self, inp: StagingInput) -> StagingOutput:
        """Advance the machine by one decision and return its output."""
        p = self.params
        t = inp.t
        speed = inp.ego_speed if math.isfinite(inp.ego_speed) else 0.0
        # 1. The driver wins.
        if inp.driver_brake >= p.driver_brake or \
                inp.driver_throttle >= p.kickdown:
            self._enter(Stage.OVERRIDE, t)
            self._hold_since = None
            return self._out(0.0, False, 'driver override')
        if self.stage == Stage.OVERRIDE:
            self._enter(Stage.IDLE, t)
        # 2. A blind AEB requests a stop.
        if not math.isfinite(inp.input_age) or \
                inp.input_age > p.stale_timeout:
            self._enter(Stage.STALE, t)
            return self._out(p.stale_decel, True,
                             f'no usable input for {inp.input_age:.2f} s')
        if self.stage == Stage.STALE:
            self._enter(Stage.HOLD if speed <= p.stop_speed else Stage.IDLE,
                        t)
            self._hold_since = t if self.stage == Stage.HOLD else None
        # 3. Braking is held until the car stops, then released.
        if self.stage in (Stage.PARTIAL, Stage.FULL) and \
                speed <= p.stop_speed:
            self._enter(Stage.HOLD, t)
            self._hold_since = t
        if self.stage == Stage.HOLD:
            if self._hold_since is not None and \
                    t - self._hold_since >= p.hold_time:
                self._enter(Stage.IDLE, t)
                return self._out(0.0, False, 'released after hold')
            return self._out(p.hold_decel, False, 'holding at standstill')
        # 4. Nothing new at standstill.
        if speed < p.standstill_speed and self.stage not in BRAKING:
            self._enter(Stage.IDLE, t)
            return self._out(0.0, False, 'standstill')
        want = self._level(inp, 0.0)
        keep = self._level(inp, p.hysteresis)
        if want >= Stage.PARTIAL:
            if self._asked_since is None:
                self._asked_since = t
        else:
            self._asked_since = None
        critical = not math.isfinite(inp.a_td) or inp.a_td >= p.max_decel
        if want >= Stage.PARTIAL and self.stage < Stage.PARTIAL and \
                t - self._asked_since < p.confirm_time - 1e-9 and \
                not critical:
            want = Stage.WARNING        # confirm before braking
        if self.stage in (Stage.PARTIAL, Stage.FULL):
            if want == Stage.FULL and self.stage == Stage.PARTIAL:
                self._enter(Stage.FULL, t)
            gone = (not inp.obstacle or inp.closing_speed <= 0.0) and \
                keep < Stage.PARTIAL
            if gone:
                if self._low_since is None:
                    self._low_since = t
                if t - self._low_since >= p.release_time:
                    self._enter(keep, t)
                    return self._out(0.0, keep == Stage.WARNING,
                                     'threat gone')
            else:
                self._low_since = None
            if self.stage == Stage.FULL:
                return self._out(p.max_decel, True, 'full braking')
            return self._out(self._partial_decel(inp.a_td), True,
                             'partial braking')
        # 5. Idle / warning with hysteresis downwards.
        if want > self.stage:
            self._enter(want, t)
        elif keep < self.stage:
            if self._low_since is None:
                self._low_since = t
            if t - self._low_since >= p.release_time:
                self._enter(keep, t)
        else:
            self._low_since = None
        if self.stage == Stage.FULL:
            return self._out(p.max_decel, True, 'full braking')
        if self.stage == Stage.PARTIAL:
            return self._out(self._partial_decel(inp.a_td), True,
                             'partial braking')
        if self.stage == Stage.WARNING:
            return self._out(0.0, True, 'forward collision warning')
        return self._out(0.0, False, 'clear')

    def _out(self, decel: float, warning: bool, reason: str) -> StagingOutput:
        self._decel = float(decel)
        return StagingOutput(stage=self.stage, decel=self._decel,
                             warning=bool(warning), reason=reason)
