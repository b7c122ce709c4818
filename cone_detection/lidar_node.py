# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
r"""
``lidar_cone_detector``: lidar cones on ``/perception/cones/lidar``.

Mode ``scan`` (default) subscribes the contract topic ``scan``
(``sensor_msgs/LaserScan`` from cloud_to_scan) and runs Algorithm 1
(:mod:`cone_detection.lidar_scan`); mode ``cloud`` subscribes ``lidar``
(``sensor_msgs/PointCloud2``) and runs the 3D detector
(:mod:`cone_detection.lidar_cloud`). Cones are published as the contract's
cone cloud (x, y, z, class_id 0, confidence) in the vehicle frame
(``{role}``), moved from the sensor frame with the lidar's mount pose from
the rig file; z = 0 is the cone base on the ground; the stamp is the
input's stamp. Markers (namespace ``lidar``) go to ``cone_markers``.

Bad input (malformed messages, zero angle_increment, mismatched
intensities) is reported (throttled) and dropped; the node keeps running.
Inputs with more than ``max_points`` points (beams) are dropped before
decoding; the subscription keeps only the newest message (depth 1), so a
slow cycle skips to the latest input. Stamp policy
(:mod:`hil_bridge.interface.freshness`): inputs stamped ahead of the node
clock or more than ``input_timeout`` behind it are dropped with a
throttled warning; outputs carry the accepted input's stamp.
Run::

    python -m cone_detection.lidar_node --ros-args \
        --params-file config/lidar_cone_detector.yaml
"""

import sys
from typing import Any, Dict, List, Optional

from cone_detection.fusion import ConeSet
from cone_detection.lidar_cloud import CloudConeDetector, CloudConeParams
from cone_detection.lidar_scan import detect_cones_laserscan, ScanConeParams
from cone_detection.markers import cone_markers
from hil_bridge.interface import contract
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.frames import pose_to_matrix, transform_points
from hil_bridge.interface.node_inputs import check_cloud_size, InputPolicy
from hil_bridge.interface.node_main import DropLog, run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.interface.rig import load_rig
import numpy as np
from rclpy.node import Node

NODE_NAME = 'lidar_cone_detector'
PI = 3.1416

PARAMS: List[ParamSpec] = [
    ParamSpec('mode', 'scan: LaserScan + Algorithm 1; cloud: 3D detector',
              choices=('scan', 'cloud')),
    ParamSpec('rig', 'sensor rig file (config/sensors or a path)'),
    ParamSpec('lidar_id', 'sensor id of the lidar in the rig (mount pose)'),
    ParamSpec('role_name', 'ego role name: topic and frame names'),
    ParamSpec('publish_markers', 'publish cone markers (namespace lidar)'),
    ParamSpec('angle_min', 'scan crop start (rad)', lo=-PI, hi=PI),
    ParamSpec('angle_max', 'scan crop end (rad)', lo=-PI, hi=PI),
    ParamSpec('range_min', 'shortest valid range (m)', lo=0.0, hi=100.0),
    ParamSpec('range_max', 'longest valid range (m)', lo=0.1, hi=500.0),
    ParamSpec('max_step', 'step (m) between points that starts a cluster',
              lo=0.01, hi=5.0),
    ParamSpec('max_gap', 'invalid beams tolerated inside a cluster',
              lo=0, hi=20),
    ParamSpec('max_turn', 'direction change (rad) that starts a cluster; '
              'pi disables', lo=0.0, hi=PI),
    ParamSpec('turn_min_step', 'steps shorter than this (m) ignore max_turn',
              lo=0.0, hi=5.0),
    ParamSpec('range_noise', 'range noise std-dev (m) the gates allow for',
              lo=0.0, hi=1.0),
    ParamSpec('width_margin', 'slack (m) on the cone size gate', lo=0.0,
              hi=1.0),
    ParamSpec('count_lo', 'fewest points, times the expected count',
              lo=0.0, hi=10.0),
    ParamSpec('count_hi', 'most points, times the big cone count',
              lo=0.1, hi=20.0),
    ParamSpec('min_points', 'fewest points of a cone', lo=1, hi=100),
    ParamSpec('reject_surface', "drop clusters on their neighbours' line "
              '(grazing walls)'),
    ParamSpec('surface_tol', 'distance (m) from that line', lo=0.0, hi=1.0),
    ParamSpec('surface_max_step', 'longest step (m) of a grazing surface',
              lo=0.01, hi=20.0),
    ParamSpec('reject_slivers', 'drop clusters between two nearer objects'),
    ParamSpec('refine', 'move the centre to the cone axis'),
    ParamSpec('ground', 'cloud ground removal', choices=('height', 'ransac')),
    ParamSpec('ground_z', 'ground height in the vehicle frame (m)',
              lo=-5.0, hi=5.0),
    ParamSpec('ground_margin', 'band above ground removed (m)', lo=0.0,
              hi=1.0),
    ParamSpec('ransac_iterations', 'RANSAC plane samples', lo=1, hi=1000),
    ParamSpec('ransac_threshold', 'RANSAC inlier distance (m)', lo=0.001,
              hi=1.0),
    ParamSpec('ransac_max_tilt', 'steepest accepted ground (rad)', lo=0.0,
              hi=1.0),
    ParamSpec('max_z', 'highest point used (m above ground)', lo=0.1,
              hi=10.0),
    ParamSpec('cloud_range_max', 'farthest point used (m)', lo=0.1,
              hi=500.0),
    ParamSpec('cluster_tolerance', 'neighbour distance of a cluster (m)',
              lo=0.01, hi=2.0),
    ParamSpec('cloud_width_margin', 'slack (m) on the extent gate', lo=0.0,
              hi=1.0),
    ParamSpec('height_margin', 'slack (m) on the height gate', lo=0.0,
              hi=1.0),
    ParamSpec('min_top', 'lowest cluster top that can be a cone (m)',
              lo=0.0, hi=1.0),
    ParamSpec('cloud_count_lo', 'fewest points, times the expected count',
              lo=0.0, hi=10.0),
    ParamSpec('cloud_count_hi', 'most points, times the big cone count',
              lo=0.1, hi=20.0),
    ParamSpec('input_timeout', 'scans/clouds stamped more than this behind the node clock '
              'are dropped (s)', lo=0.01, hi=60.0),
    ParamSpec('max_points', 'clouds (cloud mode) or scans with more points are dropped '
              'before decoding', lo=1, hi=2**31 - 1),
]

_CLOUD_KEYS = {'cloud_range_max': 'range_max',
               'cloud_width_margin': 'width_margin',
               'cloud_count_lo': 'count_lo', 'cloud_count_hi': 'count_hi'}


def scan_params(values: Dict[str, Any], scan_height: float) -> ScanConeParams:
    """Return the scan detector's parameters from node parameter values."""
    return ScanConeParams.from_dict(dict(values, scan_height=scan_height))


def cloud_params(values: Dict[str, Any]) -> CloudConeParams:
    """Return the 3D detector's parameters from node parameter values."""
    mapped = {_CLOUD_KEYS.get(k, k): v for k, v in values.items()
              if k not in ('range_max', 'width_margin', 'count_lo',
                           'count_hi', 'refine', 'min_points')}
    mapped['refine'] = values['refine']
    return CloudConeParams.from_dict(mapped)


class LidarConeNode(Node):
    """Lidar cone detection node (scan or cloud mode)."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, load the rig, create the topics."""
        super().__init__(NODE_NAME, **kwargs)
        v = declare_params(self, PARAMS, NODE_NAME)
        self.mode = str(v['mode'])
        role = str(v['role_name'])
        lidar_id = str(v['lidar_id'])
        spec = next((s for s in load_rig(str(v['rig']))
                     if s.sensor_id == lidar_id), None)
        if spec is None:
            raise ValueError(f'rig {v["rig"]!r} has no sensor {lidar_id!r}')
        self.mount = spec.mount
        self.T_vehicle_lidar = pose_to_matrix(spec.mount)
        self.vehicle_frame = contract.frame('vehicle', role)
        self.sensor_frame = contract.frame('sensor', role, lidar_id)
        self.max_points = int(v['max_points'])
        self.inputs = InputPolicy(self)
        self.gate = self.inputs.gate(self.mode, float(v['input_timeout']))
        # depth 1: a message that waited while the previous one was being
        # processed is replaced by the newest (drop what cannot be done in time)
        if self.mode == 'scan':
            self.scan_params = scan_params(v, spec.mount.z)
            self.sub = contract.create_subscription(self, 'scan',
                                                    self._on_scan, role, depth=1)
        else:
            self.cloud = CloudConeDetector.for_lidar(
                spec.mount, spec.attributes, cloud_params(v))
            self.sub = contract.create_subscription(self, 'lidar',
                                                    self._on_cloud, role, depth=1)
        self.pub = contract.create_publisher(self, 'cones_lidar', role)
        self.marker_pub = (contract.create_publisher(self, 'cone_markers',
                                                     role)
                           if v['publish_markers'] else None)
        self._frame_warned = False
        self._markers = 0
        self.published = 0
        self._bad = DropLog(self.get_logger())
        self.get_logger().info(
            f'mode {self.mode}, lidar {lidar_id} at ({self.mount.x:.2f}, '
            f'{self.mount.y:.2f}, {self.mount.z:.2f}) m, publishing '
            f'{self.pub.topic_name} in {self.vehicle_frame}')

    def _check_frame(self, frame_id: str) -> None:
        if frame_id and frame_id != self.sensor_frame and \
                not self._frame_warned:
            self._frame_warned = True
            self.get_logger().warning(
                f'input frame {frame_id!r} is not {self.sensor_frame!r}: '
                'using the rig mount pose of the configured sensor anyway')

    def _on_scan(self, msg: Any) -> None:
        self._check_frame(msg.header.frame_id)
        if self.inputs.admit(self.gate, msg.header.stamp) is None:
            return
        try:
            if len(msg.ranges) > self.max_points:
                raise ValueError(f'{len(msg.ranges)} ranges exceed max_points '
                                 f'{self.max_points}')
            res = detect_cones_laserscan(msg, self.scan_params)
        except ValueError as err:
            self._bad('scan', err)
            return
        xyz = transform_points(self.T_vehicle_lidar,
                               np.column_stack((res.xy, np.zeros(len(res)))))
        xyz[:, 2] = 0.0
        self._publish(ConeSet(xyz, np.zeros(len(res), np.uint8),
                              res.confidence), msg.header.stamp)

    def _on_cloud(self, msg: Any) -> None:
        self._check_frame(msg.header.frame_id)
        if self.inputs.admit(self.gate, msg.header.stamp) is None:
            return
        try:
            check_cloud_size(msg, self.max_points)
            pts = clouds.cloud_to_xyz(msg, skip_nans=True)
            cones = self.cloud.detect(pts)
        except ValueError as err:
            self._bad('cloud', err)
            return
        self._publish(cones, msg.header.stamp)

    def _publish(self, cones: ConeSet, stamp: Any) -> None:
        t = stamps.sec_from_stamp(stamp)
        cloud = clouds.cones_to_cloud(cones.xyz.astype(np.float32),
                                      cones.class_id, cones.confidence, t,
                                      self.vehicle_frame)
        cloud.header.stamp = stamp
        self.pub.publish(cloud)
        self.published += 1
        if self.marker_pub is not None:
            self.marker_pub.publish(cone_markers(
                cones.xyz, cones.class_id, stamp, self.vehicle_frame,
                ns='lidar', confidence=cones.confidence,
                previous_count=self._markers))
            self._markers = len(cones)


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(LidarConeNode, args)


if __name__ == '__main__':
    sys.exit(main())
