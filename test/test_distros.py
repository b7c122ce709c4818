# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The two pinned environments CI tests on: Kilted (requirements.txt) and Jazzy."""

from pathlib import Path
import re
import subprocess
from typing import Dict

ROOT = Path(__file__).resolve().parents[1]


def pins(name: str) -> Dict[str, str]:
    """Return ``{package: version}`` of a requirements file (every line ``==``-pinned)."""
    out = {}
    for line in (ROOT / name).read_text(encoding='utf-8').splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r'([A-Za-z0-9_.\-]+)==([0-9][A-Za-z0-9_.+\-]*)', line)
        assert match, f'{name}: {line!r} is not pinned with =='
        out[match.group(1).lower()] = match.group(2)
    return out


def test_jazzy_file_has_the_same_non_ros_pins() -> None:
    """requirements-jazzy.txt differs from requirements.txt only in ROS wheels."""
    kilted, jazzy = pins('requirements.txt'), pins('requirements-jazzy.txt')
    other = {k: v for k, v in kilted.items() if not k.startswith('ros-')}
    assert {k: v for k, v in jazzy.items() if not k.startswith('ros-')} == other
    assert jazzy['ros-rclpy'].startswith('7.') and kilted['ros-rclpy'].startswith('9.')
    assert jazzy['ros-fastrtps'].startswith('2.')  # Fast DDS 2.x: FASTRTPS_ profile name
    for pkg in ('ros-rclpy', 'ros-rmw-fastrtps-cpp', 'ros-sensor-msgs', 'ros-ament-flake8'):
        assert pkg in jazzy and pkg in kilted, pkg


def test_scripts_know_both_distros() -> None:
    """
    setup_env.sh and test.sh build and test both; .ci/run is the README's command.

    test.sh runs the whole suite on Jazzy, the distro-dependent modules on Kilted.
    """
    setup = (ROOT / 'scripts' / 'setup_env.sh').read_text(encoding='utf-8')
    assert 'requirements-jazzy.txt' in setup and '.venv-jazzy' in setup
    test = (ROOT / 'scripts' / 'test.sh').read_text(encoding='utf-8')
    assert 'for d in jazzy kilted' in test
    assert '[ "$d" = jazzy ] && echo all || echo ros' in test
    ci = (ROOT / '.ci' / 'run').read_text(encoding='utf-8')
    assert ci.strip().splitlines()[-1] == 'bash scripts/test.sh'
    assert '\nbash scripts/test.sh ' in (ROOT / 'README.md').read_text(encoding='utf-8')


def test_scripts_drop_another_venvs_ros_library_path(tmp_path: Path) -> None:
    """A script started from one venv's python does not hand its ROS libs on."""
    other = tmp_path / 'other_venv'
    (other / 'lib').mkdir(parents=True)
    (other / 'pyvenv.cfg').write_text('home = /usr/bin\n')
    libs = other / 'lib' / 'python3.11' / 'site-packages' / 'ros_rclpy.libs'
    inherited = f'{libs}:/opt/vendor/lib:{other / "lib"}'
    out = subprocess.run(
        ['bash', '-c', f'source {ROOT}/scripts/ros_env.sh; '
         'echo "$LD_LIBRARY_PATH|${_ROS_WHEELS_BOOTSTRAP_COMPLETE:-unset}"'],
        env={'PATH': '/usr/bin:/bin', 'LD_LIBRARY_PATH': inherited,
             '_ROS_WHEELS_BOOTSTRAP_COMPLETE': '1'},
        capture_output=True, text=True, check=True).stdout.strip()
    assert out == '/opt/vendor/lib|unset'
    for script in ('setup_env.sh', 'common.sh'):
        text = (ROOT / 'scripts' / script).read_text()
        assert 'source "$root/scripts/ros_env.sh"' in text, script
