# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Structural checks of config/hil.rviz (rviz2 is not installable here)."""

from pathlib import Path

from hil_bridge.interface import contract
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: rviz_default_plugins display class -> message type it subscribes
DISPLAY_TYPES = {
    'rviz_default_plugins/Image': 'sensor_msgs/msg/Image',
    'rviz_default_plugins/PointCloud2': 'sensor_msgs/msg/PointCloud2',
    'rviz_default_plugins/LaserScan': 'sensor_msgs/msg/LaserScan',
    'rviz_default_plugins/MarkerArray': 'visualization_msgs/msg/MarkerArray',
    'rviz_default_plugins/Path': 'nav_msgs/msg/Path',
    'rviz_default_plugins/Odometry': 'nav_msgs/msg/Odometry',
    'rviz_default_plugins/Grid': None,
    'rviz_default_plugins/TF': None,
}


def _displays() -> list:
    doc = yaml.safe_load((ROOT / 'config' / 'hil.rviz').read_text(
        encoding='utf-8'))
    return doc['Visualization Manager']['Displays']


def test_known_display_classes_and_contract_topics() -> None:
    """Every display is a known class on a contract topic of its type."""
    by_name = {row.resolve(actor='ACTOR'): row
               for row in contract.topics().values()}
    for d in _displays():
        assert d['Class'] in DISPLAY_TYPES, d['Class']
        want = DISPLAY_TYPES[d['Class']]
        if want is None:
            continue
        topic = d['Topic']['Value']
        assert topic in by_name, f'{d["Name"]}: {topic} not in contract'
        row = by_name[topic]
        assert row.msg_type == want, f'{d["Name"]}: {row.msg_type} != {want}'
        reliability = 'Best Effort' if row.qos == 'sensor' else 'Reliable'
        assert d['Topic']['Reliability Policy'] == reliability, d['Name']


def test_everything_a_user_inspects_is_shown() -> None:
    """Both cameras, cloud, scan, every cone source, path, ranges, AEB."""
    shown = {d['Topic']['Value'] for d in _displays() if 'Topic' in d}
    for key in ('camera_left', 'camera_right', 'lidar', 'scan',
                'cones_lidar', 'cones_vision', 'cones', 'cone_markers',
                'path', 'planning_markers', 'odometry', 'aeb_markers'):
        assert contract.topic(key).resolve() in shown, key
