# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The bridge node (``hil_bridge``): simulator <-> ROS 2, on the simulator PC.

A thin rclpy shell around the pure cores: a :class:`hil_bridge.bridge.backend.Backend`
(``builtin`` or ``carla``), the clock modes (:mod:`hil_bridge.bridge.sim_clock`),
the drive-by-wire emulation (:mod:`hil_bridge.bridge.low_level_control`) and the
message builder (:mod:`hil_bridge.bridge.frame_msgs`). Parameters and their
defaults: ``config/hil_bridge.yaml`` (``PARAMS`` below has descriptions and
ranges).

Loop (main thread; subscriptions and services run in an executor thread):
publish frame k (every message stamped with its sim time), wait as the
clock mode says (lockstep: until ``lockstep_topics`` carry frame k's stamp;
until the first commands arrive the frame is re-sent every second, so
nodes that start late still get it),
run the low-level controller on the newest ``cmd_vel``/``brake_request``/
``/joy``, apply the control and tick (or, asynchronous, poll) the backend.

Cruise (``cruise`` true): the bridge plays the Euro NCAP driver robot and
commands the ego's scenario ``initial_speed`` straight ahead every frame
in place of ``cmd_vel`` (which still counts for lockstep), so the AEB can
be tested with the whole stack running on a scenario without cones, where
the planner commands a stop.

Services: ``~/pause`` (std_srvs/SetBool: true pauses, false resumes),
``~/step`` (std_srvs/Trigger: one frame, then paused), ``~/advance``
(std_srvs/Trigger: ``advance_seconds`` of sim time when > 0, else
``advance_frames`` frames, then paused; set those parameters at run time,
e.g. ``ros2 param set /hil_bridge advance_seconds 2.0``).

Command sources (:mod:`hil_bridge.bridge.sources`): every second the graph's
publishers of ``cmd_vel``, ``brake_request`` and ``/joy`` and the clients of
the services are compared with the nodes the contract names (plus
``trusted_nodes``); others raise an alarm (one error line each) and, with
``strict_sources``, are ignored (messages) or refused (services). Each
source has a rate limit (``max_command_rate`` per wall second) and the
stamp policy at arrival: a stamp ahead of the bridge's sim time, more than
``cmd_timeout`` behind it, or older than the source's last accepted one is
dropped with a throttled warning; only accepted stamps count for lockstep.
Values are validated by the low-level controller (out of the vehicle's
physical range: rejected).

Exit: 0 at mission end (``exit_on_mission_end``), after ``duration`` sim
seconds or on SIGINT/SIGTERM; the referee result is printed as one line
``REFEREE_RESULT {json}`` on stdout. 2 for bad parameters/scenario/rig;
3 when the backend cannot be reached or is lost for longer than
``reconnect_timeout`` (the car is braked first where possible).
"""

import functools
import json
import math
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from hil_bridge.bridge.backend import Backend, BackendError, Frame, VehicleControl
from hil_bridge.bridge.frame_msgs import FrameConverter, HAVE_TF2, tf_message
from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.bridge.recorder_link import RecorderLink
from hil_bridge.bridge.sim_clock import select_mode, SimClock
from hil_bridge.bridge.sources import Endpoint, SourceGuard
from hil_bridge.interface import contract
from hil_bridge.interface.codecs import stamps
from hil_bridge.interface.freshness import COMMAND_TOLERANCE, InputGate, RateLimit, Throttle
from hil_bridge.interface.joy import JOY_PRESETS, JoyState
from hil_bridge.interface.node_main import StopRequest
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from std_srvs.srv import SetBool, Trigger

NODE_NAME = 'hil_bridge'
EXIT_OK, EXIT_CONFIG, EXIT_BACKEND = 0, 2, 3
RESULT_PREFIX = 'REFEREE_RESULT '
#: lockstep: re-send the current frame this often (s) until the first commands
REPUBLISH_PERIOD = 1.0
#: lockstep after start-up: a frame still unanswered after this share of
#: ``lockstep_timeout`` (at least REPUBLISH_PERIOD s) is re-sent, and again
#: each such period: a best-effort sensor message lost under load (a camera
#: image) is sent again instead of waited out into a timeout
RESEND_SHARE = 0.25
#: wall seconds to wait for the recorder's acknowledgement of the last frame
FINAL_ACK_TIMEOUT = 10.0
#: contract keys lockstep may wait for (recorder_status: a recorder's /clock
#: acknowledgement, so a recording never falls behind)
LOCKSTEP_KEYS = ('cmd_vel', 'brake_request', 'recorder_status', 'cones_vision', 'cones_lidar',
                 'cones')
#: lockstep keys that are cone clouds (only their stamps are read): waiting for
#: the detectors' first output too keeps a slow-starting one from making the
#: first frames differ between runs
CONE_LOCKSTEP_KEYS = ('cones_vision', 'cones_lidar', 'cones')
#: command topics whose publishers are checked against the contract
COMMAND_KEYS = ('cmd_vel', 'brake_request', 'joy')
#: wall seconds between two looks at the graph (publishers, service clients)
SOURCE_CHECK_PERIOD = 1.0
#: most axes / buttons a Joy message may carry (a wheel has about 20)
MAX_JOY_FIELDS = 64

PARAMS = [
    ParamSpec('backend', 'simulator backend', choices=('builtin', 'carla')),
    ParamSpec('host', 'CARLA server host'),
    ParamSpec('port', 'CARLA server port', lo=1, hi=65535),
    ParamSpec('timeout', 'CARLA client timeout (s)', lo=0.1, hi=600.0),
    ParamSpec('carla_map', "CARLA map to run on ('' = the scenario's map; '-' = whatever "
              'the server has)'),
    ParamSpec('role_name', 'role name of the ego vehicle ({role} in topics)'),
    ParamSpec('scenario', 'scenario name (config/scenarios) or YAML path'),
    ParamSpec('rig', 'sensor rig name (config/sensors) or path; "" = the '
              "scenario's rig"),
    ParamSpec('seed', 'seed of the built-in simulator (sensor noise)', lo=0, hi=2**31 - 1),
    ParamSpec('track_seed', "seed of the scenario's track generator; -1 = the scenario's own",
              lo=-1, hi=2**31 - 1),
    ParamSpec('render_cameras', 'built-in backend: render camera images'),
    ParamSpec('synchronous_mode', 'the bridge ticks the world (else the world '
              'runs on its own and the bridge publishes what it gets)'),
    ParamSpec('fixed_delta_seconds', 'sim time per tick (s)', lo=0.001, hi=1.0),
    ParamSpec('real_time_factor', 'pacing: 1 real time, 0.5 slow motion, '
              '0 as fast as possible', lo=0.0, hi=100.0),
    ParamSpec('wait_for_control', 'lockstep: wait for the commands computed '
              'from each frame before the next tick'),
    ParamSpec('lockstep_topics', 'topics lockstep waits for (contract keys: '
              'cmd_vel, brake_request, recorder_status, cones_vision, cones_lidar, '
              'cones; recorder_status '
              'outside lockstep: only the first frame waits for it)'),
    ParamSpec('lockstep_timeout', 'lockstep: wall seconds to wait for a '
              'command before ticking on (0 = forever)', lo=0.0, hi=3600.0),
    ParamSpec('lockstep_startup_timeout', 'lockstep: wall seconds to wait '
              'for the first command on each topic (0 = forever)', lo=0.0, hi=3600.0),
    ParamSpec('cmd_timeout', 'watchdog: sim seconds without a valid command '
              'before a controlled stop', lo=0.01, hi=60.0),
    ParamSpec('watchdog_decel', 'watchdog stop deceleration (m/s^2)', lo=0.0, hi=50.0),
    ParamSpec('watchdog_centre_steer', 'watchdog stop centres the steering '
              '(else holds it)'),
    ParamSpec('brake_request_timeout', 'sim seconds after which a brake '
              'request expires (0 = latched until released)', lo=0.0, hi=60.0),
    ParamSpec('actuation_delay', 'delay of the applied control (sim s)', lo=0.0, hi=5.0),
    ParamSpec('kp', 'speed PID proportional gain (1 / (m/s))', lo=0.0, hi=100.0),
    ParamSpec('ki', 'speed PID integral gain (1 / m)', lo=0.0, hi=100.0),
    ParamSpec('kd', 'speed PID derivative gain (s/m)', lo=0.0, hi=100.0),
    ParamSpec('integral_limit', 'speed PID integral clamp (m)', lo=0.0, hi=100.0),
    ParamSpec('brake_gain', 'brake per unit of negative PID output', lo=0.0, hi=10.0),
    ParamSpec('standstill_brake', 'brake holding a stopped car at target 0',
              lo=0.0, hi=1.0),
    ParamSpec('v_min', 'minimum speed in delta = atan(omega L / v) (m/s)',
              lo=0.01, hi=10.0),
    ParamSpec('joy_preset', 'Joy mapping preset', choices=tuple(JOY_PRESETS)),
    ParamSpec('joy_steer_axis', 'override of the preset steering axis (-1 = keep)',
              lo=-1, hi=64),
    ParamSpec('joy_throttle_axis', 'override of the throttle axis (-1 = keep)',
              lo=-1, hi=64),
    ParamSpec('joy_brake_axis', 'override of the brake axis (-1 = keep)', lo=-1, hi=64),
    ParamSpec('joy_takeover_button', 'override of the takeover button (-1 = keep)',
              lo=-1, hi=64),
    ParamSpec('joy_timeout', 'sim seconds after which a Joy message is ignored',
              lo=0.01, hi=60.0),
    ParamSpec('pedal_threshold', 'brake pedal travel (0..1) that overrides all',
              lo=0.0, hi=1.0),
    ParamSpec('publish_raw_images', 'publish sensor_msgs/Image'),
    ParamSpec('publish_compressed', 'publish JPEG CompressedImage too'),
    ParamSpec('jpeg_quality', 'JPEG quality (1..100)', lo=1, hi=100),
    ParamSpec('clock_period', '/clock every this many sim seconds (0 = every frame; '
              'fewer messages for small onboard CPUs, coarser sim-time timers; at most '
              '0.2 s, the nodes accept stamps up to 0.25 s ahead of their clock)',
              lo=0.0, hi=0.2),
    ParamSpec('publish_tf', 'publish /tf and /tf_static (needs tf2_msgs)'),
    ParamSpec('cruise', "driver robot: drive straight at the ego's scenario "
              'initial_speed and ignore cmd_vel (still counted for lockstep); '
              'brake_request and /joy act as usual (AEB tests, no planner)'),
    ParamSpec('duration', 'stop after this many sim seconds (0 = until mission end)',
              lo=0.0, hi=1e6),
    ParamSpec('exit_on_mission_end', 'exit 0 at mission end (the runner relies on it)'),
    ParamSpec('reconnect_timeout', 'seconds to retry a lost/unreachable backend',
              lo=0.0, hi=3600.0),
    ParamSpec('advance_frames', '~/advance: frames to run when advance_seconds is 0',
              lo=1, hi=1000000),
    ParamSpec('advance_seconds', '~/advance: sim seconds to run (0 = use '
              'advance_frames)', lo=0.0, hi=1e6),
    ParamSpec('strict_sources', 'use cmd_vel / brake_request / joy only from the nodes the '
              'contract names (and trusted_nodes), serve the services only while no other '
              'client is on the graph; false: such sources only raise an alarm'),
    ParamSpec('trusted_nodes', 'node names also allowed to command the car and call the '
              "bridge's services (e.g. an operator's tool)"),
    ParamSpec('max_command_rate', 'messages per wall second accepted from each command '
              'source; more are dropped (0 = no limit)', lo=0.0, hi=100000.0),
]


def make_backend(values: Dict[str, Any]) -> Backend:
    """Return the backend the parameters ask for (not set up yet)."""
    if values['backend'] == 'carla':
        from hil_bridge.carla_backend.backend import CarlaBackend
        return CarlaBackend(host=values['host'], port=int(values['port']),
                            timeout=float(values['timeout']),
                            role_name=values['role_name'],
                            synchronous=bool(values['synchronous_mode']),
                            fixed_delta_seconds=float(values['fixed_delta_seconds']),
                            map_name=None if not values['carla_map'] else
                            ('' if values['carla_map'] == '-' else str(values['carla_map'])))
    from hil_bridge.sim.builtin_backend import BuiltinBackend
    return BuiltinBackend(seed=int(values['seed']),
                          render_cameras=bool(values['render_cameras']))


class BridgeNode(Node):
    """The bridge: see the module docstring."""

    def __init__(self, backend: Optional[Backend] = None, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.values = declare_params(self, PARAMS, NODE_NAME)
        v = self.values
        from hil_bridge.bridge.scenario import load_scenario
        from hil_bridge.interface.rig import load_rig
        self.role = str(v['role_name'])
        track_seed = {'seed': int(v['track_seed'])} if int(v['track_seed']) >= 0 else {}
        self.scenario = load_scenario(v['scenario'], ego__role_name=self.role, **track_seed)
        self.rig = load_rig(v['rig'] or self.scenario.rig)
        self.profile = load_vehicle_profile(self.scenario.ego.profile)
        self.llc = LowLevelController(
            self.profile, LLCParams.from_mapping(v, preset=v['joy_preset']))
        self.mode = select_mode(bool(v['synchronous_mode']), bool(v['wait_for_control']))
        topics = list(v['lockstep_topics'] or [])
        for name in topics:
            if name not in LOCKSTEP_KEYS:
                raise ValueError(f'lockstep_topics: {name!r} is not one of '
                                 f'{", ".join(LOCKSTEP_KEYS)}')
        self.backend = backend if backend is not None else make_backend(v)
        rtf = float(v['real_time_factor'])
        if self.mode == 'async' and type(self.backend).latest is Backend.latest:
            self.get_logger().info('the backend is synchronous only: asynchronous '
                                   'mode is emulated by ticking in real time')
            self.mode, rtf = 'sync', 1.0
        self.dt = float(v['fixed_delta_seconds'])
        self.clock = SimClock(self.mode, self.dt, rtf, topics or ['cmd_vel'],
                              float(v['lockstep_timeout']),
                              float(v['lockstep_startup_timeout']))
        self.converter = FrameConverter(self.role, self.rig,
                                        bool(v['publish_raw_images']),
                                        bool(v['publish_compressed']),
                                        int(v['jpeg_quality']),
                                        float(v['clock_period']))
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.stop_requested = threading.Event()
        self._cmd: Optional[Tuple[float, float, float]] = None
        self._brake: Optional[Tuple[float, float]] = None
        self._joy: Optional[JoyState] = None
        self._sim_time = 0.0
        self._warn_times: Dict[str, float] = {}
        self._init_sources(v)
        self.publishers_by_name: Dict[str, Any] = {}
        for key, name in self.converter.topic_list(a.role_name for a in self.scenario.actors):
            self._publisher(key, name)
        self.tf_pub = self.tf_static_pub = None
        if bool(v['publish_tf']):
            if HAVE_TF2:
                self.tf_pub = contract.create_publisher(self, 'tf', self.role)
                self.tf_static_pub = contract.create_publisher(self, 'tf_static', self.role)
            else:
                self.get_logger().info('tf2_msgs is not installed: /tf and /tf_static '
                                       'are not published')
        contract.create_subscription(self, 'cmd_vel', self._on_cmd, self.role)
        contract.create_subscription(self, 'brake_request', self._on_brake, self.role)
        contract.create_subscription(self, 'joy', self._on_joy, self.role)
        for key in CONE_LOCKSTEP_KEYS:
            if key in topics:
                contract.create_subscription(self, key, functools.partial(self._on_stamp, key),
                                             self.role)
        #: a recorder: frame 0 waits until it can take every recorded topic,
        #: the last frame for its acknowledgement (not lockstep: frame 0 is
        #: re-sent until acknowledged, so a recording starts at frame 0)
        self.wait_for_recorder = 'recorder_status' in topics
        self.recorder = RecorderLink(self, self.role, self._on_recorder) \
            if self.wait_for_recorder else None
        #: messages published per topic name (the runner compares a
        #: recording's counts with these)
        self.published: Dict[str, int] = {}
        self.republished = 0  # frames re-sent while waiting (in ``published``)
        self.resent = 0  # of those, after start-up (an answer was lost)
        self.last_pub = 0.0  # wall time of the last publication of a frame
        timeout = float(v['lockstep_timeout'])
        #: wall seconds after which an unanswered frame is re-sent (lockstep)
        self.resend_period = max(REPUBLISH_PERIOD, RESEND_SHARE * timeout)
        self.bridge_services = [
            self.create_service(SetBool, '~/pause', self._srv_pause),
            self.create_service(Trigger, '~/step', self._srv_step),
            self.create_service(Trigger, '~/advance', self._srv_advance)]
        self._source_timer = self.create_timer(
            SOURCE_CHECK_PERIOD, self.check_sources,
            clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.cruise_speed: Optional[float] = None
        if bool(v['cruise']):
            self.cruise_speed = float(self.scenario.ego.initial_speed)
            self.get_logger().info(f'cruise: driving straight at {self.cruise_speed:.2f} '
                                   'm/s, cmd_vel is ignored')
        self.frame: Optional[Frame] = None
        self.source = 'watchdog'
        self.control = VehicleControl(brake=1.0)
        #: --log-level debug: the stamps of the inputs each frame's control used
        self._debug = self.get_logger().is_enabled_for(LoggingSeverity.DEBUG)

    # ------------------------------------------------------------ plumbing
    def _publisher(self, key: str, name: str) -> Any:
        pub = self.publishers_by_name.get(name)
        if pub is None:
            row = contract.topic(key)
            pub = self.create_publisher(row.msg_class(), name, contract.qos_profile(row.qos))
            self.publishers_by_name[name] = pub
        return pub

    def _warn(self, key: str, text: str, period: float = 2.0) -> None:
        now = time.monotonic()
        if now - self._warn_times.get(key, -math.inf) >= period:
            self._warn_times[key] = now
            self.get_logger().warning(text)

    # ------------------------------------------------------ command sources
    def _init_sources(self, v: Dict[str, Any]) -> None:
        """Per command source: publisher check, rate limit and stamp policy."""
        self.topic_names = {key: contract.topic(key).resolve(self.role)
                            for key in COMMAND_KEYS}
        self.guard = SourceGuard(
            {self.topic_names[k]: [contract.topic(k).publisher] for k in COMMAND_KEYS},
            trusted=list(v['trusted_nodes'] or []), strict=bool(v['strict_sources']),
            own_node=self.get_name())
        rate = float(v['max_command_rate'])
        self.rates = {key: RateLimit(rate) for key in COMMAND_KEYS}
        throttle = Throttle()
        self.gates = {key: InputGate(key, float(v['cmd_timeout']), COMMAND_TOLERANCE,
                                     monotonic=True, throttle=throttle,
                                     warn=self.get_logger().warning)
                      for key in ('cmd_vel', 'brake_request')}

    def _source_ok(self, key: str, info: Any) -> bool:
        """Rate and publisher check of one message on command topic ``key``."""
        if not self.rates[key].allow():
            self._warn(f'rate/{key}', f'{key}: more than {self.rates[key].rate:g} messages '
                       f'per second; {self.rates[key].dropped} dropped so far')
            return False
        gid = None
        if isinstance(info, dict) and info.get('publisher_gid'):
            gid = bytes(info['publisher_gid'].get('data', b''))
        topic = self.topic_names[key]
        if gid is None and self.guard.strict:
            # no publisher gid in MessageInfo (rclpy before 8: Humble, Jazzy): judge
            # by the topic's publishers now, not as the last check saw them (an
            # intruder would be obeyed until the next check)
            self._update_publishers(topic)
        if not self.guard.allows(topic, gid):
            self._warn(f'source/{key}', f'{topic}: message from a publisher that is not '
                       f'expected ignored (strict_sources; {self.guard.ignored[topic]} so far)')
            return False
        return True

    def _update_publishers(self, topic: str) -> None:
        """Feed the guard the graph's publishers of ``topic``; log alarms."""
        eps = [Endpoint(i.node_name, i.node_namespace, bytes(i.endpoint_gid))
               for i in self.get_publishers_info_by_topic(topic)]
        for line in self.guard.update(topic, eps):
            self.get_logger().error(line)

    def check_sources(self) -> None:
        """Compare the graph's command publishers and service clients with the contract."""
        try:
            for topic in self.topic_names.values():
                self._update_publishers(topic)
            clients: Dict[str, List[Endpoint]] = {
                s.service_name: [] for s in self.bridge_services}
            me = (self.get_name(), self.get_namespace())
            for name, ns in self.get_node_names_and_namespaces():
                if (name, ns) == me:
                    continue
                try:
                    used = self.get_client_names_and_types_by_node(name, ns)
                except Exception:  # noqa: B902 - the node left the graph meanwhile
                    continue
                for service, _types in used:
                    if service in clients:
                        clients[service].append(Endpoint(name, ns))
            for service, found in clients.items():
                for line in self.guard.update_service(service, found):
                    self.get_logger().error(line)
        except Exception as err:  # noqa: B902 - a graph query must not stop the bridge
            self._warn('sources', f'source check failed: {err}')

    def _service_refused(self, name: str, response: Any) -> bool:
        full = next((s.service_name for s in self.bridge_services
                     if s.service_name.endswith('/' + name)), name)
        why = self.guard.service_allowed(full)
        if why is None:
            return False
        response.success = False
        response.message = why
        self._warn(f'service/{name}', why)
        return True

    def _admit(self, key: str, stamp: float) -> bool:
        """Stamp policy at arrival, against the bridge's sim time (lock held)."""
        return self.gates[key].admit(stamp, self._sim_time)

    def _on_cmd(self, msg: Any, info: Any) -> None:
        if not self._source_ok('cmd_vel', info):
            return
        # values first, so a bad command never displaces a valid one
        why = self.llc.check_command(msg.twist.linear.x, msg.twist.angular.z)
        if why:
            self.llc.counters['rejected_cmd'] += 1
            self._warn('cmd_vel/value', f'cmd_vel rejected: {why}')
            return
        stamp = stamps.sec_from_stamp(msg.header.stamp)
        with self.wake:
            if not self._admit('cmd_vel', stamp):
                return
            self._cmd = (msg.twist.linear.x, msg.twist.angular.z, stamp)
            self.clock.on_command('cmd_vel', stamp)
            self.wake.notify_all()

    def _on_brake(self, msg: Any, info: Any) -> None:
        if not self._source_ok('brake_request', info):
            return
        decel = msg.accel.linear.x
        if not (math.isfinite(decel) and decel <= 0.0):
            self.llc.counters['rejected_brake'] += 1
            self._warn('brake/value', f'brake_request rejected: {decel} (a deceleration is a '
                       'finite value <= 0)')
            return
        stamp = stamps.sec_from_stamp(msg.header.stamp)
        with self.wake:
            if not self._admit('brake_request', stamp):
                return
            self._brake = (msg.accel.linear.x, stamp)
            self.clock.on_command('brake_request', stamp)
            self.wake.notify_all()

    def _on_stamp(self, key: str, msg: Any) -> None:
        """Count a detector's output (its stamp) for lockstep."""
        stamp = stamps.sec_from_stamp(msg.header.stamp)
        with self.wake:
            self.clock.on_command(key, stamp)
            self.wake.notify_all()

    def _on_recorder(self, stamp: float) -> None:
        with self.wake:
            self.clock.on_command('recorder_status', stamp)
            self.wake.notify_all()

    def _on_joy(self, msg: Any, info: Any) -> None:
        if not self._source_ok('joy', info):
            return
        if len(msg.axes) > MAX_JOY_FIELDS or len(msg.buttons) > MAX_JOY_FIELDS:
            self._warn('joy/size', f'joy: {len(msg.axes)} axes / {len(msg.buttons)} buttons, '
                       f'more than {MAX_JOY_FIELDS}; dropped')
            return
        with self.wake:
            # stamped with its arrival in sim time: freshness by arrival
            self._joy = JoyState(list(msg.axes), list(msg.buttons), self._sim_time)

    def _srv_pause(self, request: Any, response: Any) -> Any:
        if self._service_refused('pause', response):
            return response
        with self.wake:
            changed = self.clock.paused != bool(request.data)
            self.clock.pause(bool(request.data))
            self.wake.notify_all()
        response.success = True
        response.message = 'paused' if request.data else 'running'
        if changed:  # a client repeating the call does not flood the log
            self.get_logger().info(f'simulation {response.message}')
        return response

    def _trigger(self, response: Any, frames: int = 0, seconds: float = 0.0) -> Any:
        try:
            with self.wake:
                if seconds > 0.0:
                    frames = self.clock.advance_seconds(seconds)
                else:
                    self.clock.step(frames)
                self.wake.notify_all()
            response.success = True
            response.message = f'advancing {frames} frame(s)'
        except ValueError as err:
            response.success = False
            response.message = str(err)
        return response

    def _srv_step(self, request: Any, response: Any) -> Any:
        if self._service_refused('step', response):
            return response
        return self._trigger(response, frames=1)

    def _srv_advance(self, request: Any, response: Any) -> Any:
        if self._service_refused('advance', response):
            return response
        seconds = float(self.get_parameter('advance_seconds').value)
        frames = int(self.get_parameter('advance_frames').value)
        return self._trigger(response, frames=frames, seconds=seconds)

    # --------------------------------------------------------------- frames
    def publish_frame(self, frame: Frame) -> None:
        """Publish every message of ``frame`` (one sim-time stamp)."""
        with self.lock:  # commands computed from it may come back at once
            self.clock.announce(frame.sim_time)
        for (key, name), msg in self.converter.messages(frame, self.source,
                                                        self.control).items():
            self._publisher(key, name).publish(msg)
            self.published[name] = self.published.get(name, 0) + 1
        if self.tf_pub is not None:
            self.tf_pub.publish(tf_message(self.converter.transforms(frame)))
            name = contract.topic('tf').resolve(self.role)
            self.published[name] = self.published.get(name, 0) + 1

    def _take_inputs(self) -> Tuple[Any, Any, Any]:
        with self.lock:
            out = (self._cmd, self._brake, self._joy)
            self._cmd = self._brake = self._joy = None
        return out

    def control_step(self, frame: Frame) -> VehicleControl:
        """Run the low-level controller at ``frame`` and return its control."""
        cmd, brake, joy = self._take_inputs()
        if self._debug:
            self.get_logger().debug(
                f'control at t={frame.sim_time:.3f}: cmd_vel of t='
                f'{"-" if cmd is None else f"{cmd[2]:.3f}"}, brake_request of t='
                f'{"-" if brake is None else f"{brake[1]:.3f}"} (-: none new)')
        if self.cruise_speed is not None:
            cmd = (self.cruise_speed, 0.0, frame.sim_time)
        control, source = self.llc.update(frame.sim_time, frame.ego.speed, cmd, brake, joy)
        for text in self.llc.drain_messages():
            if text.startswith('joy ignored'):  # raised once by the controller
                self.get_logger().error(text)
            else:
                self._warn(text.split(':')[0], text)
        if source != self.source:
            self.get_logger().info(f'control source: {self.source} -> {source}')
        self.control, self.source = control, source
        return control

    def result(self, reason: str, status: str = '') -> Dict[str, Any]:
        """Return the referee summary of the run, with the bridge's counters."""
        out: Dict[str, Any] = {}
        res = getattr(self.backend, 'result', None)
        if res is not None and hasattr(res, 'as_dict'):
            out.update(res.as_dict())
        frame = self.frame
        if frame is not None:
            for ev in frame.events:
                if ev.kind == 'mission_end':
                    for k, val in ev.data.items():
                        out.setdefault(k, val)
        out.setdefault('status', 'running')
        if status:
            out['status'] = status
        out.update({'scenario': self.scenario.name, 'end_reason': reason,
                    'sim_time': None if frame is None else frame.sim_time,
                    'frames': None if frame is None else frame.frame,
                    'lockstep_timeouts': self.clock.timeouts,
                    'controller': dict(self.llc.counters),
                    'sources': self.guard.summary(),
                    'rejected_commands': {k: dict(g.rejected) for k, g in self.gates.items()},
                    'published': dict(sorted(self.published.items())),
                    'republished_frames': self.republished,
                    'resent_frames': self.resent})
        return out

    def request_stop(self, signum: int = 0, _frame: object = None) -> None:
        """Ask the run loop to end after the current frame (signal-safe)."""
        self.stop_requested.set()
        with self.wake:
            self.wake.notify_all()

    def _running(self) -> bool:
        return rclpy.ok(context=self.context) and not self.stop_requested.is_set()

    def _setup_backend(self) -> Frame:
        deadline = time.monotonic() + float(self.values['reconnect_timeout'])
        while True:
            try:
                return self.backend.setup(self.scenario, self.rig)
            except BackendError as err:
                where = (f"CARLA at {self.values['host']}:{self.values['port']}"
                         if self.values['backend'] == 'carla' else 'the built-in simulator')
                if not getattr(err, 'retry', True):
                    raise  # e.g. the scenario's map is not on the server
                if time.monotonic() >= deadline or not self._running():
                    raise BackendError(
                        f'cannot set up {where}: {err}. Check that the server runs, '
                        'the host/port parameters and the timeout') from err
                self._warn('setup', f'cannot set up {where} ({err}); retrying')
                time.sleep(1.0)

    def _tick(self, frame: Frame) -> Optional[Frame]:
        """
        Run the controller, apply its control and advance one frame.

        Synchronous: control from ``frame``, then ``step``. Asynchronous:
        poll ``latest()`` and control from the new frame (None: nothing
        new). A lost backend is retried for ``reconnect_timeout`` with the
        brake commanded, then ``BackendError`` is raised.
        """
        deadline: Optional[float] = None
        controlled = False
        while True:
            try:
                if self.mode == 'async':
                    new = self.backend.latest()
                    if new is not None:
                        if deadline is None:
                            self.control_step(new)
                        self.backend.apply_control(self.control)
                    return new
                if not controlled:
                    self.control_step(frame)
                    controlled = True
                self.backend.apply_control(self.control)
                return self.backend.step(self.dt)
            except BackendError as err:
                if deadline is None:
                    deadline = time.monotonic() + float(self.values['reconnect_timeout'])
                    self.get_logger().error(
                        f"backend lost ({err}) at {self.values['host']}:"
                        f"{self.values['port']}: commands stopped, retrying for "
                        f"{self.values['reconnect_timeout']} s")
                    self.control, self.source = VehicleControl(brake=1.0), 'watchdog'
                if time.monotonic() >= deadline or not self._running():
                    raise
                time.sleep(0.5)

    def run(self) -> int:
        """Run the simulation loop until the end; return the exit code."""
        frame = self._setup_backend()
        self.frame = frame
        with self.lock:
            self._sim_time = frame.sim_time
        if self.tf_static_pub is not None:
            self.tf_static_pub.publish(tf_message(self.converter.static_transforms()))
            self.published[contract.topic('tf_static').resolve(self.role)] = 1
        self.get_logger().info(
            f'{self.values["backend"]} backend ready: scenario {self.scenario.name}, '
            f'{len(self.rig)} sensors, mode {self.mode}, dt {self.dt} s')
        duration = float(self.values['duration'])
        if self.recorder is not None:
            waited = time.monotonic()
            pending = self.recorder.wait_matched(
                self.publishers_by_name, self._running,
                float(self.values['lockstep_startup_timeout']))
            waited = time.monotonic() - waited
            if not pending:
                self.get_logger().info(f'recorder matched on every recorded topic '
                                       f'(waited {waited:.2f} s)')
            else:
                self.get_logger().warning(
                    'the recorder has not matched ' + ', '.join(pending) +
                    ': their first messages may be missing from the recording')
        self.publish_frame(frame)
        if self.wait_for_recorder and self.mode != 'lockstep':
            self._wait_recorder(frame)
        with self.lock:
            self.clock.on_published(frame.sim_time, time.monotonic())
        self.last_pub = time.monotonic()
        while self._running():
            with self.wake:
                decision = self.clock.ready(time.monotonic())
                if not decision.tick:
                    self.wake.wait(timeout=min(decision.wait, 0.05))
            if not decision.tick:
                self._resend(frame)
                continue
            if decision.message:
                self.get_logger().warning(decision.message)
            new = self._tick(frame)
            if new is None:  # asynchronous, nothing new yet
                time.sleep(0.001)
                continue
            frame = new
            with self.lock:
                self.clock.on_tick(time.monotonic())
                self._sim_time = frame.sim_time
            self.frame = frame
            self.publish_frame(frame)
            self.last_pub = time.monotonic()
            with self.lock:
                self.clock.on_published(frame.sim_time, self.last_pub)
            ended = any(ev.kind == 'mission_end' for ev in frame.events)
            for ev in frame.events:
                self.get_logger().info(f'referee: {ev.kind} at t={ev.sim_time:.2f} {ev.data}')
            if ended and bool(self.values['exit_on_mission_end']):
                return self.finish('mission_end')
            if duration > 0.0 and frame.sim_time >= duration - 1e-9:
                return self.finish('duration')
        return self.finish('shutdown')

    def _resend(self, frame: Frame) -> None:
        """
        Lockstep: publish ``frame`` again when its answers are overdue.

        Before every lockstep topic has answered once, every
        ``REPUBLISH_PERIOD`` s (nodes that came up after the frame was sent
        still get it); after that, every ``resend_period`` s while an
        answer is missing (a best-effort message lost under load). The
        onboard nodes answer a copy as they answered the original (same
        stamp, same inputs), and the clock's timeout still counts from the
        first publication.
        """
        if self.mode != 'lockstep':
            return
        with self.lock:
            started = self.clock.started()
            missing = self.clock.missing()
        period = self.resend_period if started else REPUBLISH_PERIOD
        if not missing or time.monotonic() - self.last_pub <= period:
            return
        self.publish_frame(frame)
        self.republished += 1
        self.resent += int(started)
        self.last_pub = time.monotonic()
        if started:
            self.get_logger().warning(
                f'lockstep: no {", ".join(missing)} for the frame at '
                f't={frame.sim_time:.3f} s after {period:g} s: sent it again')

    def _final_answers(self) -> None:
        """
        Lockstep: wait for the answers to the last frame published.

        Every frame before the last is answered before the next tick; the
        last one is not ticked on, so without this wait the run ended
        while the detectors and the planner still worked on it and a
        recording missed their last messages (one frame in 150 of a CI
        acceleration run). Waits as :meth:`SimClock.awaiting` says (the
        limit from the frame's publication); a timeout counts in
        ``lockstep_timeouts``.
        """
        if self.mode != 'lockstep':
            return
        while self._running():
            with self.wake:
                waiting, message = self.clock.awaiting(time.monotonic(), 'ending without it')
                if message:
                    self.get_logger().warning(message)
                if not waiting:
                    return
                self.wake.wait(timeout=0.05)
            if self.frame is not None:
                self._resend(self.frame)

    def _final_ack(self) -> None:
        """Wait until the recorder acknowledged the last frame published."""
        frame = self.frame
        if self.recorder is None or frame is None:
            return
        if not self.recorder.wait_ack(frame.sim_time, FINAL_ACK_TIMEOUT):
            self.get_logger().warning(
                f'the recorder did not acknowledge the last frame (t={frame.sim_time:.3f} s) '
                f'within {FINAL_ACK_TIMEOUT:g} s: the recording may miss its end')

    def _wait_recorder(self, frame: Frame) -> None:
        """Re-send the first frame until a recorder acknowledges it."""
        limit = float(self.values['lockstep_startup_timeout'])
        deadline = time.monotonic() + (limit if limit > 0.0 else math.inf)
        while self._running() and time.monotonic() < deadline:
            if self.recorder.wait_ack(frame.sim_time, REPUBLISH_PERIOD, self._running):
                return
            self.publish_frame(frame)
            self.republished += 1
        if self.recorder.acked < frame.sim_time - 1e-6:
            self.get_logger().warning('no recorder_status within '
                                      f'{limit:g} s; running without it')

    def finish(self, reason: str, status: str = '') -> int:
        """Wait for the recorder's last acknowledgement, print the result line, return 0."""
        if reason != 'backend_lost':
            self._final_answers()
            self._final_ack()
        try:
            print(RESULT_PREFIX + json.dumps(self.result(reason, status), default=str),
                  flush=True)
        except OSError:  # the runner is gone (broken pipe): nobody reads it
            pass
        return EXIT_OK


def _spin(executor: SingleThreadedExecutor, stopping: threading.Event) -> None:
    try:
        executor.spin()
    except (ExternalShutdownException, KeyboardInterrupt):
        pass
    except Exception:  # noqa: B902 - judged below
        # the node is torn down while this thread still waits in spin
        # (executor.shutdown timed out on a loaded machine): rclpy then
        # raises on the destroyed entities (AttributeError on Jazzy); that
        # is the shutdown, not an error
        if not stopping.is_set():
            raise


def main(args: Optional[List[str]] = None) -> int:
    """
    Start the bridge, run it to the end and return the exit code.

    SIGINT and SIGTERM do not tear the ROS context down under the running
    loop (rclpy's own handlers would, and a publish on a dead context
    raises): they ask the loop to stop after the current frame, so the
    referee result line is printed before the context goes. Whatever the
    bridge is doing, the process is gone within
    :data:`hil_bridge.interface.node_main.STOP_DEADLINE` of the signal.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node: Optional[BridgeNode] = None
    code = EXIT_OK
    executor = SingleThreadedExecutor()
    thread = None
    stop: Optional[StopRequest] = None
    pending = threading.Event()  # a signal while the node is being built
    stopping = threading.Event()  # teardown has begun (the spin thread may fail)

    def on_request() -> None:
        if node is not None:
            node.request_stop()
        pending.set()
    try:
        stop = StopRequest(on_request=on_request)
        try:
            node = BridgeNode()
        except (ValueError, FileNotFoundError, KeyError) as err:
            print(f'hil_bridge: bad configuration: {err}', file=sys.stderr, flush=True)
            return EXIT_CONFIG
        except BackendError as err:
            print(f'hil_bridge: {err}', file=sys.stderr, flush=True)
            return EXIT_BACKEND
        if pending.is_set():
            node.request_stop()
        executor.add_node(node)
        thread = threading.Thread(target=_spin, args=(executor, stopping), daemon=True)
        thread.start()
        try:
            code = node.run()
        except BackendError as err:
            node.get_logger().error(f'{err}; exiting')
            node.finish('backend_lost', status='error')
            code = EXIT_BACKEND
        if not node.stop_requested.is_set():
            time.sleep(0.3)  # let reliable subscribers get the last messages
    finally:
        stopping.set()
        if stop is not None:
            stop.restore()
        if node is not None:
            try:
                node.backend.teardown()
            except Exception as err:  # noqa: B902 - teardown must not mask the exit
                print(f'hil_bridge: teardown failed: {err}', file=sys.stderr)
        executor.shutdown(timeout_sec=0.5)
        if thread is not None:
            thread.join(timeout=0.5)
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        if stop is not None:
            stop.done()
    return code


if __name__ == '__main__':
    sys.exit(main())
