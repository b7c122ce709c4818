# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The built-in simulator as a :class:`hil_bridge.bridge.backend.Backend` (no rclpy).

World: the scenario's track cones, the ego on a
:class:`hil_bridge.sim.vehicle_model.VehicleModel`, scripted actors
(:mod:`hil_bridge.sim.actors`) and a :class:`hil_bridge.sim.referee.Referee`.
Sensors come from :func:`hil_bridge.sim.sensors.make_sensor`; each step the
backend builds a :class:`hil_bridge.sim.world.WorldGeometry` of the standing
cones and the other actors' boxes (never the ego's own box) and measures
every sensor that is due by its ``sensor_tick`` (0 = every step), passing
the time since its last measurement as ``dt`` (a lidar then casts
``points_per_second * dt`` rays, as CARLA does).

Everything is REP-103 (``map``; metres, radians, seconds). Synchronous
only; deterministic for a given ``seed`` (each sensor draws from its own
generator spawned from the seed). On a collision with another actor the
ego stops (the referee ends the mission as DNF).
"""

import dataclasses
import math
from typing import Any, Callable, Dict, List, Optional

from hil_bridge.bridge.backend import (ActorState, Backend, BackendError, Frame, SensorReading,
                                       VehicleControl)
from hil_bridge.interface.frames import yaw_matrix
from hil_bridge.interface.rig import SensorSpec
from hil_bridge.interface.track import ConeArray
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.actors import ScriptedActor
from hil_bridge.sim.referee import Box, Referee, RefereeResult
from hil_bridge.sim.vehicle_model import VehicleModel
from hil_bridge.sim.world import WorldGeometry
import numpy as np

CAMERA = 'sensor.camera.rgb'
LIDAR = 'sensor.lidar.ray_cast'
#: BGR colours of the actor boxes (cycled).
BOX_COLOURS = np.array([[60, 60, 200], [200, 200, 200], [40, 40, 40],
                        [180, 120, 40]], dtype=np.uint8)
_EPS = 1e-9


def _default_factory() -> Callable[[SensorSpec], Any]:
    from hil_bridge.sim.sensors import make_sensor
    return make_sensor


class _SensorSlot:
    """A sensor plus its schedule and random generator."""

    def __init__(self, spec: SensorSpec, sensor: Any,
                 rng: np.random.Generator) -> None:
        self.spec = spec
        self.sensor = sensor
        self.rng = rng
        self.tick = float(getattr(sensor, 'sensor_tick',
                                  spec.attributes.get('sensor_tick', 0.0)))
        mount = getattr(sensor, 'mount_matrix', None)
        if mount is None:
            from hil_bridge.interface.frames import pose_to_matrix
            mount = pose_to_matrix(spec.mount)
        self.mount = np.asarray(mount, dtype=np.float64)
        self.next_time = 0.0
        self.last_time: Optional[float] = None


class BuiltinBackend(Backend):
    """
    The deterministic built-in simulator.

    ``seed`` seeds every random draw (sensor noise); ``render_cameras``
    False skips the cameras (fast runs); ``camera_noise_stddev`` (> 0)
    overrides the cameras' pixel noise (``sim_noise_stddev``, 8-bit
    levels); ``lidar_noise_stddev`` (not None) overrides the lidars'
    ``noise_stddev`` (m). ``random_lighting`` draws one daylight variation
    (brightness, tint, sun direction) from the seed for all cameras of the
    run (``hil_bridge.sim.camera.Lighting.random``). ``sensor_factory``
    replaces ``hil_bridge.sim.sensors.make_sensor`` (tests).
    """

    synchronous = True

    def __init__(self, seed: int = 0, render_cameras: bool = True,
                 camera_noise_stddev: float = 0.0,
                 lidar_noise_stddev: Optional[float] = None,
                 sensor_factory: Optional[Callable[[SensorSpec], Any]] = None,
                 random_lighting: bool = False) -> None:
        if not (math.isfinite(camera_noise_stddev)
                and camera_noise_stddev >= 0.0):
            raise ValueError('camera_noise_stddev must be finite and >= 0')
        if lidar_noise_stddev is not None and not (
                math.isfinite(lidar_noise_stddev) and lidar_noise_stddev >= 0):
            raise ValueError('lidar_noise_stddev must be finite and >= 0')
        self.seed = int(seed)
        self.render_cameras = bool(render_cameras)
        self.camera_noise_stddev = float(camera_noise_stddev)
        self.lidar_noise_stddev = lidar_noise_stddev
        self._factory = sensor_factory
        self.random_lighting = bool(random_lighting)
        self._ready = False
        self.scenario: Any = None
        self.frame: Optional[Frame] = None

    # ----------------------------------------------------------- set-up
    def setup(self, scenario: Any, rig: List[SensorSpec]) -> Frame:
        """
        Build the world of ``scenario`` with the sensors of ``rig``.

        Returns frame 0 (t = 0; sensors measured at t = 0). Raises
        ``BackendError`` when a sensor or the scenario cannot be built.
        """
        self.teardown()
        self.scenario = scenario
        try:
            profile = load_vehicle_profile(scenario.ego.profile)
        except (OSError, ValueError) as exc:
            raise BackendError(f'ego profile: {exc}') from exc
        self.profile = profile
        self.ego = VehicleModel(profile, scenario.ego.pose,
                                scenario.ego.initial_speed)
        self.ego_role = scenario.ego.role_name
        track = scenario.track
        if track is not None:
            c = track.cones
            self.cones = ConeArray(xy=np.array(c.xy, dtype=np.float64),
                                   class_id=np.array(c.class_id, np.uint8),
                                   knocked=np.zeros(len(c), dtype=bool))
        else:
            self.cones = ConeArray()
        self.actors: List[ScriptedActor] = []
        for spec in scenario.actors:
            offset = 0.0
            if spec.profile:
                offset = load_vehicle_profile(spec.profile).box_offset
            self.actors.append(ScriptedActor(
                spec.role_name, spec.pose, spec.size, spec.behaviour,
                spec.initial_speed, box_offset=offset,
                centerline=None if track is None else track.centerline,
                closed=False if track is None else track.closed))
        from hil_bridge.sim.reference_lap import run_reference
        self.referee = Referee(scenario.mission, self.cones, track,
                               laps=scenario.laps, timeout=scenario.timeout,
                               wheelbase=profile.wheelbase,
                               track_width=profile.track_width,
                               reference_lap_times=run_reference(
                                   scenario.mission, track, profile,
                                   scenario.laps))
        self.world = WorldGeometry(
            cone_xy=self.cones.xy, cone_class=self.cones.class_id,
            cone_up=~self.cones.knocked,
            box_center=np.zeros((len(self.actors), 3)),
            box_yaw=np.zeros(len(self.actors)),
            box_size=np.array([a.size for a in self.actors]).reshape(-1, 3),
            box_color=BOX_COLOURS[np.arange(len(self.actors))
                                  % len(BOX_COLOURS)].reshape(-1, 3))
        self._build_sensors(rig)
        self.time = 0.0
        self.frame_number = 0
        self.control = VehicleControl()
        self._ready = True
        self._update_boxes()
        self.frame = self._make_frame([], measure_all=True, dt=0.0)
        return self.frame

    def _build_sensors(self, rig: List[SensorSpec]) -> None:
        factory = self._factory or _default_factory()
        seqs = np.random.SeedSequence(self.seed).spawn(max(len(rig), 1))
        self.sensors: List[_SensorSlot] = []
        ids = set()
        for spec, seq in zip(rig, seqs):
            if spec.sensor_id in ids:
                raise BackendError(f'duplicate sensor id {spec.sensor_id!r}')
            ids.add(spec.sensor_id)
            if spec.blueprint == CAMERA and not self.render_cameras:
                continue
            attrs = dict(spec.attributes)
            if spec.blueprint == CAMERA and self.camera_noise_stddev > 0.0:
                attrs['sim_noise_stddev'] = self.camera_noise_stddev
            if spec.blueprint == LIDAR and self.lidar_noise_stddev is not None:
                attrs['noise_stddev'] = float(self.lidar_noise_stddev)
            spec = SensorSpec(sensor_id=spec.sensor_id,
                              blueprint=spec.blueprint, mount=spec.mount,
                              attributes=attrs)
            try:
                sensor = factory(spec)
            except ValueError as exc:
                raise BackendError(f'sensor {spec.sensor_id!r}: {exc}') \
                    from exc
            if self.random_lighting and hasattr(sensor, 'lighting'):
                sensor.lighting = self._lighting()
            self.sensors.append(_SensorSlot(spec, sensor,
                                            np.random.default_rng(seq)))

    def _lighting(self) -> Any:
        """Return the run's lighting, the same for every camera."""
        from hil_bridge.sim.camera import Lighting
        rng = np.random.default_rng([self.seed, 0x11647])
        return Lighting.random(rng)

    # ---------------------------------------------------------- control
    def apply_control(self, control: VehicleControl) -> None:
        """Set the ego control used from the next step on (clamped)."""
        self._check_ready()
        self.control = control.clamped()
        self.ego.apply_control(self.control)

    # ------------------------------------------------------------- step
    def step(self, dt: float) -> Frame:
        """
        Advance the world by ``dt`` seconds and return the new frame.

        Raises ``ValueError`` for a non-finite or non-positive ``dt`` and
        ``BackendError`` before ``setup``.
        """
        self._check_ready()
        if not (isinstance(dt, (int, float)) and math.isfinite(dt)
                and dt > 0.0):
            raise ValueError(f'BuiltinBackend.step: dt must be finite and '
                             f'> 0, got {dt!r}')
        prev = self.ego.state
        self.ego.step(dt)
        self.time = round(self.time + dt, 9)
        self.frame_number += 1
        for actor in self.actors:
            actor.step(self.time, dt)
        self._update_boxes()
        ego_box = self._ego_box()
        others = self._actor_boxes()
        events = self.referee.update(self.time, ego_box, self.ego.state.v,
                                     others)
        if any(e.kind == 'collision' for e in events):
            # crash: the ego stops where it was before the overlap
            self.ego.state = dataclasses.replace(
                prev, v=0.0, yaw_rate=0.0, ax=-prev.v / dt, ay=0.0)
        elif self.referee.result.collisions:
            self.ego.set_speed(0.0)
        self.world.cone_up = ~self.cones.knocked
        self.frame = self._make_frame(events, measure_all=False, dt=dt)
        return self.frame

    def _check_ready(self) -> None:
        if not self._ready:
            raise BackendError('BuiltinBackend: call setup() first')

    def _update_boxes(self) -> None:
        for i, a in enumerate(self.actors):
            cx, cy = a.box_center
            self.world.box_center[i] = (cx, cy, a.size[2] / 2.0)
            self.world.box_yaw[i] = a.yaw

    def _ego_box(self) -> Box:
        st = self.ego.state
        p = self.profile
        c, s = math.cos(st.yaw), math.sin(st.yaw)
        return Box(x=st.x + p.box_offset * c, y=st.y + p.box_offset * s,
                   yaw=st.yaw, length=p.length, width=p.width,
                   vx=st.v * c, vy=st.v * s, name=self.ego_role,
                   box_offset=p.box_offset)

    def _actor_boxes(self) -> List[Box]:
        out = []
        for a in self.actors:
            cx, cy = a.box_center
            out.append(Box(x=float(cx), y=float(cy), yaw=a.yaw,
                           length=float(a.size[0]), width=float(a.size[1]),
                           vx=a.v * math.cos(a.yaw),
                           vy=a.v * math.sin(a.yaw), name=a.role_name))
        return out

    def _make_frame(self, events: List[Any], measure_all: bool,
                    dt: float) -> Frame:
        t = self.time
        ego = self.ego.actor_state(self.ego_role)
        readings: Dict[str, SensorReading] = {}
        if self.sensors:
            st = self.ego.state
            body = yaw_matrix(st.x, st.y, st.yaw)
            for slot in self.sensors:
                if not measure_all and t < slot.next_time - _EPS:
                    continue
                since = dt if slot.last_time is None else t - slot.last_time
                if slot.tick > 0.0:
                    while slot.next_time <= t + _EPS:
                        slot.next_time += slot.tick
                slot.last_time = t
                pose = body @ slot.mount
                data = slot.sensor.measure(self.world, pose, t, since,
                                           slot.rng)
                k = getattr(slot.sensor, 'intrinsics', None)
                readings[slot.spec.sensor_id] = SensorReading(
                    sensor_id=slot.spec.sensor_id,
                    blueprint=slot.spec.blueprint, frame=self.frame_number,
                    timestamp=t, data=data,
                    intrinsics=None if k is None else np.array(k))
        cones = ConeArray(xy=self.cones.xy, class_id=self.cones.class_id,
                          knocked=self.cones.knocked.copy())
        return Frame(frame=self.frame_number, sim_time=t, ego=ego,
                     actors=[a.actor_state() for a in self.actors],
                     sensors=readings, cones=cones, events=list(events),
                     applied_control=VehicleControl(**vars(self.control)))

    # ---------------------------------------------------------- results
    @property
    def result(self) -> Optional[RefereeResult]:
        """
        Return the referee's summary of the run (also after teardown).

        None before the first ``setup``.
        """
        referee = getattr(self, 'referee', None)
        return None if referee is None else referee.result

    @property
    def ego_state(self) -> ActorState:
        """Return the ego's current ground truth."""
        self._check_ready()
        return self.ego.actor_state(self.ego_role)

    def teardown(self) -> None:
        """Forget the world; safe to call twice."""
        self._ready = False
        self.sensors = []
        self.frame = None
