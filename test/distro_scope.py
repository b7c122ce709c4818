# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Which test modules depend on the ROS 2 distro (``CARLA_HIL_TESTS=ros``).

The two pinned distros differ only in their ROS packages (rclpy, the
rmw and Fast DDS, the message packages, the ament linters); every other
Python package is pinned to the same version in ``requirements.txt`` and
``requirements-jazzy.txt`` (``test_distro_scope`` checks it). A test
module whose imports, followed through the project's own modules, never
reach a ROS package and never start a process runs the same code on
both: ``scripts/test.sh`` runs it on one distro only.

The check is static and conservative: every ``import`` statement counts
(also the ones inside functions), and ``subprocess``, ``multiprocessing``,
``ray`` and ``concurrent.futures`` count as ROS (a child may run a node).
``ament_index_python`` does not: the project uses it only to find its
share directory, which every node test finds on both distros.
"""

import ast
from functools import lru_cache
from pathlib import Path
from typing import FrozenSet, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]

#: top-level import names that tie a module to the distro (or start processes)
ROS_ROOTS = frozenset({
    'rclpy', 'rosidl_runtime_py', 'rosidl_parser', 'rosidl_adapter', 'rpyutils',
    'launch', 'launch_ros', 'launch_testing', 'ament_flake8',
    'ament_pep257', 'ament_copyright', 'ament_lint', 'rosbags', 'mcap', 'mcap_ros2',
    'rosbag2_py', 'tf2_ros', 'tf2_msgs', 'message_filters', 'rmw',
    'subprocess', 'multiprocessing', 'ray', 'concurrent', 'pty', 'pexpect',
})

#: the project's top-level packages (imports followed into them)
PACKAGES = frozenset({'hil_bridge', 'cone_detection', 'path_planning', 'aeb_control'})


def is_ros_name(name: str) -> bool:
    """Return True when the top-level import ``name`` is a ROS package or starts processes."""
    top = name.split('.')[0]
    return (top in ROS_ROOTS or top.endswith('_msgs') or top.endswith('_interfaces')
            or top.startswith('rcl') or top.startswith('rmw_'))


def _module_file(name: str) -> Optional[Path]:
    """Return the file of project or test module ``name`` (None: not ours)."""
    parts = name.split('.')
    if parts[0] in PACKAGES:
        base = ROOT.joinpath(*parts)
    elif len(parts) == 1 and (ROOT / 'test' / f'{name}.py').is_file():
        base = ROOT / 'test' / name
    else:
        return None
    if base.with_suffix('.py').is_file():
        return base.with_suffix('.py')
    if (base / '__init__.py').is_file():
        return base / '__init__.py'
    return None


@lru_cache(maxsize=None)
def _imports(path: Path) -> Tuple[str, ...]:
    """Return every absolute module name ``path`` imports (``from a import b``: a and a.b)."""
    tree = ast.parse(path.read_text(encoding='utf-8'), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names.extend(f'{node.module}.{alias.name}' for alias in node.names)
    return tuple(names)


def _parents(name: str) -> Tuple[str, ...]:
    """Return ``a``, ``a.b`` for ``a.b.c`` (the packages importing ``a.b.c`` runs)."""
    parts = name.split('.')
    return tuple('.'.join(parts[:i]) for i in range(1, len(parts)))


@lru_cache(maxsize=None)
def ros_reasons(path: Path) -> FrozenSet[str]:
    """
    Return the ROS imports reachable from the module file ``path``.

    Empty: the module runs the same on every distro. Followed through the
    project's packages and the test directory's helper modules.
    """
    seen = set()
    found = set()
    todo = [path]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in _imports(current):
            if is_ros_name(name):
                found.add(name.split('.')[0])
                continue
            for candidate in _parents(name) + (name,):
                target = _module_file(candidate)
                if target is not None and target not in seen:
                    todo.append(target)
    return frozenset(found)


def distro_independent(path: Path) -> bool:
    """Return True when test module ``path`` reaches no ROS package and starts no process."""
    return not ros_reasons(Path(path).resolve())
