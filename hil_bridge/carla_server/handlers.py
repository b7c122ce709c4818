# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The RPC functions of ``carla-hil serve``, bound to a :class:`.world.World`.

Names and arguments are LibCarla's (``client/detail/Client.cpp``).

Each function takes the call's arguments (metadata stripped) and returns
the msgpack result: a ``Response<T>`` for calls the client awaits
(``CallAndWait``), anything for fire-and-forget ones (``AsyncCall``: the
client never reads the answer; errors are logged). A :class:`WorldError`
or :class:`WireError` becomes a CARLA error Response, which the client
raises as ``RuntimeError`` with the message.

Calls that change the world in synchronous mode do not tick it; ``tick_cue``
ticks (after ``tick_delay`` seconds, the slow-server knob), queues the
frame's messages and returns the new frame; in asynchronous mode it returns
the next frame the free-running ticker will produce. Calls of features the
built-in simulator does not have (traffic manager, recorder, walkers,
traffic lights, OpenDRIVE generation) answer with an error naming the
missing feature.
"""

import logging
import time
from typing import Any, Callable, Dict, Optional

from hil_bridge.carla_server import maps as maplib
from hil_bridge.carla_server import wire_types as wt
from hil_bridge.carla_server.msgpack_rpc import fail, Handler, ok, void_fail, void_ok
from hil_bridge.carla_server.world import EPISODE_STREAM, World, WorldError

_LOG = logging.getLogger('carla_server.handlers')
Publish = Callable[[World], int]

#: rpc::Command variant indices of 0.9.16 (rpc/Command.h).
CMD_SPAWN = 0
CMD_DESTROY = 1
CMD_VEHICLE_CONTROL = 2
CMD_PHYSICS_CONTROL = 5
CMD_TRANSFORM = 6
CMD_TARGET_VELOCITY = 8
CMD_TARGET_ANGULAR_VELOCITY = 9
CMD_SIMULATE_PHYSICS = 14
CMD_AUTOPILOT = 16
CMD_LIGHT_STATE = 18
CMD_LOCATION = 19
#: Commands accepted without an effect in the built-in simulator.
CMD_NO_EFFECT = {3: 'ApplyVehicleAckermannControl', 4: 'ApplyWalkerControl',
                 7: 'ApplyWalkerState', 10: 'ApplyImpulse', 11: 'ApplyForce',
                 12: 'ApplyAngularImpulse', 13: 'ApplyTorque',
                 15: 'SetEnableGravity', 17: 'ShowDebugTelemetry', 20: 'ConsoleCommand',
                 21: 'SetTrafficLightState'}
UNSUPPORTED = 'not supported by carla-hil serve (built-in simulator)'


class Calls:
    """
    The handler table of one server.

    ``publish(world)`` ticks the world once, sends the frame's messages
    and returns the frame number (the server's ``tick_and_publish``);
    ``version`` is what ``version`` answers; ``tick_delay`` (s) delays
    every synchronous tick; ``wake`` is called when the settings change
    (the asynchronous ticker); ``stream_port`` goes into the tokens.
    """

    def __init__(self, world: World, publish: Publish, version: str = '0.9.16',
                 tick_delay: float = 0.0, wake: Optional[Callable[[], None]] = None
                 ) -> None:
        self.world = world
        self.publish = publish
        self.version = str(version)
        self.tick_delay = float(tick_delay)
        self.wake = wake or (lambda: None)
        #: sensor streams whose token a client asked for (id: time), not yet open
        self.connecting: Dict[int, float] = {}
        #: how long a synchronous tick waits for them (s)
        self.connect_wait = 0.5

    # ------------------------------------------------------------ helpers
    def table(self) -> Dict[str, Handler]:
        """Return ``{method: Handler}`` of every function."""
        w = self.world
        t: Dict[str, Handler] = {}

        def add(name: str, nargs: int, func: Callable[..., Any],
                void: bool = False) -> None:
            def call(*args: Any) -> Any:
                try:
                    with w.lock:
                        value = func(*args)
                except (WorldError, wt.WireError) as exc:
                    _LOG.info('%s: %s', name, exc)
                    return void_fail(str(exc)) if void else fail(str(exc))
                return void_ok() if void else ok(value)
            t[name] = Handler(call, nargs)

        def unsupported(name: str, nargs: int, void: bool = False) -> None:
            def call(*args: Any) -> Any:
                msg = f'{name}: {UNSUPPORTED}'
                return void_fail(msg) if void else fail(msg)
            t[name] = Handler(call, nargs)

        def accept(name: str, nargs: int) -> None:
            t[name] = Handler(lambda *args: void_ok(), nargs)

        add('version', 0, lambda: self.version)
        add('get_episode_info', 0, lambda: [w.episode_id,
                                            wt.token(EPISODE_STREAM, w.port)])
        add('get_sensor_token', 1, self._sensor_token)
        add('get_episode_settings', 0, lambda: wt.settings_array(w.settings))
        add('set_episode_settings', 1, self._set_settings)
        add('get_map_info', 0, lambda: [w.map.path, [wt.transform(*p)
                                                     for p in w.map.spawn_points]])
        add('get_map_data', 0, lambda: w.map.opendrive())
        add('get_navigation_mesh', 0, lambda: b'')
        add('get_required_files', 1, lambda folder: [])
        unsupported('request_file', 1)
        add('get_available_maps', 0,
            lambda: [f'/Game/Carla/Maps/{n}' for n in maplib.available()])
        t['load_new_episode'] = Handler(self._load_episode, 3)
        add('get_actor_definitions', 0, lambda: w.definitions)
        add('get_spectator', 0, lambda: w.rpc_actor(w.spectator))
        add('get_actors_by_id', 1, lambda ids: [
            w.rpc_actor(w.actors[i]) for i in ids
            if isinstance(i, int) and i in w.actors])
        add('get_weather_parameters', 0, lambda: list(w.weather))
        add('set_weather_parameters', 1, self._set_weather, void=True)
        add('get_imui_gravity', 0, lambda: w.gravity)
        add('set_imui_gravity', 1, lambda g: setattr(w, 'gravity', wt.number(g, 'gravity')),
            void=True)
        add('query_lights_state', 1, lambda client: [])
        accept('update_lights_state', 3)
        accept('update_day_night_cycle', 2)
        add('get_vehicle_light_states', 0, lambda: [])
        # the client asks this first when it sets up a traffic manager
        # (set_autopilot, get_trafficmanager, a batch's SetAutopilot): an error
        # here stops it before it binds a local traffic manager port
        for name in ('is_traffic_manager_running', 'add_traffic_manager_running',
                     'get_traffic_manager_running'):
            t[name] = Handler(lambda *a, n=name: fail(
                f'{n}: the traffic manager (autopilot) is {UNSUPPORTED}; drive the '
                'vehicles with apply_control or set_target_velocity'), 1)
        accept('destroy_traffic_manager', 1)
        add('get_names_of_all_objects', 0, lambda: [])
        add('get_environment_objects', 1, lambda tag: [])
        add('get_all_level_BBs', 1, lambda tag: [])
        accept('enable_environment_objects', 2)
        # actors
        add('spawn_actor', 2, lambda d, tf: self._spawn(d, tf, 0))
        add('spawn_actor_with_parent', 5,
            lambda d, tf, parent, kind, socket: self._spawn(
                d, tf, wt.integer(parent, 'parent')))
        add('destroy_actor', 1, self._destroy)
        add('get_actor_bounding_box', 1, lambda i: w.bounding_box(w.actor(i)))
        add('set_actor_location', 2, lambda i, loc: w.set_location(
            w.actor(i), wt.read_vec3(loc, 'location')), void=True)
        add('set_actor_transform', 2, lambda i, tf: w.set_transform(
            w.actor(i), wt.read_transform(tf)), void=True)
        add('set_actor_target_velocity', 2, self._target_velocity, void=True)
        add('set_actor_target_angular_velocity', 2, self._target_angular_velocity,
            void=True)
        add('enable_actor_constant_velocity', 2, self._constant_velocity, void=True)
        add('disable_actor_constant_velocity', 1, self._no_constant_velocity,
            void=True)
        for name in ('add_actor_impulse', 'add_actor_force',
                     'add_actor_angular_impulse', 'add_actor_torque'):
            add(name, 2, lambda i, v, n=name: self._no_effect(i, n), void=True)
        for name in ('add_actor_impulse_at_location', 'add_actor_force_at_location'):
            add(name, 3, lambda i, v, at, n=name: self._no_effect(i, n), void=True)
        add('set_actor_simulate_physics', 2, self._simulate_physics, void=True)
        add('set_actor_collisions', 2, lambda i, on: self._no_effect(i, 'collisions'),
            void=True)
        add('set_actor_enable_gravity', 2, lambda i, on: self._no_effect(i, 'gravity'),
            void=True)
        accept('set_actor_dead', 1)
        unsupported('set_actor_autopilot', 2, void=True)
        # vehicles
        add('apply_control_to_vehicle', 2, self._control, void=True)
        unsupported('apply_ackermann_control_to_vehicle', 2, void=True)
        add('get_physics_control', 1, self._physics)
        add('apply_physics_control', 2, lambda i, pc: w.vehicle(i).vehicle.apply_physics(pc),
            void=True)
        add('get_wheel_steer_angle', 2, lambda i, wheel: w.vehicle(i).vehicle.wheel_angle_deg(
            wt.integer(wheel, 'wheel')))
        add('get_vehicle_light_state', 1, lambda i: [w.vehicle(i).vehicle.light_state])
        add('set_vehicle_light_state', 2, self._light_state, void=True)
        accept('open_vehicle_door', 2)
        accept('close_vehicle_door', 2)
        unsupported('get_telemetry_data', 1)
        accept('show_vehicle_debug_telemetry', 2)
        # ticks and batches
        t['tick_cue'] = Handler(self._tick_cue, 0)
        t['apply_batch'] = Handler(self._apply_batch, 2)
        # debug drawing is accepted and not drawn
        for name, n in (('draw_debug_shape', 1), ('clear_debug_shape', 0),
                        ('clear_debug_string', 0)):
            accept(name, n)
        for name, n in (('start_recorder', 3), ('show_recorder_file_info', 2),
                        ('show_recorder_collisions', 3),
                        ('show_recorder_actors_blocked', 3), ('replay_file', 8),
                        ('get_bones_transform', 1), ('cast_ray', 2),
                        ('project_point', 3), ('copy_opendrive_to_file', 2),
                        ('load_map_layer', 1), ('unload_map_layer', 1),
                        ('get_light_boxes', 1), ('get_group_traffic_lights', 1),
                        ('get_ackermann_controller_settings', 1)):
            unsupported(name, n)
        accept('stop_recorder', 0)
        accept('reset_all_traffic_lights', 0)
        accept('freeze_all_traffic_lights', 1)
        return t

    # ---------------------------------------------------------- handlers
    def _sensor_token(self, stream_id: Any) -> list:
        sid = wt.integer(stream_id, 'stream id')
        w = self.world
        if sid == EPISODE_STREAM or (sid in w.actors and w.actors[sid].sensor is not None):
            if sid != EPISODE_STREAM:
                # the client asks for the token in listen(), then connects
                self.connecting[sid] = time.monotonic()
            return wt.token(sid, w.port)
        raise WorldError(f'get_sensor_token: no sensor stream {sid}')

    def await_streams(self) -> None:
        """
        Wait (at most ``connect_wait`` s) for sensor streams a client is connecting.

        ``listen()`` asks for the sensor's token and connects its stream
        asynchronously; a synchronous tick right after it would measure
        before the session exists (no data for that frame). CARLA's server
        renders the frame on its game thread, which leaves the connection
        time to arrive; here the tick waits for it.
        """
        if not self.connecting:
            return
        deadline = time.monotonic() + self.connect_wait
        while True:
            with self.world.lock:
                for sid in [s for s in self.connecting
                            if self.world.listening(s) or s not in self.world.actors]:
                    del self.connecting[sid]
            if not self.connecting or time.monotonic() > deadline:
                break
            time.sleep(0.002)
        if self.connecting:
            _LOG.info('sensor stream(s) %s not connected %.1f s after listen()',
                      sorted(self.connecting), self.connect_wait)
            self.connecting.clear()

    def _set_settings(self, obj: Any) -> int:
        w = self.world
        new = wt.read_settings(obj)
        w.settings = new
        self.wake()
        return int(w.frame)

    def _set_weather(self, obj: Any) -> None:
        if not isinstance(obj, (list, tuple)) or len(obj) < 13:
            raise wt.WireError('weather: expected the fields of carla.WeatherParameters')
        self.world.weather = [wt.number(v, 'weather') for v in obj[:14]]

    def _load_episode(self, name: Any, reset_settings: Any, layers: Any) -> list:
        try:
            with self.world.lock:
                # an empty name is client.reload_world(): the current map again
                map_name = wt.text(name, 'map name') or self.world.map.name
                self.world.load_map(map_name, reset_settings=bool(reset_settings))
        except (WorldError, wt.WireError) as exc:
            return void_fail(str(exc))
        self.wake()
        return void_ok()

    def _spawn(self, description: Any, transform: Any, parent: int) -> list:
        bp_id, attrs = wt.read_description(description)
        a = self.world.spawn(bp_id, attrs, wt.read_transform(transform), parent)
        return self.world.rpc_actor(a)

    def _destroy(self, actor_id: Any) -> bool:
        self.world.destroy(actor_id)
        return True

    def _target_velocity(self, actor_id: Any, vec: Any) -> None:
        a = self.world.actor(actor_id)
        x, y, z = wt.read_vec3(vec, 'velocity')
        if a.vehicle is not None:
            a.vehicle.set_velocity((x, -y, z))

    def _target_angular_velocity(self, actor_id: Any, vec: Any) -> None:
        """Make a vehicle report these roll and pitch rates (UE deg/s; the model is planar)."""
        a = self.world.actor(actor_id)
        x, y, _z = wt.read_vec3(vec, 'angular velocity')
        if a.vehicle is None:
            self._no_effect(actor_id, 'set_target_angular_velocity')
            return
        a.vehicle.tilt_rate = (float(x), float(y))

    def _constant_velocity(self, actor_id: Any, vec: Any) -> None:
        a = self.world.vehicle(actor_id)
        a.vehicle.constant_speed = wt.read_vec3(vec, 'velocity')[0]

    def _no_constant_velocity(self, actor_id: Any) -> None:
        self.world.vehicle(actor_id).vehicle.constant_speed = None

    def _simulate_physics(self, actor_id: Any, enabled: Any) -> None:
        a = self.world.actor(actor_id)
        if a.vehicle is not None:
            a.vehicle.simulate = wt.boolean(enabled, 'enabled')

    def _no_effect(self, actor_id: Any, what: str) -> None:
        a = self.world.actor(actor_id)
        _LOG.debug('%s on actor %d: no effect in the built-in simulator', what, a.aid)

    def _control(self, actor_id: Any, control: Any) -> None:
        a = self.world.vehicle(actor_id)
        a.vehicle.control = wt.read_vehicle_control(control)
        if isinstance(control, (list, tuple)) and len(control) >= 7:
            a.vehicle.manual_gear_shift = bool(control[5])
            a.vehicle.gear = control[6] if isinstance(control[6], int) else 0

    def _light_state(self, actor_id: Any, state: Any) -> None:
        flags = state[0] if isinstance(state, (list, tuple)) and state else state
        self.world.vehicle(actor_id).vehicle.light_state = wt.integer(flags, 'light state')

    def _physics(self, actor_id: Any) -> list:
        a = self.world.vehicle(actor_id)
        pc = [list(v) if isinstance(v, list) else v for v in a.vehicle.physics]
        # wheel positions: world position in cm (CARLA reports UE units)
        T = self.world.world_matrix(a)
        f = a.vehicle.facts
        half_wb, half_track = f.wheelbase / 2.0, a.vehicle.profile.track_width / 2.0
        wheels = []
        for w, (dx, dy) in zip(pc[15], ((half_wb, half_track), (half_wb, -half_track),
                                        (-half_wb, half_track), (-half_wb, -half_track))):
            p = T @ [dx, dy, f.wheel_radius / 100.0, 1.0]
            wheels.append(list(w[:9]) + [wt.vec3(100.0 * p[0], -100.0 * p[1],
                                                 100.0 * p[2])])
        pc[15] = wheels
        return pc

    # ------------------------------------------------------------- ticks
    def tick_now(self) -> int:
        """Tick the world once and publish the frame; return its number."""
        return self.publish(self.world)

    def _tick_cue(self) -> list:
        w = self.world
        if not w.settings['synchronous_mode']:
            return ok(int(w.frame) + 1)
        if self.tick_delay > 0.0:
            time.sleep(self.tick_delay)
        self.await_streams()
        try:
            return ok(self.tick_now())
        except WorldError as exc:
            return fail(str(exc))

    def _apply_batch(self, commands: Any, do_tick: Any) -> list:
        if not isinstance(commands, (list, tuple)):
            raise wt.WireError('apply_batch: commands must be an array')
        with self.world.lock:
            out = [self._command(c) for c in commands]
        if do_tick is True and self.world.settings['synchronous_mode']:
            self._tick_cue()
        return out

    def _command(self, obj: Any) -> list:
        w = self.world
        try:
            index, p = wt.read_command(obj)
            if index == CMD_SPAWN:
                if len(p) < 3:
                    raise wt.WireError('SpawnActor: expected description, '
                                       'transform, parent')
                parent = wt.read_optional(p[2], 'SpawnActor.parent')
                then = p[5] if len(p) > 5 and isinstance(p[5], list) else []
                if any(self._autopilot_on(c) for c in then):
                    # refused before spawning: the client would spawn, then
                    # fail on the traffic manager and leave the vehicle behind
                    raise WorldError('SpawnActor(...).then(SetAutopilot(..., True)): the '
                                     f'traffic manager (autopilot) is {UNSUPPORTED}; '
                                     'nothing was spawned')
                actor = self._spawn(p[0], p[1], 0 if parent is None
                                    else wt.integer(parent, 'parent'))
                aid = actor[0]
                for after in then:
                    self._command_for(after, aid)
                return ok(aid)
            if not p:
                raise wt.WireError(f'command {index}: no actor')
            aid = wt.integer(p[0], 'command actor')
            if index == CMD_DESTROY:
                w.destroy(aid)
            elif index == CMD_VEHICLE_CONTROL:
                self._control(aid, p[1])
            elif index == CMD_PHYSICS_CONTROL:
                w.vehicle(aid).vehicle.apply_physics(p[1])
            elif index == CMD_TRANSFORM:
                w.set_transform(w.actor(aid), wt.read_transform(p[1]))
            elif index == CMD_LOCATION:
                w.set_location(w.actor(aid), wt.read_vec3(p[1], 'location'))
            elif index == CMD_TARGET_VELOCITY:
                self._target_velocity(aid, p[1])
            elif index == CMD_TARGET_ANGULAR_VELOCITY:
                self._no_effect(aid, 'ApplyTargetAngularVelocity')
            elif index == CMD_SIMULATE_PHYSICS:
                self._simulate_physics(aid, p[1])
            elif index == CMD_AUTOPILOT:
                raise WorldError(f'SetAutopilot: the traffic manager is {UNSUPPORTED}')
            elif index == CMD_LIGHT_STATE:
                self._light_state(aid, p[1])
            elif index in CMD_NO_EFFECT:
                w.actor(aid)
            else:
                raise wt.WireError(f'unknown command index {index}')
            return ok(aid)
        except (WorldError, wt.WireError) as exc:
            return fail(str(exc))

    @staticmethod
    def _autopilot_on(obj: Any) -> bool:
        """Return True for a ``SetAutopilot(actor, True, port)`` command."""
        try:
            index, p = wt.read_command(obj)
        except wt.WireError:
            return False
        return index == CMD_AUTOPILOT and len(p) > 1 and p[1] is True

    def _command_for(self, obj: Any, actor_id: int) -> None:
        """Run a ``then`` command of SpawnActor on the new actor."""
        try:
            index, p = wt.read_command(obj)
        except wt.WireError:
            return
        if p and p[0] == 0:
            p = [actor_id] + list(p[1:])
        self._command([[index, p]])
