# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Track files of other simulators: every format, awkward cases, errors."""

from pathlib import Path
import re

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
from hil_bridge.sim import track_files as F
from hil_bridge.sim import tracks as T
import numpy as np
import pytest
from scipy.spatial import cKDTree

DATA = Path(__file__).resolve().parent / 'data' / 'tracks'
OVAL_LENGTH = 2 * 65.0 + 2 * np.pi * 12.0


def _oval_centre(step: float = 0.05) -> np.ndarray:
    """Return the true centre line of the test oval (see make_tracks.py)."""
    x = np.arange(-32.5, 32.5, step)
    a = np.arange(-np.pi / 2, np.pi / 2, step / 12.0)
    return np.vstack([
        np.column_stack([x, np.zeros_like(x)]),
        np.column_stack([32.5 + 12 * np.cos(a), 12 + 12 * np.sin(a)]),
        np.column_stack([-x, np.full_like(x, 24.0)]),
        np.column_stack([-32.5 - 12 * np.cos(a), 12 - 12 * np.sin(a)])])


def _key(xy: np.ndarray, cls: np.ndarray) -> list:
    return sorted((round(float(x), 2), round(float(y), 2), int(c))
                  for (x, y), c in zip(xy, cls))


REFERENCE = F.read_track_file(str(DATA / 'eufs_oval.csv'))


@pytest.mark.parametrize('name, fmt, convention, start', [
    ('eufs_oval.csv', 'eufs', 'rep103', (-6.0, 0.0)),
    ('eufs_midpoints.csv', 'eufs', 'rep103', (-6.0, 0.0)),
    ('eufs_repeated_header.csv', 'eufs', 'rep103', (-3.0, 0.0)),
    # FSDS: the origin, moved back until the front is 0.5 m behind the
    # start line at x = 0 (the referee times the front bumper)
    ('fsds_oval.csv', 'fsds', 'rep103', (-2.8, 0.0)),
    ('fsds_oval_unreal.csv', 'fsds', 'unreal', (-2.8, 0.0)),
    ('pacsim_oval.yaml', 'pacsim', 'rep103', (-6.0, 0.0)),
    ('fssim_oval.yaml', 'fssim', 'rep103', (-6.0, 0.0)),
])
def test_every_format_loads_the_same_oval(name: str, fmt: str,
                                          convention: str,
                                          start: tuple) -> None:
    """Same cones, start, closed centre line on the true one, no findings."""
    path = str(DATA / name)
    assert F.detect_format(path) == fmt
    loaded = F.load_track_file(path, convention=convention)
    track = loaded.track
    assert loaded.fmt == fmt
    assert loaded.errors == []
    assert _key(track.cones.xy, track.cones.class_id) == \
        _key(REFERENCE.xy, REFERENCE.class_id)
    assert (track.car_start.x, track.car_start.y) == pytest.approx(
        start, abs=0.15)
    assert track.car_start.yaw == pytest.approx(0.0)
    assert track.closed
    assert track.width == pytest.approx(3.0, abs=0.02)
    assert track.length == pytest.approx(OVAL_LENGTH, rel=0.01)
    d, _i = cKDTree(_oval_centre()).query(track.centerline)
    assert d.max() < 0.25 and np.median(d) < 0.05
    # the centre line runs counter-clockwise (blue, the infield, left)
    assert T.check_track_rules(track) == []
    start_line = track.timing_lines['start']
    assert ((start_line.a + start_line.b) / 2.0) == pytest.approx(
        [0.0, 0.0], abs=0.3)
    assert start_line.direction == pytest.approx([1.0, 0.0], abs=0.02)


def test_midpoints_are_the_centre_line_not_cones() -> None:
    """``midpoint`` rows build the centre line and are not cones."""
    tf = F.read_track_file(str(DATA / 'eufs_midpoints.csv'))
    assert len(tf.midpoints) == 43
    assert len(tf.xy) == len(REFERENCE.xy)
    track = F.build_track(tf)
    d, _i = cKDTree(T.resample(track.centerline, True, 0.05)).query(
        tf.midpoints)
    assert d.max() < 0.1
    # unordered midpoints are not a line: the cones rebuild it instead
    tf.midpoints = tf.midpoints[np.random.default_rng(0).permutation(43)]
    track = F.build_track(tf)
    assert any('midpoint rows do not form a line' in n for n in tf.notes)
    assert track.length == pytest.approx(OVAL_LENGTH, rel=0.01)


def test_duplicates_are_merged_with_a_warning_naming_both_lines() -> None:
    """A blue cone 6.5 cm and a gate cone 27 cm from another: merged."""
    loaded = F.load_track_file(str(DATA / 'eufs_duplicates.csv'))
    assert loaded.errors == []
    notes = [w for w in loaded.warnings if 'merged' in w]
    assert len(notes) == 2
    assert 'eufs_duplicates.csv:12: blue cone merged with the cone(s) of ' \
        'line 13 (6.5 cm apart' in notes[0]
    assert ':100: big_orange cone merged with the cone(s) of line 102 ' \
        '(27.0 cm apart' in notes[1]
    cones = loaded.track.cones
    assert len(cones) == len(REFERENCE.xy)
    big = cones.xy[cones.class_id == CONE_BIG_ORANGE]
    assert any(np.allclose(b, [0.4, 1.5 + 0.135]) for b in big)
    blue = cones.xy[cones.class_id == CONE_BLUE]
    first = REFERENCE.xy[9]
    assert any(np.allclose(b, first + [0.0325, 0.0]) for b in blue)


def test_repeated_header_is_skipped() -> None:
    """A second header line mid-file is noted and skipped."""
    loaded = F.load_track_file(str(DATA / 'eufs_repeated_header.csv'))
    assert loaded.warnings[0] == (f'{DATA / "eufs_repeated_header.csv"}:51: '
                                  'repeated header line skipped')
    # no car_start row: 3 m behind the big orange gate, facing along it
    assert 'no start pose' in loaded.warnings[1] and len(loaded.warnings) == 2


def test_mirrored_colours_are_an_error() -> None:
    """Blue right of the driving direction stops loading, with a hint."""
    for name, hint in (('eufs_mirrored.csv', True),
                       ('fsds_oval_unreal.csv', True)):
        path = str(DATA / name)
        loaded = F.load_track_file(path)
        assert len(loaded.errors) == 1
        assert 'colours mirrored: 4' in loaded.errors[0]
        assert ('convention unreal' in loaded.errors[0]) == hint
        with pytest.raises(ValueError, match='colours mirrored') as err:
            F.open_track(path)
        assert '\n' not in str(err.value)
        assert str(err.value).startswith(path)


def test_unreal_convention_flips_y_and_headings(tmp_path: Path) -> None:
    """``unreal`` negates y and the start heading."""
    path = tmp_path / 'u.csv'
    path.write_text(
        'tag,x,y,direction,x_variance,y_variance,xy_covariance\n'
        'car_start,1.0,2.0,0.5,0,0,0\nblue,3.0,-1.5,0,0,0,0\n'
        'yellow,3.0,1.5,0,0,0,0\nblue,7.0,-1.5,0,0,0,0\n'
        'yellow,7.0,1.5,0,0,0,0\nmidpoint,5.0,0.25,0,0,0,0\n')
    tf = F.read_track_file(str(path), convention='unreal')
    assert (tf.car_start.x, tf.car_start.y, tf.car_start.yaw) == \
        pytest.approx((1.0, -2.0, -0.5))
    assert tf.xy[tf.class_id == CONE_BLUE][:, 1] == pytest.approx(
        [1.5, 1.5])
    assert tf.midpoints[0] == pytest.approx([5.0, -0.25])


def test_pacsim_timing_sensors_are_not_cones() -> None:
    """time_keeping entries give the timing lines, never cones."""
    tf = F.read_track_file(str(DATA / 'pacsim_oval.yaml'))
    assert tf.timing.tolist() == [[0.0, 4.0], [0.0, -4.0]]
    assert not np.any(np.all(np.isclose(tf.xy, [0.0, 4.0]), axis=1))
    assert set(tf.side.tolist()) == {1, -1}
    assert tf.closed is True
    track = F.build_track(tf)
    line = track.timing_lines['start']
    assert track.timing_lines['finish'] is line
    assert ((line.a + line.b) / 2.0) == pytest.approx([0.0, 0.0], abs=0.3)
    assert np.hypot(*(line.b - line.a)) == pytest.approx(4.0, abs=0.1)


@pytest.mark.parametrize('name', ['eufs_acceleration.csv',
                                  'pacsim_acceleration.yaml',
                                  'fssim_acceleration.yaml'])
def test_acceleration_in_every_format(name: str) -> None:
    """Open track: start line at x 0, finish at x 75, orange braking zone."""
    loaded = F.load_track_file(str(DATA / name))
    assert loaded.errors == []
    track = loaded.track
    assert not track.closed
    mid = {k: (v.a + v.b) / 2.0 for k, v in track.timing_lines.items()}
    assert mid['start'] == pytest.approx([0.0, 0.0], abs=0.5)
    assert mid['finish'] == pytest.approx([75.0, 0.0], abs=0.5)
    cls = track.cones.class_id
    assert (cls == CONE_ORANGE).sum() == 30
    assert (cls == CONE_BIG_ORANGE).sum() == 8
    assert track.car_start.x == pytest.approx(-3.0)
    if name.startswith('pacsim'):
        assert any('2 invisible landmarks skipped' in w
                   for w in loaded.warnings)


def test_pacsim_unknown_cones_are_kept_as_clutter() -> None:
    """Unknown-colour cones load, and are no boundary for the rules."""
    loaded = F.load_track_file(str(DATA / 'pacsim_clutter.yaml'))
    cls = loaded.track.cones.class_id
    assert (cls == CONE_UNKNOWN).sum() == 5
    assert loaded.errors == [] and loaded.warnings == []
    assert (cls == CONE_YELLOW).sum() == (REFERENCE.class_id ==
                                          CONE_YELLOW).sum()


def test_fssim_front_wing_start_and_tk_devices() -> None:
    """The start pose is the front wing: the rear axle is 2.3 m behind."""
    tf = F.read_track_file(str(DATA / 'fssim_oval.yaml'))
    assert tf.car_start.x == pytest.approx(-3.7 - F.FRONT_WING_OFFSET)
    assert tf.timing.tolist() == [[0.0, 3.0], [0.0, -3.0]]
    assert set(tf.side.tolist()) == {1, -1, 0}


def test_convert_round_trip(tmp_path: Path) -> None:
    """Every format converts to our CSV and reads back identically."""
    for name in ('pacsim_oval.yaml', 'fssim_acceleration.yaml',
                 'eufs_midpoints.csv'):
        track = F.load_track_file(str(DATA / name)).track
        out = tmp_path / f'{name}.csv'
        F.save_track_csv(track, str(out))
        back = F.load_track_file(str(out)).track
        assert back.cones.xy.tolist() == track.cones.xy.tolist()
        assert back.cones.class_id.tolist() == track.cones.class_id.tolist()
        assert back.car_start == track.car_start
        assert back.closed == track.closed


def test_csv_round_trip_closed(tmp_path: Path) -> None:
    """Save and load a generated track: same cones, start and shape."""
    track = T.random_track(11)
    path = tmp_path / 'track.csv'
    F.save_track_csv(track, str(path))
    header = path.read_text().splitlines()[0]
    assert header == 'tag,x,y,direction,x_variance,y_variance,xy_covariance'
    back = F.load_track_csv(str(path), mission='trackdrive')
    np.testing.assert_array_equal(back.cones.xy, track.cones.xy)
    np.testing.assert_array_equal(back.cones.class_id, track.cones.class_id)
    assert back.car_start.x == track.car_start.x
    assert back.car_start.yaw == track.car_start.yaw
    assert back.closed
    assert back.width == pytest.approx(3.0, abs=0.05)
    assert back.length == pytest.approx(track.length, rel=0.03)
    d, _i = cKDTree(T.resample(track.centerline, True, 0.1)).query(
        back.centerline)
    assert d.max() < 0.3 and np.median(d) < 0.1
    assert T.check_track_rules(back) == []
    path2 = tmp_path / 'again.csv'
    F.save_track_csv(back, str(path2))
    assert path2.read_text() == path.read_text()


def test_csv_round_trip_acceleration(tmp_path: Path) -> None:
    """An open track keeps its start and finish lines through a file."""
    track = T.acceleration_track()
    path = tmp_path / 'acc.csv'
    F.save_track_csv(track, str(path))
    back = F.load_track_csv(str(path), mission='acceleration')
    assert not back.closed
    mid = {k: (v.a + v.b) / 2.0 for k, v in back.timing_lines.items()}
    assert mid['start'][0] == pytest.approx(0.0, abs=0.5)
    assert mid['finish'][0] == pytest.approx(75.0, abs=0.5)
    assert np.abs(back.centerline[:, 1]).max() < 1e-6


def test_csv_skidpad_round_trip(tmp_path: Path) -> None:
    """A skidpad file gets the standard layout placed on its cones."""
    track = T.skidpad_track()
    path = tmp_path / 'skid.csv'
    F.save_track_csv(track, str(path))
    back = F.load_track_csv(str(path), mission='skidpad')
    np.testing.assert_allclose(back.centerline, track.centerline, atol=1e-9)
    assert len(back.cones) == len(track.cones)
    assert T.check_track_rules(back) == []


def test_hard_layout_round_trip(tmp_path: Path) -> None:
    """A hard layout (side-by-side lanes, tight hairpins) reads back."""
    from hil_bridge.sim.track_gen_hard import hard_track
    track = hard_track(4)
    path = tmp_path / 'hard.csv'
    F.save_track_csv(track, str(path))
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    assert loaded.track.closed
    assert loaded.track.length == pytest.approx(track.length, rel=0.03)


GOOD = ('tag,x,y,direction,x_variance,y_variance,xy_covariance\n'
        'car_start,0.0,0.0,0.0,0,0,0\n'
        'blue,2.0,1.5,0,0,0,0\nyellow,2.0,-1.5,0,0,0,0\n'
        'blue,6.0,1.5,0,0,0,0\nyellow,6.0,-1.5,0,0,0,0\n')


@pytest.mark.parametrize('text, line, field', [
    (GOOD.replace('tag,x,y', 'tag,xx,y'), 1, "'x'"),
    (GOOD + 'blue,,3.0,0,0,0,0\n', 7, "'x'"),
    (GOOD + 'purple,1.0,3.0,0,0,0,0\n', 7, "'tag'"),
    (GOOD + ',1.0,3.0,0,0,0,0\n', 7, "'tag'"),
    (GOOD + 'blue,nan,3.0,0,0,0,0\n', 7, "'x'"),
    (GOOD + 'blue,1.0,abc,0,0,0,0\n', 7, "'y'"),
    (GOOD + 'blue,1e300,3.0,0,0,0,0\n', 7, "'x'"),
    (GOOD.replace('car_start,0.0,0.0,0.0', 'car_start,0.0,0.0,inf'), 2,
     "'direction'"),
    (GOOD + 'car_start,1.0,1.0,0,0,0,0\n', 7, "'tag'"),
    ('\n\n', 1, 'empty file'),
])
def test_bad_csv_names_file_line_field(tmp_path: Path, text: str, line: int,
                                       field: str) -> None:
    """Missing fields, unknown tags, NaN, variances: one line, file:line."""
    path = tmp_path / 'bad.csv'
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(path))
    msg = str(err.value)
    assert msg.startswith(f'{path}:{line}:'), msg
    assert field in msg
    assert '\n' not in msg


PACSIM = """track:
  version: 1.0
  lanesFirstWithLastConnected: false
  start:
    position: [0.0, 0.0, 0.0]
    orientation: [0.0, 0.0, 0.0]
  left:
  - position: [2.0, 1.5, 0.0]
    class: blue
  - position: [6.0, 1.5, 0.0]
    class: blue
  right:
  - position: [2.0, -1.5, 0.0]
    class: yellow
  - position: [6.0, -1.5, 0.0]
    class: yellow
  time_keeping: []
  unknown: []
"""
FSSIM = """cones_left:
- [2.0, 1.5]
- [6.0, 1.5]
cones_right:
- [2.0, -1.5]
- [6.0, -1.5]
cones_orange: []
cones_orange_big: []
starting_pose_front_wing: [2.3, 0.0, 0.0]
tk_device: []
"""


@pytest.mark.parametrize('fmt, text, old, new, line, field', [
    ('pacsim', PACSIM, 'track:', 'track: [', 3, 'not valid YAML'),
    ('pacsim', PACSIM, 'track:', 'trak:', 1, "'track'"),
    ('pacsim', PACSIM, '  left:', '  links:', 2, "'track.left'"),
    ('pacsim', PACSIM, '[6.0, 1.5, 0.0]', '[6.0]', 10, "'track.left[1]"
     ".position'"),
    ('pacsim', PACSIM, '[6.0, 1.5, 0.0]', '[6.0, nan, 0.0]', 10,
     "'track.left[1].position[1]'"),
    ('pacsim', PACSIM, '[6.0, 1.5, 0.0]', '[6.0, a, 0.0]', 10,
     "'track.left[1].position[1]'"),
    ('pacsim', PACSIM, '[6.0, 1.5, 0.0]', '[6.0, -2.0e+200, 0.0]', 10,
     "'track.left[1].position[1]'"),
    ('pacsim', PACSIM, '    class: yellow\n  time', '    class: pink\n  time',
     16, "'track.right[1].class'"),
    ('pacsim', PACSIM, '  - position: [2.0, -1.5, 0.0]',
     '  - pos: [2.0, -1.5, 0.0]', 13, "'track.right[0].position'"),
    ('pacsim', PACSIM, 'orientation: [0.0, 0.0, 0.0]', 'orientation: [0.0]',
     6, "'track.start.orientation'"),
    ('pacsim', PACSIM, 'Connected: false', 'Connected: maybe', 3,
     "'track.lanesFirstWithLastConnected'"),
    ('pacsim', PACSIM, '  right:', '  right: 5\n  r:', 12, "'track.right'"),
    ('fssim', FSSIM, 'cones_right:', 'cones_rite:', 1, "'cones_right'"),
    ('fssim', FSSIM, '- [6.0, 1.5]', '- 6.0', 3, "'cones_left[1]'"),
    ('fssim', FSSIM, '[2.3, 0.0, 0.0]', '[2.3, 0.0]', 9,
     "'starting_pose_front_wing'"),
    ('fssim', FSSIM, 'tk_device: []', 'tk_device:\n- [1.0, x]', 11,
     "'tk_device[0][1]'"),
])
def test_bad_yaml_names_file_line_field(tmp_path: Path, fmt: str, text: str,
                                        old: str, new: str, line: int,
                                        field: str) -> None:
    """Broken PacSim/fssim files: one error line with file, line, field."""
    assert old in text
    path = tmp_path / 'bad.yaml'
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(path), fmt=fmt)
    msg = str(err.value)
    assert msg.startswith(f'{path}:{line}:'), msg
    assert field in msg, msg
    assert '\n' not in msg


def test_numbers_beyond_any_map_frame_name_file_line_field(
        tmp_path: Path) -> None:
    """A coordinate of 1e300 (the geometry would overflow) is one clear error."""
    text = (DATA / 'screen_oval.json').read_text()
    assert '"x": -27.857' in text
    path = tmp_path / 'far.json'
    path.write_text(text.replace('"x": -27.857', '"x": -2.7857e300', 1))
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(path))
    msg = str(err.value)
    line = text[:text.index('"x": -27.857')].count('\n') + 1
    assert msg.startswith(f'{path}:{line}:'), msg
    assert 'within 1e+08' in msg and '\n' not in msg
    sdf = (DATA / 'fssim_oval.sdf').read_text()
    pose = re.search(r'<pose>\s*(-?[\d.]+) ', sdf)
    assert pose is not None
    path = tmp_path / 'far.sdf'
    path.write_text(sdf[:pose.start(1)] + '4e150' + sdf[pose.end(1):])
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(path), fmt='sdf')
    line = sdf[:pose.start(1)].count('\n') + 1
    assert str(err.value).startswith(f'{path}:{line}:'), str(err.value)
    assert "'pose'" in str(err.value) and 'out of range' in str(err.value)
    # a map frame in UTM coordinates (northing ~5.3e6 m) is not refused
    rows = GOOD.split('\n')
    far = '\n'.join(rows[:1] + [
        ','.join([r.split(',')[0], str(float(r.split(',')[1]) + 431234.5),
                  str(float(r.split(',')[2]) + 5301234.25)] + r.split(',')[3:])
        for r in rows[1:] if r])
    path = tmp_path / 'utm.csv'
    path.write_text(far + '\n')
    track = F.load_track_file(str(path)).track
    assert track.width == pytest.approx(3.0)
    assert track.car_start.y == pytest.approx(5301234.25)


def _refused(path: Path, text: str, line: int, field: str) -> None:
    """Assert that a file with ``text`` is refused in one line naming it."""
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(path))
    msg = str(err.value)
    assert msg.startswith(f'{path}:{line}:'), msg
    assert field in msg and '\n' not in msg, msg


JSON_LISTS = """{
  "blue_cones": [
    {"x": 2.0, "y": 1.5},
    {"x": 6.0,
     "y": 1.5}
  ],
  "yellow_cones": [[2.0, -1.5], [6.0, -1.5]],
  "cars": [{"pos": {"x": 0.0, "y": 0.0},
            "orientation": 0.0}]
}
"""
JSON_COLUMNS = """{"x": [2.0, 6.0,
       2.0, 6.0],
 "y": [1.5, 1.5, -1.5, -1.5],
 "color": ["blue", "blue",
           "yellow", "yellow"]}
"""


@pytest.mark.parametrize('text, old, new, line, field', [
    (JSON_LISTS, ' "y": 1.5}\n', ' "y": "1.5"}\n', 5, "'blue_cones[1].y'"),
    (JSON_LISTS, '{"x": 2.0, "y": 1.5}', '{"x": 2.0}', 3, "'blue_cones[0].y'"),
    (JSON_LISTS, '[6.0, -1.5]]', '[6.0, 1e200]]', 7, "'yellow_cones[1][1]'"),
    (JSON_LISTS, '[6.0, -1.5]]', '6.0]', 7, "'yellow_cones[1]'"),
    (JSON_LISTS, '"orientation": 0.0', '"orientation": NaN', 9,
     "'cars[0].orientation'"),
    (JSON_LISTS, '"x": 0.0, "y": 0.0', '"x": 0.0, "y": null', 8, "'cars[0].y'"),
    (JSON_COLUMNS, '2.0, 6.0]', '2.0, Infinity]', 2, "'x[3]'"),
    (JSON_COLUMNS, '"yellow", "yellow"', '"yellow", "pink"', 5, "'color[3]'"),
    (JSON_COLUMNS, '-1.5, -1.5]', '-1.5]', 1, "'x'"),
    (JSON_LISTS, '    {"x": 6.0,', '    {"x": 6.0,,', 4, 'not valid JSON'),
])
def test_bad_json_names_file_line_field(tmp_path: Path, text: str, old: str,
                                        new: str, line: int, field: str) -> None:
    """A broken JSON layout: one error line naming the line of the value at fault."""
    path = tmp_path / 'good.json'
    path.write_text(text)
    assert F.load_track_file(str(path)).track.width == pytest.approx(3.0)
    assert old in text
    _refused(tmp_path / 'bad.json', text.replace(old, new, 1), line, field)


def test_good_small_files_load(tmp_path: Path) -> None:
    """The minimal files above load as open tracks along +x."""
    for name, text in (('good.csv', GOOD), ('good.yaml', PACSIM),
                       ('good_fssim.yaml', FSSIM)):
        path = tmp_path / name
        path.write_text(text)
        track = F.load_track_file(str(path)).track
        assert not track.closed
        assert track.width == pytest.approx(3.0)
        assert np.abs(track.centerline[:, 1]).max() < 1e-9
        assert track.car_start.x == pytest.approx(0.0)


def test_other_errors(tmp_path: Path) -> None:
    """No cones, unknown format/convention, one-sided tracks, no file."""
    path = tmp_path / 'x.csv'
    path.write_text('tag,x,y\ncar_start,0,0\nmidpoint,1,0\n')
    with pytest.raises(ValueError, match=f'^{path}: no cones$'):
        F.load_track_file(str(path))
    path.write_text('blue,1,1.5\nblue,5,1.5\nblue,9,1.5\n')
    with pytest.raises(ValueError, match='one boundary only'):
        F.load_track_file(str(path))
    with pytest.raises(ValueError, match="format 'xyz'"):
        F.load_track_file(str(path), fmt='xyz')
    with pytest.raises(ValueError, match="convention 'left'"):
        F.load_track_file(str(path), convention='left')
    other = tmp_path / 'x.yaml'
    other.write_text('foo: 1\n')
    with pytest.raises(ValueError, match=f'^{other}:1: field .track.'):
        F.load_track_file(str(other))
    with pytest.raises(FileNotFoundError):
        F.load_track_file(str(tmp_path / 'missing.csv'))


def test_headerless_csv_is_fsds(tmp_path: Path) -> None:
    """Files without the header line use the standard column order."""
    path = tmp_path / 'nohdr.csv'
    path.write_text(GOOD.split('\n', 1)[1] + 'blue,1.0,nan,0,0,0,0\n')
    with pytest.raises(ValueError, match=f'{path}:6: field .y.'):
        F.load_track_file(str(path))
    path.write_text(GOOD.split('\n', 1)[1])
    assert F.detect_format(str(path)) == 'eufs'       # it has car_start
    assert len(F.load_track_file(str(path)).track.cones) == 4
    path.write_text(GOOD.split('\n', 2)[2])
    assert F.detect_format(str(path)) == 'fsds'


# ------------------------------------------------- what public files contain
# Each file below is ours (make_tracks.py) and reproduces a feature met in
# public eufs_sim, FSDS, PacSim, fssim and team track files
# (docs/track_formats.md, "Measured on public files").

def _same_oval(track: T.Track, shift: tuple = (0.0, 0.0)) -> None:
    """Assert the oval's centre line: closed, 3 m wide, on the true one."""
    assert track.closed
    assert track.width == pytest.approx(3.0, abs=0.05)
    assert track.length == pytest.approx(OVAL_LENGTH, rel=0.01)
    d, _i = cKDTree(_oval_centre() + np.array(shift)).query(track.centerline)
    assert d.max() < 0.3


def test_hand_edited_csv_loads() -> None:
    """BOM, CRLF, comments, blanks, tag case, a header typo, eufs noise."""
    loaded = F.load_track_file(str(DATA / 'eufs_messy.csv'))
    assert loaded.fmt == 'eufs' and loaded.errors == []
    track = loaded.track
    _same_oval(track)
    cls = track.cones.class_id
    assert (cls == CONE_UNKNOWN).sum() == 1        # active noise: a cone
    assert len(track.cones) == len(REFERENCE.xy) + 1
    assert (track.car_start.x, track.car_start.y) == (-6.0, 0.0)
    text = ' '.join(loaded.warnings)
    assert '1 unused values that are not numbers ignored (first line 10: ' \
        "'0.0s')" in text
    assert '1 inactive_noise landmarks skipped' in text


def test_spreadsheet_exports_load(tmp_path: Path) -> None:
    """
    European spreadsheet exports: ``;`` with decimal commas, UTF-16 text.

    Excel in a German or French locale saves CSV as ``-6,0;1,5`` and its
    "Unicode text" as tab-separated UTF-16 with a byte order mark.
    """
    rows = (DATA / 'eufs_oval.csv').read_text().splitlines()
    semi = tmp_path / 'semi.csv'
    semi.write_text('\n'.join(';'.join(c.replace('.', ',') for c in
                                       r.split(',')) for r in rows) + '\n')
    assert '-6,0;0,0' in semi.read_text()
    wide = tmp_path / 'unicode.txt'
    wide.write_text('\n'.join(r.replace(',', '\t') for r in rows) + '\n',
                    encoding='utf-16')
    for path in (semi, wide):
        loaded = F.load_track_file(str(path))
        assert loaded.fmt == 'eufs' and loaded.errors == [], path
        _same_oval(loaded.track)
        assert (loaded.track.car_start.x, loaded.track.car_start.y) == \
            (-6.0, 0.0)
    # a UTF-16 mark on bytes that are not UTF-16: one line
    odd = tmp_path / 'odd.csv'
    odd.write_bytes(b'\xff\xfe' + b'\x00\xd8')
    with pytest.raises(ValueError, match=r'odd.csv:1: UTF-16 byte order'):
        F.load_track_file(str(odd))


@pytest.mark.parametrize('name', ['pacsim_oval.yaml', 'fssim_oval.yaml'])
def test_flow_style_yaml_is_yaml(tmp_path: Path, name: str) -> None:
    """
    A YAML file written in flow style (``{track: {...}}``) is not JSON.

    ``yaml.safe_dump(..., default_flow_style=True)`` writes the whole file
    as one ``{...}`` mapping; it was read as JSON and refused.
    """
    import yaml
    doc = yaml.safe_load((DATA / name).read_text())
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, default_flow_style=True))
    assert path.read_text().startswith('{')
    want = F.load_track_file(str(DATA / name)).track
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    np.testing.assert_allclose(loaded.track.centerline, want.centerline)
    path.write_text('{track: [1, 2')
    with pytest.raises(ValueError, match=rf'{name}:1: not valid YAML'):
        F.load_track_file(str(path))


def test_team_csv_columns_flags_and_no_start() -> None:
    """cone_type,X,Y,..,right,left: flags give sides, a slip is outvoted."""
    loaded = F.load_track_file(str(DATA / 'team_flags.csv'))
    assert loaded.fmt == 'csv' and loaded.errors == []
    track = loaded.track
    # the oval turned to +y, gate 5 m ahead of the origin: the car starts
    # 3 m behind the gate facing along the track (+y)
    assert (track.car_start.x, track.car_start.y) == pytest.approx(
        (0.0, 2.0), abs=0.05)
    assert track.car_start.yaw == pytest.approx(np.pi / 2, abs=0.02)
    assert track.closed and track.width == pytest.approx(3.0, abs=0.05)
    assert track.length == pytest.approx(OVAL_LENGTH, rel=0.01)
    assert loaded.rule_warnings == []               # gate cones not in it
    assert any("1 cones whose colour contradicts the file's left/right"
               in w for w in loaded.warnings)


def test_old_eufs_tags_and_closing_row() -> None:
    """left/right/big/normal without a header: an acceleration track."""
    loaded = F.load_track_file(str(DATA / 'eufs_old_tags.csv'))
    assert loaded.fmt == 'csv' and loaded.errors == []
    track = loaded.track
    assert track.mission == 'acceleration' and not track.closed
    cls = track.cones.class_id
    assert [(cls == c).sum() for c in (CONE_BLUE, CONE_YELLOW, CONE_ORANGE,
                                       CONE_BIG_ORANGE)] == [14, 14, 33, 8]
    # the row of cones across the lane at the end is not a narrow track
    assert loaded.rule_warnings == []


def test_uncoloured_cones_are_walked_onto_their_boundaries() -> None:
    """x,y rows and one-code cone maps: sides from the geometry."""
    for name in ('plain_xy.csv', 'conemap_uncoloured.yaml'):
        loaded = F.load_track_file(str(DATA / name))
        assert loaded.errors == [], name
        _same_oval(loaded.track)
        assert any('put on the left or right boundary by walking the '
                   'track' in w for w in loaded.warnings), name


def test_not_cones_are_refused_in_one_line() -> None:
    """A path, a midpoint file, one boundary: one line, no track."""
    for name, text in (('path_xy.csv', 'only 1.00 m apart (median): a '
                        'path or centre line, not cones'),
                       ('midpoints_only.csv', "1: field 'x': header "
                        "'mid_x,mid_y' has no x column"),
                       ('blue_only.csv', 'do not form a track'),
                       ('include_only.world', "1: field 'include': no cones "
                        'here; the file includes model://small_track')):
        path = str(DATA / name)
        with pytest.raises(ValueError) as err:
            F.load_track_file(path)
        msg = str(err.value)
        assert msg.startswith(path) and text in msg and '\n' not in msg


def test_cone_map_numeric_colours_read_by_position() -> None:
    """A rostopic echo dump: codes 0/1/2 are blue/yellow/big orange here."""
    loaded = F.load_track_file(str(DATA / 'conemap_oval.yaml'))
    assert loaded.fmt == 'conemap' and loaded.errors == []
    track = loaded.track
    _same_oval(track)
    assert _key(track.cones.xy, track.cones.class_id) == \
        _key(REFERENCE.xy, REFERENCE.class_id)
    text = ' '.join(loaded.warnings)
    assert '0 = blue (45), 1 = yellow (49), 2 = big_orange (4)' in text
    assert '1 more YAML document(s) after the first ignored' in text


def test_sdf_model_and_world() -> None:
    """The fssim export is mirrored (swapped loads it); a world is posed."""
    path = str(DATA / 'fssim_oval.sdf')
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'sdf'
    assert len(loaded.errors) == 1 and 'convention swapped' in \
        loaded.errors[0]
    fixed = F.load_track_file(path, convention='swapped')
    assert fixed.errors == []
    _same_oval(fixed.track)
    assert _key(fixed.track.cones.xy, fixed.track.cones.class_id) == \
        _key(REFERENCE.xy, REFERENCE.class_id)
    mid = (fixed.track.timing_lines['start'].a +
           fixed.track.timing_lines['start'].b) / 2.0
    assert mid == pytest.approx([0.0, 0.0], abs=0.3)  # the tk devices
    world = F.load_track_file(str(DATA / 'eufs_oval.world'))
    assert world.errors == []
    # the model's pose (10, 5) moves every cone; the saved <state> copy
    # and the barrel are not cones
    _same_oval(world.track, shift=(10.0, 5.0))
    assert len(world.track.cones) == len(REFERENCE.xy)
    assert any('2 non-cone objects skipped' in w for w in world.warnings)


def test_json_layouts() -> None:
    """Screen-axis colour lists (mirrored: unreal loads) and columns."""
    path = str(DATA / 'screen_oval.json')
    assert F.detect_format(path) == 'json'
    assert F.load_track_file(path).errors
    track = F.load_track_file(path, convention='unreal').track
    _same_oval(track)
    assert (track.car_start.x, track.car_start.y) == (-6.0, 0.0)
    cols = F.load_track_file(str(DATA / 'columns_oval.json'))
    assert cols.errors == []
    _same_oval(cols.track)
    assert (cols.track.cones.class_id == CONE_BIG_ORANGE).sum() == 4


def test_unreal_transform_directory() -> None:
    """The first FSDS acceleration map: a directory of Unreal dumps (cm)."""
    path = str(DATA / 'unreal_acceleration')
    assert F.detect_format(path) == 'unreal_dir'
    loaded = F.load_track_file(path)
    assert loaded.errors == []
    track = loaded.track
    assert track.mission == 'acceleration'
    blue = track.cones.xy[track.cones.class_id == CONE_BLUE]
    assert np.allclose(blue[:, 1], 1.5) and blue[:, 0].min() == \
        pytest.approx(8.0)                  # origin.txt is 3 m behind x = 0
    assert (track.car_start.x, track.car_start.y) == (0.0, 0.0)


def test_scenario_takes_a_directory_track(tmp_path: Path) -> None:
    """A scenario's track_file may name an Unreal dump directory."""
    track = T.make_track({'track_file': str(DATA / 'unreal_acceleration'),
                          'mission': 'acceleration'})
    assert track.mission == 'acceleration' and len(track.cones) == 66


def test_skidpad_found_by_its_circles() -> None:
    """No mission given: the circles are found, the car moved to the start."""
    loaded = F.load_track_file(str(DATA / 'eufs_skidpad.csv'))
    assert loaded.errors == [] and loaded.rule_warnings == []
    track = loaded.track
    assert track.mission == 'skidpad'
    gate = track.timing_lines['start']
    assert (gate.a + gate.b) / 2.0 == pytest.approx([20.0, 5.0], abs=0.02)
    assert gate.direction == pytest.approx([0.0, 1.0], abs=1e-3)
    assert (track.car_start.x, track.car_start.y) == pytest.approx(
        (20.0, 5.0 - 13.0), abs=0.02)
    assert any('car start moved 4.00 m to the standard skidpad start' in w
               for w in loaded.warnings)


def test_colours_that_do_not_chain_fall_back_to_geometry() -> None:
    """Grey cones along a straight: the loop is walked by geometry."""
    loaded = F.load_track_file(str(DATA / 'eufs_grey_stretch.csv'))
    assert loaded.errors == []
    _same_oval(loaded.track)
    assert any('do not chain into two boundaries' in w
               for w in loaded.warnings)


def test_fsds_is_detected_only_with_fsds_tags(tmp_path: Path) -> None:
    """Headerless rows with other tags are a team CSV, not an FSDS map."""
    assert F.detect_format(str(DATA / 'fsds_oval.csv')) == 'fsds'
    assert F.detect_format(str(DATA / 'eufs_old_tags.csv')) == 'csv'
    assert F.detect_format(str(DATA / 'plain_xy.csv')) == 'csv'


def test_car_is_moved_behind_the_start_line(tmp_path: Path) -> None:
    """A start pose whose front stands across the start line moves back."""
    path = tmp_path / 'close.yaml'
    text = (DATA / 'pacsim_acceleration.yaml').read_text()
    path.write_text(text.replace('position: [-3.0, 0.0, 0.0]',
                                 'position: [-1.5, 0.0, 0.0]', 1))
    loaded = F.load_track_file(str(path))
    assert loaded.track.car_start.x == pytest.approx(-2.8, abs=0.02)
    assert any('car start moved 1.30 m back' in w for w in loaded.warnings)
    # 3 m behind (front 0.7 m behind the line): left where it is
    assert F.load_track_file(str(DATA / 'pacsim_acceleration.yaml')
                             ).track.car_start.x == -3.0


def test_start_line_ahead_of_the_car_without_gates() -> None:
    """No big orange cones, no sensors: the start line 3 m ahead."""
    track = F.load_track_file(str(DATA / 'plain_xy.csv')).track
    mid = (track.timing_lines['start'].a + track.timing_lines['start'].b) / 2
    assert 3.0 <= mid[0] - track.car_start.x < 4.0


def test_walk_keeps_to_its_lane_where_the_track_comes_back_beside_it() -> None:
    """
    A colourless map: past a corner the lane returns 3 m beside it.

    The walk's choice of side for a cone is a tie at that corner (both
    boundaries run on to it alike); the wrong one jumped into the lane
    beside and skipped the loop between (a mapped FSG 2024 layout).
    """
    import importlib.util
    # the generator of the test data (a script beside the files, no package)
    spec = importlib.util.spec_from_file_location('make_tracks', DATA / 'make_tracks.py')
    make_tracks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tracks)
    truth = make_tracks.lanes_side_by_side()
    xy = np.array([(x, y) for _, x, y in truth])
    loaded = F.load_track_file(str(DATA / 'conemap_side_by_side.yaml'))
    assert loaded.errors == []
    track = loaded.track
    assert track.closed
    sides, closed = F._walk(track.cones.xy, track.car_start)
    assert closed
    _, at = cKDTree(xy).query(track.cones.xy)
    want = np.array([1 if truth[i][0] == 'blue' else -1 for i in at])
    assert (sides == want).sum() >= len(want) - 2
    # the centre line runs the whole loop (the lane's length, not the
    # 250 m of the shortcut)
    centre = np.array(make_tracks.SIDE_BY_SIDE, dtype=float)
    assert track.length > 320.0
    assert cKDTree(track.centerline).query(centre)[0].max() < 2.5


def test_an_open_u_turn_is_not_closed_across_its_open_end(tmp_path: Path) -> None:
    """
    Two lanes side by side joined at one end only: an open track.

    The inner boundary's ends are 12 m apart (within the chain gap), but
    the outer boundary's closing segment runs along the same line: no
    lane there. A loop with cones missing round its start line (a 9.4 m
    gap on both sides) still closes.
    """
    track = F.load_track_file(str(DATA / 'eufs_open_u.csv')).track
    assert not track.closed
    assert track.length < 90.0
    text = (DATA / 'eufs_oval.csv').read_text().splitlines()
    kept = [line for line in text
            if not (line.split(',')[0] in ('blue', 'yellow')
                    and abs(float(line.split(',')[1])) < 4.0)]
    assert len(kept) < len(text)
    path = tmp_path / 'gap.csv'
    path.write_text('\n'.join(kept) + '\n')
    loaded = F.load_track_file(str(path))
    assert loaded.track.closed
    _same_oval(loaded.track)


# -------------------------------------- s32: unseen public files (loading)
# Our own small files with the features of public files met in s32
# (docs/track_formats.md, "Met in s32: unseen public files").

ONE_ROW = """cones_left: []
cones_orange: []
cones_orange_big: []
cones_right:
- [4.0, -2.0]
- [4.0, -1.0]
- [4.0, 0.0]
- [4.0, 1.0]
- [4.0, 2.0]
starting_pose_front_wing: [0.0, 0.0, 0.0]
tk_device: [[0.0, 3.0], [0.0, -3.0]]
"""


def test_one_boundary_only_is_refused_in_every_convention(
        tmp_path: Path) -> None:
    """Calibration rows (fssim): colours and sides, one boundary: no track."""
    from hil_bridge.tools import track_cli
    path = tmp_path / 'yellow_row.yaml'
    path.write_text(ONE_ROW)
    want = f'{path}: 0 cones on the left boundary, 5 on the right: one ' \
        'boundary only, not a track'
    for convention in F.CONVENTIONS:
        with pytest.raises(ValueError) as err:
            F.load_track_file(str(path), convention=convention)
        # unreal negates y: the row is on the left
        assert str(err.value) == (want if convention != 'unreal' else want.
                                  replace('0 cones', '5 cones').
                                  replace('5 on', '0 on')), convention
    # --convention auto tries every convention: refused there too
    row, = track_cli.table_rows([str(path)], 'auto', 'auto', '', 0.5)
    assert row['status'] == 'broken' and 'one boundary only' in row['first']


def test_fsds_origin_far_from_the_track_is_not_the_start(
        tmp_path: Path) -> None:
    """An old IFSSIM acceleration map: the cones 85-162 m up the y axis."""
    rows = [f'{tag},{x},{y},0,0,0,0' for tag, x in (('blue', 41.5),
                                                    ('yellow', 44.5))
            for y in range(86, 162, 5)]
    rows += [f'big_orange,{x},{y},0,0,0,0' for y in (85, 162)
             for x in (41.5, 44.5)]
    path = tmp_path / 'far_origin.csv'
    path.write_text('\n'.join(rows) + '\n')
    loaded = F.load_track_file(str(path))
    assert loaded.fmt == 'fsds' and loaded.errors == []
    track = loaded.track
    # behind the first gate (y = 85), facing along the lane (+y)
    start = track.car_start
    assert (start.x, start.y, start.yaw) == pytest.approx(
        (43.0, 82.0, np.pi / 2), abs=0.05)
    assert track.mission == 'acceleration' and not track.closed
    assert track.length < 90.0               # no lead-in from the origin
    assert any('FSDS puts the car at the origin, but the nearest cone is '
               '94.6 m from it' in w for w in loaded.warnings)
    # a map around the origin keeps FSDS's spawn point
    assert F.load_track_file(str(DATA / 'fsds_oval.csv')).track.car_start \
        .y == 0.0


def _ring_yaml(sensors: str) -> str:
    """Return a PacSim ring (blue r 15, yellow r 12), car at (0, 13.5)."""
    ang = np.linspace(0.0, 2 * np.pi, 24, endpoint=False)
    text = ('track:\n  lanesFirstWithLastConnected: true\n  start:\n'
            '    position: [0.0, 13.5, 0.0]\n    orientation: [0.0, 0.0, 0.0]\n')
    for key, r, colour in (('left', 15.0, 'blue'), ('right', 12.0, 'yellow')):
        text += f'  {key}:\n' + ''.join(
            f'  - position: [{r * np.cos(a):.3f}, {r * np.sin(a):.3f}, 0.0]\n'
            f'    class: {colour}\n' for a in ang)
    return text + '  time_keeping:\n' + sensors


def test_timing_sensors_far_apart_trigger_where_pacsim_does(
        tmp_path: Path) -> None:
    """
    Sensors 30 m apart across a ring (E-Team's circular.yaml).

    PacSim's gate triggers where the car crosses the segment between the
    sensors: driving clockwise from (0, 13.5), at (13.5, 0); the pair's
    midpoint (the ring's centre) is as near to every part of the lap.
    """
    path = tmp_path / 'sensors_far.yaml'
    path.write_text(_ring_yaml(
        '  - position: [15.0, 0.0, 0.0]\n  - position: [-15.0, 0.0, 0.0]\n'))
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    line = loaded.track.timing_lines['start']
    assert (line.a + line.b) / 2.0 == pytest.approx([13.5, 0.0], abs=0.5)
    assert line.direction @ [0.0, -1.0] > 0.9
    assert sum('are 30.0 m apart (over 3 track widths): the start line is '
               'where the segment between them crosses the centre line, at '
               '(13.5, ' in w and '(the first of its 2 crossings ahead of '
               'the car start)' in w for w in loaded.warnings) == 1
    # a gate across the lane, as wide as PacSim's competition gates (14 m,
    # crossing the centre line once): its line, no note
    path.write_text(_ring_yaml(
        '  - position: [-6.5, 0.0, 0.0]\n  - position: [-20.5, 0.0, 0.0]\n'))
    loaded = F.load_track_file(str(path))
    line = loaded.track.timing_lines['start']
    assert (line.a + line.b) / 2.0 == pytest.approx([-13.5, 0.0], abs=0.5)
    assert not any('track widths' in w for w in loaded.warnings)


def test_start_heading_beyond_two_pi_is_wrapped_with_a_note(
        tmp_path: Path) -> None:
    """The FSUK 2023 map (bristol): car_start direction 201 (a row counter)."""
    path = tmp_path / 'heading.csv'
    path.write_text(GOOD.replace('car_start,0.0,0.0,0.0',
                                 'car_start,0.0,0.0,201.0'))
    tf = F.read_track_file(str(path))
    assert tf.car_start.yaw == pytest.approx(201.0 - 32 * 2 * np.pi)
    assert tf.notes == [f"{path}:2: field 'direction': start heading 201 rad "
                        'is not an angle within +-2 pi: read as -0.062 rad '
                        '(-3.5 deg)']
    # within +-2 pi: wrapped to (-pi, pi] without a note
    path.write_text(GOOD.replace('car_start,0.0,0.0,0.0',
                                 'car_start,0.0,0.0,6.0'))
    tf = F.read_track_file(str(path))
    assert tf.car_start.yaw == pytest.approx(6.0 - 2 * np.pi)
    assert tf.notes == []


def test_small_orange_start_gate_without_big_orange(tmp_path: Path) -> None:
    """A SLAM map's start gate in small orange (FSUK 2023): the line there."""
    rows = ['tag,x,y,direction,x_variance,y_variance,xy_covariance',
            'car_start,0.0,0.0,0.0,0,0,0']
    rows += [f'{tag},{x},{y},0,0,0,0' for x in [0] + list(range(9, 60, 5))
             for tag, y in (('blue', 1.8), ('yellow', -1.8))]
    # the gate's two rows, and a pair 3 m on (not the gate)
    rows += [f'orange,{x},{y},0,0,0,0' for x in (4, 5, 8) for y in (1.8, -1.8)]
    path = tmp_path / 'small_gate.csv'
    path.write_text('\n'.join(rows) + '\n')
    loaded = F.load_track_file(str(path))
    line = loaded.track.timing_lines['start']
    assert (line.a + line.b) / 2.0 == pytest.approx([4.5, 0.0], abs=0.3)
    assert any('no big orange cones: the start line is at the 4 small '
               'orange cones across the lane 4.5 m ahead of the car start'
               in w for w in loaded.warnings)


def test_finish_at_the_first_row_of_a_big_orange_braking_zone(
        tmp_path: Path) -> None:
    """An EBS test map (QUTMS): the whole braking zone in big orange."""
    rows = ['tag,x,y,direction,x_variance,y_variance,xy_covariance',
            'car_start,0.0,0.0,0.0,0,0,0']
    rows += [f'{tag},{x},{y},0,0,0,0' for x in range(5, 51, 5)
             for tag, y in (('blue', 1.5), ('yellow', -1.5))]
    rows += [f'big_orange,{x},{y},0,0,0,0' for x in [4] + list(range(55, 66, 2))
             for y in (1.5, -1.5)]
    rows += ['big_orange,65,0.5,0,0,0,0', 'big_orange,65,-0.5,0,0,0,0']
    path = tmp_path / 'braking_zone.csv'
    path.write_text('\n'.join(rows) + '\n')
    track = F.load_track_file(str(path)).track
    assert not track.closed
    mid = {k: (v.a + v.b) / 2.0 for k, v in track.timing_lines.items()}
    assert mid['start'] == pytest.approx([4.0, 0.0], abs=0.3)
    assert mid['finish'] == pytest.approx([55.0, 0.0], abs=0.3)


# ------------------------------------------------ other teams' formats (s32)
# Our own files (make_tracks.py, ``team_formats``) in the formats of other
# teams' tools (docs/track_formats.md) and the screen convention.


def test_screen_convention_and_the_mirror_hints() -> None:
    """``screen`` negates y and headings but keeps the file's sides."""
    path = str(DATA / 'screen_oval.json')
    loaded = F.load_track_file(path)
    assert loaded.errors and 'try convention screen' in loaded.errors[0]
    screen = F.load_track_file(path, convention='screen')
    unreal = F.load_track_file(path, convention='unreal')
    assert screen.errors == [] == unreal.errors
    np.testing.assert_allclose(screen.track.centerline,
                               unreal.track.centerline)
    # files without left/right names keep the unreal hint
    fsds = F.load_track_file(str(DATA / 'fsds_oval_unreal.csv'))
    assert 'try convention unreal' in fsds.errors[0]


def _turned_back(xy: np.ndarray) -> np.ndarray:
    """Return points of the oval turned by +90 degrees turned back."""
    return np.column_stack([xy[:, 1], -xy[:, 0]])


def test_umdf_start_yaw_centreline_and_start_gate() -> None:
    """
    FSAI-Sim's UMDF: ``start.rotation.yaw``, ``centreline``, the gate.

    ``orange_cones`` holds big and small orange cones together: the four
    across the start pose are the start gate (big), the two 2 m on stay
    small orange.
    """
    path = str(DATA / 'umdf_oval.json')
    assert F.detect_format(path) == 'json'
    tf = F.read_track_file(path)
    assert tf.car_start.yaw == pytest.approx(np.pi / 2)
    assert len(tf.midpoints) == 43
    loaded = F.load_track_file(path)
    assert loaded.errors == [] and loaded.rule_warnings == []
    track = loaded.track
    cls = track.cones.class_id
    assert [(cls == c).sum() for c in (CONE_BLUE, CONE_YELLOW, CONE_ORANGE,
                                       CONE_BIG_ORANGE)] == [45, 49, 2, 4]
    assert any('4 orange cones across the start pose re-classed as big '
               'orange' in w for w in loaded.warnings)
    assert track.closed
    d, _i = cKDTree(_oval_centre()).query(_turned_back(track.centerline))
    assert d.max() < 0.25
    gate = track.timing_lines['start']
    assert (gate.a + gate.b) / 2.0 == pytest.approx([0.0, 0.0], abs=0.3)
    assert gate.direction == pytest.approx([0.0, 1.0], abs=0.02)
    # the start pose is the gate's centre: the front is moved behind it
    assert (track.car_start.x, track.car_start.y, track.car_start.yaw) == \
        pytest.approx((0.0, -2.8, np.pi / 2), abs=0.05)


UMDF = """{
    "name": "t",
    "start": {
        "position": {"x": 0.0, "y": 0.0},
        "rotation": {"yaw": 0.0}
    },
    "blue_cones": [{"x": 2.0, "y": 1.5}, {"x": 6.0, "y": 1.5}],
    "yellow_cones": [{"x": 2.0, "y": -1.5}, {"x": 6.0, "y": -1.5}],
    "orange_cones": [],
    "centreline": [{"x": 0.0, "y": 0.0}, {"x": 2.0, "y": 0.0},
                   {"x": 4.0, "y": 0.0},
                   {"x": 6.0, "y": 0.0}],
    "loop": false
}
"""


@pytest.mark.parametrize('old, new, line, field', [
    ('"yaw": 0.0', '"yaw": "0.0"', 5, "'start.rotation.yaw'"),
    ('"rotation": {"yaw": 0.0}', '"rotation": [0.0]', 5, "'start.rotation'"),
    ('{"x": 6.0, "y": 0.0}', '{"x": 6.0}', 12, "'centreline[3].y'"),
    ('"centreline": [', '"centreline": 5, "c": [', 10, "'centreline'"),
    ('"loop": false', '"loop": "no"', 13, "'loop'"),
])
def test_bad_umdf_names_file_line_field(tmp_path: Path, old: str, new: str,
                                        line: int, field: str) -> None:
    """A broken UMDF start, centre line or loop flag: one line, its line."""
    path = tmp_path / 'good.umdf.json'
    path.write_text(UMDF)
    track = F.load_track_file(str(path)).track
    assert not track.closed and track.width == pytest.approx(3.0)
    assert old in UMDF
    _refused(tmp_path / 'bad.umdf.json', UMDF.replace(old, new, 1), line, field)


def test_umdf_loop_flag_keeps_a_midpoint_line_open(tmp_path: Path) -> None:
    """``loop: false`` keeps centre-line points whose ends meet open."""
    data = (DATA / 'umdf_oval.json').read_text()
    assert F.load_track_file(str(DATA / 'umdf_oval.json')).track.closed
    path = tmp_path / 'open.json'
    path.write_text(data[:-1] + ', "loop": false}')
    assert not F.load_track_file(str(path)).track.closed


def test_paired_left_right_columns() -> None:
    """Paired columns (MUR): a left and a right cone in every row."""
    path = str(DATA / 'paired_oval.csv')
    assert F.detect_format(path) == 'csv'
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'csv' and loaded.errors == []
    track = loaded.track
    _same_oval(track)
    cls = track.cones.class_id
    assert [(cls == c).sum() for c in (CONE_BLUE, CONE_YELLOW,
                                       CONE_UNKNOWN)] == [45, 49, 0]
    # the first row repeated as the last (the loop closed): merged
    assert sum('merged with the cone(s) of line 51' in w
               for w in loaded.warnings) == 2


PAIRED = 'left_x,left_y,right_x,right_y\n2.0,1.5,2.0,-1.5\n6.0,1.5,6.0,-1.5\n'


@pytest.mark.parametrize('text, line, field', [
    (PAIRED + '9.0,abc,9.0,-1.5\n', 4, "'left_y' is not a number"),
    (PAIRED + '9.0,,9.0,-1.5\n', 4, "'left_y' is missing"),
    (PAIRED + ',,9.0\n', 4, "'right_y' is missing"),
    (PAIRED.replace(',right_y', ''), 1, "field 'right_y': header"),
])
def test_bad_paired_csv_names_file_line_field(tmp_path: Path, text: str,
                                              line: int, field: str) -> None:
    """A paired-column CSV with a bad cell or column: one error line."""
    _refused(tmp_path / 'bad.csv', text, line, field)


def test_paired_straight_with_unequal_sides(tmp_path: Path) -> None:
    """A straight of paired rows, one right cone more: an open straight."""
    path = tmp_path / 'paired.csv'
    path.write_text('left_x,left_y,right_x,right_y\n' + ''.join(
        f'{x},1.5,{x},-1.5\n' for x in range(0, 60, 5)) + ',,60,-1.5\n')
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    track = loaded.track
    assert not track.closed and track.width == pytest.approx(3.0)
    assert np.abs(track.centerline[:, 1]).max() < 0.05
    assert (track.cones.class_id == CONE_YELLOW).sum() == 13


def test_hanze_pygame_map_is_read_in_screen_axes(tmp_path: Path) -> None:
    """
    Hanze's Moving_Car map: y down, LEFT/RIGHT the driver's sides.

    Recognised by its header (pandas index, ``Cone_Type,Cone_X,Cone_Y``)
    and read with convention ``screen``; the same rows under another
    header load mirrored, as nothing else tells the axes (the named sides
    fit either driving direction).
    """
    path = str(DATA / 'hanze_oval.csv')
    assert F.detect_format(path) == 'csv'
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'csv' and loaded.errors == []
    _same_oval(loaded.track)
    assert any('screen axes (y down)' in w for w in loaded.warnings)
    # the check table names the convention applied, not the one asked for
    from hil_bridge.tools import track_cli
    assert loaded.convention == 'screen'
    for asked in ('rep103', 'auto'):
        row, = track_cli.table_rows([path], 'auto', asked, '', 0.5)
        assert (row['status'], row['convention']) == ('ok', 'screen'), asked
    same = F.load_track_file(path, convention='screen').track
    np.testing.assert_allclose(same.centerline, loaded.track.centerline)
    # unreal would also swap the named sides: reported mirrored, with the
    # hint at screen
    wrong = F.load_track_file(path, convention='unreal')
    assert wrong.errors and 'try convention screen' in wrong.errors[0]
    other = tmp_path / 'renamed.csv'
    other.write_text((DATA / 'hanze_oval.csv').read_text().replace(
        ',Cone_Type,Cone_X,Cone_Y', 'id,tag,x,y', 1))
    mirrored = F.load_track_file(str(other)).track
    d, _i = cKDTree(_oval_centre() * [1.0, -1.0]).query(mirrored.centerline)
    assert d.max() < 0.3
    screen = F.load_track_file(str(other), convention='screen').track
    _same_oval(screen)


def test_hanze_cone_log_is_y_up_with_its_finish_line() -> None:
    """
    Hanze's coneconnecting cone log: y up, CRLF, ``['finish']`` cones.

    The two finish cones are the start/finish line; no value is ignored.
    """
    path = str(DATA / 'hanze_cone_log.csv')
    assert F.detect_format(path) == 'csv'
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'csv' and loaded.errors == []
    track = loaded.track
    _same_oval(track)
    gate = track.timing_lines['start']
    assert (gate.a + gate.b) / 2.0 == pytest.approx([-0.4, 0.0], abs=0.3)
    assert not any('ignored' in w for w in loaded.warnings)
    assert any('2 cones flagged finish' in w for w in loaded.warnings)


@pytest.mark.parametrize('text, line, field', [
    (',Cone_Type,Cone_X,Cone_Y\n0,LEFT,2.0,-1.5\n1,LEFT,2.0,\n', 3,
     "'y' is missing"),
    ('cone ID,leftOrRight,Xpos,Ypos,prev ID,next ID,coneData\n'
     '0,LEFT,2.0,1.5,1,1,\n1,MIDDLE,2.0,-1.5,0,0,\n', 3, "'tag'"),
])
def test_bad_hanze_csv_names_file_line_field(tmp_path: Path, text: str,
                                             line: int, field: str) -> None:
    """A Hanze map or cone log with a bad cell: one error line."""
    _refused(tmp_path / 'bad.csv', text, line, field)


def test_latitude_longitude_in_local_metres() -> None:
    """WGS84 degrees: metres east and north of the first row, no colour."""
    path = str(DATA / 'latlon_oval.csv')
    assert F.detect_format(path) == 'csv'
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'csv' and loaded.errors == []
    track = loaded.track
    first = np.array([-32.5, 1.5])              # the first row's cone
    _same_oval(track, shift=tuple(-first))
    assert len(track.cones) == len(REFERENCE.xy)
    want = np.array(sorted(map(tuple, REFERENCE.xy - first)))
    got = np.array(sorted(map(tuple, track.cones.xy)))
    assert np.abs(got - want).max() < 0.005
    assert any('WGS84 latitude/longitude converted to metres east and '
               'north of the first row (49.3294134873, 8.5654528838)' in w
               for w in loaded.warnings)


@pytest.mark.parametrize('text, line, field', [
    ('lat,lon\n49.3,8.56\n95.0,8.56\n', 3, "'lat': 95.0 is not a latitude"),
    ('lat,lon\n49.3,8.56\n49.3,8.5x\n', 3, "'lon' is not a number"),
    ('lat,lon\n49.3,8.56\n49.3,200.0\n', 3, "'lon': 200.0 is not a longi"),
])
def test_bad_latlon_csv_names_file_line_field(tmp_path: Path, text: str,
                                              line: int, field: str) -> None:
    """Degrees out of range or not numbers (a file in metres?): one line."""
    _refused(tmp_path / 'bad.csv', text, line, field)


def test_degree_lengths_of_the_wgs84_ellipsoid() -> None:
    """
    Metres per degree of latitude and longitude, WGS84.

    Against the series for the ellipsoid (111132.954 - 559.822 cos 2phi +
    1.175 cos 4phi north, 111412.84 cos phi - 93.5 cos 3phi + 0.118 cos
    5phi east; e.g. Wikipedia, "Latitude"), within 0.1 m per degree.
    """
    from hil_bridge.sim.track_readers import metres_per_degree
    for lat in (0.0, 37.5, 45.0, 60.0):
        phi = np.radians(lat)
        north, east = metres_per_degree(lat)
        assert north == pytest.approx(111132.954 - 559.822 * np.cos(2 * phi)
                                      + 1.175 * np.cos(4 * phi), abs=0.1)
        assert east == pytest.approx(111412.84 * np.cos(phi) - 93.5 *
                                     np.cos(3 * phi) + 0.118 * np.cos(5 * phi),
                                     abs=0.1)


def test_pacsim_centerline_raw_is_the_centre_line(tmp_path: Path) -> None:
    """E-Team's PacSim ``centerline_raw``: centre-line points, not cones."""
    path = str(DATA / 'pacsim_centerline_raw.yaml')
    assert F.detect_format(path) == 'pacsim'
    tf = F.read_track_file(path)
    assert len(tf.midpoints) == 43 and len(tf.xy) == len(REFERENCE.xy)
    track = F.build_track(tf)
    d, _i = cKDTree(T.resample(track.centerline, True, 0.05)).query(
        tf.midpoints)
    assert d.max() < 0.1
    text = (DATA / 'pacsim_centerline_raw.yaml').read_text()
    bad = text.replace('  - position: [5.0, 0.0, 0.0]\n',
                       '  - pos: [5.0, 0.0, 0.0]\n', 1)
    assert bad != text
    line = bad[:bad.index('  - pos: [5.0')].count('\n') + 1
    broken = tmp_path / 'bad.yaml'
    broken.write_text(bad)
    with pytest.raises(ValueError) as err:
        F.load_track_file(str(broken))
    msg = str(err.value)
    assert msg.startswith(f'{broken}:{line}:'), msg
    assert "'track.centerline_raw[1].position'" in msg, msg


# ------------------------------------------- s33: more unseen public files
# Hanze Racing's older levels and cone logs (docs/track_formats.md, "Met
# in s33"): open lanes without a start pose, short logs, spline overshoot.

def _l_lane(shift: float) -> str:
    """
    Return an L-shaped open lane: eufs CSV without a car start (REP-103).

    Driven from (30, -20) north, round a 6 m radius left turn, then west
    to (shift, 0): blue on the driver's left, yellow on the right, 3 m
    apart along the lane.
    """
    up = np.column_stack([np.full(5, 30.0), np.linspace(-20.0, -6.0, 5)])
    a = np.linspace(0.0, np.pi / 2.0, 5)[1:]
    turn = np.column_stack([24.0 + 6.0 * np.cos(a), -6.0 + 6.0 * np.sin(a)])
    west = np.column_stack([np.linspace(21.0, shift, 7), np.zeros(7)])
    centre = np.vstack([up, turn, west])
    tan = np.gradient(centre, axis=0)
    tan /= np.hypot(*tan.T)[:, None]
    left = centre + 1.6 * np.column_stack([-tan[:, 1], tan[:, 0]])
    right = centre - 1.6 * np.column_stack([-tan[:, 1], tan[:, 0]])
    rows = ['tag,x,y,direction,x_variance,y_variance,xy_covariance']
    rows += [f'{tag},{x:.3f},{y:.3f},0,0,0,0' for tag, pts in
             (('blue', left), ('yellow', right)) for x, y in pts]
    return '\n'.join(rows) + '\n'


def test_open_lane_without_a_start_starts_at_its_entry(
        tmp_path: Path) -> None:
    """
    The car of an open lane stands at the lane's entry, not its exit.

    Hanze's MAP_8 (an unfinished level) has its exit nearest the origin:
    the car was put there facing out of the lane, the centre line ran 11 m
    and the file was reported mirrored. The boundaries are now followed
    back, cone to cone, to the lane's first gate.
    """
    path = tmp_path / 'lane.csv'
    path.write_text(_l_lane(3.0))
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    t = loaded.track
    assert not t.closed and t.length > 40.0  # 41.4 m of lane
    start = t.car_start
    assert np.hypot(start.x - 30.0, start.y + 20.0) < 1.0
    assert abs(start.yaw - np.pi / 2.0) < 0.2
    assert any('the car starts at its entry (30.00, -20.00)' in w
               for w in loaded.warnings)
    # a lane whose entry is nearest the origin keeps its start there
    rows = _l_lane(3.0).splitlines()
    flipped = [rows[0]] + [f'{r.split(",")[0]},{-float(r.split(",")[1]) + 33.0}'
                           f',{r.split(",")[2]},0,0,0,0' for r in rows[1:]]
    # mirrored in x: now driven from (3, -20); colours swap sides
    swapped = [r.replace('blue', 'B').replace('yellow', 'blue').
               replace('B', 'yellow') for r in flipped]
    path.write_text('\n'.join(swapped) + '\n')
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    s = loaded.track.car_start
    assert np.hypot(s.x - 3.0, s.y + 20.0) < 1.0


def test_closed_loop_keeps_the_start_nearest_the_origin(
        tmp_path: Path) -> None:
    """
    A loop without a start (origin outside it): the start is unchanged.

    An entry found by following the boundaries back (in eufs_sim's random
    layouts, a 30 m gap in both boundaries of a loop) is used only when
    the track built from the cones nearest the origin is open.
    """
    text = (DATA / 'eufs_oval.csv').read_text().splitlines()
    rows = [text[0]] + [r for r in text[1:] if r.split(',')[0] in
                        ('blue', 'yellow')]
    moved = [rows[0]] + [
        f'{r.split(",")[0]},{float(r.split(",")[1]) + 40.0},'
        f'{float(r.split(",")[2]) + 25.0},' + ','.join(r.split(',')[3:])
        for r in rows[1:]]
    path = tmp_path / 'loop.csv'
    path.write_text('\n'.join(moved) + '\n')
    tf = F.read_track_file(str(path))
    left, right = F._boundary_masks(tf.class_id, tf.side)
    lp, rp = tf.xy[left], tf.xy[right]
    il = int(np.argmin(np.hypot(*lp.T)))
    ir = int(np.argmin(np.hypot(*(rp - lp[il]).T)))
    want = (lp[il] + rp[ir]) / 2.0
    start = tf.car_start
    assert np.hypot(start.x - want[0], start.y - want[1]) < 1e-9
    assert F.load_track_file(str(path)).track.closed
    # an entry offered for a loop is not taken
    tf.entry_start = (F.Pose(x=40.0, y=49.0, yaw=np.pi), 'entry note')
    track = F.build_track(tf)
    assert track.closed and tf.entry_start is None
    assert np.hypot(track.car_start.x - want[0],
                    track.car_start.y - want[1]) < 1.0
    assert 'entry note' not in tf.notes


def test_short_lane_is_not_refused_for_its_geometry_walk(
        tmp_path: Path) -> None:
    """
    A six-cone log (three gates): loads with the file's sides.

    The walk by geometry, tried on every open track in case its cones
    close a loop, put 1 cone left and 5 right here and its refusal ("one
    boundary only") was the file's; the file's own sides now stand.
    """
    path = tmp_path / 'log.csv'
    path.write_text('cone ID,leftOrRight,Xpos,Ypos,prev ID,next ID,coneData\n'
                    '0,LEFT,8.75,7.67,-1,1,\n1,LEFT,11.6,7.75,0,2,\n'
                    '2,LEFT,14.9,7.85,1,-1,\n3,RIGHT,9.05,3.98,-1,4,\n'
                    '4,RIGHT,11.82,4.05,3,5,\n5,RIGHT,15.22,4.17,4,-1,\n')
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    assert not loaded.track.closed
    assert abs(loaded.track.car_start.yaw) < 0.1


def test_smooth_falls_back_to_the_polyline_when_the_spline_overshoots(
        ) -> None:
    """Points doubling back made the spline 6.6 km long for 17.7 m."""
    pts = np.array([[0.05, -0.04], [-3.96, -2.97], [-3.98, -2.93],
                    [-6.21, -6.79], [-4.79, -6.34], [-5.92, -7.0],
                    [-6.45, -9.94], [-6.33, -11.01], [-7.33, -11.65],
                    [-7.3, -11.71], [-7.37, -11.67]])
    line = F._smooth(pts, False)
    poly = T.resample(pts, False, 0.1)
    assert cKDTree(poly).query(line)[0].max() <= F.SPLINE_STRAY
    assert F.arc_length(line, False)[-1] < 1.1 * F.arc_length(pts, False)[-1]


def test_zero_quaternion_start_names_file_and_line(tmp_path: Path) -> None:
    """A start pose whose quaternion has zero length: one error line."""
    path = tmp_path / 'start.json'
    path.write_text('{"cones": [{"x": 1, "y": 2, "color": "blue"}],\n'
                    ' "start": {"position": {"x": 0, "y": 0},\n'
                    '  "orientation": {"x": 0, "y": 0, "z": 0, "w": 0}}}\n')
    with pytest.raises(ValueError, match=r'start.json:3: field .*zero length'):
        F.read_track_file(str(path))
    sdf = tmp_path / 'cone.sdf'
    sdf.write_text('<sdf version="1.6"><model name="t"><include>'
                   '<uri>model://blue_cone</uri>\n<pose>1 2 0 0 0 0 0</pose>'
                   '</include></model></sdf>\n')
    with pytest.raises(ValueError, match=r"cone.sdf:2: field 'pose': "
                                         r'quaternion .*zero length'):
        F.read_track_file(str(sdf))


def test_tum_centre_line_with_widths_gets_cones(tmp_path: Path) -> None:
    """
    A centre line and the track widths: TUM's racetrack-database format.

    ``# x_m,y_m,w_tr_right_m,w_tr_left_m`` (the header in a comment), a
    loop whose first point is not repeated: the loader puts blue cones on
    the left and yellow on the right boundary every 4 m, keeps the rows as
    the centre line and starts the car at the first row facing along it.
    A z column is ignored; a width that is not positive and a header
    with one width only are refused in one line.
    """
    path = str(DATA / 'tum_oval.csv')
    loaded = F.load_track_file(path)
    assert loaded.fmt == 'csv' and loaded.errors == []
    t = loaded.track
    assert t.closed
    _same_oval(t)
    assert (t.car_start.x, t.car_start.y) == (0.0, 0.0)
    assert abs(t.car_start.yaw) < 0.05
    cls = t.cones.class_id
    # at most 4 m apart along each boundary: the inner (blue, 10.5 m
    # turns) has fewer than the outer (13.5 m)
    for c, r in ((CONE_BLUE, 10.5), (CONE_YELLOW, 13.5)):
        n = int((cls == c).sum())
        assert abs(n - (130.0 + 2.0 * np.pi * r) / 4.0) < 2.0, (c, n)
    assert not [w for w in loaded.warnings if 'spacing' in w]
    _s, lat, _d = T.lateral_position(t, t.cones.xy)
    # on the chords of the file's 5 m centre points (0.23 m inside the
    # true 12 m arc at the turns)
    assert np.allclose(np.abs(lat), 1.5, atol=0.3)
    assert (lat[cls == CONE_BLUE] > 0).all()
    assert any('a centre line with track widths' in w for w in loaded.warnings)
    rows = (DATA / 'tum_oval.csv').read_text().splitlines()
    with_z = tmp_path / 'z.csv'
    with_z.write_text('\n'.join([rows[0] + ',z_m'] +
                                [r + ',12.5' for r in rows[1:]]) + '\n')
    np.testing.assert_allclose(
        F.load_track_file(str(with_z)).track.centerline, t.centerline)
    # a race circuit's width (every cone more than 3 m off the centre line)
    wide = tmp_path / 'wide.csv'
    wide.write_text('\n'.join([rows[0]] + [r.replace(',1.5,1.5', ',6.0,7.0')
                                           for r in rows[1:]]) + '\n')
    assert F.load_track_file(str(wide)).track.width == pytest.approx(
        13.0, abs=0.1)
    bad = tmp_path / 'bad.csv'
    bad.write_text('\n'.join(rows[:5] + [rows[5].rsplit(',', 1)[0] + ',-1']
                             + rows[6:]) + '\n')
    with pytest.raises(ValueError, match=r"bad.csv:6: field 'w_left': "
                                         r'track width -1 m'):
        F.load_track_file(str(bad))
    one = tmp_path / 'one.csv'
    one.write_text('x_m,y_m,w_tr_right_m\n0,0,1.5\n5,0,1.5\n')
    with pytest.raises(ValueError, match=r"one.csv:1: field 'w_left'"):
        F.load_track_file(str(one))


def test_small_orange_cones_far_from_the_start(tmp_path: Path) -> None:
    """
    Two small orange cones, none near the start: no start gate, no crash.

    Three files in eufs_sim's history (random layouts) raised IndexError
    in the start-gate search (no small orange cone ahead of the car).
    """
    rows = (DATA / 'eufs_oval.csv').read_text().splitlines()
    kept = [r for r in rows if not r.startswith('big_orange')]
    kept += ['orange,20.0,1.5,0.0,0.01,0.01,0.0',
             'orange,20.0,-1.5,0.0,0.01,0.01,0.0']
    path = tmp_path / 'far.csv'
    path.write_text('\n'.join(kept) + '\n')
    loaded = F.load_track_file(str(path))
    assert loaded.errors == []
    assert not any('small orange' in w for w in loaded.warnings)
