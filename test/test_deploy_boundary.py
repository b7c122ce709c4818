# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The deploy boundary: onboard code loads neither the simulator nor the tools.

Each onboard module is imported in a fresh interpreter and the modules it
pulled in are listed; the simulator, the bridge, the CARLA backend and
server, the tools and benchmarks, scikit-learn, matplotlib and the carla
client must not be among them, and OpenCV only where images are handled.
package.xml declares what the code imports: run-time imports as
exec_depend, tool-only ones (tools/, bench/) as test_depend.
"""

import ast
import json
from pathlib import Path
import subprocess
import sys
from typing import List, Set
import xml.etree.ElementTree as ET

import pytest

ROOT = Path(__file__).resolve().parents[1]
ONBOARD_PACKAGES = ('cone_detection', 'path_planning', 'aeb_control',
                    'hil_bridge/interface', 'hil_bridge/link')
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


def test_onboard_launch_file_loads_no_tools() -> None:
    """``ros2 launch carla_hil onboard.launch.py`` on the car loads no tools either."""
    code = ('import importlib.util, json, sys\n'
            f'spec = importlib.util.spec_from_file_location("onboard_launch", '
            f'{str(ROOT / "launch" / "onboard.launch.py")!r})\n'
            'spec.loader.exec_module(importlib.util.module_from_spec(spec))\n'
            'print(json.dumps(sorted(sys.modules)))\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=str(ROOT), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert 'hil_bridge.interface.launch_common' in loaded
    bad = _forbidden(loaded, allow_cv2=False)
    assert not bad, f'onboard.launch.py loads {bad}'


def test_every_onboard_module_stays_inside_the_boundary() -> None:
    """No onboard or interface module (outside tools/) reaches the simulator or the tools."""
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


OWN = {'hil_bridge', 'cone_detection', 'path_planning', 'aeb_control'}
#: Python module -> rosdep key (ROS packages are their own key).
ROSDEP = {'numpy': 'python3-numpy', 'scipy': 'python3-scipy', 'cv2': 'python3-opencv',
          'yaml': 'python3-yaml', 'sklearn': 'python3-sklearn',
          'matplotlib': 'python3-matplotlib', 'tqdm': 'python3-tqdm',
          'hypothesis': 'python3-hypothesis', 'pytest': 'python3-pytest',
          'msgpack': 'python3-msgpack'}
#: pip only (no rosdep key): requirements.txt installs them.
PIP_ONLY = {'carla', 'mcap', 'mcap_ros2', 'rosbags', 'apsw', 'zstandard', 'ray'}


def _imports(paths: List[Path]) -> Set[str]:
    """Return the top-level third-party modules that ``paths`` import."""
    out: Set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Import):
                out |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split('.')[0])
    return out - set(sys.stdlib_module_names) - OWN


def _depends(kind: str) -> Set[str]:
    root = ET.parse(ROOT / 'package.xml').getroot()
    return {e.text.strip() for e in root.findall(kind) if e.text}


def _is_tool(path: Path) -> bool:
    return bool({'tools', 'bench'} & set(path.relative_to(ROOT).parts))


def test_package_xml_declares_what_the_code_imports() -> None:
    """Run-time imports are exec_depend; tools and tests ones test_depend at most."""
    code = [p for pkg in OWN for p in sorted((ROOT / pkg).rglob('*.py'))]
    code += sorted((ROOT / 'launch').glob('*.py'))
    run = _imports([p for p in code if not _is_tool(p)]) - PIP_ONLY
    tools = _imports([p for p in code if _is_tool(p)]) - PIP_ONLY - run
    tests = sorted((ROOT / 'test').glob('*.py'))
    tools |= _imports(tests) - PIP_ONLY - run - {p.stem for p in tests}
    exec_keys, test_keys = _depends('exec_depend'), _depends('test_depend')
    missing = sorted(m for m in run if ROSDEP.get(m, m) not in exec_keys)
    assert not missing, f'imported at run time, not an exec_depend: {missing}'
    undeclared = sorted(m for m in tools
                        if ROSDEP.get(m, m) not in exec_keys | test_keys)
    assert not undeclared, f'imported by tools, not declared: {undeclared}'
    for key in ('python3-sklearn', 'python3-matplotlib'):
        assert key in test_keys and key not in exec_keys, key
    assert {'sklearn', 'matplotlib'} <= tools, tools
