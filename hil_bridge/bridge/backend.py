# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The simulator backend interface and the data it exchanges (no rclpy).

Two backends implement :class:`Backend`: the built-in simulator
(``hil_bridge.sim``, the default) and CARLA
(``hil_bridge.carla_backend.backend``).
The bridge node only talks to this interface.

Frames and units: everything here is REP-103 (x forward, y left, z up;
metres, radians, seconds). World poses are in ``map``; sensor data is in the
sensor's own frame (lidar points) or the camera's image (bgr8 pixels). A
backend converts from its native convention (CARLA/UE4: left-handed,
degrees) before it returns a :class:`Frame`.

Life cycle::

    backend.setup(scenario, rig)   -> first Frame (frame 0, t = 0)
    backend.apply_control(control)    # CARLA VehicleControl semantics
    backend.step(dt)               -> next Frame (synchronous: ticks world)
    backend.latest()               -> newest Frame (asynchronous mode)
    backend.teardown()                # destroys everything it spawned
"""

import abc
from dataclasses import dataclass, field
import math
from typing import Any, Dict, List, Optional

from hil_bridge.interface.frames import Pose
from hil_bridge.interface.rig import SensorSpec
from hil_bridge.interface.track import ConeArray
import numpy as np


@dataclass
class VehicleControl:
    """
    A control command with CARLA ``carla.VehicleControl`` semantics.

    throttle 0..1, brake 0..1, steer -1..1 where **steer > 0 turns right**
    (CARLA convention, opposite to the REP-103 sign of the steering angle);
    ``steer = 1`` is the vehicle's maximum road-wheel angle.
    """

    throttle: float = 0.0
    steer: float = 0.0
    brake: float = 0.0
    hand_brake: bool = False
    reverse: bool = False

    def clamped(self) -> 'VehicleControl':
        """
        Return a copy with every field in range; NaN becomes safe (brake).

        A NaN or infinite throttle/steer becomes 0 and a NaN brake becomes 1.
        """
        def fin(value: float, lo: float, hi: float, bad: float) -> float:
            v = float(value)
            if not math.isfinite(v):
                return bad
            return min(max(v, lo), hi)
        return VehicleControl(throttle=fin(self.throttle, 0.0, 1.0, 0.0),
                              steer=fin(self.steer, -1.0, 1.0, 0.0),
                              brake=fin(self.brake, 0.0, 1.0, 1.0),
                              hand_brake=bool(self.hand_brake),
                              reverse=bool(self.reverse))


@dataclass
class ActorState:
    """
    Ground-truth state of one vehicle (ego or other) at a frame.

    ``pose`` in ``map``; ``velocity`` (m/s) in ``map``; ``angular_velocity``
    (rad/s) and ``acceleration`` (m/s^2, without gravity) in the body frame;
    ``size`` is (length, width, height) in metres of the box footprint,
    whose centre is ``pose`` shifted by ``box_offset`` along body x.
    """

    role_name: str
    pose: Pose
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    angular_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    acceleration: np.ndarray = field(default_factory=lambda: np.zeros(3))
    size: np.ndarray = field(default_factory=lambda: np.zeros(3))
    box_offset: float = 0.0
    steer_angle: float = 0.0

    @property
    def speed(self) -> float:
        """Return the speed along the body x axis (m/s, signed)."""
        c, s = math.cos(self.pose.yaw), math.sin(self.pose.yaw)
        return float(self.velocity[0] * c + self.velocity[1] * s)


@dataclass
class SensorReading:
    """
    Data of one sensor at one frame.

    lidar (``sensor.lidar.ray_cast``): ``data`` float32 (N, 4) x, y, z,
    intensity in the sensor frame (REP-103). camera (``sensor.camera.rgb``):
    ``data`` uint8 (H, W, 3) bgr8, and ``intrinsics`` the 3x3 K matrix.
    ``timestamp`` is the sim time (s) the data was taken at.
    """

    sensor_id: str
    blueprint: str
    frame: int
    timestamp: float
    data: np.ndarray
    intrinsics: Optional[np.ndarray] = None


@dataclass
class Event:
    """
    A referee or backend event with free-form data.

    kinds: cone_hit, off_course, collision, lap, penalty, mission_end,
    warning.
    """

    kind: str
    sim_time: float
    data: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Frame:
    """Everything a backend produces for one simulation frame."""

    frame: int
    sim_time: float
    ego: ActorState
    actors: List[ActorState] = field(default_factory=list)
    sensors: Dict[str, SensorReading] = field(default_factory=dict)
    cones: ConeArray = field(default_factory=ConeArray)
    events: List[Event] = field(default_factory=list)
    applied_control: VehicleControl = field(default_factory=VehicleControl)


class BackendError(RuntimeError):
    """A backend failed (server unreachable, lost mid-run, bad set-up)."""


class Backend(abc.ABC):
    """What the bridge node needs from a simulator."""

    #: True when ``step`` ticks the world (synchronous); False when the world
    #: runs on its own and ``latest`` returns what it produced.
    synchronous: bool = True

    @abc.abstractmethod
    def setup(self, scenario: Any, rig: List[SensorSpec]) -> Frame:
        """
        Load a scenario and spawn the ego vehicle, its rig and the actors.

        ``scenario`` is a ``hil_bridge.bridge.scenario.Scenario``; returns frame 0.
        """

    @abc.abstractmethod
    def apply_control(self, control: VehicleControl) -> None:
        """Set the ego control used from the next step on (clamped)."""

    @abc.abstractmethod
    def step(self, dt: float) -> Frame:
        """Advance the world by ``dt`` seconds and return the new frame."""

    def latest(self) -> Optional[Frame]:
        """Return the newest frame in asynchronous mode (None if no new)."""
        raise NotImplementedError('this backend is synchronous only')

    @abc.abstractmethod
    def teardown(self) -> None:
        """Destroy everything this backend spawned; safe to call twice."""
