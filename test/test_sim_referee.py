# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The built-in simulator's referee: cones, course, collisions, timing."""

import math

from hil_bridge.interface.cones import CONE_BLUE, CONE_SIZE
from hil_bridge.interface.track import arc_length, ConeArray, Track
from hil_bridge.sim import tracks as T
from hil_bridge.sim.referee import Box, boxes_overlap, cones_in_box, Referee
import numpy as np
import pytest

R_CONE = CONE_SIZE[CONE_BLUE][0] / 2.0


def _cones(xy) -> ConeArray:
    xy = np.asarray(xy, dtype=np.float64)
    return ConeArray(xy=xy, class_id=np.full(len(xy), CONE_BLUE, np.uint8),
                     knocked=np.zeros(len(xy), bool))


def test_box_geometry_analytic() -> None:
    """Box-circle and box-box overlap against hand-made cases."""
    box = Box(0.0, 0.0, 0.0, 4.0, 2.0)
    xy = np.array([[2.0 + R_CONE - 1e-3, 0.0], [2.0 + R_CONE + 1e-3, 0.0],
                   [0.0, 1.0 + R_CONE - 1e-3], [2.1, 1.1],
                   [2.0 + 0.7 * R_CONE, 1.0 + 0.7 * R_CONE]])
    hit = cones_in_box(box, xy, np.full(len(xy), R_CONE))
    assert hit.tolist() == [True, False, True, False, True]
    rot = Box(0.0, 0.0, math.pi / 2, 4.0, 2.0)   # now 2 m along x
    hit = cones_in_box(rot, np.array([[1.05, 0.0], [0.0, 2.05]]),
                       np.full(2, R_CONE))
    assert hit.tolist() == [True, True]
    a = Box(0.0, 0.0, 0.0, 4.0, 2.0)
    assert boxes_overlap(a, Box(3.9, 0.0, 0.0, 4.0, 2.0))
    assert not boxes_overlap(a, Box(4.1, 0.0, 0.0, 4.0, 2.0))
    # a diamond whose corner reaches in only along the diagonal
    diamond = Box(2.0 + math.sqrt(2) - 0.05, 0.0, math.pi / 4, 2.0, 2.0)
    assert boxes_overlap(a, diamond)
    diamond.x += 0.1
    assert not boxes_overlap(a, diamond)
    assert not boxes_overlap(a, Box(3.0, 1.8, math.pi / 4, 1.0, 1.0))


def test_scripted_drive_hits_exactly_the_overlapped_cones() -> None:
    """Drive along y = 0; cones within width/2 + r of the path are hit."""
    rng = np.random.default_rng(4)
    xy = np.column_stack([np.linspace(5.0, 60.0, 40),
                          rng.uniform(-2.0, 2.0, 40)])
    cones = _cones(xy)
    ref = Referee('autocross', cones, laps=1, timeout=100.0)
    width, length = 1.4, 2.9
    events = []
    for k in range(700):
        x = k * 0.1
        ev = ref.update(k * 0.01, Box(x, 0.0, 0.0, length, width, vx=10.0),
                        10.0)
        events += ev
    expected = np.flatnonzero(np.abs(xy[:, 1]) <= width / 2.0 + R_CONE)
    hits = [e.data['index'] for e in events if e.kind == 'cone_hit']
    assert sorted(hits) == expected.tolist()     # each exactly once
    assert 0 < len(hits) < len(xy)
    assert cones.knocked.tolist() == np.isin(np.arange(40), expected).tolist()
    doo = [e for e in events if e.kind == 'penalty']
    assert len(doo) == len(hits) and all(e.data['kind'] == 'DOO'
                                         for e in doo)
    assert ref.result.cones_hit == len(hits)
    assert ref.result.penalty_time == pytest.approx(2.0 * len(hits))


def _drive_centerline(track: Track, ref: Referee, speed: float,
                      loops: float, dt: float = 0.02,
                      lateral=None) -> list:
    """Move an fs_car-sized box along the centre line; return events."""
    cl = T.resample(track.centerline, track.closed, 0.05)
    s = arc_length(cl, track.closed)
    ext = np.vstack([cl, cl[:1]]) if track.closed else cl
    total = s[-1]
    events = []
    pos = -6.0 if track.closed else 0.0
    t = 0.0
    while pos < loops * total:
        q = pos % total if track.closed else min(pos, total)
        x = np.interp(q, s, ext[:, 0])
        y = np.interp(q, s, ext[:, 1])
        q2 = (q + 0.1) % total if track.closed else q + 0.1
        x2 = np.interp(q2, s, ext[:, 0])
        y2 = np.interp(q2, s, ext[:, 1])
        yaw = math.atan2(y2 - y, x2 - x)
        off = lateral(pos) if lateral else 0.0
        x -= off * math.sin(yaw)
        y += off * math.cos(yaw)
        box = Box(x, y, yaw, 2.9, 1.4, vx=speed * math.cos(yaw),
                  vy=speed * math.sin(yaw), box_offset=0.85)
        events += ref.update(t, box, speed)
        pos += speed * dt
        t += dt
        if ref.finished:
            break
    return events


def test_a_hit_reported_by_the_simulator_counts_once() -> None:
    """Referee.cone_hit: a contact the footprint test did not see (e.g. CARLA's)."""
    cones = _cones([[10.0, 5.0], [20.0, 5.0]])
    ref = Referee('autocross', cones, laps=1, timeout=100.0)
    events = ref.cone_hit(1.5, 1, source='carla_collision')
    assert [e.kind for e in events] == ['cone_hit', 'penalty']
    assert events[0].data['source'] == 'carla_collision' and events[0].data['index'] == 1
    assert events[1].data == {'kind': 'DOO', 'seconds': 2.0}
    assert ref.cone_hit(1.6, 1) == []                      # knocked already
    assert cones.knocked.tolist() == [False, True]
    assert (ref.result.cones_hit, ref.result.penalty_time) == (1, 2.0)
    # the footprint test does not count it again when the car drives over it
    assert not [e for e in ref.update(2.0, Box(20.0, 5.0, 0.0, 2.9, 1.4), 3.0)
                if e.kind == 'cone_hit']


def test_a_collision_reported_by_the_simulator_ends_the_run() -> None:
    """Referee.collision: apart footprints, counted once (also when they overlap next)."""
    ref = Referee('aeb', _cones(np.zeros((0, 2))), timeout=100.0)
    ego = Box(0.0, 0.0, 0.0, 4.0, 2.0, vx=5.0, name='ego')
    target = Box(4.2, 0.0, 0.0, 4.0, 2.0, name='target')      # 0.2 m apart
    events = ref.collision(1.0, ego, target, source='carla_collision')
    assert [e.kind for e in events] == ['collision']
    assert events[0].data['impact_speed'] == pytest.approx(5.0)
    assert events[0].data['source'] == 'carla_collision'
    assert ref.collision(1.0, ego, target) == []
    target.x = 3.9                                             # overlapping now
    ended = ref.update(1.0, ego, 5.0, [target])
    assert [e.kind for e in ended] == ['mission_end']
    assert ended[0].data['status'] == 'DNF' and len(ref.result.collisions) == 1


def test_lap_counting_and_mission_end() -> None:
    """Three laps at 10 m/s: three lap events of length/10 s, finished."""
    track = T.random_track(5)
    ref = Referee('trackdrive', track.cones, track, laps=3, timeout=1000.0)
    events = _drive_centerline(track, ref, 10.0, 5.0)
    laps = [e for e in events if e.kind == 'lap']
    assert [e.data['lap'] for e in laps] == [1, 2, 3]
    for e in laps:
        assert e.data['lap_time'] == pytest.approx(track.length / 10.0,
                                                   rel=0.01)
    end = [e for e in events if e.kind == 'mission_end']
    assert len(end) == 1 and end[0].data['status'] == 'finished'
    assert ref.result.laps == 3 and ref.result.cones_hit == 0
    assert ref.result.off_courses == 0
    assert ref.result.mission_time == pytest.approx(3 * track.length / 10,
                                                    rel=0.01)


def test_lap_time_ratio_against_the_reference() -> None:
    """Given reference lap times, the result reports lap / reference."""
    track = T.random_track(5)
    ref = Referee('trackdrive', track.cones, track, laps=2, timeout=1000.0,
                  reference_lap_times=[track.length / 20.0])
    _drive_centerline(track, ref, 10.0, 5.0)
    out = ref.result.as_dict()
    assert out['reference_lap_times'] == [round(track.length / 20.0, 3)]
    assert out['lap_time_ratio'][0] == pytest.approx(2.0, rel=0.01)
    assert out['lap_time_ratio'][1] is None      # no reference for lap 2
    plain = Referee('trackdrive', track.cones, track, laps=1)
    assert plain.result.as_dict()['lap_time_ratio'] == []


def test_backwards_crossing_is_not_a_lap() -> None:
    """Crossing the start line against the driving direction counts not."""
    track = T.acceleration_track()
    ref = Referee('acceleration', track.cones, track, laps=1, timeout=100.0)
    for k in range(100):   # drive from x = 5 back to x = -5
        x = 5.0 - 0.1 * k
        ref.update(k * 0.01, Box(x, 0.0, math.pi, 2.9, 1.4, vx=-10.0), 10.0)
    assert ref.result.start_time is None and ref.result.laps == 0


def test_acceleration_run_is_timed_start_to_finish() -> None:
    """Start line to finish line at 20 m/s takes 3.75 s."""
    track = T.acceleration_track()
    ref = Referee('acceleration', track.cones, track, laps=1, timeout=100.0)
    _drive_centerline(track, ref, 20.0, 1.0, dt=0.005)
    assert ref.result.status == 'finished'
    assert ref.result.lap_times[0] == pytest.approx(75.0 / 20.0, abs=0.01)


def test_off_course_counted_per_excursion() -> None:
    """Two short excursions 4.5 m beside the track: two OC, 10 s each, finished."""
    track = T.random_track(9)
    ref = Referee('autocross', _cones(np.zeros((0, 2))), track, laps=1,
                  timeout=1000.0)

    def lateral(pos: float) -> float:
        if 50.0 < pos < 60.0 or 120.0 < pos < 130.0:
            return 4.5
        return 0.0
    events = _drive_centerline(track, ref, 5.0, 1.0, lateral=lateral)
    oc = [e for e in events if e.kind == 'off_course']
    assert len(oc) == 2
    assert all(e.data['distance'] > ref.margin for e in oc)
    pens = [e.data for e in events if e.kind == 'penalty']
    assert [p['kind'] for p in pens] == ['OC', 'OC']
    assert ref.result.penalty_time == pytest.approx(20.0)
    back = [e.data for e in events if e.kind == 'back_on_course']
    assert len(back) == 2 and all(abs(b['s'] - o.data['s']) < 12.0
                                  for b, o in zip(back, oc))
    assert ref.result.status == 'finished'
    # a small swerve within the margin is no excursion
    ref2 = Referee('autocross', _cones(np.zeros((0, 2))), track)
    _drive_centerline(track, ref2, 5.0, 0.5, lateral=lambda p: 1.5)
    assert ref2.result.off_courses == 0


def test_collision_with_impact_speed() -> None:
    """The ego at 8 m/s hits a car moving at 3 m/s: impact 5 m/s, once."""
    ref = Referee('aeb', _cones(np.zeros((0, 2))), None, timeout=60.0)
    events = []
    for k in range(400):
        t = k * 0.01
        ego = Box(8.0 * t, 0.0, 0.0, 4.7, 1.85, vx=8.0, name='ego')
        other = Box(10.0 + 3.0 * t, 0.2, 0.0, 4.7, 1.85, vx=3.0,
                    name='target')
        events += ref.update(t, ego, 8.0, [other])
    col = [e for e in events if e.kind == 'collision']
    assert len(col) == 1
    assert col[0].data['other'] == 'target'
    assert col[0].data['impact_speed'] == pytest.approx(5.0, abs=0.05)
    assert col[0].data['relative_speed'] == pytest.approx(5.0)
    assert col[0].sim_time == pytest.approx((10.0 - 4.7) / 5.0, abs=0.02)
    assert ref.result.status == 'DNF' and ref.result.reason == 'collision'


def test_aeb_stop_finishes_and_timeout() -> None:
    """Non-FS missions finish when the ego stops; all can time out."""
    ref = Referee('aeb', _cones(np.zeros((0, 2))), timeout=60.0)
    for k in range(300):
        t = k * 0.01
        v = max(0.0, 5.0 - 5.0 * t)
        ref.update(t, Box(0.0, 0.0, 0.0, 4.7, 1.85, vx=v), v)
    assert ref.result.status == 'finished' and ref.result.reason == 'stopped'
    ref = Referee('autocross', _cones(np.zeros((0, 2))), timeout=1.0)
    ev = []
    for k in range(200):
        ev += ref.update(k * 0.01, Box(0.0, 0.0, 0.0, 2.9, 1.4), 0.0)
    ends = [e for e in ev if e.kind == 'mission_end']
    assert len(ends) == 1 and ends[0].data['status'] == 'timeout'
    with pytest.raises(ValueError, match='laps'):
        Referee('autocross', _cones(np.zeros((0, 2))), laps=0)


def test_skidpad_four_timed_laps() -> None:
    """Skidpad: entry starts the clock, each circle lap is one lap."""
    track = T.skidpad_track()
    ref = Referee('skidpad', track.cones, track, laps=4, timeout=1000.0)
    events = _drive_centerline(track, ref, 8.0, 1.0, dt=0.01)
    laps = [e.data['lap_time'] for e in events if e.kind == 'lap']
    circle = 2 * math.pi * 9.125 / 8.0
    assert len(laps) == 4
    np.testing.assert_allclose(laps, circle, rtol=0.01)
    assert ref.result.status == 'finished'
    assert ref.result.cones_hit == 0 and ref.result.off_courses == 0


def _stadium(gap: float = 5.0, width: float = 3.0, straight: float = 60.0) -> Track:
    """Return a closed stadium: two straights whose boundaries are ``gap`` m apart."""
    r = 0.5 * (gap + width)
    a = np.linspace(-math.pi / 2, math.pi / 2, 60, endpoint=False)
    top = np.column_stack([np.linspace(0.0, straight, 120, endpoint=False),
                           np.zeros(120)])
    bend = np.column_stack([straight + r * np.cos(a), r + r * np.sin(a)])
    back = np.column_stack([np.linspace(straight, 0.0, 120, endpoint=False),
                            np.full(120, 2 * r)])
    bend2 = np.column_stack([-r * np.cos(a), r - r * np.sin(a)])
    cl = np.vstack([top, bend, back, bend2])
    return T.closed_track(cl, width, 3.0, 'autocross', 'stadium',
                          lambda line: T.resample(line, True, 4.0))


def _drive_path(ref: Referee, path: np.ndarray, speed: float, dt: float = 0.02,
                t0: float = 0.0) -> list:
    """Move an fs_car-sized box along a polyline at ``speed``; return the events."""
    s = arc_length(path, False)
    events = []
    t, pos = t0, 0.0
    while pos <= s[-1] and not ref.finished:
        x, y = np.interp(pos, s, path[:, 0]), np.interp(pos, s, path[:, 1])
        q = min(pos + 0.1, s[-1])
        x2, y2 = np.interp(q, s, path[:, 0]), np.interp(q, s, path[:, 1])
        yaw = math.atan2(y2 - y, x2 - x) if q > pos else 0.0
        events += ref.update(t, Box(x, y, yaw, 2.9, 1.4, vx=speed * math.cos(yaw),
                                    vy=speed * math.sin(yaw), box_offset=0.85), speed)
        pos += speed * dt
        t += dt
    return events


def test_circling_the_infield_is_a_dnf_with_one_penalty() -> None:
    """A car that leaves into the infield and circles there is out after the limit."""
    track = _stadium(gap=12.0)
    ref = Referee('autocross', track.cones, track, laps=1, timeout=1000.0)
    a = np.linspace(0.0, 6 * math.pi, 400)
    circle = np.column_stack([30.0 + 3.0 * np.sin(a), 7.5 - 3.0 * np.cos(a)])
    path = np.vstack([np.column_stack([np.linspace(-2.0, 30.0, 50), np.zeros(50)]),
                      np.column_stack([np.full(10, 30.0), np.linspace(0.5, 4.5, 10)]),
                      circle])
    events = _drive_path(ref, path, 8.0)
    assert [e.kind for e in events].count('off_course') == 1
    assert ref.result.penalty_time == pytest.approx(10.0)
    assert ref.result.status == 'DNF' and ref.result.reason.startswith('off course')
    end = [e for e in events if e.kind == 'mission_end'][0]
    # ended about off_course_limit metres after the wheels left the track
    off = [e for e in events if e.kind == 'off_course'][0]
    assert 8.0 * (end.sim_time - off.sim_time) == pytest.approx(ref.off_course_limit, abs=2.0)


def test_crossing_into_the_section_beside_is_a_course_cut() -> None:
    """From one straight across a 5 m gap onto the one beside it: DNF, not a lap."""
    track = _stadium(gap=5.0)
    ref = Referee('autocross', track.cones, track, laps=1, timeout=1000.0)
    path = np.vstack([np.column_stack([np.linspace(-2.0, 20.0, 30), np.zeros(30)]),
                      np.column_stack([np.linspace(22.0, 28.0, 10), np.linspace(0.5, 8.0, 10)]),
                      np.column_stack([np.linspace(27.0, 0.0, 30), np.full(30, 8.0)])])
    events = _drive_path(ref, path, 6.0)
    assert ref.result.status == 'DNF' and ref.result.reason.startswith('course cut')
    assert ref.result.off_courses == 1 and ref.result.laps == 0
    # the referee never took the neighbouring straight for the car's own
    assert 'back_on_course' not in [e.kind for e in events]


def test_rejoining_where_it_left_continues_and_wrong_way_is_a_dnf() -> None:
    """Out and back in at the same place: one OC and on; turning round: DNF."""
    track = _stadium(gap=5.0)
    ref = Referee('autocross', track.cones, track, laps=1, timeout=1000.0)
    path = np.vstack([np.column_stack([np.linspace(-2.0, 20.0, 30), np.zeros(30)]),
                      np.column_stack([np.linspace(21.0, 26.0, 6), np.full(6, -3.2)]),
                      np.column_stack([np.linspace(27.0, 40.0, 10), np.zeros(10)])])
    events = _drive_path(ref, path, 6.0)
    kinds = [e.kind for e in events]
    assert kinds.count('off_course') == 1 and kinds.count('back_on_course') == 1
    assert ref.result.status == 'running'
    back = np.column_stack([np.linspace(40.0, 10.0, 30), np.full(30, 0.3)])
    _drive_path(ref, back, 4.0, t0=20.0)
    assert ref.result.status == 'DNF' and ref.result.reason.startswith('wrong way')


def test_off_course_for_too_long_and_bad_limits() -> None:
    """Crawling outside the track ends the run after ``off_course_time``."""
    track = _stadium(gap=12.0)
    ref = Referee('autocross', track.cones, track, laps=1, timeout=1000.0,
                  off_course_time=3.0)
    path = np.vstack([np.column_stack([np.linspace(-2.0, 10.0, 20), np.zeros(20)]),
                      np.column_stack([np.linspace(10.5, 14.0, 10), np.full(10, 4.5)])])
    _drive_path(ref, path, 1.0)
    assert ref.result.status == 'DNF' and ref.result.reason.startswith('off course for')
    for name in ('off_course_limit', 'off_course_time', 'rejoin_tolerance'):
        with pytest.raises(ValueError, match=name):
            Referee('autocross', track.cones, track, **{name: 0.0})
