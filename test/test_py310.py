# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Users run ROS 2 Humble/Jazzy on Python 3.10: check it statically."""

from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.linter
def test_python310_compatible() -> None:
    """Vermin finds nothing that needs a Python newer than 3.10."""
    dirs = [str(ROOT / d) for d in ('hil_bridge', 'cone_detection',
                                    'path_planning', 'aeb_control', 'launch')
            if (ROOT / d).exists()]
    out = subprocess.run(
        [str(Path(sys.executable).with_name('vermin')), '--no-tips', '--violations',
         '--eval-annotations', '-t=3.10-', '--backport', 'typing',
         '--backport', 'dataclasses', *dirs],
        capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
