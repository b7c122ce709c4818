# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The full stack's lidar-only perception, in-process: lidar cloud -> planner cones.

What the onboard graph (``config/graph.yaml``) does with one lidar frame
when ``cone_fusion`` runs lidar only (``use_vision`` false, the track_sweep
suite's ``lidar`` mode) and without its map, done with the nodes' own core
functions and parameter files, without DDS:

1. ``pointcloud_to_laserscan`` (:mod:`cone_detection.cloud_to_scan_node`):
   :func:`cone_detection.cloud_to_scan.points_to_ranges` of the cloud in
   the sensor frame with the :class:`~cone_detection.cloud_to_scan.ScanParams`
   of ``config/cloud_to_scan.yaml``; the scan's angles are the float32
   values of the LaserScan message;
2. ``lidar_cone_detector`` in scan mode
   (:meth:`cone_detection.lidar_node.LidarConeNode._on_scan`):
   :func:`cone_detection.lidar_scan.detect_cones_scan` with
   :func:`cone_detection.lidar_node.scan_params` of
   ``config/lidar_cone_detector.yaml`` and the mount height of its rig's
   ``lidar_id`` sensor, then into the vehicle frame (REP-103, rear-axle
   origin) by that mount pose, z = 0, class unknown (0);
3. ``cone_fusion`` (:meth:`cone_detection.fusion_node.ConeFusionNode._fuse`
   with no vision): :func:`cone_detection.fusion.fuse` ``(lidar, None)``,
   which passes the lidar cones on as unknown;
4. the planner node decodes the cone cloud
   (:func:`hil_bridge.interface.codecs.clouds.cloud_to_cones`: float32
   positions, non-finite rows dropped) and hands it to the planner as it is;
   the planner core itself cuts it to ``sensor_range`` and
   ``sensor_fov_deg``.

Every message between the nodes carries float32 positions
(PointCloud2 / LaserScan fields); the same roundings are made here, so a
detection is bit for bit what the nodes publish. Stamp policies, queue
depths and message size limits do not apply: in lockstep every frame is
processed once, in order.

:func:`planner_odometry` gives the planner's other inputs as the planner
node has them: the frame's stamp and the bridge's odometry message of the
frame (:func:`hil_bridge.bridge.frame_msgs.odometry_msg`) read as the node
reads it (yaw from the quaternion, speed from the twist). The round trips
change the values by about 1e-16 (relative); a loop that skips them drifts
from the full stack's within seconds (a ray that grazes a cone edge
flips), which is of no consequence for statistics but stops a
frame-by-frame comparison with a recording.
"""

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from cone_detection.cloud_to_scan import points_to_ranges, ScanParams
from cone_detection.fusion import ConeSet, fuse, FusionParams
from cone_detection.lidar_scan import detect_cones_scan, ScanConeParams
from hil_bridge.interface.config import node_params
from hil_bridge.interface.frames import pose_to_matrix, transform_points
from hil_bridge.interface.rig import load_rig, SensorSpec
import numpy as np


def _scan_params(values: Dict[str, Any], scan_height: float) -> ScanConeParams:
    """Return the detector parameters exactly as the lidar node builds them."""
    # the node module imports rclpy: only when this is used
    from cone_detection.lidar_node import scan_params
    return scan_params(values, scan_height)


@dataclass
class LidarPerception:
    """
    The lidar-only perception chain of the full stack (see the module doc).

    ``mount`` the detector's lidar mount (a :class:`SensorSpec`);
    ``scan`` cloud_to_scan's parameters, ``detector`` the scan detector's,
    ``fusion`` cone_fusion's. Build it with :meth:`from_config`.
    """

    mount: SensorSpec
    scan: ScanParams
    detector: ScanConeParams
    fusion: FusionParams

    def __post_init__(self) -> None:
        """Compute the sensor-to-vehicle transform once, as the lidar node does."""
        self.T_vehicle_lidar = pose_to_matrix(self.mount.mount)

    @classmethod
    def from_config(cls, detector_values: Optional[Dict[str, Any]] = None,
                    scan_values: Optional[Dict[str, Any]] = None,
                    fusion_values: Optional[Dict[str, Any]] = None
                    ) -> 'LidarPerception':
        """
        Build from the nodes' parameter files (``config/``), as the nodes do.

        ``*_values`` replace the node parameters read from
        ``config/lidar_cone_detector.yaml``, ``config/cloud_to_scan.yaml``
        (node ``pointcloud_to_laserscan``) and ``config/cone_fusion.yaml``.
        ``use_vision`` is taken as false (the track_sweep suite's lidar
        mode sets ``cone_fusion.use_vision=false``). The detector's mount is
        its own ``rig`` parameter's ``lidar_id`` sensor, as in the node (not
        necessarily the rig the simulator runs). Raises ``ValueError`` when
        that rig has no such sensor, for a detector not in scan mode and for
        ``map_enabled`` (fusion's cone map is not reproduced).
        """
        det = dict(node_params('lidar_cone_detector') if detector_values is None
                   else detector_values)
        if str(det.get('mode', 'scan')) != 'scan':
            raise ValueError('LidarPerception: lidar_cone_detector mode must be scan, got '
                             f'{det.get("mode")!r}')
        lidar_id = str(det['lidar_id'])
        spec = next((s for s in load_rig(str(det['rig'])) if s.sensor_id == lidar_id), None)
        if spec is None:
            raise ValueError(f'rig {det["rig"]!r} has no sensor {lidar_id!r}')
        scan = ScanParams.from_mapping(
            node_params('pointcloud_to_laserscan', 'cloud_to_scan.yaml')
            if scan_values is None else scan_values)
        fus = dict(node_params('cone_fusion') if fusion_values is None else fusion_values)
        # the suite's lidar mode: cone_fusion.use_vision=false; the map stays off
        fus['use_vision'] = False
        if fus.get('map_enabled', False):
            raise ValueError('LidarPerception: cone_fusion map_enabled is not reproduced')
        return cls(mount=spec, scan=scan, detector=_scan_params(det, spec.mount.z),
                   fusion=FusionParams.from_mapping(fus))

    @property
    def lidar_id(self) -> str:
        """Return the sensor id of the lidar the detector uses."""
        return self.mount.sensor_id

    def scan_ranges(self, points: np.ndarray) -> np.ndarray:
        """Return cloud_to_scan's float32 ranges of a sensor-frame cloud (N, 3+)."""
        # the cloud goes over the wire as float32 x, y, z
        xyz = np.asarray(points)[:, :3].astype(np.float32)
        return points_to_ranges(xyz, self.scan)

    def detect(self, points: np.ndarray) -> ConeSet:
        """Return the lidar node's cones (vehicle frame, class 0) of one cloud."""
        ranges = self.scan_ranges(points)
        ang = self.scan.scan_angles
        res = detect_cones_scan(ranges, ang['angle_min'], ang['angle_increment'],
                                self.detector)
        xyz = transform_points(self.T_vehicle_lidar,
                               np.column_stack((res.xy, np.zeros(len(res)))))
        xyz[:, 2] = 0.0
        return ConeSet(xyz.astype(np.float32), np.zeros(len(res), np.uint8), res.confidence)

    def fused(self, lidar: ConeSet) -> ConeSet:
        """Return cone_fusion's output of the lidar cones (no vision)."""
        # decoded from the lidar node's float32 cloud
        wire = ConeSet(lidar.xyz.astype(np.float32), lidar.class_id, lidar.confidence)
        return fuse(wire, None, self.fusion)

    def __call__(self, points: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """
        Return what the planner node hands the planner for one lidar cloud.

        ``points`` (N, 3+) the lidar's points in its own frame (the
        simulator's reading); returns (xyz (M, 3) float32 in the vehicle
        frame, class_id (M,) uint8, all 0).
        """
        cones = self.fused(self.detect(points))
        xyz = cones.xyz.astype(np.float32)
        keep = np.isfinite(xyz).all(axis=1)
        return xyz[keep], cones.class_id[keep]


def planner_odometry(frame: Any) -> Tuple[float, Tuple[float, float, float], float, float]:
    """
    Return (t, pose, speed, yaw rate) of ``frame`` as the planner node gets them.

    ``t`` the frame's stamp (s) through ``builtin_interfaces/Time``; pose
    (x, y, yaw in ``map``), speed (m/s) and yaw rate (rad/s) from the
    bridge's odometry message of the frame, decoded as
    :meth:`path_planning.planner_node.ConeDrivePlannerNode._on_odom` does.
    """
    # the message types come with ROS: only when this is used
    from hil_bridge.bridge.frame_msgs import odometry_msg
    from hil_bridge.interface.codecs import stamps
    from hil_bridge.interface.frames import quaternion_yaw
    stamp = stamps.stamp_from_sec(frame.sim_time)
    msg = odometry_msg(frame.ego, stamp, 'vehicle')
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    return (stamps.sec_from_stamp(stamp), (float(p.x), float(p.y), quaternion_yaw(q)),
            float(msg.twist.twist.linear.x), float(msg.twist.twist.angular.z))
