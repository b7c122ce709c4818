# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The deploy boundary: onboard code loads neither the simulator nor the tools.

Each onboard module is imported in a fresh interpreter and the modules it
pulled in are listed; the simulator, the bridge, the CARLA backend and
server, the tools and benchmarks, scikit-learn, matplotlib and the carla
client must not be among them, and OpenCV only where images are handled.
"""

import json
from pathlib import Path
import subprocess
import sys
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[1]
ONBOARD_PACKAGES = ('cone_detection', 'path_planning', 'aeb_control')
#: Onboard node modules and whether they handle images (may load cv2).
NODES = {
    'cone_detection.cloud_to_scan_node': False,
    'cone_detection.lidar_node': False,
    'cone_detection.vision_node': True,
    'cone_detection.fusion_node': False,
    'path_planning.planner_node': False,
    'aeb_control.aeb_node': False,
    'hil_bridge.link.link_monitor_node': False,
}
FORBIDDEN_PREFIXES = ('hil_bridge.sim', 'hil_bridge.bridge', 'hil_bridge.carla_backend',
                      'hil_bridge.carla_server', 'hil_bridge.tools', 'hil_bridge.bench',
                      'cone_detection.tools', 'path_planning.tools', 'aeb_control.tools',
                      'sklearn', 'matplotlib', 'carla')


def _onboard_modules() -> List[str]:
    """Return every module of the onboard packages outside their tools/."""
    mods = []
    for pkg in ONBOARD_PACKAGES:
        for path in sorted((ROOT / pkg).rglob('*.py')):
            rel = path.relative_to(ROOT).with_suffix('')
            if 'tools' in rel.parts:
                continue
            parts = list(rel.parts)
            if parts[-1] == '__init__':
                parts.pop()
            mods.append('.'.join(parts))
    return mods


def _loaded_by(module: str) -> List[str]:
    """Import ``module`` in a fresh interpreter; return ``sys.modules`` keys."""
    code = ('import importlib, json, sys\n'
            f'importlib.import_module({module!r})\n'
            'print(json.dumps(sorted(sys.modules)))\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=str(ROOT), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, f'import {module} failed:\n{out.stderr[-2000:]}'
    return json.loads(out.stdout.strip().splitlines()[-1])


def _forbidden(loaded: List[str], allow_cv2: bool) -> List[str]:
    bad = [m for m in loaded
           if any(m == p or m.startswith(p + '.') for p in FORBIDDEN_PREFIXES)]
    if not allow_cv2:
        bad += [m for m in loaded if m == 'cv2']
    return bad


@pytest.mark.parametrize('module', sorted(NODES))
def test_onboard_node_loads_no_simulator_or_tools(module: str) -> None:
    """A node process holds only the interface layer, its core and its libraries."""
    bad = _forbidden(_loaded_by(module), allow_cv2=NODES[module])
    assert not bad, f'{module} loads {bad}'


def test_every_onboard_module_stays_inside_the_boundary() -> None:
    """No onboard module (outside tools/) reaches the simulator or the tools."""
    modules = _onboard_modules()
    assert len(modules) > 20, modules
    code = ('import importlib, json, sys\n'
            f'for m in {modules!r}: importlib.import_module(m)\n'
            'print(json.dumps(sorted(sys.modules)))\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=str(ROOT), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    bad = _forbidden(json.loads(out.stdout.strip().splitlines()[-1]), allow_cv2=True)
    assert not bad, f'onboard modules load {bad}'


def test_the_check_sees_a_forbidden_import() -> None:
    """The check fails for a tools module (it can fail)."""
    assert _forbidden(_loaded_by('cone_detection.tools.evaluate'), allow_cv2=True)
    assert 'cv2' in _forbidden(_loaded_by('cone_detection.vision_node'), allow_cv2=False)
