# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Packaging for the carla_hil ament_python package."""

from glob import glob
import os

from setuptools import setup

PACKAGE = 'carla_hil'
PY_PACKAGES = ['hil_bridge', 'cone_detection', 'path_planning', 'aeb_control']


def _tree(src: str, dest_root: str) -> list:
    """Return data_files entries installing every file under ``src``."""
    entries = {}
    for path in glob(os.path.join(src, '**', '*'), recursive=True):
        if os.path.isfile(path):
            dest = os.path.join(dest_root, os.path.dirname(path))
            entries.setdefault(dest, []).append(path)
    return sorted(entries.items())


def _subpackages() -> list:
    """Return the four packages and their sub-packages."""
    found = []
    for top in PY_PACKAGES:
        for dirpath, _dirs, files in os.walk(top):
            if '__init__.py' in files:
                found.append(dirpath.replace(os.sep, '.'))
    return sorted(found)


CONSOLE_SCRIPTS = [
    'hil_bridge = hil_bridge.bridge.bridge_node:main',
    'cloud_to_scan = cone_detection.cloud_to_scan_node:main',
    'keyboard_teleop = hil_bridge.bridge.keyboard_teleop:main',
    'hil_link_monitor = hil_bridge.link.link_monitor_node:main',
    'lidar_cone_detector = cone_detection.lidar_node:main',
    'vision_cone_detector = cone_detection.vision_node:main',
    'cone_fusion = cone_detection.fusion_node:main',
    'cone_drive_planner = path_planning.planner_node:main',
    'aeb_controller = aeb_control.aeb_node:main',
    'carla-hil = hil_bridge.tools.cli:main',
]

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=_subpackages(),
    package_data={'cone_detection': ['models/*.json', 'models/*.npz']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', glob('launch/*.launch.py')),
    ] + _tree('config', 'share/' + PACKAGE),
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='carla_hil developers',
    maintainer_email='dev@carla-hil.invalid',
    description='CARLA hardware-in-the-loop suite: bridge, cone detection, '
                'planning and AEB.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={'console_scripts': CONSOLE_SCRIPTS},
)
