# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The world ``carla-hil serve`` simulates: actors, physics, sensors, ticks.

Internally everything is REP-103 (``map``: x forward, y left, z up;
metres, radians) on the built-in simulator's parts; the wire sees CARLA's
frame (:mod:`.ue`). The ground is the plane z = 0 of a built-in map
(:mod:`.maps`).

* Vehicles (``vehicle.*``) run :class:`hil_bridge.sim.vehicle_model.VehicleModel`
  (kinematic bicycle with actuator dynamics) with CARLA semantics: the
  road-wheel angle is ``steer x max_steer_angle`` of the front wheels
  (``get_physics_control().wheels``, 70 deg on the model3) times the
  steering curve at the current speed (km/h keys), read back by
  ``get_wheel_steer_angle``. A vehicle sits on the ground whatever z it is
  spawned at (it "falls" at once); ``set_target_velocity`` sets the speed
  along the heading (the bicycle has no side slip), ``enable_constant_
  velocity`` holds a local forward speed.
* Props (``static.prop.*``) have no physics, as in CARLA: they stay where
  they are spawned and a vehicle that touches one stops as at a post. The
  cone props are cones of the world (seen by lidar and cameras). A map's
  own cones (scenario tracks) are level geometry: a vehicle knocks them
  over (they vanish from the sensors) and drives on.
* Vehicles that touch each other both stop (restored to their pose before
  the contact); a contact needs a vehicle that moved in that frame.
  Spawning a vehicle onto another fails as in CARLA.
* Sensors: ``sensor.camera.rgb`` (:class:`hil_bridge.sim.camera.CameraRenderer`),
  ``sensor.lidar.ray_cast`` (:class:`hil_bridge.sim.lidar.RayCastLidar`),
  ``sensor.other.collision``, and the models of :mod:`.sensor_models`
  (depth and semantic segmentation cameras, semantic lidar, IMU, GNSS,
  radar, obstacle detector; the lane invasion detector is the client's
  own). They measure only while a client listens (a session on their
  stream, as CARLA's sensors tick only then) and when due by
  ``sensor_tick`` (the schedule of the built-in backend); a sensor's own
  vehicle is not in its view.

:meth:`World.tick` advances one frame and returns the stream messages of
that frame (sensor data first, then the world snapshot); the caller
publishes them. Not thread-safe: the server serialises calls with
``World.lock``.
"""

from concurrent.futures import ThreadPoolExecutor
import dataclasses
import math
import re
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import cv2
from hil_bridge.bridge.backend import VehicleControl
from hil_bridge.carla_server import blueprints as bpl
from hil_bridge.carla_server import maps as maplib
from hil_bridge.carla_server import sensor_data as sd
from hil_bridge.carla_server import sensor_models as sm
from hil_bridge.carla_server import ue
from hil_bridge.carla_server import wire_types as wt
from hil_bridge.interface.cones import cone_dimensions
from hil_bridge.interface.frames import Pose, pose_to_matrix
from hil_bridge.interface.rig import CAMERA_DEFAULTS, LIDAR_DEFAULTS, SensorSpec
from hil_bridge.interface.vehicle_profile import load_vehicle_profile, VehicleProfile
from hil_bridge.sim.referee import Box, boxes_overlap, cones_in_box
from hil_bridge.sim.vehicle_model import VehicleModel
from hil_bridge.sim.world import WorldGeometry
import numpy as np

#: Stream id of the episode (world snapshot) stream; sensors use their id.
EPISODE_STREAM = 1_000_000_000
SPECTATOR = 'spectator'
#: CityObjectLabel values of the semantic tags (0.9.16): Car, Static.
TAG_CAR = 14
TAG_STATIC = 20
#: Default nominal step (s) when no fixed delta is set (1 / --rate).
DEFAULT_RATE = 20.0
_EPS = 1e-9
WEATHER_DEFAULT = [0.0] * 12 + [0.0331, 0.0]


class WorldError(Exception):
    """A request the world refuses (answered as a CARLA Response error)."""


# ------------------------------------------------------------- vehicles
def _default_physics(f: bpl.VehicleFacts) -> list:
    """Return the VehiclePhysicsControl array (17 fields) of a vehicle."""
    def wheel(steer: float) -> list:
        return [3.5, 0.25, float(steer), f.wheel_radius, 1500.0, 3000.0, 3.0,
                20.0, 3000.0, wt.vec3(0.0, 0.0, 0.0)]
    gears = [[ratio, 0.15, 0.65] for ratio in (3.0, 1.8, 1.4, 1.0, 0.8)]
    return [[[0.0, 500.0], [5000.0, 500.0]], 5000.0, 1.0, 0.15, 2.0, 0.35,
            True, 0.5, 10.0, 4.0, gears, f.mass, 0.3,
            wt.vec3(0.0, 0.0, 0.0), [list(p) for p in f.steering_curve],
            [wheel(f.max_steer_angle), wheel(f.max_steer_angle), wheel(0.0),
             wheel(0.0)], False]


def _check_physics(pc: Any) -> list:
    """Validate a VehiclePhysicsControl from the client; return it."""
    if not isinstance(pc, (list, tuple)) or len(pc) < 16:
        raise WorldError('physics control: expected the 17 fields of '
                         'carla.VehiclePhysicsControl')
    pc = list(pc) + [False] * (17 - len(pc))
    wheels = pc[15]
    if not isinstance(wheels, (list, tuple)) or len(wheels) not in (0, 4):
        raise WorldError('physics control: wheels must be a list of 4 '
                         'carla.WheelPhysicsControl (or empty)')
    for i, w in enumerate(wheels):
        if not isinstance(w, (list, tuple)) or len(w) < 10:
            raise WorldError(f'physics control: wheel {i} has not the 10 '
                             'fields of carla.WheelPhysicsControl')
        wt.number(w[2], f'wheels[{i}].max_steer_angle')
    curve = pc[14]
    if not isinstance(curve, (list, tuple)):
        raise WorldError('physics control: steering_curve must be a list')
    for i, p in enumerate(curve):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise WorldError(f'physics control: steering_curve[{i}] is not '
                             'a carla.Vector2D')
        wt.number(p[0], f'steering_curve[{i}].x')
        wt.number(p[1], f'steering_curve[{i}].y')
    wt.number(pc[11], 'mass')
    return pc


class VehicleBody:
    """
    A vehicle's model, physics control and control (REP-103 inside).

    The actor origin is the bounding-box centre on the ground, half a
    wheelbase ahead of the model's rear axle.
    """

    def __init__(self, facts: bpl.VehicleFacts, origin: Tuple[float, float, float]
                 ) -> None:
        self.facts = facts
        base = load_vehicle_profile('passenger_car')
        ex, ey, ez = facts.extent
        self.physics = _default_physics(facts)
        self.profile: VehicleProfile = dataclasses.replace(
            base, name=facts.model, blueprint=f'vehicle.{facts.make}.{facts.model}',
            wheelbase=facts.wheelbase, length=2.0 * ex, width=2.0 * ey,
            height=2.0 * ez, rear_overhang=ex - facts.wheelbase / 2.0,
            mass=facts.mass, max_steer=math.radians(facts.max_steer_angle))
        x, y, yaw = origin
        self.model = VehicleModel(self.profile, self._rear(x, y, yaw))
        self.control = VehicleControl()
        self.manual_gear_shift = False
        self.gear = 0
        self.constant_speed: Optional[float] = None
        #: UE roll and pitch rates (deg/s) reported as set by
        #: set_target_angular_velocity (the bicycle model does not tilt)
        self.tilt_rate = (0.0, 0.0)
        self.simulate = True
        self.light_state = 0
        #: ``sticky_control`` false: a control lasts one tick (CARLA's meaning)
        self.sticky = True
        self.previous = self.model.state

    @property
    def offset(self) -> float:
        """Return the origin's distance ahead of the rear axle (m)."""
        return self.profile.box_offset

    def _rear(self, x: float, y: float, yaw: float) -> Pose:
        d = self.offset
        return Pose(x=x - d * math.cos(yaw), y=y - d * math.sin(yaw), yaw=yaw)

    def origin(self) -> Tuple[float, float, float]:
        """Return the actor origin ``(x, y, yaw)`` in ``map``."""
        st = self.model.state
        d = self.offset
        return st.x + d * math.cos(st.yaw), st.y + d * math.sin(st.yaw), st.yaw

    def teleport(self, x: float, y: float, yaw: float) -> None:
        """Move the origin to ``(x, y, yaw)`` keeping the speed."""
        r = self._rear(x, y, yaw)
        self.model.state = dataclasses.replace(self.model.state, x=r.x, y=r.y,
                                               yaw=r.yaw)

    def set_velocity(self, v_map: Sequence[float]) -> None:
        """Set the speed to ``v_map`` (m/s, map) along the heading."""
        yaw = self.model.state.yaw
        self.model.set_speed(v_map[0] * math.cos(yaw) + v_map[1] * math.sin(yaw))

    def apply_physics(self, pc: list) -> None:
        """Take a new physics control (max steer angle, curve, mass)."""
        self.physics = _check_physics(pc)
        angles = [abs(float(w[2])) for w in self.physics[15][:2]]
        steer = math.radians(max(angles)) if angles else self.profile.max_steer
        self.profile = dataclasses.replace(
            self.profile, max_steer=max(steer, 1e-6),
            mass=max(float(self.physics[11]), 1.0))
        self.model.profile = self.profile

    def curve_factor(self) -> float:
        """Return the steering curve's factor at the current speed (km/h)."""
        curve = sorted((float(p[0]), float(p[1])) for p in self.physics[14])
        if not curve:
            return 1.0
        kmh = abs(self.model.state.v) * 3.6
        xs, ys = zip(*curve)
        return float(np.interp(kmh, xs, ys))

    def step(self, dt: float) -> None:
        """Advance the model by ``dt`` with the current control."""
        self.previous = self.model.state
        if not self.simulate:
            return
        if self.constant_speed is not None:
            self.model.set_speed(self.constant_speed)
        c = self.control.clamped()
        self.model.apply_control(dataclasses.replace(
            c, steer=c.steer * self.curve_factor()))
        self.model.step(dt)
        if self.constant_speed is not None:
            self.model.set_speed(self.constant_speed)
        if not self.sticky:
            self.control = VehicleControl()

    def moved(self) -> bool:
        """Return True when the last step moved or turned the vehicle."""
        a, b = self.previous, self.model.state
        return abs(a.x - b.x) + abs(a.y - b.y) + abs(a.yaw - b.yaw) > 1e-9

    def stop_at_previous(self) -> None:
        """Undo the last step and stop (a contact)."""
        self.model.state = dataclasses.replace(self.previous, v=0.0,
                                               yaw_rate=0.0, ax=0.0, ay=0.0)

    def wheel_angle_deg(self, wheel: int) -> float:
        """
        Return a wheel's steer angle (deg, CARLA sign: > 0 turns right).

        Both front wheels report the bicycle's road-wheel angle (no
        Ackermann split); rear wheels 0.
        """
        if wheel not in (0, 1):
            return 0.0
        return -math.degrees(self.model.state.steer)

    def box(self, name: str = '') -> Box:
        """Return the footprint for contact checks."""
        x, y, yaw = self.origin()
        v = self.model.state.v
        return Box(x=x, y=y, yaw=yaw, length=self.profile.length,
                   width=self.profile.width, vx=v * math.cos(yaw),
                   vy=v * math.sin(yaw), name=name)


# -------------------------------------------------------------- sensors
#: the leading number UE's ``FCString::Atoi`` / ``Atof`` read ("64.0" is 64)
_LEADING_INT = re.compile(r'\s*[+-]?\d+')
_LEADING_FLOAT = re.compile(r'\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?')


def _numeric(bp: bpl.Blueprint, attrs: Dict[str, str], keys: Sequence[str]
             ) -> Dict[str, Any]:
    """
    Return the numeric attributes ``keys`` of a description.

    As CARLA's server reads them (``Atoi``/``Atof``: the leading number,
    so an Int attribute set to "64.0" is 64); text without a leading
    number is an error naming the attribute (CARLA would read 0).
    """
    out: Dict[str, Any] = {}
    for key in keys:
        a = bp.attribute(key)
        if a is None or key not in attrs:
            continue
        text = attrs[key]
        m = (_LEADING_INT if a.kind == wt.ATTR_INT else _LEADING_FLOAT).match(text)
        if m is None:
            raise WorldError(f'{bp.name}: attribute {key!r} = {text!r} is not '
                             'a number')
        out[key] = int(m.group(0)) if a.kind == wt.ATTR_INT else float(m.group(0))
    return out


class SensorBody:
    """A sensor's renderer, schedule, generator and stream counters."""

    def __init__(self, bp: bpl.Blueprint, attrs: Dict[str, str], seed: int
                 ) -> None:
        self.kind = bp.name
        self.tick = 0.0
        self.next_time = 0.0
        self.last_time: Optional[float] = None
        self.published = 0
        #: the stall fault knob: frame the stall began, resumed after it
        self.stalled_at: Optional[int] = None
        self.resumed = False
        self.rng = np.random.default_rng(seed)
        self.device: Any = None
        self.params: Dict[str, Any] = {}
        self.fov = 90.0
        if bp.name in (bpl.CAMERA_RGB, bpl.LIDAR):
            from hil_bridge.sim.sensors import make_sensor
            keys = [k for k in (CAMERA_DEFAULTS if bp.name == bpl.CAMERA_RGB
                                else LIDAR_DEFAULTS) if not k.startswith('sim_')]
            numbers = _numeric(bp, attrs, keys)
            try:
                self.device = make_sensor(SensorSpec(str(attrs.get('role_name', '')),
                                                     bp.name, Pose(), numbers))
            except ValueError as exc:
                raise WorldError(f'{bp.name}: {exc}') from None
            self.tick = float(self.device.sensor_tick)
            if bp.name == bpl.CAMERA_RGB:
                self.fov = float(self.device.spec.attributes['fov'])
        else:
            if 'sensor_tick' in attrs:
                self.tick = float(_numeric(bp, attrs, ['sensor_tick'])['sensor_tick'])
            if self.tick < 0.0:
                raise WorldError(f'{bp.name}: sensor_tick must be >= 0, got {self.tick}')
            self._other(bp, attrs)

    def _other(self, bp: bpl.Blueprint, attrs: Dict[str, str]) -> None:
        """Build the model of a sensor other than the RGB camera and the lidar."""
        floats = _numeric(bp, attrs, [a.name for a in bp.attributes
                                      if a.kind in (wt.ATTR_INT, wt.ATTR_FLOAT)])
        self.params = floats
        try:
            if bp.name in (bpl.CAMERA_DEPTH, bpl.CAMERA_SEMANTIC):
                self.fov = float(floats['fov'])
                self.device = sm.RayCamera(int(floats['image_size_x']),
                                           int(floats['image_size_y']), self.fov,
                                           semantic=bp.name == bpl.CAMERA_SEMANTIC)
            elif bp.name == bpl.LIDAR_SEMANTIC:
                from hil_bridge.sim.lidar import RayCastLidar
                self.device = RayCastLidar(dict(
                    floats, atmosphere_attenuation_rate=0.0, dropoff_general_rate=0.0,
                    dropoff_intensity_limit=1.0, dropoff_zero_intensity=0.0,
                    noise_stddev=0.0))
            elif bp.name == bpl.IMU:
                self.device = sm.Imu(floats)
            elif bp.name == bpl.RADAR:
                self.device = sm.Radar(floats)
            elif bp.name == bpl.OBSTACLE:
                self.params['only_dynamics'] = \
                    str(attrs.get('only_dynamics', 'false')).lower() == 'true'
                if floats['distance'] < 0.0 or floats['hit_radius'] < 0.0:
                    raise ValueError('distance and hit_radius must be >= 0')
        except (KeyError, ValueError) as exc:
            raise WorldError(f'{bp.name}: {exc}') from None

    def due(self, t: float) -> bool:
        """Return True when the sensor measures at time ``t`` (s)."""
        return self.last_time is None or t >= self.next_time - _EPS

    def advance(self, t: float) -> float:
        """Mark a measurement at ``t``; return the time since the last one."""
        since = 0.0 if self.last_time is None else t - self.last_time
        if self.tick > 0.0:
            if self.last_time is None:
                self.next_time = t
            while self.next_time <= t + _EPS:
                self.next_time += self.tick
        self.last_time = t
        return since


# --------------------------------------------------------------- actors
@dataclasses.dataclass
class Actor:
    """
    One actor of the episode.

    ``T`` is the REP-103 pose in ``map`` of props, the spectator and
    detached sensors; ``rel`` the pose relative to the parent's origin of
    attached ones; vehicles keep theirs in ``vehicle``.
    """

    aid: int
    blueprint: bpl.Blueprint
    attributes: Dict[str, str]
    parent: int = 0
    T: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(4))
    rel: Optional[np.ndarray] = None
    vehicle: Optional[VehicleBody] = None
    sensor: Optional[SensorBody] = None
    cone_class: Optional[int] = None

    @property
    def type_id(self) -> str:
        """Return the blueprint id (CARLA's ``type_id``)."""
        return self.blueprint.name

    def extent(self) -> Tuple[Tuple[float, float, float], Tuple[float, float, float]]:
        """Return (box centre offset, half extent) in CARLA's frame (m)."""
        if self.vehicle is not None:
            f = self.vehicle.facts
            return (0.0, 0.0, f.box_z), f.extent
        if self.cone_class is not None:
            e = bpl.cone_extent(self.cone_class)
            return (0.0, 0.0, e[2]), e
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)


def _color_bgr(text: str) -> Tuple[int, int, int]:
    try:
        r, g, b = (int(v) for v in text.split(','))
        return b, g, r
    except ValueError:
        return 200, 200, 200


class World:
    """
    The episode: settings, actors, map, frame counter and tick.

    ``port`` is the streaming port the tokens name; ``rate`` (Hz) the
    nominal step without a fixed delta; ``seed`` seeds the sensors' noise;
    ``fs_cones`` adds the Formula Student cone extension to the library;
    ``stall_after`` / ``stall_role`` stop a sensor stream after that many
    messages (fault injection; None = never), ``stall_frames`` for that
    many frames only (None = for good); ``corrupt_role``: that sensor's
    images carry a width one more than their pixels.
    """

    def __init__(self, port: int, rate: float = DEFAULT_RATE, seed: int = 0,
                 map_name: str = maplib.FLAT, fs_cones: bool = False,
                 stall_after: Optional[int] = None, stall_role: str = '',
                 stall_frames: Optional[int] = None, corrupt_role: str = '',
                 render_threads: int = 2) -> None:
        self.lock = threading.RLock()
        self.port = int(port)
        self.rate = float(rate)
        self.seed = int(seed)
        self.library = {bp.name: bp for bp in bpl.library(fs_cones)}
        self.definitions = bpl.definitions(list(self.library.values()))
        self.stall_after = stall_after
        self.stall_role = stall_role
        self.stall_frames = stall_frames
        self.corrupt_role = corrupt_role
        self.settings: Dict[str, Any] = dict(wt.DEFAULT_SETTINGS)
        self.weather = list(WEATHER_DEFAULT)
        #: the IMU's gravity (m/s^2; ``get/set_imui_gravity``)
        self.gravity = 9.81
        self.episode_id = 0
        self._next_id = 1        # actor ids never repeat, not even across episodes
        self.pool = ThreadPoolExecutor(max(1, int(render_threads)),
                                       thread_name_prefix='render')
        self.load_map(map_name)

    # ----------------------------------------------------------- episode
    def load_map(self, name: str, reset_settings: bool = True) -> None:
        """
        Start a new episode on a built-in map (every actor destroyed).

        Raises ``WorldError`` for an unknown map.
        """
        try:
            new_map = maplib.load(name)
        except KeyError as exc:
            raise WorldError(str(exc.args[0])) from None
        except (OSError, ValueError) as exc:
            raise WorldError(f'map {name!r}: {exc}') from None
        for old in getattr(self, 'actors', {}).values():
            if old.sensor is not None:
                self.on_destroy(old.aid)
        self.map = new_map
        self.map_cones_up = np.ones(len(new_map.cones), bool)
        self.episode_id += 1
        self.frame = 0
        self.time = 0.0
        self.last_delta = 0.0
        self.actors: Dict[int, Actor] = {}
        self._static: Optional[np.ndarray] = None
        if reset_settings:
            self.settings = dict(wt.DEFAULT_SETTINGS)
        spectator = bpl.Blueprint(SPECTATOR, bpl._common())
        self.spectator = self._add(spectator, {'role_name': ''})
        self.spectator.T = pose_to_matrix(0.0, 0.0, 10.0)

    def _add(self, bp: bpl.Blueprint, attrs: Dict[str, str]) -> Actor:
        actor = Actor(aid=self._next_id, blueprint=bp, attributes=attrs)
        self._next_id += 1
        self.actors[actor.aid] = actor
        self._static = None
        return actor

    @property
    def delta(self) -> float:
        """Return the step (s): the fixed delta, or 1 / rate."""
        fixed = self.settings.get('fixed_delta_seconds')
        return float(fixed) if fixed else 1.0 / self.rate

    # ------------------------------------------------------------ actors
    def actor(self, actor_id: Any) -> Actor:
        """Return the actor ``actor_id`` or raise ``WorldError``."""
        aid = wt.integer(actor_id, 'actor id')
        a = self.actors.get(aid)
        if a is None:
            raise WorldError(f'unable to find actor {aid}: not found')
        return a

    def vehicle(self, actor_id: Any) -> Actor:
        """Return the vehicle ``actor_id`` or raise ``WorldError``."""
        a = self.actor(actor_id)
        if a.vehicle is None:
            raise WorldError(f'actor {a.aid} ({a.type_id}) is not a vehicle')
        return a

    def spawn(self, bp_id: str, attrs: Dict[str, str],
              transform: Tuple[Sequence[float], Sequence[float]],
              parent: int = 0) -> Actor:
        """
        Spawn an actor (``transform`` in CARLA's frame, relative to ``parent``).

        Raises ``WorldError`` for an unknown blueprint or parent, a bad
        attribute, or a vehicle spawned onto another vehicle.
        """
        bp = self.library.get(bp_id)
        if bp is None:
            raise WorldError(f'actor blueprint {bp_id!r} not found (carla-hil '
                             'serve offers: ' + ', '.join(sorted(self.library))
                             + ')')
        values = bp.defaults()
        for key, value in attrs.items():
            a = bp.attribute(key)
            if a is None:
                raise WorldError(f'{bp_id}: no attribute {key!r}')
            if a.restricted and value not in a.recommended:
                raise WorldError(f'{bp_id}: attribute {key!r} = {value!r} is not '
                                 f'one of {list(a.recommended)}')
            values[key] = value
        if parent and parent not in self.actors:
            raise WorldError(f'spawn {bp_id}: parent actor {parent} not found')
        T = ue.ue_to_matrix(*transform)
        sensor = None
        if bp_id.startswith('sensor.'):
            seed = int(_numeric(bp, values, ['noise_seed']).get('noise_seed', 0))
            sensor = SensorBody(bp, values, seed if seed else
                                self.seed * 1000003 + self._next_id)
        if bp_id.startswith('vehicle.'):
            facts = bpl.VEHICLES[bp_id]
            if parent:
                T = self.world_matrix(self.actors[parent]) @ T
            yaw = math.atan2(T[1, 0], T[0, 0])
            body = VehicleBody(facts, (float(T[0, 3]), float(T[1, 3]), yaw))
            body.sticky = values.get('sticky_control', 'true').lower() != 'false'
            me = body.box()
            for other in self.actors.values():
                if other.vehicle is not None and boxes_overlap(me, other.vehicle.box()):
                    raise WorldError('Spawn failed because of collision at '
                                     'spawn position')
            actor = self._add(bp, values)
            actor.vehicle = body
            return actor
        actor = self._add(bp, values)
        actor.parent = int(parent)
        actor.sensor = sensor
        actor.cone_class = bpl.cone_class(bp_id)
        if parent:
            actor.rel = T
        else:
            actor.T = T
        return actor

    def destroy(self, actor_id: Any) -> None:
        """Destroy an actor; its children stay where they are, detached."""
        a = self.actor(actor_id)
        if a is self.spectator:
            raise WorldError('the spectator cannot be destroyed')
        for child in self.actors.values():
            if child.parent == a.aid:
                child.T = self.world_matrix(child)
                child.parent = 0
                child.rel = None
        del self.actors[a.aid]
        self._static = None
        if a.sensor is not None:
            self.on_destroy(a.aid)

    def world_matrix(self, a: Actor) -> np.ndarray:
        """Return the REP-103 pose matrix of an actor in ``map``."""
        if a.vehicle is not None:
            x, y, yaw = a.vehicle.origin()
            return pose_to_matrix(x, y, 0.0, 0.0, 0.0, yaw)
        if a.parent and a.rel is not None and a.parent in self.actors:
            return self.world_matrix(self.actors[a.parent]) @ a.rel
        return a.T

    def set_transform(self, a: Actor, transform: Tuple[Sequence[float],
                                                       Sequence[float]]) -> None:
        """Move an actor (``transform`` in CARLA's world frame)."""
        T = ue.ue_to_matrix(*transform)
        self._static = None
        if a.vehicle is not None:
            a.vehicle.teleport(float(T[0, 3]), float(T[1, 3]),
                               math.atan2(T[1, 0], T[0, 0]))
        elif a.parent and a.parent in self.actors:
            a.rel = np.linalg.inv(self.world_matrix(self.actors[a.parent])) @ T
        else:
            a.T = T

    def set_location(self, a: Actor, loc: Sequence[float]) -> None:
        """Move an actor keeping its rotation (``loc`` in CARLA's frame)."""
        (_, rot) = ue.matrix_to_ue(self.world_matrix(a))
        self.set_transform(a, (loc, rot))

    def velocity(self, a: Actor) -> np.ndarray:
        """Return an actor's velocity in ``map`` (m/s)."""
        if a.vehicle is None:
            if a.parent in self.actors:
                return self.velocity(self.actors[a.parent])
            return np.zeros(3)
        st = a.vehicle.model.state
        return np.array([st.v * math.cos(st.yaw), st.v * math.sin(st.yaw), 0.0])

    # -------------------------------------------------------------- wire
    def rpc_actor(self, a: Actor) -> list:
        """Return the rpc::Actor array of an actor."""
        loc, ext = a.extent()
        types = {attr.name: attr.kind for attr in a.blueprint.attributes}
        attrs = [[k, types.get(k, wt.ATTR_STRING), str(v)]
                 for k, v in a.attributes.items()]
        if a.vehicle is not None:
            tags = bytes([TAG_CAR])
        elif a.type_id.startswith('static.'):
            tags = bytes([TAG_STATIC])
        else:
            tags = b''
        token = wt.token_bytes(a.aid, self.port) if a.sensor is not None else b''
        return [a.aid, a.parent, [0, a.type_id, attrs],
                wt.bounding_box(loc, ext, a.aid), tags, token]

    def bounding_box(self, a: Actor) -> list:
        """Return the BoundingBox of an actor (relative to its origin)."""
        loc, ext = a.extent()
        return wt.bounding_box(loc, ext, a.aid)

    def _static_states(self) -> np.ndarray:
        """Return the records of the actors that do not move by themselves."""
        if self._static is None:
            still = [a for a in self.actors.values()
                     if a.vehicle is None and not (a.parent and a.parent in self.actors)]
            self._static = self._records(still)
        return self._static

    def _states(self) -> np.ndarray:
        moving = [a for a in self.actors.values()
                  if a.vehicle is not None or (a.parent and a.parent in self.actors)]
        return np.concatenate([self._static_states(), self._records(moving)])

    def _records(self, actors: List[Actor]) -> np.ndarray:
        recs = np.zeros(len(actors), sd.ACTOR_STATE)
        for i, a in enumerate(actors):
            T = self.world_matrix(a)
            (loc, rot) = ue.matrix_to_ue(T)
            recs[i]['id'] = a.aid
            recs[i]['state'] = sd.ACTOR_ACTIVE
            recs[i]['transform'] = loc + rot
            v = self.velocity(a)
            recs[i]['velocity'] = ue.point_to_ue(v)
            if a.vehicle is not None:
                st = a.vehicle.model.state
                c, s = math.cos(st.yaw), math.sin(st.yaw)
                w_ue = ue.angular_velocity_to_ue((0.0, 0.0, st.yaw_rate))
                recs[i]['angular_velocity'] = a.vehicle.tilt_rate + w_ue[2:]
                recs[i]['acceleration'] = ue.point_to_ue(
                    (st.ax * c - st.ay * s, st.ax * s + st.ay * c, 0.0))
                ctl = a.vehicle.control
                u = recs[i]['vehicle']
                u['throttle'], u['steer'], u['brake'] = (ctl.throttle, ctl.steer,
                                                         ctl.brake)
                u['hand_brake'], u['reverse'] = ctl.hand_brake, ctl.reverse
                u['manual_gear_shift'] = a.vehicle.manual_gear_shift
                u['gear'] = a.vehicle.gear
        return recs

    def snapshot(self) -> bytes:
        """Return the world-snapshot message of the current frame."""
        return sd.episode_state(self.frame, self.time, self.episode_id,
                                time.monotonic(), self.last_delta, self._states())

    def sensor_header(self, a: Actor, type_index: int) -> bytes:
        """Return the 48-byte header of a sensor message of this frame."""
        loc, rot = ue.matrix_to_ue(self.world_matrix(a))
        return sd.sensor_header(type_index, self.frame, self.time, loc + rot)

    # -------------------------------------------------------------- tick
    def geometry(self, exclude: int = 0) -> WorldGeometry:
        """Return what the sensors see (standing cones, vehicles but ``exclude``)."""
        return self.scene(exclude).geometry

    def scene(self, exclude: int = 0) -> sm.Scene:
        """Return :meth:`geometry` with the actor ids and velocities of its parts."""
        up = np.flatnonzero(self.map_cones_up)
        xy = [self.map.cones.xy[up]]
        cls = [self.map.cones.class_id[up]]
        cone_ids = [np.zeros(len(up), np.int64)]
        centers, yaws, sizes, colors, box_ids, box_v = [], [], [], [], [], []
        for a in self.actors.values():
            if a.cone_class is not None:
                T = self.world_matrix(a)
                xy.append(T[:2, 3][None, :])
                cls.append(np.array([a.cone_class], np.uint8))
                cone_ids.append(np.array([a.aid], np.int64))
            elif a.vehicle is not None and a.aid != exclude:
                x, y, yaw = a.vehicle.origin()
                p = a.vehicle.profile
                centers.append((x, y, p.height / 2.0))
                yaws.append(yaw)
                sizes.append((p.length, p.width, p.height))
                colors.append(_color_bgr(a.attributes.get('color', '')))
                box_ids.append(a.aid)
                box_v.append(self.velocity(a))
        cone_xy = np.concatenate(xy).reshape(-1, 2)
        geo = WorldGeometry(
            cone_xy=cone_xy, cone_class=np.concatenate(cls).astype(np.uint8),
            cone_up=np.ones(len(cone_xy), bool),
            box_center=np.array(centers, float).reshape(-1, 3),
            box_yaw=np.array(yaws, float), box_size=np.array(sizes, float).reshape(-1, 3),
            box_color=np.array(colors, np.uint8).reshape(-1, 3))
        return sm.Scene(geo, np.concatenate(cone_ids), np.array(box_ids, np.int64),
                        np.array(box_v, float).reshape(-1, 3))

    def _contacts(self) -> List[Tuple[Actor, Optional[Actor], str, np.ndarray]]:
        """
        Detect contacts after a step; stop vehicles; return the events.

        Only a vehicle that moved in this step makes contact (a parked car
        next to a cone or another parked car reports nothing).
        """
        events: List[Tuple[Actor, Optional[Actor], str, np.ndarray]] = []
        vehicles = [a for a in self.actors.values() if a.vehicle is not None]
        moved = {a.aid for a in vehicles if a.vehicle.moved()}
        props = [a for a in self.actors.values() if a.cone_class is not None]
        if props:
            pxy = np.array([self.world_matrix(p)[:2, 3] for p in props])
            p_radius, _, _ = cone_dimensions(np.array([p.cone_class for p in props]))
        stopped = set()
        for i, a in enumerate(vehicles):
            box = a.vehicle.box(a.type_id)
            for b in vehicles[i + 1:]:
                if (a.aid in moved or b.aid in moved) and \
                        boxes_overlap(box, b.vehicle.box()):
                    events.append((a, b, '', np.zeros(3)))
                    events.append((b, a, '', np.zeros(3)))
                    stopped.update((a.aid, b.aid))
            if a.aid not in moved:
                continue
            if props:
                for k in np.flatnonzero(cones_in_box(box, pxy, p_radius)):
                    events.append((a, props[k], '', np.zeros(3)))
                    stopped.add(a.aid)
            if len(self.map.cones):
                up = np.flatnonzero(self.map_cones_up)
                radius, _, _ = cone_dimensions(self.map.cones.class_id[up])
                for k in up[cones_in_box(box, self.map.cones.xy[up], radius)]:
                    self.map_cones_up[k] = False
                    name = bpl.FS_CONE_NAMES.get(int(self.map.cones.class_id[k]),
                                                 bpl.FS_CONE_UNKNOWN)
                    events.append((a, None, name, np.zeros(3)))
        for a in vehicles:
            if a.aid in stopped:
                v = self.velocity(a)
                a.vehicle.stop_at_previous()
                for ev in events:
                    if ev[0] is a:
                        ev[3][:] = -a.vehicle.profile.mass * np.array(ue.point_to_ue(v))
        return events

    def tick(self, dt: Optional[float] = None) -> List[Tuple[int, list]]:
        """
        Advance one frame; return ``[(stream id, message parts)]``.

        ``dt`` defaults to :attr:`delta`. ``listening(stream_id)`` on the
        ``listeners`` callback decides which sensors measure.
        """
        step = self.delta if dt is None else float(dt)
        if not (step > 0.0 and math.isfinite(step)):
            raise WorldError(f'tick: step must be > 0, got {step}')
        self.frame += 1
        self.time = round(self.time + step, 9)
        self.last_delta = step
        for a in self.actors.values():
            if a.vehicle is not None:
                a.vehicle.step(step)
        events = self._contacts()
        messages = self._measure(events)
        messages.append((EPISODE_STREAM, [self.snapshot()]))
        return messages

    #: Callbacks the server replaces: does a stream have listeners; a
    #: sensor was destroyed (close its stream).
    listening = staticmethod(lambda stream_id: True)
    on_destroy = staticmethod(lambda stream_id: None)

    def _stalled(self, a: Actor) -> bool:
        """Return True while the stall fault knob silences a sensor's stream."""
        if self.stall_after is None:
            return False
        if self.stall_role and a.attributes.get('role_name') != self.stall_role:
            return False
        s = a.sensor
        if s.published < self.stall_after or s.resumed:
            return False
        if s.stalled_at is None:
            s.stalled_at = self.frame
        if self.stall_frames is not None and self.frame - s.stalled_at >= self.stall_frames:
            s.resumed = True                 # delivers again, for good
            return False
        return True

    def _corrupt(self, a: Actor) -> bool:
        """Return True when the corrupt fault knob mangles this sensor's images."""
        return bool(self.corrupt_role) and a.attributes.get('role_name') == self.corrupt_role

    #: the registry index each sensor's messages carry
    TYPE_INDEX = {bpl.CAMERA_RGB: sd.TYPE_CAMERA_RGB, bpl.CAMERA_DEPTH: sd.TYPE_DEPTH,
                  bpl.CAMERA_SEMANTIC: sd.TYPE_SEMANTIC, bpl.LIDAR: sd.TYPE_LIDAR,
                  bpl.LIDAR_SEMANTIC: sd.TYPE_SEMANTIC_LIDAR, bpl.IMU: sd.TYPE_IMU,
                  bpl.GNSS: sd.TYPE_GNSS, bpl.RADAR: sd.TYPE_RADAR,
                  bpl.OBSTACLE: sd.TYPE_OBSTACLE}
    CAMERAS = (bpl.CAMERA_RGB, bpl.CAMERA_DEPTH, bpl.CAMERA_SEMANTIC)
    #: sensors measured in the render pool (the rest is cheap)
    RENDERED = CAMERAS + (bpl.LIDAR, bpl.LIDAR_SEMANTIC, bpl.RADAR)

    def level_actor(self, type_id: str, tag: int) -> list:
        """Return the rpc::Actor of level geometry (id 0: no actor), e.g. the ground."""
        return [0, 0, [0, type_id, []], wt.bounding_box((0, 0, 0), (0, 0, 0)),
                bytes([tag]), b'']

    def _measure(self, events: list) -> List[Tuple[int, list]]:
        out: List[Tuple[int, list]] = []
        jobs = []
        scenes: Dict[int, sm.Scene] = {}
        for a in self.actors.values():
            s = a.sensor
            if s is None or not self.listening(a.aid) or self._stalled(a):
                continue
            if s.kind == bpl.COLLISION:
                for me, other, other_bp, impulse in events:
                    if me.aid != a.parent:
                        continue
                    other_wire = self.rpc_actor(other) if other is not None else \
                        self.level_actor(other_bp, TAG_STATIC)
                    body = sd.actor_event_payload(self.rpc_actor(me), other_wire,
                                                  wt.vec3(*impulse))
                    out.append((a.aid, [self.sensor_header(a, sd.TYPE_COLLISION), body]))
                    s.published += 1
                continue
            if s.kind == bpl.LANE_INVASION or not s.due(self.time):
                continue                   # lane invasion: computed by the client
            if s.kind in self.CAMERAS and self.settings.get('no_rendering_mode'):
                continue
            since = s.advance(self.time) or self.last_delta
            if a.parent not in scenes:
                scenes[a.parent] = self.scene(exclude=a.parent)
            pose = self.world_matrix(a)
            header = self.sensor_header(a, self.TYPE_INDEX[s.kind])
            if s.kind in self.RENDERED:
                jobs.append((a, header, self.pool.submit(
                    self._render, a, scenes[a.parent], pose, since)))
                continue
            body = self._sense(a, scenes[a.parent], pose, since)
            if body is not None:
                out.append((a.aid, [header, body]))
                s.published += 1
        for a, header, job in jobs:
            out.append((a.aid, [header, job.result()]))
            a.sensor.published += 1
        return out

    def _sense(self, a: Actor, scene: sm.Scene, pose: np.ndarray, since: float
               ) -> Optional[bytes]:
        """Measure an IMU, GNSS or obstacle detector; None when it sends nothing."""
        s = a.sensor
        if s.kind == bpl.GNSS:
            return sd.gnss_payload(*sm.gnss(self.map.geo_reference,
                                            ue.point_to_ue(pose[:3, 3]), s.params, s.rng))
        if s.kind == bpl.IMU:
            parent = self.actors.get(a.parent) if a.parent else None
            omega = np.zeros(3)
            velocity = np.zeros(3)
            if parent is not None and parent.vehicle is not None:
                st = parent.vehicle.model.state
                tx, ty = parent.vehicle.tilt_rate
                Tp = self.world_matrix(parent)
                w_world = np.array([-math.radians(tx), math.radians(ty), st.yaw_rate])
                omega = Tp[:3, :3].T @ w_world
                rear = np.array([st.x, st.y, 0.0])
                velocity = self.velocity(parent) + np.cross(w_world, pose[:3, 3] - rear)
            mount = a.rel[:3, :3] if parent is not None and a.rel is not None else None
            acc, gyro, heading = s.device.measure(pose, velocity, mount, omega, since,
                                                  self.gravity, s.rng)
            return sd.imu_payload(acc, gyro, heading)
        if s.kind == bpl.OBSTACLE:
            hit = sm.obstacle(scene, pose, s.params['distance'], s.params['hit_radius'],
                              s.params['only_dynamics'])
            if hit is None:
                return None
            kind, index, distance = hit
            if kind == 'box':
                other = self.rpc_actor(self.actors[int(scene.box_ids[index])])
            elif kind == 'cone' and scene.cone_ids[index]:
                other = self.rpc_actor(self.actors[int(scene.cone_ids[index])])
            elif kind == 'cone':
                cls = int(scene.geometry.cone_class[index])
                other = self.level_actor(bpl.FS_CONE_NAMES.get(cls, bpl.FS_CONE_UNKNOWN),
                                         TAG_STATIC)
            else:
                other = self.level_actor('static.road', sm.TAG_ROADS)
            return sd.actor_event_payload(self.rpc_actor(a), other, float(distance))
        return None

    def _render(self, a: Actor, scene: sm.Scene, pose: np.ndarray,
                since: float) -> Any:
        s = a.sensor
        if s.kind == bpl.CAMERA_RGB:
            img = s.device.measure(scene.geometry, pose, self.time, since, s.rng)
            h, w = img.shape[:2]
            buf = np.empty(12 + h * w * 4, np.uint8)
            buf[:12] = np.frombuffer(np.array([w + self._corrupt(a), h], '<u4').tobytes()
                                     + np.array([s.fov], '<f4').tobytes(), np.uint8)
            cv2.cvtColor(img, cv2.COLOR_BGR2BGRA, dst=buf[12:].reshape(h, w, 4))
            return memoryview(buf)
        if s.kind in self.CAMERAS:
            bgra = s.device.render(scene, pose)
            h, w = bgra.shape[:2]
            return np.array([w + self._corrupt(a), h], '<u4').tobytes() + \
                np.array([s.fov], '<f4').tobytes() + bgra.tobytes()
        if s.kind == bpl.RADAR:
            return sd.radar_payload(s.device.measure(scene, pose, since, s.rng))
        if s.kind == bpl.LIDAR_SEMANTIC:
            lidar = s.device
            dirs = lidar.directions(since)
            chan = np.repeat(np.arange(lidar.channels), dirs.shape[1])
            recs, counts = sm.semantic_lidar(scene, pose, dirs.reshape(-1, 3), chan,
                                             lidar.channels, lidar.range)
            return sd.semantic_lidar_payload(recs, counts, math.radians(lidar.phase_deg))
        lidar = s.device.lidar
        pts = s.device.measure(scene.geometry, pose, self.time, since, s.rng)
        return sd.lidar_payload(ue.points_to_ue(pts), lidar.last_points_per_channel,
                                math.radians(lidar.phase_deg))
