# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Lap-2+ mode: switch on loop closure, fall back on a wrong map, and one short closed loop."""

import math

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.config import node_params
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.planner import Planner
from path_planning.race_planner import race_config_from_mapping, RacePlanner
from path_planning.tools.closed_loop import cones_in_vehicle_frame, default_config
from path_planning.tools.race_loop import run_race
import pytest

FS = load_vehicle_profile('fs_car')


#: poses fed after the start: 4 s at 0.1 s a cycle, past the line delay (3 s)
TAIL = list(range(0, 160, 4))


def _planner(**params: object) -> RacePlanner:
    values = dict(node_params('cone_drive_planner'), **params)
    cfg = race_config_from_mapping(values, FS)
    return RacePlanner(Planner(default_config('auto', FS)), cfg, FS)


def _poses(track) -> list:
    """Return one lap of centre-line poses (every 4th point) and then TAIL."""
    cl = track.centerline
    tang = np.roll(cl, -1, axis=0) - cl
    yaw = np.arctan2(tang[:, 1], tang[:, 0])
    return [(cl[k, 0], cl[k, 1], yaw[k]) for k in list(range(0, len(cl), 4)) + TAIL]


def _cycle(planner: RacePlanner, track, cones_xy: np.ndarray, t: float, pose: tuple):
    """Run one cycle at ``pose`` with the cones seen from it (20 m)."""
    rel = cones_in_vehicle_frame(cones_xy, *pose)
    near = np.hypot(*rel.T) < 20.0
    return planner.plan(t, rel[near], track.cones.class_id[near], 5.0, 0.0, pose=pose)


def _drive_lap(planner: RacePlanner, track, cones_xy: np.ndarray) -> list:
    """Feed one lap of centre-line poses with the cones seen from each (20 m)."""
    return [_cycle(planner, track, cones_xy, 0.1 * i, pose)
            for i, pose in enumerate(_poses(track))]


def test_map_completes_at_the_start_and_the_line_takes_over() -> None:
    track = load_scenario('ci_trackdrive').track
    planner = _planner()
    outs = _drive_lap(planner, track, track.cones.xy)
    st = planner.status
    assert st.attempts == 1 and st.track.ok and st.line is not None
    assert st.state in ('join', 'race')
    assert any('map complete' in e for e in planner.drain_events())
    assert 'raceline' not in {o.mode for o in outs[:-len(TAIL)]}   # lap 1: the lap-1 planner
    # without a pose the lap-1 planner drives and nothing is mapped
    fresh = _planner()
    fresh.plan(0.0, np.array([[5.0, 1.5], [5.0, -1.5]]), np.array([1, 2]), 5.0, 0.0, pose=None)
    assert fresh.recorder.start is None


def test_the_line_is_computed_in_the_background_and_taken_up_on_time() -> None:
    """Cycles go on while the line is computed; the one at closure + delay waits for it."""
    import threading
    track = load_scenario('ci_trackdrive').track
    planner = _planner()
    assert planner.config.line_delay == 3.0
    release = threading.Event()
    compute = planner._compute_line

    def held(*args: object) -> object:
        assert release.wait(30.0), 'never released'
        return compute(*args)
    planner._compute_line = held
    poses = _poses(track)
    closed_at = None
    for i, pose in enumerate(poses):
        t = 0.1 * i
        if closed_at is not None and t >= closed_at + 3.0 - 1e-9:
            break
        _cycle(planner, track, track.cones.xy, t, pose)
        if closed_at is None and planner.status.attempts == 1:
            closed_at = t
    # the cycles up to closure + 3 s ran while the computation was held
    assert closed_at is not None and planner.status.state == 'mapping'
    assert planner._pending is not None and not planner._pending[1].done()
    release.set()
    _cycle(planner, track, track.cones.xy, t, pose)     # due: waits for the line
    st = planner.status
    assert st.state == 'join' and st.line is not None and planner._pending is None
    # the same line as computed in the closing cycle (line_delay 0)
    now = _planner(race_line_delay=0.0)
    _drive_lap(now, track, track.cones.xy)
    assert now.status.attempts == 1 and now.status.state in ('join', 'race')
    assert np.array_equal(now.status.line.xy, st.line.xy)
    with pytest.raises(ValueError, match='line_delay'):
        _planner(race_line_delay=-1.0)


def test_cones_that_disagree_with_the_map_hand_back_to_lap_1() -> None:
    track = load_scenario('ci_trackdrive').track
    planner = _planner()
    _drive_lap(planner, track, track.cones.xy)
    planner.status.state = 'race'
    planner.follower.reset()
    cl = track.centerline
    line = planner.status.line
    i0 = int(np.argmin(np.hypot(*(line.xy - cl[40]).T)))
    x, y = line.xy[i0]
    d = line.xy[(i0 + 1) % len(line.xy)] - line.xy[i0]
    yaw = math.atan2(d[1], d[0])
    rel = cones_in_vehicle_frame(track.cones.xy, x, y, yaw)
    near = np.hypot(*rel.T) < 20.0
    ok = planner.plan(50.0, rel[near], track.cones.class_id[near], 5.0, 0.0, pose=(x, y, yaw))
    assert ok.mode == 'raceline' and not ok.stop
    # the same cones 2 m off: a different track than the map
    modes = [planner.plan(50.1 + 0.1 * k, rel[near] + [0.0, 2.0], track.cones.class_id[near],
                          5.0, 0.0, pose=(x, y, yaw)).mode for k in range(6)]
    assert modes[0] == 'raceline' and modes[-1] != 'raceline'
    assert planner.status.state == 'fallback' and planner.status.fallbacks == 1
    assert any('disagree' in e for e in planner.drain_events())


def test_incomplete_map_keeps_lap_1_mode_with_a_reason() -> None:
    track = load_scenario('ci_trackdrive').track
    planner = _planner()
    keep = np.ones(len(track.cones), dtype=bool)
    keep[np.flatnonzero(track.cones.class_id == 1)[10:14]] = False   # a 4-cone gap
    track.cones.class_id = track.cones.class_id.copy()
    cones_xy = track.cones.xy.copy()
    cones_xy[~keep] = 1e4                                            # never seen
    _drive_lap(planner, track, cones_xy)
    st = planner.status
    assert st.attempts == 1 and st.state == 'mapping' and st.line is None
    events = planner.drain_events()
    assert len(events) == 1 and 'staying in lap-1 mode' in events[0] and 'gap' in events[0]


def test_a_line_into_a_cone_is_refused(monkeypatch) -> None:
    import dataclasses
    import path_planning.race_planner as rp
    real = rp.compute_raceline

    def pinched(*args, **kwargs):
        # the map's line as computed, with the clearance a map gives whose
        # boundary holds a cone of the section beside (seen in a sweep: -0.73 m)
        return dataclasses.replace(real(*args, **kwargs), clearance=-0.73)

    monkeypatch.setattr(rp, 'compute_raceline', pinched)
    track = load_scenario('ci_trackdrive').track
    planner = _planner()
    outs = _drive_lap(planner, track, track.cones.xy)
    st = planner.status
    assert st.attempts == 1 and st.state == 'mapping' and st.line is None
    events = planner.drain_events()
    assert len(events) == 1 and 'staying in lap-1 mode' in events[0]
    assert 'clearance -0.73 m' in events[0]
    assert 'raceline' not in {o.mode for o in outs}


@pytest.fixture(scope='module')
def race() -> object:
    """Three laps of ci_trackdrive in-process: the real lap-1 planner, then the line."""
    scn = load_scenario('ci_trackdrive', laps=3, timeout=200.0)
    res = run_race(scn, 'auto')
    print(f'laps {res.lap_times}, reference {res.reference}, cones {res.hit_laps}, '
          f'line {res.line_ms:.0f} ms, events {res.events}')
    return res


@pytest.mark.one_distro
def test_laps_after_the_first_are_faster_with_no_cone_hit(race) -> None:
    assert race.status == 'finished', race.reason
    assert len(race.lap_times) == 3
    assert max(race.lap_times[1:]) < 0.8 * race.lap_times[0]
    assert [lap for lap in race.hit_laps if lap > 1] == [] and race.off_courses == 0
    assert race.modes.get('raceline', 0) > 0 and race.fallbacks == 0
    assert max(race.ratios[1:]) <= 1.3
