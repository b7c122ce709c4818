# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The interface contract, config layer and parameter specs."""

from pathlib import Path

from hil_bridge.interface import contract
from hil_bridge.interface.config import config_path, load_yaml
from hil_bridge.interface.params import check_value, ParamSpec
from hil_bridge.tools import contract_doc
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_interfaces_up_to_date() -> None:
    """docs/interfaces.md is what the generator makes from the YAML."""
    text = (ROOT / 'docs' / 'interfaces.md').read_text(encoding='utf-8')
    assert text == contract_doc.render(), \
        'run: python -m hil_bridge.tools.contract_doc > docs/interfaces.md'


def test_readme_interface_table_up_to_date() -> None:
    """README.md's interface table is the generated one."""
    text = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert contract_doc.update_readme(text) == text, \
        'run: python -m hil_bridge.tools.contract_doc --readme'


def test_every_message_type_importable() -> None:
    """Every non-optional topic type imports from the installed wheels."""
    for row in contract.topics().values():
        if row.optional:
            continue
        cls = row.msg_class()
        assert cls.__name__ == row.msg_type.split('/')[-1]


def test_topic_resolution_and_frames() -> None:
    """Role names fill the templates; unknown keys raise KeyError."""
    assert contract.topic('lidar').resolve('car1') == '/carla/car1/lidar'
    assert contract.topic('actor_odometry').resolve(actor='hero') == \
        '/carla/hero/odometry'
    assert contract.frame('sensor', 'ego_vehicle', 'lidar') == \
        'ego_vehicle/lidar'
    with pytest.raises(KeyError, match='not in config'):
        contract.topic('nope')


def test_qos_kinds() -> None:
    """Sensors are best effort, commands reliable, latched transient."""
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
    assert contract.qos_profile('sensor').reliability == \
        ReliabilityPolicy.BEST_EFFORT
    assert contract.qos_profile('command').reliability == \
        ReliabilityPolicy.RELIABLE
    assert contract.qos_profile('latched').durability == \
        DurabilityPolicy.TRANSIENT_LOCAL
    for row in contract.topics().values():
        contract.qos_profile(row.qos)


def test_param_ranges() -> None:
    """Out-of-range, NaN and unknown-choice values are rejected."""
    spec = ParamSpec('rate', 'Hz', lo=0.0, hi=10.0)
    check_value(spec, 5.0)
    for bad in (-1.0, 11.0, float('nan')):
        with pytest.raises(ValueError, match='rate'):
            check_value(spec, bad)
    with pytest.raises(ValueError, match='mode'):
        check_value(ParamSpec('mode', 'x', choices=['a']), 'b')


def test_config_files_load() -> None:
    """Vehicle and rig files are mappings; absolute paths pass through."""
    for name in ('fs_car', 'passenger_car'):
        data = load_yaml('vehicles', f'{name}.yaml')
        assert data['wheelbase'] > 0 and data['max_steer'] > 0
    rig = load_yaml('sensors', 'hil_rig.yaml')
    ids = {s['id'] for s in rig['sensors']}
    assert ids >= {'rgb_left', 'rgb_right', 'lidar'}
    assert config_path('/abs/file.yaml') == '/abs/file.yaml'
