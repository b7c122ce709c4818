# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Locate and load the YAML files under ``config/`` (no rclpy needed).

The config directory is, in order: ``$CARLA_HIL_CONFIG``; the installed
``share/carla_hil/config`` (ament index); the source tree's ``config/``.
"""

import functools
import os
from typing import Any, Dict

import yaml

PACKAGE = 'carla_hil'


def source_root() -> str:
    """Return the directory holding the ``hil_bridge`` package (the checkout in a source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


@functools.lru_cache(maxsize=1)
def config_dir() -> str:
    """Return the absolute path of the carla_hil config directory."""
    env = os.environ.get('CARLA_HIL_CONFIG')
    if env:
        return os.path.abspath(env)
    src = os.path.join(source_root(), 'config')
    if os.path.isdir(src):
        return src
    try:
        from ament_index_python.packages import get_package_share_directory
        share = os.path.join(get_package_share_directory(PACKAGE), 'config')
        if os.path.isdir(share):
            return share
    except (ImportError, LookupError):
        pass
    raise FileNotFoundError(
        'carla_hil config directory not found: set CARLA_HIL_CONFIG')


def config_path(*parts: str) -> str:
    """
    Return the path of a file under the config directory.

    An absolute ``parts[0]`` is returned unchanged, so parameters may name
    either a file shipped in ``config/`` or any file on disk.
    """
    if parts and os.path.isabs(parts[0]):
        return os.path.join(*parts)
    return os.path.join(config_dir(), *parts)


def load_yaml(*parts: str) -> Dict[str, Any]:
    """
    Load a YAML mapping from ``config/`` (or an absolute path).

    Raises ``ValueError`` naming the file when it is not a mapping.
    """
    path = config_path(*parts)
    with open(path, 'r', encoding='utf-8') as stream:
        data = yaml.safe_load(stream)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a YAML mapping at top level')
    return data


def node_params(node_name: str, file_name: str = '') -> Dict[str, Any]:
    """
    Return the ``ros__parameters`` of ``node_name`` from its YAML file.

    The file is ``config/<node_name>.yaml`` unless ``file_name`` is given and
    uses the standard ROS 2 layout ``<node_name>: {ros__parameters: {...}}``
    (``/**`` is accepted as the node key too).
    """
    data = load_yaml(file_name or f'{node_name}.yaml')
    for key in (node_name, '/' + node_name, '/**'):
        if key in data:
            return dict(data[key].get('ros__parameters', {}))
    raise ValueError(f'{config_path(file_name or node_name + ".yaml")}: '
                     f'no ros__parameters for node {node_name!r}')


def dds_environment() -> Dict[str, str]:
    """
    Return environment variables that select carla_hil's Fast DDS profile.

    ``config/fastdds.xml`` enlarges the shared-memory segment so camera
    images between processes on one host stay in shared memory (no lossy
    UDP fragmentation). Variables the user already set win.
    """
    env = {}
    if 'FASTDDS_DEFAULT_PROFILES_FILE' not in os.environ and \
            'FASTRTPS_DEFAULT_PROFILES_FILE' not in os.environ:
        env['FASTDDS_DEFAULT_PROFILES_FILE'] = config_path('fastdds.xml')
    return env
