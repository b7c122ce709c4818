# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
r"""
``pointcloud_to_laserscan`` node with the interface of the C++ package.

Node name ``pointcloud_to_laserscan``; subscribes ``cloud_in``
(sensor_msgs/PointCloud2) and publishes ``scan`` (sensor_msgs/LaserScan),
both with SensorDataQoS (the subscription keeps ``queue_size`` messages).
Like upstream the subscription is lazy: the node subscribes to the cloud
only while ``scan`` has subscribers (polled on a wall-clock timer every
0.2 s). Parameters and their semantics are upstream's
(``cone_detection.cloud_to_scan``); ``config/cloud_to_scan.yaml`` sets them for
our rig; run bare (no params file) the node has upstream's defaults
(:data:`UPSTREAM_DEFAULTS`: 360 bins of 1 deg). Remap the topics the ROS
way, as ``config/graph.yaml`` does::

    python -m cone_detection.cloud_to_scan_node --ros-args \
        --params-file config/cloud_to_scan.yaml \
        -r cloud_in:=/carla/ego_vehicle/lidar -r scan:=/carla/ego_vehicle/scan

Without tf2 only ``target_frame`` "" (or equal to the cloud's own frame)
is supported; another frame is reported once and those clouds are
dropped. ``transform_tolerance`` is declared for compatibility and unused.
A ``queue_size`` of 0 means the number of CPU threads (upstream's
default). Two parameters are ours, not upstream's: ``max_points`` (larger
clouds are dropped before decoding) and ``input_timeout`` (the stamp
policy of :mod:`hil_bridge.interface.freshness`: clouds stamped ahead of
the node clock or more than ``input_timeout`` behind it are dropped with a
throttled warning).
"""

from dataclasses import asdict
import os
import sys
from typing import Any, Dict, Optional

from cone_detection.cloud_to_scan import points_to_ranges, ScanParams
from hil_bridge.interface.codecs import clouds, scans
from hil_bridge.interface.node_inputs import check_cloud_size, InputPolicy
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from sensor_msgs.msg import LaserScan, PointCloud2

NODE_NAME = 'pointcloud_to_laserscan'

PARAMS = [
    ParamSpec('target_frame', 'frame of the scan; "" = the cloud frame '
              '(other frames need tf2, not supported here)'),
    ParamSpec('transform_tolerance', 'tf lookup tolerance (s); unused '
              'without tf2', lo=0.0, hi=10.0),
    ParamSpec('min_height', 'lowest z (m) of a point that counts'),
    ParamSpec('max_height', 'highest z (m) of a point that counts'),
    ParamSpec('angle_min', 'first bin angle (rad)', lo=-3.1416, hi=3.1416),
    ParamSpec('angle_max', 'last angle (rad)', lo=-3.1416, hi=3.1416),
    ParamSpec('angle_increment', 'bin width (rad)', lo=1e-6, hi=3.1416),
    ParamSpec('scan_time', 'scan_time field of the scan (s)', lo=0.0, hi=10.0),
    ParamSpec('range_min', 'shortest range (m) kept', lo=0.0),
    ParamSpec('range_max', 'longest range (m) kept', lo=0.0),
    ParamSpec('use_inf', 'empty bins are +inf (else range_max + inf_epsilon)'),
    ParamSpec('inf_epsilon', 'added to range_max for empty bins when '
              'use_inf is false (m)', lo=0.0),
    ParamSpec('queue_size', 'cloud subscription depth; 0 = CPU threads',
              lo=0, hi=1000),
    ParamSpec('input_timeout', 'ours, not upstream: clouds stamped more than this behind the '
              'node clock are dropped (s)', lo=0.01, hi=60.0),
    ParamSpec('max_points', 'ours, not upstream: clouds with more points are dropped '
              'before decoding', lo=1, hi=2**31 - 1),
]


#: pointcloud_to_laserscan's own defaults (upstream's node declares them so;
#: queue_size 0 = its hardware_concurrency()).
UPSTREAM_DEFAULTS: Dict[str, Any] = dict(asdict(ScanParams()), target_frame='',
                                         transform_tolerance=0.01, queue_size=0)


class CloudToScanNode(Node):
    """PointCloud2 -> LaserScan with pointcloud_to_laserscan semantics."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        values = declare_params(self, PARAMS, NODE_NAME, 'cloud_to_scan.yaml',
                                UPSTREAM_DEFAULTS)
        self.params = ScanParams.from_mapping(values)
        self.target_frame = str(values['target_frame'])
        depth = int(values['queue_size']) or (os.cpu_count() or 1)
        self._sub_qos = QoSProfile(depth=depth,
                                   reliability=qos_profile_sensor_data.reliability,
                                   durability=qos_profile_sensor_data.durability,
                                   history=qos_profile_sensor_data.history)
        self.pub = self.create_publisher(LaserScan, 'scan', qos_profile_sensor_data)
        self.sub: Optional[Any] = None
        self.max_points = int(values['max_points'])
        self.inputs = InputPolicy(self)
        self.gate = self.inputs.gate('cloud_in', float(values['input_timeout']))
        self._frame_error = False
        self.scans = 0
        self._timer = self.create_timer(0.2, self._poll_subscribers,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._poll_subscribers()

    def _poll_subscribers(self) -> None:
        """Subscribe to the cloud only while somebody listens to the scan."""
        listeners = self.pub.get_subscription_count()
        if listeners > 0 and self.sub is None:
            self.sub = self.create_subscription(PointCloud2, 'cloud_in',
                                                self._on_cloud, self._sub_qos)
            self.get_logger().info('scan has subscribers: subscribed to cloud_in')
        elif listeners == 0 and self.sub is not None:
            self.destroy_subscription(self.sub)
            self.sub = None
            self.get_logger().info('no scan subscribers: unsubscribed cloud_in')

    def _on_cloud(self, cloud: PointCloud2) -> None:
        frame = cloud.header.frame_id
        if self.target_frame and self.target_frame != frame:
            if not self._frame_error:
                self.get_logger().error(
                    f'target_frame {self.target_frame!r} differs from the cloud '
                    f'frame {frame!r}: transforming needs tf2, which this node '
                    'does not use; dropping such clouds (set target_frame "")')
                self._frame_error = True
            return
        if self.inputs.admit(self.gate, cloud.header.stamp) is None:
            return
        try:
            check_cloud_size(cloud, self.max_points)
            xyz = clouds.cloud_to_xyz(cloud, skip_nans=False)
        except ValueError as err:
            self.get_logger().error(f'bad cloud dropped: {err}',
                                    throttle_duration_sec=5.0)
            return
        self.pub.publish(make_scan(xyz, self.params, cloud.header))
        self.scans += 1


def make_scan(xyz: Any, params: ScanParams, header: Any) -> LaserScan:
    """Return the LaserScan of (N, 3) points with the cloud's header."""
    ranges = points_to_ranges(xyz, params)
    ang = params.scan_angles
    msg = scans.scan_to_msg(ranges, ang['angle_min'], ang['angle_increment'],
                            header, header.frame_id, range_min=params.range_min,
                            range_max=params.range_max, scan_time=params.scan_time)
    msg.angle_max = ang['angle_max']
    return msg


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(CloudToScanNode, args)


if __name__ == '__main__':
    sys.exit(main())
