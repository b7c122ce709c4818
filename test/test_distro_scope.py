# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The split of the suite into distro-dependent and distro-independent modules.

(The non-ROS pins of both distros are the same: ``test_distros``.)
"""

from pathlib import Path

from distro_scope import distro_independent, is_ros_name, ROOT, ros_reasons
import pytest


@pytest.mark.parametrize('name, ros', [
    ('rclpy', True), ('rclpy.node', True), ('sensor_msgs.msg', True),
    ('rcl_interfaces.msg', True), ('builtin_interfaces', True), ('subprocess', True),
    ('concurrent.futures', True), ('ray', True), ('rosbags.rosbag2', True),
    ('numpy', False), ('scipy.optimize', False), ('ament_index_python', False),
    ('hil_bridge.sim.tracks', False)])
def test_ros_names(name: str, ros: bool) -> None:
    """ROS packages, message packages and process starters count; others do not."""
    assert is_ros_name(name) is ros


def test_imports_are_followed_through_the_project(tmp_path: Path) -> None:
    """A ROS import two project modules away, or inside a function, is found."""
    test = ROOT / 'test' / 'test_lidar_scan.py'      # lidar_scan -> message codecs
    assert 'sensor_msgs' in ros_reasons(test.resolve())
    assert not distro_independent(ROOT / 'test' / 'test_bridge_node.py')
    assert not distro_independent(ROOT / 'test' / 'test_flake8.py')
    assert distro_independent(ROOT / 'test' / 'test_frames.py')
    lazy = tmp_path / 'test_lazy.py'
    lazy.write_text('import numpy\n\n\ndef f():\n    from hil_bridge.bridge import bridge_node\n',
                    encoding='utf-8')
    assert 'rclpy' in ros_reasons(lazy)
    plain = tmp_path / 'test_plain.py'
    plain.write_text('from hil_bridge.interface.frames import euler_to_quaternion\n',
                     encoding='utf-8')
    assert distro_independent(plain)


def test_both_kinds_exist() -> None:
    """The split keeps the node tests on both distros and saves the pure ones."""
    tests = sorted((ROOT / 'test').glob('test_*.py'))
    pure = [t.stem for t in tests if distro_independent(t)]
    assert 'test_sim_tracks' in pure and 'test_frames' in pure
    assert 10 < len(pure) < len(tests) - 30


def test_the_distro_pass_keeps_one_full_stack_closed_loop() -> None:
    """``CARLA_HIL_TESTS=ros`` drops ``one_distro`` loops, keeps unmarked ones."""
    import os
    import subprocess
    import sys
    modules = ['test/test_acceptance.py', 'test/test_frames.py']
    ids = {}
    for scope in ('all', 'ros'):
        done = subprocess.run(
            [sys.executable, '-m', 'pytest', '--collect-only', '-q', '-p', 'no:cacheprovider',
             *modules], cwd=ROOT, capture_output=True, text=True, timeout=120,
            env=dict(os.environ, CARLA_HIL_TESTS=scope))
        assert done.returncode == 0, done.stdout + done.stderr
        ids[scope] = {line for line in done.stdout.splitlines() if '::' in line}
    assert 'test/test_acceptance.py::test_trackdrive_lidar_only' in ids['ros']
    assert 'test/test_acceptance.py::test_skidpad' in ids['all'] - ids['ros']
    assert not any('test_frames' in i for i in ids['ros'])
    assert any('test_frames' in i for i in ids['all'])
