# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Link statistics of the two-host HIL set-up (pure numpy, no rclpy).

- ``ntp_offset_rtt``: NTP-style clock offset and round-trip time from
  ping-pong timestamps (t1 client send, t2 server receive, t3 server send,
  t4 client receive; seconds): offset = ((t2 - t1) + (t3 - t4)) / 2 is the
  server clock minus the client clock, rtt = (t4 - t1) - (t3 - t2).
- ``ClockEstimator``: keeps the last samples and estimates the offset from
  those with the smallest RTT (queueing only ever adds delay, so the
  fastest exchanges carry the least asymmetric error).
- ``count_gaps``: dropped messages from stamp (or frame number) gaps at the
  expected period.
- ``TopicWindow``: per-topic rate, bandwidth, latency percentiles and drops
  over a sliding window of receipts.

Times are seconds (float); latency = receipt time - header stamp, both on
the same clock (wall clocks of two hosts differ by the clock offset: pass
``offset`` to correct; with sim-time stamps and a sim-time receipt clock it
is the age of the data in simulated time, independent of host clocks).
"""

from collections import deque
from typing import Deque, Dict, Sequence, Tuple

import numpy as np

PERCENTILES = (50.0, 95.0, 100.0)


def _finite(name: str, values: object) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{name}: NaN or infinite values')
    return arr


def ntp_offset_rtt(t1: object, t2: object, t3: object, t4: object
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return (offset, rtt) arrays in seconds from ping-pong timestamps.

    ``t1``/``t4`` on the client clock, ``t2``/``t3`` on the server clock;
    scalars or equal-length arrays. Raises ``ValueError`` on NaN/inf, on
    mismatched shapes, or when a reply precedes its ping (t4 < t1, t3 < t2).
    """
    a, b, c, d = (_finite(n, v) for n, v in
                  (('t1', t1), ('t2', t2), ('t3', t3), ('t4', t4)))
    if not a.shape == b.shape == c.shape == d.shape:
        raise ValueError('t1..t4: shapes differ '
                         f'{a.shape} {b.shape} {c.shape} {d.shape}')
    if np.any(d < a) or np.any(c < b):
        raise ValueError('ping-pong timestamps out of order (t4 < t1 or '
                         't3 < t2)')
    offset = ((b - a) + (c - d)) / 2.0
    rtt = (d - a) - (c - b)
    return offset, rtt


def percentiles(values: object, qs: Sequence[float] = PERCENTILES
                ) -> np.ndarray:
    """Return the ``qs`` percentiles of finite ``values`` (NaN if empty)."""
    arr = _finite('values', values).ravel()
    if arr.size == 0:
        return np.full(len(qs), np.nan)
    return np.percentile(arr, qs)


def count_gaps(stamps: object, period: float = 0.0,
               max_gap: float = float('inf')) -> int:
    """
    Return how many messages are missing from a sequence of stamps.

    ``stamps`` are header stamps in seconds or frame numbers (then
    ``period`` = 1) in receipt order; ``period`` 0 takes the median
    interval. A gap of k periods means k - 1 lost messages; repeated or
    out-of-order stamps count nothing, and neither does a step of more
    than ``max_gap`` (a jump: a restart or a bad stamp, see
    :func:`count_jumps`).
    """
    arr = _finite('stamps', stamps).ravel()
    if period < 0 or not np.isfinite(period):
        raise ValueError(f'period must be >= 0 and finite, got {period}')
    if not max_gap > 0:
        raise ValueError(f'max_gap must be > 0, got {max_gap}')
    if arr.size < 2:
        return 0
    diffs = np.diff(arr)
    diffs = diffs[(diffs > 0) & (diffs <= max_gap)]
    if diffs.size == 0:
        return 0
    if period == 0:
        period = float(np.median(diffs))
    steps = np.rint(diffs / period).astype(np.int64)
    return int(np.sum(np.maximum(steps - 1, 0)))


def count_jumps(stamps: object, max_gap: float) -> int:
    """Return how many steps between consecutive stamps exceed ``max_gap`` either way."""
    arr = _finite('stamps', stamps).ravel()
    return int(np.count_nonzero(np.abs(np.diff(arr)) > max_gap)) if arr.size > 1 else 0


class ClockEstimator:
    """NTP-style clock offset / RTT over the last ``window`` exchanges."""

    def __init__(self, window: int = 64, best_fraction: float = 0.25) -> None:
        """Keep ``window`` samples; estimate from the fastest fraction."""
        if window < 1 or not 0.0 < best_fraction <= 1.0:
            raise ValueError('ClockEstimator: window >= 1 and best_fraction '
                             'in (0, 1] required')
        self.best_fraction = best_fraction
        self._offset: Deque[float] = deque(maxlen=window)
        self._rtt: Deque[float] = deque(maxlen=window)

    def add(self, t1: float, t2: float, t3: float, t4: float) -> None:
        """Add one ping-pong exchange (seconds)."""
        offset, rtt = ntp_offset_rtt(t1, t2, t3, t4)
        self._offset.append(float(offset))
        self._rtt.append(float(rtt))

    def __len__(self) -> int:
        """Return the number of samples kept."""
        return len(self._rtt)

    def estimate(self) -> Dict[str, float]:
        """
        Return offset (server - client) and RTT figures in seconds.

        Keys: offset, offset_spread (max - min of the best samples),
        rtt_min, rtt_p50, rtt_p95, rtt_max, samples. NaN without samples.
        """
        n = len(self._rtt)
        if n == 0:
            nan = float('nan')
            return {'offset': nan, 'offset_spread': nan, 'rtt_min': nan,
                    'rtt_p50': nan, 'rtt_p95': nan, 'rtt_max': nan,
                    'samples': 0}
        rtt = np.fromiter(self._rtt, dtype=np.float64, count=n)
        offset = np.fromiter(self._offset, dtype=np.float64, count=n)
        k = max(1, int(np.ceil(n * self.best_fraction)))
        best = np.argsort(rtt, kind='stable')[:k]
        p50, p95, top = np.percentile(rtt, PERCENTILES)
        return {'offset': float(np.median(offset[best])),
                'offset_spread': float(np.ptp(offset[best])),
                'rtt_min': float(rtt.min()), 'rtt_p50': float(p50),
                'rtt_p95': float(p95), 'rtt_max': float(top),
                'samples': n}


class TopicWindow:
    """Receipts of one topic over the last ``horizon`` seconds."""

    def __init__(self, horizon: float = 5.0, max_samples: int = 4096,
                 max_gap: float = 10.0) -> None:
        """
        Keep receipts newer than ``horizon`` s (at most ``max_samples``).

        Stamp steps beyond ``max_gap`` (stamp seconds) are jumps, not drops.
        """
        if not horizon > 0 or max_samples < 2 or not max_gap > 0:
            raise ValueError('TopicWindow: horizon > 0, max_samples >= 2 and '
                             'max_gap > 0')
        self.horizon = float(horizon)
        self.max_gap = float(max_gap)
        self._recv: Deque[float] = deque(maxlen=max_samples)
        self._stamp: Deque[float] = deque(maxlen=max_samples)
        self._size: Deque[int] = deque(maxlen=max_samples)
        self._age: Deque[float] = deque(maxlen=max_samples)
        self.total = 0

    def add(self, recv: float, stamp: float, size: int,
            age: float = float('nan')) -> None:
        """
        Record one message.

        ``recv``: receipt time on a steady clock (s), for rate/bandwidth;
        ``stamp``: header stamp (s), for drops; ``size`` in bytes; ``age``:
        receipt minus stamp on one clock (s), NaN when not comparable.
        """
        if not (np.isfinite(recv) and np.isfinite(stamp)) or size < 0:
            raise ValueError('TopicWindow.add: recv and stamp must be finite '
                             'and size >= 0')
        self._recv.append(float(recv))
        self._stamp.append(float(stamp))
        self._size.append(int(size))
        self._age.append(float(age))
        self.total += 1

    def _trim(self, now: float) -> None:
        while self._recv and self._recv[0] < now - self.horizon:
            self._recv.popleft()
            self._stamp.popleft()
            self._size.popleft()
            self._age.popleft()

    def summary(self, now: float, period: float = 0.0) -> Dict[str, float]:
        """
        Return count, rate_hz, mbit_s, latency p50/p95/max (s), drops, jumps.

        Rate and bandwidth over the window ending at ``now`` (same clock as
        ``recv``); ``period`` as in ``count_gaps``; ``jumps``: stamp steps
        beyond ``max_gap`` either way (not counted as drops: one bad stamp
        would otherwise read as millions of lost messages). ``first_stamp`` and
        ``last_stamp`` (s, NaN when empty) are the stamps of the first and
        last message in the window: drops are the gaps between them (what
        was sent before the first message heard, e.g. before discovery
        matched, is not counted).
        """
        self._trim(now)
        n = len(self._recv)
        out = {'count': n, 'total': self.total, 'rate_hz': 0.0,
               'mbit_s': 0.0, 'latency_p50': float('nan'),
               'latency_p95': float('nan'), 'latency_max': float('nan'),
               'drops': 0, 'jumps': 0, 'first_stamp': float('nan'),
               'last_stamp': float('nan')}
        if n == 0:
            return out
        recv = np.fromiter(self._recv, dtype=np.float64, count=n)
        span = max(now - recv[0], 1e-9) if n > 1 else self.horizon
        size = np.fromiter(self._size, dtype=np.float64, count=n)
        out['rate_hz'] = float((n - 1) / span) if n > 1 else 1.0 / span
        out['mbit_s'] = float(size[1:].sum() * 8.0 / span / 1e6) if n > 1 \
            else float(size.sum() * 8.0 / span / 1e6)
        age = np.fromiter(self._age, dtype=np.float64, count=n)
        age = age[np.isfinite(age)]
        if age.size:
            p50, p95, top = np.percentile(age, PERCENTILES)
            out.update(latency_p50=float(p50), latency_p95=float(p95),
                       latency_max=float(top))
        stamps = np.fromiter(self._stamp, np.float64, n)
        out['drops'] = count_gaps(stamps, period, self.max_gap)
        out['jumps'] = count_jumps(stamps, self.max_gap)
        out['first_stamp'], out['last_stamp'] = float(stamps[0]), float(stamps[-1])
        return out
