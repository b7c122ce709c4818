# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
r"""
``cone_fusion``: lidar + vision cones -> ``/perception/cones``.

Subscribes ``cones_lidar``, ``cones_vision`` and ``odometry``; publishes
``cones`` (contract cone cloud, vehicle frame ``{role}``) and markers
(namespace ``fused``; ``map`` for the cone map) on ``cone_markers``.

On every lidar message the newest vision detection within
``max_vision_age`` of its stamp is moved to the lidar stamp with the
odometry poses (``align_with_odometry``) and fused
(:func:`cone_detection.fusion.fuse`); the output has the lidar stamp. No
vision (not running, too old, or ``use_vision`` false): lidar cones pass
through as class unknown, so lidar-only operation works. A vision
detection stamped more than ``lidar_timeout`` s after the newest lidar
message (or, before any lidar, after the first vision detection) is
published alone, with its own stamp (no lidar running). With
``wait_for_vision`` > 0 (wall seconds) a lidar message waits until the
vision detection with its stamp (or a newer one) has come, so the fused
cones of a frame never depend on how fast the vision detector happened to
be (in lockstep the whole loop then gives the same result on any machine
load). It waits while the detector is expected: its last detection is at
most ``VISION_ALIVE`` s older than the lidar stamp, or it has published
nothing yet and the lidar stamp is at most ``VISION_ALIVE`` s after the
first one (start-up); after ``wait_for_vision`` s it fuses what it has
(counted, warned). A copy of the waiting message (a lockstep frame the
bridge re-sends while the nodes start) takes its place and waits on; a
stamp already published is fused at once. All these rules compare header
stamps (sim time), never arrival times, so none of them depends on the
machine's load: in lockstep the output for a stamp is published once, from
the lidar and vision of that stamp. Lockstep
needs a vision result for every lidar stamp (cameras at the frame rate,
``camera_schedule`` ``alternate``), and on a loaded machine a wait (and a
bridge ``lockstep_timeout``) longer than the slowest vision frame. With
``map_enabled`` the fused cones are
accumulated in ``map`` (:class:`path_planning.cone_map.ConeMap`) and the
confirmed map cones within ``map_publish_range`` are published instead.
Malformed messages and cone clouds of more than ``max_cones`` points are
reported and dropped. Stamp policy (:mod:`hil_bridge.interface.freshness`):
inputs stamped ahead of the node clock or more than ``input_timeout``
behind it are dropped with a throttled warning; the clock jumping back (a
replay restarted) clears the vision buffer, the pose history, the cone
map and the waiting state (a waiting lidar message is dropped; the new
time line starts as at start-up) with one info line. Run::

    python -m cone_detection.fusion_node --ros-args \
        --params-file config/cone_fusion.yaml
"""

import math
import sys
import time
from typing import Any, Dict, List, Optional

from cone_detection.fusion import align, ConeSet, fuse, FusionParams, PoseHistory, VisionBuffer
from cone_detection.markers import cone_markers
from hil_bridge.interface import contract
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.frames import quaternion_to_euler
from hil_bridge.interface.node_inputs import check_cloud_size, InputPolicy
from hil_bridge.interface.node_main import DropLog, run_node
from hil_bridge.interface.params import declare_params, ParamSpec
import numpy as np
from path_planning.cone_map import ConeMap, ConeMapParams
from rclpy.logging import LoggingSeverity
from rclpy.node import Node

NODE_NAME = 'cone_fusion'
#: sim seconds (stamps) without a vision detection after which no lidar
#: message waits for one (also the start-up time it is waited for)
VISION_ALIVE = 2.0
#: stamps go through builtin_interfaces/Time (ns)
STAMP_EPS = 1e-6

PARAMS: List[ParamSpec] = [
    ParamSpec('role_name', 'ego role name: topic and frame names'),
    ParamSpec('use_vision', 'fuse vision colours (false: lidar only)'),
    ParamSpec('gate', 'largest lidar-vision distance of a pair (m)',
              lo=0.01, hi=5.0),
    ParamSpec('keep_vision_only', 'publish vision cones without lidar match'),
    ParamSpec('vision_only_scale', 'confidence factor of those', lo=0.0,
              hi=1.0),
    ParamSpec('max_vision_age', 'largest |t_vision - t_lidar| (s)', lo=0.0,
              hi=5.0),
    ParamSpec('align_with_odometry', 'move vision cones to the lidar stamp'),
    ParamSpec('wait_for_vision', 'wall seconds a lidar message waits for the vision '
              'detection of its stamp (0 = no wait)', lo=0.0, hi=60.0),
    ParamSpec('lidar_timeout', 'vision cones stamped this much (s) after the newest '
              'lidar message are passed on alone', lo=0.01, hi=60.0),
    ParamSpec('map_enabled', 'accumulate and publish a cone map'),
    ParamSpec('map_merge_radius', 'map duplicate merge radius (m)',
              lo=0.01, hi=5.0),
    ParamSpec('map_min_observations', 'sightings before a map cone counts',
              lo=1, hi=1000),
    ParamSpec('map_publish_range', 'map cones published within (m)',
              lo=0.1, hi=1000.0),
    ParamSpec('publish_markers', 'publish cone markers'),
    ParamSpec('input_timeout', 'inputs stamped more than this behind the node clock are '
              'dropped (s)', lo=0.01, hi=60.0),
    ParamSpec('max_cones', 'cone clouds with more points are dropped before decoding',
              lo=1, hi=10000000),
]


class ConeFusionNode(Node):
    """Fuses lidar and vision cones; optional cone map."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters and create the topics."""
        super().__init__(NODE_NAME, **kwargs)
        v = declare_params(self, PARAMS, NODE_NAME)
        self.v = v
        role = str(v['role_name'])
        self.vehicle_frame = contract.frame('vehicle', role)
        self.map_frame = contract.frame('map', role)
        self.params = FusionParams.from_mapping(v)
        self._reset()
        self.max_cones = int(v['max_cones'])
        self.inputs = InputPolicy(self, on_reset=self._reset)
        timeout = float(v['input_timeout'])
        self.gates = {k: self.inputs.gate(k, timeout)
                      for k in ('cones_lidar', 'cones_vision', 'odometry')}
        self.pub = contract.create_publisher(self, 'cones', role)
        self.marker_pub = (contract.create_publisher(self, 'cone_markers',
                                                     role)
                           if v['publish_markers'] else None)
        contract.create_subscription(self, 'cones_lidar', self._on_lidar,
                                     role)
        if v['use_vision']:
            contract.create_subscription(self, 'cones_vision',
                                         self._on_vision, role)
        contract.create_subscription(self, 'odometry', self._on_odom, role)
        self.vision_timeouts = 0
        self.wait = float(v['wait_for_vision'])
        if self.wait > 0.0 and v['use_vision']:
            from rclpy.clock import Clock, ClockType
            self.create_timer(0.02, self._on_wait_timer,
                              clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._bad = DropLog(self.get_logger())
        #: --log-level debug: the vision stamp each output was fused with
        self._debug = self.get_logger().is_enabled_for(LoggingSeverity.DEBUG)
        self._markers: Dict[str, int] = {}
        self.published = 0
        self.get_logger().info(
            f'fusing {"lidar + vision" if v["use_vision"] else "lidar only"}'
            f', map {"off" if self.map is None else "on"}, publishing '
            f'{self.pub.topic_name} in {self.vehicle_frame}')

    def _reset(self) -> None:
        """Start without vision history, poses and cone map (also after a clock jump back)."""
        v = self.v
        self.vision = VisionBuffer()
        #: stamps (s) of the newest and the earliest vision detection, of the
        #: newest and the earliest lidar message, and of the newest output
        #: fused from lidar (-inf: none yet, on this time line)
        self._vision_t = self._first_vision_t = -math.inf
        self._lidar_t = self._first_lidar_t = -math.inf
        self._fused_t = -math.inf
        #: a lidar message waiting for its vision: (header stamp, cones, t, wall)
        self._pending: Optional[tuple] = None
        self.poses = PoseHistory()
        self.map: Optional[ConeMap] = (
            ConeMap(ConeMapParams(merge_radius=float(v['map_merge_radius']),
                                  min_observations=int(v['map_min_observations'])))
            if v['map_enabled'] else None)
        #: stamp (s) of the newest cones the map was updated with: another
        #: message of that stamp (a re-sent lockstep frame, a second cloud)
        #: is not counted as more sightings or misses
        self._map_t = -math.inf

    def _decode(self, msg: Any, what: str) -> Optional[ConeSet]:
        if msg.header.frame_id and msg.header.frame_id != self.vehicle_frame:
            self._bad(what, ValueError(
                f'frame {msg.header.frame_id!r}, expected '
                f'{self.vehicle_frame!r}'))
            return None
        try:
            check_cloud_size(msg, self.max_cones, what)
            xyz, cls, conf = clouds.cloud_to_cones(msg)
            return ConeSet(xyz, cls, conf)
        except ValueError as err:
            self._bad(what, err)
            return None

    def _on_odom(self, msg: Any) -> None:
        if self.inputs.admit(self.gates['odometry'], msg.header.stamp) is None:
            return
        p = msg.pose.pose
        q = p.orientation
        try:
            _, _, yaw = quaternion_to_euler(q.x, q.y, q.z, q.w)
        except ValueError as err:
            self._bad('odometry', err)
            return
        self.poses.add(stamps.sec_from_stamp(msg.header.stamp),
                       p.position.x, p.position.y, float(yaw))

    def _on_vision(self, msg: Any) -> None:
        if self.inputs.admit(self.gates['cones_vision'], msg.header.stamp) is None:
            return
        cones = self._decode(msg, 'vision cones')
        if cones is None:
            return
        t = stamps.sec_from_stamp(msg.header.stamp)
        self.vision.add(t, cones)
        self._vision_t = max(self._vision_t, t)
        self._first_vision_t = t if self._first_vision_t == -math.inf else \
            min(self._first_vision_t, t)
        if self._pending is not None and t >= self._pending[2] - STAMP_EPS:
            self._fuse_pending()
        # no lidar running: judged by stamps (sim time), not by arrival, so
        # a vision result that beats its frame's lidar message on a loaded
        # machine is never published alone
        since = self._lidar_t if self._lidar_t > -math.inf else self._first_vision_t
        if t - since > float(self.v['lidar_timeout']):
            scaled = ConeSet(cones.xyz, cones.class_id,
                             cones.confidence * self.params.vision_only_scale)
            self._publish(scaled, msg.header.stamp, t)

    def _on_lidar(self, msg: Any) -> None:
        if self.inputs.admit(self.gates['cones_lidar'], msg.header.stamp) is None:
            return
        lidar = self._decode(msg, 'lidar cones')
        if lidar is None:
            return
        now = time.monotonic()
        t = stamps.sec_from_stamp(msg.header.stamp)
        self._lidar_t = max(self._lidar_t, t)
        self._first_lidar_t = t if self._first_lidar_t == -math.inf else \
            min(self._first_lidar_t, t)
        pending = self._pending
        if pending is not None and abs(pending[2] - t) <= STAMP_EPS:
            # a copy of the waiting message (a re-sent frame): it waits on
            self._pending = (msg.header.stamp, lidar, t, pending[3])
            return
        if pending is not None:
            self._fuse_pending()
        if self._waits(t):
            self._pending = (msg.header.stamp, lidar, t, now)
            return
        self._fuse(msg.header.stamp, lidar, t)

    def _waits(self, t: float) -> bool:
        """Return True when the lidar message of stamp ``t`` (s) waits for its vision."""
        if self.wait <= 0.0 or not self.v['use_vision'] or \
                self._vision_t >= t - STAMP_EPS or t <= self._fused_t + STAMP_EPS:
            return False  # no wait asked, its vision is here, or it was published
        since = self._vision_t if self._vision_t > -math.inf else self._first_lidar_t
        return t - since <= VISION_ALIVE

    def _on_wait_timer(self) -> None:
        p = self._pending
        if p is not None and time.monotonic() - p[3] > self.wait:
            self.vision_timeouts += 1
            self.get_logger().warning(
                f'no vision detection for the lidar cones at t={p[2]:.3f} s within '
                f'{self.wait:g} s; fused without it ({self.vision_timeouts} so far)',
                throttle_duration_sec=5.0)
            self._fuse_pending()

    def _fuse_pending(self) -> None:
        stamp, lidar, t, _wall = self._pending
        self._pending = None
        self._fuse(stamp, lidar, t)

    def _fuse(self, stamp: Any, lidar: ConeSet, t: float) -> None:
        self._fused_t = max(self._fused_t, t)
        vision = None
        if self.v['use_vision']:
            found = self.vision.newest_within(t, self.params.max_vision_age)
            if found is not None:
                t_v, cones = found
                poses = self.poses if self.v['align_with_odometry'] else None
                vision = align(cones, t_v, t, poses)
        if self._debug:
            self.get_logger().debug(f'lidar cones of t={t:.3f} fused with vision of t='
                                    f'{"-" if vision is None else f"{t_v:.3f}"}')
        self._publish(fuse(lidar, vision, self.params), stamp, t)

    def _publish(self, cones: ConeSet, stamp: Any, t: float) -> None:
        if self.map is not None:
            pose = self.poses.at(t)
            if pose is not None:
                m = self.map
                if t > self._map_t + STAMP_EPS:
                    m.update(cones.xyz, cones.class_id, pose, cones.confidence)
                    self._map_t = t
                xy, cls, count = m.cones_in_vehicle(
                    pose, max_range=float(self.v['map_publish_range']))
                conf = np.minimum(1.0, count / (2.0 * m.params.min_observations))
                cones = ConeSet(xy, cls, conf)
                ok = m.confirmed()
                self._markers_out(ConeSet(m.xy[ok], m.colours()[ok], np.ones(int(ok.sum()))),
                                  stamp, self.map_frame, 'map')
        cloud = clouds.cones_to_cloud(cones.xyz.astype(np.float32),
                                      cones.class_id, cones.confidence, t,
                                      self.vehicle_frame)
        cloud.header.stamp = stamp
        self.pub.publish(cloud)
        self.published += 1
        self._markers_out(cones, stamp, self.vehicle_frame, 'fused')

    def _markers_out(self, cones: ConeSet, stamp: Any, frame_id: str,
                     ns: str) -> None:
        if self.marker_pub is None:
            return
        self.marker_pub.publish(cone_markers(
            cones.xyz, cones.class_id, stamp, frame_id, ns=ns,
            confidence=cones.confidence,
            previous_count=self._markers.get(ns, 0)))
        self._markers[ns] = len(cones)


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(ConeFusionNode, args)


if __name__ == '__main__':
    sys.exit(main())
