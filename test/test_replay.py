# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The planner replay tool (path_planning/tools/replay.py).

A recording is written as the nodes publish it (cone clouds in the
vehicle frame, odometry, the planner's cmd_vel) with the recorder's bag
writer, from a planner built as the node builds it driving round
ci_trackdrive's centre line; the replay reads it back and must command
exactly the same, and something else with another parameter. The yaw
fed to the recording planner is the quaternion's, as the node gets it: the
generated track's exact geometry makes the lane walk's ties break on a
1e-16 rad yaw difference (commands differed by up to 2 m/s). (Replaying
a full-stack sweep run's recording gave 0 differences in 1459 cycles:
docs/path_planning.md.)
"""

import math
from pathlib import Path

from geometry_msgs.msg import TwistStamped
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.codecs import clouds
from hil_bridge.interface.codecs.clouds import cones_to_cloud
from hil_bridge.interface.codecs.stamps import stamp_from_sec
from hil_bridge.interface.frames import quaternion_yaw
from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.bag_writer import BagWriter
from nav_msgs.msg import Odometry
import numpy as np
from path_planning.race_planner import RacePlanner
from path_planning.tools import replay
from path_planning.tools.closed_loop import cones_in_vehicle_frame
import pytest
from rclpy.serialization import serialize_message

DT = 0.05


def _record(bag: Path, steps: int = 200) -> list:
    """Drive the centre line with a planner, write what the nodes would; return commands."""
    track = load_scenario('ci_trackdrive').track
    cl = track.centerline
    tang = np.roll(cl, -1, axis=0) - cl
    yaw = np.arctan2(tang[:, 1], tang[:, 0])
    planner = replay.build_planner()
    assert isinstance(planner, RacePlanner)
    writer = BagWriter(str(bag), ros_distro='kilted')
    offer = [bm.qos_entry('best_effort', 'volatile')]
    writer.add_topic('/perception/cones', 'sensor_msgs/msg/PointCloud2', offer)
    writer.add_topic('/carla/ego_vehicle/odometry', 'nav_msgs/msg/Odometry', offer)
    writer.add_topic('/carla/ego_vehicle/cmd_vel', 'geometry_msgs/msg/TwistStamped', offer)
    sent = []
    for k in range(steps):
        t = round(k * DT, 6)
        i = (2 * k) % len(cl)
        pose = (float(cl[i, 0]), float(cl[i, 1]), float(yaw[i]))
        odom = Odometry()
        odom.header.stamp = stamp_from_sec(t)
        odom.pose.pose.position.x, odom.pose.pose.position.y = pose[0], pose[1]
        odom.pose.pose.orientation.z = math.sin(pose[2] / 2.0)
        odom.pose.pose.orientation.w = math.cos(pose[2] / 2.0)
        odom.twist.twist.linear.x = 5.0
        ns = int(t * 1e9)
        writer.write('/carla/ego_vehicle/odometry', ns, ns, serialize_message(odom))
        rel = cones_in_vehicle_frame(track.cones.xy, *pose)
        near = np.hypot(*rel.T) < 20.0
        xyz = np.column_stack([rel[near], np.zeros(int(near.sum()))])
        cls = track.cones.class_id[near]
        cloud = cones_to_cloud(xyz, cls, np.ones(len(cls)), t,
                               'ego_vehicle')
        writer.write('/perception/cones', ns + 1, ns + 1, serialize_message(cloud))
        # what the node plans: the cloud decoded (float32) with the odometry of its stamp

        dxyz, dcls, _conf = clouds.cloud_to_cones(cloud)
        q = odom.pose.pose.orientation     # the node's yaw: from the quaternion
        out = planner.plan(t, dxyz, dcls, 5.0, 0.0, pose=(pose[0], pose[1], quaternion_yaw(q)))
        cmd = TwistStamped()
        cmd.header.stamp = stamp_from_sec(t)
        cmd.twist.linear.x, cmd.twist.angular.z = out.speed, out.yaw_rate
        writer.write('/carla/ego_vehicle/cmd_vel', ns + 2, ns + 2, serialize_message(cmd))
        sent.append((out.speed, out.yaw_rate))
    writer.close()
    return sent


def test_replay_commands_what_the_recording_holds(tmp_path: Path, capsys) -> None:
    """Same parameters: every command identical; another max speed: not."""
    sent = _record(tmp_path / 'bag')
    assert max(v for v, _w in sent) > 1.0      # the planner drove
    rec = replay.read_recording(str(tmp_path / 'bag'))
    assert len(rec.clouds) == len(rec.odometry) == len(rec.commands) == len(sent)
    stats = replay.compare(replay.replay(rec, replay.build_planner()))
    assert stats['compared'] == len(sent) and stats['differ'] == 0, stats
    slower = replay.compare(replay.replay(
        rec, replay.build_planner({'max_speed': '2.0', 'lane_max_speed': '2.0'})))
    assert slower['differ'] > 0 and slower['max_speed_diff'] > 0.5
    assert replay.main([str(tmp_path / 'bag'), '--plot', str(tmp_path / 'at.png'),
                        '--at', '5.0']) == 0
    out = capsys.readouterr().out
    assert f'replayed {len(sent)} cycles' in out and '0 differ' in out
    assert (tmp_path / 'at.png').read_bytes()[:4] == b'\x89PNG'


def test_replay_refuses_bad_input(tmp_path: Path, capsys) -> None:
    """An unknown parameter or a missing recording: exit 2, one line."""
    with pytest.raises(SystemExit, match='not a parameter'):
        replay.build_planner({'no_such_param': '1'})
    assert replay.main([str(tmp_path / 'none')]) == 2
    assert 'replay:' in capsys.readouterr().err
