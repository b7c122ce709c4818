# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Live progress of a run: one line with lap, speed, cones, sim time, RTF, ETA.

:class:`RunProgress` is the pure part (fed with sim time, speed and
referee events; formats the line; tested alone). :mod:`hil_bridge.tools.progress_node`
is the ROS shell, run as a process of its own that the runner starts beside
the nodes: it subscribes to ``/clock``, the ego's odometry and the referee
events of the contract and prints the line for the runner to show.
"""

import collections
import json
import math
from typing import Any, Deque, Dict, List, Optional, Tuple

#: wall-clock window (s) over which the real-time factor is measured
RTF_WINDOW = 5.0


def _fmt_time(seconds: Optional[float]) -> str:
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return '-'
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
    return f'{seconds // 60}:{seconds % 60:02d}'


class RunProgress:
    """The figures of the progress line (no ROS)."""

    def __init__(self, laps_required: int = 0) -> None:
        """Start empty; ``laps_required`` 0 = not a lap mission."""
        self.laps_required = int(laps_required)
        self.sim_time = 0.0
        self.speed = 0.0
        self.laps = 0
        self.lap_times: List[float] = []
        self.cones_hit = 0
        self.off_course = 0
        self.finished = ''
        self._lap_start: Optional[float] = None
        self._samples: Deque[Tuple[float, float]] = collections.deque()

    def on_clock(self, sim_time: float, wall: float) -> None:
        """Record sim time ``sim_time`` (s) seen at wall time ``wall`` (s)."""
        self.sim_time = float(sim_time)
        self._samples.append((wall, self.sim_time))
        while len(self._samples) > 2 and \
                wall - self._samples[0][0] > RTF_WINDOW:
            self._samples.popleft()

    def on_speed(self, speed: float) -> None:
        """Record the ego's speed (m/s); the first lap starts on moving."""
        self.speed = float(speed)
        if self._lap_start is None and abs(speed) > 0.1:
            self._lap_start = self.sim_time

    def on_event(self, kind: str, values: Dict[str, str]) -> None:
        """Record one referee event (``lap``, ``cone_hit``, ...)."""
        t = _float(values.get('sim_time'), self.sim_time)
        if kind == 'lap':
            self.laps = int(_float(values.get('lap'), self.laps + 1))
            self.lap_times.append(_float(values.get('lap_time'), math.nan))
            self._lap_start = t
        elif kind == 'cone_hit':
            self.cones_hit += 1
        elif kind == 'off_course':
            self.off_course += 1
        elif kind == 'mission_end':
            self.finished = values.get('status', 'ended')

    def rtf(self) -> Optional[float]:
        """Return sim seconds per wall second over the last few seconds."""
        if len(self._samples) < 2:
            return None
        (w0, s0), (w1, s1) = self._samples[0], self._samples[-1]
        return (s1 - s0) / (w1 - w0) if w1 > w0 else None

    def eta(self) -> Optional[float]:
        """
        Return the wall seconds left (None before the first lap).

        The laps left are taken as long as the last one: lap 1 (cone drive,
        exploring) is much slower than the laps after it (race line), so a
        mean over all laps would overestimate.
        """
        rtf = self.rtf()
        done = [t for t in self.lap_times if math.isfinite(t)]
        if not self.laps_required or not done or not rtf or rtf <= 0:
            return None
        left_laps = max(0, self.laps_required - self.laps)
        in_lap = self.lap_time() or 0.0
        sim_left = max(0.0, left_laps * done[-1] - in_lap)
        return sim_left / rtf

    def lap_time(self) -> Optional[float]:
        """Return the running lap's time so far (s of sim time)."""
        if self._lap_start is None:
            return None
        return max(0.0, self.sim_time - self._lap_start)

    def line(self) -> str:
        """Return the one-line summary."""
        parts = []
        if self.laps_required:
            k = min(self.laps + 1, self.laps_required)
            lap = self.lap_time()
            parts.append(f'lap {k}/{self.laps_required} '
                         f'{"-" if lap is None else f"{lap:5.1f} s"}')
            if self.lap_times:
                parts.append(f'last {self.lap_times[-1]:.2f} s')
        parts.append(f'{self.speed * 3.6:5.1f} km/h')
        parts.append(f'cones hit {self.cones_hit}')
        if self.off_course:
            parts.append(f'off course {self.off_course}')
        parts.append(f'sim {self.sim_time:6.1f} s')
        rtf = self.rtf()
        parts.append(f'RTF {"-" if rtf is None else f"{rtf:.2f}"}')
        parts.append(f'ETA {_fmt_time(self.eta())}')
        if self.finished:
            parts.append(self.finished)
        return ' | '.join(parts)


def _float(value: Any, default: float) -> float:
    try:
        out = float(json.loads(value)) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return default
    return out


#: what the progress process writes before each line (the runner reads it)
PROGRESS_PREFIX = 'PROGRESS_LINE '
