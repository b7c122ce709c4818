# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Tracks of the built-in simulator: generators, FS rules, CSV files."""

import math
from pathlib import Path

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_YELLOW
from hil_bridge.interface.track import ConeArray, Track
from hil_bridge.sim import tracks as T
import numpy as np
import pytest


def test_hundred_random_tracks_obey_the_rules() -> None:
    """Every generated track passes the FS rule check (100 seeds)."""
    lengths = []
    for seed in range(100):
        track = T.random_track(seed)
        assert T.check_track_rules(track) == [], seed
        assert track.closed
        lengths.append(track.length)
        # the car starts on the track, behind the start line
        start = track.timing_lines['start']
        rel = np.array([track.car_start.x, track.car_start.y]) - \
            (start.a + start.b) / 2.0
        assert -8.0 < float(rel @ start.direction) < 0.0
    assert min(lengths) >= T.MIN_LAP and max(lengths) <= T.MAX_LAP
    assert max(lengths) - min(lengths) > 50.0   # not one track a hundred times


def test_random_track_is_deterministic_and_varies() -> None:
    """Same seed -> same track; other seed -> another track."""
    a, b, c = T.random_track(7), T.random_track(7), T.random_track(8)
    np.testing.assert_array_equal(a.cones.xy, b.cones.xy)
    np.testing.assert_array_equal(a.centerline, b.centerline)
    assert a.cones.xy.shape != c.cones.xy.shape or \
        not np.allclose(a.cones.xy, c.cones.xy)


def test_random_track_rejects_bad_parameters() -> None:
    """Parameters that break the rules are refused with a clear message."""
    with pytest.raises(ValueError, match='length'):
        T.random_track(0, length=(100.0, 150.0))
    with pytest.raises(ValueError, match='width'):
        T.random_track(0, width=2.0)
    with pytest.raises(ValueError, match='cone_spacing'):
        T.random_track(0, cone_spacing=6.0)
    with pytest.raises(ValueError, match='hairpin'):
        T.random_track(0, min_radius=2.0)


def test_acceleration_track_geometry() -> None:
    """75 m between the lines, 3 m wide, cones every 5 m, big orange."""
    track = T.acceleration_track()
    lines = track.timing_lines
    assert lines['start'].a[0] == pytest.approx(0.0)
    assert lines['finish'].a[0] == pytest.approx(75.0)
    cones = track.cones
    blue = cones.xy[cones.class_id == CONE_BLUE]
    yellow = cones.xy[cones.class_id == CONE_YELLOW]
    assert np.allclose(blue[:, 1], 1.5) and np.allclose(yellow[:, 1], -1.5)
    gaps = np.diff(np.sort(blue[:, 0]))
    assert np.allclose(gaps, 5.0)
    big = cones.xy[cones.class_id == CONE_BIG_ORANGE]
    assert len(big) == 8
    assert set(np.round(big[:, 0]).astype(int)) == {0, 75}
    assert (cones.class_id == CONE_ORANGE).sum() > 0   # braking zone
    assert track.car_start.x < 0.0
    assert T.check_track_rules(track) == []


def test_skidpad_geometry() -> None:
    """Circles of 15.25 / 21.25 m diameter, centres 18.25 m apart."""
    track = T.skidpad_track()
    xy, cls = track.cones.xy, track.cones.class_id
    for cy in (-9.125, 9.125):
        r = np.hypot(xy[:, 0], xy[:, 1] - cy)
        inner = np.abs(r - 15.25 / 2.0) < 1e-6
        outer = np.abs(r - 21.25 / 2.0) < 1e-6
        assert inner.sum() == 16
        assert outer.sum() >= 12
        # blue on the left of the driving direction
        if cy < 0.0:   # right circle, clockwise: inner is on the right
            assert set(cls[inner]) <= {CONE_YELLOW, CONE_BIG_ORANGE}
            assert set(cls[outer]) <= {CONE_BLUE, CONE_BIG_ORANGE}
        else:
            assert set(cls[inner]) <= {CONE_BLUE, CONE_BIG_ORANGE}
            assert set(cls[outer]) <= {CONE_YELLOW, CONE_BIG_ORANGE}
    # centre line: 2 laps per circle of radius 9.125 m plus entry/exit
    assert track.length == pytest.approx(
        4 * 2 * math.pi * 9.125 + 15.0 + 20.0, rel=0.01)
    assert T.check_track_rules(track) == []


def _broken(track: Track, xy: np.ndarray, cls: np.ndarray) -> Track:
    return Track(track.name, ConeArray(xy, cls, np.zeros(len(cls), bool)),
                 track.car_start, track.centerline, track.closed,
                 track.width, track.timing_lines, track.mission)


def test_rule_check_finds_violations() -> None:
    """Narrow track, large gaps, swapped colours, overlaps, short laps."""
    track = T.random_track(3)
    xy, cls = track.cones.xy.copy(), track.cones.class_id.copy()
    _s, lat, _d = T.lateral_position(track, xy)
    narrow = xy.copy()
    idx = np.flatnonzero(cls == CONE_YELLOW)[5]
    # pull one yellow cone to 1.0 m from the centre line
    cl = track.centerline
    j = int(np.argmin(np.hypot(*(cl - xy[idx]).T)))
    narrow[idx] = cl[j] + (xy[idx] - cl[j]) * (1.0 / abs(lat[idx]))
    assert any('narrower' in v for v in
               T.check_track_rules(_broken(track, narrow, cls)))
    assert T.rule_findings(_broken(track, narrow, cls))[0].severity == \
        'warning'
    keep = np.ones(len(cls), bool)
    keep[np.flatnonzero(cls == CONE_BLUE)[10:13]] = False
    assert any('spacing' in v for v in
               T.check_track_rules(_broken(track, xy[keep], cls[keep])))
    swapped = cls.copy()
    swapped[cls == CONE_BLUE] = CONE_YELLOW
    swapped[cls == CONE_YELLOW] = CONE_BLUE
    out = T.check_track_rules(_broken(track, xy, swapped))
    assert any('blue cones right' in v for v in out)
    dup = np.vstack([xy, xy[:1] + 0.05])
    out = T.check_track_rules(_broken(track, dup, np.append(cls, cls[0])))
    assert any('overlap' in v for v in out)
    small = Track(track.name, ConeArray(xy * 0.3, cls, np.zeros(len(cls), bool)),
                  track.car_start, cl * 0.3, True, track.width,
                  track.timing_lines, track.mission)
    assert any('lap length' in v for v in T.check_track_rules(small))


def test_width_is_judged_per_cone_pair() -> None:
    """A centre line 0.3 m off (an estimate) flags nothing; a pinch does."""
    track = T.random_track(3)
    tan = T.tangents(track.centerline, True)
    nrm = np.column_stack([-tan[:, 1], tan[:, 0]])
    shifted = track.centerline + 0.3 * nrm
    off = T.Track(track.name, track.cones, track.car_start, shifted, True,
                  track.width, track.timing_lines, track.mission)
    assert T.check_track_rules(off) == []
    widths = T.local_widths(off)
    assert np.nanmin(widths) > 2.95 and np.nanmax(widths) < 3.1
    # pinch one yellow cone to 2.5 m from its blue partner
    xy, cls = track.cones.xy.copy(), track.cones.class_id
    _s, lat, _d = T.lateral_position(track, xy)
    idx = np.flatnonzero(cls == CONE_YELLOW)[7]
    cl = track.centerline
    j = int(np.argmin(np.hypot(*(cl - xy[idx]).T)))
    xy[idx] = cl[j] + (xy[idx] - cl[j]) * (1.0 / abs(lat[idx]))
    out = T.check_track_rules(_broken(track, xy, cls))
    assert len(out) == 1 and 'narrowest 2.50 m' in out[0], out


def test_mirrored_colours_are_an_error_stray_ones_a_warning() -> None:
    """All colours swapped: error; two swapped cones: warnings."""
    track = T.random_track(4)
    cls = track.cones.class_id
    swapped = cls.copy()
    swapped[cls == CONE_BLUE] = CONE_YELLOW
    swapped[cls == CONE_YELLOW] = CONE_BLUE
    found = T.rule_findings(_broken(track, track.cones.xy, swapped))
    assert [f.severity for f in found] == ['error']
    assert found[0].message.startswith('colours mirrored')
    few = cls.copy()
    few[np.flatnonzero(cls == CONE_BLUE)[:2]] = CONE_YELLOW
    found = T.rule_findings(_broken(track, track.cones.xy, few))
    assert [f.severity for f in found] == ['warning']
    assert '2 yellow cones left' in found[0].message


def test_clutter_beside_the_track_is_no_boundary() -> None:
    """Cones far from the centre line do not break width or spacing."""
    track = T.random_track(6)
    rng = np.random.default_rng(1)
    far = []
    while len(far) < 20:
        p = rng.uniform(track.centerline.min(0) - 30,
                        track.centerline.max(0) + 30)
        if np.hypot(*(track.centerline - p).T).min() > 6.0:
            far.append(p)
    xy = np.vstack([track.cones.xy, far])
    cls = np.concatenate([track.cones.class_id, np.zeros(20, np.uint8)])
    assert T.check_track_rules(_broken(track, xy, cls)) == []


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The CLI exports generated tracks (exit 0 when legal)."""
    out = tmp_path / 'cli.csv'
    assert T.main(['random', '--seed', '4', '--out', str(out)]) == 0
    assert out.read_text().startswith('tag,x,y,')
    assert T.main(['hard', '--seed', '2']) == 0
    assert 'violation' not in capsys.readouterr().out
