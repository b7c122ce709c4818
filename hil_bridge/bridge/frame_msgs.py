# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Build the ROS messages of one simulation frame (messages only, no node).

:class:`FrameConverter` turns a :class:`hil_bridge.bridge.backend.Frame` into the
messages of the bridge's contract topics (``config/interfaces.yaml``):
/clock, ego Odometry (pose ``map`` -> ``{role}``, twist in ``{role}``)
and Imu, the other actors' Odometry and boxes, ground-truth cones, referee
events (DiagnosticArray), the applied control (TwistStamped), camera
Image/CameraInfo/CompressedImage and lidar PointCloud2 (via
:mod:`hil_bridge.interface.codecs`), and TF transforms. Every message of one frame
is stamped with ``frame.sim_time`` and carries the contract's frame ids.

Units and frames: REP-103 (x forward, y left, z up; metres, radians,
seconds). Imu linear acceleration includes gravity (REP-145: a car at rest
reads +9.81 m/s^2 on z); Odometry covariances are small constants (the data
is ground truth). ``/tf`` needs ``tf2_msgs``: where it is missing the
transforms are still built (:meth:`FrameConverter.transforms`) but no
TFMessage is made (``HAVE_TF2`` is False).
"""

import json
import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped, TwistStamped
from hil_bridge.bridge.backend import ActorState, Event, Frame, SensorReading, VehicleControl
from hil_bridge.bridge.low_level_control import SOURCE_IDS
from hil_bridge.interface import contract
from hil_bridge.interface.codecs import clouds, images, stamps
from hil_bridge.interface.frames import euler_to_quaternion, Pose, rotation_matrix
from hil_bridge.interface.rig import SensorSpec
from hil_bridge.interface.track import ConeArray
from nav_msgs.msg import Odometry
import numpy as np
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu
from std_msgs.msg import Header
from visualization_msgs.msg import Marker, MarkerArray

try:  # optional: only where tf2_msgs is installed
    from tf2_msgs.msg import TFMessage
    HAVE_TF2 = True
except ImportError:  # pragma: no cover - depends on the installation
    TFMessage = None
    HAVE_TF2 = False

GRAVITY = 9.81
CAMERA = 'sensor.camera.rgb'
LIDAR = 'sensor.lidar.ray_cast'
#: sensor frame (x fwd, y left, z up) -> optical frame (z fwd, x right, y down)
OPTICAL_QUATERNION = (-0.5, 0.5, -0.5, 0.5)
#: Event kinds that are warnings (the rest are OK: laps, mission end).
WARN_EVENTS = ('cone_hit', 'off_course', 'penalty', 'warning')
ERROR_EVENTS = ('collision',)
POSE_VARIANCE = 1e-4
TWIST_VARIANCE = 1e-4


def _diag6(variance: float) -> List[float]:
    return [variance if i % 7 == 0 else 0.0 for i in range(36)]


def _set_quaternion(q_msg: Any, pose: Pose) -> None:
    q_msg.x, q_msg.y, q_msg.z, q_msg.w = euler_to_quaternion(pose.roll, pose.pitch,
                                                             pose.yaw)


def _vec(msg_vec: Any, values: Iterable[float]) -> None:
    msg_vec.x, msg_vec.y, msg_vec.z = (float(v) for v in values)


def clock_msg(t: float) -> Clock:
    """Return the /clock message of sim time ``t`` (s)."""
    msg = Clock()
    msg.clock = stamps.stamp_from_sec(t)
    return msg


def odometry_msg(state: ActorState, stamp: Time, child_frame: str,
                 map_frame: str = 'map') -> Odometry:
    """Return Odometry: pose map -> child, twist (linear, angular) in child."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id = map_frame
    msg.child_frame_id = child_frame
    p = state.pose
    msg.pose.pose.position.x = float(p.x)
    msg.pose.pose.position.y = float(p.y)
    msg.pose.pose.position.z = float(p.z)
    _set_quaternion(msg.pose.pose.orientation, p)
    rot = rotation_matrix(p.roll, p.pitch, p.yaw)
    _vec(msg.twist.twist.linear, rot.T @ np.asarray(state.velocity, np.float64))
    _vec(msg.twist.twist.angular, state.angular_velocity)
    msg.pose.covariance = _diag6(POSE_VARIANCE)
    msg.twist.covariance = _diag6(TWIST_VARIANCE)
    return msg


def imu_msg(state: ActorState, stamp: Time, frame_id: str) -> Imu:
    """Return Imu: orientation in map, body rates and specific force (+g)."""
    msg = Imu()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    p = state.pose
    _set_quaternion(msg.orientation, p)
    rot = rotation_matrix(p.roll, p.pitch, p.yaw)
    _vec(msg.angular_velocity, state.angular_velocity)
    accel = np.asarray(state.acceleration, np.float64) + rot.T @ [0.0, 0.0, GRAVITY]
    _vec(msg.linear_acceleration, accel)
    msg.orientation_covariance = [1e-6, 0, 0, 0, 1e-6, 0, 0, 0, 1e-6]
    msg.angular_velocity_covariance = [1e-6, 0, 0, 0, 1e-6, 0, 0, 0, 1e-6]
    msg.linear_acceleration_covariance = [1e-4, 0, 0, 0, 1e-4, 0, 0, 0, 1e-4]
    return msg


def actor_markers(actors: List[ActorState], stamp: Time,
                  map_frame: str = 'map') -> MarkerArray:
    """Return one CUBE marker per actor box (ids by position in the list)."""
    out = MarkerArray()
    for i, a in enumerate(actors):
        m = Marker()
        m.header.stamp = stamp
        m.header.frame_id = map_frame
        m.ns = 'actors'
        m.id = i
        m.type = Marker.CUBE
        m.action = Marker.ADD
        p = a.pose
        size = np.asarray(a.size, np.float64)
        c, s = math.cos(p.yaw), math.sin(p.yaw)
        m.pose.position.x = float(p.x + a.box_offset * c)
        m.pose.position.y = float(p.y + a.box_offset * s)
        m.pose.position.z = float(p.z + size[2] / 2.0)
        _set_quaternion(m.pose.orientation, p)
        m.scale.x, m.scale.y, m.scale.z = (max(float(v), 0.01) for v in size)
        m.color.r, m.color.g, m.color.b, m.color.a = 0.9, 0.3, 0.2, 0.8
        m.text = a.role_name
        out.markers.append(m)
    return out


def cones_msg(cones: ConeArray, stamp: Time, map_frame: str = 'map') -> Any:
    """Return the ground-truth cone cloud (z = 0; knocked cones: confidence 0)."""
    n = len(cones)
    xyz = np.zeros((n, 3), np.float32)
    if n:
        xyz[:, :2] = cones.xy
    knocked = np.asarray(cones.knocked, bool).reshape(-1)
    conf = np.ones(n, np.float32)
    if knocked.size == n:
        conf[knocked] = 0.0
    return clouds.cones_to_cloud(xyz, cones.class_id, conf, _header(stamp, map_frame))


def _header(stamp: Time, frame_id: str) -> Header:
    h = Header()
    h.stamp = stamp
    h.frame_id = frame_id
    return h


def _json_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def events_msg(events: List[Event], stamp: Time) -> DiagnosticArray:
    """
    Return referee/backend events as a DiagnosticArray.

    One status per event: name ``referee/<kind>``, level WARN for cone hits,
    off course, penalties and warnings, ERROR for collisions, OK otherwise;
    message = kind; values = the event data (JSON for non-strings) plus
    ``sim_time``.
    """
    msg = DiagnosticArray()
    msg.header.stamp = stamp
    for ev in events:
        st = DiagnosticStatus()
        st.name = f'referee/{ev.kind}'
        st.hardware_id = 'hil_bridge'
        st.level = (DiagnosticStatus.ERROR if ev.kind in ERROR_EVENTS else
                    DiagnosticStatus.WARN if ev.kind in WARN_EVENTS else
                    DiagnosticStatus.OK)
        st.message = ev.kind
        st.values = [KeyValue(key='sim_time', value=repr(float(ev.sim_time)))] + [
            KeyValue(key=str(k), value=_json_value(v)) for k, v in ev.data.items()]
        msg.status.append(st)
    return msg


def applied_control_msg(control: VehicleControl, source: str, stamp: Time,
                        frame_id: str) -> TwistStamped:
    """Return the applied control: linear.x throttle, .y brake, .z source id, angular.z steer."""
    msg = TwistStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.twist.linear.x = float(control.throttle)
    msg.twist.linear.y = float(control.brake)
    msg.twist.linear.z = float(SOURCE_IDS.get(source, -1))
    msg.twist.angular.z = float(control.steer)
    return msg


def _transform(stamp: Time, parent: str, child: str, xyz: Tuple[float, float, float],
               quat: Tuple[float, float, float, float]) -> TransformStamped:
    tf = TransformStamped()
    tf.header.stamp = stamp
    tf.header.frame_id = parent
    tf.child_frame_id = child
    _vec(tf.transform.translation, xyz)
    r = tf.transform.rotation
    r.x, r.y, r.z, r.w = (float(v) for v in quat)
    return tf


class FrameConverter:
    """
    Messages of one frame, keyed like the contract.

    ``messages(frame)`` returns ``{(contract_key, name): msg}`` where
    ``name`` is the resolved topic name (actor and sensor topics differ per
    actor/sensor). Camera sensors map to ``camera_left``/``camera_right``
    (sensor ids ``rgb_left``/``rgb_right``; other ids replace ``rgb_left`` in
    the topic name), lidars to ``lidar``. ``clock_period`` (s of sim time,
    0 = every frame) thins ``/clock``: every received message costs each
    use_sim_time node about 2 ms of CPU on a small core, but nodes' sim-time
    timers then fire up to one period late.
    """

    def __init__(self, role: str, rig: List[SensorSpec], publish_raw_images: bool = True,
                 publish_compressed: bool = False, jpeg_quality: int = 80,
                 clock_period: float = 0.0) -> None:
        if not 1 <= int(jpeg_quality) <= 100:
            raise ValueError(f'jpeg_quality must be 1..100, got {jpeg_quality}')
        if not (math.isfinite(clock_period) and clock_period >= 0.0):
            raise ValueError(f'clock_period must be >= 0 s, got {clock_period}')
        self.clock_period = float(clock_period)
        self._last_clock = -math.inf
        self.role = role
        self.rig = list(rig)
        self.publish_raw_images = bool(publish_raw_images)
        self.publish_compressed = bool(publish_compressed)
        self.jpeg_quality = int(jpeg_quality)
        self.map_frame = contract.frame('map', role)
        self.vehicle_frame = contract.frame('vehicle', role)
        self._cones_key: Optional[bytes] = None
        self.sensor_topics: Dict[str, Dict[str, str]] = {}
        for spec in self.rig:
            self.sensor_topics[spec.sensor_id] = self._topics_of(spec)

    # --------------------------------------------------------------- topics
    def _topics_of(self, spec: SensorSpec) -> Dict[str, str]:
        sid = spec.sensor_id
        if spec.blueprint.startswith('sensor.camera'):
            base = 'camera_right' if sid == 'rgb_right' else 'camera_left'
            out = {}
            for suffix in ('', '_info', '_compressed'):
                name = contract.topic(base + suffix).resolve(self.role)
                out[base + suffix] = name.replace(
                    f'/{"rgb_right" if base == "camera_right" else "rgb_left"}/', f'/{sid}/')
            return out
        if spec.blueprint.startswith('sensor.lidar'):
            name = contract.topic('lidar').resolve(self.role)
            return {'lidar': name if sid == 'lidar' else name.rsplit('/', 1)[0] + f'/{sid}'}
        return {}

    def topic_list(self, actor_roles: Iterable[str] = ()) -> List[Tuple[str, str]]:
        """Return every (contract key, topic name) this converter can produce."""
        out = [(k, contract.topic(k).resolve(self.role))
               for k in ('clock', 'odometry', 'imu', 'actors', 'ground_truth_cones',
                         'referee_events', 'applied_control')]
        for topics in self.sensor_topics.values():
            for key, name in topics.items():
                if key.endswith('_compressed') and not self.publish_compressed:
                    continue
                if key in ('camera_left', 'camera_right') and not self.publish_raw_images:
                    continue
                out.append((key, name))
        for role in actor_roles:
            out.append(('actor_odometry', contract.topic('actor_odometry').resolve(
                self.role, actor=role)))
        return out

    # ------------------------------------------------------------- messages
    def sensor_messages(self, reading: SensorReading, stamp: Time) -> Dict[Tuple[str, str], Any]:
        """Return the messages of one sensor reading."""
        topics = self.sensor_topics.get(reading.sensor_id)
        if not topics:
            return {}
        out: Dict[Tuple[str, str], Any] = {}
        if 'lidar' in topics:
            frame_id = contract.frame('sensor', self.role, reading.sensor_id)
            out[('lidar', topics['lidar'])] = clouds.xyzi_to_cloud(
                reading.data, _header(stamp, frame_id))
            return out
        frame_id = contract.frame('camera_optical', self.role, reading.sensor_id)
        header = _header(stamp, frame_id)
        img = reading.data
        base = 'camera_right' if 'camera_right' in topics else 'camera_left'
        if self.publish_raw_images:
            out[(base, topics[base])] = images.image_to_msg(img, header, frame_id, 'bgr8')
        if self.publish_compressed:
            out[(base + '_compressed', topics[base + '_compressed'])] = \
                images.image_to_compressed(img, header, frame_id, quality=self.jpeg_quality)
        if reading.intrinsics is not None:
            h, w = int(img.shape[0]), int(img.shape[1])
            info = images.camera_info_msg(np.asarray(reading.intrinsics, np.float64), w, h,
                                          header, frame_id)
            out[(base + '_info', topics[base + '_info'])] = info
        return out

    def messages(self, frame: Frame, source: str = 'cmd_vel',
                 control: Optional[VehicleControl] = None) -> Dict[Tuple[str, str], Any]:
        """
        Return every message of ``frame``, all stamped ``frame.sim_time``.

        ``source``/``control``: the LLC's source and control (the frame's
        ``applied_control`` when ``control`` is None). Ground-truth cones
        are included only when they changed since the last call (latched
        topic); referee events only when the frame has any.
        """
        stamp = stamps.stamp_from_sec(frame.sim_time)
        out: Dict[Tuple[str, str], Any] = {}
        t = frame.sim_time
        if t < self._last_clock or t - self._last_clock >= self.clock_period - 1e-9:
            # every frame by default; with clock_period > 0 only every
            # clock_period s of sim time (and after a reset to earlier time)
            out[('clock', contract.topic('clock').name)] = clock_msg(t)
            self._last_clock = t
        out[('odometry', contract.topic('odometry').resolve(self.role))] = odometry_msg(
            frame.ego, stamp, self.vehicle_frame, self.map_frame)
        out[('imu', contract.topic('imu').resolve(self.role))] = imu_msg(
            frame.ego, stamp, self.vehicle_frame)
        for actor in frame.actors:
            name = contract.topic('actor_odometry').resolve(self.role, actor=actor.role_name)
            out[('actor_odometry', name)] = odometry_msg(
                actor, stamp, contract.frame('vehicle', actor.role_name), self.map_frame)
        out[('actors', contract.topic('actors').resolve(self.role))] = actor_markers(
            frame.actors, stamp, self.map_frame)
        cones = frame.cones
        key = np.asarray(cones.knocked, bool).tobytes() + np.asarray(
            cones.xy, np.float64).tobytes()
        if key != self._cones_key:
            self._cones_key = key
            out[('ground_truth_cones', contract.topic('ground_truth_cones').resolve(
                self.role))] = cones_msg(cones, stamp, self.map_frame)
        if frame.events:
            out[('referee_events', contract.topic('referee_events').resolve(
                self.role))] = events_msg(frame.events, stamp)
        applied = control if control is not None else frame.applied_control
        out[('applied_control', contract.topic('applied_control').resolve(self.role))] = \
            applied_control_msg(applied, source, stamp, self.vehicle_frame)
        for reading in frame.sensors.values():
            out.update(self.sensor_messages(reading, stamp))
        return out

    # ------------------------------------------------------------------- tf
    def transforms(self, frame: Frame) -> List[TransformStamped]:
        """Return the dynamic transforms: map -> ego and map -> each actor."""
        stamp = stamps.stamp_from_sec(frame.sim_time)
        out = []
        for state, child in [(frame.ego, self.vehicle_frame)] + [
                (a, contract.frame('vehicle', a.role_name)) for a in frame.actors]:
            p = state.pose
            out.append(_transform(stamp, self.map_frame, child, (p.x, p.y, p.z),
                                  euler_to_quaternion(p.roll, p.pitch, p.yaw)))
        return out

    def static_transforms(self, t: float = 0.0) -> List[TransformStamped]:
        """Return ego -> sensor mounts and camera -> optical frames."""
        stamp = stamps.stamp_from_sec(t)
        out = []
        for spec in self.rig:
            m = spec.mount
            sensor = contract.frame('sensor', self.role, spec.sensor_id)
            out.append(_transform(stamp, self.vehicle_frame, sensor, (m.x, m.y, m.z),
                                  euler_to_quaternion(m.roll, m.pitch, m.yaw)))
            if spec.blueprint.startswith('sensor.camera'):
                out.append(_transform(
                    stamp, sensor, contract.frame('camera_optical', self.role,
                                                  spec.sensor_id),
                    (0.0, 0.0, 0.0), OPTICAL_QUATERNION))
        return out


def tf_message(transforms: List[TransformStamped]) -> Any:
    """Return a TFMessage, or None where tf2_msgs is not installed."""
    if not HAVE_TF2:
        return None
    msg = TFMessage()
    msg.transforms = list(transforms)
    return msg
