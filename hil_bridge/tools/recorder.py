# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Record every topic of the graph to an MCAP file with ROS 2 schemas.

``python -m hil_bridge.tools.recorder FILE.mcap [--exclude PATTERN ...]
[--ros-args ...]`` discovers
topics once a second and subscribes to each new one with the QoS of its
publishers; messages are written as they arrive, serialized (CDR, no
decode/encode), with ``ros2msg`` schemas, so ``ros2 bag``, Foxglove and
``carla-hil play`` read the file. Log and publish times are the node's
clock (sim time with use_sim_time).
"""

import fnmatch
import importlib
import queue
import sys
import threading
from typing import Any, Dict, List

from hil_bridge.interface.node_main import STOP_POLL, StopRequest
from hil_bridge.tools.msg_definitions import full_definition
from mcap.writer import CompressionType, Writer
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

SKIP = {'/rosout', '/parameter_events'}
#: back-pressure limit of the write queue (messages beyond it are dropped)
MAX_QUEUED_BYTES = 512 * 1024 * 1024


def msg_class(full_type: str) -> Any:
    """Import the message class of ``pkg/msg/Type``."""
    pkg, kind, name = full_type.split('/')
    return getattr(importlib.import_module(f'{pkg}.{kind}'), name)


class McapRecorder(Node):
    """Subscribe to every topic and append it to an MCAP writer."""

    def __init__(self, path: str, exclude: List[str] = ()) -> None:
        """Open ``path`` for writing; skip topics matching ``exclude``."""
        super().__init__('mcap_recorder')
        self._exclude = list(exclude)
        self._stream = open(path, 'wb')
        # LZ4: cheap enough to keep up with two cameras on one core
        self._writer = Writer(self._stream, compression=CompressionType.LZ4)
        self._writer.start(profile='ros2', library='carla_hil')
        self._lock = threading.Lock()
        self._schemas: Dict[str, int] = {}
        self._channels: Dict[str, int] = {}
        self._subs: List[Any] = []
        self._seq = 0
        self.count = 0
        self.dropped = 0
        self._queued_bytes = 0
        # callbacks only enqueue; one thread compresses and writes, so a
        # large message being written never blocks the DDS receive path
        self._queue: 'queue.Queue' = queue.Queue()
        self._thread = threading.Thread(target=self._write_loop, daemon=True)
        self._thread.start()
        self._discover()
        self.create_timer(1.0, self._discover)

    def _qos_for(self, topic: str) -> QoSProfile:
        infos = self.get_publishers_info_by_topic(topic)
        reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                       for i in infos) and bool(infos)
        latched = any(i.qos_profile.durability ==
                      DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=10 if reliable else 5,
            reliability=ReliabilityPolicy.RELIABLE if reliable
            else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
            else DurabilityPolicy.VOLATILE)

    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self._channels or topic in SKIP or len(types) != 1:
                continue
            if any(fnmatch.fnmatch(topic, p) for p in self._exclude):
                self._channels[topic] = -1
                continue
            full_type = types[0]
            try:
                cls = msg_class(full_type)
                definition = full_definition(full_type)
            except (ImportError, AttributeError, FileNotFoundError,
                    ValueError) as exc:
                self.get_logger().warn(f'not recording {topic}: {exc}')
                self._channels[topic] = -1
                continue
            with self._lock:
                if full_type not in self._schemas:
                    self._schemas[full_type] = self._writer.register_schema(
                        name=full_type, encoding='ros2msg',
                        data=definition.encode())
                self._channels[topic] = self._writer.register_channel(
                    topic=topic, message_encoding='cdr',
                    schema_id=self._schemas[full_type])
            self._subs.append(self.create_subscription(
                cls, topic, lambda data, t=topic: self._on_message(t, data),
                self._qos_for(topic), raw=True))

    def _on_message(self, topic: str, data: bytes) -> None:
        if self._queued_bytes > MAX_QUEUED_BYTES:
            self.dropped += 1
            if self.dropped in (1, 100, 1000) or self.dropped % 10000 == 0:
                self.get_logger().warn(
                    f'disk too slow: dropped {self.dropped} messages')
            return
        with self._lock:
            self._queued_bytes += len(data)
        self._queue.put((self._channels[topic],
                         self.get_clock().now().nanoseconds, data))

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            channel, now, data = item
            with self._lock:
                self._queued_bytes -= len(data)
                self._writer.add_message(channel_id=channel, log_time=now,
                                         publish_time=now, data=data,
                                         sequence=self._seq)
                self._seq += 1
                self.count += 1

    def close(self) -> None:
        """Write what is queued, then finish the file (index, summary)."""
        self._queue.put(None)
        self._thread.join()
        with self._lock:
            self._writer.finish()
            self._stream.close()


def main(args: List[str] = None) -> int:
    """Record until SIGINT/SIGTERM, then close the file."""
    argv = list(sys.argv[1:] if args is None else args)
    ros_args = argv[argv.index('--ros-args'):] if '--ros-args' in argv \
        else []
    plain = argv[:argv.index('--ros-args')] if ros_args else argv
    exclude = []
    while '--exclude' in plain:
        i = plain.index('--exclude')
        exclude.append(plain[i + 1])
        del plain[i:i + 2]
    if len(plain) != 1:
        print('usage: python -m hil_bridge.tools.recorder FILE.mcap '
              '[--exclude TOPIC_PATTERN ...]', file=sys.stderr)
        return 2
    rclpy.init(args=['recorder'] + ros_args,
               signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()
    node = McapRecorder(plain[0], exclude)
    try:
        while not stop.requested and rclpy.ok():
            rclpy.spin_once(node, timeout_sec=STOP_POLL)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.restore()
        node.close()
        print(f'[recorder] wrote {node.count} messages to {plain[0]}'
              f' ({node.dropped} dropped)')
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
