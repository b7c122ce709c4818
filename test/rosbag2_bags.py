# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Bags as ``ros2 bag record`` lays them out, written with ``rosbags``.

Not with this project's recorder: ``rosbags`` (an independent rosbag2
implementation) writes the storage (MCAP or sqlite3, zstd per file or per
message or MCAP zstd chunks) and metadata.yaml (version 8 or 9); what
rosbags does not write is done here as rosbag2 does it (Humble's version
5 metadata and sqlite3 schema 3, the ``NAME_<k>`` file names, several
files of a split bag; see rosbag2's branches humble/jazzy).

The content is what carla-ros-bridge publishes for a car driving a 10 m
circle: ``/clock``, ``/carla/<role>/odometry`` (nav_msgs/Odometry, frame
map), ``/carla/<role>/lidar`` (PointCloud2 x, y, z, intensity float32),
``/carla/<role>/rgb_front/image`` (bgra8), ``/tf`` and
``/carla/<role>/vehicle_status`` (carla_msgs, not installed here).
"""

import functools
import math
from pathlib import Path
import shutil
import sqlite3
import tempfile
from typing import Dict, List, Optional

import numpy as np
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
from rosbags.typesys import get_types_from_msg, get_typestore, Stores
import yaml

CARLA_STATUS = """std_msgs/Header header
float32 velocity
geometry_msgs/Accel acceleration
geometry_msgs/Quaternion orientation
"""
PERIOD_NS = 50_000_000  # 20 Hz
RADIUS = 10.0
SPEED = 5.0


@functools.lru_cache(maxsize=None)
def typestore():
    """Return a Humble typestore with carla_msgs' vehicle status added."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    store.register(get_types_from_msg(
        CARLA_STATUS, 'carla_msgs/msg/CarlaEgoVehicleStatus'))
    return store


def _messages(store, role: str, frames: int, start: int = 0,
              image: tuple = (8, 6)) -> List:
    """Return (topic, type, t ns, message) of ``frames`` frames."""
    T = store.types
    Time = T['builtin_interfaces/msg/Time']
    Header = T['std_msgs/msg/Header']
    Vec = T['geometry_msgs/msg/Vector3']
    Quat = T['geometry_msgs/msg/Quaternion']
    Point = T['geometry_msgs/msg/Point']
    out = []
    for k in range(start, start + frames):
        t = k * PERIOD_NS
        stamp = Time(sec=t // 10**9, nanosec=t % 10**9)
        out.append(('/clock', 'rosgraph_msgs/msg/Clock', t,
                    T['rosgraph_msgs/msg/Clock'](clock=stamp)))
        a = SPEED * (t * 1e-9) / RADIUS
        yaw = a + math.pi / 2
        q = Quat(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2))
        pose = T['geometry_msgs/msg/PoseWithCovariance'](
            pose=T['geometry_msgs/msg/Pose'](
                position=Point(x=RADIUS * math.cos(a), y=RADIUS * math.sin(a),
                               z=0.0), orientation=q),
            covariance=np.zeros(36))
        twist = T['geometry_msgs/msg/TwistWithCovariance'](
            twist=T['geometry_msgs/msg/Twist'](
                linear=Vec(x=SPEED, y=0.0, z=0.0),
                angular=Vec(x=0.0, y=0.0, z=SPEED / RADIUS)),
            covariance=np.zeros(36))
        out.append((f'/carla/{role}/odometry', 'nav_msgs/msg/Odometry', t,
                    T['nav_msgs/msg/Odometry'](
                        header=Header(stamp=stamp, frame_id='map'),
                        child_frame_id=role, pose=pose, twist=twist)))
        pts = np.array([[5.0, 1.0, 0.2, 0.9], [7.0, -1.5, 0.1, 0.5]],
                       np.float32)
        fields = [T['sensor_msgs/msg/PointField'](
            name=n, offset=4 * i, datatype=7, count=1)
            for i, n in enumerate('x y z intensity'.split())]
        out.append((f'/carla/{role}/lidar', 'sensor_msgs/msg/PointCloud2', t,
                    T['sensor_msgs/msg/PointCloud2'](
                        header=Header(stamp=stamp, frame_id=f'{role}/lidar'),
                        height=1, width=len(pts), fields=fields,
                        is_bigendian=False, point_step=16,
                        row_step=16 * len(pts),
                        data=np.frombuffer(pts.tobytes(), np.uint8),
                        is_dense=True)))
        if k % 2 == 0:  # 10 Hz camera, as a sensor_tick would make it
            out.append((f'/carla/{role}/rgb_front/image',
                        'sensor_msgs/msg/Image', t, T['sensor_msgs/msg/Image'](
                            header=Header(stamp=stamp,
                                          frame_id=f'{role}/rgb_front'),
                            height=image[1], width=image[0],
                            encoding='bgra8', is_bigendian=0,
                            step=4 * image[0],
                            data=np.full(4 * image[0] * image[1], k % 256,
                                         np.uint8))))
        tf = T['geometry_msgs/msg/TransformStamped'](
            header=Header(stamp=stamp, frame_id='map'), child_frame_id=role,
            transform=T['geometry_msgs/msg/Transform'](
                translation=Vec(x=0.0, y=0.0, z=0.0), rotation=q))
        out.append(('/tf', 'tf2_msgs/msg/TFMessage', t,
                    T['tf2_msgs/msg/TFMessage'](transforms=[tf])))
        out.append((f'/carla/{role}/vehicle_status',
                    'carla_msgs/msg/CarlaEgoVehicleStatus', t,
                    T['carla_msgs/msg/CarlaEgoVehicleStatus'](
                        header=Header(stamp=stamp, frame_id=role),
                        velocity=SPEED,
                        acceleration=T['geometry_msgs/msg/Accel'](
                            linear=Vec(x=0.0, y=0.0, z=0.0),
                            angular=Vec(x=0.0, y=0.0, z=0.0)),
                        orientation=q)))
    return out


def _qos(store, latched: bool = False) -> list:
    """Return one offered profile as a publisher's, seen by discovery."""
    from rosbags.interfaces import (
        Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
        QosTime)
    inf = QosTime(sec=9223372036, nsec=854775807)
    return [Qos(history=QosHistory.UNKNOWN, depth=0,
                reliability=QosReliability.RELIABLE,
                durability=QosDurability.TRANSIENT_LOCAL if latched
                else QosDurability.VOLATILE,
                deadline=inf, lifespan=inf,
                liveliness=QosLiveliness.AUTOMATIC,
                liveliness_lease_duration=inf,
                avoid_ros_namespace_conventions=False)]


def _write_part(path: Path, storage: str, compression: Optional[str],
                version: int, msgs: List, store) -> None:
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    writer = Writer(path, version=version, storage_plugin=plugin)
    if compression in ('file', 'message'):
        writer.set_compression(
            CompressionMode.FILE if compression == 'file'
            else CompressionMode.MESSAGE, CompressionFormat.ZSTD)
    elif compression == 'chunk':
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        conns: Dict[str, object] = {}
        for topic, msgtype, t, msg in msgs:
            if topic not in conns:
                conns[topic] = writer.add_connection(
                    topic, msgtype, typestore=store,
                    offered_qos_profiles=_qos(store, topic == '/tf_static'))
            writer.write(conns[topic], t, store.serialize_cdr(msg, msgtype))


def _rename_files(bag: Path, index: int, info: dict) -> List[str]:
    """Rename a part's files to rosbag2's ``NAME_<k>.<ext>[.zstd]``."""
    names = []
    for rel in info['relative_file_paths']:
        old = bag / rel
        ext = rel.split('.', 1)[1]
        new = f'{bag.name}_{index}.{ext}'
        old.rename(bag / new)
        names.append(new)
    return names


def write_bag(path: Path, storage: str = 'mcap',
              compression: Optional[str] = None, version: int = 9,
              parts: int = 1, frames: int = 20, role: str = 'ego_vehicle',
              humble: bool = False, resend_first: bool = False,
              image: tuple = (8, 6)) -> Path:
    """
    Write a carla-ros-bridge-like bag at ``path`` (must not exist).

    ``storage`` mcap or sqlite3; ``compression`` None, 'file', 'message'
    or 'chunk' (MCAP zstd chunks); ``parts`` > 1 splits it into that many
    files; ``humble``: metadata version 5 and (sqlite3) schema version 3 as
    Humble's rosbag2 writes them; ``resend_first``: the first lidar cloud
    twice (a re-sent frame); ``image``: camera width, height (px; MCAP
    chunks hold 1 MiB). Returns ``path``.
    """
    store = typestore()
    per = frames // parts
    tmp = Path(tempfile.mkdtemp(prefix='rosbag2_bags_'))
    try:
        infos, files = [], []
        path.mkdir(parents=True)
        for k in range(parts):
            part = tmp / f'part{k}'
            n = per if k < parts - 1 else frames - per * (parts - 1)
            msgs = _messages(store, role, n, start=k * per, image=image)
            if resend_first and k == 0:
                first = next(m for m in msgs if m[0].endswith('/lidar'))
                msgs.insert(msgs.index(first) + 1, first)
            _write_part(part, storage, compression,
                        8 if humble else version, msgs, store)
            info = yaml.safe_load((part / 'metadata.yaml').read_text())[
                'rosbag2_bagfile_information']
            for rel in info['relative_file_paths']:
                shutil.move(str(part / rel), str(path / rel))
            names = _rename_files(path, k, info)
            for f, name in zip(info['files'], names):
                f['path'] = name
            info['relative_file_paths'] = names
            infos.append(info)
            files.extend(info['files'])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info = infos[0]
    counts: Dict[str, int] = {}
    for part in infos:
        for t in part['topics_with_message_count']:
            name = t['topic_metadata']['name']
            counts[name] = counts.get(name, 0) + t['message_count']
    for t in info['topics_with_message_count']:
        t['message_count'] = counts[t['topic_metadata']['name']]
    start = min(f['starting_time']['nanoseconds_since_epoch'] for f in files)
    end = max(f['starting_time']['nanoseconds_since_epoch'] +
              f['duration']['nanoseconds'] for f in files)
    info.update({'relative_file_paths': [n for p in infos
                                         for n in p['relative_file_paths']],
                 'files': files, 'message_count': sum(counts.values()),
                 'starting_time': {'nanoseconds_since_epoch': start},
                 'duration': {'nanoseconds': end - start}})
    if humble:
        to_humble(path, info)
    (path / 'metadata.yaml').write_text(yaml.safe_dump(
        {'rosbag2_bagfile_information': info}, sort_keys=False))
    return path


def to_humble(path: Path, info: dict) -> None:
    """
    Make a version 8 bag what Humble's rosbag2 0.15 writes.

    Metadata version 5 (no custom_data, ros_distro, type_description_hash;
    QoS as text with integers, as version 8 has it already) and, for
    sqlite3, schema version 3: no message_definitions table, no
    type_description_hash column, a ``metadata`` table.
    """
    info['version'] = 5
    info.pop('custom_data', None)
    info.pop('ros_distro', None)
    for t in info['topics_with_message_count']:
        t['topic_metadata'].pop('type_description_hash', None)
    for rel in info['relative_file_paths']:
        if not rel.endswith('.db3'):
            continue
        db = sqlite3.connect(str(path / rel))
        db.executescript(
            'DROP TABLE IF EXISTS message_definitions;'
            'ALTER TABLE topics DROP COLUMN type_description_hash;'
            'DELETE FROM schema;'
            'INSERT INTO schema (schema_version, ros_distro) '
            "VALUES (3, 'humble');"
            'CREATE TABLE IF NOT EXISTS metadata(id INTEGER PRIMARY KEY,'
            'metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);')
        db.commit()
        db.close()
