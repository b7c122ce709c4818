# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""ament_flake8 over the whole package."""

from pathlib import Path

from ament_flake8.main import main_with_errors
import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ['hil_bridge', 'cone_detection', 'path_planning', 'aeb_control',
         'launch', 'test', 'scripts', 'setup.py']


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8() -> None:
    """The package passes ament_flake8 (ROS 2 style)."""
    paths = [str(ROOT / p) for p in PATHS if (ROOT / p).exists()]
    rc, errors = main_with_errors(argv=paths)
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + \
        '\n'.join(errors)
