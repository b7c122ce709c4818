# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CARLA 0.9.16 stream payloads: sensor header, world snapshot, sensor data.

Every stream message is the 48-byte sensor header
(``sensor/s11n/SensorHeaderSerializer.h`` as 0.9.16 has it: u64 sensor
type index, u64 frame, f64 timestamp, the sensor's world transform as six
f32 x, y, z, pitch, yaw, roll) followed by the payload of that type:

* episode state (type 17, ``EpisodeStateSerializer``): a 36-byte header
  (u64 episode id, f64 platform time, f32 delta seconds, three i32 map
  origin, i32 flags) then 119 bytes per actor (u32 id, u8 actor state,
  transform 6 f32, velocity 3 f32 m/s, angular velocity 3 f32 deg/s,
  acceleration 3 f32 m/s^2, a 54-byte union: a vehicle's applied control
  at its start);
* RGB image (type 13, ``ImageSerializer``): u32 width, u32 height, f32
  horizontal fov (deg), then BGRA bytes row-major;
* ray-cast lidar (type 11, ``LidarSerializer``): u32 words [horizontal
  angle (f32 bits, rad), channel count, points of each channel], then f32
  x, y, z, intensity per point (sensor frame, UE axes);
* collision (type 0, ``CollisionEventSerializer``): msgpack
  ``[self actor, other actor, normal impulse]``;
* depth (type 1) and semantic segmentation (type 14) cameras: the image
  payload (``ImageSerializer``);
* GNSS (type 4, ``GnssSerializer``): msgpack ``geom::GeoLocation``
  ``[latitude, longitude, altitude]`` (deg, deg, m);
* IMU (type 5, ``IMUSerializer``): msgpack ``[accelerometer (m/s^2),
  gyroscope (rad/s), compass (rad)]``, vectors in the sensor's UE axes;
* obstacle detector (type 7, ``ObstacleDetectionEventSerializer``): msgpack
  ``[self actor, other actor, distance (m)]``;
* radar (type 9, ``RadarSerializer``): packed ``RadarDetection`` records,
  four f32 each: velocity (m/s), azimuth (rad), altitude (rad), depth (m);
* semantic lidar (type 10, ``SemanticLidarSerializer``): the lidar's u32
  header, then 24-byte ``SemanticLidarDetection`` records (f32 x, y, z,
  cos of the incidence angle, u32 object index, u32 object tag).

``sensor.other.lane_invasion`` (type 6, ``NoopSerializer``) sends nothing:
the client computes it from the map and the snapshots.

All little-endian, packed; vectorised with numpy (no per-point Python).
The layouts are checked against the carla==0.9.16 wheel in
``test/test_carla_server_wire.py``.
"""

from typing import Any, Sequence

import msgpack
import numpy as np

#: Sensor type indices of the 0.9.16 sensor registry (``SensorRegistry.h``;
#: each one checked against the wheel: the client decodes the message as
#: that sensor's measurement class, ``test/test_carla_server_sensors.py``).
TYPE_COLLISION = 0
TYPE_DEPTH = 1
TYPE_GNSS = 4
TYPE_IMU = 5
TYPE_LANE_INVASION = 6
TYPE_OBSTACLE = 7
TYPE_RADAR = 9
TYPE_SEMANTIC_LIDAR = 10
TYPE_LIDAR = 11
TYPE_CAMERA_RGB = 13
TYPE_SEMANTIC = 14
TYPE_EPISODE_STATE = 17

SENSOR_HEADER = np.dtype([('type', '<u8'), ('frame', '<u8'),
                          ('timestamp', '<f8'), ('transform', '<f4', (6,))])
EPISODE_HEADER = np.dtype([('episode_id', '<u8'), ('platform_time', '<f8'),
                           ('delta_seconds', '<f4'), ('map_origin', '<i4', (3,)),
                           ('flags', '<i4')])
#: The vehicle part of the 54-byte union as the 0.9.16 client reads it: the
#: packed applied control (throttle, steer, brake, hand brake, reverse,
#: manual gear shift, gear) first; the rest (speed limit, traffic-light
#: fields) stays zero.
VEHICLE_UNION = np.dtype([('throttle', '<f4'),
                          ('steer', '<f4'), ('brake', '<f4'),
                          ('hand_brake', 'u1'), ('reverse', 'u1'),
                          ('manual_gear_shift', 'u1'), ('gear', '<i4'),
                          ('pad', 'u1', (35,))])
ACTOR_STATE = np.dtype([('id', '<u4'), ('state', 'u1'),
                        ('transform', '<f4', (6,)), ('velocity', '<f4', (3,)),
                        ('angular_velocity', '<f4', (3,)),
                        ('acceleration', '<f4', (3,)),
                        ('vehicle', VEHICLE_UNION)])
#: rpc::ActorState values.
ACTOR_ACTIVE = 1

#: ``RadarDetection`` (0.9.16 ``sensor/data/RadarData.h``).
RADAR_DETECTION = np.dtype([('velocity', '<f4'), ('azimuth', '<f4'),
                            ('altitude', '<f4'), ('depth', '<f4')])
#: ``SemanticLidarDetection`` (``sensor/data/SemanticLidarData.h``, packed).
SEMANTIC_DETECTION = np.dtype([('point', '<f4', (3,)), ('cos_inc_angle', '<f4'),
                               ('object_idx', '<u4'), ('object_tag', '<u4')])

assert SENSOR_HEADER.itemsize == 48
assert RADAR_DETECTION.itemsize == 16
assert SEMANTIC_DETECTION.itemsize == 24
assert EPISODE_HEADER.itemsize == 36
assert VEHICLE_UNION.itemsize == 54
assert ACTOR_STATE.itemsize == 119


def sensor_header(type_index: int, frame: int, timestamp: float,
                  transform: Sequence[float]) -> bytes:
    """
    Return the 48-byte header of a stream message.

    ``transform`` is the sensor's world transform in CARLA's frame:
    ``(x, y, z, pitch, yaw, roll)`` in metres and degrees.
    """
    h = np.zeros((), SENSOR_HEADER)
    h['type'] = int(type_index)
    h['frame'] = int(frame)
    h['timestamp'] = float(timestamp)
    h['transform'] = np.asarray(transform, np.float32).reshape(6)
    return h.tobytes()


def episode_state(frame: int, timestamp: float, episode_id: int,
                  platform_time: float, delta_seconds: float,
                  actors: np.ndarray, flags: int = 0) -> bytes:
    """
    Return a whole world-snapshot message (header + episode state).

    ``actors`` is an array of :data:`ACTOR_STATE` records.
    """
    eh = np.zeros((), EPISODE_HEADER)
    eh['episode_id'] = int(episode_id)
    eh['platform_time'] = float(platform_time)
    eh['delta_seconds'] = float(delta_seconds)
    eh['flags'] = int(flags)
    recs = np.ascontiguousarray(actors, dtype=ACTOR_STATE)
    return b''.join((sensor_header(TYPE_EPISODE_STATE, frame, timestamp,
                                   (0.0,) * 6), eh.tobytes(), recs.tobytes()))


def image_payload(bgr: np.ndarray, fov_deg: float,
                  out: np.ndarray = None) -> memoryview:
    """
    Return the image payload of a bgr8 (H, W, 3) image as a memoryview.

    ``out`` is an optional reusable uint8 buffer of ``12 + H*W*4`` bytes
    (the image header then BGRA, alpha 255); one vectorised copy.
    """
    img = np.asarray(bgr)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f'image must be (H, W, 3) uint8, got {img.shape} '
                         f'{img.dtype}')
    h, w = img.shape[:2]
    size = 12 + h * w * 4
    if out is None or out.nbytes != size:
        out = np.empty(size, np.uint8)
        out[12:].reshape(h, w, 4)[:, :, 3] = 255
    head = np.array([w, h], '<u4').tobytes() + \
        np.array([fov_deg], '<f4').tobytes()
    out[:12] = np.frombuffer(head, np.uint8)
    out[12:].reshape(h, w, 4)[:, :, :3] = img
    return memoryview(out)


def lidar_payload(points: np.ndarray, points_per_channel: Sequence[int],
                  horizontal_angle: float) -> bytes:
    """
    Return the lidar payload.

    ``points`` (N, 4) float32 x, y, z, intensity in the sensor's CARLA
    frame, channel-major; ``points_per_channel`` sums to N;
    ``horizontal_angle`` (rad) where the sweep stopped.
    """
    pts = np.ascontiguousarray(points, dtype='<f4').reshape(-1, 4)
    return _lidar_header(points_per_channel, horizontal_angle, pts.shape[0]) + \
        pts.tobytes()


def _lidar_header(points_per_channel: Sequence[int], horizontal_angle: float,
                  n_points: int) -> bytes:
    counts = np.asarray(points_per_channel, dtype='<u4')
    if int(counts.sum()) != int(n_points):
        raise ValueError(f'lidar: {n_points} points but the channels '
                         f'count {int(counts.sum())}')
    head = np.empty(2 + counts.size, '<u4')
    head[0] = np.array([horizontal_angle], '<f4').view('<u4')[0]
    head[1] = counts.size
    head[2:] = counts
    return head.tobytes()


def semantic_lidar_payload(detections: np.ndarray, points_per_channel: Sequence[int],
                           horizontal_angle: float) -> bytes:
    """
    Return the semantic lidar payload.

    ``detections`` is an array of :data:`SEMANTIC_DETECTION` records
    (channel-major, points in the sensor's CARLA frame, metres).
    """
    recs = np.ascontiguousarray(detections, dtype=SEMANTIC_DETECTION)
    return _lidar_header(points_per_channel, horizontal_angle, recs.shape[0]) + \
        recs.tobytes()


def radar_payload(detections: np.ndarray) -> bytes:
    """Return the radar payload of :data:`RADAR_DETECTION` records."""
    return np.ascontiguousarray(detections, dtype=RADAR_DETECTION).tobytes()


def imu_payload(accelerometer: Sequence[float], gyroscope: Sequence[float],
                compass: float) -> bytes:
    """Return the IMU payload (UE axes: m/s^2, rad/s; compass rad from north)."""
    return msgpack.packb([[float(v) for v in accelerometer],
                          [float(v) for v in gyroscope], float(compass)])


def gnss_payload(latitude: float, longitude: float, altitude: float) -> bytes:
    """Return the GNSS payload (``geom::GeoLocation``: deg, deg, m)."""
    return msgpack.packb([float(latitude), float(longitude), float(altitude)])


def actor_event_payload(self_actor: Any, other_actor: Any, value: Any) -> bytes:
    """
    Return a collision or obstacle event payload.

    msgpack ``[self rpc::Actor, other rpc::Actor, value]``: the normal
    impulse (Vector3D) of a collision, the distance (m) of an obstacle.
    """
    return msgpack.packb([self_actor, other_actor, value], use_bin_type=True)
