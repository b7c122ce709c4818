# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Write a one-file MCAP rosbag2 bag (no rclpy): the recorder's storage.

``BAG_DIR/metadata.yaml`` and ``BAG_DIR/<name>_0.mcap`` as ``ros2 bag
record -s mcap`` writes them, in the metadata version asked for
(:mod:`hil_bridge.tools.bag_metadata`): 9 (Jazzy, Kilted) by default, 5
for Humble. ``ros2msg`` schemas with every nested definition, ``cdr``
messages, LZ4 chunks; each channel carries the offered QoS profiles (text
with policy names from version 9, with rmw integers before) and the type
hash; an MCAP metadata record ``rosbag2`` holds the bag metadata as
``serialized_metadata`` and the ``ROS_DISTRO``.
"""

import os
from typing import Any, Dict, List, Optional, Sequence

from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.msg_definitions import full_definition, type_hash
from mcap.writer import CompressionType, Writer

#: MCAP header library of this project's bags (the report knows them by it)
LIBRARY = 'carla_hil recorder'


class BagWriter:
    """Write serialized messages into a new rosbag2 bag directory."""

    def __init__(self, bag_dir: str, version: int = bm.VERSION,
                 ros_distro: Optional[str] = None) -> None:
        """
        Create ``bag_dir`` (it must not hold files) and its MCAP file.

        ``version``: metadata version (5-9); ``ros_distro``: written into
        the metadata (default: the ``ROS_DISTRO`` environment variable).
        Raises ``FileExistsError`` or ``ValueError`` naming the problem.
        """
        if version not in bm.WRITE_VERSIONS:
            raise ValueError(f'cannot write bag metadata version {version} '
                             f'(one of {bm.WRITE_VERSIONS})')
        if os.path.isdir(bag_dir) and os.listdir(bag_dir):
            raise FileExistsError(f'{bag_dir}: bag directory exists and is '
                                  'not empty')
        os.makedirs(bag_dir, exist_ok=True)
        self.bag_dir = bag_dir
        self.version = version
        self.ros_distro = os.environ.get('ROS_DISTRO', '') \
            if ros_distro is None else ros_distro
        self.file_name = bm.file_name_for(bag_dir)
        self._stream = open(os.path.join(bag_dir, self.file_name), 'wb')
        # LZ4 chunks: cheap enough for two cameras; rosbag2 reads them
        self._writer = Writer(self._stream, chunk_size=4 * 1024 * 1024,
                              compression=CompressionType.LZ4)
        self._writer.start(profile='ros2', library=LIBRARY)
        self._schemas: Dict[str, int] = {}
        self._channels: Dict[str, int] = {}
        self.records: Dict[str, bm.TopicRecord] = {}
        self._first_ns: Optional[int] = None
        self._last_ns = 0

    def has_topic(self, topic: str) -> bool:
        """Return True once ``topic`` has a channel."""
        return topic in self._channels

    def add_topic(self, topic: str, full_type: str,
                  offers: Sequence[Dict[str, Any]]) -> None:
        """Register a topic: its type and its publishers' QoS offers."""
        if full_type not in self._schemas:
            self._schemas[full_type] = self._writer.register_schema(
                name=full_type, encoding='ros2msg',
                data=full_definition(full_type).encode())
        record = bm.TopicRecord(name=topic, msg_type=full_type,
                                offered_qos_profiles=list(offers),
                                type_description_hash=type_hash(full_type))
        self._channels[topic] = self._writer.register_channel(
            topic=topic, message_encoding='cdr',
            schema_id=self._schemas[full_type],
            metadata={'offered_qos_profiles':
                      bm.channel_qos(offers, self.version),
                      'topic_type_hash': record.type_description_hash})
        self.records[topic] = record

    def write(self, topic: str, log_time: int, publish_time: int,
              data: bytes) -> None:
        """Write one message of a registered topic (times in ns)."""
        self._writer.add_message(channel_id=self._channels[topic],
                                 log_time=log_time,
                                 publish_time=publish_time, data=data,
                                 sequence=0)
        self.records[topic].message_count += 1
        self._first_ns = log_time if self._first_ns is None else \
            min(self._first_ns, log_time)
        self._last_ns = max(self._last_ns, log_time)

    def close(self) -> Dict[str, Any]:
        """Finish the MCAP file, write metadata.yaml; return the metadata."""
        records: List[bm.TopicRecord] = [self.records[t]
                                         for t in sorted(self.records)]
        info = bm.bag_info(records, self.file_name, self._first_ns or 0,
                           self._last_ns, ros_distro=self.ros_distro,
                           version=self.version)
        self._writer.add_metadata('rosbag2', {
            'serialized_metadata': bm.dump_info(info),
            'ROS_DISTRO': self.ros_distro})
        self._writer.finish()
        self._stream.close()
        bm.write_metadata(self.bag_dir, info)
        return info
