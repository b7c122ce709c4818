# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Probes for the two-host rig: an observer and an echo "onboard" stage.

``python -m hil_bridge.bench.link_probe_node observe OUT.jsonl [--duration S]``
    (next to the bridge) writes one JSON line per message of the odometry,
    ``applied_control``, ``cmd_vel``, ``brake_request`` and ``aeb_status``
    topics: ``{"k": key, "w": wall receipt s, "s": header stamp s, ...}``
    with speed, position and yaw (odometry: m/s, m, rad in ``map``),
    source, brake and steer (applied control, steer in [-1, 1]) or the
    command values (cmd_vel: ``v`` m/s, ``wz`` angular.z). Wall receipt
    of odometry frame k vs. of the command stamped k gives the loop
    latency on one host clock.
``python -m hil_bridge.bench.link_probe_node echo [--source odometry|camera|
    camera_compressed] [--speed V]``
    (on the onboard side) publishes for every input message a ``cmd_vel``
    (TwistStamped, linear.x = V m/s, angular.z = 0) carrying the input's
    header stamp: a stand-in for the onboard stack that keeps lockstep fed;
    camera inputs are converted to numpy (``msg_to_image`` /
    ``compressed_to_image``) as a detector would.

Both stop on SIGINT/SIGTERM or after ``--duration`` wall seconds; the
observer (queues of ``OBSERVER_DEPTH``) first writes what is still queued.
"""

import argparse
import json
import math
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import images, stamps
from hil_bridge.interface.frames import quaternion_yaw
from hil_bridge.interface.node_main import StopRequest
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions

OBSERVED = ('odometry', 'applied_control', 'cmd_vel', 'brake_request',
            'aeb_status')
#: observer queue depth: a probe starved by a loaded machine catches up
#: instead of losing messages (the contract depths are 1-10)
OBSERVER_DEPTH = 1000
#: at a stop, the observer takes what is queued until none came this long (s)
DRAIN_QUIET = 0.3


class ObserverNode(Node):
    """Log receipts of the loop's topics as JSON lines."""

    def __init__(self, out: TextIO, role: str = contract.DEFAULT_ROLE,
                 **kwargs: Any) -> None:
        """Subscribe to the observed contract topics, writing to ``out``."""
        super().__init__('hil_link_observer', **kwargs)
        self.out = out
        self.count = 0
        self.last_receipt = time.monotonic()
        for key in OBSERVED:
            row = contract.topic(key)
            qos = contract.qos_profile(row.qos)
            self.create_subscription(row.msg_class(), row.resolve(role),
                                     self._make_cb(key), QoSProfile(
                                         history=HistoryPolicy.KEEP_LAST,
                                         depth=OBSERVER_DEPTH,
                                         reliability=qos.reliability,
                                         durability=qos.durability))

    def _make_cb(self, key: str) -> Any:
        def callback(msg: Any) -> None:
            rec: Dict[str, Any] = {'k': key, 'w': time.time()}
            self.last_receipt = time.monotonic()
            header = getattr(msg, 'header', None)
            if header is not None:
                rec['s'] = stamps.sec_from_stamp(header.stamp)
            if key == 'odometry':
                v = msg.twist.twist.linear
                rec['v'] = math.hypot(v.x, v.y)
                rec['x'] = msg.pose.pose.position.x
                rec['y'] = msg.pose.pose.position.y
                rec['yaw'] = quaternion_yaw(msg.pose.pose.orientation)
            elif key == 'applied_control':
                rec['src'] = int(round(msg.twist.linear.z))
                rec['brake'] = msg.twist.linear.y
                rec['steer'] = msg.twist.angular.z
            elif key == 'cmd_vel':
                rec['v'] = msg.twist.linear.x
                rec['wz'] = msg.twist.angular.z
            elif key == 'brake_request':
                rec['a'] = msg.accel.linear.x
            elif key == 'aeb_status' and msg.status:
                rec['state'] = msg.status[0].message
            self.out.write(json.dumps(rec) + '\n')
            self.count += 1
        return callback


class EchoNode(Node):
    """Answer each input frame with a cmd_vel carrying its stamp."""

    def __init__(self, source: str = 'odometry', speed: float = 2.0,
                 role: str = contract.DEFAULT_ROLE, **kwargs: Any) -> None:
        """Subscribe to ``source`` (odometry/camera/camera_compressed)."""
        super().__init__('hil_link_echo', **kwargs)
        if not math.isfinite(speed):
            raise ValueError(f'echo speed must be finite, got {speed}')
        keys = {'odometry': 'odometry', 'camera': 'camera_left',
                'camera_compressed': 'camera_left_compressed'}
        if source not in keys:
            raise ValueError(f'echo source {source!r} not in {sorted(keys)}')
        self.source = source
        self.speed = float(speed)
        self.count = 0
        self.pub = contract.create_publisher(self, 'cmd_vel', role=role)
        contract.create_subscription(self, keys[source], self._on_input,
                                     role=role)

    def _on_input(self, msg: Any) -> None:
        from geometry_msgs.msg import TwistStamped
        try:
            if self.source == 'camera':
                images.msg_to_image(msg, 'bgr8')
            elif self.source == 'camera_compressed':
                images.compressed_to_image(msg)
        except ValueError as exc:
            self.get_logger().error(f'bad image: {exc}',
                                    throttle_duration_sec=5.0)
            return
        cmd = TwistStamped()
        cmd.header.stamp = msg.header.stamp
        cmd.header.frame_id = msg.header.frame_id
        cmd.twist.linear.x = self.speed
        self.pub.publish(cmd)
        self.count += 1


def main(args: Optional[List[str]] = None) -> int:
    """Command line: observe | echo (see the module docstring)."""
    argv = list(sys.argv[1:] if args is None else args)
    ros_args: List[str] = []
    if '--ros-args' in argv:
        idx = argv.index('--ros-args')
        argv, ros_args = argv[:idx], argv[idx:]
    parser = argparse.ArgumentParser(prog='link_probe_node')
    sub = parser.add_subparsers(dest='cmd', required=True)
    obs = sub.add_parser('observe')
    obs.add_argument('out')
    echo = sub.add_parser('echo')
    echo.add_argument('--source', default='odometry',
                      choices=['odometry', 'camera', 'camera_compressed'])
    echo.add_argument('--speed', type=float, default=2.0)
    for p in (obs, echo):
        p.add_argument('--duration', type=float, default=0.0)
        p.add_argument('--role', default=contract.DEFAULT_ROLE)
    opts = parser.parse_args(argv)
    rclpy.init(args=['probe'] + ros_args,
               signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()
    node: Optional[Node] = None
    out: Optional[TextIO] = None
    try:
        if opts.cmd == 'observe':
            out = open(opts.out, 'w', encoding='utf-8', buffering=1)
            node = ObserverNode(out, role=opts.role)
        else:
            node = EchoNode(opts.source, opts.speed, role=opts.role)
        end = time.monotonic() + opts.duration if opts.duration > 0 else None
        while rclpy.ok() and not stop.requested and \
                (end is None or time.monotonic() < end):
            rclpy.spin_once(node, timeout_sec=0.1)
        if isinstance(node, ObserverNode):  # write what is still queued
            while rclpy.ok() and time.monotonic() - node.last_receipt < DRAIN_QUIET:
                rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.restore()
        if node is not None:
            print(f'{opts.cmd}: {node.count} messages', flush=True)
            node.destroy_node()
        if out is not None:
            out.close()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
