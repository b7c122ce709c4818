# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Sensor objects of the built-in simulator, built from ``SensorSpec``.

:func:`make_sensor` validates a spec (CARLA names, defaults and ranges,
see ``hil_bridge.interface.rig``) and returns an object with::

    sensor.sensor_id, sensor.blueprint, sensor.sensor_tick, sensor.spec
    sensor.mount_matrix                     # 4x4 sensor pose in the vehicle
    sensor.measure(world, sensor_pose_world, t, dt, rng) -> np.ndarray

``sensor_pose_world`` is the 4x4 REP-103 pose of the sensor in ``map``
(vehicle pose @ ``mount_matrix``); ``dt`` is the time (s) since the
sensor's previous measurement (the world step, or ``sensor_tick``). A lidar
returns float32 (N, 4) x, y, z, intensity in its own frame; a camera
returns a bgr8 (H, W, 3) uint8 image and also has ``intrinsics`` (3x3 K),
``width``, ``height`` and ``lighting``.
"""

from typing import Optional, Union

from hil_bridge.interface.frames import pose_to_matrix
from hil_bridge.interface.rig import CAMERA_RGB, LIDAR, SensorSpec, validate_attributes
from hil_bridge.sim.camera import CameraRenderer, Lighting
from hil_bridge.sim.lidar import RayCastLidar
from hil_bridge.sim.world import WorldGeometry
import numpy as np


class _SensorBase:
    """What every built-in sensor shares: id, blueprint, tick, mount."""

    def __init__(self, spec: SensorSpec) -> None:
        self.spec = SensorSpec(
            sensor_id=spec.sensor_id, blueprint=spec.blueprint,
            mount=spec.mount,
            attributes=validate_attributes(spec.blueprint, spec.attributes,
                                           f'sensor {spec.sensor_id!r}'))
        self.sensor_id = spec.sensor_id
        self.blueprint = spec.blueprint
        self.sensor_tick = float(self.spec.attributes['sensor_tick'])
        self.mount_matrix = pose_to_matrix(spec.mount)


class CameraSensor(_SensorBase):
    """``sensor.camera.rgb``: renders bgr8 frames (see ``sim.camera``)."""

    def __init__(self, spec: SensorSpec,
                 lighting: Optional[Lighting] = None) -> None:
        super().__init__(spec)
        a = self.spec.attributes
        self.renderer = CameraRenderer(
            int(a['image_size_x']), int(a['image_size_y']), float(a['fov']),
            noise_stddev=float(a['sim_noise_stddev']), lighting=lighting)
        self.width = self.renderer.width
        self.height = self.renderer.height
        self.intrinsics = self.renderer.K.copy()

    @property
    def lighting(self) -> Lighting:
        """Return the renderer's lighting."""
        return self.renderer.lighting

    @lighting.setter
    def lighting(self, value: Lighting) -> None:
        self.renderer.lighting = value

    def measure(self, world: WorldGeometry, sensor_pose_world: np.ndarray,
                t: float, dt: float, rng: np.random.Generator) -> np.ndarray:
        """Return the bgr8 image (H, W, 3) seen from ``sensor_pose_world``."""
        return self.renderer.render(world, sensor_pose_world, rng)


class LidarSensor(_SensorBase):
    """``sensor.lidar.ray_cast``: casts rays (see ``sim.lidar``)."""

    def __init__(self, spec: SensorSpec) -> None:
        super().__init__(spec)
        self.lidar = RayCastLidar(self.spec.attributes)

    def measure(self, world: WorldGeometry, sensor_pose_world: np.ndarray,
                t: float, dt: float, rng: np.random.Generator) -> np.ndarray:
        """Return float32 (N, 4) x, y, z, intensity in the sensor frame."""
        return self.lidar.scan(world, sensor_pose_world, dt, rng)


def make_sensor(spec: SensorSpec, lighting: Optional[Lighting] = None
                ) -> Union[CameraSensor, LidarSensor]:
    """
    Build the built-in sensor of a spec.

    Raises ``ValueError`` for an unsupported blueprint or bad attributes.
    ``lighting`` sets a camera's initial lighting (ignored by a lidar).
    """
    if not isinstance(spec, SensorSpec):
        raise ValueError(f'make_sensor expects a SensorSpec, got '
                         f'{type(spec).__name__}')
    if spec.blueprint == CAMERA_RGB:
        return CameraSensor(spec, lighting)
    if spec.blueprint == LIDAR:
        return LidarSensor(spec)
    validate_attributes(spec.blueprint, spec.attributes,
                        f'sensor {spec.sensor_id!r}')
    raise ValueError(f'sensor {spec.sensor_id!r}: unsupported blueprint '
                     f'{spec.blueprint!r}')
