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
    _s, lat, _d = T._lateral(track, xy)
    narrow = xy.copy()
    idx = np.flatnonzero(cls == CONE_YELLOW)[5]
    # pull one yellow cone to 1.0 m from the centre line
    cl = track.centerline
    j = int(np.argmin(np.hypot(*(cl - xy[idx]).T)))
    narrow[idx] = cl[j] + (xy[idx] - cl[j]) * (1.0 / abs(lat[idx]))
    assert any('narrower' in v for v in
               T.check_track_rules(_broken(track, narrow, cls)))
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


def test_csv_round_trip_closed(tmp_path: Path) -> None:
    """Save and load a generated track: same cones, start and shape."""
    track = T.random_track(11)
    path = tmp_path / 'track.csv'
    T.save_track_csv(track, str(path))
    header = path.read_text().splitlines()[0]
    assert header == 'tag,x,y,direction,x_variance,y_variance,xy_covariance'
    back = T.load_track_csv(str(path), mission='trackdrive')
    np.testing.assert_array_equal(back.cones.xy, track.cones.xy)
    np.testing.assert_array_equal(back.cones.class_id, track.cones.class_id)
    assert back.car_start.x == track.car_start.x
    assert back.car_start.yaw == track.car_start.yaw
    assert back.closed
    assert back.width == pytest.approx(3.0, abs=0.05)
    assert back.length == pytest.approx(track.length, rel=0.03)
    # rebuilt centre line lies on the original one
    from scipy.spatial import cKDTree
    d, _i = cKDTree(T._resample(track.centerline, True, 0.1)).query(
        back.centerline)
    assert d.max() < 0.3 and np.median(d) < 0.1
    # the rebuilt centre line is an estimate: allow its error in the width
    assert T.check_track_rules(back, tolerance=0.3) == []
    # and a second round trip is byte-identical
    path2 = tmp_path / 'again.csv'
    T.save_track_csv(back, str(path2))
    assert path2.read_text() == path.read_text()


def test_csv_round_trip_acceleration(tmp_path: Path) -> None:
    """An open track keeps its start and finish lines through a file."""
    track = T.acceleration_track()
    path = tmp_path / 'acc.csv'
    T.save_track_csv(track, str(path))
    back = T.load_track_csv(str(path), mission='acceleration')
    assert not back.closed
    mid = {k: (v.a + v.b) / 2.0 for k, v in back.timing_lines.items()}
    assert mid['start'][0] == pytest.approx(0.0, abs=0.5)
    assert mid['finish'][0] == pytest.approx(75.0, abs=0.5)
    assert np.abs(back.centerline[:, 1]).max() < 1e-6


def test_csv_skidpad_round_trip(tmp_path: Path) -> None:
    """A skidpad file gets the standard layout placed at its car_start."""
    track = T.skidpad_track()
    path = tmp_path / 'skid.csv'
    T.save_track_csv(track, str(path))
    back = T.load_track_csv(str(path), mission='skidpad')
    np.testing.assert_allclose(back.centerline, track.centerline, atol=1e-9)
    assert len(back.cones) == len(track.cones)


GOOD = ('tag,x,y,direction,x_variance,y_variance,xy_covariance\n'
        'car_start,0.0,0.0,0.0,0,0,0\n'
        'blue,2.0,1.5,0,0,0,0\nyellow,2.0,-1.5,0,0,0,0\n'
        'blue,6.0,1.5,0,0,0,0\nyellow,6.0,-1.5,0,0,0,0\n')


@pytest.mark.parametrize('text, line, field', [
    (GOOD.replace('tag,x,y', 'tag,xx,y'), 1, "'x'"),
    (GOOD + 'blue,,3.0,0,0,0,0\n', 7, "'x'"),
    (GOOD + 'purple,1.0,3.0,0,0,0,0\n', 7, "'tag'"),
    (GOOD + 'blue,nan,3.0,0,0,0,0\n', 7, "'x'"),
    (GOOD + 'blue,1.0,abc,0,0,0,0\n', 7, "'y'"),
    (GOOD + 'yellow,6.05,-1.5,0,0,0,0\n', 7, "'x','y'"),
    (GOOD + 'blue,8.0,1.5,inf,0,0,0\n', 7, "'direction'"),
])
def test_bad_csv_names_file_line_field(tmp_path: Path, text: str, line: int,
                                       field: str) -> None:
    """Missing fields, unknown tags, NaN, overlaps: file, line and field."""
    path = tmp_path / 'bad.csv'
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        T.load_track_csv(str(path))
    msg = str(err.value)
    assert f'{path}:{line}:' in msg
    assert field in msg


def test_good_small_csv_loads(tmp_path: Path) -> None:
    """The minimal file above loads as an open track along +x."""
    path = tmp_path / 'good.csv'
    path.write_text(GOOD)
    track = T.load_track_csv(str(path))
    assert not track.closed
    assert track.width == pytest.approx(3.0)
    assert np.abs(track.centerline[:, 1]).max() < 1e-9


def test_headerless_csv(tmp_path: Path) -> None:
    """Files without the header line use the standard column order."""
    path = tmp_path / 'nohdr.csv'
    path.write_text(GOOD.split('\n', 1)[1] + 'blue,1.0,nan,0,0,0,0\n')
    with pytest.raises(ValueError, match=f'{path}:6: field .y.'):
        T.load_track_csv(str(path))
    path.write_text(GOOD.split('\n', 1)[1])
    assert len(T.load_track_csv(str(path)).cones) == 4


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The CLI exports a track and checks a file (exit 0 when legal)."""
    out = tmp_path / 'cli.csv'
    assert T.main(['random', '--seed', '4', '--out', str(out)]) == 0
    assert T.main(['check', str(out)]) == 0
    assert 'violation' not in capsys.readouterr().out
