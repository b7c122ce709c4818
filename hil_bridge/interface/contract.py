# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The interface contract (``config/interfaces.yaml``) as Python.

Nodes take topic names, message types and QoS from here instead of
hard-coding them, so the YAML file is the one source of truth for the graph.
Standard ROS 2 remapping still applies on top of these names.
"""

from dataclasses import dataclass
import functools
import importlib
from typing import Any, Dict, List

from hil_bridge.interface.config import load_yaml

DEFAULT_ROLE = 'ego_vehicle'


@dataclass(frozen=True)
class Topic:
    """One row of the interface table."""

    key: str
    name: str
    msg_type: str
    qos: str
    publisher: str
    subscribers: List[str]
    doc: str
    optional: bool = False

    def resolve(self, role: str = DEFAULT_ROLE, **fields: str) -> str:
        """Return the topic name with ``{role}`` (and others) filled in."""
        return self.name.format(role=role, **fields)

    def msg_class(self) -> Any:
        """
        Import and return the message class (``pkg/msg/Type``).

        Raises ``ImportError`` for optional packages that are not installed.
        """
        pkg, kind, cls = self.msg_type.split('/')
        module = importlib.import_module(f'{pkg}.{kind}')
        return getattr(module, cls)


@functools.lru_cache(maxsize=1)
def _contract() -> Dict[str, Any]:
    return load_yaml('interfaces.yaml')


def topics() -> Dict[str, Topic]:
    """Return every topic of the contract keyed by its short key."""
    out = {}
    for key, row in _contract()['topics'].items():
        out[key] = Topic(key=key, name=row['name'],
                         msg_type=row['type'],
                         qos=row['qos'], publisher=row['from'],
                         subscribers=list(row['to']), doc=row.get('doc', ''),
                         optional=bool(row.get('optional', False)))
    return out


def topic(key: str) -> Topic:
    """Return one topic of the contract; ``KeyError`` names unknown keys."""
    table = topics()
    if key not in table:
        raise KeyError(f'topic {key!r} is not in config/interfaces.yaml')
    return table[key]


def frame_patterns() -> Dict[str, str]:
    """Return the frame id patterns of the contract by kind (``{role}`` ...)."""
    return dict(_contract()['frames'])


def frame(kind: str, role: str = DEFAULT_ROLE, sensor_id: str = '') -> str:
    """Return a frame id of the contract (map, vehicle, sensor, optical)."""
    return _contract()['frames'][kind].format(role=role, sensor_id=sensor_id)


def qos_profile(kind: str) -> Any:
    """Return the rclpy QoS profile for a contract QoS kind."""
    from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                           ReliabilityPolicy)
    if kind == 'sensor':
        return qos_profile_sensor_data
    depth = {'command': 1, 'state': 10, 'clock': 1, 'latched': 1,
             'tf': 100}[kind]
    durability = (DurabilityPolicy.TRANSIENT_LOCAL if kind == 'latched'
                  else DurabilityPolicy.VOLATILE)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=durability)


def create_publisher(node: Any, key: str, role: str = DEFAULT_ROLE,
                     **fields: str) -> Any:
    """Create a publisher for contract topic ``key`` on an rclpy node."""
    row = topic(key)
    return node.create_publisher(row.msg_class(), row.resolve(role, **fields),
                                 qos_profile(row.qos))


def create_subscription(node: Any, key: str, callback: Any,
                        role: str = DEFAULT_ROLE, depth: int = 0, **fields: str) -> Any:
    """
    Create a subscription for contract topic ``key`` on an rclpy node.

    ``depth`` > 0 keeps only that many samples (1: always the newest, for
    inputs a slow node must not queue up); the other QoS policies stay the
    contract's.
    """
    row = topic(key)
    qos = qos_profile(row.qos)
    if depth > 0:
        from rclpy.qos import QoSProfile
        qos = QoSProfile(history=qos.history, depth=int(depth), reliability=qos.reliability,
                         durability=qos.durability)
    return node.create_subscription(row.msg_class(),
                                    row.resolve(role, **fields), callback, qos)
