# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scenario description shared by every backend (no rclpy).

A scenario (``config/scenarios/<name>.yaml``) names the mission, the ego
vehicle and its sensor rig, the other actors and the track (cones). Poses
are REP-103 in ``map``.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hil_bridge.backend import Pose
import numpy as np


@dataclass
class ActorSpec:
    """
    A vehicle or static obstacle to spawn.

    ``profile`` names a vehicle profile (``config/vehicles``) or is empty
    for a static obstacle; ``size`` is (length, width, height) in metres of
    its box; ``initial_speed`` (m/s) is applied along the heading at spawn
    (CARLA ``set_target_velocity``); ``behaviour`` describes scripted
    motion, e.g. ``{'type': 'constant_speed', 'speed': 5.5}`` or
    ``{'type': 'brake', 'at_time': 2.0, 'decel': 6.0}``.
    """

    role_name: str
    blueprint: str
    pose: Pose
    size: np.ndarray
    profile: str = ''
    initial_speed: float = 0.0
    behaviour: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Scenario:
    """
    Everything a backend needs to build a world.

    ``track`` is a ``hil_bridge.sim.tracks.Track`` (cones, centre line,
    timing lines) or None; ``rig`` is a sensor rig file under
    ``config/sensors``; ``timeout`` is in sim seconds.
    """

    name: str
    mission: str
    ego: ActorSpec
    actors: List[ActorSpec] = field(default_factory=list)
    track: Optional[Any] = None
    rig: str = 'hil_rig.yaml'
    laps: int = 1
    timeout: float = 120.0
    source: str = ''
