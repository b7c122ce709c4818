# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The CARLA backend: loads a scenario into a CARLA 0.9.x server (no rclpy).

:class:`CarlaBackend` implements :class:`hil_bridge.bridge.backend.Backend`. It
connects with a timeout and retries, spawns the ego vehicle, its sensor rig,
the track's cones (static props) and the other actors, sets the world
settings (restored on teardown), and turns the sensors' callbacks into
complete, REP-103 :class:`hil_bridge.bridge.backend.Frame` objects:

* synchronous mode: ``step`` ticks the world and waits (up to
  ``sensor_timeout``) until every sensor *due at that frame* has delivered;
  a sensor with ``sensor_tick`` T is due every ``ceil(T / dt)`` frames
  after its last delivery. Late data of an already published frame is
  stale and dropped; a sensor that misses ``max_missed`` frames in a row is
  no longer waited for until it delivers again.
* asynchronous mode: the server runs on its own; ``latest`` returns the
  newest complete frame (older incomplete ones are dropped).

Conversions (``hil_bridge.interface.frames``): camera images are zero-copy bgr8 views
of the BGRA buffer (the view keeps the CARLA image alive); lidar points are
float32 (N, 4) with y negated in one vectorised pass; actor states are
REP-103 (``map`` for poses and velocities, body frame for angular velocity
and acceleration). Frame numbers and times are counted from the first frame
after set-up (frame 0, t = 0); the server's absolute values are in
``carla_frame``/``carla_time``.

Every actor spawned is destroyed on ``teardown`` (also on a failed set-up,
at interpreter exit, and on SIGINT/SIGTERM once
:meth:`CarlaBackend.install_signal_handlers` is called), in one
``apply_batch_sync`` of ``carla.command.DestroyActor``.

The ``carla`` module is imported on first use, so this module loads where
the CARLA client is not installed.
"""

import atexit
from collections import deque
from dataclasses import dataclass, field
import logging
import math
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from hil_bridge.bridge.backend import (ActorState, Backend, BackendError, Event, Frame,
                                       SensorReading, VehicleControl)
from hil_bridge.carla_backend import ue_frames
from hil_bridge.carla_backend.retired_clients import retire
from hil_bridge.interface import frames
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.rig import SensorSpec
from hil_bridge.interface.track import ConeArray
import numpy as np

LIDAR = 'sensor.lidar.ray_cast'
CAMERA_PREFIX = 'sensor.camera.'
COLLISION = 'sensor.other.collision'

#: Stock CARLA has no blue or yellow Formula Student cones: every small cone
#: is ``static.prop.trafficcone01`` (orange/white) and the big orange one is
#: ``static.prop.constructioncone``. The ground truth keeps the real class.
DEFAULT_CONE_BLUEPRINTS: Dict[int, str] = {
    CONE_UNKNOWN: 'static.prop.trafficcone01',
    CONE_BLUE: 'static.prop.trafficcone01',
    CONE_YELLOW: 'static.prop.trafficcone01',
    CONE_ORANGE: 'static.prop.trafficcone01',
    CONE_BIG_ORANGE: 'static.prop.constructioncone',
}

_Log = Any  # logging.Logger or an rclpy logger (debug/info/warning/error)


class _KeepAlive(np.ndarray):
    """
    An ndarray view that keeps the CARLA measurement owning its memory.

    ``carla.Image.raw_data`` is a memoryview of the image's own memory that
    does not hold a reference to the image; a plain numpy view would
    dangle once the image is freed. Views of this array keep it (and
    through ``_owner`` the image) alive.
    """

    _owner: Any = None

    def __array_finalize__(self, obj: Any) -> None:
        """Propagate the owner to views."""
        self._owner = getattr(obj, '_owner', None)


def camera_intrinsics(width: int, height: int, fov_deg: float) -> np.ndarray:
    """
    Return the 3x3 pinhole K of a CARLA camera (pixels).

    ``fx = fy = width / (2 tan(fov / 2))``, ``cx = width / 2``,
    ``cy = height / 2`` (fov: horizontal, degrees, in (0, 180)).
    """
    fov = float(fov_deg)
    if not (0.0 < fov < 180.0) or width <= 0 or height <= 0:
        raise ValueError(f'camera: bad size {width}x{height} or fov {fov}')
    f = width / (2.0 * math.tan(math.radians(fov) / 2.0))
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0],
                     [0.0, 0.0, 1.0]])


class SlowServer(BackendError):
    """The server is alive (accepts connections) but did not answer in time."""


class SetupError(BackendError):
    """A set-up error retrying cannot fix (e.g. the scenario's map is not on the server)."""

    retry = False


#: role_name of the cone props this backend spawns (found again after a crash)
CONE_ROLE = 'hil_cone'
#: role_name of the ego's collision sensor
COLLISION_ROLE = 'hil_collision'


def map_basename(name: str) -> str:
    """Return the bare map name of ``Town``, ``Carla/Maps/Town`` or ``/Game/.../Town``."""
    return str(name).strip().rstrip('/').split('/')[-1]


def _version_core(version: str) -> Tuple[str, ...]:
    """Return the leading ``major.minor.patch`` parts of a version string."""
    core = str(version).strip().split('-')[0]
    return tuple(core.split('.')[:3])


# --------------------------------------------------------------------------
# per-frame assembly of sensor data


@dataclass
class _Payload:
    data: np.ndarray
    intrinsics: Optional[np.ndarray]
    frame: int
    timestamp: float


@dataclass
class _Pending:
    readings: Dict[str, _Payload] = field(default_factory=dict)
    timestamp: float = 0.0
    first_arrival: float = 0.0


class FrameAssembler:
    """
    Collect sensor data per CARLA frame and decide when a frame is complete.

    ``periods`` maps sensor id to its ``sensor_tick`` (s, 0 = every frame);
    ``dt`` is the frame period (s). A sensor's schedule is a time grid
    anchored at a delivery: it is due at the first frame whose sim time
    reaches the next grid point ``anchor + k * period`` (as CARLA's actor
    tick interval and ``carla-hil serve`` schedule it), matched by the
    frame numbers and times its data carries, not by a predicted frame
    count (``ceil(period / dt)`` is wrong whenever period / dt is not an
    integer). A delivery off the grid re-anchors it (counted in
    ``stats['reanchored']``). A sensor never heard of is due. Thread-safe:
    ``add`` runs in CARLA's callback threads, the rest in the bridge's
    thread.
    """

    def __init__(self, periods: Dict[str, float], dt: float,
                 synchronous: bool = True, max_missed: int = 5,
                 logger: Optional[_Log] = None, max_pending: int = 64
                 ) -> None:
        self.periods = dict(periods)
        self.dt = float(dt)
        self.synchronous = bool(synchronous)
        self.max_missed = int(max_missed)
        self._log = logger or logging.getLogger(__name__)
        self._max_pending = int(max_pending)
        self._cond = threading.Condition()
        self._pending: Dict[int, _Pending] = {}
        self._history: Dict[str, Deque[Tuple[int, float]]] = {
            s: deque(maxlen=16) for s in self.periods}
        self._missed: Dict[str, int] = dict.fromkeys(self.periods, 0)
        self._ignored: Dict[str, bool] = dict.fromkeys(self.periods, False)
        #: per sensor: (anchor time, next grid time) of its schedule (s)
        self._grid: Dict[str, Tuple[float, float]] = {}
        self.emitted = -1
        self.stats: Dict[str, int] = {'stale': 0, 'missing': 0,
                                      'incomplete_dropped': 0, 'reanchored': 0}

    #: slack on sim-time comparisons (s): frame times are sums of float deltas
    EPS = 1e-4

    def _schedule(self, sensor_id: str, t: float) -> None:
        """Move a sensor's grid past its delivery at sim time ``t`` (locked)."""
        period = self.periods.get(sensor_id, 0.0)
        if period <= 0.0:
            return
        grid = self._grid.get(sensor_id)
        anchor = t if grid is None else grid[0]
        k = math.floor((t - anchor) / period + self.EPS / period)
        if t - (anchor + k * period) >= max(self.dt, self.EPS) - self.EPS:
            # not the first frame after a grid point: a new schedule
            self.stats['reanchored'] += 1
            anchor, k = t, 0
        self._grid[sensor_id] = (anchor, anchor + (k + 1) * period)

    def wait_heard(self, frame: int, sensors: List[str], timeout: float) -> None:
        """Wait up to ``timeout`` s until each of ``sensors`` delivered for ``frame`` or later."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                late = [s for s in sensors
                        if not any(f >= frame for f, _ in self._history.get(s, ()))]
                remaining = deadline - time.monotonic()
                if not late or remaining <= 0.0:
                    return
                self._cond.wait(remaining)

    def discard(self) -> None:
        """Drop every pending frame (warm-up data); schedules stay."""
        with self._cond:
            if self._pending:
                self.emitted = max(self.emitted, max(self._pending))
            self._pending.clear()

    def heard(self) -> List[str]:
        """Return the sensors that delivered at least once."""
        with self._cond:
            return [s for s, h in self._history.items() if h]

    def add(self, sensor_id: str, payload: _Payload) -> bool:
        """Store one sensor's data; return False when it is stale."""
        with self._cond:
            hist = self._history.setdefault(sensor_id, deque(maxlen=16))
            if not hist or payload.frame > hist[-1][0]:
                self._schedule(sensor_id, payload.timestamp)
            hist.append((payload.frame, payload.timestamp))
            if self._ignored.get(sensor_id):
                self._ignored[sensor_id] = False
                self._log.info(f'sensor {sensor_id} delivers again')
            self._missed[sensor_id] = 0
            if payload.frame <= self.emitted:
                self.stats['stale'] += 1
                return False
            entry = self._pending.get(payload.frame)
            if entry is None:
                entry = _Pending(timestamp=payload.timestamp,
                                 first_arrival=time.monotonic())
                self._pending[payload.frame] = entry
                while len(self._pending) > self._max_pending:
                    oldest = min(self._pending)
                    self.stats['stale'] += len(
                        self._pending.pop(oldest).readings)
            entry.readings[sensor_id] = payload
            self._cond.notify_all()
            return True

    def _last_before(self, sensor_id: str, frame: int
                     ) -> Optional[Tuple[int, float]]:
        best = None
        for f, t in self._history.get(sensor_id, ()):
            if f < frame and (best is None or f > best[0]):
                best = (f, t)
        return best

    def due(self, frame: int, t: float) -> List[str]:
        """Return the sensors expected at ``frame`` (sim time ``t``, s)."""
        with self._cond:
            out = []
            for sid, period in self.periods.items():
                if self._ignored.get(sid):
                    continue
                last = self._last_before(sid, frame)
                grid = self._grid.get(sid)
                if last is None or period <= 0.0 or grid is None:
                    out.append(sid)
                elif t >= grid[1] - self.EPS:
                    out.append(sid)
                elif any(f == frame for f, _ in self._history.get(sid, ())):
                    out.append(sid)          # it delivered for this frame
            return out

    def _take(self, frame: int, missing: List[str]) -> Dict[str, _Payload]:
        """Pop ``frame``, drop older pending frames, count misses (locked)."""
        entry = self._pending.pop(frame, None)
        for f in [f for f in self._pending if f < frame]:
            self.stats['stale'] += len(self._pending.pop(f).readings)
            self.stats['incomplete_dropped'] += 1
        self.emitted = max(self.emitted, frame)
        self.stats['missing'] += len(missing)
        for sid in missing:
            self._missed[sid] = self._missed.get(sid, 0) + 1
            if self._missed[sid] >= self.max_missed and \
                    not self._ignored.get(sid):
                self._ignored[sid] = True
                self._log.error(
                    f'sensor {sid} missed {self._missed[sid]} frames in a '
                    'row: no longer waiting for it (frames go out without '
                    'it until it delivers again)')
        return entry.readings if entry is not None else {}

    def wait(self, frame: int, t: float, timeout: float
             ) -> Tuple[Dict[str, _Payload], List[str]]:
        """
        Wait until every sensor due at ``frame`` has delivered.

        Returns the frame's data and the ids of due sensors still missing
        after ``timeout`` seconds (wall clock).
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            due = self.due(frame, t)
            while True:
                entry = self._pending.get(frame)
                got = entry.readings if entry is not None else {}
                missing = [s for s in due if s not in got]
                remaining = deadline - time.monotonic()
                if not missing or remaining <= 0.0:
                    break
                self._cond.wait(remaining)
            return self._take(frame, missing), missing

    def newest_complete(self, max_age: float
                        ) -> Optional[Tuple[int, float, Dict[str, _Payload],
                                            List[str]]]:
        """
        Return the newest complete pending frame (asynchronous mode).

        A frame waiting longer than ``max_age`` seconds (wall clock) counts
        as complete with its missing sensors reported. Returns ``(frame,
        timestamp, data, missing)`` or None; older frames are dropped.
        """
        with self._cond:
            now = time.monotonic()
            for f in sorted(self._pending, reverse=True):
                entry = self._pending[f]
                missing = [s for s in self.due(f, entry.timestamp)
                           if s not in entry.readings]
                if not missing or now - entry.first_arrival > max_age:
                    ts = entry.timestamp
                    return f, ts, self._take(f, missing), missing
            return None

    def wait_any(self, timeout: float) -> None:
        """Block until new data arrives or ``timeout`` seconds pass."""
        with self._cond:
            self._cond.wait(timeout)


# --------------------------------------------------------------------------
# steering through the vehicle's own physics control


@dataclass
class Steering:
    """
    How a CARLA vehicle turns its front wheels (from its physics control).

    CARLA turns each wheel by ``steer x max_steer_angle`` of that wheel
    (``get_physics_control().wheels``, degrees) times the steering curve
    at the current forward speed (``steering_curve``: (km/h, factor)
    points, linear in between, held beyond the ends). ``max_angle`` (rad)
    is the front wheels' mean ``max_steer_angle``.
    """

    max_angle: float
    curve: Tuple[Tuple[float, float], ...] = ()
    #: front-to-rear axle distance from the wheel positions (m; 0 = unknown)
    wheelbase: float = 0.0

    @classmethod
    def of(cls, physics_control: Any, what: str) -> 'Steering':
        """Read a ``carla.VehiclePhysicsControl``; BackendError if it cannot steer."""
        wheels = list(physics_control.wheels)
        front = [abs(float(w.max_steer_angle)) for w in wheels[:2]]
        if not front or not all(math.isfinite(a) for a in front) or max(front) <= 0.0:
            raise BackendError(f'{what}: the front wheels have no max_steer_angle '
                               f'({front} deg): the vehicle cannot steer')
        curve = tuple(sorted((float(p.x), float(p.y))
                             for p in physics_control.steering_curve))
        wheelbase = 0.0
        try:
            pos = np.array([[w.position.x, w.position.y, w.position.z]
                            for w in wheels], np.float64) / 100.0   # UE cm -> m
            if len(pos) == 4 and np.all(np.isfinite(pos)):
                wheelbase = float(np.linalg.norm(pos[:2].mean(0) - pos[2:].mean(0)))
        except (AttributeError, TypeError):
            pass
        return cls(math.radians(sum(front) / len(front)), curve, wheelbase)

    def factor(self, speed: float) -> float:
        """Return the steering curve's factor at ``speed`` (m/s, any sign)."""
        if not self.curve:
            return 1.0
        xs, ys = zip(*self.curve)
        return max(float(np.interp(abs(speed) * 3.6, xs, ys)), 1e-3)

    def carla_steer(self, angle: float, speed: float) -> float:
        """Return the CARLA steer (-1..1) for a road-wheel angle (rad, > 0 right)."""
        steer = angle / (self.max_angle * self.factor(speed))
        return min(max(steer, -1.0), 1.0)


# --------------------------------------------------------------------------
# the backend


@dataclass
class _SensorSlot:
    sensor_id: str
    blueprint: str
    kind: str
    period: float
    actor: Any = None
    intrinsics: Optional[np.ndarray] = None


@dataclass
class _ActorSlot:
    role_name: str
    actor: Any
    size: np.ndarray
    box_offset: float
    frame_offset: float = 0.0
    script: Any = None
    path: str = 'line'


class CarlaBackend(Backend):
    """
    A CARLA 0.9.x server as a :class:`hil_bridge.bridge.backend.Backend`.

    ``host``/``port``: the server's RPC address; ``timeout`` (s) for every
    RPC; ``retries`` connection attempts ``retry_delay`` s apart;
    ``synchronous`` with ``fixed_delta_seconds`` (s; 0 = variable steps in
    asynchronous mode); ``sensor_timeout`` (s, wall clock) how long a frame
    waits for a due sensor; ``max_missed`` consecutive misses after which a
    sensor is no longer waited for; ``cone_blueprints`` maps cone class ids
    to CARLA props; ``cone_z`` is the height (m, REP-103 ``map``) at which
    cones are placed (static props do not fall); ``collision_sensor``
    attaches ``sensor.other.collision`` to the ego for cone_hit and
    collision events; ``logger`` is a ``logging.Logger`` or rclpy logger;
    ``map_name`` the CARLA map to run on (None = the scenario's ``map``,
    '' = whatever the server has). The RPC port is checked with a plain TCP
    connection before connecting and after a failed call (:meth:`probe`).
    """

    def __init__(self, host: str = 'localhost', port: int = 2000,
                 timeout: float = 10.0, role_name: str = 'ego_vehicle',
                 synchronous: bool = True, fixed_delta_seconds: float = 0.05,
                 retries: int = 3, sensor_timeout: float = 2.0,
                 retry_delay: float = 1.0, max_missed: int = 5,
                 cone_blueprints: Optional[Dict[int, str]] = None,
                 cone_z: float = 0.0, collision_sensor: bool = True,
                 logger: Optional[_Log] = None,
                 map_name: Optional[str] = None) -> None:
        def positive(name: str, value: Any, allow_zero: bool = False
                     ) -> float:
            v = float(value)
            if not math.isfinite(v) or v < 0.0 or (v == 0.0 and
                                                   not allow_zero):
                raise ValueError(f'CarlaBackend: {name} must be '
                                 f'{">= 0" if allow_zero else "> 0"}, '
                                 f'got {value!r}')
            return v
        if not isinstance(host, str) or not host:
            raise ValueError(f'CarlaBackend: host must be a non-empty '
                             f'string, got {host!r}')
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError(f'CarlaBackend: port must be 1..65535, got '
                             f'{port!r}')
        if not isinstance(retries, int) or retries < 1:
            raise ValueError(f'CarlaBackend: retries must be >= 1, got '
                             f'{retries!r}')
        if not role_name:
            raise ValueError('CarlaBackend: role_name must not be empty')
        self.host = host
        self.port = port
        self.timeout = positive('timeout', timeout)
        self.role_name = str(role_name)
        self.synchronous = bool(synchronous)
        self.fixed_delta_seconds = positive(
            'fixed_delta_seconds', fixed_delta_seconds,
            allow_zero=not synchronous)
        self.retries = retries
        self.retry_delay = positive('retry_delay', retry_delay, True)
        self.sensor_timeout = positive('sensor_timeout', sensor_timeout)
        self.max_missed = max(1, int(max_missed))
        self.cone_blueprints = dict(DEFAULT_CONE_BLUEPRINTS)
        self.cone_blueprints.update(cone_blueprints or {})
        self.cone_z = float(cone_z)
        self.collision_sensor = bool(collision_sensor)
        self.map_name = map_name
        self._carla_module: Any = None
        self._log = logger or logging.getLogger('hil_bridge.carla_backend.backend')
        self._client: Any = None
        self._world: Any = None
        self.server_version = ''
        self.client_version = ''
        #: counters of the last run (kept after teardown)
        self.stats: Dict[str, int] = {}
        #: what set-up found of an earlier run (synchronous, leftover actors)
        self.recovered: Dict[str, Any] = {}
        #: the judge of the last run (kept after teardown for ``result``)
        self.referee: Any = None
        self._reset_state()
        self._teardown_lock = threading.RLock()
        #: callbacks running in the client's threads, and whether they are closed
        self._callbacks = threading.Condition()
        self._in_callback = 0
        self._callbacks_closed = True
        self._prev_handlers: Dict[int, Any] = {}

    def _reset_state(self) -> None:
        self._original_settings: Any = None
        self._spawned_ids: List[int] = []
        self._ego: Any = None
        self._ego_slot: Optional[_ActorSlot] = None
        self._actor_slots: List[_ActorSlot] = []
        self._sensors: List[_SensorSlot] = []
        self._assembler: Optional[FrameAssembler] = None
        self._cones = ConeArray()
        self._cone_index: Dict[int, int] = {}
        self._events: List[Event] = []
        self._events_lock = threading.Lock()
        self._control = VehicleControl()
        self._max_steer = 0.0
        self._steering: Optional[Steering] = None
        self._start_velocities: List[Tuple[Any, float, float]] = []
        self._wheelbase_ratio = 1.0
        #: contacts CARLA reported: (absolute time s, cone index)
        self._cone_contacts: List[Tuple[float, int]] = []
        #: (CARLA frame, absolute time s, role name, impulse N s)
        self._actor_contacts: List[Tuple[int, float, str, List[float]]] = []
        #: the last frames' footprints by CARLA frame, then role name
        #: (impact speeds of contacts that arrive a frame or two late)
        self._boxes: Dict[int, Dict[str, Any]] = {}
        self._collision: Any = None
        self._ego_speed = 0.0
        self.carla_control: Any = None
        self._frame0: Optional[int] = None
        self._t0 = 0.0
        self._sim_time = 0.0
        self._dt = self.fixed_delta_seconds
        self._ready = False
        self._gone = False
        self.carla_frame = -1
        self.carla_time = 0.0

    # ------------------------------------------------------------ helpers

    @property
    def carla(self) -> Any:
        """Return the ``carla`` module in use (imported on first use)."""
        if self._carla_module is None:
            try:
                import carla
            except ImportError as exc:
                raise BackendError(
                    'the CARLA Python client is not installed: pip install '
                    'carla==<server version> (e.g. 0.9.16)') from exc
            self._carla_module = carla
        return self._carla_module

    def _where(self) -> str:
        return f'CARLA server at {self.host}:{self.port}'

    def _lost(self, what: str, exc: BaseException) -> BackendError:
        return BackendError(f'lost the {self._where()} during {what}: {exc}; '
                            'check that the simulator is still running')

    def set_timeout(self, seconds: float) -> None:
        """Change the RPC timeout (s) of this backend and its client."""
        value = float(seconds)
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f'CarlaBackend.set_timeout: must be > 0, got {seconds!r}')
        self.timeout = value
        if self._client is not None:
            self._client.set_timeout(value)

    def probe(self) -> bool:
        """
        Return True when the server's RPC port accepts a TCP connection.

        Plain Python (the GIL is released while it waits, unlike the CARLA
        client's calls), at most ``min(timeout, 1 s)``.
        """
        try:
            with socket.create_connection((self.host, self.port),
                                          timeout=min(self.timeout, 1.0)):
                return True
        except OSError:
            return False

    def _failed(self, what: str, exc: BaseException) -> BackendError:
        """
        Classify a client ``RuntimeError``: slow server, lost server, or other.

        A time-out while the RPC port still accepts connections is a slow
        server (:class:`SlowServer`, counted in ``stats['slow_ticks']``),
        not a lost one; a port that refuses is a lost server.
        """
        text = str(exc)
        if self.probe():
            if 'time-out' in text or 'timed out' in text or 'timeout' in text.lower():
                self.stats['slow_ticks'] = self.stats.get('slow_ticks', 0) + 1
                return SlowServer(
                    f'the {self._where()} is slow: no answer to {what} within '
                    f'{self.timeout:g} s, but it still accepts connections (not lost; '
                    'raise the timeout parameter if it stays slow)')
            return BackendError(f'{what} on the {self._where()} failed: {text}')
        self._gone = True
        return self._lost(what, exc)

    def _transform(self, pose: Any) -> Any:
        """Return the ``carla.Transform`` of a REP-103 pose."""
        carla = self.carla
        loc, rot = ue_frames.ros_to_carla_pose(pose)
        return carla.Transform(carla.Location(*loc), carla.Rotation(*rot))

    def _heading_velocity(self, yaw: float, speed: float) -> Any:
        """Return a ``carla.Vector3D`` of ``speed`` (m/s) along REP-103 yaw."""
        carla = self.carla
        v = ue_frames.ros_to_carla_velocity(
            (speed * math.cos(yaw), speed * math.sin(yaw), 0.0))
        return carla.Vector3D(*v)

    # --------------------------------------------------------- connection

    def connect(self) -> None:
        """
        Connect to the server (``retries`` attempts) and check versions.

        Raises :class:`BackendError` naming host and port when the server
        cannot be reached; logs a warning when the client and server
        versions differ.
        """
        carla = self.carla
        last: Optional[BaseException] = None
        for attempt in range(1, self.retries + 1):
            if not self.probe():
                # Nothing listens: do not call the client (it would hold the
                # GIL, freezing every thread, for its whole time-out).
                last = ConnectionRefusedError(f'no server on TCP port {self.port}')
                self._log.warning(f'{self._where()} not reachable (attempt '
                                  f'{attempt}/{self.retries}): {last}')
                if attempt < self.retries:
                    time.sleep(self.retry_delay)
                continue
            try:
                client = carla.Client(self.host, self.port)
                client.set_timeout(self.timeout)
                world = client.get_world()
                server_version = client.get_server_version()
            except RuntimeError as exc:
                last = exc
                self._log.warning(f'{self._where()} not reachable (attempt '
                                  f'{attempt}/{self.retries}): {exc}')
                if attempt < self.retries:
                    time.sleep(self.retry_delay)
                continue
            self._client, self._world = client, world
            self.server_version = str(server_version)
            self.client_version = str(client.get_client_version())
            if _version_core(self.client_version) != \
                    _version_core(self.server_version):
                self._log.warning(
                    f'CARLA client {self.client_version} and server '
                    f'{self.server_version} versions differ: install the '
                    'matching client (pip install carla==<server version>)')
            self._log.info(f'connected to {self._where()} (server '
                           f'{self.server_version})')
            return
        raise BackendError(
            f'{self._where()} is unreachable after {self.retries} '
            f'attempt(s) with a {self.timeout:g} s timeout ({last}). Check '
            f'that CARLA is running on {self.host}, that it listens on RPC '
            f'port {self.port} (-carla-rpc-port; the streaming port '
            f'{self.port + 1} must be open too), that no firewall blocks '
            'them, and that the timeout is long enough for the map to load')

    # ------------------------------------------------------------ set-up

    def setup(self, scenario: Any, rig: List[SensorSpec]) -> Frame:
        """
        Spawn the scenario and the rig; return frame 0.

        On any failure every actor spawned so far is destroyed and the
        world settings are restored before the exception propagates
        (a ``RuntimeError`` of the client becomes a ``BackendError``).
        """
        if self._ready or self._spawned_ids:
            raise BackendError('CarlaBackend.setup called twice; call '
                               'teardown first')
        self.stats = {'frames': 0, 'bad_data': 0, 'slow_ticks': 0}
        with self._callbacks:
            self._callbacks_closed = False
        self.connect()
        # Also tear down when the interpreter exits without a teardown.
        atexit.register(self.teardown)
        try:
            self._ensure_map(scenario)
            found = self._apply_world_settings()
            # after apply_settings: the client has an episode state then
            # (get_actors reads the actor list of the last world snapshot)
            self._recover(scenario, rig, found)
            self._spawn_ego(scenario.ego)
            self._spawn_rig(rig)
            self._spawn_cones(getattr(scenario, 'track', None))
            for spec in getattr(scenario, 'actors', []) or []:
                self._spawn_actor(spec, scenario)
            self._make_referee(scenario)
            self._warm_up()
            for actor, yaw, speed in self._start_velocities:
                actor.set_target_velocity(self._heading_velocity(yaw, speed))
            self._ready = True
            if self.synchronous:
                return self._tick_and_collect(self._dt)
            return self._wait_async(self.timeout + self.sensor_timeout)
        except BaseException as exc:
            self._ready = False
            self._log.error(f'set-up failed ({exc!r}); destroying the '
                            f'{len(self._spawned_ids)} actor(s) spawned')
            self.teardown()
            if isinstance(exc, RuntimeError) and \
                    not isinstance(exc, BackendError):
                raise BackendError(f'set-up on the {self._where()} failed: '
                                   f'{exc}') from exc
            raise

    def _ensure_map(self, scenario: Any) -> None:
        """
        Load the scenario's map when the server has another.

        Raises :class:`SetupError` (not retried) naming the maps the server
        has when it does not have that one.
        """
        wanted = self.map_name if self.map_name is not None else \
            str(getattr(scenario, 'map_name', '') or '')
        if not wanted:
            return
        try:
            current = str(self._world.get_map().name)
            if map_basename(current) == map_basename(wanted):
                return
            maps = [str(m) for m in self._client.get_available_maps()]
        except RuntimeError as exc:
            raise self._lost('reading the map', exc) from exc
        if map_basename(wanted) not in {map_basename(m) for m in maps}:
            raise SetupError(
                f'map {wanted!r} of scenario {getattr(scenario, "name", "?")} is not on '
                f'the {self._where()} (it has {sorted(map_basename(m) for m in maps)}); '
                'set the bridge parameter carla_map to one of them')
        self._log.info(f'loading map {map_basename(wanted)} (the server has '
                       f'{map_basename(current)})')
        try:
            self._world = self._client.load_world(map_basename(wanted))
        except RuntimeError as exc:
            raise BackendError(f'loading map {wanted!r} on the {self._where()} '
                               f'failed: {exc}') from exc

    def _recover(self, scenario: Any, rig: List[SensorSpec], settings: Any) -> None:
        """
        Clean up after an earlier run that died (crash, SIGKILL).

        Actors whose ``role_name`` is one this backend gives (the ego, the
        scenario's actors, the rig's sensor ids, cones, the collision
        sensor) and sensors attached to such a vehicle are leftovers: they
        are reported and destroyed. A server found in synchronous mode is
        reported (frozen for every client until someone ticks or restores
        asynchronous mode); teardown then restores asynchronous mode, not
        the frozen state it found (:attr:`recovered`).
        """
        world = self._world
        roles = {self.role_name, CONE_ROLE, COLLISION_ROLE}
        roles.update(str(a.role_name) for a in getattr(scenario, 'actors', []) or [])
        roles.update(str(s.sensor_id) for s in rig)
        try:
            actors = list(world.get_actors())
        except RuntimeError as exc:
            raise self._lost('reading the world', exc) from exc
        ours = {int(a.id): a for a in actors
                if str(getattr(a, 'attributes', {}).get('role_name', '')) in roles}
        egos = {i for i, a in ours.items() if str(a.type_id).startswith('vehicle.')}
        for a in actors:
            parent = getattr(a, 'parent', None)
            if parent is not None and int(parent.id) in egos:
                ours[int(a.id)] = a
        self.recovered = {'synchronous': bool(settings.synchronous_mode),
                          'leftover_actors': len(ours)}
        if ours:
            kinds = sorted({str(a.type_id) for a in ours.values()})
            found = roles & {str(a.attributes.get('role_name', '')) for a in ours.values()}
            self._log.warning(
                f'{len(ours)} actor(s) of an earlier run found on the {self._where()} '
                f'(role names {sorted(found)}; '
                f'{", ".join(kinds[:6])}): destroying them')
            self._destroy(sorted(ours, reverse=True))
        if settings.synchronous_mode:
            self._log.warning(
                f'the {self._where()} is in synchronous mode '
                f'(fixed_delta_seconds {settings.fixed_delta_seconds}): '
                + ('left so by a run that died' if ours else
                   'left so by a client that did not restore it, or another client '
                   'drives it') + '; it will be left asynchronous at teardown')

    def _make_referee(self, scenario: Any) -> None:
        """
        Judge the run with the built-in referee on CARLA's states.

        Laps, off-course, collisions and DOO are judged from the ego's
        CARLA bounding box (the vehicle CARLA drives, e.g. the model3 for
        ``fs_car``) and the ground-truth cones; a cone CARLA reports a
        collision with (``sensor.other.collision`` on its prop: props have
        no physics, they do not fall) counts as hit too, once.
        """
        from hil_bridge.sim.referee import Referee
        mission = getattr(scenario, 'mission', '')
        if not mission:
            self.referee = None
            return
        wheelbase, track_width = 1.53, 1.2
        if getattr(scenario.ego, 'profile', ''):
            from hil_bridge.interface.vehicle_profile import load_vehicle_profile
            profile = load_vehicle_profile(scenario.ego.profile)
            wheelbase, track_width = profile.wheelbase, profile.track_width
        track = getattr(scenario, 'track', None)
        if track is not None and not hasattr(track, 'centerline'):
            track = None                     # cones only: no laps, no course
        self.referee = Referee(mission, self._cones, track,
                               laps=int(getattr(scenario, 'laps', 1)),
                               timeout=float(getattr(scenario, 'timeout', 120.0)),
                               wheelbase=wheelbase, track_width=track_width)

    @property
    def result(self) -> Any:
        """Return the referee's summary of the last run (None before set-up)."""
        return None if self.referee is None else self.referee.result

    def _judge(self, t: float, ego: ActorState, actors: List[ActorState]) -> List[Event]:
        """
        Run the referee on the frame's states; return its events (sim time ``t``).

        A contact CARLA reported is judged at its own time (the collision
        stream may deliver it after the frame it happened in was built)
        with the footprints of the frame before it (the impact speed).
        """
        from hil_bridge.sim.referee import Box
        referee = self.referee
        if referee is None or referee.finished:
            return []
        events: List[Event] = []

        def box(state: ActorState) -> Box:
            c, s = math.cos(state.pose.yaw), math.sin(state.pose.yaw)
            off = float(state.box_offset)
            return Box(x=state.pose.x + off * c, y=state.pose.y + off * s,
                       yaw=state.pose.yaw, length=float(state.size[0]),
                       width=float(state.size[1]), vx=float(state.velocity[0]),
                       vy=float(state.velocity[1]), name=state.role_name,
                       box_offset=off)
        with self._events_lock:
            contacts, self._cone_contacts = self._cone_contacts, []
            hits, self._actor_contacts = self._actor_contacts, []
        # contacts CARLA reported (the footprints may not overlap: a simulator
        # keeps the bodies apart)
        for t_abs, idx in contacts:
            events.extend(referee.cone_hit(min(t, t_abs - self._t0), int(idx),
                                           source='carla_collision'))
        boxes = {a.role_name: box(a) for a in [ego] + list(actors)}
        self._boxes[self.carla_frame] = boxes
        for frame in [f for f in self._boxes if f < self.carla_frame - 8]:
            del self._boxes[frame]
        for frame, t_abs, role, impulse in hits:
            if role in boxes:
                # the impact speed from the footprints before the contact (the
                # previous frame's when there is one, else the contact's own)
                before = next((self._boxes[f] for f in (frame - 1, frame)
                               if role in self._boxes.get(f, {})), boxes)
                events.extend(referee.collision(
                    min(t, t_abs - self._t0), before[ego.role_name], before[role],
                    source='carla_collision', impulse=impulse))
        fwd = np.array([math.cos(ego.pose.yaw), math.sin(ego.pose.yaw)])
        speed = float(np.dot(ego.velocity[:2], fwd))
        events.extend(referee.update(t, boxes[ego.role_name], speed,
                                     [boxes[a.role_name] for a in actors]))
        return events

    def _warm_up(self) -> None:
        """
        Run until every sensor stream delivered once (before frame 0).

        ``listen()`` connects a sensor's stream asynchronously and a CARLA
        sensor measures only while someone listens: the first frames after
        ``listen()`` can lack its data. Synchronous: tick (nothing moves
        yet: initial speeds are set afterwards) until each sensor's first
        message arrived; asynchronous: wait for it. At most
        ``sensor_timeout + timeout`` seconds; a sensor still silent is
        named in a warning (frame 0 then goes out without it).
        """
        assembler = self._assembler
        if assembler is None or not assembler.periods:
            return
        deadline = time.monotonic() + self.sensor_timeout + self.timeout
        world = self._world
        ticks = 0
        while True:
            silent = sorted(set(assembler.periods) - set(assembler.heard()))
            if not silent or time.monotonic() > deadline:
                break
            try:
                if self.synchronous:
                    self._send_control()
                    frame = int(world.tick(self.timeout))
                    ticks += 1
                    assembler.wait_heard(frame, silent, 0.2)
                else:
                    assembler.wait_any(0.05)
            except RuntimeError as exc:
                raise self._failed('warm-up tick', exc) from exc
        assembler.discard()
        self.stats['warm_up_ticks'] = ticks
        if silent:
            self._log.warning(f'sensor(s) {", ".join(silent)} sent nothing within '
                              f'{self.sensor_timeout + self.timeout:g} s after listen()')
        else:
            self._log.info(f'every sensor stream delivered ({ticks} warm-up tick(s))')

    def _apply_world_settings(self) -> Any:
        """Apply this run's settings; return the settings found."""
        world = self._world
        settings = world.get_settings()
        found = world.get_settings()
        self._original_settings = world.get_settings()
        if self._original_settings.synchronous_mode:
            # Nobody ticks a synchronous server once this run is gone: the
            # state to go back to is asynchronous (not what was found).
            self._original_settings.synchronous_mode = False
        settings.synchronous_mode = self.synchronous
        settings.fixed_delta_seconds = (self.fixed_delta_seconds or None)
        if self.fixed_delta_seconds > 0.1:
            self._log.warning(
                f'fixed_delta_seconds {self.fixed_delta_seconds} > 0.1 s: '
                'CARLA physics substepping may become inaccurate')
        world.apply_settings(settings)
        return found

    def _register(self, actor: Any) -> Any:
        """Remember a spawned actor for teardown (before anything else)."""
        self._spawned_ids.append(int(actor.id))
        return actor

    def _blueprint(self, name: str, what: str) -> Any:
        world = self._world
        bp_lib = world.get_blueprint_library()
        try:
            return bp_lib.find(name)
        except (IndexError, RuntimeError) as exc:
            raise BackendError(f'{what}: blueprint {name!r} not found on '
                               f'the {self._where()} ({exc})') from None

    def _vehicle_blueprint(self, spec: Any, role_name: str) -> Any:
        name = spec.blueprint
        if not name and spec.profile:
            from hil_bridge.interface.vehicle_profile import load_vehicle_profile
            name = load_vehicle_profile(spec.profile).blueprint
        if not name:
            raise BackendError(f'{role_name}: no blueprint and no profile')
        bp = self._blueprint(name, role_name)
        if bp.has_attribute('role_name'):
            bp.set_attribute('role_name', role_name)
        return bp

    def _spawn_vehicle_like(self, spec: Any, role_name: str) -> Any:
        world = self._world
        bp = self._vehicle_blueprint(spec, role_name)
        tf = self._transform(spec.pose)
        actor = world.try_spawn_actor(bp, tf)
        if actor is None:
            raise BackendError(
                f'{role_name}: spawning {bp.id} at CARLA {tf} failed '
                '(occupied spawn point or outside the map?)')
        return self._register(actor)

    def _geometry(self, actor: Any, spec: Any
                  ) -> Tuple[np.ndarray, float, float]:
        """
        Return an actor's box size, box offset and vehicle-frame offset.

        Size (length, width, height) comes from CARLA's bounding box (else
        the spec). With a vehicle profile the reported vehicle frame is the
        rear axle on the ground (as in the built-in simulator):
        ``frame_offset`` is its x in the CARLA actor frame (m), read from
        the rear wheels' positions in the vehicle's physics control (the
        axle CARLA's vehicle really has), else the profile's ``box_offset``
        behind the box centre; ``box_offset`` is the box centre's distance
        ahead of it. Without a profile the actor origin is the vehicle
        frame and ``box_offset`` the bounding box's x.
        """
        bbox = getattr(actor, 'bounding_box', None)
        if bbox is not None:
            ext = bbox.extent
            size = np.array([2.0 * ext.x, 2.0 * ext.y, 2.0 * ext.z])
            centre = float(bbox.location.x)
        else:
            size = np.asarray(getattr(spec, 'size', np.zeros(3)),
                              np.float64).reshape(3)
            centre = 0.0
        if getattr(spec, 'profile', ''):
            rear = self._rear_axle(actor, spec)
            if rear is None:
                from hil_bridge.interface.vehicle_profile import load_vehicle_profile
                rear = centre - load_vehicle_profile(spec.profile).box_offset
            return size, centre - rear, rear
        return size, centre, 0.0

    def _rear_axle(self, vehicle: Any, spec: Any) -> Optional[float]:
        """
        Return the rear axle's x in a vehicle's actor frame (m), or None.

        From ``get_physics_control().wheels``: world positions (UE cm) of
        the rear wheels (``BL_Wheel``, ``BR_Wheel``), taken relative to the
        pose the vehicle was spawned at (read right after spawning: it has
        not moved). None when the vehicle has no four wheels with finite
        positions or the axle lies outside its box.
        """
        try:
            wheels = list(vehicle.get_physics_control().wheels)
            pos = np.array([[w.position.x, w.position.y] for w in wheels],
                           np.float64) / 100.0
        except (AttributeError, TypeError, RuntimeError):
            return None
        if pos.shape != (4, 2) or not np.all(np.isfinite(pos)):
            return None
        loc, rot = ue_frames.ros_to_carla_pose(spec.pose)
        yaw = math.radians(rot[1])
        d = pos[2:].mean(axis=0) - np.array([loc[0], loc[1]], np.float64)
        rear = float(d[0] * math.cos(yaw) + d[1] * math.sin(yaw))
        bbox = getattr(vehicle, 'bounding_box', None)
        half = float(bbox.extent.x) if bbox is not None else 3.0
        if not -half - 0.5 <= rear <= 0.5:
            self._log.warning(f'{spec.role_name}: rear wheels at x = {rear:.2f} m of the '
                              f'{vehicle.type_id} origin, not on the car: using the '
                              "profile's box_offset")
            return None
        return rear

    def _spawn_ego(self, spec: Any) -> None:
        vehicle = self._spawn_vehicle_like(spec, self.role_name)
        self._ego = vehicle
        size, offset, frame_offset = self._geometry(vehicle, spec)
        self._ego_slot = _ActorSlot(self.role_name, vehicle, size, offset,
                                    frame_offset)
        if spec.profile:
            from hil_bridge.interface.vehicle_profile import load_vehicle_profile
            self._max_steer = load_vehicle_profile(spec.profile).max_steer
        self._steering = Steering.of(vehicle.get_physics_control(),
                                     f'{self.role_name} ({vehicle.type_id})')
        self._wheelbase_ratio = 1.0
        if spec.profile and self._steering.wheelbase > 0.0:
            from hil_bridge.interface.vehicle_profile import load_vehicle_profile
            profile = load_vehicle_profile(spec.profile)
            ratio = self._steering.wheelbase / profile.wheelbase
            if abs(ratio - 1.0) > 0.05:
                self._wheelbase_ratio = ratio
                self._log.warning(
                    f'{self.role_name}: {vehicle.type_id} has a {self._steering.wheelbase:.2f} '
                    f'm wheelbase, profile {profile.name} {profile.wheelbase:.2f} m: steering '
                    "keeps the profile's path curvature")
        if self._max_steer > self._steering.max_angle + 1e-6:
            self._log.warning(
                f'{self.role_name}: the profile steers up to '
                f'{math.degrees(self._max_steer):.1f} deg, {vehicle.type_id} only '
                f'{math.degrees(self._steering.max_angle):.1f} deg: larger angles '
                'are clipped')
        speed = float(getattr(spec, 'initial_speed', 0.0) or 0.0)
        if speed:
            # As in the ROS 2 AEB tutorial: one set_target_velocity, sent
            # right before frame 0 (after the sensor streams connected).
            self._start_velocities.append((vehicle, spec.pose.yaw, speed))
        if self.collision_sensor:
            world = self._world
            bp = self._blueprint(COLLISION, 'collision sensor')
            if bp.has_attribute('role_name'):
                bp.set_attribute('role_name', COLLISION_ROLE)
            carla = self.carla
            sensor = self._register(world.spawn_actor(
                bp, carla.Transform(), attach_to=vehicle))
            self._collision = sensor
            sensor.listen(lambda event: self._guarded(self._on_collision, event))

    def _spawn_rig(self, rig: List[SensorSpec]) -> None:
        from hil_bridge.interface.rig import carla_attributes
        world = self._world
        periods: Dict[str, float] = {}
        seen = set()
        for spec in rig:
            sid = spec.sensor_id
            if sid in seen:
                raise BackendError(f'rig: sensor id {sid!r} used twice')
            seen.add(sid)
            if spec.blueprint == LIDAR:
                kind = 'lidar'
            elif spec.blueprint.startswith(CAMERA_PREFIX):
                kind = 'camera'
            elif spec.blueprint in ('sensor.other.imu', 'sensor.other.gnss'):
                raise BackendError(
                    f'rig: sensor {sid}: {spec.blueprint} is not read: the bridge '
                    "publishes /imu from the ego's CARLA state, noise-free, as for the "
                    'built-in simulator (docs/carla_backend.md, "IMU and GNSS")')
            else:
                raise BackendError(f'rig: sensor {sid}: blueprint '
                                   f'{spec.blueprint!r} is not supported '
                                   f'(use {LIDAR} or sensor.camera.*)')
            bp = self._blueprint(spec.blueprint, f'sensor {sid}')
            attrs = carla_attributes(spec)
            for key, value in attrs.items():
                if not bp.has_attribute(key):
                    raise BackendError(f'sensor {sid}: {spec.blueprint} has '
                                       f'no attribute {key!r}')
                bp.set_attribute(key, value)
            if bp.has_attribute('role_name'):
                bp.set_attribute('role_name', sid)
            period = float(spec.attributes.get('sensor_tick', 0.0) or 0.0)
            if period > self._dt > 0.0:
                ratio = period / self._dt
                if abs(ratio - round(ratio)) > 1e-3:
                    self._log.warning(
                        f'sensor {sid}: sensor_tick {period} is not a '
                        f'multiple of fixed_delta_seconds {self._dt}: it '
                        'will not tick at regular frames')
            slot = _SensorSlot(sid, spec.blueprint, kind, period)
            # Mounts are relative to the vehicle frame, CARLA attaches to the
            # actor origin.
            m = spec.mount
            mount = Pose(m.x + self._ego_slot.frame_offset, m.y, m.z,
                         m.roll, m.pitch, m.yaw)
            sensor = self._register(world.spawn_actor(
                bp, self._transform(mount), attach_to=self._ego))
            slot.actor = sensor
            self._sensors.append(slot)
            periods[sid] = period
        self._assembler = FrameAssembler(
            periods, self._dt, self.synchronous, self.max_missed, self._log)
        for slot in self._sensors:
            sensor = slot.actor
            sensor.listen(self._make_callback(slot))

    def _spawn_cones(self, track: Any) -> None:
        cones = getattr(track, 'cones', None) if track is not None else None
        if cones is None or len(cones) == 0:
            self._cones = ConeArray()
            return
        xy = np.asarray(cones.xy, dtype=np.float64)
        cls = np.asarray(cones.class_id, dtype=np.uint8)
        if xy.ndim != 2 or xy.shape[1] != 2 or len(cls) != len(xy) or \
                not np.all(np.isfinite(xy)):
            raise ValueError('track cones: xy must be finite (N, 2) with one '
                             'class_id per cone')
        self._cones = ConeArray(xy=xy.copy(), class_id=cls.copy(),
                                knocked=np.zeros(len(xy), dtype=bool))
        carla = self.carla
        bps = {c: self._blueprint(self.cone_blueprints.get(
            int(c), DEFAULT_CONE_BLUEPRINTS[CONE_UNKNOWN]), 'cones')
            for c in np.unique(cls)}
        for bp in bps.values():
            if bp.has_attribute('role_name'):
                bp.set_attribute('role_name', CONE_ROLE)
        ue = ue_frames.ros_to_carla_points(
            np.column_stack([xy, np.full(len(xy), self.cone_z)]))
        transforms = [carla.Transform(carla.Location(*map(float, p)))
                      for p in ue]
        command = carla.command
        client = self._client
        batch = [command.SpawnActor(bps[c], tf) for c, tf in zip(cls, transforms)]
        errors = []
        for i, response in enumerate(client.apply_batch_sync(batch, False)):
            if response.error:
                errors.append((i, response.error))
            else:
                self._spawned_ids.append(int(response.actor_id))
                self._cone_index[int(response.actor_id)] = i
        if errors:
            self._log.warning(f'{len(errors)} of {len(xy)} cones could not '
                              f'be spawned (first: cone {errors[0][0]}: '
                              f'{errors[0][1]}); the ground truth keeps them')
        self._log.info(f'spawned {len(xy) - len(errors)} cones (stock CARLA '
                       'has no blue/yellow cones: small cones are '
                       f'{self.cone_blueprints[CONE_ORANGE]})')

    def _spawn_actor(self, spec: Any, scenario: Any) -> None:
        from hil_bridge.sim.actors import check_behaviour, ScriptedActor
        role = spec.role_name
        behaviour = check_behaviour(spec.behaviour, f'{role}.behaviour')
        is_vehicle = (spec.blueprint or '').startswith('vehicle.') or \
            (not spec.blueprint and bool(spec.profile))
        if is_vehicle:
            actor = self._spawn_vehicle_like(spec, role)
        else:
            world = self._world
            bp = self._blueprint(spec.blueprint, role)
            if bp.has_attribute('role_name'):
                bp.set_attribute('role_name', role)
            actor = world.try_spawn_actor(bp, self._transform(spec.pose))
            if actor is None:
                raise BackendError(f'{role}: spawning {spec.blueprint} '
                                   'failed (occupied or outside the map?)')
            self._register(actor)
        size, offset, frame_offset = self._geometry(actor, spec)
        track = getattr(scenario, 'track', None)
        script = ScriptedActor(
            role, spec.pose, size, behaviour, spec.initial_speed, offset,
            centerline=getattr(track, 'centerline', None),
            closed=bool(getattr(track, 'closed', False)))
        slot = _ActorSlot(role, actor, size, offset, frame_offset, script,
                          behaviour['path'])
        self._actor_slots.append(slot)
        if spec.initial_speed and behaviour['type'] not in ('static',
                                                            'parked'):
            self._start_velocities.append((actor, spec.pose.yaw,
                                           float(spec.initial_speed)))

    # ------------------------------------------------------ sensor input

    def _make_callback(self, slot: _SensorSlot) -> Callable[[Any], None]:
        def callback(data: Any) -> None:
            self._guarded(self._on_sensor, slot, data)
        return callback

    def _guarded(self, handler: Callable[..., None], *args: Any) -> None:
        """
        Run a sensor callback unless teardown closed them; count it while it runs.

        The client is let go in :meth:`teardown` (its last reference must not
        be dropped in one of its own threads, see there): it waits for the
        callbacks running, and later ones return at once, before they make
        any carla object.
        """
        with self._callbacks:
            if self._callbacks_closed:
                return
            self._in_callback += 1
        try:
            handler(*args)
        finally:
            with self._callbacks:
                self._in_callback -= 1
                self._callbacks.notify_all()

    def _on_sensor(self, slot: _SensorSlot, data: Any) -> None:
        """Convert one measurement (CARLA callback thread)."""
        assembler = self._assembler
        if assembler is None:
            return
        try:
            if slot.kind == 'camera':
                image = data
                width, height = int(image.width), int(image.height)
                bgr = ue_frames.carla_image_to_bgr(image.raw_data, width, height)
                arr = bgr.view(_KeepAlive)
                arr._owner = image
                if slot.intrinsics is None or \
                        slot.intrinsics[0, 2] != width / 2.0:
                    slot.intrinsics = camera_intrinsics(width, height,
                                                        float(image.fov))
                payload = _Payload(arr, slot.intrinsics, int(image.frame),
                                   float(image.timestamp))
            else:
                measurement = data
                payload = _Payload(
                    ue_frames.carla_lidar_to_ros(measurement.raw_data), None,
                    int(measurement.frame), float(measurement.timestamp))
        except (ValueError, TypeError, AttributeError) as exc:
            self.stats['bad_data'] += 1
            if self.stats['bad_data'] <= 3:
                self._log.error(f'sensor {slot.sensor_id}: malformed data '
                                f'dropped: {exc}')
            return
        if not assembler.add(slot.sensor_id, payload):
            self._log.debug(f'sensor {slot.sensor_id}: stale data of frame '
                            f'{payload.frame} dropped')

    def _on_collision(self, event: Any) -> None:
        """Turn a ``carla.CollisionEvent`` into a cone_hit/collision Event."""
        try:
            other = event.other_actor
            other_id = int(other.id)
            t = float(event.timestamp)       # absolute; rebased in _build
            frame = int(event.frame)
            idx = self._cone_index.get(other_id)
            if idx is not None and self.referee is not None:
                with self._events_lock:
                    self._cone_contacts.append((t, idx))   # judged in _build
                return
            if idx is not None:
                if self._cones.knocked[idx]:
                    return
                self._cones.knocked[idx] = True
                xy = self._cones.xy[idx]
                ev = Event('cone_hit', t, {
                    'index': idx, 'class_id': int(self._cones.class_id[idx]),
                    'x': float(xy[0]), 'y': float(xy[1])})
            else:
                role = next((s.role_name for s in self._actor_slots
                             if int(s.actor.id) == other_id), '')
                impulse = [float(v) for v in
                           ue_frames.carla_to_ros_velocity(event.normal_impulse)]
                if role and self.referee is not None:
                    with self._events_lock:
                        self._actor_contacts.append(
                            (frame, t, role, impulse))   # judged in _build
                    return
                ev = Event('collision', t, {
                    'other': str(other.type_id), 'role_name': role, 'impulse': impulse})
        except (AttributeError, ValueError, TypeError) as exc:
            self._log.error(f'malformed collision event dropped: {exc}')
            return
        with self._events_lock:
            self._events.append(ev)

    # --------------------------------------------------------- stepping

    def apply_control(self, control: VehicleControl) -> None:
        """
        Set the ego control (clamped; NaN brake becomes full brake).

        Synchronous: applied right before the next tick; asynchronous: sent
        at once.
        """
        self._control = control.clamped()
        if not self.synchronous and self._ego is not None:
            self._send_control()

    def carla_steer(self, steer: float) -> float:
        """
        Return the CARLA steer that gives the road-wheel angle ``steer`` asks for.

        ``steer`` (-1..1, > 0 right) is a fraction of the vehicle profile's
        ``max_steer``, as on the built-in simulator; CARLA's steer is a
        fraction of the front wheels' ``max_steer_angle`` reduced by the
        steering curve at the current speed (:class:`Steering`). When the
        CARLA vehicle's wheelbase (from its wheel positions) differs from
        the profile's by more than 5 % (``fs_car`` on ``vehicle.tesla.
        model3``), the angle keeps the profile's path curvature instead:
        ``atan(tan(delta) L_carla / L_profile)``. Without a profile the
        steer goes to CARLA unchanged.
        """
        if self._steering is None or self._max_steer <= 0.0:
            return float(steer)
        angle = float(steer) * self._max_steer
        ratio = self._wheelbase_ratio
        if ratio != 1.0:
            # the same path curvature tan(delta) / L on this vehicle
            angle = math.atan(math.tan(angle) * ratio)
        return self._steering.carla_steer(angle, self._ego_speed)

    def _send_control(self) -> None:
        carla = self.carla
        c = self._control
        self.carla_control = carla.VehicleControl(
            throttle=c.throttle, steer=self.carla_steer(c.steer), brake=c.brake,
            hand_brake=c.hand_brake, reverse=c.reverse)
        try:
            self._ego.apply_control(self.carla_control)
        except RuntimeError as exc:
            raise self._failed('apply_control', exc) from exc

    def _wheel_angle(self) -> float:
        """Return the ego's road-wheel angle (rad, REP-103: > 0 left) read back."""
        wheel = self.carla.VehicleWheelLocation
        vehicle = self._ego
        deg = 0.5 * (float(vehicle.get_wheel_steer_angle(wheel.FL_Wheel))
                     + float(vehicle.get_wheel_steer_angle(wheel.FR_Wheel)))
        return -math.radians(deg)          # CARLA: > 0 turns right

    def _drive_actors(self, t: float, dt: float) -> None:
        """Apply the scripted behaviours for sim time ``t`` (s)."""
        carla = self.carla
        for slot in self._actor_slots:
            script = slot.script
            if script is None or script.behaviour['type'] in ('static',
                                                              'parked'):
                continue
            script.step(t, dt)
            actor = slot.actor
            if slot.path == 'centerline':
                z = actor.get_transform().location.z
                loc = ue_frames.ros_to_carla_point((script.x, script.y, 0.0))
                rot = ue_frames.ros_to_carla_rotation(0.0, 0.0, script.yaw)
                actor.set_transform(carla.Transform(
                    carla.Location(loc.x, loc.y, z), carla.Rotation(*rot)))
            actor.set_target_velocity(self._heading_velocity(script.yaw,
                                                             script.v))

    def step(self, dt: float) -> Frame:
        """
        Advance by ``dt`` seconds and return the new complete frame.

        Synchronous: applies the control and behaviours, ticks the world
        (``fixed_delta_seconds`` follows ``dt``) and waits for the due
        sensors. Asynchronous: waits for the next complete frame.
        """
        if not self._ready:
            raise BackendError('CarlaBackend.step before setup')
        if self._gone:
            # No call into the client (it holds the GIL for its whole
            # time-out) while the port refuses connections.
            if not self.probe():
                raise BackendError(f'lost the {self._where()}: its RPC port refuses '
                                   'connections (the simulator is not running)')
            raise BackendError(f'the {self._where()} is back after it was lost, but it '
                               'is a new episode (the actors of this run are gone): '
                               'restart the run')
        dt = float(dt)
        if not math.isfinite(dt) or dt <= 0.0:
            raise ValueError(f'step: dt must be finite and > 0, got {dt}')
        if not self.synchronous:
            return self._wait_async(self.timeout + self.sensor_timeout)
        return self._tick_and_collect(dt)

    def _tick_and_collect(self, dt: float) -> Frame:
        world = self._world
        try:
            first = self._frame0 is None
            if not first:
                self._drive_actors(self._sim_time + dt, dt)
            self._send_control()
            if abs(dt - self._dt) > 1e-9:
                # CARLA's client ticks 2 extra frames in synchronous mode
                # until two snapshots show the new delta: control and
                # behaviours are sent first so those frames have them.
                self._log.warning(f'fixed_delta_seconds {self._dt:g} -> {dt:g} s: CARLA '
                                  'ticks 2 extra frames to apply it')
                settings = world.get_settings()
                settings.fixed_delta_seconds = dt
                world.apply_settings(settings)
                self._dt = dt
                if self._assembler is not None:
                    self._assembler.dt = dt
            frame_id = int(world.tick(self.timeout))
            snapshot = world.get_snapshot()
            t_abs = float(snapshot.timestamp.elapsed_seconds)
            if int(snapshot.frame) != frame_id:
                self._log.debug(f'snapshot frame {snapshot.frame} != tick '
                                f'frame {frame_id}')
        except BackendError:
            raise
        except RuntimeError as exc:
            raise self._failed('tick', exc) from exc
        assembler = self._assembler
        data, missing = assembler.wait(frame_id, t_abs, self.sensor_timeout)
        return self._build(frame_id, t_abs, data, missing)

    def _wait_async(self, budget: float) -> Frame:
        """Wait up to ``budget`` s for a new complete frame (async mode)."""
        deadline = time.monotonic() + budget
        world = self._world
        while True:
            frame = self.latest()
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                raise BackendError(f'no complete frame from the '
                                   f'{self._where()} within {budget:g} s')
            try:
                # the client truncates to whole ms and 0 ms means "its own
                # time-out": never pass less than 1 ms
                world.wait_for_tick(max(math.ceil(min(self.timeout, remaining) * 1000.0)
                                        / 1000.0, 0.001))
            except RuntimeError as exc:
                raise self._failed('wait_for_tick', exc) from exc
            self._assembler.wait_any(min(0.01, max(remaining, 0.0)))

    def latest(self) -> Optional[Frame]:
        """Return the newest complete frame (asynchronous mode) or None."""
        if not self._ready or self._assembler is None:
            return None
        if not self._assembler.periods:
            # No sensors: a frame is complete as soon as the server made it.
            world = self._world
            try:
                snapshot = world.get_snapshot()
            except RuntimeError as exc:
                raise self._failed('get_snapshot', exc) from exc
            if int(snapshot.frame) <= self._assembler.emitted:
                return None
            self._assembler.emitted = int(snapshot.frame)
            return self._build(int(snapshot.frame),
                               float(snapshot.timestamp.elapsed_seconds), {},
                               [])
        found = self._assembler.newest_complete(self.sensor_timeout)
        if found is None:
            return None
        frame_id, t_abs, data, missing = found
        return self._build(frame_id, t_abs, data, missing)

    def _actor_state(self, slot: _ActorSlot, steer: float = 0.0
                     ) -> ActorState:
        actor = slot.actor
        pose = ue_frames.carla_to_ros_pose(actor.get_transform())
        R = frames.rotation_matrix(pose.roll, pose.pitch, pose.yaw)
        w = ue_frames.carla_to_ros_angular_velocity(actor.get_angular_velocity())
        a = ue_frames.carla_to_ros_velocity(actor.get_acceleration())
        v = ue_frames.carla_to_ros_velocity(actor.get_velocity())
        if slot.frame_offset:
            # From the actor origin to the vehicle frame (rear axle).
            r = R[:, 0] * slot.frame_offset
            pose.x, pose.y, pose.z = pose.x + r[0], pose.y + r[1], \
                pose.z + r[2]
            v = v + np.cross(w, r)
        return ActorState(
            role_name=slot.role_name, pose=pose, velocity=v,
            angular_velocity=R.T @ w, acceleration=R.T @ a,
            size=slot.size.copy(), box_offset=slot.box_offset,
            steer_angle=steer)

    def _build(self, frame_id: int, t_abs: float,
               data: Dict[str, _Payload], missing: List[str]) -> Frame:
        if self._frame0 is None:
            self._frame0, self._t0 = frame_id, t_abs
        self.carla_frame, self.carla_time = frame_id, t_abs
        t = t_abs - self._t0
        if not self.synchronous and t > self._sim_time + 1e-9:
            # asynchronous: the behaviours follow the server's frames
            try:
                self._drive_actors(t, t - self._sim_time)
            except RuntimeError as exc:
                raise self._failed('driving the actors', exc) from exc
        self._sim_time = t
        events: List[Event] = []
        if missing:
            self._log.warning(
                f'frame {frame_id - self._frame0}: sensor(s) '
                f'{", ".join(missing)} did not deliver within '
                f'{self.sensor_timeout:g} s; the frame goes out without them')
            events.append(Event('warning', t, {'missing_sensors':
                                               list(missing)}))
        sensors = {}
        for sid, p in data.items():
            slot = next(s for s in self._sensors if s.sensor_id == sid)
            sensors[sid] = SensorReading(
                sid, slot.blueprint, p.frame - self._frame0,
                p.timestamp - self._t0, p.data, p.intrinsics)
        try:
            ego = self._actor_state(self._ego_slot, self._wheel_angle())
            actors = [self._actor_state(s) for s in self._actor_slots]
            fwd = frames.rotation_matrix(ego.pose.roll, ego.pose.pitch, ego.pose.yaw)[:, 0]
            self._ego_speed = float(np.dot(ego.velocity, fwd))
        except RuntimeError as exc:
            raise self._failed('reading actor states', exc) from exc
        with self._events_lock:
            events.extend(Event(e.kind, e.sim_time - self._t0, e.data)
                          for e in self._events)
            self._events = []
        events.extend(self._judge(t, ego, actors))
        cones = ConeArray(self._cones.xy, self._cones.class_id,
                          self._cones.knocked.copy())
        self.stats['frames'] += 1
        return Frame(frame=frame_id - self._frame0, sim_time=t, ego=ego,
                     actors=actors, sensors=sensors, cones=cones,
                     events=events, applied_control=self._control)

    # ---------------------------------------------------------- teardown

    def teardown(self) -> None:
        """
        Destroy every spawned actor and restore the world settings.

        Safe to call twice and when the server is gone (then the actors
        that could not be destroyed are logged).
        """
        with self._teardown_lock:
            atexit.unregister(self.teardown)
            with self._callbacks:
                self._callbacks_closed = True      # no callback from here on
            listening = [(slot.sensor_id, slot.actor) for slot in self._sensors]
            if self._collision is not None:
                listening.append(('collision', self._collision))
            for sid, sensor in listening:
                try:
                    sensor.stop()
                except Exception as exc:  # noqa: B902 - best effort
                    self._log.debug(f'sensor {sid}: stop: {exc}')
            ids = list(reversed(self._spawned_ids))
            settings = self._original_settings
            if self._assembler is not None:
                self.stats.update({f'sensor_{k}': v for k, v in
                                   self._assembler.stats.items()})
            self._reset_state()
            if ids:
                self._destroy(ids)
            if settings is not None:
                world = self._world
                try:
                    world.apply_settings(settings)
                except RuntimeError as exc:
                    self._log.error(f'could not restore the world settings '
                                    f'of the {self._where()}: {exc}')
            # The client's last reference must not be dropped in one of its
            # own threads (a callback's carla object, a sensor message in
            # flight, this backend freed by the garbage collector from a
            # callback): the 0.9.16 client then joins its own thread and
            # aborts the process (std::terminate in ~ThreadGroup).
            # Callbacks were closed first; the running ones are waited for,
            # and the client is retired, not dropped (retired_clients).
            with self._callbacks:
                self._callbacks.wait_for(lambda: self._in_callback == 0, timeout=2.0)
            retire(self._client, self._world)
            self._world = None
            self._client = None

    def _destroy(self, ids: List[int]) -> None:
        command = self.carla.command
        client = self._client
        try:
            responses = client.apply_batch_sync(
                [command.DestroyActor(i) for i in ids], False)
            failed = [(i, response.error) for i, response in
                      zip(ids, responses) if response.error]
        except RuntimeError as exc:
            self._log.error(f'could not destroy {len(ids)} actor(s) on the '
                            f'{self._where()} ({exc}): they may remain in '
                            f'the server (ids {ids})')
            return
        if failed:
            self._log.warning(f'{len(failed)} actor(s) not destroyed: '
                              f'{failed[:5]}')
        else:
            self._log.info(f'destroyed {len(ids)} actor(s)')

    def __enter__(self) -> 'CarlaBackend':
        """Return self; ``with`` calls :meth:`teardown` on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Tear down (also when an exception leaves the block)."""
        self.teardown()

    # ----------------------------------------------------------- signals

    def install_signal_handlers(self, signums: Tuple[int, ...] = (
            signal.SIGINT, signal.SIGTERM)) -> None:
        """
        Tear down on SIGINT/SIGTERM, then chain to the previous handler.

        Call from the main thread (the node does, after ``rclpy.init``).
        A previous default SIGINT handler raises KeyboardInterrupt; a
        default SIGTERM handler terminates the process as before.
        """
        for signum in signums:
            self._prev_handlers[signum] = signal.getsignal(signum)
            signal.signal(signum, self._on_signal)

    def uninstall_signal_handlers(self) -> None:
        """Put the previous signal handlers back."""
        for signum, handler in self._prev_handlers.items():
            signal.signal(signum, handler if handler is not None
                          else signal.SIG_DFL)
        self._prev_handlers = {}

    def _on_signal(self, signum: int, stack: Any) -> None:
        self._log.warning(f'signal {signum}: destroying the CARLA actors')
        prev = self._prev_handlers.get(signum, signal.SIG_DFL)
        self.teardown()
        self.uninstall_signal_handlers()
        if callable(prev):
            prev(signum, stack)
        elif prev == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
