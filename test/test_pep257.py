# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""ament_pep257 over the whole package."""

from pathlib import Path

from ament_pep257.main import main
import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ['hil_bridge', 'cone_detection', 'path_planning', 'aeb_control',
         'launch', 'test', 'scripts', 'setup.py']


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257() -> None:
    """The package passes ament_pep257 (ament convention)."""
    paths = [str(ROOT / p) for p in PATHS if (ROOT / p).exists()]
    rc = main(argv=paths)
    assert rc == 0, 'Found code style errors / warnings'
