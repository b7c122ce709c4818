# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The node graph of each machine profile (``config/graph.yaml``), no rclpy.

Launch files and the ``carla-hil`` runner both build their node lists from
here, so ``ros2 launch`` and the runner start exactly the same graph.
"""

import ast
from dataclasses import dataclass, field
import os
from typing import Dict, List, Tuple

from hil_bridge.interface.config import config_path, load_yaml, source_root

PACKAGE = 'carla_hil'


@dataclass(frozen=True)
class NodeSpec:
    """
    One node of the graph.

    ``name`` is the ROS node name, ``executable`` a console script of
    setup.py, ``params`` a parameter file under ``config/``, ``remap`` ROS
    remappings (from -> to) applied at start-up.
    """

    name: str
    executable: str
    params: str
    remap: Tuple[Tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def params_path(self) -> str:
        """Return the absolute path of the node's parameter file."""
        return config_path(self.params)


def profiles() -> Dict[str, List[NodeSpec]]:
    """Return every profile with its nodes (composite profiles expanded)."""
    raw = load_yaml('graph.yaml')['profiles']
    out: Dict[str, List[NodeSpec]] = {}

    def expand(name: str, seen: Tuple[str, ...] = ()) -> List[NodeSpec]:
        if name in seen:
            raise ValueError(f'config/graph.yaml: profile cycle at {name!r}')
        if name not in raw:
            raise ValueError(f'config/graph.yaml: unknown profile {name!r}')
        nodes: List[NodeSpec] = []
        for entry in raw[name]:
            if isinstance(entry, str):
                nodes += expand(entry, seen + (name,))
                continue
            remap = tuple((str(k), str(v)) for k, v in
                          (entry.get('remap') or {}).items())
            nodes.append(NodeSpec(name=entry['name'],
                                  executable=entry['executable'],
                                  params=entry['params'], remap=remap))
        return nodes

    for name in raw:
        out[name] = expand(name)
    return out


def profile(name: str) -> List[NodeSpec]:
    """Return the nodes of a named profile: sim_pc, onboard or all."""
    table = profiles()
    if name not in table:
        raise ValueError(f'unknown profile {name!r}; known: {sorted(table)}')
    return table[name]


def _setup_py_scripts() -> Dict[str, str]:
    """Parse CONSOLE_SCRIPTS out of the source tree's setup.py."""
    path = os.path.join(source_root(), 'setup.py')
    tree = ast.parse(open(path, encoding='utf-8').read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == 'CONSOLE_SCRIPTS'
                for t in node.targets):
            entries = ast.literal_eval(node.value)
            return dict(_split_entry(e) for e in entries)
    raise ValueError(f'{path}: no CONSOLE_SCRIPTS list')


def _split_entry(entry: str) -> Tuple[str, str]:
    name, target = (s.strip() for s in entry.split('=', 1))
    return name, target


def console_scripts() -> Dict[str, str]:
    """
    Return {executable: 'module:function'} of the package's console scripts.

    From the installed distribution's entry points when installed, else
    from setup.py in the source tree (the same list either way).
    """
    try:
        from importlib.metadata import distribution
        eps = distribution(PACKAGE).entry_points
        found = {ep.name: ep.value for ep in eps
                 if ep.group == 'console_scripts'}
        if found:
            return found
    except Exception:  # noqa: B902 - not installed: fall back to setup.py
        pass
    return _setup_py_scripts()


def module_of(executable: str) -> str:
    """Return the Python module that implements a console script."""
    scripts = console_scripts()
    if executable not in scripts:
        raise ValueError(f'{executable!r} is not a console script of '
                         f'{PACKAGE}; known: {sorted(scripts)}')
    return scripts[executable].split(':', 1)[0]


def ros_args(spec: NodeSpec, use_sim_time: bool = True,
             namespace: str = '',
             overrides: Dict[str, str] = None) -> List[str]:
    """
    Return the ``--ros-args`` list that starts ``spec`` like a launch file.

    Node name, namespace, parameter file, remappings, ``use_sim_time`` and
    extra ``-p name:=value`` overrides.
    """
    args = ['--ros-args', '-r', f'__node:={spec.name}']
    if namespace:
        args += ['-r', f'__ns:={namespace}']
    args += ['--params-file', spec.params_path]
    for src, dst in spec.remap:
        args += ['-r', f'{src}:={dst}']
    args += ['-p', f'use_sim_time:={"true" if use_sim_time else "false"}']
    for key, value in (overrides or {}).items():
        args += ['-p', f'{key}:={value}']
    return args
