# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Shared body of the launch files in ``launch/`` (needs ``launch_ros``).

Every launch file builds its nodes from ``config/graph.yaml`` through
:func:`profile_nodes`, with the same parameter files the ``carla-hil``
runner passes, so both start the same graph. Like the runner, the launch
files keep DDS discovery on this host unless the ``peers`` argument names
the other machine(s) (:func:`dds_actions`,
:func:`hil_bridge.interface.config.dds_environment`).
"""

from typing import Dict, List

from hil_bridge.interface import graph

#: launch arguments: name -> (default, description)
ARGUMENTS: Dict[str, tuple] = {
    'backend': ('builtin', 'simulator backend: builtin or carla'),
    'host': ('localhost', 'CARLA server host'),
    'port': ('2000', 'CARLA server port'),
    'scenario': ('trackdrive', 'scenario name under config/scenarios'),
    'namespace': ('', 'ROS namespace for every node'),
    'use_sim_time': ('true', 'nodes follow /clock from the bridge'),
    'rviz': ('false', 'start rviz2 with config/hil.rviz'),
    'peers': ('', 'two machines: the other host(s), comma separated; empty = DDS '
              'discovery stays on this host'),
}
#: launch arguments forwarded to the bridge as parameters
BRIDGE_ARGS = ('backend', 'host', 'port', 'scenario')


def declare_arguments(defaults: Dict[str, str] = None) -> List:
    """Return DeclareLaunchArgument actions (``defaults`` override)."""
    from launch.actions import DeclareLaunchArgument
    defaults = defaults or {}
    return [DeclareLaunchArgument(name, default_value=defaults.get(name, d),
                                  description=desc)
            for name, (d, desc) in ARGUMENTS.items()]


def dds_environment_for(peers_text: str) -> Dict[str, str]:
    """Return the DDS environment the launched nodes get for a ``peers`` value."""
    from hil_bridge.interface.config import (check_peers_resolve, dds_environment,
                                             parse_peers)
    peers = parse_peers(peers_text)
    check_peers_resolve(peers)
    return dds_environment(peers)


def _dds_env(context: object) -> List:
    from launch.actions import SetEnvironmentVariable
    peers = context.launch_configurations.get('peers', '')
    return [SetEnvironmentVariable(name, value)
            for name, value in sorted(dds_environment_for(peers).items())]


def dds_actions() -> List:
    """Return the action that sets the DDS environment before any node starts."""
    from launch.actions import OpaqueFunction
    return [OpaqueFunction(function=_dds_env)]


def real_pointcloud_to_laserscan() -> bool:
    """Return True when the C++ pointcloud_to_laserscan package exists."""
    try:
        from ament_index_python.packages import get_package_share_directory
        get_package_share_directory('pointcloud_to_laserscan')
        return True
    except (ImportError, LookupError, OSError, ValueError):
        return False


def profile_nodes(profile: str) -> List:
    """Return launch_ros Node actions for every node of ``profile``."""
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    use_sim_time = LaunchConfiguration('use_sim_time')
    namespace = LaunchConfiguration('namespace')
    actions = []
    for spec in graph.profile(profile):
        params = [spec.params_path, {'use_sim_time': use_sim_time}]
        package, executable = graph.PACKAGE, spec.executable
        if spec.executable == 'hil_bridge':
            params.append({k: LaunchConfiguration(k) for k in BRIDGE_ARGS})
        if spec.executable == 'cloud_to_scan' and \
                real_pointcloud_to_laserscan():
            package = 'pointcloud_to_laserscan'
            executable = 'pointcloud_to_laserscan_node'
        actions.append(Node(package=package, executable=executable,
                            name=spec.name, namespace=namespace,
                            parameters=params,
                            remappings=list(spec.remap), output='screen'))
    return actions


def rviz_node() -> object:
    """Return the rviz2 Node, started only when the ``rviz`` arg is true."""
    from hil_bridge.interface.config import config_path
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    return Node(package='rviz2', executable='rviz2', name='rviz2',
                arguments=['-d', config_path('hil.rviz')],
                condition=IfCondition(LaunchConfiguration('rviz')),
                output='screen')


def description(profiles: List[str], defaults: Dict[str, str] = None):
    """Return the LaunchDescription for ``profiles`` (+ optional rviz2)."""
    from launch import LaunchDescription
    actions = declare_arguments(defaults) + dds_actions()
    for name in profiles:
        actions += profile_nodes(name)
    actions.append(rviz_node())
    return LaunchDescription(actions)
