# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The stamp policy every node applies to its inputs (no rclpy).

``now`` is the node's clock in seconds: sim time from ``/clock`` with
``use_sim_time``, else system time. Each input topic of a node has an
:class:`InputGate`:

* a header stamp more than ``future_tolerance`` ahead of ``now``, more than
  the input's ``timeout`` behind it, or not finite, is rejected (counted;
  a warning naming the topic and the offset, at most one per
  ``warn_period`` wall seconds and reason);
* ``monotonic`` gates (commands) also drop a stamp older than the last one
  accepted (out of order);
* freshness (:meth:`InputGate.fresh`) is judged by the arrival of the last
  accepted message on the node's clock, never by its header stamp, so no
  stamp can keep a watchdog quiet;
* a node stamps an output with the stamp of the input it came from only when
  the gate accepted that input; otherwise (a watchdog stop, a stale-input
  decision) it stamps with ``now``.

:class:`ClockWatch` reports the node clock jumping back (a replay restarted,
the simulator reloaded its world): the node then resets its time-based state
(tracks, maps, out-of-order guards, gates) and logs one info line.

``future_tolerance`` (:data:`FUTURE_TOLERANCE`) covers a node's clock lagging
the stamps it receives: an input of frame k can be processed before the
``/clock`` message of frame k (one ``fixed_delta_seconds``, or the bridge's
``clock_period`` when /clock is thinned out, at most 0.2 s).
"""

import collections
import math
import time
from typing import Callable, Dict, List, NamedTuple, Optional

#: Largest lead (s) of an input stamp over the node's clock that is accepted.
FUTURE_TOLERANCE = 0.25
#: Largest lead (s) of a command over the bridge's own sim time (the bridge
#: makes the time: a command can only be from a frame it already published;
#: ns rounding of builtin_interfaces/Time).
COMMAND_TOLERANCE = 1e-3
#: The node clock going back by more than this (s) is a jump (state reset).
JUMP_TOLERANCE = 0.1
#: Default wall seconds between two warnings of one kind.
WARN_PERIOD = 2.0

REASONS = ('non-finite', 'future', 'stale', 'out-of-order')


class Verdict(NamedTuple):
    """The policy's answer for one stamp: accepted, why not, stamp - now (s)."""

    ok: bool
    reason: str = ''
    offset: float = 0.0


def check_stamp(stamp: float, now: float, timeout: float,
                future_tolerance: float = FUTURE_TOLERANCE) -> Verdict:
    """
    Judge one header stamp (s) against the node clock ``now`` (s).

    Rejected: a non-finite stamp, one more than ``future_tolerance`` ahead
    of ``now`` (``future``) or more than ``timeout`` behind (``stale``).
    """
    try:
        stamp, now = float(stamp), float(now)
    except (TypeError, ValueError):
        return Verdict(False, 'non-finite', math.nan)
    if not (math.isfinite(stamp) and math.isfinite(now)):
        return Verdict(False, 'non-finite', math.nan)
    offset = stamp - now
    if offset > future_tolerance:
        return Verdict(False, 'future', offset)
    if -offset > timeout:
        return Verdict(False, 'stale', offset)
    return Verdict(True, '', offset)


class Throttle:
    """At most one event per ``period`` wall seconds and key."""

    def __init__(self, period: float = WARN_PERIOD,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.period = float(period)
        self.wall = wall
        self._last: Dict[str, float] = {}

    def ready(self, key: str) -> bool:
        """Return True (and start a new period) when ``key`` may log now."""
        now = self.wall()
        if now - self._last.get(key, -math.inf) >= self.period:
            self._last[key] = now
            return True
        return False


class InputGate:
    """
    The stamp policy and the arrival-based freshness of one input topic.

    ``warn`` receives the (throttled) rejection warnings; without it they
    queue for :meth:`take_warnings`. ``timeout`` (s, node clock) is both the
    oldest accepted stamp and how long an accepted input stays fresh.
    """

    def __init__(self, topic: str, timeout: float,
                 future_tolerance: float = FUTURE_TOLERANCE,
                 monotonic: bool = False,
                 warn: Optional[Callable[[str], None]] = None,
                 throttle: Optional[Throttle] = None) -> None:
        if not (math.isfinite(timeout) and timeout > 0.0):
            raise ValueError(f'{topic}: input timeout must be > 0, got {timeout}')
        self.topic = topic
        self.timeout = float(timeout)
        self.future_tolerance = float(future_tolerance)
        self.monotonic = bool(monotonic)
        self.warn = warn
        self.throttle = throttle if throttle is not None else Throttle()
        self.arrival: Optional[float] = None
        self.stamp: Optional[float] = None
        self.accepted = 0
        self.rejected: Dict[str, int] = collections.Counter()
        self._queued: List[str] = []

    def check(self, stamp: float, now: float) -> Verdict:
        """Return the verdict for ``stamp`` at ``now`` without recording it."""
        verdict = check_stamp(stamp, now, self.timeout, self.future_tolerance)
        if verdict.ok and self.monotonic and self.stamp is not None \
                and float(stamp) < self.stamp:
            return Verdict(False, 'out-of-order', float(stamp) - self.stamp)
        return verdict

    def admit(self, stamp: float, now: float) -> bool:
        """Apply the policy; on success record the arrival at ``now``."""
        verdict = self.check(stamp, now)
        if verdict.ok:
            self.arrival = float(now)
            self.stamp = float(stamp)
            self.accepted += 1
            return True
        self.rejected[verdict.reason] += 1
        if self.throttle.ready(f'{self.topic}/{verdict.reason}'):
            self._emit(self.describe(verdict, stamp, now))
        return False

    def describe(self, verdict: Verdict, stamp: float, now: float) -> str:
        """Return the warning text of a rejection."""
        n = self.rejected[verdict.reason]
        if verdict.reason == 'out-of-order':
            what = (f'stamp {float(stamp):.3f} s is {-verdict.offset:.3f} s older '
                    f'than the last accepted ({self.stamp:.3f} s)')
        elif verdict.reason == 'future':
            what = (f'stamp {float(stamp):.3f} s is {verdict.offset:.3f} s ahead of '
                    f'the node clock {float(now):.3f} s (tolerance '
                    f'{self.future_tolerance:g} s)')
        elif verdict.reason == 'stale':
            what = (f'stamp {float(stamp):.3f} s is {-verdict.offset:.3f} s behind '
                    f'the node clock {float(now):.3f} s (timeout {self.timeout:g} s)')
        else:
            what = f'stamp {stamp!r} or clock {now!r} is not finite'
        return f'{self.topic}: {what}; dropped ({n} {verdict.reason} so far)'

    def _emit(self, text: str) -> None:
        if self.warn is not None:
            self.warn(text)
        else:
            self._queued.append(text)

    def take_warnings(self) -> List[str]:
        """Return and clear the queued warnings (gates without ``warn``)."""
        out, self._queued = self._queued, []
        return out

    def age(self, now: float) -> float:
        """Return node-clock seconds since the last accepted arrival (inf: none)."""
        if self.arrival is None:
            return math.inf
        return max(float(now) - self.arrival, 0.0)

    def fresh(self, now: float) -> bool:
        """Return True while the last accepted input arrived within ``timeout``."""
        return self.arrival is not None and self.age(now) <= self.timeout

    def reset(self) -> None:
        """Forget the last accepted input (clock jump back, restart)."""
        self.arrival = None
        self.stamp = None


class ClockWatch:
    """Detect the node clock going back by more than ``tolerance`` seconds."""

    def __init__(self, tolerance: float = JUMP_TOLERANCE) -> None:
        self.tolerance = float(tolerance)
        self.last: Optional[float] = None

    def jumped_back(self, now: float) -> bool:
        """Record ``now``; return True when it is a jump back."""
        now = float(now)
        if not math.isfinite(now):
            return False
        jumped = self.last is not None and now < self.last - self.tolerance
        if self.last is None or jumped or now > self.last:
            self.last = now
        return jumped


class RateLimit:
    """
    A token bucket: at most ``rate`` events per wall second, bursts of ``burst``.

    A source publishing faster (a flood) has the excess dropped; ``rate``
    <= 0 disables the limit.
    """

    def __init__(self, rate: float, burst: Optional[float] = None,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else max(self.rate * 0.5, 1.0)
        self.wall = wall
        self._tokens = self.burst
        self._last: Optional[float] = None
        self.dropped = 0

    def allow(self) -> bool:
        """Return True when one more event fits the rate now."""
        if self.rate <= 0.0:
            return True
        now = self.wall()
        if self._last is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.dropped += 1
        return False
