# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Sensor rig loading: shipped rig, CARLA defaults, clear rejections."""

import copy
import math
from pathlib import Path

from hil_bridge.interface import rig
import pytest
import yaml

BASE = {'sensors': [
    {'id': 'cam', 'blueprint': 'sensor.camera.rgb',
     'mount': {'x': 0.5, 'z': 1.0},
     'attributes': {'image_size_x': 640, 'image_size_y': 480, 'fov': 90.0}},
    {'id': 'lid', 'blueprint': 'sensor.lidar.ray_cast',
     'mount': {'x': 1.2, 'z': 0.2},
     'attributes': {'channels': 1, 'range': 20.0}},
]}


def write(tmp_path: Path, data) -> str:
    """Write a rig mapping to a YAML file and return its path."""
    path = tmp_path / 'rig.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def test_shipped_rig() -> None:
    """The HIL rig has two 1288x964 cameras and a 270 deg planar lidar."""
    specs = rig.load_rig('hil_rig')
    assert [s.sensor_id for s in specs] == ['rgb_left', 'rgb_right', 'lidar']
    left, right, lidar = specs
    assert left.attributes['image_size_x'] == 1288
    assert left.attributes['image_size_y'] == 964
    assert left.mount.y == pytest.approx(-right.mount.y)
    assert lidar.blueprint == rig.LIDAR
    a = lidar.attributes
    assert a['channels'] == 1 and a['horizontal_fov'] == 270.0
    assert a['range'] == 20.0
    step_deg = a['horizontal_fov'] * a['rotation_frequency'] / (
        a['points_per_second'] / a['channels'])
    assert 0.25 <= step_deg <= 0.5
    assert rig.load_rig('hil_rig.yaml') == specs
    assert rig.load_rig(rig.rig_path('hil_rig')) == specs


def test_carla_defaults_filled(tmp_path: Path) -> None:
    """Attributes not given get CARLA 0.9.16's defaults."""
    data = {'sensors': [
        {'id': 'l', 'blueprint': 'sensor.lidar.ray_cast'},
        {'id': 'c', 'blueprint': 'sensor.camera.rgb'}]}
    lidar, cam = rig.load_rig(write(tmp_path, data))
    assert lidar.attributes['channels'] == 32
    assert lidar.attributes['range'] == 10.0
    assert lidar.attributes['points_per_second'] == 56000
    assert lidar.attributes['rotation_frequency'] == 10.0
    assert lidar.attributes['upper_fov'] == 10.0
    assert lidar.attributes['lower_fov'] == -30.0
    assert lidar.attributes['horizontal_fov'] == 360.0
    assert lidar.attributes['atmosphere_attenuation_rate'] == 0.004
    assert lidar.attributes['dropoff_general_rate'] == 0.45
    assert lidar.attributes['dropoff_intensity_limit'] == 0.8
    assert lidar.attributes['dropoff_zero_intensity'] == 0.4
    assert lidar.attributes['noise_stddev'] == 0.0
    assert cam.attributes['image_size_x'] == 800
    assert cam.attributes['image_size_y'] == 600
    assert cam.attributes['fov'] == 90.0
    assert cam.attributes['sensor_tick'] == 0.0
    assert lidar.mount.x == 0.0 and lidar.mount.yaw == 0.0


def mutate(path, value):
    """Return BASE with the value at ``path`` replaced (or deleted)."""
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


BAD = [
    ((1, 'attributes', 'channels'), 0, 'lid', 'channels'),
    ((1, 'attributes', 'channels'), 2.5, 'lid', 'channels'),
    ((1, 'attributes', 'range'), 0.0, 'lid', 'range'),
    ((1, 'attributes', 'range'), -5.0, 'lid', 'range'),
    ((1, 'attributes', 'range'), math.nan, 'lid', 'range'),
    ((1, 'attributes', 'points_per_second'), 0, 'lid', 'points_per_second'),
    ((1, 'attributes', 'rotation_frequency'), 0.0, 'lid',
     'rotation_frequency'),
    ((1, 'attributes', 'horizontal_fov'), 0.0, 'lid', 'horizontal_fov'),
    ((1, 'attributes', 'horizontal_fov'), 361.0, 'lid', 'horizontal_fov'),
    ((1, 'attributes', 'upper_fov'), -40.0, 'lid', 'upper_fov'),
    ((1, 'attributes', 'dropoff_general_rate'), 1.5, 'lid',
     'dropoff_general_rate'),
    ((1, 'attributes', 'noise_stddev'), -0.1, 'lid', 'noise_stddev'),
    ((1, 'attributes', 'chanels'), 16, 'lid', 'chanels'),
    ((0, 'attributes', 'fov'), 180.0, 'cam', 'fov'),
    ((0, 'attributes', 'fov'), 0.0, 'cam', 'fov'),
    ((0, 'attributes', 'fov'), 'wide', 'cam', 'fov'),
    ((0, 'attributes', 'image_size_x'), 0, 'cam', 'image_size_x'),
    ((0, 'attributes', 'image_size_y'), -480, 'cam', 'image_size_y'),
    ((0, 'attributes', 'sensor_tick'), -1.0, 'cam', 'sensor_tick'),
    ((0, 'attributes', 'channels'), 32, 'cam', 'channels'),
    ((0, 'mount', 'yaw'), math.inf, 'cam', 'yaw'),
    ((0, 'mount', 'heading'), 1.0, 'cam', 'heading'),
    ((0, 'blueprint'), 'sensor.camera.depth', 'cam', 'blueprint'),
    ((0, 'blueprint'), KeyError, 'sensors[0]', 'blueprint'),
    ((1, 'id'), KeyError, 'sensors[1]', 'id'),
    ((1, 'id'), 'cam', 'cam', 'duplicate'),
]


@pytest.mark.parametrize('path,value,sensor,attr', BAD)
def test_rejections_name_file_sensor_attribute(tmp_path: Path, path, value,
                                               sensor: str, attr: str
                                               ) -> None:
    """Bad rigs raise ValueError naming the file, sensor and attribute."""
    file_name = write(tmp_path, mutate(('sensors',) + path, value))
    with pytest.raises(ValueError) as err:
        rig.load_rig(file_name)
    msg = str(err.value)
    assert file_name in msg and sensor in msg and attr in msg, msg


def test_upper_below_lower_fov(tmp_path: Path) -> None:
    """upper_fov < lower_fov is rejected with both names."""
    data = mutate(('sensors', 1, 'attributes', 'upper_fov'), -10.0)
    data['sensors'][1]['attributes']['lower_fov'] = 0.0
    with pytest.raises(ValueError, match='upper_fov.*lower_fov'):
        rig.load_rig(write(tmp_path, data))


@pytest.mark.parametrize('data', [None, [], {'sensors': []},
                                  {'sensors': [1]},
                                  {'sensors': BASE['sensors'], 'extra': 1}])
def test_malformed_files(tmp_path: Path, data) -> None:
    """Files that are not a rig mapping are rejected naming the file."""
    file_name = write(tmp_path, data)
    with pytest.raises(ValueError, match='rig.yaml'):
        rig.load_rig(file_name)


def test_missing_file_and_bad_name() -> None:
    """A missing rig raises FileNotFoundError; an empty name ValueError."""
    with pytest.raises(FileNotFoundError, match='no_such_rig'):
        rig.load_rig('no_such_rig')
    with pytest.raises(ValueError):
        rig.load_rig('')


def test_passthrough_and_carla_attributes(tmp_path: Path) -> None:
    """CARLA lens attributes pass; sim_ options never reach CARLA."""
    data = mutate(('sensors', 0, 'attributes', 'gamma'), 2.2)
    data['sensors'][0]['attributes']['sim_noise_stddev'] = 20.0
    cam, lidar = rig.load_rig(write(tmp_path, data))
    assert cam.attributes['gamma'] == 2.2
    carla = rig.carla_attributes(cam)
    assert 'sim_noise_stddev' not in carla
    assert carla['image_size_x'] == '640' and carla['fov'] == '90.0'
    assert rig.carla_attributes(lidar)['channels'] == '1'
