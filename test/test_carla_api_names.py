# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Every ``carla`` name and method the CARLA backend uses exists in carla 0.9.16.

The backend is parsed with ``ast``: ``carla.X`` names are checked on the
module, ``command.X`` on ``carla.command``, and attributes used on the
variables that hold server-side objects (named consistently in the
backend: ``client``, ``world``, ``bp``, ``actor``, ``sensor``...) are
checked on the matching classes, including names passed to
``getattr``/``hasattr``. The fake server is no help here: only the
installed client counts.
"""

import ast
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest

carla = pytest.importorskip('carla')


SOURCE = Path(__file__).resolve().parents[1] / 'hil_bridge' / 'carla_backend' / \
    'backend.py'

#: Receiver expression in the backend -> the carla class it holds.
RECEIVERS: Dict[str, object] = {
    'carla': carla,
    'command': carla.command,
    'client': carla.Client,
    'self._client': carla.Client,
    'world': carla.World,
    'self._world': carla.World,
    'bp_lib': carla.BlueprintLibrary,
    'bp': carla.ActorBlueprint,
    'actor': carla.Actor,
    'other': carla.Actor,
    'vehicle': carla.Vehicle,
    'self._ego': carla.Vehicle,
    'physics_control': carla.VehiclePhysicsControl,
    'wheel': carla.VehicleWheelLocation,
    'sensor': carla.Sensor,
    'settings': carla.WorldSettings,
    'snapshot': carla.WorldSnapshot,
    'snapshot.timestamp': carla.Timestamp,
    'image': carla.Image,
    'measurement': carla.LidarMeasurement,
    'event': carla.CollisionEvent,
    'response': carla.command.Response,
    'bbox': carla.BoundingBox,
    'ext': carla.Vector3D,
}


def _uses() -> Set[Tuple[str, str]]:
    """Return (receiver, attribute) pairs used in the backend."""
    tree = ast.parse(SOURCE.read_text(encoding='utf-8'))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            recv = ast.unparse(node.value)
            if recv in RECEIVERS:
                found.add((recv, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ('getattr', 'hasattr') and \
                len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant):
            recv = ast.unparse(node.args[0])
            if recv in RECEIVERS:
                found.add((recv, node.args[1].value))
    return found


def test_every_carla_name_exists() -> None:
    uses = _uses()
    missing = [f'{recv}.{attr} ({getattr(RECEIVERS[recv], "__name__", "")})'
               for recv, attr in sorted(uses)
               if not hasattr(RECEIVERS[recv], attr)]
    assert not missing, f'not in the installed carla module: {missing}'


def test_the_check_sees_the_backend_calls() -> None:
    """The parse finds the calls the backend cannot work without."""
    uses = _uses()
    required = {
        ('carla', 'Client'), ('carla', 'Transform'), ('carla', 'Location'),
        ('carla', 'Rotation'), ('carla', 'VehicleControl'),
        ('carla', 'Vector3D'), ('carla', 'command'),
        ('command', 'DestroyActor'), ('command', 'SpawnActor'),
        ('client', 'set_timeout'), ('client', 'get_world'),
        ('client', 'get_server_version'), ('client', 'get_client_version'),
        ('client', 'apply_batch_sync'), ('world', 'get_settings'),
        ('world', 'apply_settings'), ('world', 'tick'),
        ('world', 'wait_for_tick'), ('world', 'get_snapshot'),
        ('world', 'get_blueprint_library'), ('world', 'spawn_actor'),
        ('world', 'try_spawn_actor'), ('bp_lib', 'find'),
        ('bp', 'has_attribute'), ('bp', 'set_attribute'),
        ('sensor', 'listen'), ('sensor', 'stop'),
        ('actor', 'set_target_velocity'), ('vehicle', 'get_physics_control'),
        ('physics_control', 'wheels'), ('physics_control', 'steering_curve'),
        ('vehicle', 'get_wheel_steer_angle'), ('wheel', 'FL_Wheel'),
        ('wheel', 'FR_Wheel'),
        ('self._client', 'load_world'), ('self._client', 'get_available_maps'),
        ('self._world', 'get_map'), ('world', 'get_actors'),
        ('actor', 'get_transform'), ('actor', 'get_velocity'),
        ('actor', 'get_angular_velocity'), ('actor', 'get_acceleration'),
        ('self._ego', 'apply_control'), ('settings', 'synchronous_mode'),
        ('settings', 'fixed_delta_seconds'), ('image', 'raw_data'),
        ('measurement', 'raw_data'), ('snapshot.timestamp',
                                      'elapsed_seconds'),
        ('response', 'error'), ('event', 'other_actor'),
    }
    assert required <= uses, sorted(required - uses)


def test_a_wrong_name_would_be_caught() -> None:
    """The check itself fails on names carla does not have."""
    assert not hasattr(carla.World, 'spawn')
    assert not hasattr(carla.Actor, 'listen')
    assert not hasattr(carla, 'Transformation')
