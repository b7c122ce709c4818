# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A fake CARLA server behind the real ``carla`` 0.9.16 client value types.

:class:`FakeCarla` looks like the ``carla`` module to
``hil_bridge.carla_backend.backend`` (pass it as ``carla_module``): ``Client``,
``command`` and the real value types (Location, Rotation, Transform,
Vector3D, VehicleControl, WorldSettings, BoundingBox, Timestamp). Behind
``Client`` sit :class:`FakeServer` objects registered per (host, port);
they implement exactly the server-side calls the backend makes: World
settings/tick/wait_for_tick/snapshot/blueprints/spawning, Actor getters and
setters, Sensor.listen/stop with ``Image`` (BGRA bytes) and
``LidarMeasurement`` (float32 x, y, z, intensity in the UE4 sensor frame)
delivered from a separate thread, like CARLA's streaming threads.

It can simulate: an unreachable server (no server at that address, or
``reachable = False``), a version mismatch (``version``), sensors that
arrive late or never (``sensor_delay[role_name]``: seconds, None or a
callable of the frame), sensors at different ``sensor_tick``, spawn
failures (``fail_spawn``) and the server dying mid-run (``kill`` or
``die_at_frame``).

Vehicle motion is kinematic: a velocity set with ``set_target_velocity``
is kept; once ``apply_control`` was called, throttle accelerates at up to
4 m/s^2, brake decelerates at up to 9 m/s^2 and steer turns (positive =
right, as in CARLA).
"""

import fnmatch
import heapq
import itertools
import math
import threading
import time
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Tuple

from hil_bridge.interface.rig import CAMERA_PASSTHROUGH, LIDAR_DEFAULTS
import numpy as np
import pytest

_carla = pytest.importorskip('carla')

Location = _carla.Location
Rotation = _carla.Rotation
Transform = _carla.Transform
Vector3D = _carla.Vector3D
VehicleControl = _carla.VehicleControl
WorldSettings = _carla.WorldSettings
BoundingBox = _carla.BoundingBox
Timestamp = _carla.Timestamp

CLIENT_VERSION = '0.9.16'

#: Half extents (m) of the vehicles the fake knows (like CARLA 0.9.16).
VEHICLE_EXTENTS = {
    'vehicle.tesla.model3': (2.3958, 1.0816, 0.7443),
    'vehicle.lincoln.mkz_2020': (2.4508, 1.0641, 0.7553),
    'vehicle.audi.a2': (1.8522, 0.8983, 0.7674),
}
CAMERA_ATTRIBUTES = {'image_size_x': '800', 'image_size_y': '600',
                     'fov': '90', 'sensor_tick': '0.0', 'role_name': 'front'}
CAMERA_ATTRIBUTES.update(dict.fromkeys(CAMERA_PASSTHROUGH, '0'))
LIDAR_ATTRIBUTES = {k: str(v) for k, v in LIDAR_DEFAULTS.items()}
LIDAR_ATTRIBUTES['role_name'] = 'lidar'
BLUEPRINTS: Dict[str, Dict[str, str]] = {
    'sensor.camera.rgb': CAMERA_ATTRIBUTES,
    'sensor.lidar.ray_cast': LIDAR_ATTRIBUTES,
    'sensor.other.collision': {'role_name': 'collision'},
    'static.prop.trafficcone01': {'role_name': 'prop', 'size': 'small'},
    'static.prop.constructioncone': {'role_name': 'prop', 'size': 'medium'},
    'static.prop.box01': {'role_name': 'prop', 'size': 'small'},
}
for _name in VEHICLE_EXTENTS:
    BLUEPRINTS[_name] = {'role_name': 'autopilot', 'color': '0,0,0',
                         'number_of_wheels': '4'}


def _copy_settings(s: Any) -> Any:
    out = WorldSettings()
    for key in ('synchronous_mode', 'no_rendering_mode',
                'fixed_delta_seconds', 'substepping',
                'max_substep_delta_time', 'max_substeps'):
        setattr(out, key, getattr(s, key))
    return out


def _matrix(tf: Any) -> np.ndarray:
    return np.array(tf.get_matrix(), dtype=np.float64)


# --------------------------------------------------------------- blueprints


class ActorBlueprint:
    """``carla.ActorBlueprint``: an id and string attributes."""

    def __init__(self, bp_id: str, attributes: Dict[str, str]) -> None:
        self.id = bp_id
        self.tags = bp_id.split('.')
        self._attributes = dict(attributes)

    def has_attribute(self, attr_id: str) -> bool:
        """Return whether the blueprint has this attribute."""
        return attr_id in self._attributes

    def set_attribute(self, attr_id: str, value: str) -> None:
        """Set an attribute (CARLA takes strings only)."""
        if attr_id not in self._attributes:
            raise IndexError(f'actor blueprint {self.id!r} has no attribute '
                             f'{attr_id!r}')
        if not isinstance(value, str):
            raise TypeError(f'set_attribute({attr_id!r}): value must be str, '
                            f'got {type(value).__name__}')
        self._attributes[attr_id] = value

    def get_attribute(self, attr_id: str) -> str:
        """Return an attribute's value (a string here)."""
        return self._attributes[attr_id]


class BlueprintLibrary:
    """``carla.BlueprintLibrary``: find by id, filter by wildcard."""

    def __init__(self, blueprints: Dict[str, Dict[str, str]]) -> None:
        self._bps = blueprints

    def find(self, bp_id: str) -> ActorBlueprint:
        """Return a copy of the blueprint ``bp_id`` (IndexError if none)."""
        if bp_id not in self._bps:
            raise IndexError(f"blueprint '{bp_id}' not found")
        return ActorBlueprint(bp_id, self._bps[bp_id])

    def filter(self, wildcard_pattern: str  # noqa: A003 - carla's name
               ) -> List[ActorBlueprint]:
        """Return the blueprints whose id matches the pattern."""
        return [ActorBlueprint(k, v) for k, v in self._bps.items()
                if fnmatch.fnmatch(k, wildcard_pattern)]


# ------------------------------------------------------------ sensor data


class Image:
    """
    ``carla.Image``: BGRA pixels in ``raw_data``.

    Like CARLA's, ``raw_data`` is a memoryview that does not keep the image
    alive; when the image is collected its memory is overwritten, so a
    dangling view shows up as zeros in tests.
    """

    def __init__(self, frame: int, timestamp: float, transform: Any,
                 width: int, height: int, fov: float, bgra: np.ndarray
                 ) -> None:
        self.frame = frame
        self.frame_number = frame
        self.timestamp = timestamp
        self.transform = transform
        self.width = width
        self.height = height
        self.fov = fov
        self._buf = bytearray(bgra.tobytes())

    @property
    def raw_data(self) -> memoryview:
        """Return the BGRA bytes (read-only memoryview)."""
        return memoryview(self._buf).toreadonly()

    def __del__(self) -> None:
        """Overwrite the pixels, as freed server memory would be reused."""
        try:
            np.frombuffer(self._buf, dtype=np.uint8)[:] = 0
        except (ValueError, TypeError, BufferError):
            pass


class LidarMeasurement:
    """``carla.LidarMeasurement``: float32 x, y, z, intensity (UE4 frame)."""

    def __init__(self, frame: int, timestamp: float, transform: Any,
                 points: np.ndarray, channels: int) -> None:
        self.frame = frame
        self.frame_number = frame
        self.timestamp = timestamp
        self.transform = transform
        self.channels = channels
        self.horizontal_angle = 0.0
        self._buf = np.ascontiguousarray(points, dtype=np.float32).tobytes()
        self._n = len(points)

    @property
    def raw_data(self) -> memoryview:
        """Return the point buffer."""
        return memoryview(self._buf)

    def get_point_count(self, channel: int) -> int:
        """Return the points of one channel (all in channel 0 here)."""
        return self._n if channel == 0 else 0

    def __len__(self) -> int:
        """Return the number of points."""
        return self._n


class CollisionEvent:
    """``carla.CollisionEvent``."""

    def __init__(self, frame: int, timestamp: float, actor: Any,
                 other_actor: Any, normal_impulse: Any) -> None:
        self.frame = frame
        self.frame_number = frame
        self.timestamp = timestamp
        self.transform = actor.get_transform()
        self.actor = actor
        self.other_actor = other_actor
        self.normal_impulse = normal_impulse


class WorldSnapshot:
    """``carla.WorldSnapshot``: frame and timestamp."""

    def __init__(self, frame: int, elapsed: float, delta: float) -> None:
        self.id = 1
        self.frame = frame
        self.timestamp = Timestamp(frame, elapsed, delta, time.time())
        self.elapsed_seconds = elapsed
        self.delta_seconds = delta


# ------------------------------------------------------------------ actors


class Actor:
    """``carla.Actor`` (props); transforms in UE4 (m, degrees)."""

    def __init__(self, server: 'FakeServer', actor_id: int,
                 bp: ActorBlueprint, transform: Any,
                 parent: Optional['Actor']) -> None:
        self._server = server
        self.id = actor_id
        self.type_id = bp.id
        self.attributes = dict(bp._attributes)
        self.parent = parent
        self._tf = Transform(Location(transform.location),
                             Rotation(transform.rotation.pitch,
                                      transform.rotation.yaw,
                                      transform.rotation.roll))
        self._velocity = np.zeros(3)
        self._accel = np.zeros(3)
        self._yaw_rate = 0.0
        self._alive = True

    @property
    def is_alive(self) -> bool:
        """Return whether the actor still exists."""
        return self._alive and self.id in self._server.actors

    def destroy(self) -> bool:
        """Remove the actor from the server."""
        self._server.check()
        return self._server.destroy(self.id)

    def get_transform(self) -> Any:
        """Return the world transform (attached: parent composed)."""
        self._server.check()
        if self.parent is None:
            return Transform(self._tf.location, self._tf.rotation)
        ptf = self.parent.get_transform()
        loc = ptf.transform(Location(self._tf.location))
        r, p = self._tf.rotation, ptf.rotation
        return Transform(loc, Rotation(p.pitch + r.pitch, p.yaw + r.yaw,
                                       p.roll + r.roll))

    def world_matrix(self) -> np.ndarray:
        """Return the UE4 4x4 world matrix (composed exactly)."""
        m = _matrix(self._tf)
        return m if self.parent is None else self.parent.world_matrix() @ m

    def set_transform(self, transform: Any) -> None:
        """Teleport the actor."""
        self._server.check()
        self._tf = Transform(Location(transform.location),
                             Rotation(transform.rotation.pitch,
                                      transform.rotation.yaw,
                                      transform.rotation.roll))

    def get_velocity(self) -> Any:
        """Return the velocity (m/s, UE4 world frame)."""
        self._server.check()
        return Vector3D(*map(float, self._velocity))

    def get_angular_velocity(self) -> Any:
        """Return the angular velocity (deg/s, UE4)."""
        self._server.check()
        return Vector3D(0.0, 0.0, float(self._yaw_rate))

    def get_acceleration(self) -> Any:
        """Return the acceleration (m/s^2, UE4 world frame)."""
        self._server.check()
        return Vector3D(*map(float, self._accel))

    def set_target_velocity(self, velocity: Any) -> None:
        """Set the velocity (m/s, UE4 world frame)."""
        self._server.check()
        self._velocity = np.array([velocity.x, velocity.y, velocity.z])
        self._server.target_velocity_log.append(
            (self._server.frame, self.id, (velocity.x, velocity.y,
                                           velocity.z)))


class Vehicle(Actor):
    """``carla.Vehicle``: controls and a bounding box."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ext = VEHICLE_EXTENTS.get(self.type_id, (2.0, 1.0, 0.75))
        self.bounding_box = BoundingBox(Location(0.05, 0.0, ext[2]),
                                        Vector3D(*ext))
        self._control: Optional[Any] = None

    def apply_control(self, control: Any) -> None:
        """Apply a ``carla.VehicleControl``."""
        self._server.check()
        if not isinstance(control, VehicleControl):
            raise TypeError('apply_control expects carla.VehicleControl')
        self._control = control
        self._server.control_log.append((self._server.frame, self.id,
                                         control))

    def get_control(self) -> Any:
        """Return the last control."""
        return self._control or VehicleControl()

    def get_physics_control(self) -> Any:
        """Return the wheels' max_steer_angle (70 deg front) and a flat curve."""
        self._server.check()
        wheels = [SimpleNamespace(max_steer_angle=a) for a in (70.0, 70.0, 0.0, 0.0)]
        return SimpleNamespace(wheels=wheels,
                               steering_curve=[SimpleNamespace(x=0.0, y=1.0)])

    def get_wheel_steer_angle(self, wheel_location: int) -> float:
        """Return a wheel's angle (deg, > 0 right): steer x 70 deg at the front."""
        self._server.check()
        steer = self._control.steer if self._control is not None else 0.0
        return 70.0 * steer if int(wheel_location) in (0, 1) else 0.0

    def advance(self, dt: float) -> None:
        """Integrate one step of the kinematic model."""
        v0 = self._velocity.copy()
        if self._control is not None:
            c = self._control
            yaw = math.radians(self._tf.rotation.yaw)
            fwd = np.array([math.cos(yaw), math.sin(yaw), 0.0])
            speed = float(v0 @ fwd)
            speed += (4.0 * c.throttle - 9.0 * c.brake) * dt
            speed = max(speed, 0.0)
            self._yaw_rate = math.degrees(
                speed * math.tan(math.radians(70.0) * c.steer) / 2.8)
            yaw += math.radians(self._yaw_rate) * dt
            self._tf.rotation.yaw = math.degrees(yaw)
            self._velocity = speed * np.array([math.cos(yaw), math.sin(yaw),
                                               0.0])
        loc = self._tf.location
        self._tf.location = Location(loc.x + self._velocity[0] * dt,
                                     loc.y + self._velocity[1] * dt,
                                     loc.z + self._velocity[2] * dt)
        self._accel = (self._velocity - v0) / dt


class Sensor(Actor):
    """``carla.Sensor``: listen/stop; data built by the server each tick."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._callback: Optional[Callable[[Any], None]] = None
        self._since = math.inf
        self._hits: set = set()

    @property
    def is_listening(self) -> bool:
        """Return whether a callback is registered."""
        return self._callback is not None

    def listen(self, callback: Callable[[Any], None]) -> None:
        """Register the data callback."""
        self._server.check()
        self._callback = callback

    def stop(self) -> None:
        """Stop delivering data."""
        self._callback = None


class ActorList(list):
    """``carla.ActorList``."""

    def filter(self, wildcard_pattern: str  # noqa: A003 - carla's name
               ) -> 'ActorList':
        """Return the actors whose type_id matches the pattern."""
        return ActorList(a for a in self
                         if fnmatch.fnmatch(a.type_id, wildcard_pattern))

    def find(self, actor_id: int) -> Optional[Actor]:
        """Return the actor with this id or None."""
        return next((a for a in self if a.id == actor_id), None)


# --------------------------------------------------------------- commands


class SpawnActor:
    """``carla.command.SpawnActor`` (the real one wants real blueprints)."""

    def __init__(self, blueprint: ActorBlueprint, transform: Any,
                 parent: Any = None) -> None:
        self.blueprint = blueprint
        self.transform = transform
        self.parent_id = getattr(parent, 'id', parent)


class Response:
    """``carla.command.Response``."""

    def __init__(self, actor_id: int = 0, error: str = '') -> None:
        self.actor_id = actor_id
        self.error = error

    def has_error(self) -> bool:
        """Return whether the command failed."""
        return bool(self.error)


# ------------------------------------------------------------------ server


class FakeServer:
    """The simulated server state plus the knobs tests turn."""

    def __init__(self, host: str = 'localhost', port: int = 2000,
                 version: str = CLIENT_VERSION) -> None:
        self.host, self.port, self.version = host, port, version
        self.reachable = True
        self.alive = True
        self.die_at_frame: Optional[int] = None
        self.frame = 5000
        self.elapsed = 100.0
        self.settings = WorldSettings()
        self.settings_log: List[Any] = []
        self.actors: Dict[int, Actor] = {}
        self.spawn_log: List[Tuple[int, str, Dict[str, str], Any,
                                   Optional[int]]] = []
        self.destroyed: List[int] = []
        self.target_velocity_log: List[Tuple[int, int, tuple]] = []
        self.control_log: List[Tuple[int, int, Any]] = []
        self.fail_spawn: set = set()
        self.sensor_delay: Dict[str, Any] = {}
        self.ticks = 0
        self.connections = 0
        self.map_name = 'HIL_Flat'
        self.maps = ['HIL_Flat']
        self._ids = itertools.count(200)
        self._lock = threading.RLock()
        self._queue: List[Tuple[float, int, Callable, Any]] = []
        self._seq = itertools.count()
        self._qcond = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._closing = False
        self.world = World(self)

    # -- knobs
    def kill(self) -> None:
        """Let the server die: every later call raises RuntimeError."""
        self.alive = False

    def check(self) -> None:
        """Raise like a client whose server is gone."""
        if not self.alive or not self.reachable:
            raise RuntimeError(
                'time-out of 10000ms while waiting for the simulator, make '
                f'sure the simulator is ready and connected to '
                f'{self.host}:{self.port}')

    def close(self) -> None:
        """Stop the delivery thread."""
        with self._qcond:
            self._closing = True
            self._qcond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def alive_actors(self, pattern: str = '*') -> List[Actor]:
        """Return the actors alive in the server."""
        with self._lock:
            return [a for a in self.actors.values()
                    if fnmatch.fnmatch(a.type_id, pattern)]

    # -- actors
    def spawn(self, bp: ActorBlueprint, transform: Any,
              parent: Optional[Actor] = None) -> Actor:
        """Spawn an actor or raise RuntimeError."""
        self.check()
        if bp.id in self.fail_spawn or \
                bp._attributes.get('role_name') in self.fail_spawn:
            raise RuntimeError('Spawn failed because of collision at spawn '
                               'position')
        if bp.id.startswith('vehicle.') and parent is None:
            for other in self.alive_actors('vehicle.*'):
                if other.get_transform().location.distance(
                        transform.location) < 1.0:
                    raise RuntimeError('Spawn failed because of collision '
                                       'at spawn position')
        cls = Vehicle if bp.id.startswith('vehicle.') else \
            Sensor if bp.id.startswith('sensor.') else Actor
        with self._lock:
            actor = cls(self, next(self._ids), bp, transform, parent)
            self.actors[actor.id] = actor
            self.spawn_log.append((actor.id, bp.id, dict(bp._attributes),
                                   Transform(Location(transform.location),
                                             transform.rotation),
                                   parent.id if parent else None))
        return actor

    def destroy(self, actor_id: int) -> bool:
        """Destroy one actor; False when it does not exist."""
        with self._lock:
            actor = self.actors.pop(actor_id, None)
            if actor is None:
                return False
            actor._alive = False
            if isinstance(actor, Sensor):
                actor._callback = None
            self.destroyed.append(actor_id)
            return True

    # -- simulation
    def advance(self) -> int:
        """Run one frame: physics, then sensors; return the frame id."""
        self.check()
        dt = self.settings.fixed_delta_seconds or 0.05
        with self._lock:
            self.frame += 1
            self.elapsed += dt
            self.ticks += 1
            if self.die_at_frame is not None and \
                    self.frame >= self.die_at_frame:
                self.alive = False
                self.check()
            actors = list(self.actors.values())
        for actor in actors:
            if isinstance(actor, Vehicle) and actor.parent is None:
                actor.advance(dt)
        for actor in actors:
            if isinstance(actor, Sensor) and actor._callback is not None:
                self._sense(actor, dt)
        return self.frame

    def _sense(self, sensor: Sensor, dt: float) -> None:
        if sensor.type_id == 'sensor.other.collision':
            self._collisions(sensor)
            return
        tick = float(sensor.attributes.get('sensor_tick', '0') or 0.0)
        sensor._since += dt
        if sensor._since < tick - 1e-9:
            return
        sensor._since = 0.0
        role = sensor.attributes.get('role_name', '')
        delay = self.sensor_delay.get(role, 0.0)
        if callable(delay):
            delay = delay(self.frame)
        if delay is None:
            return
        if sensor.type_id.startswith('sensor.camera.'):
            data = self._image(sensor)
        else:
            data = self._lidar(sensor)
        self._schedule(float(delay), sensor, data)

    def _image(self, sensor: Sensor) -> Image:
        w = int(sensor.attributes['image_size_x'])
        h = int(sensor.attributes['image_size_y'])
        bgra = np.empty((h, w, 4), dtype=np.uint8)
        bgra[:, :, 0] = self.frame % 251
        bgra[:, :, 1] = 100
        bgra[:, :, 2] = 200
        bgra[:, :, 3] = 255
        return Image(self.frame, self.elapsed, sensor.get_transform(), w, h,
                     float(sensor.attributes['fov']), bgra)

    def _lidar(self, sensor: Sensor) -> LidarMeasurement:
        """Two fixed points plus the centre of every other vehicle."""
        inv = np.linalg.inv(sensor.world_matrix())
        pts = [[5.0, 2.0, 0.0, 0.5], [10.0, -1.0, 0.3, 0.25]]
        root = sensor.parent
        for other in self.alive_actors('vehicle.*'):
            if other is root:
                continue
            loc = other.get_transform().location
            p = inv @ np.array([loc.x, loc.y, loc.z, 1.0])
            pts.append([p[0], p[1], p[2], 1.0])
        return LidarMeasurement(self.frame, self.elapsed,
                                sensor.get_transform(), np.array(pts),
                                int(float(sensor.attributes['channels'])))

    def _collisions(self, sensor: Sensor) -> None:
        parent = sensor.parent
        if parent is None:
            return
        ploc = parent.get_transform().location
        reach = getattr(parent, 'bounding_box', None)
        reach = reach.extent.x + 0.3 if reach is not None else 1.0
        for other in list(self.actors.values()):
            if other is parent or other.parent is not None or \
                    other.id in sensor._hits:
                continue
            if other.get_transform().location.distance(ploc) < reach:
                sensor._hits.add(other.id)
                event = CollisionEvent(self.frame, self.elapsed, parent,
                                       other, Vector3D(-100.0, 0.0, 0.0))
                self._schedule(0.0, sensor, event)

    def _schedule(self, delay: float, sensor: Sensor, data: Any) -> None:
        with self._qcond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver,
                                                daemon=True)
                self._thread.start()
            heapq.heappush(self._queue, (time.monotonic() + delay,
                                         next(self._seq), sensor, data))
            self._qcond.notify_all()

    def _deliver(self) -> None:
        while True:
            with self._qcond:
                while not self._closing and (
                        not self._queue or
                        self._queue[0][0] > time.monotonic()):
                    wait = (self._queue[0][0] - time.monotonic()
                            if self._queue else None)
                    self._qcond.wait(wait)
                if self._closing:
                    return
                _, _, sensor, data = heapq.heappop(self._queue)
            callback = sensor._callback
            if callback is not None and sensor.is_alive:
                callback(data)
            del data


class World:
    """``carla.World`` of a :class:`FakeServer`."""

    def __init__(self, server: FakeServer) -> None:
        self._server = server
        self.id = 1

    def get_settings(self) -> Any:
        """Return a copy of the settings."""
        self._server.check()
        return _copy_settings(self._server.settings)

    def apply_settings(self, world_settings: Any) -> int:
        """Apply settings; return the frame."""
        self._server.check()
        self._server.settings = _copy_settings(world_settings)
        self._server.settings_log.append(_copy_settings(world_settings))
        return self._server.frame

    def get_map(self) -> Any:
        """Return the map (its name only)."""
        self._server.check()
        return SimpleNamespace(name='Carla/Maps/' + self._server.map_name)

    def tick(self, seconds: float = 10.0) -> int:
        """Advance one frame (synchronous mode) and return its id."""
        return self._server.advance()

    def wait_for_tick(self, seconds: float = 10.0) -> WorldSnapshot:
        """Asynchronous mode: the free-running server makes one frame."""
        if self._server.settings.synchronous_mode:
            self._server.check()
            raise RuntimeError('time-out while waiting for the next tick '
                               '(synchronous mode: nobody ticks)')
        self._server.advance()
        return self.get_snapshot()

    def get_snapshot(self) -> WorldSnapshot:
        """Return the latest frame's snapshot."""
        self._server.check()
        s = self._server
        return WorldSnapshot(s.frame, s.elapsed,
                             s.settings.fixed_delta_seconds or 0.05)

    def get_blueprint_library(self) -> BlueprintLibrary:
        """Return the blueprint library."""
        self._server.check()
        return BlueprintLibrary(BLUEPRINTS)

    def spawn_actor(self, blueprint: ActorBlueprint, transform: Any,
                    attach_to: Optional[Actor] = None,
                    attachment_type: Any = None) -> Actor:
        """Spawn or raise RuntimeError."""
        return self._server.spawn(blueprint, transform, attach_to)

    def try_spawn_actor(self, blueprint: ActorBlueprint, transform: Any,
                        attach_to: Optional[Actor] = None,
                        attachment_type: Any = None) -> Optional[Actor]:
        """Spawn or return None."""
        try:
            return self._server.spawn(blueprint, transform, attach_to)
        except RuntimeError:
            self._server.check()
            return None

    def get_actors(self, actor_ids: Optional[List[int]] = None) -> ActorList:
        """Return the actors (optionally only these ids)."""
        self._server.check()
        actors = self._server.alive_actors()
        if actor_ids is not None:
            ids = set(actor_ids)
            actors = [a for a in actors if a.id in ids]
        return ActorList(actors)


class Client:
    """``carla.Client`` bound to the servers of a :class:`FakeCarla`."""

    _servers: Dict[Tuple[str, int], FakeServer] = {}

    def __init__(self, host: str, port: int, worker_threads: int = 0) -> None:
        self._host, self._port = host, port
        self._timeout = 10.0
        self._server = self._servers.get((host, int(port)))

    def _check(self) -> FakeServer:
        s = self._server
        if s is None or not s.reachable or not s.alive:
            raise RuntimeError(
                f'time-out of {int(self._timeout * 1000)}ms while waiting '
                'for the simulator, make sure the simulator is ready and '
                f'connected to {self._host}:{self._port}')
        return s

    def set_timeout(self, seconds: float) -> None:
        """Set the RPC timeout."""
        self._timeout = float(seconds)

    def get_world(self) -> World:
        """Return the server's world."""
        s = self._check()
        s.connections += 1
        return s.world

    def get_server_version(self) -> str:
        """Return the server version."""
        return self._check().version

    def get_client_version(self) -> str:
        """Return this client's version."""
        return CLIENT_VERSION

    def get_available_maps(self) -> List[str]:
        """Return the server's maps."""
        return ['/Game/Carla/Maps/' + m for m in self._check().maps]

    def load_world(self, map_name: str, reset_settings: bool = True) -> World:
        """Switch the map (every actor is gone)."""
        s = self._check()
        s.map_name = map_name.split('/')[-1]
        for i in list(s.actors):
            s.destroy(i)
        return s.world

    def apply_batch_sync(self, commands: List[Any], do_tick: bool = False
                         ) -> List[Response]:
        """Run SpawnActor/DestroyActor commands; one Response each."""
        s = self._check()
        out = []
        for cmd in commands:
            if isinstance(cmd, SpawnActor):
                parent = s.actors.get(cmd.parent_id) if cmd.parent_id else \
                    None
                try:
                    out.append(Response(s.spawn(cmd.blueprint, cmd.transform,
                                                parent).id))
                except RuntimeError as exc:
                    out.append(Response(0, str(exc)))
            elif isinstance(cmd, _carla.command.DestroyActor):
                ok = s.destroy(int(cmd.actor_id))
                out.append(Response(cmd.actor_id, '' if ok else
                                    f'actor {cmd.actor_id} not found'))
            else:
                out.append(Response(0, f'unsupported command {cmd!r}'))
        if do_tick:
            s.advance()
        return out

    def apply_batch(self, commands: List[Any]) -> None:
        """Run commands without responses."""
        self.apply_batch_sync(commands, False)


class FakeCarla:
    """A stand-in for the ``carla`` module, with its own servers."""

    Location = Location
    Rotation = Rotation
    Transform = Transform
    Vector3D = Vector3D
    VehicleControl = VehicleControl
    WorldSettings = WorldSettings
    BoundingBox = BoundingBox
    Timestamp = Timestamp
    VehicleWheelLocation = _carla.VehicleWheelLocation

    def __init__(self) -> None:
        servers: Dict[Tuple[str, int], FakeServer] = {}
        self.servers = servers
        self.Client = type('Client', (Client,), {'_servers': servers})
        self.command = SimpleNamespace(
            DestroyActor=_carla.command.DestroyActor, SpawnActor=SpawnActor,
            Response=Response)

    def add_server(self, host: str = 'localhost', port: int = 2000,
                   version: str = CLIENT_VERSION) -> FakeServer:
        """Start a fake server at host:port."""
        server = FakeServer(host, port, version)
        self.servers[(host, port)] = server
        return server

    def close(self) -> None:
        """Stop every server's delivery thread."""
        for server in self.servers.values():
            server.close()
