# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The referee of the built-in simulator: cones, course, collisions, timing.

Call :meth:`Referee.update` once per step with the ego state (REP-103
``map``, metres, radians, seconds); it returns the
:class:`hil_bridge.bridge.backend.Event` s of that step and keeps a
:class:`RefereeResult`. Event kinds and their ``data``:

* ``cone_hit``: ``index``, ``class_id``, ``x``, ``y``, ``speed`` (each cone
  once; it is flagged in ``ConeArray.knocked``), followed by a
  ``penalty`` event ``{'kind': 'DOO', 'seconds': 2.0}`` for
  Formula Student missions;
* ``off_course``: ``distance`` (m, of the nearest wheel beyond the track
  edge), ``s`` (m, arc position on the centre line where the car left)
  once per excursion (all four wheels more than ``off_course_margin``
  outside the boundary of the section the car is in); ``penalty`` ``OC``
  10 s; ``back_on_course``: ``s``, ``off_distance`` (m driven while off),
  ``off_time`` (s) when a wheel is back inside the boundary near where
  the car left;
* ``collision``: ``other``, ``impact_speed`` (m/s, closing speed along
  the line between the boxes), ``relative_speed`` (m/s, norm of the
  velocity difference), ``ego_speed``; once per contact;
* ``lap``: ``lap`` (1-based), ``lap_time``, ``total_time`` (s);
* ``mission_end``: ``status`` (``finished``, ``DNF`` or ``timeout``),
  ``reason``, ``mission_time``, ``penalty_time``, ``laps``.

Missions: FS missions (``acceleration``, ``skidpad``, ``autocross``,
``trackdrive``) finish after ``laps`` timed laps (a lap starts when the
front bumper crosses the ``start`` line forwards and ends at the ``finish``
line, after at least ``min_lap_distance``, default half a lap); ``aeb``
finishes when the ego has driven and then stands still for ``stop_time``
seconds; ``free`` only ends by collision or timeout. Any collision with a
vehicle or obstacle is a DNF; so is a stall (standing still for
``stall_time`` after having moved) in an FS mission.

Leaving the track (FS rules: off course = all four wheels outside the
boundary, 10 s; a car that cannot rejoin, or gains by leaving, is out):
the referee follows the car's *section*, its arc position ``s`` on the
centre line, searched only in a window around the last one (so a
neighbouring section a few metres away, or the other leg of a hairpin,
is never mistaken for the car's own). The boundary is the centre line
offset by half the track width. In an FS mission an excursion ends the
run with a DNF when the car, off course, has driven more than
``off_course_limit`` metres or spent more than ``off_course_time``
seconds (``reason`` ``off course: ...``: the car circles the infield),
or when it comes back onto the track anywhere but within
``rejoin_tolerance`` metres (along the track) of where it left
(``course cut: ...``: it skipped cones, or crossed into a neighbouring
section); a car on the track that falls more than ``rejoin_tolerance``
behind its furthest arc position of the lap drives the wrong way (DNF
``wrong way``). The mission times out
at ``timeout``. Given the physical reference time of each lap
(``reference_lap_times``, :mod:`hil_bridge.sim.reference_lap`), the result
reports ``lap_time_ratio`` = lap time / reference per lap.
"""

from dataclasses import dataclass, field
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.bridge.backend import Event
from hil_bridge.interface.cones import CONE_BLUE, CONE_SIZE
from hil_bridge.interface.track import ConeArray
import numpy as np
from scipy.spatial import cKDTree

FS_MISSIONS = ('acceleration', 'skidpad', 'autocross', 'trackdrive')
PENALTY_SECONDS = {'DOO': 2.0, 'OC': 10.0}
#: Resampling step of the centre line for the course rules (m).
COURSE_STEP = 0.1
#: How far back / ahead of the car's last arc position its section is
#: searched each step (m).
WINDOW_BACK, WINDOW_AHEAD = 5.0, 10.0


@dataclass
class RefereeResult:
    """Summary of a run (times in sim seconds)."""

    mission: str = ''
    status: str = 'running'
    reason: str = ''
    laps: int = 0
    laps_required: int = 1
    lap_times: List[float] = field(default_factory=list)
    cones_hit: int = 0
    knocked_cones: List[int] = field(default_factory=list)
    off_courses: int = 0
    collisions: List[Dict[str, Any]] = field(default_factory=list)
    penalties: List[Dict[str, Any]] = field(default_factory=list)
    penalty_time: float = 0.0
    mission_time: Optional[float] = None
    start_time: Optional[float] = None
    end_time: Optional[float] = None
    #: physical reference time of each lap (s), see
    #: :mod:`hil_bridge.sim.reference_lap`; empty when unknown
    reference_lap_times: List[float] = field(default_factory=list)

    @property
    def best_lap(self) -> Optional[float]:
        """Return the fastest lap time (s) or None."""
        return min(self.lap_times) if self.lap_times else None

    @property
    def total_time(self) -> Optional[float]:
        """Return mission time plus penalties (s), None while unfinished."""
        if self.mission_time is None:
            return None
        return self.mission_time + self.penalty_time

    def as_dict(self) -> Dict[str, Any]:
        """Return the summary as a plain dict (JSON-friendly)."""
        return {'mission': self.mission, 'status': self.status,
                'reason': self.reason, 'laps': self.laps,
                'laps_required': self.laps_required,
                'lap_times': list(self.lap_times),
                'best_lap': self.best_lap, 'cones_hit': self.cones_hit,
                'knocked_cones': list(self.knocked_cones),
                'off_courses': self.off_courses,
                'collisions': list(self.collisions),
                'penalties': list(self.penalties),
                'penalty_time': self.penalty_time,
                'mission_time': self.mission_time,
                'total_time': self.total_time,
                'reference_lap_times': [round(t, 3) for t in
                                        self.reference_lap_times],
                'lap_time_ratio': self.lap_time_ratio}

    @property
    def lap_time_ratio(self) -> List[Optional[float]]:
        """Return lap time / reference lap time per lap (None: unknown)."""
        ref = self.reference_lap_times
        return [round(lap / ref[i], 4) if i < len(ref) and ref[i] > 0.0
                else None for i, lap in enumerate(self.lap_times)]


@dataclass
class Box:
    """
    An oriented box footprint in ``map``.

    Centre ``x, y`` (m), ``yaw`` (rad), ``length``/``width`` (m), map
    velocity ``vx, vy`` (m/s), ``name`` (role name) and ``box_offset``
    (m, box centre ahead of the vehicle origin, the rear axle).
    """

    x: float
    y: float
    yaw: float
    length: float
    width: float
    vx: float = 0.0
    vy: float = 0.0
    name: str = ''
    box_offset: float = 0.0


def boxes_overlap(a: Box, b: Box) -> bool:
    """Return True if two oriented rectangles overlap (separating axes)."""
    d = np.array([b.x - a.x, b.y - a.y])
    axes = []
    for box in (a, b):
        c, s = math.cos(box.yaw), math.sin(box.yaw)
        axes.append((np.array([c, s]), np.array([-s, c])))

    def radius(box: Box, ax: np.ndarray, u: Tuple) -> float:
        return (box.length / 2.0 * abs(float(ax @ u[0]))
                + box.width / 2.0 * abs(float(ax @ u[1])))
    for u in axes:
        for ax in u:
            if abs(float(d @ ax)) > radius(a, ax, axes[0]) + \
                    radius(b, ax, axes[1]):
                return False
    return True


def cones_in_box(box: Box, cone_xy: np.ndarray, cone_radius: np.ndarray
                 ) -> np.ndarray:
    """Return a mask of the cone bases (circles) touching a box."""
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    rel = cone_xy - np.array([box.x, box.y])
    lx = rel[:, 0] * c + rel[:, 1] * s
    ly = -rel[:, 0] * s + rel[:, 1] * c
    dx = np.maximum(np.abs(lx) - box.length / 2.0, 0.0)
    dy = np.maximum(np.abs(ly) - box.width / 2.0, 0.0)
    return dx * dx + dy * dy <= cone_radius * cone_radius


class Referee:
    """
    Judge one run of a scenario.

    ``cones`` is shared with the backend (its ``knocked`` mask is
    updated in place); ``track`` a ``hil_bridge.interface.track.Track`` or
    None; ``wheelbase``/``track_width`` place the four wheels for the
    off-course rule (body origin at the rear axle).
    """

    def __init__(self, mission: str, cones: ConeArray, track: Any = None,
                 laps: int = 1, timeout: float = 120.0,
                 wheelbase: float = 1.53, track_width: float = 1.2,
                 off_course_margin: float = 0.5, stall_time: float = 10.0,
                 stop_time: float = 1.0,
                 min_lap_distance: Optional[float] = None,
                 reference_lap_times: Sequence[float] = (),
                 off_course_limit: float = 20.0, off_course_time: float = 10.0,
                 rejoin_tolerance: float = 10.0) -> None:
        if laps < 1:
            raise ValueError(f'Referee: laps must be >= 1, got {laps}')
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f'Referee: timeout must be > 0, got {timeout}')
        for name, value in (('off_course_limit', off_course_limit),
                            ('off_course_time', off_course_time),
                            ('rejoin_tolerance', rejoin_tolerance)):
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f'Referee: {name} must be > 0, got {value}')
        self.off_course_limit = float(off_course_limit)
        self.off_course_time = float(off_course_time)
        self.rejoin_tolerance = float(rejoin_tolerance)
        self.mission = mission
        self.cones = cones
        self.track = track
        self.fs = mission in FS_MISSIONS
        self.timeout = float(timeout)
        self.margin = float(off_course_margin)
        self.stall_time = float(stall_time)
        self.stop_time = float(stop_time)
        self.result = RefereeResult(
            mission=mission, laps_required=int(laps),
            reference_lap_times=[float(t) for t in reference_lap_times])
        self._radius = np.array(
            [CONE_SIZE.get(int(k), CONE_SIZE[CONE_BLUE])[0] / 2.0
             for k in cones.class_id]) if len(cones) else np.zeros(0)
        self._wheels = np.array([[0.0, track_width / 2.0],
                                 [0.0, -track_width / 2.0],
                                 [wheelbase, track_width / 2.0],
                                 [wheelbase, -track_width / 2.0]])
        self._tree = None
        if track is not None and len(track.centerline) >= 2:
            from hil_bridge.sim.tracks import resample
            self._cl = resample(track.centerline, track.closed, COURSE_STEP)
            self._tree = cKDTree(self._cl)
            self._half_width = track.width / 2.0
            self._closed = bool(track.closed)
            seg = np.hypot(*np.diff(np.vstack([self._cl, self._cl[:1]]), axis=0).T)
            self._step = float(seg[:-1].mean()) if len(seg) > 1 else COURSE_STEP
        #: the car's section: index into the resampled centre line (None
        #: before the first update), unwrapped progress (m) and its maximum
        self._idx: Optional[int] = None
        self._prog = 0.0
        self._prog_max = 0.0
        #: the current excursion: [index where the car left, time, distance
        #: driven off (m), last x, last y]
        self._excursion: Optional[List[float]] = None
        self.min_lap_distance = self._min_lap(track) \
            if min_lap_distance is None else float(min_lap_distance)
        self._lap_distance = 0.0
        self._contacts: Dict[str, bool] = {}
        self._prev_xy: Optional[np.ndarray] = None
        self._lap_start: Optional[float] = None
        self._moved = False
        self._still_since: Optional[float] = None
        self._done = False

    @staticmethod
    def _min_lap(track: Any) -> float:
        """Return the distance a lap needs at least (m): half the lap."""
        if track is None or not track.timing_lines:
            return 0.0
        if track.closed:
            return 0.5 * track.length
        if track.mission == 'skidpad':
            return 25.0
        lines = track.timing_lines
        a = (lines['start'].a + lines['start'].b) / 2.0
        b = (lines['finish'].a + lines['finish'].b) / 2.0
        return 0.5 * float(np.hypot(*(b - a)))

    @property
    def finished(self) -> bool:
        """Return True once the mission has ended (any status)."""
        return self._done

    def _end(self, t: float, status: str, reason: str) -> Event:
        r = self.result
        self._done = True
        r.status = status
        r.reason = reason
        r.end_time = t
        if r.start_time is not None:
            r.mission_time = t - r.start_time
        elif not self.fs:
            r.mission_time = t
        return Event('mission_end', t, {
            'status': status, 'reason': reason,
            'mission_time': r.mission_time, 'penalty_time': r.penalty_time,
            'laps': r.laps})

    def _penalty(self, t: float, kind: str, events: List[Event]) -> None:
        if not self.fs:
            return
        sec = PENALTY_SECONDS[kind]
        self.result.penalties.append({'kind': kind, 'seconds': sec,
                                      'time': t})
        self.result.penalty_time += sec
        events.append(Event('penalty', t, {'kind': kind, 'seconds': sec}))

    def update(self, t: float, ego: Box, speed: float,
               others: Sequence[Box] = ()) -> List[Event]:
        """
        Judge the step ending at sim time ``t`` (s).

        ``ego`` is the ego footprint (its ``x, y`` the box centre, ``vx,
        vy`` the map velocity); ``speed`` the signed speed (m/s); ``others``
        the footprints of the other actors. Returns the new events.
        """
        events: List[Event] = []
        if self._done:
            return events
        r = self.result
        self._cones(t, ego, speed, events)
        if self._tree is not None:
            self._course(t, ego, events)
        for other in others:
            self._collision(t, ego, other, events)
        # lap timing: the front bumper crosses the lines
        half = ego.length / 2.0
        xy = np.array([ego.x + half * math.cos(ego.yaw),
                       ego.y + half * math.sin(ego.yaw)])
        if self._prev_xy is not None and self.track is not None:
            self._lap_distance += float(np.hypot(*(xy - self._prev_xy)))
            self._timing(t, self._prev_xy, xy, events)
        self._prev_xy = xy
        # standstill logic
        if abs(speed) > 0.3:
            self._moved = True
            self._still_since = None
        elif self._still_since is None:
            self._still_since = t
        if self._done:
            return events
        if r.collisions:
            events.append(self._end(t, 'DNF', 'collision'))
        elif self.fs and r.laps >= r.laps_required:
            events.append(self._end(t, 'finished', 'laps completed'))
        elif (self.mission == 'aeb' and self._moved
              and self._still_since is not None
              and t - self._still_since >= self.stop_time):
            events.append(self._end(t, 'finished', 'stopped'))
        elif (self.fs and self._moved and self._still_since is not None
              and t - self._still_since >= self.stall_time):
            events.append(self._end(t, 'DNF', 'stalled'))
        elif t >= self.timeout - 1e-9:
            events.append(self._end(t, 'timeout', 'timeout'))
        return events

    def _cones(self, t: float, ego: Box, speed: float,
               events: List[Event]) -> None:
        cones = self.cones
        if len(cones) == 0:
            return
        hit = cones_in_box(ego, cones.xy, self._radius) & ~cones.knocked
        for i in np.flatnonzero(hit):
            events.extend(self.cone_hit(t, int(i), speed=float(abs(speed))))

    def cone_hit(self, t: float, index: int, **data: Any) -> List[Event]:
        """
        Count cone ``index`` as hit at sim time ``t`` (s): knocked, DOO penalty.

        For hits the footprint test cannot see (a simulator reporting the
        contact itself); ``data`` goes into the ``cone_hit`` event (e.g.
        ``source``). A cone already knocked is not counted again (no events).
        """
        cones = self.cones
        if cones.knocked[index]:
            return []
        cones.knocked[index] = True
        self.result.cones_hit += 1
        self.result.knocked_cones.append(int(index))
        events = [Event('cone_hit', t, dict({
            'index': int(index), 'class_id': int(cones.class_id[index]),
            'x': float(cones.xy[index, 0]), 'y': float(cones.xy[index, 1])}, **data))]
        self._penalty(t, 'DOO', events)
        return events

    def _window(self, centre: int, back: float, ahead: float) -> np.ndarray:
        """Return centre-line indices from ``back`` m behind to ``ahead`` m past ``centre``."""
        n = len(self._cl)
        lo, hi = int(round(back / self._step)), int(round(ahead / self._step))
        idx = np.arange(centre - lo, centre + hi + 1)
        if self._closed:
            return np.unique(idx % n) if hi + lo + 1 >= n else idx % n
        return idx[(idx >= 0) & (idx < n)]

    def _gain(self, i0: int, i1: int) -> float:
        """Return the arc distance (m) from index ``i0`` to ``i1`` (signed, shortest way)."""
        d = i1 - i0
        n = len(self._cl)
        if self._closed:
            d = (d + n // 2) % n - n // 2
        return d * self._step

    def _course(self, t: float, ego: Box, events: List[Event]) -> None:
        c, s = math.cos(ego.yaw), math.sin(ego.yaw)
        rot = np.array([[c, -s], [s, c]])
        # ego.x/y is the box centre; wheels are relative to the rear axle
        rear = np.array([ego.x, ego.y]) - rot @ np.array(
            [ego.box_offset, 0.0])
        wheels = self._wheels @ rot.T + rear
        centre = np.array([ego.x, ego.y])
        if self._idx is None:
            self._idx = int(self._tree.query(centre)[1])
        exc = self._excursion
        if exc is None:
            win = self._window(self._idx, WINDOW_BACK, WINDOW_AHEAD)
            pts = self._cl[win]
            k = int(np.argmin(np.hypot(*(pts - centre).T)))
            gain = self._gain(self._idx, int(win[k]))
            self._idx = int(win[k])
            self._prog += gain
            self._prog_max = max(self._prog_max, self._prog)
            dist = np.hypot(*(wheels[:, None] - pts[None]).transpose(2, 0, 1)).min(axis=1)
            beyond = float(dist.min()) - self._half_width
            if beyond > self.margin:
                self._excursion = [float(self._idx), t, 0.0, float(centre[0]),
                                   float(centre[1])]
                self.result.off_courses += 1
                events.append(Event('off_course', t, {
                    'distance': beyond, 's': self._idx * self._step}))
                self._penalty(t, 'OC', events)
            elif self.fs and self._prog_max - self._prog > self.rejoin_tolerance:
                events.append(self._end(t, 'DNF', f'wrong way: {self._prog_max - self._prog:.1f}'
                                        f' m back along the track'))
            return
        # off course: back near where the car left, elsewhere, or still off
        exc[2] += float(np.hypot(exc[3] - centre[0], exc[4] - centre[1]))
        exc[3], exc[4] = float(centre[0]), float(centre[1])
        left = int(exc[0])
        win = self._window(left, self.rejoin_tolerance, self.rejoin_tolerance)
        dist = np.hypot(*(wheels[:, None] - self._cl[win][None]).transpose(2, 0, 1))
        if float(dist.min()) - self._half_width < 0.0:
            k = int(np.argmin(dist.min(axis=0)))
            self._idx = int(win[k])
            self._prog += self._gain(left, self._idx)
            self._excursion = None
            events.append(Event('back_on_course', t, {
                's': self._idx * self._step, 'off_distance': exc[2],
                'off_time': t - exc[1]}))
            return
        if not self.fs:
            return
        dist, far = self._tree.query(wheels)
        if float(dist.min()) - self._half_width < 0.0:
            gain = self._gain(left, int(far[int(np.argmin(dist))]))
            events.append(self._end(t, 'DNF', f'course cut: left the track at s = '
                                    f'{left * self._step:.1f} m, came back {gain:+.1f} m '
                                    f'along it'))
        elif exc[2] > self.off_course_limit:
            events.append(self._end(t, 'DNF', f'off course: {exc[2]:.1f} m driven off the '
                                    f'track'))
        elif t - exc[1] > self.off_course_time:
            events.append(self._end(t, 'DNF', f'off course for {t - exc[1]:.1f} s'))

    def _collision(self, t: float, ego: Box, other: Box,
                   events: List[Event]) -> None:
        touching = boxes_overlap(ego, other)
        was = self._contacts.get(other.name, False)
        self._contacts[other.name] = touching
        if not touching or was:
            return
        events.append(self._record_collision(t, ego, other))

    def _record_collision(self, t: float, ego: Box, other: Box, **data: Any) -> Event:
        dv = np.array([ego.vx - other.vx, ego.vy - other.vy])
        d = np.array([other.x - ego.x, other.y - ego.y])
        n = float(np.hypot(*d))
        impact = float(dv @ d / n) if n > 1e-9 else float(np.hypot(*dv))
        info = dict({'other': other.name, 'impact_speed': max(impact, 0.0),
                     'relative_speed': float(np.hypot(*dv)),
                     'ego_speed': float(math.hypot(ego.vx, ego.vy)), 'time': t}, **data)
        self.result.collisions.append(info)
        return Event('collision', t, dict(info))

    def collision(self, t: float, ego: Box, other: Box, **data: Any) -> List[Event]:
        """
        Count a collision the simulator reported at sim time ``t`` (s).

        For contacts the footprints do not show (a simulator that keeps
        the bodies apart); ``ego``/``other`` their footprints now (for the
        impact speed), ``data`` goes into the event (e.g. ``source``). Call
        before :meth:`update` of the same step (which then ends the run); a
        contact already counted (overlapping footprints) is not counted again.
        """
        if self._done or self._contacts.get(other.name, False):
            return []
        self._contacts[other.name] = True
        return [self._record_collision(t, ego, other, **data)]

    def _timing(self, t: float, p0: np.ndarray, p1: np.ndarray,
                events: List[Event]) -> None:
        lines = self.track.timing_lines
        start, finish = lines.get('start'), lines.get('finish')
        r = self.result
        crossed_finish = finish is not None and _crosses(finish, p0, p1)
        crossed_start = start is not None and _crosses(start, p0, p1)
        if self._lap_start is not None and crossed_finish and \
                self._lap_distance >= self.min_lap_distance:
            lap_time = t - self._lap_start
            r.laps += 1
            r.lap_times.append(lap_time)
            events.append(Event('lap', t, {
                'lap': r.laps, 'lap_time': lap_time,
                'total_time': t - r.start_time}))
            self._lap_start = None
        if self._lap_start is None and crossed_start and \
                r.laps < r.laps_required:
            self._lap_start = t
            self._lap_distance = 0.0
            if r.start_time is None:
                r.start_time = t


def _crosses(line: Any, p0: np.ndarray, p1: np.ndarray) -> bool:
    """Return True if the move p0 -> p1 crosses the line forwards."""
    a, b = line.a, line.b
    move = p1 - p0
    if float(move @ line.direction) <= 0.0:
        return False
    e = b - a

    def side(p: np.ndarray) -> float:
        return float(e[0] * (p[1] - a[1]) - e[1] * (p[0] - a[0]))
    s0, s1 = side(p0), side(p1)
    if s0 * s1 > 0.0 or (s0 == 0.0 and s1 == 0.0):
        return False
    if s1 == 0.0:
        return False  # counted at the next step, when it is strictly past
    q0 = float(move[0] * (a[1] - p0[1]) - move[1] * (a[0] - p0[0]))
    q1 = float(move[0] * (b[1] - p0[1]) - move[1] * (b[0] - p0[0]))
    return q0 * q1 <= 0.0
