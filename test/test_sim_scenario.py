# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Scenario files: the shipped ones load, bad ones name file/line/field."""

from pathlib import Path

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.config import config_dir
from hil_bridge.sim import tracks as T
from hil_bridge.sim.track_files import save_track_csv
import numpy as np
import pytest

SHIPPED = ['trackdrive', 'autocross', 'acceleration', 'skidpad',
           'aeb_tutorial', 'ci_trackdrive', 'track_sweep']
DATA = Path(__file__).resolve().parent / 'data' / 'tracks'


@pytest.mark.parametrize('name', SHIPPED)
def test_shipped_scenarios_load(name: str) -> None:
    """Every shipped scenario loads and names an existing rig."""
    sc = load_scenario(name)
    assert sc.name == name
    assert (Path(config_dir()) / 'sensors' / sc.rig).name.endswith('.yaml')
    if sc.track is not None:
        assert T.check_track_rules(sc.track) == []
        assert sc.ego.pose.x == sc.track.car_start.x


def test_trackdrive_defaults_and_overrides() -> None:
    """Trackdrive: 10 laps of random seed 1 on fs_car; overridable."""
    sc = load_scenario('trackdrive')
    assert sc.mission == 'trackdrive' and sc.laps == 10
    assert sc.ego.profile == 'fs_car' and sc.rig == 'hil_rig.yaml'
    assert sc.track.name == 'random_1' and sc.track.closed
    sc2 = load_scenario('trackdrive', laps=2, seed=4, timeout=50.0)
    assert sc2.laps == 2 and sc2.timeout == 50.0
    assert sc2.track.name == 'random_4'
    sc3 = load_scenario('aeb_tutorial', ego__initial_speed=8.0)
    assert sc3.ego.initial_speed == 8.0
    ci = load_scenario('ci_trackdrive')
    assert ci.laps == 1 and ci.track.length < sc.track.length
    assert load_scenario('autocross').laps == 1


def test_aeb_tutorial_poses() -> None:
    """CARLA (0, 28, 1) and (50, 28, 1) become REP-103 (x, -y, z)."""
    sc = load_scenario('aeb_tutorial')
    assert sc.mission == 'aeb' and sc.track is None
    assert sc.ego.blueprint == 'vehicle.tesla.model3'
    assert (sc.ego.pose.x, sc.ego.pose.y, sc.ego.pose.z) == (0.0, -28.0, 1.0)
    assert sc.ego.initial_speed == 5.5
    assert sc.rig == 'car_rig.yaml'
    (target,) = sc.actors
    assert target.blueprint == 'vehicle.lincoln.mkz_2020'
    assert (target.pose.x, target.pose.y) == (50.0, -28.0)
    assert target.initial_speed == 0.0
    assert target.behaviour['type'] == 'static'
    np.testing.assert_allclose(target.size, [4.69, 1.85, 1.44])


BASE = """\
name: t
mission: aeb
ego:
  profile: passenger_car
  pose: {x: 0.0, y: 0.0, yaw: 0.0}
actors:
  - role_name: lead
    profile: passenger_car
    pose: {x: 30.0, y: 0.0}
    behaviour: {type: brake, at_time: 1.0, decel: 6.0}
  - role_name: box
    size: [1.0, 1.0, 1.0]
    pose: {x: 10.0, y: 5.0}
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / 'scenario.yaml'
    path.write_text(text)
    return str(path)


def test_good_file_with_obstacle(tmp_path: Path) -> None:
    """Vehicles take their size from the profile, obstacles from size."""
    sc = load_scenario(_write(tmp_path, BASE))
    assert [a.role_name for a in sc.actors] == ['lead', 'box']
    assert sc.actors[0].behaviour['decel'] == 6.0
    assert sc.actors[1].profile == '' and sc.actors[1].size.tolist() == \
        [1.0, 1.0, 1.0]


@pytest.mark.parametrize('old, new, line, field', [
    ('mission: aeb', 'mission: drift', 2, 'mission'),
    ('  profile: passenger_car\n  pose: {x: 0.0, y: 0.0, yaw: 0.0}',
     '  profile: passenger_car\n  pose: {x: .nan, y: 0.0, yaw: 0.0}', 5,
     'ego.pose.x'),
    ('  profile: passenger_car\n  pose: {x: 0.0',
     '  profile: no_such_car\n  pose: {x: 0.0', 4, 'ego.profile'),
    ('{type: brake, at_time: 1.0, decel: 6.0}', '{type: fly}', 10,
     'actors.0.behaviour.type'),
    ('{type: brake, at_time: 1.0, decel: 6.0}', '{type: brake, at_time: 1}',
     10, 'actors.0.behaviour.decel'),
    ('    size: [1.0, 1.0, 1.0]\n', '', 11, 'actors.1.size'),
    ('    pose: {x: 10.0, y: 5.0}', '    pose: {x: 10.0, q: 5.0}', 13,
     'actors.1.pose'),
    ('name: t', 'name: t\nlaps: 0', 2, 'laps'),
    ('name: t', 'name: t\nlaps: 1e12', 2, 'laps'),
    ('name: t', 'name: t\ntimeout: 1.0e+300', 2, 'timeout'),
    ('name: t', 'name: [1, 2]', 1, 'name'),
    ('mission: aeb', 'mission: autocross', 1, 'track'),
    ('name: t', 'name: t\ncolour: red', 2, 'colour'),
    ('  - role_name: box', '  - role_name: lead', 11,
     'actors.1.role_name'),
])
def test_bad_scenarios_name_file_line_field(tmp_path: Path, old: str,
                                            new: str, line: int,
                                            field: str) -> None:
    """Each mistake gives file:line and the dotted field name."""
    assert old in BASE
    path = _write(tmp_path, BASE.replace(old, new))
    with pytest.raises(ValueError) as err:
        load_scenario(path)
    msg = str(err.value)
    assert f'{path}:{line}:' in msg, msg
    assert f"'{field}'" in msg, msg


def test_track_file_and_bad_track(tmp_path: Path) -> None:
    """A scenario may name a CSV track; its errors are reported."""
    track = T.random_track(2)
    save_track_csv(track, str(tmp_path / 'my.csv'))
    text = ('name: f\nmission: autocross\ntrack:\n  track_file: my.csv\n'
            'ego:\n  profile: fs_car\n')
    sc = load_scenario(_write(tmp_path, text))
    np.testing.assert_array_equal(sc.track.cones.xy, track.cones.xy)
    assert sc.ego.pose.yaw == track.car_start.yaw
    (tmp_path / 'bad.csv').write_text('tag,x,y\nblue,1,nan\n')
    path = _write(tmp_path, text.replace('my.csv', 'bad.csv'))
    with pytest.raises(ValueError, match='bad.csv:2: field .y.'):
        load_scenario(path)
    path = _write(tmp_path, text.replace('track_file: my.csv',
                                         'generator: spiral'))
    with pytest.raises(ValueError, match="'track.generator'"):
        load_scenario(path)
    path = _write(tmp_path, text.replace(
        'track_file: my.csv', 'generator: random\n  params: {width: 1.0}'))
    with pytest.raises(ValueError, match="'track.params'.*width"):
        load_scenario(path)
    with pytest.raises(FileNotFoundError):
        load_scenario(str(tmp_path / 'missing.yaml'))


def test_track_files_of_every_format_and_their_rule_errors(
        tmp_path: Path) -> None:
    """PacSim/fssim/FSDS files load; mirrored colours stop the scenario."""
    text = ('name: f\nmission: trackdrive\ntrack:\n  track_file: {f}\n'
            '{extra}ego:\n  profile: fs_car\n')
    for name in ('pacsim_oval.yaml', 'fssim_oval.yaml', 'fsds_oval.csv'):
        path = _write(tmp_path, text.format(f=DATA / name, extra=''))
        sc = load_scenario(path)
        assert len(sc.track.cones) == 98 and sc.track.closed
    unreal = DATA / 'fsds_oval_unreal.csv'
    path = _write(tmp_path, text.format(f=unreal, extra=''))
    with pytest.raises(ValueError) as err:
        load_scenario(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:4: field 'track.track_file': {unreal}: "
                          'colours mirrored'), msg
    assert '\n' not in msg
    path = _write(tmp_path, text.format(
        f=unreal, extra='  format: fsds\n  convention: unreal\n'))
    assert load_scenario(path).track.closed
    path = _write(tmp_path, text.format(f=unreal,
                                        extra='  convention: ue4\n'))
    with pytest.raises(ValueError, match=":5: field 'track.convention'"):
        load_scenario(path)
    path = _write(tmp_path, text.format(f=unreal, extra='  format: rfc\n'))
    with pytest.raises(ValueError, match=":5: field 'track.format'"):
        load_scenario(path)


def test_an_open_track_file_is_refused_for_laps(tmp_path: Path) -> None:
    """
    Trackdrive (or autocross over laps) on an open track: one clear error.

    Before, the file loaded with rule warnings only and the run could not
    complete a lap. One lap of autocross on it is allowed.
    """
    text = ('name: f\nmission: {m}\nlaps: {n}\ntrack:\n  track_file: {f}\n'
            'ego:\n  profile: fs_car\n')
    f = DATA / 'eufs_open_u.csv'
    for mission, laps in (('trackdrive', 1), ('trackdrive', 10), ('autocross', 2)):
        path = _write(tmp_path, text.format(m=mission, n=laps, f=f))
        with pytest.raises(ValueError) as err:
            load_scenario(path)
        msg = str(err.value)
        assert msg.startswith(f"{path}:5: field 'track.track_file': the track "
                              'is open'), msg
        assert f'{mission} with {laps} lap(s) needs a closed track' in msg, msg
        assert '\n' not in msg
    sc = load_scenario(_write(tmp_path, text.format(m='autocross', n=1, f=f)))
    assert not sc.track.closed and sc.laps == 1


def test_hard_generator_and_track_seed_override() -> None:
    """The track_sweep scenario: a hard layout, seed overridable."""
    a = load_scenario('track_sweep')
    b = load_scenario('track_sweep', seed=3)
    assert a.track.name == 'hard_0' and b.track.name == 'hard_3'
    assert a.track.mission == 'trackdrive' and a.laps == 2
    assert T.check_track_rules(b.track) == []
    assert a.node_params['hil_bridge']['wait_for_control'] is True


def _vision_consistent(rig: str, node_params: dict) -> bool:
    """Return True when fusion waits for vision only where the rig has its cameras."""
    from hil_bridge.interface.config import node_params as defaults
    from hil_bridge.interface.rig import load_rig
    cameras = node_params.get('vision_cone_detector', {}).get(
        'cameras', defaults('vision_cone_detector')['cameras'])
    use_vision = node_params.get('cone_fusion', {}).get(
        'use_vision', defaults('cone_fusion')['use_vision'])
    rig = node_params.get('hil_bridge', {}).get('rig', rig)
    have = {s.sensor_id for s in load_rig(rig)}
    return not use_vision or set(cameras) <= have


@pytest.mark.parametrize('path', sorted((Path(config_dir()) / 'scenarios').glob('*.yaml')),
                         ids=lambda p: p.stem)
def test_fusion_waits_for_vision_only_with_its_cameras(path: Path) -> None:
    """
    A scenario whose rig lacks the vision node's cameras turns fusion's vision off.

    Else fusion waits ``wait_for_vision`` (1 s wall) for a detection that
    never comes on every lockstep frame of its first 2 s: CCRs 30 took
    59 s for 8.4 s of sim time, 40 lockstep timeouts.
    """
    sc = load_scenario(path.stem)
    assert _vision_consistent(sc.rig, sc.node_params), path.name


def test_ncap_cases_fuse_without_vision() -> None:
    """The Euro NCAP matrix's node parameters (car_rig) turn fusion's vision off."""
    from aeb_control.tools.ncap import NCAP_NODE_PARAMS
    assert _vision_consistent('car_rig.yaml', NCAP_NODE_PARAMS)
    assert not _vision_consistent('car_rig.yaml', {})
