# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Static checks of launch/*.launch.py (ros2 launch is not installable here).

The launch files are executed against small stand-ins of ``launch`` and
``launch_ros`` that record every action, then checked: each Node's
executable is a console script of setup.py, each parameter file exists,
each parameter a launch file or file sets is declared by that node, and
sim_pc + onboard start exactly the graph the carla-hil runner starts.
"""

import importlib
import importlib.util
from pathlib import Path
import sys
import types
from typing import Dict, List

from hil_bridge.interface import graph
from hil_bridge.interface.config import node_params
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / 'launch'


class _Action:
    """Stand-in for a launch action: records its arguments."""

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs


class _Config:
    """Stand-in for LaunchConfiguration."""

    def __init__(self, name: str) -> None:
        self.name = name


def _fake_modules() -> Dict[str, types.ModuleType]:
    mods = {n: types.ModuleType(n) for n in (
        'launch', 'launch.actions', 'launch.substitutions',
        'launch.conditions', 'launch_ros', 'launch_ros.actions')}
    mods['launch'].LaunchDescription = type('LaunchDescription', (_Action,),
                                            {})
    mods['launch.actions'].DeclareLaunchArgument = type(
        'DeclareLaunchArgument', (_Action,), {})
    mods['launch.substitutions'].LaunchConfiguration = _Config
    mods['launch.conditions'].IfCondition = type('IfCondition', (_Action,),
                                                 {})
    mods['launch_ros.actions'].Node = type('Node', (_Action,), {})
    mods['launch.actions'].OpaqueFunction = type('OpaqueFunction', (_Action,), {})
    mods['launch.actions'].SetEnvironmentVariable = type('SetEnvironmentVariable',
                                                         (_Action,), {})
    return mods


def _run_launch_file(name: str, monkeypatch: pytest.MonkeyPatch) -> List:
    for mod_name, mod in _fake_modules().items():
        monkeypatch.setitem(sys.modules, mod_name, mod)
    monkeypatch.delitem(sys.modules, 'hil_bridge.interface.launch_common',
                        raising=False)
    spec = importlib.util.spec_from_file_location(name, LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description().args[0]


def _nodes(actions: List) -> List[_Action]:
    return [a for a in actions if type(a).__name__ == 'Node'
            and a.kwargs['package'] == graph.PACKAGE]


LAUNCH_FILES = ['sim_pc.launch.py', 'onboard.launch.py', 'hil.launch.py',
                'aeb_demo.launch.py']


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_launch_file_nodes_are_valid(name, monkeypatch) -> None:
    """Executables exist, parameter files exist, parameters are declared."""
    actions = _run_launch_file(name, monkeypatch)
    args = {a.args[0] for a in actions
            if type(a).__name__ == 'DeclareLaunchArgument'}
    assert {'backend', 'host', 'port', 'scenario', 'namespace',
            'use_sim_time', 'rviz'} <= args
    scripts = graph.console_scripts()
    nodes = _nodes(actions)
    assert nodes, f'{name} starts no carla_hil node'
    for node in nodes:
        kw = node.kwargs
        assert kw['executable'] in scripts, kw['executable']
        module = importlib.import_module(scripts[kw['executable']]
                                         .split(':')[0])
        declared = {s.name for s in module.PARAMS} | {'use_sim_time'}
        files = [p for p in kw['parameters'] if isinstance(p, str)]
        assert files, f'{kw["name"]} has no parameter file'
        for path in files:
            assert Path(path).is_file(), path
            data = yaml.safe_load(Path(path).read_text(encoding='utf-8'))
            assert kw['name'] in data, f'{path} has no section {kw["name"]}'
            assert set(node_params(kw['name'], path)) <= declared
        for overrides in (p for p in kw['parameters'] if isinstance(p, dict)):
            unknown = set(overrides) - declared
            assert not unknown, f'{kw["name"]}: undeclared {unknown}'


def test_sim_pc_plus_onboard_is_the_runner_graph(monkeypatch) -> None:
    """The two machines' launch files start exactly the runner's graph."""
    started = []
    for name in ('sim_pc.launch.py', 'onboard.launch.py'):
        started += [(n.kwargs['name'], n.kwargs['executable'],
                     tuple(n.kwargs['remappings']))
                    for n in _nodes(_run_launch_file(name, monkeypatch))]
    runner = [(s.name, s.executable, s.remap) for s in graph.profile('all')]
    assert sorted(started) == sorted(runner)
    hil = [(n.kwargs['name'], n.kwargs['executable'],
            tuple(n.kwargs['remappings']))
           for n in _nodes(_run_launch_file('hil.launch.py', monkeypatch))]
    assert sorted(hil) == sorted(runner)


def test_aeb_demo_defaults_to_tutorial_scenario(monkeypatch) -> None:
    """aeb_demo.launch.py selects the AEB tutorial scenario by default."""
    actions = _run_launch_file('aeb_demo.launch.py', monkeypatch)
    scen = [a for a in actions if type(a).__name__ == 'DeclareLaunchArgument'
            and a.args[0] == 'scenario']
    assert scen[0].kwargs['default_value'] == 'aeb_tutorial'
    assert (ROOT / 'config' / 'scenarios' / 'aeb_tutorial.yaml').is_file()


def test_rviz_started_only_on_request(monkeypatch) -> None:
    """rviz2 runs with the shipped config, behind the rviz argument."""
    actions = _run_launch_file('hil.launch.py', monkeypatch)
    rviz = [a for a in actions if type(a).__name__ == 'Node'
            and a.kwargs['package'] == 'rviz2']
    assert len(rviz) == 1
    assert rviz[0].kwargs['condition'].args[0].name == 'rviz'
    assert rviz[0].kwargs['arguments'][1].endswith('hil.rviz')


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_launch_files_keep_discovery_local_unless_peers(name, monkeypatch) -> None:
    """
    Issue 14 finding 3: the launch files set nothing, so discovery was open.

    Every launch file sets the DDS environment before its nodes: discovery
    on this host and the loopback-only profile by default; with ``peers``
    the static peers and the UDP profile for the link.
    """
    for var in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_STATIC_PEERS', 'ROS_DISTRO',
                'ROS_LOCALHOST_ONLY', 'FASTDDS_DEFAULT_PROFILES_FILE',
                'FASTRTPS_DEFAULT_PROFILES_FILE'):
        monkeypatch.delenv(var, raising=False)
    actions = _run_launch_file(name, monkeypatch)
    names = [type(a).__name__ for a in actions]
    assert 'OpaqueFunction' in names
    assert names.index('OpaqueFunction') < names.index('Node')
    declared = [a.kwargs.get('name') or a.args[0] for a in actions
                if type(a).__name__ == 'DeclareLaunchArgument']
    assert 'peers' in declared
    opaque = next(a for a in actions if type(a).__name__ == 'OpaqueFunction')
    context = types.SimpleNamespace(launch_configurations={'peers': ''})
    env = {a.args[0]: a.args[1] for a in opaque.kwargs['function'](context)}
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert 'ROS_STATIC_PEERS' not in env
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('fastdds.xml')
    assert env.get('FASTRTPS_DEFAULT_PROFILES_FILE', '') in (
        '', env['FASTDDS_DEFAULT_PROFILES_FILE'])  # Fast DDS 2.x's name where set
    context.launch_configurations['peers'] = '192.168.10.2, localhost'
    env = {a.args[0]: a.args[1] for a in opaque.kwargs['function'](context)}
    assert env['ROS_STATIC_PEERS'] == '192.168.10.2;localhost'
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('fastdds_udp.xml')
    assert env.get('FASTRTPS_DEFAULT_PROFILES_FILE', '') in (
        '', env['FASTDDS_DEFAULT_PROFILES_FILE'])  # Fast DDS 2.x's name where set
    # a peer Fast DDS cannot resolve: one error at launch, not a traceback per node
    context.launch_configurations['peers'] = '999.1.1.1'
    with pytest.raises(ValueError, match="'999.1.1.1' does not resolve"):
        opaque.kwargs['function'](context)
