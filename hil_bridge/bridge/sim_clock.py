# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
When may the bridge tick the world? The clock modes as a pure state machine.

Modes (``select_mode``):

* ``async``: the simulator runs on its own (CARLA asynchronous mode); the
  bridge polls ``backend.latest()`` and publishes what it gets;
* ``sync``: the bridge ticks the world by ``fixed_delta_seconds`` of sim
  time, as fast as it can (``real_time_factor`` 0) or paced so that sim
  time runs ``real_time_factor`` times wall time (1.0 real time, 0.5 slow
  motion);
* ``lockstep`` (``wait_for_control``): synchronous, and after publishing
  frame k the bridge waits until every topic of ``lockstep_topics`` has
  delivered a message whose header stamp is >= frame k's stamp (onboard
  nodes stamp their outputs with the stamp of the input they computed
  from), or ``lockstep_timeout`` wall seconds have passed (counted and
  reported). Stamps ahead of the newest published frame are ignored: one
  future-stamped message cannot release the frames after it. Until each
  topic has delivered its first message the wait is
  ``startup_timeout`` instead (0 = forever), so slow-starting nodes do not
  make the first frames differ between runs.

Pause/step: ``pause(True)`` stops ticking; ``step(n)`` allows n more frames
and then pauses (AirSim's continueForFrames), ``advance_seconds(T)`` allows
ceil(T / fixed_delta_seconds) frames (continueForTime). Wall times are
passed in by the caller (``time.monotonic()`` in the node), so every
decision is testable without sleeping.
"""

import math
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

MODES = ('async', 'sync', 'lockstep')

#: Stamps go through builtin_interfaces/Time (ns); compare with this slack.
STAMP_EPS = 1e-6


def select_mode(synchronous_mode: bool, wait_for_control: bool) -> str:
    """
    Return the clock mode for the two bridge parameters.

    ``wait_for_control`` needs synchronous mode: raises ``ValueError``
    when asked for lockstep on an asynchronous world.
    """
    if wait_for_control and not synchronous_mode:
        raise ValueError('wait_for_control (lockstep) needs synchronous_mode: '
                         'an asynchronous world cannot wait for the controller')
    if wait_for_control:
        return 'lockstep'
    return 'sync' if synchronous_mode else 'async'


class Decision(NamedTuple):
    """What the bridge loop should do now: tick, or wait ``wait`` seconds."""

    tick: bool
    wait: float
    message: Optional[str] = None


class SimClock:
    """
    Decide when the bridge may produce the next frame.

    Call :meth:`on_command` for every message on a lockstep topic,
    :meth:`on_published` after publishing a frame, :meth:`ready` before
    ticking and :meth:`on_tick` right after a tick.
    """

    def __init__(self, mode: str, fixed_delta_seconds: float,
                 real_time_factor: float = 0.0,
                 lockstep_topics: Iterable[str] = ('cmd_vel',),
                 lockstep_timeout: float = 1.0, startup_timeout: float = 30.0,
                 poll_period: float = 0.002) -> None:
        if mode not in MODES:
            raise ValueError(f'clock mode {mode!r} not in {MODES}')
        for name, value in (('fixed_delta_seconds', fixed_delta_seconds),
                            ('real_time_factor', real_time_factor),
                            ('lockstep_timeout', lockstep_timeout),
                            ('startup_timeout', startup_timeout),
                            ('poll_period', poll_period)):
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f'{name} must be finite and >= 0, got {value}')
        if fixed_delta_seconds <= 0.0 and mode != 'async':
            raise ValueError('fixed_delta_seconds must be > 0 in synchronous '
                             f'modes, got {fixed_delta_seconds}')
        self.mode = mode
        self.dt = float(fixed_delta_seconds)
        self.real_time_factor = float(real_time_factor)
        self.topics: List[str] = list(lockstep_topics) if mode == 'lockstep' else []
        if mode == 'lockstep' and not self.topics:
            raise ValueError('lockstep needs at least one topic in lockstep_topics')
        self.lockstep_timeout = float(lockstep_timeout)
        self.startup_timeout = float(startup_timeout)
        self.poll_period = float(poll_period)
        self.latest: Dict[str, float] = {}
        self.timeouts = 0
        self.paused = False
        self.budget: Optional[int] = None
        self.frames = 0
        self._waiting_for: Optional[float] = None
        self._newest: Optional[float] = None
        self._published_wall = 0.0
        self._next_due: Optional[float] = None

    # ------------------------------------------------------------- controls
    def pause(self, flag: bool) -> None:
        """Pause (True) or resume (False, also cancels a pending step)."""
        self.paused = bool(flag)
        self.budget = None

    def step(self, frames: int = 1) -> None:
        """Allow ``frames`` more frames, then pause."""
        if self.mode == 'async':
            raise ValueError('step/advance need synchronous_mode: an '
                             'asynchronous world is not ticked by the bridge')
        if frames < 1:
            raise ValueError(f'step needs frames >= 1, got {frames}')
        self.budget = (self.budget or 0) + int(frames) if self.paused else int(frames)
        self.paused = True

    def advance_seconds(self, seconds: float) -> int:
        """Allow enough frames for ``seconds`` of sim time; return how many."""
        if not math.isfinite(seconds) or seconds <= 0.0:
            raise ValueError(f'advance needs seconds > 0, got {seconds}')
        frames = max(1, int(math.ceil(seconds / self.dt - 1e-9)))
        self.step(frames)
        return frames

    # --------------------------------------------------------------- events
    def on_command(self, topic: str, stamp: float) -> bool:
        """
        Record a message on a lockstep topic with its header stamp (s).

        A stamp ahead of the newest published frame cannot have been
        computed from a frame: it is ignored (returns False), so one
        future-stamped message never satisfies the frames to come. A
        stamp behind the frames already counted does not lower them.
        """
        if topic not in self.topics or not math.isfinite(stamp):
            return False
        if self._newest is not None and stamp > self._newest + STAMP_EPS:
            return False
        self.latest[topic] = max(stamp, self.latest.get(topic, -math.inf))
        return True

    def announce(self, stamp: float) -> None:
        """
        Record that the frame with sim-time ``stamp`` is about to be published.

        Call it before the frame's messages go out: a command computed
        from the frame can arrive before :meth:`on_published` is called.
        """
        stamp = float(stamp)
        if self._newest is not None and stamp < self._newest - STAMP_EPS:
            self.latest.clear()  # the world's time went back (reloaded)
        self._newest = stamp

    def on_published(self, stamp: float, wall: float) -> None:
        """Record that the frame with sim-time ``stamp`` was published."""
        self.announce(stamp)
        self._waiting_for = float(stamp)
        self._published_wall = float(wall)

    def on_tick(self, wall: float) -> None:
        """Record a tick at wall time ``wall`` (consumes the step budget)."""
        self.frames += 1
        if self.budget is not None:
            self.budget -= 1
        if self.real_time_factor > 0.0:
            period = self.dt / self.real_time_factor
            if self._next_due is None or wall - self._next_due > period:
                self._next_due = wall + period  # too far behind: no burst
            else:
                self._next_due += period

    def started(self) -> bool:
        """Return True once every lockstep topic has delivered a message."""
        return all(name in self.latest for name in self.topics)

    def missing(self) -> List[str]:
        """Return the lockstep topics without a command for the last frame."""
        if self._waiting_for is None:
            return []
        return [name for name in self.topics
                if self.latest.get(name, -math.inf) < self._waiting_for - STAMP_EPS]

    def awaiting(self, wall: float, then: str) -> Tuple[bool, Optional[str]]:
        """
        Return (still waiting, timeout message) for the last frame's answers.

        Waiting while a lockstep topic has no command for the frame last
        published and its limit (``lockstep_timeout``, before every topic
        has answered once ``startup_timeout``; 0 = none) has not passed
        since it was published at wall time ``wall``. When it has, the
        timeout is counted, the frame is given up and the message says
        what was missing and ``then`` what happens next.
        """
        missing = self.missing()
        if not missing:
            return False, None
        limit = self.lockstep_timeout if self.started() else self.startup_timeout
        if limit == 0.0 or wall - self._published_wall < limit:
            return True, None
        self.timeouts += 1
        message = (f'lockstep: no {", ".join(missing)} for the frame at '
                   f't={self._waiting_for:.3f} s within {limit:g} s '
                   f'(timeout #{self.timeouts}); {then}')
        self._waiting_for = None
        return False, message

    # ------------------------------------------------------------- decision
    def ready(self, wall: float) -> Decision:
        """Return whether to tick now and, if not, how long to wait (s)."""
        if self.paused and not self.budget:
            return Decision(False, 0.05)
        if self.mode == 'async':
            return Decision(True, 0.0)
        waiting, message = self.awaiting(wall, 'ticking on')
        if waiting:
            return Decision(False, self.poll_period)
        if self._next_due is not None and self.real_time_factor > 0.0 \
                and wall < self._next_due - 1e-9:
            return Decision(False, self._next_due - wall, message)
        return Decision(True, 0.0, message)
